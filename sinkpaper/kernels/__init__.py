"""Deprecated name of :mod:`sinkpaper.fused` (the fused Triton attention operators), kept for one release: the word
"kernel" is the paper's kernel attention. Importing this package warns once and hands over the new package and its
modules (``sinkpaper.kernels.testing`` is ``sinkpaper.fused.testing``, ``python -m sinkpaper.kernels.gpu_compile``
still runs)."""
import importlib
import sys
import warnings

from ..fused import *  # noqa: F401,F403
from ..fused import __all__  # noqa: F401

warnings.warn("sinkpaper.kernels is now sinkpaper.fused; the old name goes in the next release",
              DeprecationWarning, stacklevel=2)
for _name in ("api", "bench", "blocked", "reference", "testing", "triton_kernels"):   # gpu_compile: a file, for -m
    sys.modules[f"{__name__}.{_name}"] = importlib.import_module(f"sinkpaper.fused.{_name}")
