"""The one progress bar of every long loop (training steps, sweep runs, measuring batches, tokenizing): tqdm,
redrawn in place on a terminal, and one line at most every 30 seconds when stderr is a log file (a sweep worker's
log, a CI log), so a log holds a readable record of progress instead of thousands of carriage returns."""
from __future__ import annotations

import sys
from typing import Any, Iterable

LOG_INTERVAL_S = 30.0


def in_notebook() -> bool:
    """True inside a Jupyter kernel whose output is not a terminal (papermill, a notebook server): there tqdm.auto
    draws a widget, and an executed chapter keeps it as dead widget state that a static page cannot update."""
    return "ipykernel" in sys.modules and not sys.stderr.isatty()


def bar(iterable: Iterable | None = None, **kwargs: Any):
    """``tqdm(iterable, **kwargs)`` on stderr with the refresh interval set for where stderr goes (a caller's own
    ``mininterval`` wins). Never a widget: inside a notebook kernel the bar is off (a chapter shows what a loop
    did, not its progress), so no executed page saves one whatever ran in it."""
    from tqdm import tqdm

    kwargs.setdefault("mininterval", 0.1 if sys.stderr.isatty() else LOG_INTERVAL_S)
    if in_notebook():
        kwargs["disable"] = True
    return tqdm(iterable, **kwargs)
