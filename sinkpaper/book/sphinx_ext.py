"""A Sphinx extension the book's build loads (``_config.yml``: ``sphinx.extra_extensions``): each script a page
would include twice is included once.

sphinx-thebe (which Jupyter Book 1.x always loads) adds its inline configuration script on every
``env-before-read-docs`` event, and a ``jupyter-book build`` fires that event twice, so every page declared
``const THEBE_JS_URL`` twice and logged "Identifier 'THEBE_JS_URL' has already been declared". sphinx-thebe has no
setting that stops it; dropping the exact duplicate is the smallest fix.
"""
from __future__ import annotations

from typing import Any


def _key(script: Any) -> tuple:
    """What a script is, whatever priority each registration gave it."""
    attributes = getattr(script, "attributes", {}) or {}
    # an inline script is registered with filename None by one path and "" by another
    return (getattr(script, "filename", None) or "", tuple(sorted((k, str(v)) for k, v in attributes.items())))


def dedupe_scripts(app, pagename, templatename, context, doctree) -> None:
    """Keep the first of each identical script entry of the page (same file or body, same attributes)."""
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, kept = set(), []
    for s in scripts:
        k = _key(s)
        if k not in seen:
            seen.add(k)
            kept.append(s)
    scripts[:] = kept


def setup(app):
    app.connect("html-page-context", dedupe_scripts)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
