"""Widgets that work in the static book: slider_stack's arguments and saved state, the pinned html-manager
embed.js (vendored, every file checked against its pinned sha256; the npm refresh refuses other bytes), and a
real headless-Chromium check of a built Jupyter Book page: the widget renders, the slider switches children, and
no request leaves the machine."""
from __future__ import annotations

import functools
import hashlib
import http.server
import io
import json
import shutil
import stat
import subprocess
import sys
import tarfile
import textwrap
import threading
from pathlib import Path

import pytest

widgets = pytest.importorskip("ipywidgets")
alt = pytest.importorskip("altair")

from sinkpaper.site import assets  # noqa: E402
from sinkpaper.book.widgets import SliderStack, as_child, slider_stack  # noqa: E402

REPO = Path(__file__).resolve().parents[1]




def _chart():
    data = alt.Data(values=[{"x": i, "y": i * i} for i in range(5)])
    return alt.Chart(data).mark_line().encode(x="x:Q", y="y:Q")


# ------------------------------------------------------------------------------------------- the widget
@pytest.mark.parametrize("kwargs, match", [
    (dict(labels=[], children=[]), "at least one"),
    (dict(labels=["a", "b"], children=["<p>a</p>"]), "2 labels but 1 children"),
    (dict(labels=["a", "a"], children=["x", "y"]), "distinct.*'a'"),
    (dict(labels=["a", ""], children=["x", "y"]), "non-empty strings"),
    (dict(labels=["a", 2], children=["x", "y"]), "non-empty strings"),
    (dict(labels="ab", children=["x", "y"]), "list of strings"),
    (dict(labels=["a"], children="x"), "children must be a list"),
    (dict(labels=["a", "b"], children=["x", "y"], value_index=2), r"out of range.*0\.\.1"),
    (dict(labels=["a", "b"], children=["x", "y"], value_index=-1), "out of range"),
    (dict(labels=["a", "b"], children=["x", "y"], value_index=True), "must be an int"),
    (dict(labels=["a"], children=[object()]), "cannot show a builtins.object"),
    (dict(description=3, labels=["a"], children=["x"]), "description must be a string"),
])
def test_slider_stack_rejects_bad_arguments(kwargs, match):
    kwargs = {"description": "layer", **kwargs}
    with pytest.raises(ValueError, match=match):
        slider_stack(**kwargs)


def test_as_child_wraps_html_tables_charts_and_widgets():
    from sinkpaper.book.figures import Table

    assert isinstance(as_child("<b>x</b>"), widgets.HTML) and as_child("<b>x</b>").value == "<b>x</b>"
    table = as_child(Table([{"a": 1}]))
    assert isinstance(table, widgets.HTML) and "<table" in table.value
    w = widgets.IntText()
    assert as_child(w) is w
    out = as_child(_chart())
    assert isinstance(out, widgets.Output)
    (output,) = out.outputs
    html = output["data"]["text/html"]
    assert output["output_type"] == "display_data" and "vegaEmbed" in html and "<script src" not in html
    # the element id is derived from the content, so re-executing a notebook does not change it
    assert as_child(_chart()).outputs[0]["data"]["text/html"] == html
    with pytest.raises(ValueError, match="cannot show"):
        as_child(3.5)


def test_widget_state_serializes_with_the_jslink():
    from ipywidgets.embed import embed_data

    w = slider_stack("layer", ["L0", "L1", "chart"], ["<p>zero</p>", "<p>one</p>", _chart()], value_index=1)
    assert isinstance(w, SliderStack) and w.children == (w.slider, w.stack)
    assert w.slider.label == "L1" and w.stack.selected_index == 1
    data = embed_data(views=[w])
    state = json.loads(json.dumps(data["manager_state"]))["state"]  # what a notebook stores is plain JSON
    ref = lambda widget: f"IPY_MODEL_{widget.model_id}"  # noqa: E731
    links = [s["state"] for s in state.values() if s["model_name"] == "LinkModel"]
    assert {"source": [ref(w.slider), "index"], "target": [ref(w.stack), "selected_index"]} in [
        {k: s[k] for k in ("source", "target")} for s in links]
    assert state[w.link.model_id]["model_module"] == "@jupyter-widgets/controls"
    slider = state[w.slider.model_id]
    assert slider["model_name"] == "SelectionSliderModel"
    assert slider["state"]["_options_labels"] == ["L0", "L1", "chart"] and slider["state"]["index"] == 1
    stack = state[w.stack.model_id]["state"]
    assert stack["selected_index"] == 1 and stack["children"] == [ref(c) for c in w.stack.children]
    assert [state[c.model_id]["model_name"] for c in w.stack.children] == ["HTMLModel", "HTMLModel", "OutputModel"]
    assert data["view_specs"] == [{"version_major": 2, "version_minor": 0, "model_id": w.model_id}]


# ------------------------------------------------------------------------------------------- embed.js
def test_embed_js_is_vendored_pinned_and_verified(tmp_path):
    files = assets.widgets_embed_files()
    assert files[0].name == "embed.js" and files[0].parent == assets.VENDOR_DIR
    assert hashlib.sha256(files[0].read_bytes()).hexdigest() == assets.EMBED_JS_SHA256
    # every vendored file is pinned, and every pinned file is there (independent sha256 here)
    on_disk = {p.name for p in assets.VENDOR_DIR.iterdir() if p.name != "README.md"}
    assert on_disk == set(assets.VENDORED_SHA256)
    for name, digest in assets.VENDORED_SHA256.items():
        assert hashlib.sha256((assets.VENDOR_DIR / name).read_bytes()).hexdigest() == digest, name
    written = assets.write_static_assets(tmp_path)
    names = {p.relative_to(tmp_path).as_posix() for p in written}
    assert {"vega-bundle.js", "vega-debug.js", assets.WIDGETS_EMBED_PATH, "widgets/embed.js.LICENSE.txt",
            "widgets/LICENSE", "widgets/LICENSE-fonts-OFL-1.1.txt"} <= names
    assert sum(n.endswith(".woff2") for n in names) == 3  # FontAwesome, loaded relative to embed.js
    assert (tmp_path / assets.WIDGETS_EMBED_PATH).read_bytes() == files[0].read_bytes()
    assert "Redistribution and use in source and binary forms" in (tmp_path / "widgets" / "LICENSE").read_text()
    # the book loads it: _config.yml lists it and keeps myst-nb's CDN scripts off
    yaml = pytest.importorskip("yaml")
    sphinx = yaml.safe_load((REPO / "_config.yml").read_text())["sphinx"]["config"]
    assert assets.WIDGETS_EMBED_PATH in sphinx["html_js_files"] and sphinx["nb_ipywidgets_js"] == {}


def test_an_altered_or_missing_vendored_file_is_an_error(tmp_path):
    copy = tmp_path / "vendor"
    shutil.copytree(assets.VENDOR_DIR, copy)
    assert assets.widgets_embed_files(copy)[0] == copy / "embed.js"
    embed = copy / "embed.js"
    embed.write_bytes(embed.read_bytes() + b"\nwindow.evil = 1;")
    with pytest.raises(assets.WidgetsIntegrityError, match=r"embed\.js: sha256 .* differs from the pinned"):
        assets.widgets_embed_files(copy)
    embed.unlink()
    with pytest.raises(assets.WidgetsIntegrityError, match=r"embed\.js is missing"):
        assets.widgets_embed_files(copy)


def _fake_npm(tmp_path: Path, embed_js: bytes) -> Path:
    """An `npm` whose `pack` writes a tarball with the given dist/embed.js (no network)."""
    tgz = io.BytesIO()
    with tarfile.open(fileobj=tgz, mode="w:gz") as tar:
        for name, blob in (("package/dist/embed.js", embed_js), ("package/package.json", b"{}")):
            info = tarfile.TarInfo(name)
            info.size = len(blob)
            tar.addfile(info, io.BytesIO(blob))
    (tmp_path / "fake.tgz").write_bytes(tgz.getvalue())
    npm = tmp_path / "bin" / "npm"
    npm.parent.mkdir()
    npm.write_text(f"#!/bin/sh\n[ \"$1\" = pack ] && cp {tmp_path / 'fake.tgz'} ./jupyter-widgets-html-manager.tgz\n")
    npm.chmod(npm.stat().st_mode | stat.S_IXUSR)
    return npm


def test_refreshing_the_vendored_copy_refuses_bytes_that_fail_the_pinned_hashes(tmp_path, monkeypatch):
    npm = _fake_npm(tmp_path, b"window.evil = 1;")
    monkeypatch.setattr(assets.shutil, "which", lambda name, *a, **k: str(npm) if name == "npm" else None)
    dest = tmp_path / "dest"
    with pytest.raises(assets.WidgetsIntegrityError, match="integrity .* differs from the pinned"):
        assets.refresh_vendored(dest)
    assert not dest.exists()
    # a right tarball with the wrong embed.js inside is caught by the second hash
    monkeypatch.setattr(assets, "HTML_MANAGER_INTEGRITY", assets._integrity((tmp_path / "fake.tgz").read_bytes()))
    with pytest.raises(assets.WidgetsIntegrityError, match="sha256"):
        assets.refresh_vendored(dest)
    assert not dest.exists()
    monkeypatch.setattr(assets.shutil, "which", lambda *a, **k: None)
    with pytest.raises(OSError, match="npm was not found"):
        assets.refresh_vendored(dest)


# ----------------------------------------------------------------------------------------- in a browser
DEMO_NB = textwrap.dedent(
    '''\
    # %% [markdown]
    # # Widgets demo

    # %% tags=["parameters"]
    profile = "cpu"

    # %%
    import altair as alt
    from sinkpaper.book.widgets import slider_stack
    chart = alt.Chart(alt.Data(values=[{"x": i, "y": i * i} for i in range(5)])).mark_line().encode(x="x:Q", y="y:Q")
    slider_stack("view", ["alpha", "beta", "chart"],
                 ['<p id="child-alpha">first child</p>', '<p id="child-beta">second child</p>', chart])
    '''
)
DEMO_TOC = "format: jb-book\nroot: book/intro\nchapters:\n  - file: book/widgets_demo\n"
# ajv's strict-mode note in embed.js (the vendored bundle; no setting of ours reaches it). Jupyter Book's own noise
# is gone: sinkpaper.site.sphinx_ext and _config.yml's html_context (see tests/test_site.py).
ALLOWED_CONSOLE = ("strict mode: use allowUnionTypes",)


@pytest.fixture(scope="module")
def built_book(tmp_path_factory):
    """The repo's _config.yml (a tiny TOC of its own) over one papermill-executed notebook whose output is a
    slider_stack."""
    pytest.importorskip("papermill")
    pytest.importorskip("vl_convert")
    jb = Path(sys.executable).parent / "jupyter-book"
    if not jb.exists():
        pytest.skip("jupyter-book not installed next to this interpreter")
    assets.widgets_embed_files()  # vendored; an altered copy fails here
    from sinkpaper.site import runner

    root = tmp_path_factory.mktemp("widgetbook")
    shutil.copy(REPO / "_config.yml", root / "_config.yml")
    (root / "_toc.yml").write_text(DEMO_TOC)
    (root / "book").mkdir()
    (root / "notebooks").mkdir()
    (root / "book" / "intro.md").write_text("# A one-chapter book\n\nIts chapter holds a slider_stack.\n")
    for extra in (REPO / "book" / "_static").glob("*.css"):  # tracked static files the config names
        (root / "book" / "_static").mkdir(exist_ok=True)
        shutil.copy(extra, root / "book" / "_static" / extra.name)
    (root / "notebooks" / "widgets_demo.py").write_text(DEMO_NB)
    results = runner.run_notebooks("cpu", notebooks_dir=root / "notebooks", out_dir=root / "book", cwd=root,
                                   timeout=120, log=None)  # also writes book/_static, embed.js included
    assert [r.ok for r in results] == [True], [r.error for r in results]
    nb = json.loads((root / "book" / "widgets_demo.ipynb").read_text())
    state = nb["metadata"]["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    assert [m for m in state.values() if m["model_name"] == "LinkModel"], "papermill did not save the jslink"
    proc = subprocess.run([str(jb), "build", "--all", "."], cwd=root, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    html_dir = root / "_build" / "html"
    page = (html_dir / "book" / "widgets_demo.html").read_text()
    assert 'type="application/vnd.jupyter.widget-state+json"' in page
    assert "_static/widgets/embed.js" in page
    return html_dir


@pytest.fixture()
def browser():
    from sinkpaper.site.chromium import candidate, problem

    chromium = candidate()  # $SINKPAPER_CHROMIUM, /usr/bin/chromium, or one on PATH (never a downloaded one)
    why = problem(chromium)  # missing, Ubuntu's snap stub, or not a browser that runs
    if why:
        pytest.skip(why)
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright (Python) not installed")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, args=[
            "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            "--disable-background-networking", "--disable-component-update", "--no-first-run", "--disable-sync"])
        try:
            yield b
        finally:
            b.close()


@pytest.fixture()
def served(built_book):
    """The built site on a loopback HTTP server (file:// would hide what a reader's browser requests)."""
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=built_book))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


def test_static_book_slider_switches_children_offline(served, browser):
    base = served
    requested, blocked, problems = [], [], []
    context = browser.new_context()

    def route(r):
        url = r.request.url
        requested.append(url)
        if url.startswith((base + "/", "data:", "blob:")):
            r.continue_()
        else:
            blocked.append(url)
            r.abort()

    context.route("**/*", route)
    page = context.new_page()
    page.on("request", lambda req: requested.append(req.url))
    page.on("pageerror", lambda exc: problems.append(f"pageerror: {exc}"))
    page.on("console", lambda m: problems.append(f"console.{m.type}: {m.text}") if m.type in ("error", "warning")
            else None)
    page.goto(f"{base}/book/widgets_demo.html", wait_until="load")

    page.wait_for_selector(".widget-selection-slider, .widget-slider", timeout=20_000)  # the manager rendered it
    page.wait_for_selector("#child-alpha", state="visible", timeout=10_000)
    assert page.locator("#child-beta").count() == 0
    assert page.locator(".widget-readout").first.inner_text() == "alpha"

    handle = page.locator(".noUi-handle").first
    handle.focus()
    page.keyboard.press("ArrowRight")  # no kernel: only the jslink in the browser can switch the child
    page.wait_for_selector("#child-beta", state="visible", timeout=5_000)
    assert page.locator("#child-alpha").count() == 0
    assert page.locator(".widget-readout").first.inner_text() == "beta"

    handle.focus()
    page.keyboard.press("ArrowRight")  # the altair child draws with the offline vega bundle
    page.wait_for_selector(".vega-embed canvas, .vega-embed svg", timeout=10_000)
    assert page.locator("#child-beta").count() == 0
    context.close()

    assert not blocked, f"requests that would leave the machine: {blocked}"
    assert any(u.startswith(f"{base}/_static/widgets/embed.js") for u in requested)
    unexpected = [m for m in problems if not any(a in m for a in ALLOWED_CONSOLE)]
    assert not unexpected, unexpected
