"""A Sphinx extension the book's build loads (``_config.yml``: ``sphinx.extra_extensions``): formulas rendered as
MathML when the site is built, and each script a page would include twice included once.

Formulas: Sphinx's default renderer loads MathJax from a CDN on every page with math, and the book loads nothing
from outside the site. ``html_math_renderer: mathml`` (``_config.yml``) turns each ``$...$`` and ``$$...$$`` of a
page into MathML with latex2mathml instead, which browsers draw themselves (MathML Core): no script, nothing
fetched, and the page reads the same with JavaScript off.

sphinx-thebe (which Jupyter Book 1.x always loads) adds its inline configuration script on every
``env-before-read-docs`` event, and a ``jupyter-book build`` fires that event twice, so every page declared
``const THEBE_JS_URL`` twice and logged "Identifier 'THEBE_JS_URL' has already been declared". sphinx-thebe has no
setting that stops it; dropping the exact duplicate is the smallest fix.
"""
from __future__ import annotations

import re
from typing import Any

from docutils import nodes
from sphinx.util import logging

LOG = logging.getLogger(__name__)


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


def mathml(tex: str, display: bool) -> str:
    """The MathML of one formula (``display``: a block of its own); a ValueError naming the formula if it has a
    command latex2mathml does not know."""
    from latex2mathml.converter import convert

    try:
        out = convert(tex.strip(), display="block" if display else "inline")
    except Exception as exc:  # latex2mathml raises its own exception types for malformed TeX
        raise ValueError(f"cannot render the formula {tex.strip()!r} as MathML: {exc!r}") from exc
    # a command latex2mathml does not know comes out as its own name in an <mi>: the reader would see TeX
    unknown = re.findall(r">(\\[A-Za-z]+)<", out)
    if unknown:
        raise ValueError(f"cannot render the formula {tex.strip()!r} as MathML: unknown command(s) "
                         f"{', '.join(sorted(set(unknown)))}")
    return out


def _render(translator, node, display: bool) -> None:
    try:
        html = mathml(node.astext(), display)
    except ValueError as exc:  # the TeX itself is shown, and the build says where
        LOG.warning(str(exc), location=node)
        html = f'<code class="math-source">{translator.encode(node.astext())}</code>'
    if display:
        number = node.get("number")
        eqno = f'<span class="eqno">({number})</span>' if number else ""
        html = f'<div class="math-block">{eqno}{html}</div>'
    translator.body.append(html)
    raise nodes.SkipNode


def visit_math(translator, node) -> None:
    _render(translator, node, display=False)


def visit_math_block(translator, node) -> None:
    _render(translator, node, display=True)


def setup(app):
    app.add_html_math_renderer("mathml", (visit_math, None), (visit_math_block, None))
    app.connect("html-page-context", dedupe_scripts)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
