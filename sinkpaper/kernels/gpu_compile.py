"""Deprecated path of :mod:`sinkpaper.fused.gpu_compile`, kept for one release so that
``python -m sinkpaper.kernels.gpu_compile`` still runs the compile check (the package warns with the new name)."""
import sys

from ..fused.gpu_compile import *  # noqa: F401,F403
from ..fused.gpu_compile import main

if __name__ == "__main__":
    sys.exit(main())
