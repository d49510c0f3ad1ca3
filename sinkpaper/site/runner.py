"""Execute the companion notebooks with papermill and publish them where the book reads them.

    python -m sinkpaper.site run [--profile cpu|gpu|paper] [--only STEM ...] [-p NAME VALUE ...] [--timeout S]
                                 [--jobs N]
    python -m sinkpaper.site build [the same options]    # run, then build the site (what `make book` does)
    python -m sinkpaper.site colab                       # write notebooks/ipynb/<stem>.ipynb (what Colab opens)

* Sources are ``notebooks/*.py`` (Jupytext percent format), run in name order, except that notebooks whose
  stem contains ``scorecard`` run after all the others (they read the other chapters' records).
* ``--jobs N`` runs up to N chapters at once, each kernel pinned (Linux) to its own share of the CPUs, so a
  chapter's training uses only its share's threads; the scorecards then run one at a time.
* Each notebook is executed in a fresh ``python3`` kernel running *this* interpreter, with working directory
  the repository root and parameters ``profile`` plus every ``-p NAME VALUE`` (values parsed as YAML, so
  ``-p n_samples 8`` is an int and ``-p layers [0,1]`` a list).
* Chapter records: the kernels see ``SINKPAPER_BOOK_RESULTS``, the directory where chapters write their JSON
  records. The caller's value is kept; when unset it is ``<out dir>/_results`` (``book/_results``).
* Output is atomic: execution writes a temp file next to ``book/<stem>.ipynb`` and only a successful run
  replaces it. A failed run leaves the previous ``book/<stem>.ipynb`` untouched and puts the partially executed
  notebook in ``book/_failed/<stem>.ipynb``; the remaining notebooks still run.
* A failure names the chapter and the cell, e.g.
  ``05_data failed in cell 7 (code cell starting "summary = ..."): ValueError: ...``, where cell numbers
  count every cell (markdown included) of ``notebooks/<stem>.py`` from 1. A kernel that dies or a cell that
  runs past ``--timeout`` is reported the same way ("the kernel died", "timed out after N s").
* The executed ``book/<stem>.ipynb`` files are what ``_toc.yml`` lists; this runner is their only producer,
  and git ignores them (build outputs). The "Open in Colab" link on each page opens the committed, unexecuted
  ``notebooks/ipynb/<stem>.ipynb`` instead (``python -m sinkpaper.site colab`` writes them).
* Pages a reader reads (:func:`sinkpaper.site.pages.present`): every code input folded behind a toggle (unless the source tags the
  cell ``show-input``), papermill's parameters cell and the Colab set-up cell removed, and under the title the
  Colab link and a collapsed block listing the page's parameters and the command that reruns it. A run whose
  outputs show an absolute path of this machine fails, naming the cell
  (:func:`sinkpaper.site.machine_paths.check_machine_paths`).
* ``build`` runs the notebooks, then ``jupyter-book build --all`` whenever at least one chapter succeeded, and
  exits 1 naming the failing chapters (0 when all succeeded and the site built).
* User mistakes exit 2 with one line before anything runs: an unknown stem, a ``-p`` name that no selected
  notebook's ``parameters`` cell defines (the line lists the names it does define), a ``-p`` value that is not
  YAML, a bad option.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from .machine_paths import (PAPERMILL_TAGS, MachinePathError, check_machine_paths, machine_paths,
                            scrub_warning_paths)
from ..book.parameters import PROFILES
from .pages import check_parameters, parameter_table, parse_params, present
from . import toc

JUPYTER_KERNEL = "python3"   # the Jupyter kernel chapters execute in (not a Triton kernel, not kernel attention)
_JUPYTER_KERNELSPEC = {"name": JUPYTER_KERNEL, "display_name": "Python 3 (ipykernel)", "language": "python"}
REPO_ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS_DIR = REPO_ROOT / "notebooks"
OUT_DIR = REPO_ROOT / "book"
FAILED_SUBDIR = "_failed"
STATIC_SUBDIR = "_static"
RESULTS_SUBDIR = "_results"
RESULTS_ENV = "SINKPAPER_BOOK_RESULTS"  # where chapters write (and the scorecard reads) JSON records
# stems containing one of these run after every other selected notebook: the scorecard reads the chapters'
# records, the sources appendix their ledgers (sinkpaper.book.sources)
RUN_LAST_MARKERS = ("scorecard", "sources")
ENGINE_NAME = "sinkpaper-nbclient"


class UnknownNotebookError(ValueError):
    """``only`` named a stem with no ``notebooks/<stem>.py``."""

    def __init__(self, unknown: Sequence[str], valid: Sequence[str]):
        self.unknown = list(unknown)
        self.valid = list(valid)
        super().__init__(
            f"unknown notebook(s): {', '.join(self.unknown)}; valid: {', '.join(self.valid) or '(none)'}"
        )


@dataclass
class Result:
    stem: str
    ok: bool
    seconds: float
    output: Path | None  # book/<stem>.ipynb when ok, book/_failed/<stem>.ipynb when not
    error: str | None = None

    @property
    def status(self) -> str:
        return "ok" if self.ok else "FAILED"


# ------------------------------------------------------------------------------------------------- kernels
def _argv_runs_this_interpreter(argv: Sequence[str]) -> bool:
    if not argv:
        return False
    exe = argv[0]
    # jupyter_client substitutes sys.executable for a bare python / pythonX / pythonX.Y
    if exe in {"python", f"python{sys.version_info[0]}", "python%i.%i" % sys.version_info[:2]}:
        return True
    # compare without resolving symlinks: a venv's python links to the base interpreter
    return os.path.abspath(exe) == os.path.abspath(sys.executable)


def ensure_kernel(name: str = JUPYTER_KERNEL) -> str:
    """Make kernel ``name`` start this interpreter (installing it with --sys-prefix if needed); return the
    kernel name to use."""
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    def resolves() -> bool:
        try:
            spec = KernelSpecManager().get_kernel_spec(name)
        except NoSuchKernel:
            return False
        return _argv_runs_this_interpreter(spec.argv)

    if resolves():
        return name
    from ipykernel.kernelspec import install

    install(prefix=sys.prefix, kernel_name=name)
    if resolves():
        return name
    # a user-level spec of the same name shadows the environment's: use a private name instead
    private = "sinkpaper-python3"
    install(prefix=sys.prefix, kernel_name=private, display_name=f"Python 3 ({sys.prefix})")
    print(f"note: kernel {name!r} does not run {sys.executable}; using {private!r}", file=sys.stderr)
    return private


# ---------------------------------------------------------------------------------------------- discovery
def discover(notebooks_dir: Path) -> dict[str, Path]:
    return {p.stem: p for p in sorted(Path(notebooks_dir).glob("*.py"))}


def select(available: Mapping[str, Path], only: Sequence[str] | None) -> list[Path]:
    if not only:
        return list(available.values())
    unknown = [s for s in only if s not in available]
    if unknown:
        raise UnknownNotebookError(unknown, list(available))
    wanted = set(only)
    return [p for s, p in available.items() if s in wanted]  # keep name order


def execution_order(sources: Sequence[Path]) -> list[Path]:
    """Name order, except that notebooks whose stem contains one of :data:`RUN_LAST_MARKERS` come last (they read
    what every other chapter writes); among themselves they keep name order."""
    return sorted(sources, key=runs_last)  # stable sort


def runs_last(source: str | os.PathLike) -> bool:
    """Whether a notebook reads the other chapters' output (its stem contains a :data:`RUN_LAST_MARKERS` entry,
    any case)."""
    stem = Path(source).stem.lower()
    return any(marker in stem for marker in RUN_LAST_MARKERS)


# ---------------------------------------------------------------------------------------------- execution
def _load(path: Path):
    import jupytext

    nb = jupytext.read(path)
    nb.metadata["kernelspec"] = dict(_JUPYTER_KERNELSPEC)
    nb.metadata.setdefault("language_info", {"name": "python"})
    return nb


def _tidy_metadata(path: Path, source_rel: str, output_rel: str, *, stem: str | None = None,
                   source: Path | None = None, forbidden: Sequence[str] = ()) -> None:
    """papermill stores its ``input_path`` argument in the output; ours is the notebook object itself. With
    ``stem`` and ``source`` (a successful run) the page is also prepared for readers (:func:`present`) and
    checked for absolute paths of this machine (:func:`check_machine_paths`, raising MachinePathError)."""
    import nbformat

    nb = nbformat.read(path, as_version=4)
    if stem is not None and source is not None:
        scrub_warning_paths(nb, forbidden)
        check_machine_paths(nb, forbidden)
        present(nb, stem, parameter_table(source), nb.metadata.get("papermill", {}).get("parameters", {}))
    pm = nb.metadata.get("papermill", {})
    pm["input_path"] = source_rel
    pm["output_path"] = output_rel
    nb.metadata["papermill"] = pm
    nb.metadata["kernelspec"] = dict(_JUPYTER_KERNELSPEC)  # what Colab/Jupyter should use, whichever local name ran it
    from ..book.colab import pin_bootstrap_cell, pinned_ref

    pin_bootstrap_cell(nb, pinned_ref())  # Colab installs the commit that executed this page
    nbformat.write(nb, path)


# papermill copies the notebook before running it, and only a cell *error* makes it save the partial result.
# This engine (nbclient, unchanged) remembers the notebook it executes so that a timeout or a dead kernel can
# still say which cell was running and keep the outputs produced so far.
_TRACK = threading.local()


def _engine_name() -> str:
    from papermill.engines import NBClientEngine, papermill_engines

    if getattr(_engine_name, "registered", False):
        return ENGINE_NAME

    class TrackingEngine(NBClientEngine):
        @classmethod
        def execute_managed_notebook(cls, nb_man, kernel_name, **kwargs):
            _TRACK.nb_man = nb_man
            return super().execute_managed_notebook(nb_man, kernel_name, **kwargs)

    papermill_engines.register(ENGINE_NAME, TrackingEngine)
    _engine_name.registered = True
    return ENGINE_NAME


def failing_cell(nb) -> tuple[int, Any] | None:
    """``(number, cell)`` of the cell where execution stopped, numbered from 1 over the *source* notebook's
    cells (papermill's injected-parameters and error-marker cells are not counted); None if no cell ran."""
    number, last = 0, None
    for cell in nb.cells:
        if any(tag in cell.get("metadata", {}).get("tags", ()) for tag in PAPERMILL_TAGS):
            continue
        number += 1
        status = cell.get("metadata", {}).get("papermill", {}).get("status")
        if status == "failed":
            return number, cell
        if status in ("running", "completed"):  # a timed-out or killed cell ends "completed" too: the last one
            last = (number, cell)
    return last


def _one_line(text: str, limit: int = 300) -> str:
    lines = [ln.strip() for ln in str(text).strip().splitlines() if ln.strip()]
    out = lines[0] if lines else ""
    if len(out) > limit:
        out = out[: limit - 4].rstrip() + " ..."
    elif len(lines) > 1:
        out += " ..."
    return out


def _cell_start(source: str, limit: int = 40) -> str:
    lines = [ln.strip() for ln in str(source).splitlines() if ln.strip()]
    if not lines:
        return ""
    first = lines[0]
    if len(first) > limit:
        return first[:limit].rstrip() + " ..."
    return first + (" ..." if len(lines) > 1 else "")


def describe_failure(stem: str, exc: BaseException, nb=None, timeout: float | None = None) -> str:
    """One line naming the chapter, the cell and the error (see the module docstring)."""
    from nbclient.exceptions import CellTimeoutError, DeadKernelError
    from papermill.exceptions import PapermillExecutionError

    if isinstance(exc, PapermillExecutionError):
        what = f"{exc.ename}: {_one_line(exc.evalue)}" if str(exc.evalue).strip() else exc.ename
    elif isinstance(exc, CellTimeoutError):
        what = (f"timed out after {timeout:g} s (the per-cell --timeout)" if timeout
                else f"timed out ({_one_line(str(exc))})")
    elif isinstance(exc, DeadKernelError):
        what = f"the kernel died while running it (out of memory or a crash; nbclient says: {_one_line(str(exc))})"
    else:
        what = f"{type(exc).__name__}: {_one_line(str(exc))}" if str(exc).strip() else type(exc).__name__
    where = failing_cell(nb) if nb is not None else None
    if where is None:
        return f"{stem} failed before running any cell: {what}"
    number, cell = where
    return f'{stem} failed in cell {number} ({cell.cell_type} cell starting "{_cell_start(cell.source)}"): {what}'


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _rel(path: Path, root: Path) -> str:
    try:
        return Path(path).resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(path)


def run_one(
    source: Path,
    out_dir: Path,
    parameters: Mapping[str, Any],
    *,
    cwd: Path,
    timeout: float | None = None,
    kernel_name: str = JUPYTER_KERNEL,
) -> Result:
    import nbformat
    import papermill

    stem = source.stem
    final = out_dir / f"{stem}.ipynb"
    failed_dir = out_dir / FAILED_SUBDIR
    fd, tmp_name = tempfile.mkstemp(prefix=f".{stem}.", suffix=".tmp.ipynb", dir=out_dir)
    os.close(fd)
    tmp = Path(tmp_name)
    os.chmod(tmp, 0o666 & ~_umask())  # mkstemp creates 0600; published notebooks get the usual mode
    t0 = time.perf_counter()
    _TRACK.nb_man = None
    try:
        nb = _load(source)
        papermill.execute_notebook(
            nb,
            str(tmp),
            parameters=dict(parameters),
            engine_name=_engine_name(),
            kernel_name=kernel_name,
            # the kernel starts in cwd (nbclient's resources), never via papermill's cwd=, which chdirs this
            # whole process: with chapters run from threads side by side, one thread's restore would leave the
            # process in another's directory
            resources={"metadata": {"path": str(Path(cwd).resolve())}},
            request_save_on_cell_execute=False,
            log_output=False,
            progress_bar=False,
            execution_timeout=timeout,
        )
        _tidy_metadata(tmp, _rel(source, cwd), _rel(final, cwd), stem=stem, source=source,
                       forbidden=machine_paths(cwd, out_dir))
        os.replace(tmp, final)
        return Result(stem, True, time.perf_counter() - t0, final)
    except Exception as exc:  # noqa: BLE001 - any failure of one notebook must not stop the others
        seconds = time.perf_counter() - t0
        nb_man = getattr(_TRACK, "nb_man", None)
        executed = nb_man.nb if nb_man is not None else None
        try:
            error = (f"{stem}: {exc}" if isinstance(exc, MachinePathError)
                     else describe_failure(stem, exc, executed, timeout))
        except Exception:  # noqa: BLE001 - never lose the failure itself
            error = f"{stem} failed: {type(exc).__name__}: {_one_line(str(exc))}"
        failed_dir.mkdir(parents=True, exist_ok=True)
        dest = failed_dir / f"{stem}.ipynb"
        try:
            if tmp.exists() and tmp.stat().st_size > 0:  # papermill saved the partially executed notebook
                _tidy_metadata(tmp, _rel(source, cwd), _rel(dest, cwd))
                os.replace(tmp, dest)
            else:  # no save (kernel death, cell timeout): the outputs so far, or the source, plus the error
                nb = executed if executed is not None else _load(source)
                nb.cells.insert(0, nbformat.v4.new_markdown_cell(f"**Execution failed:**\n\n```\n{error}\n```"))
                nbformat.write(nb, tmp)
                _tidy_metadata(tmp, _rel(source, cwd), _rel(dest, cwd))
                os.replace(tmp, dest)
        except Exception:  # noqa: BLE001
            traceback.print_exc()
            dest = None
        return Result(stem, False, seconds, dest, error)
    finally:
        _TRACK.nb_man = None
        if tmp.exists():
            tmp.unlink()


def run_notebooks(
    profile: str = "cpu",
    only: Sequence[str] | None = None,
    params: Mapping[str, Any] | None = None,
    timeout: float | None = None,
    notebooks_dir: str | os.PathLike = NOTEBOOKS_DIR,
    out_dir: str | os.PathLike = OUT_DIR,
    cwd: str | os.PathLike | None = None,
    static_assets: bool = True,
    log=sys.stderr,
    jobs: int = 1,
    stem_params: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[Result]:
    """Execute ``notebooks_dir/*.py`` (or the ``only`` stems) into ``out_dir``; see the module docstring.

    ``cwd`` (the kernels' working directory) defaults to the parent of ``notebooks_dir`` (the repository root).
    ``jobs`` > 1 runs that many chapters at once, each kernel pinned to its own share of this process's CPUs
    (:func:`cpu_shares`); the scorecards still run after all the others, one at a time. ``stem_params`` adds
    parameters for single chapters on top of ``params``. Results come back in execution order.
    Raises :class:`UnknownNotebookError` for an unknown stem in ``only``, ``ValueError`` for ``jobs`` < 1.
    """
    if int(jobs) != jobs or jobs < 1:
        raise ValueError(f"jobs must be a whole number >= 1, not {jobs!r}")
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {PROFILES}, not {profile!r}")
    notebooks_dir = Path(notebooks_dir)
    out_dir = Path(out_dir)
    cwd = Path(cwd) if cwd is not None else notebooks_dir.resolve().parent
    sources = execution_order(select(discover(notebooks_dir), only))
    check_parameters(sources, params or {})  # before anything runs
    for source in sources:
        check_parameters([source], (stem_params or {}).get(source.stem, {}))
    out_dir.mkdir(parents=True, exist_ok=True)
    if static_assets:
        from .assets import write_static_assets

        write_static_assets(out_dir / STATIC_SUBDIR)
    kernel = ensure_kernel()
    parameters = {"profile": profile, **(params or {})}
    results_dir = results_dir_for(out_dir)
    results_dir.mkdir(parents=True, exist_ok=True)

    def one(source: Path) -> Result:
        if log:
            print(f"[sinkpaper.site] {source.stem}: running (profile={profile}) ...", file=log, flush=True)
        r = run_one(source, out_dir, {**parameters, **(stem_params or {}).get(source.stem, {})}, cwd=cwd,
                    timeout=timeout, kernel_name=kernel)
        if log:
            print(f"[sinkpaper.site] {source.stem}: {r.status} in {r.seconds:.1f} s"
                  + (f" -> {r.output}" if r.output else "") + (f"\n    {r.error}" if r.error else ""),
                  file=log, flush=True)
        return r

    chapters = [s for s in sources if not runs_last(s)]
    scorecards = [s for s in sources if runs_last(s)]
    with _environ(RESULTS_ENV, str(results_dir)):  # the kernels inherit this process's environment
        results = _in_parallel(one, chapters, jobs) if jobs > 1 else [one(s) for s in chapters]
        results += [one(s) for s in scorecards]  # they read the chapters' records, and each other's
    return results


def cpu_shares(jobs: int) -> list[list[int]]:
    """This process's CPUs dealt round-robin into ``min(jobs, CPUs)`` disjoint shares."""
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else list(range(os.cpu_count() or 1))
    n = max(1, min(jobs, len(cpus)))
    return [cpus[i::n] for i in range(n)]


def _in_parallel(fn, items: Sequence[Path], jobs: int) -> list[Result]:
    """``[fn(x) for x in items]`` on ``jobs`` threads. Each thread pins itself to one CPU share first, so the
    kernels it starts inherit that share: two kernels never fight over a core, and a training run inside one
    uses no more threads than its share holds (``sinkpaper.train.accel.set_threads``). Without
    ``os.sched_setaffinity`` (not Linux) the chapters still run side by side, unpinned."""
    import queue
    from concurrent.futures import ThreadPoolExecutor

    dealt = cpu_shares(jobs)
    shares: queue.SimpleQueue = queue.SimpleQueue()
    for share in dealt:
        shares.put(share)

    def pin() -> None:
        share = shares.get()
        if hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(0, share)  # Linux: the calling thread only; its children inherit it

    with ThreadPoolExecutor(max_workers=min(len(dealt), max(1, len(items))),
                            initializer=pin) as pool:
        return list(pool.map(fn, items))


def results_dir_for(out_dir: str | os.PathLike) -> Path:
    """The chapter-records directory the kernels get: ``$SINKPAPER_BOOK_RESULTS`` if set (made absolute
    against this process's working directory), else ``<out_dir>/_results``."""
    preset = os.environ.get(RESULTS_ENV)
    return Path(preset).resolve() if preset else (Path(out_dir) / RESULTS_SUBDIR).resolve()


class _environ:
    """Set one environment variable for the duration of a ``with`` block, then restore it."""

    def __init__(self, name: str, value: str):
        self.name, self.value, self.saved = name, value, None

    def __enter__(self):
        self.saved = os.environ.get(self.name)
        os.environ[self.name] = self.value

    def __exit__(self, *exc):
        if self.saved is None:
            os.environ.pop(self.name, None)
        else:
            os.environ[self.name] = self.saved


def format_summary(results: Sequence[Result]) -> str:
    width = max([len("notebook")] + [len(r.stem) for r in results])
    lines = [f"{'notebook':<{width}}  {'status':<6}  {'seconds':>8}", f"{'-' * width}  ------  --------"]
    lines += [f"{r.stem:<{width}}  {r.status:<6}  {r.seconds:>8.1f}" for r in results]
    n_failed = sum(not r.ok for r in results)
    lines.append(f"{len(results) - n_failed} ok, {n_failed} failed")
    for r in results:
        if not r.ok:
            lines.append(f"  {r.error or r.stem + ' failed'}")
            if r.output:
                lines.append(f"    partial output: {r.output}; the previous executed notebook, if any, is kept")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------- CLI
def build_parser() -> argparse.ArgumentParser:
    from ..argparsing import OneLineParser

    parser = OneLineParser(prog="python -m sinkpaper.site", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    run = sub.add_parser("run", help="execute notebooks/*.py with papermill into book/<stem>.ipynb")
    build = sub.add_parser("build", help="run the notebooks, then build the site whenever at least one succeeded")
    for p in (run, build):
        p.add_argument("--profile", choices=PROFILES, default="cpu", help="compute profile passed to every notebook")
        p.add_argument("--only", nargs="+", metavar="STEM", help="run only these notebooks (file stems)")
        p.add_argument("-p", "--param", nargs=2, action="append", metavar=("NAME", "VALUE"), default=[],
                       help="extra notebook parameter, one its parameters cell defines; VALUE is parsed as YAML "
                            "(repeatable)")
        p.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                       help="per-cell execution timeout (default: none)")
        p.add_argument("--jobs", type=int, default=1, metavar="N",
                       help="run up to N chapters at once, each kernel pinned to its share of the CPUs "
                            "(default 1; the scorecards still run last)")
        p.add_argument("--notebooks-dir", type=Path, default=NOTEBOOKS_DIR, help=argparse.SUPPRESS)
        p.add_argument("--out-dir", type=Path, default=OUT_DIR, help=argparse.SUPPRESS)
    build.add_argument("--root", type=Path, default=None, help=argparse.SUPPRESS)  # default: parent of --out-dir
    colab = sub.add_parser("colab", help="write notebooks/ipynb/<stem>.ipynb, the notebooks the Colab links open")
    colab.add_argument("--notebooks-dir", type=Path, default=NOTEBOOKS_DIR, help=argparse.SUPPRESS)
    return parser


def jupyter_book() -> str:
    """The jupyter-book next to this interpreter (installed with sinkpaper[book]), else one on PATH."""
    import shutil

    here = Path(sys.executable).parent / "jupyter-book"
    found = str(here) if here.exists() else shutil.which("jupyter-book")
    if found is None:
        raise FileNotFoundError("jupyter-book is not installed: pip install 'sinkpaper[book]'")
    return found


def build_site(root: Path, log=sys.stderr) -> int:
    """``jupyter-book build --all root``; its exit status."""
    import subprocess

    cmd = [jupyter_book(), "build", "--all", str(root)]
    if log:
        print(f"[sinkpaper.site] {' '.join(cmd)}", file=log, flush=True)
    return subprocess.run(cmd, cwd=root).returncode


def main(argv: Sequence[str] | None = None) -> int:
    from ..argparsing import fail

    parser = build_parser()
    args = parser.parse_args(argv)
    prog = parser.prog
    if args.command == "colab":
        from ..book.colab import write_colab_notebooks

        written = write_colab_notebooks(args.notebooks_dir)
        print(f"{len(written)} Colab notebook(s) written" + "".join(f"\n  {_rel(p, REPO_ROOT)}" for p in written))
        return 0
    try:
        params = parse_params(args.param)
        if args.command == "build":
            jupyter_book()  # missing jupyter-book is said before any notebook runs
            if args.only:   # jupyter-book stops on a missing first page (others it leaves out with a warning)
                root = args.root if args.root is not None else Path(args.out_dir).resolve().parent
                unbuilt = toc.unbuilt(root, args.only)
                if unbuilt and unbuilt[0] == toc.docnames(root / "_toc.yml")[0]:
                    raise ValueError(f"the book's first page, {Path(unbuilt[0]).name}, was never executed here: "
                                     "add it to --only, or run `python -m sinkpaper.site build` (every chapter) once")
                if unbuilt:
                    print(f"[sinkpaper.site] pages never executed here, left out of the site: "
                          f"{', '.join(Path(d).name for d in unbuilt)}", file=sys.stderr, flush=True)
        results = run_notebooks(args.profile, only=args.only, params=params, timeout=args.timeout,
                                notebooks_dir=args.notebooks_dir, out_dir=args.out_dir, log=sys.stderr,
                                jobs=args.jobs)
    except (ValueError, FileNotFoundError) as exc:  # unknown stem or parameter, bad YAML, no jupyter-book
        return fail(prog, str(exc))
    if not results:
        return fail(prog, f"no notebooks found in {args.notebooks_dir}")
    print(format_summary(results))
    failed = [r.stem for r in results if not r.ok]
    if args.command == "run":
        return 1 if failed else 0
    root = args.root if args.root is not None else Path(args.out_dir).resolve().parent
    if len(failed) == len(results):
        print(f"site not built: every chapter failed ({', '.join(failed)})", file=sys.stderr)
        return 1
    status = build_site(root)
    html = root / "_build" / "html" / "index.html"
    if status != 0:
        print(f"jupyter-book build failed (exit {status})" + (f"; failed chapters: {', '.join(failed)}" if failed
                                                               else ""), file=sys.stderr)
        return 1
    print(f"Book: {html}")
    if failed:
        print(f"built without the new output of the failed chapter(s): {', '.join(failed)} (each keeps its "
              "previous executed page, if any)", file=sys.stderr)
        return 1
    return 0
