"""No page prints a path of the machine that built it: the paths to look for (:func:`machine_paths`), warnings
that name one rewritten (:func:`scrub_warning_paths`), and any other output that names one refused
(:func:`check_machine_paths`, :class:`MachinePathError`), so a built book is the same wherever it is built."""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Sequence

REPO_ROOT = Path(__file__).resolve().parents[2]
PAPERMILL_TAGS = ("injected-parameters", "papermill-error-cell-tag")  # cells papermill adds to the source's

class MachinePathError(ValueError):
    """An executed notebook's outputs name an absolute path of the machine that ran it."""


def machine_paths(*extra: str | os.PathLike) -> list[str]:
    """Absolute paths of this machine that no page may print: the repository root, this interpreter's prefix,
    the home directory, and ``extra`` (the kernels' working directory, the output directory), longest first."""
    import site

    paths = {str(REPO_ROOT), sys.prefix, *(str(Path(e).resolve()) for e in extra), *(str(e) for e in extra)}
    home = os.path.expanduser("~")
    if len(Path(home).parts) > 1:
        paths.add(home)
    paths.update(site.getsitepackages() if hasattr(site, "getsitepackages") else ())
    return sorted({p.rstrip("/") for p in paths
                   if os.path.isabs(p) and len(Path(p).parts) > 1 and p not in ("/usr", "/usr/local")},
                  key=len, reverse=True)


def _output_texts(output) -> list[tuple[str, str]]:
    """(kind, text) pieces of one output that a page renders."""
    import json

    if output.get("output_type") == "stream":
        return [(f"stream {output.get('name', '')}", output.get("text", ""))]
    if output.get("output_type") == "error":
        return [("error", "\n".join(output.get("traceback", ())) + output.get("evalue", ""))]
    data = output.get("data", {})
    return [(mime, v if isinstance(v, str) else json.dumps(v)) for mime, v in data.items()]


def scrub_warning_paths(nb, forbidden: Sequence[str]) -> int:
    """Library warnings on stderr name their file by absolute path (``/venv/.../site-packages/x.py:12:
    UserWarning``): make those paths relative to where they sit (``x.py``-style, ``site-packages/`` and the
    checkout dropped). Only stderr streams are touched; returns how many outputs changed."""
    changed = 0
    for cell in nb.cells:
        for out in cell.get("outputs", ()):
            if out.get("output_type") == "stream" and out.get("name") == "stderr":
                text = out.get("text", "")
                new = text
                for p in forbidden:
                    new = new.replace(p + "/", "")
                if new != text:
                    out["text"] = new
                    changed += 1
    return changed


def check_machine_paths(nb, forbidden: Sequence[str]) -> None:
    """Raise :class:`MachinePathError` naming the first cell whose outputs (or shown source) contain one of
    ``forbidden``: the source in sinkpaper/ that printed it must print a path relative to the checkout
    (:func:`sinkpaper.provenance.shown_path`)."""
    number = 0
    for cell in nb.cells:
        tags = cell.get("metadata", {}).get("tags", ())
        if any(tag in tags for tag in PAPERMILL_TAGS):
            continue
        number += 1
        pieces = [("source", cell.get("source", ""))] if "parameters" not in tags else []
        for out in cell.get("outputs", ()):
            pieces += _output_texts(out)
        for kind, text in pieces:
            for p in forbidden:
                at = text.find(p)
                if at >= 0:
                    context = " ".join(text[max(0, at - 60): at + len(p) + 60].split())
                    raise MachinePathError(
                        f"cell {number} ({kind}) shows {p!r}, an absolute path of this machine: ...{context}... "
                        "(print paths relative to the repository: sinkpaper.provenance.shown_path)")
