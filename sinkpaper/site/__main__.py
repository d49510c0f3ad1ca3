"""``python -m sinkpaper.site run ...`` - see :mod:`sinkpaper.site.runner`."""
import sys

from .runner import main

if __name__ == "__main__":
    sys.exit(main())
