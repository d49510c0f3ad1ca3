"""Companion-book tooling, presentation only: execute the Jupytext notebooks with papermill (``runner``), write
the offline JavaScript the built pages need (``assets``), the altair charts and the table display (``figures``),
the tables built from stored runs (``tables``), the Section-7 points (``points``), sentences read from runs
(``prose``), live training (``experiments``) and the real-text section chapters 4-9 lead with (``realtext``).
What the chapters read (stored sweeps, metrics, summaries over seeds, formatters) is library code in
:mod:`sinkpaper.results`.

Notebook-only dependencies (papermill, jupytext, altair, vl-convert) are imported inside these modules only;
the core ``sinkpaper`` library never imports them.
"""
