"""The book's charts and its table display, one namespace for the chapters (``figures.band_chart``,
``figures.Figure``, ...), kept in modules by concern:

* :mod:`.core`: chart primitives (heatmaps, per-layer lines, rows that fit the column), numbered figures with
  captions, charts side by side, folds, one colour per variant;
* :mod:`.bands`: seeds over training as a mean line and a min-max band;
* :mod:`.sweep_charts`: a stored sweep's dot-and-tick chart and the caption that states its finding;
* :mod:`.paper_marks`: the paper's number on a chart where :mod:`sinkpaper.paper` has one, and none where it has
  none;
* :mod:`.html_tables`: the HTML tables and provenance lines;
* :mod:`.specs`: a chart read back from its spec (the tests' and the page audit's checks);
* :mod:`.onsets` and :mod:`.gates`: chapter 14's onsets on one time axis and the gates a sink logit and gated
  attention learn (imported as ``figures.onsets`` / ``figures.gates``).

The tables built from stored runs are in :mod:`sinkpaper.book.tables`.
"""
from __future__ import annotations

from .core import (  # noqa: F401
    WIDTH, HEIGHT, _num, heatmap, lines_by_layer, qk_heatmaps, PAGE_WIDTH, LEGEND_WIDTH, row, no_data_chart,
    curve_chart, long_rows, STORED_SEEDS, alpha_grid_steps, attention_map_chart, benchmark_items, show_benchmark,
    chart_html, start_chapter, Figure, figure, fig_ref, Columns, Fold, folded, VARIANT_PALETTE, _variant_index,
    variant_colors,
)
from .html_tables import (  # noqa: F401
    provenance_line, COLUMNS, Table, ComparisonTable, paper_vs_ours,
)
from .paper_marks import (  # noqa: F401
    sink_vs_length, paper_number, paper_levels, paper_layer, table1_marks, sink_by_position_chart, table1_chart,
)
from .bands import (  # noqa: F401
    seed_rows, band_rows, band_chart, raw_weight_bands, live_and_stored_rows,
)
from .sweep_charts import (  # noqa: F401
    book_values, book_mean, book_peak, sweep_chart, sweep_caption, position_profile_chart,
)
from .specs import (  # noqa: F401
    joined_lines, embedded_specs, chart_values, MAX_SERIES, crowded_panels, draws_the_paper,
)
