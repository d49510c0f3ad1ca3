"""``python -m sinkpaper.book ...``: the old name of ``python -m sinkpaper.site ...``, kept for one release (named
by string, like the package's alias of its moved modules, :data:`sinkpaper.book.MOVED_TO_SITE`: the shelf never
imports the site builder)."""
import importlib
import sys

if __name__ == "__main__":
    print("python -m sinkpaper.book is now python -m sinkpaper.site; the old name goes in the next release",
          file=sys.stderr)
    sys.exit(importlib.import_module("sinkpaper.site.runner").main())
