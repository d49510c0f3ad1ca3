"""The book's table of contents (a Jupyter Book 1.x ``_toc.yml``): the pages it lists, and which of them have no
source yet."""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Sequence


def docnames(toc_path: str | os.PathLike) -> list[str]:
    """Every page a Jupyter Book 1.x ``_toc.yml`` lists (root first, then depth first), as docnames without
    extension (``book/02_section3_properties``); ``url`` and ``glob`` entries are left out."""
    import yaml

    toc = yaml.safe_load(Path(toc_path).read_text(encoding="utf-8")) or {}
    names = [toc["root"]] if toc.get("root") else []

    def walk(entries):
        for entry in entries or ():
            if isinstance(entry, dict):
                if entry.get("file"):
                    names.append(str(entry["file"]))
                for key in ("parts", "chapters", "sections"):
                    walk(entry.get(key))

    walk([toc])
    return [re.sub(r"\.(ipynb|md|rst)$", "", n) for n in names]


def unbuilt(root: Path, to_run: Sequence[str] = ()) -> list[str]:
    """The pages ``root/_toc.yml`` lists that have no source under ``root`` (no executed ``.ipynb``, no ``.md``)
    and are not among the stems ``to_run``: a partial build (``--only``) on a checkout where they were never
    executed, which jupyter-book would stop on after the chapters ran."""
    toc = root / "_toc.yml"
    if not toc.exists():
        return []
    return [d for d in docnames(toc) if Path(d).name not in set(to_run)
            and not any((root / d).with_suffix(ext).exists() for ext in (".ipynb", ".md", ".rst"))]
