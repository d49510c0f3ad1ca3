"""Shared fixtures: the two offline pretrained models, loaded once per test session (CPU, fp32), and the book
executed and built once per session (`built_book`)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest


def _pin_xdist_worker() -> None:
    """Under pytest-xdist (`make test`) each worker runs on its own share of the CPUs, set before torch starts its
    thread pool: two workers each running torch on every core oversubscribe the machine, and the threads' waits
    on each other then make a step many times slower (two 400-step miniature runs side by side on this 2-core
    machine: 441 s each with two threads, 31 s with one). Subprocesses (the chapters' kernels, CLI runs) inherit
    the share; a run asking for more threads is capped at it (sinkpaper.train.accel.set_threads)."""
    worker, count = os.environ.get("PYTEST_XDIST_WORKER"), int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if not worker or count < 2 or not hasattr(os, "sched_setaffinity"):
        return
    cpus = sorted(os.sched_getaffinity(0))
    i = int(worker.removeprefix("gw"))
    os.sched_setaffinity(0, cpus[i::count] if count <= len(cpus) else [cpus[i % len(cpus)]])


_pin_xdist_worker()
import torch  # noqa: E402  (after the worker's CPUs are set: torch sizes its thread pool from them)

_ENV_BEFORE = dict(os.environ)
# Without a GPU the Triton kernels run under the interpreter; it must be on before triton is imported.
if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")


@pytest.fixture(scope="session")
def smollm2():
    from sinkpaper.lms import load_lm
    return load_lm("smollm2-135m")


@pytest.fixture(scope="session")
def gemma3():
    from sinkpaper.lms import load_lm
    return load_lm("gemma3-270m")


_CWD_AT_SETUP: dict[str, str] = {}


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    _CWD_AT_SETUP[item.nodeid] = os.getcwd()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """A test that leaves the process in another working directory (after its fixtures' teardown, so
    monkeypatch.chdir is fine) errors at its own teardown, and is undone: the registry, the store and the configs
    are read relative to the repository, so a leak would otherwise fail tests files later."""
    yield
    before, after = _CWD_AT_SETUP.pop(item.nodeid, None), os.getcwd()
    if before is not None and after != before:
        os.chdir(before)
        pytest.fail(f"{item.nodeid} left the working directory at {after} (was {before})", pytrace=False)


# Under pytest-xdist (`make test`: one worker per core, --dist loadgroup) the tests that share an expensive
# session fixture run in one worker, so it is built once: every test of the executed book (it runs the chapters
# two at a time itself), and every test of the two offline pretrained models. Their groups go first: the book is
# the suite's longest part, and the other worker takes the rest beside it.
XDIST_GROUPS = (("built_book", "book"), ("smollm2", "pretrained"), ("gemma3", "pretrained"))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """`gpu` tests need CUDA; `slow` ones are skipped only when SINKPAPER_SKIP_SLOW=1. Every skip says why in
    pytest's summary (addopts -ra). The xdist groups above are marked, and put first. tryfirst: an xdist worker
    reads the group marks in its own collection hook, so they are set before it runs (a group not seen there
    means every worker builds the book itself; tests/test_suite_groups.py checks it)."""
    no_cuda = pytest.mark.skip(reason="needs a CUDA GPU (none on this machine); runs on the GPU profile")
    no_slow = pytest.mark.skip(reason="slow test skipped because SINKPAPER_SKIP_SLOW=1")
    order = {}
    for item in items:
        if "gpu" in item.keywords and not torch.cuda.is_available():
            item.add_marker(no_cuda)
        if "slow" in item.keywords and os.environ.get("SINKPAPER_SKIP_SLOW") == "1":
            item.add_marker(no_slow)
        group = next((g for fixture, g in XDIST_GROUPS if fixture in getattr(item, "fixturenames", ())), None)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
        order[item.nodeid] = [g for _, g in XDIST_GROUPS].index(group) if group else len(XDIST_GROUPS)
    items.sort(key=lambda item: order[item.nodeid])     # stable: the collection order within each group


def pytest_collection_finish(session):
    """The public-registry resolution check mostly waits on the network: start it now, beside the CPU-bound
    tests, when it is selected and not skipped (tests/test_install.py waits for it)."""
    for item in session.items:
        if item.name == "test_the_pins_resolve_on_the_public_registry_alone" and not item.get_closest_marker("skip"):
            item.module.start_pin_resolution()


# ------------------------------------------------------------------------------------ the executed book
# `built_book` executes EVERY notebooks/*.py once per session (the runner, profile cpu, with the smoke
# overrides below) into a temporary copy of the book layout, then runs `jupyter-book build` on that copy.
# tests/test_notebooks.py checks the executed notebooks, tests/test_site.py opens the built pages in Chromium.
#
# * SMOKE_PARAMS: per-notebook parameter overrides that keep the run small (a few samples instead of 100).
# * SINKPAPER_TEST_NOTEBOOKS=stem,stem: execute only these and the book's root chapter (for developing a
#   chapter); tests of the other chapters and pages are then skipped, with that reason.
# * The kernels run with the repository as working directory and SINKPAPER_BOOK_RESULTS pointing into the
#   temporary book (book/_results), so the scorecard reads this session's records, never the repository's.
# * The per-chapter times are printed at the end of the session (pytest_terminal_summary below).
SMOKE_PARAMS: dict[str, dict] = {
    "01_introduction": {"n_samples": 2},
    "02_section3_properties": {"n_samples": 4, "n_profile": 4, "explorer_samples": 2},
    # measured on the shared 2-core machine (loaded): 03 1128 s -> 545 s with the first two, 04 1477 s -> 209 s
    "03_section3_measuring": {"n_samples": 4, "t_samples": 2, "seq_lens": [16, 64], "n_map_samples": 1},
    "04_optimization": {"live_steps": 200},  # 2 evaluations (every 100 steps), so its step slider can move
    "05_data": {"live_steps": 100},
    "06_loss": {"live_steps": 100},
    "08_biases": {"live_steps": 100},
    "09_attention_ops": {"live_steps": 100},
    "10_packing_bos": {"n_samples": 4, "live_steps": 100, "loss_samples": 2, "live_eval_samples": 20},
    "11_why_sink_matters": {"n_tokens": 256, "window": 32, "removal_tokens": 128},
}
BOOK_PROFILE = "cpu"
BOOK_CELL_TIMEOUT_S = 1200  # per cell; a chapter is ~1 minute at the cpu profile
BOOK_JOBS = 2  # chapters executed side by side (runner --jobs), each kernel pinned to half the CPUs
NOTEBOOKS_ENV = "SINKPAPER_TEST_NOTEBOOKS"
REPO_ROOT = Path(__file__).resolve().parents[1]
_TRITON_INTERPRET_SET_HERE = "TRITON_INTERPRET" in os.environ and "TRITON_INTERPRET" not in _ENV_BEFORE


@dataclass
class BuiltBook:
    root: Path                  # the temporary book layout (_config.yml, _toc.yml, book/)
    book_dir: Path              # root/book: executed <stem>.ipynb, _static/, _failed/, _results/
    results_dir: Path           # SINKPAPER_BOOK_RESULTS the kernels saw (root/book/_results)
    html_dir: Path              # root/_build/html
    stems: list[str]            # every notebooks/*.py stem
    selected: list[str]         # the stems executed this session (all of them unless SINKPAPER_TEST_NOTEBOOKS)
    params: dict                # stem -> the parameters it ran with besides profile (SMOKE_PARAMS)
    results: dict               # stem -> sinkpaper.site.runner.Result
    times: dict                 # stem -> seconds
    run_seconds: float          # wall time of executing them all (BOOK_JOBS at once)
    build: subprocess.CompletedProcess
    build_seconds: float

    def notebook(self, stem: str) -> Path:
        return self.book_dir / f"{stem}.ipynb"

    def page(self, docname: str) -> Path:
        """The HTML file of a _toc.yml entry such as ``book/02_section3_properties``."""
        return self.html_dir / f"{docname}.html"

    def skip_unless_selected(self, stem: str) -> None:
        if stem not in self.selected:
            pytest.skip(f"{stem} not executed this session ({NOTEBOOKS_ENV}={os.environ.get(NOTEBOOKS_ENV)})")

    def page_skip_reason(self, docname: str) -> str | None:
        """Why a _toc.yml page is not expected in a restricted session (SINKPAPER_TEST_NOTEBOOKS), else None."""
        if self.selected == self.stems:
            return None
        stem = Path(docname).name
        if stem in self.selected or any((self.root / f"{docname}{ext}").is_file() for ext in (".md", ".rst")):
            return None
        return f"{docname} not executed this session ({NOTEBOOKS_ENV}={os.environ.get(NOTEBOOKS_ENV)})"

    def page_missing_reason(self, docname: str) -> str | None:
        """Why a _toc.yml page that should be in the build is not there, else None."""
        if self.page(docname).is_file():
            return None
        stem = Path(docname).name
        if stem in self.results:
            return self.results[stem].error or "its notebook ran but jupyter-book did not write the page"
        if stem not in self.stems:
            return f"no notebooks/{stem}.py and no book/{stem}.md"
        return "not built"

    def require_page(self, docname: str) -> Path:
        """The built HTML of a _toc.yml page: skips in a restricted session, fails (naming why) if missing."""
        reason = self.page_skip_reason(docname)
        if reason:
            pytest.skip(reason)
        missing = self.page_missing_reason(docname)
        if missing:
            pytest.fail(f"{docname}: listed in _toc.yml but not built ({missing})")
        return self.page(docname)


_SESSION: dict = {}


def _toc_root_stem(repo: Path = REPO_ROOT) -> str:
    import yaml
    return Path(yaml.safe_load((repo / "_toc.yml").read_text())["root"]).name


def _selected_stems(stems: list[str]) -> list[str]:
    wanted = [s.strip() for s in os.environ.get(NOTEBOOKS_ENV, "").split(",") if s.strip()]
    if not wanted:
        return list(stems)
    unknown = [s for s in wanted if s not in stems]
    if unknown:
        raise pytest.UsageError(f"{NOTEBOOKS_ENV} names unknown notebook(s) {unknown}; valid: {stems}")
    wanted.append(_toc_root_stem())   # jupyter-book builds nothing without its root page
    return [s for s in stems if s in wanted]


def copy_book_layout(dest: Path, repo: Path = REPO_ROOT) -> Path:
    """The book's sources without executed output: _config.yml, _toc.yml, root *.bib, and book/ minus the
    executed notebooks, _failed/, _results/ and dot files. Static assets are (re)written by the runner."""
    dest.mkdir(parents=True, exist_ok=True)
    for path in [repo / "_config.yml", repo / "_toc.yml", *sorted(repo.glob("*.bib"))]:
        if path.is_file():
            shutil.copy2(path, dest / path.name)
    shutil.copytree(repo / "book", dest / "book", dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("*.ipynb", "_failed", "_results", ".*"))
    return dest


class _TerminalLog:
    """File-like: the runner's progress lines go straight to the terminal (CI logs show each chapter)."""

    def __init__(self, config):
        self.tr = config.pluginmanager.get_plugin("terminalreporter")
        self.capture = config.pluginmanager.get_plugin("capturemanager")

    def write(self, text: str) -> int:
        if self.tr is not None:
            lines = [line for line in text.splitlines() if line.strip()]
            if self.capture is not None:  # fixture set-up runs under output capture: step outside it
                with self.capture.global_and_fixture_disabled():
                    self._write(lines)
            else:
                self._write(lines)
        return len(text)

    def _write(self, lines: list[str]) -> None:
        for line in lines:
            self.tr.write_line(line)
        self.tr.flush()  # CI pipes stdout: show each chapter as it finishes, not at the end

    def flush(self) -> None:
        if self.tr is not None:
            self.tr.flush()


@pytest.fixture(scope="session")
def built_book(tmp_path_factory, pytestconfig) -> BuiltBook:
    pytest.importorskip("papermill")
    pytest.importorskip("jupytext")
    from sinkpaper.site import runner

    jb = Path(sys.executable).parent / "jupyter-book"
    if not jb.exists():
        pytest.fail(f"jupyter-book is not installed next to {sys.executable} (install sinkpaper[book])")
    stems = list(runner.discover(REPO_ROOT / "notebooks"))
    selected = _selected_stems(stems)
    root = copy_book_layout(tmp_path_factory.mktemp("built_book"))
    book_dir = root / "book"
    results_dir = book_dir / runner.RESULTS_SUBDIR
    log = _TerminalLog(pytestconfig)
    results = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(runner.RESULTS_ENV, str(results_dir))
        if _TRITON_INTERPRET_SET_HERE:  # set above for the test process only; kernels run as under `make book`
            mp.delenv("TRITON_INTERPRET")
        log.write(f"[built_book] executing {len(selected)} notebook(s) at profile {BOOK_PROFILE} into {book_dir}")
        # two chapters at a time, one CPU each (BOOK_JOBS), each with its own smoke parameters; scorecards last
        t0 = time.perf_counter()
        if selected:
            for r in runner.run_notebooks(BOOK_PROFILE, only=selected, timeout=BOOK_CELL_TIMEOUT_S,
                                          notebooks_dir=REPO_ROOT / "notebooks", out_dir=book_dir, cwd=REPO_ROOT,
                                          log=log, jobs=BOOK_JOBS,
                                          stem_params={s: SMOKE_PARAMS[s] for s in selected if s in SMOKE_PARAMS}):
                results[r.stem] = r
        else:
            from sinkpaper.site.assets import write_static_assets

            write_static_assets(book_dir / runner.STATIC_SUBDIR)
        run_seconds = time.perf_counter() - t0
    t0 = time.perf_counter()
    build = subprocess.run([str(jb), "build", "--all", str(root)], cwd=root, capture_output=True, text=True,
                           timeout=1800)
    build_seconds = time.perf_counter() - t0
    log.write(f"[built_book] jupyter-book build: exit {build.returncode} in {build_seconds:.1f} s")
    book = BuiltBook(root=root, book_dir=book_dir, results_dir=results_dir, html_dir=root / "_build" / "html",
                     stems=stems, selected=selected, params={s: dict(SMOKE_PARAMS.get(s, {})) for s in selected},
                     results=results,
                     times={s: r.seconds for s, r in results.items()}, run_seconds=run_seconds, build=build,
                     build_seconds=build_seconds)
    _SESSION["built_book"] = book
    return book


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """Per-chapter execution times of `built_book` (when a test used it), so CI logs show them."""
    book = _SESSION.get("built_book")
    if book is None:
        return
    from sinkpaper.site import runner

    terminalreporter.section(f"book chapters (built_book, profile {BOOK_PROFILE}, smoke parameters)")
    for line in runner.format_summary(list(book.results.values())).splitlines():
        terminalreporter.write_line(line)
    total = sum(book.times.values())
    terminalreporter.write_line(f"notebooks {total:.1f} s in all, {book.run_seconds:.1f} s of wall time with "
                                f"{BOOK_JOBS} at once; jupyter-book build {book.build_seconds:.1f} s "
                                f"(exit {book.build.returncode})")
