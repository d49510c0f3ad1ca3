"""An argparse parser whose usage errors are one line on stderr and exit status 2, like every other input
error of sinkpaper's commands (``python -m sinkpaper ...``, ``python -m sinkpaper.site ...``)."""
from __future__ import annotations

import argparse
import sys


def command_label(prog: str) -> str:
    """``python -m sinkpaper.site run`` -> ``sinkpaper.book``; ``sinkpaper sink`` -> ``sinkpaper``."""
    words = prog.split()
    return words[2] if words[:2] == ["python", "-m"] and len(words) > 2 else (words[0] if words else "sinkpaper")


def fail(prog: str, message: str) -> int:
    """Print ``<command>: error: <message>`` as one line on stderr; return the exit status 2."""
    print(f"{command_label(prog)}: error: {' '.join(str(message).split())}", file=sys.stderr)
    return 2


class OneLineParser(argparse.ArgumentParser):
    def error(self, message):
        sys.exit(fail(self.prog, message))
