"""``python -m sinkpaper.book run ...`` - see :mod:`sinkpaper.book.runner`."""
import sys

from .runner import main

if __name__ == "__main__":
    sys.exit(main())
