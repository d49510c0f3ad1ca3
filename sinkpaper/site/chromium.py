"""The Chromium the browser tests drive (tests/test_site.py, tests/test_widgets.py), and whether it is a real one.

Debian's ``chromium`` package is the browser itself (``/usr/bin/chromium``). On Ubuntu the apt packages
``chromium-browser`` / ``chromium`` only install a launcher for the Chromium *snap*: without snapd (containers,
CI images) the launcher prints "requires the chromium snap to be installed" and exits. :func:`problem` tells
them apart, so the tests skip with that reason in pytest's summary instead of failing, and ``make setup`` says
so instead of aborting.

    python -m sinkpaper.site.chromium [PATH]   # prints the version and exits 0, or the problem and exits 1
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

DEFAULT = "/usr/bin/chromium"
ENV = "SINKPAPER_CHROMIUM"
_VERSION = re.compile(r"\b(Chromium|Google Chrome|Chrome for Testing)\s+\d+\.")
_HOWTO = ("the browser tests need a real Chromium: Debian's package `chromium` (apt-get install chromium), or set "
          f"{ENV} to another Chromium/Chrome binary")


def candidate() -> str:
    """$SINKPAPER_CHROMIUM, else /usr/bin/chromium, else a chromium / chromium-browser on PATH."""
    for c in (os.environ.get(ENV), DEFAULT, shutil.which("chromium"), shutil.which("chromium-browser")):
        if c and os.path.isfile(c):
            return c
    return os.environ.get(ENV) or DEFAULT


def _is_snap_stub(path: str) -> str | None:
    real = os.path.realpath(path)
    if real.startswith("/snap/") or real == "/usr/bin/snap":
        return f"{path} is the Chromium snap ({real}), which does not run without snapd"
    try:
        with open(path, "rb") as f:
            head = f.read(65536)
    except OSError:
        return None
    if head.startswith(b"#!") and (b"/snap/bin/chromium" in head or b"snap install" in head
                                   or b"requires the chromium snap" in head):
        return f"{path} is Ubuntu's launcher for the Chromium snap (a stub that installs nothing itself)"
    return None


def problem(path: str | None = None, timeout: float = 60) -> str | None:
    """Why ``path`` (default :func:`candidate`) cannot drive the browser tests, in one line; None if it can."""
    path = path or candidate()
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        return f"Chromium is not installed ({path} missing): {_HOWTO}"
    stub = _is_snap_stub(path)
    if stub:
        return f"{stub}: {_HOWTO}"
    try:
        proc = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{path} --version did not run ({type(exc).__name__}: {exc}): {_HOWTO}"
    out = " ".join((proc.stdout + " " + proc.stderr).split())
    if proc.returncode != 0 or not _VERSION.search(proc.stdout):
        return f"{path} --version did not print a Chromium version (exit {proc.returncode}: {out[:200]}): {_HOWTO}"
    return None


def version(path: str | None = None) -> str:
    path = path or candidate()
    out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60).stdout
    m = _VERSION.search(out)
    return out[m.start():].strip().splitlines()[0] if m else out.strip()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    path = argv[0] if argv else candidate()
    why = problem(path)
    if why:
        print(why)
        return 1
    print(version(path))
    return 0


if __name__ == "__main__":
    sys.exit(main())
