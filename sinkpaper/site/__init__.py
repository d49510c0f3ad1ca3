"""Building the companion site from the chapters: execute the Jupytext chapters with papermill and prepare each
page for reading (``runner``, ``pages``), refuse a page that names this machine's paths (``machine_paths``), write
the offline JavaScript and fonts the built pages need (``assets``, ``vendor/``), the Sphinx extension the build
loads (``sphinx_ext``) and the real Chromium the site's tests drive (``chromium``).

``python -m sinkpaper.site run|build|colab`` is the entry point (``make notebooks``, ``make book``). What a chapter
itself calls to draw and tabulate is the other trade, :mod:`sinkpaper.book`; this package imports it, never the
other way round.
"""
