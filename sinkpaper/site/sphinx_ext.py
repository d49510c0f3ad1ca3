"""A Sphinx extension the book's build loads (``_config.yml``: ``sphinx.extra_extensions``): formulas rendered as
MathML when the site is built, the first use of each glossary term on a page linked to its definition, and each
script a page would include twice included once.

Glossary links: :data:`TERMS` maps how a term is written in the chapters' prose to its label in book/glossary.md.
On each page but the glossary, the first occurrence of each term in running text (not in a title, a code span, a
link, a formula or a notebook's HTML output) becomes a link to the definition; the later ones stay plain.

Formulas: Sphinx's default renderer loads MathJax from a CDN on every page with math, and the book loads nothing
from outside the site. ``html_math_renderer: mathml`` (``_config.yml``) turns each ``$...$`` and ``$$...$$`` of a
page into MathML with latex2mathml instead, which browsers draw themselves (MathML Core): no script, nothing
fetched, and the page reads the same with JavaScript off.

sphinx-thebe (which Jupyter Book 1.x always loads) adds its inline configuration script on every
``env-before-read-docs`` event, and a ``jupyter-book build`` fires that event twice, so every page declared
``const THEBE_JS_URL`` twice and logged "Identifier 'THEBE_JS_URL' has already been declared". sphinx-thebe has no
setting that stops it; dropping the exact duplicate is the smallest fix.

Charts on Markdown pages: the directive ``sinkpaper-chart`` draws one of :data:`.measured_charts.CHARTS` from the
stored results when the site is built (its content is the caption), so the Measurements page draws the same files
its generated blocks quote; an unknown name is a build error that lists the valid ones.
"""
from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx import addnodes
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

from ..book import measured_charts
from ..book.figures import chart_html

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


# how each term is written in the chapters' prose -> its label in book/glossary.md (the most specific first)
TERMS: tuple[tuple[re.Pattern, str], ...] = (
    (re.compile(r"\bexcess (?:α|alpha)_1\b"), "glossary-excess"),
    (re.compile(r"\bSink\*(?:_1)?"), "glossary-sink-star"),
    (re.compile(r"\bSink_(?:k|1)(?:\^(?:ε|epsilon|0\.3))?(?![\w*])"), "glossary-sink"),
    (re.compile(r"(?:α|\balpha)_(?:k|1)\b"), "glossary-alpha"),
    (re.compile(r"\bplateau\b"), "glossary-plateau"),
    (re.compile(r"\bfixed first token\b"), "glossary-fixed"),
    (re.compile(r"\b(?:text|gpu|miniature) profile\b"), "glossary-profiles"),
)
GLOSSARY_DOC = "book/glossary"
_SKIP = (nodes.title, nodes.literal, nodes.literal_block, nodes.reference, nodes.raw, nodes.math,
         nodes.math_block, nodes.target, nodes.comment, nodes.FixedTextElement, addnodes.pending_xref,
         addnodes.toctree)


def _skipped(node) -> bool:
    parent = node.parent
    while parent is not None:
        if isinstance(parent, _SKIP):
            return True
        parent = parent.parent
    return False


def link_glossary_terms(app, doctree) -> None:
    """Turn the first occurrence of each :data:`TERMS` term on a page into a reference to its definition."""
    if app.env.docname == GLOSSARY_DOC or GLOSSARY_DOC not in app.env.found_docs:
        return
    todo = {label for _, label in TERMS}
    for text in list(doctree.findall(nodes.Text)):
        if not todo:
            break
        if not _skipped(text):
            _link_first(text, todo)


def _link_first(text, todo: set) -> None:
    """In one text node, link the earliest term still in ``todo`` and go on with the text after it (a sentence
    may use two terms)."""
    s = str(text)
    hits = [(m, label) for pattern, label in TERMS if label in todo for m in [pattern.search(s)] if m]
    if not hits:
        return
    m, label = min(hits, key=lambda h: h[0].start())
    todo.discard(label)
    ref = addnodes.pending_xref("", nodes.inline(m.group(0), m.group(0)),
                                refdomain="std", reftype="ref", reftarget=label, refexplicit=True, refwarn=True)
    rest = nodes.Text(s[m.end():])
    parent = text.parent
    i = parent.index(text)
    parent.replace(text, nodes.Text(s[:m.start()]))
    parent.insert(i + 1, ref)
    parent.insert(i + 2, rest)
    _link_first(rest, todo)


def results_root(srcdir: str | Path) -> Path:
    """Where the stored results are: the book's source folder when it holds ``results/`` (a checkout), else the
    checkout this package runs from (a build of a copied book layout, as the tests make)."""
    for root in (Path(srcdir), Path(__file__).resolve().parents[2]):
        if (root / "results").is_dir():
            return root
    return Path(srcdir)


class ChartDirective(SphinxDirective):
    """``{sinkpaper-chart} NAME``: the stored measurement NAME drawn as a chart, its content the caption."""
    required_arguments = 1
    has_content = True

    def run(self) -> list:
        name = self.arguments[0]
        if name not in measured_charts.CHARTS:
            raise self.error(f"unknown chart {name!r}; valid: {', '.join(measured_charts.CHARTS)}")
        chart = measured_charts.chart(name, results_root(self.env.srcdir))
        caption = " ".join(self.content).strip()
        if chart is None:
            body = f'<p class="spx-nochart">{name}: not measured yet (no stored file; the block above says how).</p>'
        else:
            body = f'<div class="cell_output spx-measured">{chart_html(chart)}</div>'
        if caption:
            body += f'<p class="spx-chart-caption">{html.escape(caption, quote=False)}</p>'
        return [nodes.raw("", body, format="html")]


# Folds (sphinx-design dropdowns, myst-nb's hidden cells) are <details>: closed on screen, found by the browser's
# find-in-page, and opened for printing so that a printed page holds everything (restored after).
PRINT_FOLDS_JS = ("window.addEventListener('beforeprint',()=>{document.querySelectorAll('details:not([open])')"
                  ".forEach(d=>{d.dataset.spxPrinted='1';d.open=true;});});"
                  "window.addEventListener('afterprint',()=>{document.querySelectorAll('details[data-spx-printed]')"
                  ".forEach(d=>{d.open=false;delete d.dataset.spxPrinted;});});")

# A chart as wide as its container measures the container once, when the page draws it, and again on a window
# resize: inside a closed fold it measured nothing, so opening a fold (a `toggle`, which does not bubble: caught
# on the way down) tells the charts to measure again.
FOLD_RESIZE_JS = ("document.addEventListener('toggle',e=>{if(e.target.open)"
                  "window.dispatchEvent(new Event('resize'));},true);")


def setup(app):
    app.add_directive("sinkpaper-chart", ChartDirective)
    app.add_js_file(None, body=PRINT_FOLDS_JS)
    app.add_js_file(None, body=FOLD_RESIZE_JS)
    app.connect("doctree-read", link_glossary_terms)
    app.add_html_math_renderer("mathml", (visit_math, None), (visit_math_block, None))
    app.connect("html-page-context", dedupe_scripts)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
