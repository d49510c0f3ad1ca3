"""Every notebook executes end to end with papermill at the `cpu` profile and smoke sizes, and the book builds.

The execution itself happens once per session in the `built_book` fixture (tests/conftest.py, where
SMOKE_PARAMS holds the per-notebook overrides); tests/test_site.py opens the same build in Chromium.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

pytest.importorskip("papermill")
from sinkpaper.site import runner, toc  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
STEMS = sorted(p.stem for p in (REPO / "notebooks").glob("*.py"))
PROGRESS_MODELS = {"FloatProgressModel", "IntProgressModel"}
TQDM_TEXT_BAR = re.compile(r"\d+%\|[^|\n]*\|")  # e.g. " 40%|████      | 4/10 [00:01<00:02, 3.1it/s]"
WIDGET_BAR_REPR = re.compile(r"\s*(HBox\(children=\(.*Progress|FloatProgress\(|IntProgress\()", re.S)  # text/plain


def _output_texts(cell) -> list[str]:
    texts = []
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream":
            texts.append("".join(out.get("text", "")))
        elif out.get("output_type") == "error":
            texts.append("\n".join(out.get("traceback", [])) + f"\n{out.get('ename')}: {out.get('evalue')}")
        for value in out.get("data", {}).values():
            if isinstance(value, (str, list)):
                texts.append("".join(value))
    return texts


def _problems(nb: dict) -> list[str]:
    problems = []
    code_cells = [(i, c) for i, c in enumerate(nb["cells"], 1) if c["cell_type"] == "code"]
    # a chapter says where its numbers came from in one 'Sources:' line (sinkpaper.book.sources); the scorecard
    # and a stored benchmark still show a 'Provenance:' line of their own
    if not any("Sources:" in t or "Provenance" in t for _, c in code_cells for t in _output_texts(c)):
        problems.append("no output says 'Sources:' or 'Provenance' (every chapter shows where its numbers come from)")
    for number, cell in code_cells:
        texts = _output_texts(cell)
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        if errors or any("Traceback" in t for t in texts):
            problems.append(f"cell {number} shows a traceback")
        streams = ["".join(o.get("text", "")) for o in cell.get("outputs", []) if o.get("output_type") == "stream"]
        if any(TQDM_TEXT_BAR.search(t) for t in streams):
            problems.append(f"cell {number} prints a text progress bar (pass progress=False / disable tqdm)")
        if any(WIDGET_BAR_REPR.match(t) for t in texts):
            problems.append(f"cell {number} shows a widget progress bar (static pages cannot update it)")
    state = nb.get("metadata", {}).get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {})
    bars = sorted({m.get("model_name") for m in state.get("state", {}).values()} & PROGRESS_MODELS)
    if bars:
        problems.append(f"the saved widget state holds progress bars ({', '.join(bars)}), e.g. from tqdm.auto")
    return problems


@pytest.mark.parametrize("stem", STEMS)
def test_notebook_executed(stem, built_book):
    built_book.skip_unless_selected(stem)
    result = built_book.results[stem]
    assert result.ok, result.error  # "<stem> failed in cell N (code cell starting "..."): Error: message"
    nb = json.loads(built_book.notebook(stem).read_text())
    problems = _problems(nb)
    assert not problems, f"{stem}: " + "; ".join(problems)
    assert nb["metadata"]["papermill"]["parameters"]["profile"] == "cpu"


def test_every_notebook_is_a_page():
    """A notebook that _toc.yml does not list is executed but never published."""
    pages = {Path(d).name for d in toc.docnames(REPO / "_toc.yml")}
    missing = [s for s in STEMS if s not in pages]
    assert not missing, f"notebooks not listed in _toc.yml (as book/<stem>): {missing}"


def test_book_builds(built_book):
    build = built_book.build
    assert build.returncode == 0, f"jupyter-book build failed:\n{build.stdout[-3000:]}\n{build.stderr[-3000:]}"
    assert (built_book.html_dir / "index.html").is_file()
    missing = []
    for docname in toc.docnames(built_book.root / "_toc.yml"):
        why = None if built_book.page_skip_reason(docname) else built_book.page_missing_reason(docname)
        if why:
            missing.append(f"{docname} ({why})")
    assert not missing, f"pages listed in _toc.yml but not built: {missing}"


# -------------------------------------------------------------------------------------- parameters matter
def _markdown_tables(nb: dict) -> list[list[dict]]:
    tables = []
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            md = "".join(out.get("data", {}).get("text/markdown", ""))
            lines = [ln.strip() for ln in md.splitlines() if ln.strip().startswith("|")]
            if len(lines) < 3:
                continue
            header = [h.strip() for h in lines[0].strip("|").split("|")]
            rows = [dict(zip(header, (v.strip() for v in ln.strip("|").split("|")))) for ln in lines[2:]]
            tables.append(rows)
    return tables


def _sink_1_by_setting(nb: dict) -> dict[tuple, float]:
    """Sink_1 per (model, BOS, inputs) from the chapter's results table."""
    for rows in _markdown_tables(nb):
        if rows and "Sink_1 (%)" in rows[0] and {"model", "BOS", "inputs"} <= set(rows[0]):
            return {(r["model"], r["BOS"], r["inputs"]): float(r["Sink_1 (%)"]) for r in rows}
    return {}


def test_parameter_override_changes_what_a_chapter_computes(built_book, tmp_path, monkeypatch):
    stem = "02_section3_properties"
    if stem not in built_book.stems:
        pytest.skip(f"notebooks/{stem}.py is gone; point this test at another chapter with an epsilon parameter")
    built_book.skip_unless_selected(stem)
    assert built_book.results[stem].ok, built_book.results[stem].error
    base = json.loads(built_book.notebook(stem).read_text())
    base_eps = base["metadata"]["papermill"]["parameters"].get("epsilon", 0.3)
    base_sink = _sink_1_by_setting(base)
    assert base_sink, f"{stem}: no results table with a 'Sink_1 (%)' column in the executed notebook"

    monkeypatch.setenv(runner.RESULTS_ENV, str(tmp_path / "_results"))  # keep built_book's records clean
    params = {**built_book.params.get(stem, {}), "epsilon": 0.5, "model": "smollm2-135m", "bos": False}
    (r,) = runner.run_notebooks("cpu", only=[stem], params=params, timeout=1200, notebooks_dir=REPO / "notebooks",
                                out_dir=tmp_path, cwd=REPO, static_assets=False, log=None)
    assert r.ok, r.error
    nb = json.loads((tmp_path / f"{stem}.ipynb").read_text())
    assert nb["metadata"]["papermill"]["parameters"]["epsilon"] == 0.5
    # where the numbers came from is the chapter's ledger (its page shows one line of it, the appendix the rest)
    ledger = json.loads((tmp_path / "_results" / "sources" / f"{stem}.json").read_text())
    assert any("epsilon=0.5" in e["line"] for e in ledger["entries"]), \
        "the chapter's sources do not show the epsilon this run used"
    sink = _sink_1_by_setting(nb)
    common = sorted(set(sink) & set(base_sink))
    assert common, f"no setting in common: {sorted(sink)} vs {sorted(base_sink)}"
    # same inputs (same seed and sizes), higher threshold: Sink_1 can only fall, and on natural text it does
    assert all(sink[k] <= base_sink[k] + 1e-9 for k in common), {k: (base_sink[k], sink[k]) for k in common}
    assert any(sink[k] != base_sink[k] for k in common), \
        f"epsilon {base_eps} -> 0.5 changed no Sink_1 value: {({k: sink[k] for k in common})}"


# ------------------------------------------------------------------------------------------ a new machine
NEW_MACHINE_STEMS = ("01_introduction", "02_section3_properties")


@pytest.mark.slow
@pytest.mark.parametrize("stem", NEW_MACHINE_STEMS)
def test_a_chapter_on_a_new_machine_saves_no_progress_widget(stem, tmp_path, monkeypatch):
    """The chapters that load the offline models, executed with an empty cache of their own (a machine that never
    prepared them, so the kernel dequantizes the GGUF files itself): no progress widget and no text bar is saved
    into the page, as on a machine whose cache `make setup` filled. On a warm cache nothing would show it."""
    from conftest import BOOK_CELL_TIMEOUT_S, SMOKE_PARAMS

    monkeypatch.setenv("SINKPAPER_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.setenv(runner.RESULTS_ENV, str(tmp_path / "_results"))   # the book's records stay untouched
    (r,) = runner.run_notebooks("cpu", only=[stem], params=SMOKE_PARAMS.get(stem, {}), timeout=BOOK_CELL_TIMEOUT_S,
                                notebooks_dir=REPO / "notebooks", out_dir=tmp_path, cwd=REPO, static_assets=False,
                                log=None)
    assert r.ok, r.error
    assert (tmp_path / "empty-cache" / "models").is_dir(), "the chapter did not prepare a model into its own cache"
    nb = json.loads((tmp_path / f"{stem}.ipynb").read_text())
    problems = _problems(nb)
    assert not problems, f"{stem} on an empty model cache: " + "; ".join(problems)
