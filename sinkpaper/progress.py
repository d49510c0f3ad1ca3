"""The one progress bar of every long loop (training steps, sweep runs, measuring batches, tokenizing): tqdm,
redrawn in place on a terminal, and one line at most every 30 seconds when stderr is a log file (a sweep worker's
log, a CI log), so a log holds a readable record of progress instead of thousands of carriage returns."""
from __future__ import annotations

import sys
from typing import Any, Iterable

LOG_INTERVAL_S = 30.0


def bar(iterable: Iterable | None = None, **kwargs: Any):
    """``tqdm.auto.tqdm(iterable, **kwargs)`` with the refresh interval set for where stderr goes (a caller's own
    ``mininterval`` wins)."""
    from tqdm.auto import tqdm

    kwargs.setdefault("mininterval", 0.1 if sys.stderr.isatty() else LOG_INTERVAL_S)
    return tqdm(iterable, **kwargs)
