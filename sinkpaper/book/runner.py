"""Execute the companion notebooks with papermill and publish them where the book reads them.

    python -m sinkpaper.book run [--profile cpu|gpu|paper] [--only STEM ...] [-p NAME VALUE ...] [--timeout S]

* Sources are ``notebooks/*.py`` (Jupytext percent format), run in name order.
* Each notebook is executed in a fresh ``python3`` kernel running *this* interpreter, with working directory
  the repository root and parameters ``profile`` plus every ``-p NAME VALUE`` (values parsed as YAML, so
  ``-p n_samples 8`` is an int and ``-p layers [0,1]`` a list).
* Output is atomic: execution writes a temp file next to ``book/<stem>.ipynb`` and only a successful run
  replaces it. A failed run leaves the previous ``book/<stem>.ipynb`` untouched and puts the partially executed
  notebook in ``book/_failed/<stem>.ipynb``; the remaining notebooks still run.
* The executed ``book/<stem>.ipynb`` files are what ``_toc.yml`` lists and what the Colab badges open;
  this runner is their only producer.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

PROFILES = ("cpu", "gpu", "paper")
KERNEL_NAME = "python3"
_KERNELSPEC = {"name": KERNEL_NAME, "display_name": "Python 3 (ipykernel)", "language": "python"}
REPO_ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS_DIR = REPO_ROOT / "notebooks"
OUT_DIR = REPO_ROOT / "book"
FAILED_SUBDIR = "_failed"
STATIC_SUBDIR = "_static"


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


# ----------------------------------------------------------------------------------------------- parameters
def parse_param_value(text: str) -> Any:
    """YAML scalar/list/dict parsing, plus floats YAML 1.1 leaves as strings (``1e-3``)."""
    import yaml

    value = yaml.safe_load(text) if text.strip() else text
    if isinstance(value, str) and value == text.strip():  # an unquoted plain scalar YAML kept as a string
        try:
            return float(value) if value.strip().lower() not in ("nan", "inf", "-inf", "+inf") else value
        except ValueError:
            return value
    return value


def parse_params(pairs: Iterable[Sequence[str]] | None) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for name, value in pairs or ():
        if not name.isidentifier():
            raise ValueError(f"parameter name {name!r} is not a Python identifier")
        params[name] = parse_param_value(value)
    return params


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


def ensure_kernel(name: str = KERNEL_NAME) -> str:
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


# ---------------------------------------------------------------------------------------------- execution
def _load(path: Path):
    import jupytext

    nb = jupytext.read(path)
    nb.metadata["kernelspec"] = dict(_KERNELSPEC)
    nb.metadata.setdefault("language_info", {"name": "python"})
    return nb


def _tidy_metadata(path: Path, source_rel: str, output_rel: str) -> None:
    """papermill stores its ``input_path`` argument in the output; ours is the notebook object itself."""
    import nbformat

    nb = nbformat.read(path, as_version=4)
    pm = nb.metadata.get("papermill", {})
    pm["input_path"] = source_rel
    pm["output_path"] = output_rel
    nb.metadata["papermill"] = pm
    nb.metadata["kernelspec"] = dict(_KERNELSPEC)  # what Colab/Jupyter should use, whichever local name ran it
    nbformat.write(nb, path)


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
    kernel_name: str = KERNEL_NAME,
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
    error = None
    try:
        nb = _load(source)
        papermill.execute_notebook(
            nb,
            str(tmp),
            parameters=dict(parameters),
            kernel_name=kernel_name,
            cwd=str(cwd),
            request_save_on_cell_execute=False,
            log_output=False,
            progress_bar=False,
            execution_timeout=timeout,
        )
        _tidy_metadata(tmp, _rel(source, cwd), _rel(final, cwd))
        os.replace(tmp, final)
        return Result(stem, True, time.perf_counter() - t0, final)
    except Exception as exc:  # noqa: BLE001 - any failure of one notebook must not stop the others
        error = f"{type(exc).__name__}: {exc}"
        seconds = time.perf_counter() - t0
        failed_dir.mkdir(parents=True, exist_ok=True)
        dest = failed_dir / f"{stem}.ipynb"
        try:
            if tmp.exists() and tmp.stat().st_size > 0:  # papermill saved the partially executed notebook
                _tidy_metadata(tmp, _rel(source, cwd), _rel(dest, cwd))
                os.replace(tmp, dest)
            else:  # died before papermill could save (kernel death, cell timeout): keep the source + error
                nb = _load(source)
                nb.cells.insert(0, nbformat.v4.new_markdown_cell(f"**Execution failed:**\n\n```\n{error}\n```"))
                nbformat.write(nb, dest)
        except Exception:  # noqa: BLE001
            traceback.print_exc()
            dest = None
        return Result(stem, False, seconds, dest, error)
    finally:
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
) -> list[Result]:
    """Execute ``notebooks_dir/*.py`` (or the ``only`` stems) into ``out_dir``; see the module docstring.

    ``cwd`` (the kernels' working directory) defaults to the parent of ``notebooks_dir`` (the repository root).
    Raises :class:`UnknownNotebookError` for an unknown stem in ``only``.
    """
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {PROFILES}, not {profile!r}")
    notebooks_dir = Path(notebooks_dir)
    out_dir = Path(out_dir)
    cwd = Path(cwd) if cwd is not None else notebooks_dir.resolve().parent
    sources = select(discover(notebooks_dir), only)
    out_dir.mkdir(parents=True, exist_ok=True)
    if static_assets:
        from .assets import write_static_assets

        write_static_assets(out_dir / STATIC_SUBDIR)
    kernel = ensure_kernel()
    parameters = {"profile": profile, **(params or {})}
    results = []
    for source in sources:
        if log:
            print(f"[sinkpaper.book] {source.stem}: running (profile={profile}) ...", file=log, flush=True)
        r = run_one(source, out_dir, parameters, cwd=cwd, timeout=timeout, kernel_name=kernel)
        if log:
            print(f"[sinkpaper.book] {source.stem}: {r.status} in {r.seconds:.1f} s"
                  + (f" -> {r.output}" if r.output else "") + (f"\n    {r.error}" if r.error else ""),
                  file=log, flush=True)
        results.append(r)
    return results


def format_summary(results: Sequence[Result]) -> str:
    width = max([len("notebook")] + [len(r.stem) for r in results])
    lines = [f"{'notebook':<{width}}  {'status':<6}  {'seconds':>8}", f"{'-' * width}  ------  --------"]
    lines += [f"{r.stem:<{width}}  {r.status:<6}  {r.seconds:>8.1f}" for r in results]
    n_failed = sum(not r.ok for r in results)
    lines.append(f"{len(results) - n_failed} ok, {n_failed} failed")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------- CLI
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m sinkpaper.book", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="execute notebooks/*.py with papermill into book/<stem>.ipynb")
    run.add_argument("--profile", choices=PROFILES, default="cpu", help="compute profile passed to every notebook")
    run.add_argument("--only", nargs="+", metavar="STEM", help="run only these notebooks (file stems)")
    run.add_argument("-p", "--param", nargs=2, action="append", metavar=("NAME", "VALUE"), default=[],
                     help="extra notebook parameter; VALUE is parsed as YAML (repeatable)")
    run.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                     help="per-cell execution timeout (default: none)")
    run.add_argument("--notebooks-dir", type=Path, default=NOTEBOOKS_DIR, help=argparse.SUPPRESS)
    run.add_argument("--out-dir", type=Path, default=OUT_DIR, help=argparse.SUPPRESS)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        params = parse_params(args.param)
    except ValueError as exc:
        parser.error(str(exc))  # exits 2
    try:
        results = run_notebooks(args.profile, only=args.only, params=params, timeout=args.timeout,
                                notebooks_dir=args.notebooks_dir, out_dir=args.out_dir)
    except UnknownNotebookError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not results:
        print(f"error: no notebooks found in {args.notebooks_dir}", file=sys.stderr)
        return 2
    print(format_summary(results))
    return 0 if all(r.ok for r in results) else 1
