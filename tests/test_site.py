"""The built book in a real headless browser (Playwright driving Debian's Chromium, never a downloaded one).

For every page _toc.yml lists, loaded from file:// out of the `built_book` fixture's build (tests/conftest.py):

* no request leaves the machine (only file:, data:, blob:, about: and http(s)/ws(s) to 127.0.0.1; anything
  else is recorded, aborted and reported);
* no console error and no uncaught exception (:data:`ALLOWED_CONSOLE` names any exception and why);
* no local file the page asks for is missing;
* every altair chart rendered (its vega-embed container holds an svg or a canvas, not an error);
* every attention explorer (``.sinkpaper-explorer``, see sinkpaper.book.explorer) reacts: the epsilon slider
  changes the Sink readout, the layer select redraws the map canvas;
* every saved ipywidgets view rendered, and moving a slider changes what the widgets show;
* at most two code inputs are visible (the runner folds the others behind a toggle);
* no absolute path of the build machine (the repository, the interpreter's prefix, the home directory, the
  temporary build directory) appears in the page;
* no smoke table ("every variant trains and is measured": a test, tests/test_train.py, not a result).

Beyond the pages one by one: the scorecard (the front page) fits a 1280-pixel window without sideways
scrolling, and every "Open in Colab" link of the site names a file git tracks.

The checks look at whatever a page contains, so they apply to chapters written later too; a failure names the
page and each problem. test_checker_* run the same checks on a small synthetic book with one good and one
broken page, so the checks themselves are tested. Everything here is skipped (with the reason in pytest's
summary) only when no real Chromium is installed (missing, or Ubuntu's snap stub: sinkpaper.site.chromium);
`make setup` installs Debian's where apt has it.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from sinkpaper import paper as registry
from sinkpaper.book import figures
from sinkpaper.site import machine_paths, pages, runner, toc

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("SINKPAPER_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync"]
# Console messages a page may log, each with why no setting removes it. None now: the doubled sphinx-thebe script is
# dropped by sinkpaper.site.sphinx_ext and the theme's empty mode is set in _config.yml (html_context.default_mode).
ALLOWED_CONSOLE: tuple[re.Pattern, ...] = ()
LOCAL_SCHEMES = {"file", "data", "blob", "about"}
LOCAL_HOSTS = {"127.0.0.1"}
EXPLORER_ROOTS = ".sinkpaper-explorer, [data-spx]"
WIDGET_VIEW = 'script[type="application/vnd.jupyter.widget-view+json"]'
RENDER_TIMEOUT_MS = 30_000  # charts and widgets must be drawn by then (slow shared CPUs)
REACT_TIMEOUT_MS = 5_000  # after an interaction, the page must have changed by then
MAX_SLIDERS_PER_PAGE = 6
PAGES = toc.docnames(REPO / "_toc.yml")
MAX_VISIBLE_CODE_INPUTS = 2
SMOKE_MARKERS = (re.compile(r"every variant trains", re.I), re.compile(r"mechanics on cpu", re.I),
                 re.compile(r"not a sink result", re.I))
VIEWPORT = {"width": 1280, "height": 1000}


def is_external(url: str) -> bool:
    parts = urlsplit(url)
    if parts.scheme in LOCAL_SCHEMES:
        return False
    if parts.scheme in ("http", "https", "ws", "wss"):
        return parts.hostname not in LOCAL_HOSTS
    return True


# ---------------------------------------------------------------------------------------------- browser
@pytest.fixture(scope="session")
def chromium() -> str:
    """Debian's Chromium, or a skip that says so. Session-scoped so that it is set up before `built_book` (pytest
    sets up wider scopes first): without Chromium the page tests skip at once instead of after the notebooks."""
    from sinkpaper.site.chromium import problem

    why = problem(CHROMIUM)  # missing, Ubuntu's snap stub, or not a browser that runs
    if why:
        pytest.skip(why)
    return CHROMIUM


@pytest.fixture(scope="module")
def browser(chromium, tmp_path_factory):
    """One Chromium for this module, with a fresh profile directory; external requests are aborted."""
    from playwright.sync_api import sync_playwright  # a test dependency (sinkpaper[test]); never downloads

    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")), executable_path=chromium, headless=True,
            args=CHROMIUM_ARGS, viewport=VIEWPORT)
        context.route(re.compile(r"^(https?|wss?)://"),
                      lambda route: route.abort() if is_external(route.request.url) else route.continue_())
        try:
            yield context
        finally:
            context.close()


# ----------------------------------------------------------------------------------------------- checks
JS_HELPERS = r"""
window.__siteTest = (function () {
  function hash(s) {
    let h = 5381;
    for (let i = 0; i < s.length; i++) h = ((h * 33) ^ s.charCodeAt(i)) >>> 0;
    return h.toString(16) + ':' + s.length;
  }
  function visible(el) { const cs = getComputedStyle(el); return cs.display !== 'none' && cs.visibility !== 'hidden'; }
  function outermost(els) { return els.filter(e => !els.some(o => o !== e && o.contains(e))); }
  // What an area shows: visible text, canvas pixels, images, svg markup; the `exclude` subtree left out.
  function signature(roots, exclude) {
    const parts = [];
    function walk(node) {
      if (exclude && (node === exclude || exclude.contains(node))) return;
      if (node.nodeType === 3) { const t = node.textContent.trim(); if (t) parts.push(t); return; }
      if (node.nodeType !== 1 || node.tagName === 'SCRIPT' || node.tagName === 'STYLE') return;
      if (!visible(node)) return;
      if (node.tagName === 'CANVAS') {
        try { parts.push('canvas ' + hash(node.toDataURL())); } catch (e) { parts.push('canvas ?'); }
      }
      if (node.tagName === 'IMG') parts.push('img ' + hash(node.src));
      if (node.tagName.toLowerCase() === 'svg') { parts.push('svg ' + hash(node.outerHTML)); return; }
      if (node.tagName === 'INPUT' || node.tagName === 'SELECT') parts.push('value ' + node.value);
      for (const c of node.childNodes) walk(c);
    }
    roots.forEach(walk);
    return parts.join('\u0001');
  }
  function charts() {
    return outermost(Array.from(document.querySelectorAll('[id^="altair-viz-"], .vega-embed')));
  }
  function chartState(el) {
    const text = (el.textContent || '').trim();
    if (/JavaScript Error|Error:/.test(text) && !el.querySelector('svg, canvas')) return 'error: ' + text.slice(0, 200);
    return el.querySelector('svg, canvas') ? 'ok' : 'empty';
  }
  function describe(el) {
    const bits = [el.id, el.name, el.title, el.getAttribute('aria-label'), JSON.stringify(el.dataset)];
    const label = el.closest('label'); if (label) bits.push(label.textContent);
    if (el.id) { const l = document.querySelector('label[for="' + el.id + '"]'); if (l) bits.push(l.textContent); }
    return bits.filter(Boolean).join(' ');
  }
  function widgetRoots() { return Array.from(document.querySelectorAll('%(view)s')).map(s => s.parentElement); }
  function rendered(area) {
    return Array.from(area.querySelectorAll('.jupyter-widgets, [class*="widget-"]'))
      .some(e => e.getBoundingClientRect().width > 0);
  }
  return {hash, signature, charts, chartState, describe, widgetRoots, rendered, outermost};
})();
""" % {"view": WIDGET_VIEW}


@dataclass
class PageReport:
    name: str
    requests: list[str] = field(default_factory=list)
    external: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)
    missing_files: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    checked: dict = field(default_factory=dict)  # what was found: charts, explorers, widget views, sliders

    def all_problems(self) -> list[str]:
        out = [f"request leaves the machine: {u}" for u in self.external]
        out += [f"console error: {m}" for m in self.console_errors]
        out += [f"missing local file: {u}" for u in self.missing_files]
        return out + self.problems

    def message(self) -> str:
        problems = self.all_problems()
        return f"{self.name}: {len(problems)} problem(s):\n  - " + "\n  - ".join(problems)


def _allowed(text: str) -> bool:
    return any(p.search(text) for p in ALLOWED_CONSOLE)


def check_page(context, url: str, name: str, render_timeout_ms: int = RENDER_TIMEOUT_MS,
               react_timeout_ms: int = REACT_TIMEOUT_MS, forbidden_paths=()) -> PageReport:
    """Load ``url`` in a new tab, run every check that applies to what the page contains, close the tab.
    Charts and widgets get ``render_timeout_ms`` to draw, interactions ``react_timeout_ms`` to show;
    ``forbidden_paths`` are absolute paths of the machine the page must not show (besides
    :func:`sinkpaper.site.machine_paths.machine_paths`)."""
    report = PageReport(name)
    timeouts = {"render": render_timeout_ms, "react": react_timeout_ms}
    page = context.new_page()

    def record(url):
        report.requests.append(url)
        if is_external(url):
            report.external.append(url)

    def on_console(msg):
        if msg.type == "error" and not _allowed(msg.text):
            loc = msg.location or {}
            where = f" ({loc.get('url', '')}:{loc.get('lineNumber', '')})" if loc.get("url") else ""
            report.console_errors.append(msg.text[:500] + where)

    def on_failed(request):
        if not is_external(request.url):
            report.missing_files.append(f"{request.url} ({request.failure})")

    page.on("request", lambda request: record(request.url))
    page.on("websocket", lambda ws: record(ws.url))
    page.on("console", on_console)
    page.on("pageerror", lambda exc: None if _allowed(str(exc)) else report.console_errors.append(
        f"uncaught {exc}"[:500]))
    page.on("requestfailed", on_failed)
    try:
        page.goto(url, wait_until="load", timeout=60_000)
        page.evaluate(JS_HELPERS)
        _check_reading(page, report, [*machine_paths.machine_paths(), *map(str, forbidden_paths)], own_site_url(url))
        _check_charts(page, report, timeouts)
        _check_explorers(page, report, timeouts)
        _check_widgets(page, report, timeouts)
        _check_charts(page, report, timeouts)  # again: charts the interactions brought into view
        page.wait_for_timeout(200)  # late console messages from the interactions
    except Exception as exc:  # noqa: BLE001 - report a broken page as a problem of that page
        report.problems.append(f"page check crashed: {type(exc).__name__}: {str(exc)[:500]}")
    finally:
        page.close()
    return report


def _wait(page, expression: str, arg, timeout: int) -> bool:
    try:
        page.wait_for_function(expression, arg=arg, timeout=timeout, polling=100)
        return True
    except Exception:  # noqa: BLE001 - playwright's TimeoutError
        return False


VISIBLE_INPUTS_JS = """() => Array.from(document.querySelectorAll('.cell_input, .cell .input_area'))
    .filter(e => !e.closest('details:not([open])') && (!e.checkVisibility || e.checkVisibility())
                 && e.getBoundingClientRect().height > 0).length"""  # content of a closed <details> still has a box
WIDE_JS = """() => {
  const out = [], root = document.scrollingElement || document.documentElement;
  if (root.scrollWidth > root.clientWidth + 1) out.push('the page (' + root.scrollWidth + ' > ' + root.clientWidth + ' px)');
  for (const el of document.querySelectorAll('main *')) {
    // folded content (closed <details>) and code listings (a long code line scrolls by design) do not count
    if (el.closest('details:not([open])') || (el.checkVisibility && !el.checkVisibility())) continue;
    if (el.closest('pre, .highlight')) continue;
    const ox = getComputedStyle(el).overflowX;
    if ((ox === 'auto' || ox === 'scroll') && el.scrollWidth > el.clientWidth + 1)
      out.push((el.className || el.tagName) + ' (' + el.scrollWidth + ' > ' + el.clientWidth + ' px)');
  }
  return out;
}"""


def own_site_url(url: str) -> str:
    """The built site's own root as the browser sees it (``file:///…/_build/html``): scripts resolve URLs
    against it at run time (e.g. the widget manager's font-face CSS), so it is where the page is opened from,
    not something the build wrote into the page."""
    path = urllib.parse.urlparse(url).path
    i = path.find("/_build/html/")
    root = path[:i + len("/_build/html")] if i >= 0 else path.rsplit("/", 1)[0]
    return "file://" + root


def _check_reading(page, report: PageReport, forbidden: list[str], own_url: str = "") -> None:
    """What a reader meets: folded code, no machine path, no smoke table."""
    n = page.evaluate(VISIBLE_INPUTS_JS)
    report.checked["visible_code_inputs"] = n
    if n > MAX_VISIBLE_CODE_INPUTS:
        report.problems.append(f"{n} visible code inputs (at most {MAX_VISIBLE_CODE_INPUTS}; the runner tags the "
                               "others hide-input)")
    content, text = page.content(), page.inner_text("body")
    if own_url:
        content, text = content.replace(own_url, ""), text.replace(own_url, "")
    for p in sorted(set(forbidden), key=len, reverse=True):
        if p and (p in content or p in text):
            report.problems.append(f"shows {p!r}, an absolute path of the build machine")
            break
    for marker in SMOKE_MARKERS:
        if marker.search(text):
            report.problems.append(f"contains a smoke table ({marker.pattern!r}): a test, not a result")
            break


def wide_elements(page) -> list[str]:
    """What scrolls sideways in the page at the current viewport: the page itself or any scroll container."""
    return page.evaluate(WIDE_JS)


def _check_charts(page, report: PageReport, timeouts: dict) -> None:
    n = page.evaluate("__siteTest.charts().length")
    report.checked["charts"] = max(n, report.checked.get("charts", 0))
    if not n:
        return
    _wait(page, "() => __siteTest.charts().every(e => __siteTest.chartState(e) !== 'empty')", None, timeouts["render"])
    states = page.evaluate("__siteTest.charts().map(e => [e.id || e.className, __siteTest.chartState(e)])")
    for ident, state in states:
        problem = f"altair chart #{ident} did not render ({state}); is vega-bundle.js loaded?"
        if state != "ok" and problem not in report.problems:
            report.problems.append(problem)


def _pick(page, root_index: int, selector: str, pattern: str) -> int | None:
    """Index (within the explorer root) of the first ``selector`` element whose id/name/label/data matches."""
    return page.evaluate(
        """([roots, i, sel, pat]) => {
             const root = __siteTest.outermost(Array.from(document.querySelectorAll(roots)))[i];
             const els = Array.from(root.querySelectorAll(sel));
             const re = new RegExp(pat, 'i');
             const hit = els.findIndex(e => re.test(__siteTest.describe(e)));
             return hit >= 0 ? hit : (els.length === 1 && sel.includes('range') ? 0 : null);
           }""", [EXPLORER_ROOTS, root_index, selector, pattern])


def _check_explorers(page, report: PageReport, timeouts: dict) -> None:
    n = page.evaluate("(sel) => __siteTest.outermost(Array.from(document.querySelectorAll(sel))).length",
                      EXPLORER_ROOTS)
    report.checked["explorers"] = n
    for i in range(n):
        label = f"attention explorer {i + 1}"
        page.evaluate("""([sel, i]) => __siteTest.outermost(Array.from(document.querySelectorAll(sel)))[i]
                                          .setAttribute('data-site-test', 'explorer-' + i)""", [EXPLORER_ROOTS, i])
        # an explorer in a fold is used as a reader uses it: the fold opened first
        page.evaluate("""(i) => { let d = document.querySelector('[data-site-test="explorer-' + i + '"]').closest('details');
                                  for (; d; d = d.parentElement.closest('details')) d.open = true; }""", i)
        root = page.locator(f'[data-site-test="explorer-{i}"]')
        root.scroll_into_view_if_needed()
        readout_js = ("""(i) => { const r = document.querySelector('[data-site-test="explorer-' + i + '"]');
                         return r.innerText.split('\\n').filter(l => /sink/i.test(l)).join('\\n'); }""")
        canvases_js = ("""(i) => Array.from(document.querySelectorAll('[data-site-test="explorer-' + i + '"] canvas'))
                           .map(c => __siteTest.hash(c.toDataURL())).join(' ')""")
        # the epsilon slider moves the Sink readout
        eps = _pick(page, i, 'input[type="range"]', r"eps|\u03b5|epsilon|threshold")
        readout = page.evaluate(readout_js, i)
        if eps is None:
            report.problems.append(f"{label}: no epsilon slider (input[type=range] labelled epsilon / \u03b5)")
        elif not readout:
            report.problems.append(f"{label}: no Sink readout (no text mentioning Sink)")
        else:
            slider = root.locator('input[type="range"]').nth(eps)
            moved = False
            for key in ("End", "Home"):
                slider.focus()
                slider.press(key)
                if _wait(page, f"([i, before]) => ({readout_js})(i) !== before", [i, readout], timeouts["react"]):
                    moved = True
                    break
            if not moved:
                report.problems.append(f"{label}: moving the epsilon slider (to its ends) left the Sink readout at "
                                       f"{readout!r}")
        # the layer select redraws the map
        layer = _pick(page, i, "select", r"layer")
        n_canvas = root.locator("canvas").count()
        if n_canvas == 0:
            report.problems.append(f"{label}: no canvas")
        if layer is None:
            report.problems.append(f"{label}: no layer select")
            continue
        select = root.locator("select").nth(layer)
        options = select.locator("option").count()
        report.checked.setdefault("explorer_layers", []).append(options)
        if options < 2 or n_canvas == 0:
            continue  # a one-layer model has nothing to switch to
        before = page.evaluate(canvases_js, i)
        current = select.evaluate("s => s.selectedIndex")
        select.select_option(index=(current + 1) % options)
        if not _wait(page, f"([i, before]) => ({canvases_js})(i) !== before", [i, before], timeouts["react"]):
            report.problems.append(f"{label}: changing the layer select did not change any canvas")


def _check_widgets(page, report: PageReport, timeouts: dict) -> None:
    n = page.locator(WIDGET_VIEW).count()
    report.checked["widget_views"] = n
    if not n:
        return
    _wait(page, "() => __siteTest.widgetRoots().every(__siteTest.rendered)", None, timeouts["render"])
    blank = page.evaluate("__siteTest.widgetRoots().map((a, i) => __siteTest.rendered(a) ? -1 : i).filter(i => i >= 0)")
    if blank:
        has_embed = page.evaluate("Array.from(document.scripts).some(s => /widgets\\/embed\\.js/.test(s.src))")
        hint = ("" if has_embed else " (the page loads no widgets/embed.js: see sinkpaper.site.assets)")
        report.problems.append(f"{len(blank)} of {n} widget view(s) did not render{hint}")
        return
    sliders = page.locator(".widget-slider")
    count = min(sliders.count(), MAX_SLIDERS_PER_PAGE)
    report.checked["widget_sliders"] = sliders.count()
    for j in range(count):
        slider = sliders.nth(j)
        if not slider.is_visible():
            continue
        name = (slider.locator(".widget-label").first.inner_text() if slider.locator(".widget-label").count()
                else f"#{j + 1}").strip() or f"#{j + 1}"
        slider.scroll_into_view_if_needed()
        slider.evaluate("(el, j) => el.setAttribute('data-site-test', 'slider-' + j)", j)
        value_js = """(j) => { const s = document.querySelector('[data-site-test="slider-' + j + '"]');
                        const r = s.querySelector('.widget-readout'); const h = s.querySelector('.noUi-handle, input');
                        const v = h ? (h.getAttribute('aria-valuenow') || h.value || '') : '';
                        return (r ? r.textContent : '') + '|' + v; }"""
        shown_js = """(j) => __siteTest.signature(__siteTest.widgetRoots(),
                        document.querySelector('[data-site-test="slider-' + j + '"]'))"""
        handle = slider.locator(".noUi-handle, input[type='range']").first
        if handle.count() == 0:
            report.problems.append(f"widget slider {name!r}: no handle to move")
            continue
        value0, shown0 = page.evaluate(value_js, j), page.evaluate(shown_js, j)
        changed_value = changed_view = False
        for key in ("End", "Home"):
            handle.focus()
            handle.press(key)
            if page.evaluate(value_js, j) == value0:
                continue
            changed_value = True
            if _wait(page, f"([j, before]) => ({shown_js})(j) !== before", [j, shown0], timeouts["react"]):
                changed_view = True
                break
        if not changed_value:
            report.problems.append(f"widget slider {name!r}: does not move (End/Home on its handle)")
        elif not changed_view:
            report.problems.append(
                f"widget slider {name!r}: moving it changed nothing else the widgets show (in a static page only "
                f"browser-side links work, e.g. jslink to a Stack; Python callbacks such as interact do not run)")


# -------------------------------------------------------------------------------------------- the book
@pytest.mark.parametrize("docname", PAGES)
def test_page_in_browser(docname, chromium, built_book, browser):
    html = built_book.require_page(docname)  # skips in a SINKPAPER_TEST_NOTEBOOKS session; fails if not built
    report = check_page(browser, html.as_uri(), docname, forbidden_paths=[built_book.root, built_book.root.resolve()])
    assert not report.all_problems(), report.message()
    assert report.requests, f"{docname}: the browser recorded no request at all (is request recording broken?)"


def test_scorecard_fits_a_1280_pixel_window(chromium, built_book, browser):
    """The front page (the scorecard) at a 1280 x 1000 viewport: nothing scrolls sideways, and its compact table
    (sinkpaper.book.scorecard) is there, one row per claim."""
    root = toc.docnames(built_book.root / "_toc.yml")[0]
    html = built_book.require_page(root)
    page = browser.new_page()
    try:
        page.set_viewport_size(VIEWPORT)
        page.goto(html.as_uri(), wait_until="load", timeout=60_000)
        rows = page.locator(".spx-grid tr[id^='claim-']").count()
        wide = wide_elements(page)
    finally:
        page.close()
    assert rows > 0, f"{root}: no scorecard grid (.spx-grid)"
    assert not wide, f"{root} scrolls sideways at 1280 px: {wide}"


# the scorecard (the root) and every chapter that holds a claim of the registry
CLAIM_PAGES = [*PAGES[:1], *sorted({f"book/{c.chapter}" for c in registry.CLAIMS} & set(PAGES))]
FIRST_SCREEN = pages.SCREEN
PHONE = {"width": 390, "height": 800}
MAX_WIDE_PAGES_ON_A_PHONE = 2
FIRST_SCREEN_JS = r"""() => {
  const h = window.innerHeight, seen = el => { const r = el.getBoundingClientRect();
    return r.width > 0 && r.height > 0 && r.top < h && r.bottom > 0 && !el.closest('details:not([open])'); };
  const charts = __siteTest.charts().filter(e => __siteTest.chartState(e) === 'ok' && seen(e)).length;
  const chips = Array.from(document.querySelectorAll('.spx-chip')).filter(seen).map(e => e.textContent.trim());
  const paper = Array.from(document.querySelectorAll('.spx-headline, .spx-src')).filter(seen).map(e => e.textContent.trim())
    .filter(t => /paper -?[0-9]|the paper gives no number/.test(t));
  return {charts, chips, paper};
}"""
# What sticks out of the content area without a scroll container of its own (a table, a chart, a long word).
OVERFLOW_JS = r"""() => {
  const out = [], root = document.scrollingElement || document.documentElement;
  if (root.scrollWidth > root.clientWidth + 1) out.push('the page (' + root.scrollWidth + ' > ' + root.clientWidth + ' px)');
  const main = document.querySelector('main') || document.body, right = main.getBoundingClientRect().right + 1;
  for (const el of main.querySelectorAll('*')) {
    // folded content, code listings (a long code line scrolls by design) and the theme's sidebars (off-canvas
    // drawers on a phone, opened by a button) do not count
    if (el.closest('details:not([open]), pre, .highlight, .bd-sidebar-primary, .bd-sidebar-secondary')
        || (el.checkVisibility && !el.checkVisibility())) continue;
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.right <= right) continue;
    // contained: some ancestor inside the content area clips or scrolls it (an svg clipping its own drawing, or
    // a scroll container)
    let p = el.parentElement, contained = false;
    for (; p && p !== main && !contained; p = p.parentElement) {
      const ox = getComputedStyle(p).overflowX;
      contained = ['auto', 'scroll', 'hidden', 'clip'].includes(ox) && p.getBoundingClientRect().right <= right;
    }
    if (!contained) { out.push((typeof el.className === 'string' && el.className || el.tagName) + ' (right edge ' + Math.round(r.right) + ' > ' + Math.round(right) + ' px)'); if (out.length > 5) break; }
  }
  return out;
}"""


def _seen(browser, html, viewport, script: str):
    """What ``script`` returns on the page ``html`` at ``viewport``, once its charts are drawn, scrolled to the top."""
    page = browser.new_page()
    try:
        page.set_viewport_size(viewport)
        page.goto(html.as_uri(), wait_until="load", timeout=60_000)
        page.evaluate(JS_HELPERS)
        _wait(page, "() => __siteTest.charts().every(e => __siteTest.chartState(e) !== 'empty')", None,
              RENDER_TIMEOUT_MS)
        page.evaluate("window.scrollTo(0, 0)")
        return page.evaluate(script)
    finally:
        page.close()


@pytest.mark.parametrize("docname", CLAIM_PAGES)
def test_first_screen_shows_a_chart_the_papers_value_and_a_verdict(docname, chromium, built_book, browser):
    """At 1280 x 900, before any scrolling: a drawn chart, the paper's number beside ours (or the words "the paper
    gives no number" where the registry has none, in a headline or a claim's source line) and a verdict chip
    (sinkpaper.book.findings)."""
    seen = _seen(browser, built_book.require_page(docname), FIRST_SCREEN, FIRST_SCREEN_JS)
    assert seen["charts"] and seen["chips"] and seen["paper"], f"{docname}: first screen shows {seen}"


@pytest.mark.parametrize("docname", PAGES)
def test_nothing_sticks_out_at_1280_px_outside_a_scroll_container(docname, chromium, built_book, browser):
    wide = _seen(browser, built_book.require_page(docname), VIEWPORT, OVERFLOW_JS)
    assert not wide, f"{docname} overflows at 1280 px: {wide}"


def test_at_most_two_pages_overflow_on_a_phone(chromium, built_book, browser):
    """At 390 px charts follow the column and verdict tables stack; at most two pages may still stick out."""
    wide = {}
    for docname in PAGES:
        if built_book.page_skip_reason(docname) or built_book.page_missing_reason(docname):
            continue
        found = _seen(browser, built_book.page(docname), PHONE, OVERFLOW_JS)
        if found:
            wide[docname] = found
    assert len(wide) <= MAX_WIDE_PAGES_ON_A_PHONE, f"{len(wide)} pages overflow at 390 px: {wide}"


def _chart_specs(built_book) -> dict[str, list[dict]]:
    """Every vega-lite spec each executed chapter embeds, by stem."""
    import json

    out = {}
    for stem in built_book.selected:
        nb = built_book.notebook(stem)
        if not nb.is_file():
            continue
        cells = json.loads(nb.read_text())["cells"]
        html = ["".join(v) if isinstance(v, list) else v for c in cells for o in c.get("outputs", [])
                for k, v in o.get("data", {}).items() if k == "text/html"]
        out[stem] = [spec for h in html for spec in figures.embedded_specs(h)]
    return out


def test_no_chart_joins_runs_of_different_seeds(built_book):
    """Offline, over every chart of every executed chapter: each line is one run or one mean over seeds."""
    joined = {stem: found for stem, specs in _chart_specs(built_book).items()
              if (found := [j for spec in specs for j in figures.joined_lines(spec)])}
    assert not joined, f"lines through several runs: {joined}"


def test_no_chart_panel_draws_more_series_than_a_reader_can_tell_apart(built_book):
    crowded = {doc: found for doc in PAGES if (html := built_book.html_dir / f"{doc}.html").exists()
               if (found := [c for spec in figures.embedded_specs(html.read_text(encoding="utf-8"))
                             for c in figures.crowded_panels(spec)])}
    assert not crowded, f"panels with more than {figures.MAX_SERIES} series: {crowded}"


def _needs_every_page(built_book, what: str) -> None:
    """Skip a test of the whole book when this session built only some of its pages."""
    skipped = [d for d in PAGES if built_book.page_skip_reason(d)]
    if skipped:
        pytest.skip(f"{len(skipped)} pages not built this session: {what} every page")


PAPER_SHARE = 0.60   # of the book's charts, the share that carries the paper's value (the rest: numbers it never gave)


def test_most_charts_of_the_book_draw_the_papers_value(built_book):
    """Over every chart of the built site: at least PAPER_SHARE carry a value of the paper in their data
    (figures.draws_the_paper); a chart of something the paper gives no number for says so instead. A share of the
    whole book: it needs every page built (a session that executes only some chapters skips it)."""
    _needs_every_page(built_book, "the book's share of charts needs")
    specs = [spec for doc in PAGES if (html := built_book.html_dir / f"{doc}.html").exists()
             for spec in figures.embedded_specs(html.read_text(encoding="utf-8"))]
    drawn = sum(map(figures.draws_the_paper, specs))
    assert specs and drawn / len(specs) >= PAPER_SHARE, f"{drawn} of {len(specs)} charts draw the paper's value"


def test_the_measurements_page_draws_every_stored_series_it_names(built_book):
    """Each ``sinkpaper-chart`` of the Measurements page whose stored file is in the checkout is drawn there."""
    from sinkpaper.book import measured_charts

    names = re.findall(r"```\{sinkpaper-chart\} (\S+)", (REPO / "book" / "measurements.md").read_text())
    stored = [n for n in names if measured_charts.chart(n, REPO) is not None]
    specs = figures.embedded_specs((built_book.html_dir / "book" / "measurements.html").read_text(encoding="utf-8"))
    assert stored and len(specs) == len(stored), f"{len(specs)} charts drawn of the stored {stored}"


def test_colab_links_name_tracked_files(built_book):
    """Offline: every "Open in Colab" link in the built site opens a file that `git ls-files` lists, and every
    chapter page has one."""
    from sinkpaper.book import colab

    tracked = set(subprocess.run(["git", "-C", str(REPO), "ls-files"], capture_output=True, text=True,
                                 check=True).stdout.split())
    bad, without = {}, []
    for page in sorted(built_book.html_dir.rglob("*.html")):
        text = page.read_text(encoding="utf-8", errors="replace")
        rel = page.relative_to(built_book.html_dir).as_posix()
        missing = colab.untracked_targets(text, tracked)
        if missing:
            bad[rel] = missing
        stem = page.stem
        if rel.startswith("book/") and stem in built_book.selected and "colab.research.google.com" not in text:
            without.append(rel)
    assert not bad, f"Colab links to files git does not track: {bad}"
    assert not without, f"chapter pages without an Open in Colab link: {without}"


def _unbuilt_this_session(built_book, target) -> bool:
    """A link to the page of a chapter a restricted session (SINKPAPER_TEST_NOTEBOOKS) did not execute."""
    try:
        docname = target.relative_to(built_book.html_dir.resolve()).with_suffix("").as_posix()
    except ValueError:
        return False
    return target.suffix == ".html" and built_book.page_skip_reason(docname) is not None


def test_every_relative_link_of_the_site_resolves(built_book):
    """Offline: each href / src of a built page that points inside the site names a file the build wrote (the
    scorecard once linked a claim no chapter runs to 'not run.html'). The theme's template snippets under
    _static are not pages; in a restricted session the pages of the chapters it did not execute are not built."""
    from html.parser import HTMLParser
    from urllib.parse import unquote, urlsplit

    class Links(HTMLParser):
        def __init__(self):
            super().__init__()
            self.found = []

        def handle_starttag(self, tag, attrs):
            self.found += [v for k, v in attrs if k in ("href", "src") and v]

    broken = {}
    for page in sorted(built_book.html_dir.rglob("*.html")):
        rel = page.relative_to(built_book.html_dir).as_posix()
        if rel.startswith("_static/"):
            continue
        links = Links()
        links.feed(page.read_text(encoding="utf-8", errors="replace"))
        for link in links.found:
            u = urlsplit(link)
            if u.scheme or u.netloc or not u.path or link.startswith(("#", "mailto:", "javascript:", "data:")):
                continue
            target = (page.parent / unquote(u.path)).resolve()
            if target.exists() or _unbuilt_this_session(built_book, target):
                continue
            broken.setdefault(rel, []).append(link)
    assert not broken, f"links to files the build did not write: {broken}"


@pytest.mark.parametrize("docname", CLAIM_PAGES[1:])
def test_a_chapter_says_where_its_numbers_came_from_in_one_line_and_the_appendix_lists_them(docname, built_book):
    """One 'Sources:' line per chapter (sinkpaper.book.sources), no provenance line beside the findings, and the
    sources appendix holds the chapter's ledger."""
    from sinkpaper.book import sources

    page = built_book.require_page(docname).read_text(encoding="utf-8")
    text = re.sub(r"<[^>]+>", "", page)
    assert text.count("Sources:") == 1 and "Provenance:" not in text, docname
    unbuilt = built_book.page_skip_reason(f"book/{sources.APPENDIX}")
    if unbuilt:   # sphinx links only to a page it builds
        pytest.skip(unbuilt)
    assert f'href="{sources.APPENDIX}.html"' in page
    appendix = built_book.require_page(f"book/{sources.APPENDIX}").read_text(encoding="utf-8")
    assert Path(docname).name in appendix


def test_no_chapter_prints_to_its_page(built_book):
    """What a chapter shows is a figure, a table or a sentence it displays; a print() is lab residue on the page."""
    import json as _json

    printed = {}
    for nb in sorted(built_book.book_dir.glob("*.ipynb")):
        for cell in _json.loads(nb.read_text()).get("cells", []):
            for out in cell.get("outputs", []):
                if out.get("output_type") == "stream" and out.get("name") == "stdout":
                    printed.setdefault(nb.stem, []).append("".join(out.get("text", ""))[:80])
    assert not printed, printed


def test_formulas_are_drawn_as_mathml_by_the_browser(chromium, built_book, browser):
    """The glossary's formulas arrive as MathML the browser lays out itself (no script renders them, nothing is
    fetched: test_page_in_browser checks the requests): each <math> has a size, and no TeX source is left."""
    html = built_book.require_page("book/glossary")
    page = browser.new_page()
    try:
        page.set_viewport_size(FIRST_SCREEN)
        page.goto(html.as_uri(), wait_until="load", timeout=60_000)
        sizes = page.evaluate("() => Array.from(document.querySelectorAll('main math')).map(m => "
                              "[m.getBoundingClientRect().width, m.getBoundingClientRect().height])")
        text = page.evaluate("() => document.querySelector('main').innerText")
    finally:
        page.close()
    assert len(sizes) >= 5 and all(w > 0 and h > 0 for w, h in sizes), sizes
    assert not re.search(r"\\(alpha|frac|sum|mathrm)|\$", text), "TeX source shown on the glossary page"


CHAPTER_PAGES = [d for d in PAGES if re.fullmatch(r"book/(0[1-9]|1[0-4])_\w+", d)]
# what a chart may sit in without a numbered caption of its own: a finding card (its claim is its caption), the
# lead of chapter 4 (its sentences beside it), a widget's pre-rendered views (the widget's own label)
UNCAPTIONED_OK = ".spx-findings, .spx-lead, .jupyter-widgets, .widget-output"
CAPTIONS_JS = r"""() => {
  const out = {loose: [], captions: []};
  for (const el of __siteTest.charts()) {
    if (el.closest('%s')) continue;
    const fig = el.closest('figure.spx-figure');
    if (!fig) { out.loose.push(el.id || el.className); continue; }
  }
  for (const fig of document.querySelectorAll('figure.spx-figure'))
    out.captions.push((fig.querySelector('figcaption') || {}).textContent || '');
  return out;
}""" % UNCAPTIONED_OK


@pytest.mark.parametrize("docname", CHAPTER_PAGES)
def test_every_chart_of_a_chapter_is_a_numbered_figure_with_a_caption(docname, chromium, built_book, browser):
    """Each chart a chapter draws (outside its finding card) stands in a figure numbered "Figure <chapter>.<n>"
    whose caption says what it plots; a chart added without one fails here, naming the page."""
    seen = _seen(browser, built_book.require_page(docname), FIRST_SCREEN, CAPTIONS_JS)
    assert not seen["loose"], f"{docname}: charts without a numbered caption: {seen['loose']}"
    chapter = int(docname.split("/")[1][:2])
    bad = [c for c in seen["captions"] if not re.match(rf"Figure {chapter}\.\d+\. \S.{{20,}}", c.strip())]
    assert not bad, f"{docname}: captions not numbered 'Figure {chapter}.n.' or too short to say what is plotted: {bad}"


FIG_REF = re.compile(r'<a class="spx-figref" href="#(fig-[\d-]+)"')
FIG_ID = re.compile(r'<figure class="spx-figure" id="(fig-[\d-]+)"')
# the chapters whose text reads a figure in words: each cites it by number
CITING = ("book/04_optimization", "book/07_architecture", "book/09_attention_ops", "book/14_when_the_sink_forms")


@pytest.mark.parametrize("docname", CHAPTER_PAGES)
def test_a_chapter_cites_its_figures_by_number_and_each_citation_lands_on_one(docname, built_book):
    """Text says "Figure 7.1", linked (figures.fig_ref / Figure.ref); a citation whose figure is not on the page
    (renumbered, or drawn only at another profile) fails here, naming it."""
    page = built_book.require_page(docname).read_text(encoding="utf-8")
    figs, cited = set(FIG_ID.findall(page)), FIG_REF.findall(page)
    assert set(cited) <= figs, f"{docname}: cites {sorted(set(cited) - figs)}, not figures of the page {sorted(figs)}"
    if docname in CITING:
        assert cited, f"{docname}: its text reads a figure without citing it by number"


def test_folds_are_closed_details_that_open_for_printing(chromium, built_book, browser):
    """The Measurements page keeps its reference in folds: closed <details> (found by the browser's find-in-page),
    each with a title; a print opens every one of them, and they close again after."""
    html = built_book.require_page("book/measurements")
    page = browser.new_page()
    try:
        page.set_viewport_size(FIRST_SCREEN)
        page.goto(html.as_uri(), wait_until="load", timeout=60_000)
        closed = "() => document.querySelectorAll('main details:not([open])').length"
        titles = page.evaluate("() => Array.from(document.querySelectorAll('main details > summary'))"
                               ".map(s => s.innerText.trim())")
        before = page.evaluate(closed)
        page.evaluate("window.dispatchEvent(new Event('beforeprint'))")
        printing = page.evaluate(closed)
        page.evaluate("window.dispatchEvent(new Event('afterprint'))")
        after = page.evaluate(closed)
    finally:
        page.close()
    assert before >= 20 and all(titles), (before, titles)
    assert printing == 0 and after == before, (before, printing, after)


def test_index_redirects_to_the_front_page_and_search_page_loads(chromium, built_book, browser):
    """The book's entry points: index.html forwards to _toc.yml's root page; search.html loads cleanly."""
    root = toc.docnames(built_book.root / "_toc.yml")[0]
    index = built_book.html_dir / "index.html"
    assert index.is_file(), "index.html missing from the build"
    target = re.search(r'http-equiv="refresh"\s+content="0;\s*url=([^"]+)"', index.read_text(), re.I)
    assert target and target.group(1) == f"{root}.html", f"index.html does not forward to {root}.html"
    search = built_book.html_dir / "search.html"
    assert search.is_file(), "search.html missing from the build"
    report = check_page(browser, search.as_uri(), "search.html")
    assert not report.all_problems(), report.message()


# ------------------------------------------------------------------------------------- the checks' check
GOOD_EXPLORER = """
<div class="sinkpaper-explorer">
  <label>layer
    <select><option value="0">0</option><option value="1">1</option><option value="2">2</option></select>
  </label>
  <label>&epsilon; <input type="range" min="0" max="1" step="0.01" value="0.3"></label>
  <canvas width="32" height="32"></canvas>
  <div class="readout"></div>
  <script>(function () {
    var root = document.currentScript.parentElement, sel = root.querySelector("select"),
        eps = root.querySelector("input"), cv = root.querySelector("canvas"), out = root.querySelector(".readout");
    var alpha = [0.1, 0.35, 0.6, 0.9];
    function draw() {
      var ctx = cv.getContext("2d");
      ctx.fillStyle = "rgb(" + (90 * +sel.value) + ",100,200)"; ctx.fillRect(0, 0, 32, 32);
      out.textContent = "Sink_1: " + (100 * alpha.filter(function (a) { return a > +eps.value; }).length / 4) + " %";
    }
    if (WIRED) { sel.addEventListener("change", draw); eps.addEventListener("input", draw); }
    draw();
  })();</script>
</div>
"""
SYNTH_GOOD = textwrap.dedent(
    '''\
    # %% [markdown]
    # # A good page

    # %% tags=["parameters"]
    profile = "cpu"

    # %%
    import altair as alt
    import ipywidgets as w
    from IPython.display import HTML, display
    alt.Chart(alt.Data(values=[{"x": i, "y": i * i} for i in range(5)])).mark_line().encode(x="x:Q", y="y:Q")

    # %%
    labels = ["a", "b", "c"]
    slider = w.SelectionSlider(options=list(zip(labels, range(3))), index=0, description="pick")
    stack = w.Stack(children=[w.HTML(f"<p>child {x}</p>") for x in labels], selected_index=0)
    w.jslink((slider, "index"), (stack, "selected_index"))
    w.VBox([slider, stack])

    # %%
    display(HTML(EXPLORER))

    # %%
    import json
    from sinkpaper.book import scorecard
    scorecard.Scorecard(json.loads(LISTING))
    ''').replace("EXPLORER", repr(GOOD_EXPLORER.replace("WIRED", "true"))).replace(
    "LISTING", repr((REPO / "tests" / "data" / "claims_listing.json").read_text()))
SYNTH_BAD = textwrap.dedent(
    '''\
    # %% [markdown]
    # # A broken page

    # %% tags=["parameters"]
    profile = "cpu"

    # %%
    import ipywidgets as w
    from IPython.display import HTML, display
    display(HTML('<img src="https://example.invalid/pixel.png">'
                 '<script>console.error("deliberate console error")</script>'))
    display(HTML('<div id="altair-viz-0123456789abcdef"></div>'))

    # %%
    w.VBox([w.IntSlider(description="dead", max=5), w.HTML("<p>never changes</p>")])

    # %%
    display(HTML(EXPLORER))

    # %% tags=["show-input"]
    from IPython.display import Markdown
    display(Markdown("## Mechanics on CPU: every variant trains and is measured"))

    # %% tags=["show-input"]
    display(HTML('<div style="overflow-x:auto"><table style="width:3000px"><tr><td>wide</td></tr></table></div>'))

    # %% tags=["show-input"]
    # the machine's path, put together in the browser (the runner refuses a page whose outputs contain it)
    display(HTML('<p><script>document.currentScript.parentElement.append(PARTS.join("/"))</script></p>'))
    ''').replace("EXPLORER", repr(GOOD_EXPLORER.replace("WIRED", "false"))).replace(
    "PARTS", repr(["", *REPO.parts[1:]]).replace("'", '"'))


@pytest.fixture(scope="module")
def synthetic_site(tmp_path_factory, browser):
    """A two-page book (good, broken) executed by the runner and built by jupyter-book."""
    jb = Path(sys.executable).parent / "jupyter-book"
    assert jb.exists(), f"jupyter-book is not installed next to {sys.executable}"
    root = tmp_path_factory.mktemp("synthetic_site")
    shutil.copy(REPO / "_config.yml", root / "_config.yml")
    (root / "_toc.yml").write_text("format: jb-book\nroot: book/good\nchapters:\n  - file: book/bad\n")
    (root / "book" / "_static").mkdir(parents=True)
    for css in (REPO / "book" / "_static").glob("*.css"):
        shutil.copy(css, root / "book" / "_static" / css.name)
    nbdir = root / "notebooks"
    nbdir.mkdir()
    (nbdir / "good.py").write_text(SYNTH_GOOD)
    (nbdir / "bad.py").write_text(SYNTH_BAD)
    results = runner.run_notebooks("cpu", notebooks_dir=nbdir, out_dir=root / "book", cwd=root, timeout=300, log=None)
    assert all(r.ok for r in results), [r.error for r in results]
    proc = subprocess.run([str(jb), "build", "--all", str(root)], cwd=root, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return root / "_build" / "html"


def _wide(context, url: str) -> list[str]:
    page = context.new_page()
    try:
        page.set_viewport_size(VIEWPORT)
        page.goto(url, wait_until="load", timeout=60_000)
        return wide_elements(page)
    finally:
        page.close()


def test_checker_passes_a_good_page(synthetic_site, browser):
    report = check_page(browser, (synthetic_site / "book" / "good.html").as_uri(), "book/good")
    assert not report.all_problems(), report.message()
    assert report.checked["charts"] == 1 and report.checked["explorers"] == 1, report.checked
    assert report.checked["widget_views"] >= 1 and report.checked["widget_sliders"] == 1, report.checked
    assert report.checked["visible_code_inputs"] == 0, report.checked  # the runner folded every input
    assert _wide(browser, (synthetic_site / "book" / "good.html").as_uri()) == []  # the scorecard fits 1280 px


def test_checker_flags_a_page_wider_than_the_window(synthetic_site, browser):
    wide = _wide(browser, (synthetic_site / "book" / "bad.html").as_uri())
    assert wide and any("3000" in w or ">" in w for w in wide), wide


def test_checker_flags_every_problem_of_a_broken_page(synthetic_site, browser):
    report = check_page(browser, (synthetic_site / "book" / "bad.html").as_uri(), "book/bad",
                        render_timeout_ms=5_000, react_timeout_ms=1_500)
    text = report.message()
    assert text.startswith("book/bad: "), text
    expected = {
        "external request": "request leaves the machine: https://example.invalid/pixel.png",
        "console error": "console error: deliberate console error",
        "blank chart": "altair chart #altair-viz-0123456789abcdef did not render (empty)",
        "dead epsilon slider": "attention explorer 1: moving the epsilon slider",
        "dead layer select": "attention explorer 1: changing the layer select did not change any canvas",
        "dead widget slider": "widget slider 'dead': moving it changed nothing else",
        "visible code": "3 visible code inputs (at most 2",
        "machine path": f"shows {str(REPO)!r}, an absolute path of the build machine",
        "smoke table": "contains a smoke table",
    }
    missed = [kind for kind, needle in expected.items() if needle not in text]
    assert not missed, f"not reported: {missed}\n{text}"


# ---------------------------------------------------------------------------------------------- the length budget
LENGTH_JS = f"() => [({pages.PAGE_HEIGHT_JS})(), ({pages.MAIN_TEXT_JS})()]"


def _length(browser, html: Path) -> tuple[float, int]:
    """(screens at pages.SCREEN, words of main text) of a built page, as a reader meets it (folds closed)."""
    height, text = _seen(browser, html, pages.SCREEN, LENGTH_JS)
    return height / pages.SCREEN["height"], len(text.split())


@pytest.mark.parametrize("docname", PAGES)
def test_every_page_fits_its_screen_budget(docname, chromium, built_book, browser):
    """The front page and every chapter in at most pages.MAX_CHAPTER_SCREENS screens of 1280 x 900, any other page
    in at most MAX_OTHER_SCREENS: what leaves the page goes into a fold, not away."""
    screens, _ = _length(browser, built_book.require_page(docname))
    budget = pages.MAX_CHAPTER_SCREENS if docname in CLAIM_PAGES or docname in CHAPTER_PAGES else pages.MAX_OTHER_SCREENS
    assert screens <= budget, f"{docname}: {screens:.1f} screens at 1280 x 900, over its budget of {budget}"


def test_the_book_is_within_its_word_budget(chromium, built_book, browser):
    """Every page's main text together (folds closed), at most pages.BOOK_WORDS words; needs every page built."""
    _needs_every_page(built_book, "the book's words need")
    words = {d: _length(browser, built_book.require_page(d))[1] for d in PAGES}
    total = sum(words.values())
    longest = ", ".join(f"{d} {n:,}" for d, n in sorted(words.items(), key=lambda kv: -kv[1])[:5])
    assert total <= pages.BOOK_WORDS, f"the book has {total:,} words, over {pages.BOOK_WORDS:,}; longest: {longest}"


FOLDED_CHARTS_JS = r"""async () => {
  const folds = Array.from(document.querySelectorAll('main details:not([open])'))
    .filter(d => d.querySelector('.vega-embed'));
  for (const d of folds) d.open = true;
  await new Promise(r => setTimeout(r, 1500));
  return folds.flatMap(d => Array.from(d.querySelectorAll('.vega-embed')).map(e => {
    const drawn = e.querySelector('svg, canvas'), body = d.getBoundingClientRect().width;
    return {summary: d.querySelector('summary').textContent.trim().slice(0, 60),
            width: drawn ? drawn.getBoundingClientRect().width : 0, body};
  }));
}"""


@pytest.mark.parametrize("docname", CHAPTER_PAGES)
def test_a_folded_chart_draws_when_its_fold_is_opened(docname, chromium, built_book, browser):
    """A chart folded when the page loads (a chart as wide as the column measured nothing then) is drawn at a
    readable width once a reader opens its fold (sinkpaper.site.sphinx_ext: FOLD_RESIZE_JS)."""
    charts = _seen(browser, built_book.require_page(docname), FIRST_SCREEN, FOLDED_CHARTS_JS)
    narrow = [c for c in charts if c["width"] < min(150, 0.3 * c["body"])]
    assert not narrow, f"{docname}: charts drawn too narrow once their fold opened: {narrow}"
