"""The book tooling: papermill runner (atomic outputs, failures isolated and named by chapter and cell, scorecards
last, the chapter-records directory), parameter parsing, offline assets, and real Jupyter Book builds of the
repository's _config.yml/_toc.yml/intro.md over tiny executed notebooks (one with a broken chapter)."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("papermill")
pytest.importorskip("jupytext")

from sinkpaper.site import pages, runner, toc  # noqa: E402

REPO = Path(__file__).resolve().parents[1]

OK_NB = textwrap.dedent(
    '''\
    # %% [markdown]
    # # A notebook that works

    # %% tags=["parameters"]
    profile = "cpu"  # compute profile
    n = 1  # a number

    # %%
    import os
    print(f"profile={profile} n={n!r} type={type(n).__name__} cwd=<{os.path.basename(os.getcwd())}>")
    '''
)
BAD_NB = textwrap.dedent(
    '''\
    # %% tags=["parameters"]
    profile = "cpu"

    # %%
    print("before the failure")

    # %%
    raise RuntimeError("deliberate failure")
    '''
)


@pytest.fixture(scope="module")
def static_dir(tmp_path_factory):
    pytest.importorskip("vl_convert")
    pytest.importorskip("altair")
    from sinkpaper.site.assets import write_static_assets

    d = tmp_path_factory.mktemp("static")
    written = write_static_assets(d)
    assert {p.name for p in written} >= {"vega-bundle.js", "vega-debug.js"}
    return d


def _write_toc(root: Path, chapters: list[str]) -> None:
    """A _toc.yml with a small Markdown front page and ``chapters``, plus book/_static/*.css from the repo (the
    repository's own toc lists notebooks these builds do not have)."""
    (root / "_toc.yml").write_text("format: jb-book\nroot: book/front\nchapters:\n"
                                   + "".join(f"  - file: {c}\n" for c in chapters))
    (root / "book" / "_static").mkdir(parents=True, exist_ok=True)
    (root / "book" / "front.md").write_text("# Front page\n\nA test book.\n")
    for css in (REPO / "book" / "_static").glob("*.css"):
        shutil.copy(css, root / "book" / "_static" / css.name)


def _outputs_text(path: Path) -> str:
    nb = json.loads(path.read_text())
    return "".join("".join(o.get("text", "")) for c in nb["cells"] if c["cell_type"] == "code" for o in c["outputs"])


# ------------------------------------------------------------------------------------------------ runner
def test_runner_atomic_outputs_and_failure_isolation(tmp_path, capsys):
    nbdir, out = tmp_path / "notebooks", tmp_path / "book"
    nbdir.mkdir()
    out.mkdir()
    (nbdir / "a_ok.py").write_text(OK_NB)
    (nbdir / "b_bad.py").write_text(BAD_NB)
    (out / "a_ok.ipynb").write_text("stale output")
    previous_bad = '{"previous": "good output of b_bad"}'
    (out / "b_bad.ipynb").write_text(previous_bad)

    rc = runner.main(["run", "--profile", "gpu", "-p", "n", "7", "--timeout", "60",
                      "--notebooks-dir", str(nbdir), "--out-dir", str(out)])
    assert rc == 1
    summary = capsys.readouterr().out
    assert re.search(r"^a_ok\s+ok\s+\d+\.\d$", summary, re.M), summary
    assert re.search(r"^b_bad\s+FAILED\s+\d+\.\d$", summary, re.M), summary
    assert "1 ok, 1 failed" in summary
    # the failure names the chapter, the cell (numbered over notebooks/b_bad.py) and the error
    message = ('b_bad failed in cell 3 (code cell starting "raise RuntimeError("deliberate failure")"): '
               "RuntimeError: deliberate failure")
    assert message in summary, summary

    # the good one replaced its stale output, executed with the parameters, in the repo root (= tmp_path)
    text = _outputs_text(out / "a_ok.ipynb")
    assert f"profile=gpu n=7 type=int cwd=<{tmp_path.name}>" in text  # (a page prints no absolute path)
    meta = json.loads((out / "a_ok.ipynb").read_text())["metadata"]
    assert meta["kernelspec"]["name"] == "python3"
    assert meta["papermill"]["input_path"] == "notebooks/a_ok.py"
    assert meta["papermill"]["parameters"] == {"profile": "gpu", "n": 7}

    # the bad one: previous output untouched, partial execution kept in _failed/
    assert (out / "b_bad.ipynb").read_text() == previous_bad
    failed = out / "_failed" / "b_bad.ipynb"
    assert "before the failure" in _outputs_text(failed)
    assert "deliberate failure" in failed.read_text()

    # nothing half-written left behind; offline assets written for the build
    assert not [p.name for p in out.iterdir() if p.name.startswith(".")]
    assert sorted(p.name for p in out.glob("*.ipynb")) == ["a_ok.ipynb", "b_bad.ipynb"]
    assert (out / "_static" / "vega-bundle.js").is_file()


def test_failure_messages_name_chapter_cell_timeout_and_kernel_death(tmp_path):
    nbdir, out = tmp_path / "notebooks", tmp_path / "book"
    nbdir.mkdir()
    (nbdir / "05_data.py").write_text(textwrap.dedent(
        '''\
        # %% [markdown]
        # # Data

        # %% tags=["parameters"]
        profile = "cpu"

        # %%
        x = 1

        # %%
        summary = {"n": x}
        raise ValueError("no such source: 'nope'\\nvalid: a, b")
        '''))
    (nbdir / "06_slow.py").write_text(textwrap.dedent(
        '''\
        # %% tags=["parameters"]
        profile = "cpu"

        # %%
        print("partial output survives")

        # %%
        import time
        time.sleep(60)
        '''))
    (nbdir / "07_dies.py").write_text(textwrap.dedent(
        '''\
        # %% tags=["parameters"]
        profile = "cpu"

        # %%
        import os, signal
        os.kill(os.getpid(), signal.SIGKILL)
        '''))
    results = runner.run_notebooks("cpu", timeout=3, notebooks_dir=nbdir, out_dir=out, static_assets=False, log=None)
    errors = {r.stem: r.error for r in results}
    assert [r.ok for r in results] == [False, False, False]
    assert errors["05_data"] == ('05_data failed in cell 4 (code cell starting "summary = {"n": x} ..."): '
                                 "ValueError: no such source: 'nope' ...")
    assert errors["06_slow"] == ('06_slow failed in cell 3 (code cell starting "import time ..."): '
                                 "timed out after 3 s (the per-cell --timeout)")
    assert errors["07_dies"].startswith('07_dies failed in cell 2 (code cell starting "import os, signal ..."): '
                                        "the kernel died")
    # the partial outputs of a timed-out notebook are kept, with the message on top
    failed = json.loads((out / "_failed" / "06_slow.ipynb").read_text())
    assert errors["06_slow"] in "".join(failed["cells"][0]["source"])
    assert "partial output survives" in _outputs_text(out / "_failed" / "06_slow.ipynb")
    summary = runner.format_summary(results)
    assert all(e in summary for e in errors.values()) and "0 ok, 3 failed" in summary


def test_describe_failure_before_any_cell():
    assert runner.describe_failure("03_x", RuntimeError("Kernel didn't respond in 60 seconds")) == \
        "03_x failed before running any cell: RuntimeError: Kernel didn't respond in 60 seconds"


def test_scorecards_run_last_and_kernels_get_the_records_dir(tmp_path, monkeypatch):
    nbdir, out = tmp_path / "notebooks", tmp_path / "book"
    nbdir.mkdir()
    record = textwrap.dedent(
        '''\
        # %% tags=["parameters"]
        profile = "cpu"

        # %%
        import json, os, pathlib, time
        d = pathlib.Path(os.environ["SINKPAPER_BOOK_RESULTS"])
        seen = sorted(p.stem for p in d.glob("*.json"))
        (d / "STEM.json").write_text(json.dumps({"seen": seen, "t": time.time()}))
        ''')
    for stem in ("99_z", "00_scorecard", "03_a", "01_Scorecard_b"):
        (nbdir / f"{stem}.py").write_text(record.replace("STEM", stem))
    assert [p.stem for p in runner.execution_order(sorted(nbdir.glob("*.py")))] == \
        ["03_a", "99_z", "00_scorecard", "01_Scorecard_b"]
    # the sources appendix reads every chapter's ledger: it runs last too, in name order with the scorecards
    assert [p.stem for p in runner.execution_order(sorted([Path("16_sources.py"), Path("04_b.py"),
                                                           Path("00_scorecard.py")]))] == ["04_b", "00_scorecard",
                                                                                           "16_sources"]
    monkeypatch.delenv(runner.RESULTS_ENV, raising=False)
    results = runner.run_notebooks("cpu", notebooks_dir=nbdir, out_dir=out, static_assets=False, log=None)
    assert [(r.stem, r.ok) for r in results] == [("03_a", True), ("99_z", True), ("00_scorecard", True),
                                                 ("01_Scorecard_b", True)], [r.error for r in results]
    records = {p.stem: json.loads(p.read_text()) for p in (out / "_results").glob("*.json")}
    assert records["00_scorecard"]["seen"] == ["03_a", "99_z"]  # default: <out_dir>/_results, after the chapters
    assert records["01_Scorecard_b"]["seen"] == ["00_scorecard", "03_a", "99_z"]
    assert runner.RESULTS_ENV not in os.environ  # restored afterwards

    # a directory the caller set is kept; --only keeps the scorecard last too
    preset = tmp_path / "elsewhere"
    monkeypatch.setenv(runner.RESULTS_ENV, str(preset))
    results = runner.run_notebooks("cpu", only=["00_scorecard", "99_z"], notebooks_dir=nbdir, out_dir=out,
                                   static_assets=False, log=None)
    assert [r.stem for r in results] == ["99_z", "00_scorecard"]
    assert json.loads((preset / "00_scorecard.json").read_text())["seen"] == ["99_z"]
    assert os.environ[runner.RESULTS_ENV] == str(preset)


def test_jobs_run_chapters_pinned_side_by_side_and_scorecards_last(tmp_path, monkeypatch):
    """--jobs 2: the chapters run on two threads whose kernels see disjoint CPU shares, each with its own
    parameters; the scorecard runs after them with every CPU; the caller's own affinity is left alone."""
    nbdir, out = tmp_path / "notebooks", tmp_path / "book"
    nbdir.mkdir()
    record = textwrap.dedent(
        '''\
        # %% tags=["parameters"]
        profile = "cpu"
        n = 1

        # %%
        import json, os, pathlib
        d = pathlib.Path(os.environ["SINKPAPER_BOOK_RESULTS"])
        seen = sorted(p.stem for p in d.glob("*.json"))
        cpus = sorted(os.sched_getaffinity(0))
        (d / "STEM.json").write_text(json.dumps({"seen": seen, "cpus": cpus, "n": n, "cwd": os.getcwd()}))
        ''')
    for stem in ("a", "b", "c", "00_scorecard"):
        (nbdir / f"{stem}.py").write_text(record.replace("STEM", stem))
    monkeypatch.delenv(runner.RESULTS_ENV, raising=False)
    mine, here = sorted(os.sched_getaffinity(0)), os.getcwd()
    results = runner.run_notebooks("cpu", notebooks_dir=nbdir, out_dir=out, static_assets=False, log=None, jobs=2,
                                   stem_params={"b": {"n": 5}})
    assert [(r.stem, r.ok) for r in results] == [("a", True), ("b", True), ("c", True), ("00_scorecard", True)], \
        [r.error for r in results]
    records = {p.stem: json.loads(p.read_text()) for p in (out / "_results").glob("*.json")}
    assert [records[s]["n"] for s in ("a", "b", "c")] == [1, 5, 1]
    assert records["00_scorecard"]["seen"] == ["a", "b", "c"] and records["00_scorecard"]["cpus"] == mine
    shares = {tuple(records[s]["cpus"]) for s in ("a", "b", "c")}
    assert shares <= {tuple(share) for share in runner.cpu_shares(2)}, shares
    if len(mine) >= 2:  # a and b start at once on the two threads: two disjoint shares, all CPUs between them
        assert len(shares) == 2 and sorted(c for share in shares for c in share) == mine, shares
    assert sorted(os.sched_getaffinity(0)) == mine
    # every kernel starts in the chapters' directory, and this process stays where it was: two threads that each
    # chdir'ed there and back would leave it in the other's directory
    assert {records[s]["cwd"] for s in records} == {str(tmp_path.resolve())}
    assert os.getcwd() == here

    # mistakes are said before anything runs
    for r in out.glob("*.ipynb"):
        r.unlink()
    with pytest.raises(ValueError, match="jobs must be a whole number >= 1"):
        runner.run_notebooks("cpu", notebooks_dir=nbdir, out_dir=out, static_assets=False, log=None, jobs=0)
    with pytest.raises(pages.UnknownParameterError, match="unknown notebook parameter.*nn.*b takes: n, profile"):
        runner.run_notebooks("cpu", notebooks_dir=nbdir, out_dir=out, static_assets=False, log=None, jobs=2,
                             stem_params={"b": {"nn": 5}})
    assert not list(out.glob("*.ipynb"))


def test_cpu_shares_deal_every_cpu_once():
    mine = sorted(os.sched_getaffinity(0))
    for jobs in (1, 2, 3, 64):
        shares = runner.cpu_shares(jobs)
        assert len(shares) == min(jobs, len(mine)) and all(shares)
        assert sorted(c for share in shares for c in share) == mine


def test_toc_docnames(tmp_path):
    path = tmp_path / "_toc.yml"
    path.write_text("format: jb-book\nroot: book/intro\nparts:\n  - caption: A\n    chapters:\n"
                   "      - file: book/02_x.ipynb\n        sections:\n          - file: book/02b\n"
                   "      - url: https://example.org\n  - caption: B\n    chapters:\n      - file: book/99_scorecard\n")
    assert toc.docnames(path) == ["book/intro", "book/02_x", "book/02b", "book/99_scorecard"]
    import yaml

    repo_pages = toc.docnames(REPO / "_toc.yml")
    assert repo_pages[0] == yaml.safe_load((REPO / "_toc.yml").read_text())["root"] and len(repo_pages) > 1


def test_run_notebooks_only_selects_in_name_order(tmp_path):
    nbdir = tmp_path / "notebooks"
    nbdir.mkdir()
    for stem in ("z_last", "a_first", "m_mid"):
        (nbdir / f"{stem}.py").write_text(OK_NB)
    assert list(runner.discover(nbdir)) == ["a_first", "m_mid", "z_last"]
    picked = runner.select(runner.discover(nbdir), ["z_last", "a_first"])
    assert [p.stem for p in picked] == ["a_first", "z_last"]


def test_unknown_only_stem_exits_2_listing_valid(tmp_path, capsys):
    nbdir = tmp_path / "notebooks"
    nbdir.mkdir()
    (nbdir / "03_x.py").write_text(OK_NB)
    (nbdir / "04_y.py").write_text(OK_NB)
    rc = runner.main(["run", "--only", "03_x", "nope", "--notebooks-dir", str(nbdir),
                      "--out-dir", str(tmp_path / "book")])
    assert rc == 2
    err = capsys.readouterr().err
    assert "nope" in err and "03_x, 04_y" in err
    assert not (tmp_path / "book").exists()  # nothing ran, nothing written
    with pytest.raises(runner.UnknownNotebookError) as exc:
        runner.run_notebooks("cpu", only=["nope"], notebooks_dir=nbdir, out_dir=tmp_path / "book")
    assert exc.value.valid == ["03_x", "04_y"]


def test_param_parsing():
    p = pages.parse_params([("model", "gpt2"), ("n", "8"), ("lr", "1e-3"), ("x", "0.5"), ("flag", "true"),
                             ("layers", "[0, 2]"), ("cfg", "{a: 1}"), ("none", "null"), ("name", "'8'"),
                             ("empty", "")])
    assert p == {"model": "gpt2", "n": 8, "lr": 1e-3, "x": 0.5, "flag": True, "layers": [0, 2],
                 "cfg": {"a": 1}, "none": None, "name": "8", "empty": ""}
    assert pages.parse_param_value("nan") == "nan"  # only YAML's own .nan is a float
    with pytest.raises(ValueError):
        pages.parse_params([("not-an-identifier", "1")])
    args = runner.build_parser().parse_args(["run", "-p", "a", "1", "-p", "b", "x y"])
    assert pages.parse_params(args.param) == {"a": 1, "b": "x y"}
    assert args.profile == "cpu" and args.only is None and args.timeout is None
    with pytest.raises(SystemExit):
        runner.build_parser().parse_args(["run", "--profile", "tpu"])


def test_ensure_kernel_runs_this_interpreter():
    from jupyter_client.kernelspec import KernelSpecManager

    name = runner.ensure_kernel()
    assert runner._argv_runs_this_interpreter(KernelSpecManager().get_kernel_spec(name).argv)
    assert runner._argv_runs_this_interpreter(["python", "-m", "ipykernel_launcher"])
    assert not runner._argv_runs_this_interpreter(["/opt/elsewhere/bin/python3", "-m", "ipykernel_launcher"])


# ------------------------------------------------------------------------------------------------ assets
def test_static_assets_wrap_bundle_and_define_vega_debug(static_dir):
    import altair as alt

    bundle = (static_dir / "vega-bundle.js").read_text()
    assert bundle.startswith("(function(){") and bundle.rstrip().endswith("})();")
    for name in ("vegaEmbed", "vega", "vegaLite"):  # the globals altair's HTML output calls
        assert f"window.{name}=" in bundle.replace(" ", "")
    debug = (static_dir / "vega-debug.js").read_text()
    m = re.search(r"^var VEGA_DEBUG = (\{.*\});$", debug, re.M)
    assert m, debug
    assert json.loads(m.group(1)) == {"vega_version": alt.VEGA_VERSION, "vegalite_version": alt.VEGALITE_VERSION,
                                      "vegaembed_version": alt.VEGAEMBED_VERSION}
    # altair's template looks up exactly these keys
    html = alt.Chart(alt.Data(values=[{"a": 1}])).mark_point().encode(x="a:Q")._repr_mimebundle_()["text/html"]
    assert 'lib.replace("-", "")}_version' in html and "VEGA_DEBUG[key] == version" in html


NODE_CHECK = r"""
const fs = require('fs'), vm = require('vm');
const ctx = {console, setTimeout, clearTimeout, setInterval, clearInterval, queueMicrotask, URL, TextEncoder,
             TextDecoder, structuredClone, performance, navigator: {userAgent: 'node'}};
ctx.window = ctx; ctx.self = ctx; ctx.globalThis = ctx;
vm.createContext(ctx);
vm.runInContext("const _ = function () {};", ctx);  // like Sphinx's doctools.js: must not collide
vm.runInContext(fs.readFileSync(process.argv[2], 'utf8'), ctx);
vm.runInContext(fs.readFileSync(process.argv[3], 'utf8'), ctx);
const spec = {data: {values: [{x: 1, y: 2}, {x: 2, y: 3}]}, mark: 'line',
              encoding: {x: {field: 'x', type: 'quantitative'}, y: {field: 'y', type: 'quantitative'}}};
const view = new ctx.vega.View(ctx.vega.parse(ctx.vegaLite.compile(spec).spec), {renderer: 'none'});
view.toSVG().then(svg => console.log(JSON.stringify({
  vegaEmbed: typeof ctx.vegaEmbed, vega: ctx.vega.version, vegaLite: ctx.vegaLite.version,
  debug: ctx.VEGA_DEBUG, svg: svg.startsWith('<svg')})));
"""


def test_bundle_defines_globals_at_runtime(static_dir, tmp_path):
    """Run the bundle in Node's vm with a window-like global: vegaEmbed/vega/vegaLite exist and render."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node not installed")
    import altair as alt
    import vl_convert

    script = tmp_path / "check.js"
    script.write_text(NODE_CHECK)
    proc = subprocess.run([node, str(script), str(static_dir / "vega-bundle.js"), str(static_dir / "vega-debug.js")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["vegaEmbed"] == "function" and got["svg"] is True
    assert got["vega"] == vl_convert.get_vega_version()
    assert got["vegaLite"].split(".")[:2] == alt.VEGALITE_VERSION.split(".")[:2]
    assert got["debug"]["vegalite_version"] == alt.VEGALITE_VERSION


def test_figures_helpers():
    np = pytest.importorskip("numpy")
    pytest.importorskip("altair")
    from sinkpaper.book import figures

    m = np.arange(6.0).reshape(2, 3)
    spec = figures.heatmap(m, "head", "layer", "t", domain=(0, 1)).to_dict()
    assert len(spec["data"]["values"]) == 6 and spec["width"] == 300
    qk = np.full((4, 4), np.nan)
    qk[np.tril_indices(4)] = 1.0
    spec = figures.qk_heatmaps(qk, qk, qk, "qk").to_dict()
    assert len(spec["hconcat"]) == 3 and all(len(p["data"]["values"]) == 10 for p in spec["hconcat"])
    spec = figures.lines_by_layer({"a": [0.0, 1.0, 10.0]}, "norm", "t", log_y=True).to_dict()
    assert [v["value"] for v in spec["data"]["values"]] == [1.0, 10.0]
    line = figures.provenance_line({"profile": "cpu", "device": "cpu", "code_version": "abc", "computed_now": False,
                                    "loaded_from": "runs/r.json", "n_samples": 4, "n_tokens": 64})
    assert "profile `cpu`" in line and "loaded" in line and "runs/r.json" in line and "4 samples" in line
    t = figures.paper_vs_ours([{"setting": "s", "paper": 1.0, "ours": 0.75}, {"setting": "u", "paper": "-", "ours": 2}])
    assert t.rows[0]["difference"] == -0.25 and t.rows[1]["difference"] is None
    assert "<table" in t._repr_html_() and t.to_markdown().splitlines()[0] == "| setting | paper | ours | difference | note |"


# ------------------------------------------------------------------------------------------------- build
def test_jupyter_book_build_offline_charts(tmp_path, static_dir):
    jb = Path(sys.executable).parent / "jupyter-book"
    if not jb.exists():
        pytest.skip("jupyter-book not installed next to this interpreter")
    import altair as alt
    import nbformat

    shutil.copy(REPO / "_config.yml", tmp_path / "_config.yml")
    _write_toc(tmp_path, ["book/02_section3_properties"])
    shutil.copytree(static_dir, tmp_path / "book" / "_static", dirs_exist_ok=True)

    chart = alt.Chart(alt.Data(values=[{"x": i, "y": i * i} for i in range(5)])).mark_line().encode(x="x:Q", y="y:Q")
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_markdown_cell("# Section 3 placeholder"), nbformat.v4.new_code_cell("chart")]
    nb.cells[1].outputs = [nbformat.v4.new_output("display_data", data=chart._repr_mimebundle_())]
    nb.cells[1].execution_count = 1
    nbformat.write(nb, tmp_path / "book" / "02_section3_properties.ipynb")

    proc = subprocess.run([str(jb), "build", "--all", "."], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    html_dir = tmp_path / "_build" / "html"
    assert (html_dir / "index.html").is_file()
    page = (html_dir / "book" / "02_section3_properties.html").read_text()
    scripts = re.findall(r"<script[^>]*\bsrc=\"([^\"]+)\"", page)
    assert any("vega-bundle.js" in s for s in scripts) and any("vega-debug.js" in s for s in scripts)
    assert not [s for s in scripts if "cdn.jsdelivr" in s or s.startswith(("http:", "https:", "//"))], scripts
    assert "vegaEmbed" in page  # the chart's output made it into the page
    assert (html_dir / "_static" / "vega-bundle.js").is_file()
    # no launch button opens the executed notebook (a build output git ignores); the runner's own Colab link
    # under each title opens notebooks/ipynb/<stem>.ipynb (tests/test_presentation.py)
    assert not re.search(r"colab\.research\.google\.com/github/sinkpaper/sinkpaper/blob/main/(\./)?"
                         r"book/02_section3_properties\.ipynb", page)


def test_broken_chapter_keeps_the_book_building(tmp_path, capsys):
    """`python -m sinkpaper.site build` (what `make book` runs) over a toc with a good and a broken chapter: the
    site is built with the good page, and the command exits 1 naming the broken chapter and cell. The good
    chapter's executed page pins its Colab cell to the commit that ran it."""
    jb = Path(sys.executable).parent / "jupyter-book"
    if not jb.exists():
        pytest.skip("jupyter-book not installed next to this interpreter")
    pytest.importorskip("vl_convert")
    from sinkpaper.book import colab

    shutil.copy(REPO / "_config.yml", tmp_path / "_config.yml")
    _write_toc(tmp_path, ["book/03_good", "book/04_broken"])
    nbdir = tmp_path / "notebooks"
    nbdir.mkdir()
    colab_cell = "# %%\n" + colab.bootstrap_cell() + "\n"
    (nbdir / "03_good.py").write_text(OK_NB.replace('# %% tags=["parameters"]', colab_cell + '# %% tags=["parameters"]'))
    (nbdir / "04_broken.py").write_text(BAD_NB)

    rc = runner.main(["build", "--notebooks-dir", str(nbdir), "--out-dir", str(tmp_path / "book"),
                      "--root", str(tmp_path)])
    out = capsys.readouterr()
    assert rc == 1
    assert '04_broken failed in cell 3 (code cell starting "raise RuntimeError(' in out.out, out.out
    assert "RuntimeError: deliberate failure" in out.out
    assert "04_broken failed in cell 3" in out.err  # the progress log says it too
    assert "built without the new output of the failed chapter(s): 04_broken" in out.err
    html = tmp_path / "_build" / "html"
    assert f"Book: {html / 'index.html'}" in out.out
    assert "profile=cpu n=1" in (html / "book" / "03_good.html").read_text()
    assert (html / "book" / "front.html").is_file() and (html / "index.html").is_file()
    assert not (html / "book" / "04_broken.html").exists()  # never succeeded, so no page (a warning, not an error)
    executed = (tmp_path / "book" / "03_good.ipynb").read_text()
    ref = colab.pinned_ref()
    if ref is not None:  # run from a checkout: the page installs exactly that commit
        assert json.dumps(colab.pip_spec(ref))[1:-1] in executed and "@main" not in executed


def test_a_partial_build_without_the_first_page_stops_before_any_chapter_runs(tmp_path, capsys):
    """`build --only` on a checkout where the book's first page was never executed: jupyter-book would stop on it
    after the chapters ran, so the runner says so first; other unexecuted pages are named and left out."""
    if not (Path(sys.executable).parent / "jupyter-book").exists():
        pytest.skip("jupyter-book not installed next to this interpreter")
    _write_toc(tmp_path, ["book/03_good", "book/04_other"])
    (tmp_path / "book" / "front.md").unlink()    # the first page, never executed here
    nbdir = tmp_path / "notebooks"
    nbdir.mkdir()
    for stem in ("03_good", "04_other"):
        (nbdir / f"{stem}.py").write_text(OK_NB)
    args = ["build", "--notebooks-dir", str(nbdir), "--out-dir", str(tmp_path / "book"), "--root", str(tmp_path)]
    first = toc.docnames(tmp_path / "_toc.yml")[0]
    assert toc.unbuilt(tmp_path, ["03_good"]) == [first, "book/04_other"]
    assert runner.main([*args, "--only", "03_good"]) == 2
    err = capsys.readouterr().err
    assert f"the book's first page, {Path(first).name}, was never executed here" in err
    assert not list((tmp_path / "book").glob("*.ipynb"))     # nothing ran
    (tmp_path / f"{first}.md").write_text("# Front\n")
    assert toc.unbuilt(tmp_path, ["03_good"]) == ["book/04_other"]


def test_build_without_any_successful_chapter_builds_nothing(tmp_path, capsys):
    nbdir = tmp_path / "notebooks"
    nbdir.mkdir()
    (nbdir / "04_broken.py").write_text(BAD_NB)
    rc = runner.main(["build", "--notebooks-dir", str(nbdir), "--out-dir", str(tmp_path / "book"),
                      "--root", str(tmp_path)])
    out = capsys.readouterr()
    assert rc == 1 and "site not built: every chapter failed (04_broken)" in out.err
    assert not (tmp_path / "_build").exists()


def test_formulas_render_as_mathml_and_bad_tex_is_named():
    """The book's formulas become MathML at build time (no MathJax from a CDN); TeX it cannot render is an error
    that quotes the formula, never TeX shown as if it were math."""
    from sinkpaper.site.sphinx_ext import mathml

    block = mathml(r"\alpha_k = \frac{1}{T - k + 1} \sum_{t=k}^{T} A_{t,k}", display=True)
    assert block.startswith("<math") and 'display="block"' in block
    assert "<mfrac>" in block and "<munderover>" in block and "&#x003B1;" in block   # the fraction, the sum, alpha
    assert 'display="inline"' in mathml(r"\mathrm{Sink}_1^{\epsilon}", display=False)
    for bad, said in ((r"\frac{1}{", "frac"), (r"x^", "x^"), (r"\sinkrate{x}", r"\sinkrate")):
        with pytest.raises(ValueError, match="cannot render the formula") as err:
            mathml(bad, display=False)
        assert said in str(err.value)


def test_a_small_build_links_each_glossary_term_once_per_page_and_draws_math_as_mathml(tmp_path):
    """The book's Sphinx extension in a real (tiny) Sphinx build: the first use of a glossary term in running text
    links to its definition, later uses, titles, code and formulas stay as they are; $...$ becomes MathML and the
    page asks for no MathJax."""
    src = tmp_path / "src"
    (src / "book").mkdir(parents=True)
    (src / "conf.py").write_text("extensions = ['myst_parser', 'sinkpaper.site.sphinx_ext']\n"
                                 "myst_enable_extensions = ['dollarmath']\nhtml_math_renderer = 'mathml'\n"
                                 "exclude_patterns = ['_build']\n")
    (src / "index.md").write_text("# Home\n\n```{toctree}\nbook/chapter\nbook/glossary\n```\n")
    (src / "book" / "glossary.md").write_text(
        "# Glossary\n\n(glossary-sink)=\n**Sink_k.** the rate; Sink_1 here is not linked.\n\n"
        "(glossary-plateau)=\n**Plateau.** the last part.\n\n(glossary-alpha)=\n**alpha_k.** importance.\n")
    (src / "book" / "chapter.md").write_text(
        "# Sink_1 in a title\n\nThe `Sink_1` code span, then Sink_1 in text and Sink_1 again, read on its plateau.\n\n"
        "A formula: $\\alpha_1 > \\epsilon$ and alpha_1 after it.\n")
    out = tmp_path / "html"
    build = subprocess.run([sys.executable, "-m", "sphinx", "-b", "html", "-q", str(src), str(out)],
                           capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stderr
    page = (out / "book" / "chapter.html").read_text()
    links = re.findall(r'<a class="reference internal" href="([^"]+)"><span class="std std-ref">([^<]+)</span>', page)
    # each term once: the first Sink_1 in running text (not the title's, not the code span's), plateau, alpha_1
    assert links == [("glossary.html#glossary-sink", "Sink_1"), ("glossary.html#glossary-plateau", "plateau"),
                     ("glossary.html#glossary-alpha", "alpha_1")], links
    assert "<math" in page and "mathjax" not in page.lower().replace("mathjax_ignore", "")
    assert "std-ref" not in (out / "book" / "glossary.html").read_text()   # the glossary does not link to itself


def test_a_markdown_page_draws_a_stored_measurement_and_an_unknown_chart_is_an_error_naming_the_valid_ones(tmp_path):
    """The ``sinkpaper-chart`` directive in a real (tiny) Sphinx build: a stored measurement under the source's
    results/ becomes a vega-lite chart of its rows with the caption under it; a missing file says "not measured";
    an unknown name is a build error that lists the valid ones."""
    from sinkpaper.book import figures, measured_charts
    from sinkpaper.results import measured

    src = tmp_path / "src"
    bench = src / measured.THREAD_SCALING
    bench.parent.mkdir(parents=True)
    runs = {"alone": (100.0, 1), "pairA": (90.0, 1), "pairB": (80.0, 1), "two": (150.0, 2)}
    bench.write_text(json.dumps({"runs": {k: {"tokens_per_s": t, "threads": n} for k, (t, n) in runs.items()}}))
    (src / "conf.py").write_text("extensions = ['myst_parser', 'sinkpaper.site.sphinx_ext']\n"
                                 "exclude_patterns = ['_build']\n")
    (src / "index.md").write_text("# Home\n\n```{sinkpaper-chart} thread-scaling\nTokens per second of each run.\n```\n"
                                  "\n```{sinkpaper-chart} kernels-bench-gpu\n```\n")
    out = tmp_path / "html"

    def build():
        return subprocess.run([sys.executable, "-m", "sphinx", "-b", "html", "-q", "-E", str(src), str(out)],
                              capture_output=True, text=True, timeout=300)

    done = build()
    assert done.returncode == 0, done.stderr
    page = (out / "index.html").read_text()
    [spec] = figures.embedded_specs(page)
    assert sorted(r["tokens_per_s"] for r in figures.chart_values(spec)) == [80.0, 90.0, 100.0, 150.0]
    assert "Tokens per second of each run." in page
    assert "kernels-bench-gpu: not measured yet" in page   # no stored file: said, nothing drawn
    (src / "index.md").write_text("# Home\n\n```{sinkpaper-chart} no-such-chart\n```\n")
    failed = build()
    assert "unknown chart 'no-such-chart'; valid: " + ", ".join(measured_charts.CHARTS) in failed.stderr
    with pytest.raises(ValueError, match="valid: long-context-bench"):
        measured_charts.chart("no-such-chart", src)


def test_the_training_chart_draws_each_cpus_benchmark_named_by_its_machine(tmp_path):
    """Which dtype is fast depends on the CPU, so a shape's chart draws every stored CPU's benchmark, each bar named
    by its machine; with one benchmark stored the bars carry no machine; with none there is no chart."""
    from sinkpaper.book import figures, measured_charts
    from sinkpaper.results import measured

    assert measured_charts.chart("training-bench", tmp_path) is None

    def bench(path, cpu, tokens):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(json.dumps({"provenance": {"cpu_model": cpu}, "rows": [
            {"model": "ours", "dtype": "bf16", "compiled": True, "tokens_per_s": tokens, "mfu": 0.5},
            {"model": "transformers", "dtype": "bf16", "compiled": True, "tokens_per_s": tokens / 2, "mfu": 0.2}]}))
    bench(measured.TRAINING_BENCH, "Intel(R) Xeon(R) Processor (avx512_bf16)", 6000.0)
    one = figures.chart_values(measured_charts.chart("training-bench", tmp_path).to_dict())
    assert [r["setting"] for r in one] == ["ours, bf16, compiled", "transformers, bf16, compiled"]
    bench(measured.TRAINING_BENCH_EPYC, "AMD EPYC (avx512_bf16)", 21000.0)
    both = figures.chart_values(measured_charts.chart("training-bench", tmp_path).to_dict())
    assert [(r["setting"], r["tokens_per_s"]) for r in both] == [
        ("Intel Xeon: ours, bf16, compiled", 6000.0), ("Intel Xeon: transformers, bf16, compiled", 3000.0),
        ("AMD EPYC: ours, bf16, compiled", 21000.0), ("AMD EPYC: transformers, bf16, compiled", 10500.0)]
