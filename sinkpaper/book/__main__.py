"""``python -m sinkpaper.book ...``: the old name of ``python -m sinkpaper.site ...``, kept for one release (through
the package's alias of the moved modules, :data:`sinkpaper.book.MOVED_TO_SITE`)."""
import sys

if __name__ == "__main__":
    print("python -m sinkpaper.book is now python -m sinkpaper.site; the old name goes in the next release",
          file=sys.stderr)
    from . import __getattr__ as moved

    sys.exit(moved("runner").main())
