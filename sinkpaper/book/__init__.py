"""Companion-book tooling: execute the Jupytext notebooks with papermill (``runner``), write the offline
JavaScript the built pages need (``assets``) and the altair chart helpers notebooks use (``figures``).

Notebook-only dependencies (papermill, jupytext, altair, vl-convert) are imported inside these modules only;
the core ``sinkpaper`` library never imports them.
"""
