"""Moved (issue 16): ``sinkpaper.book.sections`` was named after the chapters that used it, not after what it
held. Its contents live where they belong; this shim re-exports them for one release, and a name that was
unified with another fails with a message naming its replacement.

* reading a sweep (``LMSweep``, ``lm_sweep``, ``TEXT_PROFILE``, ``TEXT_SEEDS``, ``STORE``, ``mask_of``) and the
  summaries over seeds (``mean_sink``, ``mean_alpha_1`` -> ``mean_of``): :mod:`sinkpaper.results.sweeps`;
* a run over training (``emergence`` -> ``first_reaching``, ``sink_curve_rows`` -> ``curve_rows``):
  :mod:`sinkpaper.results.curves`;
* the formatters (``span``, ``sig``): :mod:`sinkpaper.results.numbers`;
* the uniform floor (``uniform_alpha``, ``excess_alpha``): :mod:`sinkpaper.metrics`;
* the tables (``points_table``, ``emergence_table``): :mod:`sinkpaper.book.tables`;
* the charts (``curve_chart``, ``sweep_chart``, ``position_profile_chart``, ``attention_map_chart``,
  ``alpha_grid_steps``, ``row``): :mod:`sinkpaper.book.figures`;
* one head on one sequence (``head_map``, ``trigger_cells``, ``pick_sequence``): :mod:`sinkpaper.mechanism`.
"""
from __future__ import annotations

import warnings

from ..moved import moved_names
from ..mechanism import head_map, pick_sequence, trigger_cells  # noqa: F401
from ..metrics import excess_alpha, uniform_alpha  # noqa: F401
from ..results.numbers import sig, span  # noqa: F401
from ..results.sweeps import STORE, TEXT_PROFILE, TEXT_SEEDS, LMSweep, lm_sweep, mask_of  # noqa: F401
from .figures import (alpha_grid_steps, attention_map_chart, curve_chart, position_profile_chart,  # noqa: F401
                      row, sweep_chart)
from .tables import emergence_table, points_table  # noqa: F401

warnings.warn("sinkpaper.book.sections is deprecated: its contents moved to sinkpaper.results.sweeps / .curves / "
              ".numbers, sinkpaper.book.tables / .figures and sinkpaper.mechanism (see its docstring)",
              DeprecationWarning, stacklevel=2)

_UNIFIED = {
    "mean_sink": "sinkpaper.results.sweeps.mean_of(payloads, point, f'Sink_{k}')",
    "mean_alpha_1": "sinkpaper.results.sweeps.mean_of(payloads, point, 'alpha_1')",
    "emergence": "sinkpaper.results.curves.first_reaching(curve, k, threshold)",
    "sink_curve_rows": "sinkpaper.results.curves.curve_rows(payload, label, (f'Sink_{k}',))",
}

__getattr__ = moved_names(__name__, _UNIFIED)
