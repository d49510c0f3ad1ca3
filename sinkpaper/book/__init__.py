"""Companion-book tooling, presentation only: execute the Jupytext notebooks with papermill (``runner``), write
the offline JavaScript the built pages need (``assets``), the altair charts and the table display (``figures``),
the tables built from stored runs (``tables``), the Section-7 points (``points``), sentences read from runs
(``prose``), live training (``experiments``), the real-text section chapters 4-9 lead with (``realtext``), the
finding card at the top of every chapter with claims (``findings``), the scorecard grid (``scorecard``) and the
Sphinx extension the build loads (``sphinx_ext``).
What the chapters read (stored sweeps, metrics, summaries over seeds, formatters) is library code in
:mod:`sinkpaper.results`.

Notebook-only dependencies (papermill, jupytext, altair, vl-convert) are imported inside these modules only;
the core ``sinkpaper`` library never imports them.
"""
