"""Moved (issue 16): ``sinkpaper.book.section7`` was named after the chapters that used it, not after what it
held. Its contents live where they belong; this shim re-exports them for one release, and a name that was
unified with another fails with a message naming its replacement.

* the Section-7 points (``Point``, ``ARCHITECTURE``, ``BIASES``, ``ATTENTION``, their ``*_NOT_RUN`` and
  ``BIASES_MORE``, ``by_name``): :mod:`sinkpaper.book.points`;
* the tables (``paper_table``, ``transient_table``; ``point_table`` -> ``points_table(payloads, points,
  paper=True, held_out=True)``): :mod:`sinkpaper.book.tables`;
* the charts (``long_rows``; ``steps_chart`` -> ``curve_chart(rows, y, title, x="step", zero=True)``,
  ``bias_chart`` -> ``sweep_chart(payloads, order, value=("Sink*", "Sink_1"))``): :mod:`sinkpaper.book.figures`;
* sentences (``setting_text``, ``live_vs_stored``, ``transient_text``, ``transient_note``):
  :mod:`sinkpaper.book.prose`;
* a run over training (``raw_curve_rows``, ``RAW_KEYS``, ``transient``; ``bias_curve_rows`` -> ``curve_rows``):
  :mod:`sinkpaper.results.curves`;
* the summaries over seeds (``mean_of``, now with the registry's metric names ``Sink_1``, ``Sink*``,
  ``alpha_1``, ``loss``, ``val_loss``): :mod:`sinkpaper.results.sweeps`; ``fmt``: :mod:`sinkpaper.results.numbers`;
* ``paper_text``: :mod:`sinkpaper.paper`.
"""
from __future__ import annotations

import warnings

from ..moved import moved_names
from ..paper import SINK, paper_text  # noqa: F401
from ..results.curves import RAW_KEYS, raw_curve_rows, transient  # noqa: F401
from ..results.numbers import fmt  # noqa: F401
from .figures import long_rows  # noqa: F401
from .points import (ARCHITECTURE, ARCHITECTURE_NOT_RUN, ATTENTION, ATTENTION_NOT_RUN, BIASES,  # noqa: F401
                     BIASES_MORE, BIASES_NOT_RUN, Point, by_name)
from .prose import live_vs_stored, setting_text, transient_note, transient_text  # noqa: F401
from .tables import paper_table, transient_table  # noqa: F401

warnings.warn("sinkpaper.book.section7 is deprecated: its contents moved to sinkpaper.book.points / .tables / "
              ".figures / .prose and sinkpaper.results.curves / .sweeps / .numbers (see its docstring)",
              DeprecationWarning, stacklevel=2)

_UNIFIED = {
    "point_table": "sinkpaper.book.tables.points_table(payloads, points, names=..., paper=True, held_out=True)",
    "steps_chart": "sinkpaper.book.figures.curve_chart(rows, y, title, x='step', zero=True, ...)",
    "bias_chart": "sinkpaper.book.figures.sweep_chart(payloads, order, value=('Sink*', 'Sink_1'), width=320)",
    "bias_curve_rows": "sinkpaper.results.curves.curve_rows(payload, label, ('Sink_1', 'Sink*', 'alpha_1'))",
    "mean_of": "sinkpaper.results.sweeps.mean_of(payloads, point, name) with the names Sink_1, Sink*, alpha_1, "
               "loss, val_loss",
    "MINIATURE_DEFAULT": "the miniature's default point, 'recipe' (it had no caller)",
}

__getattr__ = moved_names(__name__, _UNIFIED)
