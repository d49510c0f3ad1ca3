"""A chapter's page as the site builder sees it: ``-p NAME VALUE`` parsed (:func:`parse_params`) and checked
against the names the chapter's ``parameters`` cell assigns (:func:`check_parameters`), before any notebook runs;
and what a reader of the executed page sees (:func:`present`: every code input folded, the set-up cells removed,
and under the title the Colab link, the table of parameters and the command that reruns the page).

The chapter's own check of the values it was given is :mod:`sinkpaper.book.parameters`.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence


# How long a page is, measured the way a reader meets it in Chromium (scripts/page_audit.py and the site tests
# read the same): the text of the page's main column as it is drawn (a closed fold's content is not drawn, so it
# does not count), and the page's height in screens of the window below.
SCREEN = {"width": 1280, "height": 900}
MAIN_TEXT_JS = ("() => { const m = document.querySelector('main article') || document.querySelector('main') "
                "|| document.body; return m.innerText; }")
PAGE_HEIGHT_JS = "() => (document.scrollingElement || document.documentElement).scrollHeight"
# The book's length budget: a chapter (and the front page) in at most this many screens of SCREEN, every other
# page in at most MAX_OTHER_SCREENS, and the whole site in at most BOOK_WORDS words of main text.
MAX_CHAPTER_SCREENS = 8
MAX_OTHER_SCREENS = 10
BOOK_WORDS = 35_000


def _cells(source: Path):
    """The cells of a chapter's Jupytext source."""
    import jupytext

    return jupytext.read(source).cells


def parse_param_value(text: str) -> Any:
    """YAML scalar/list/dict parsing, plus floats YAML 1.1 leaves as strings (``1e-3``)."""
    import yaml

    try:
        value = yaml.safe_load(text) if text.strip() else text
    except yaml.YAMLError as e:
        problem = " ".join(str(getattr(e, "problem", None) or e).split())
        raise ValueError(f"{text!r} is not a valid YAML value ({problem}); quote strings, write lists as [a, b]") from None
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
        try:
            params[name] = parse_param_value(value)
        except ValueError as e:
            raise ValueError(f"-p {name}: {e}") from None
    return params


def notebook_parameters(source: Path) -> list[str]:
    """The names a notebook's ``parameters`` cell assigns (papermill injects values for these), in order."""
    import ast

    for cell in _cells(Path(source)):
        if cell.cell_type == "code" and "parameters" in cell.get("metadata", {}).get("tags", ()):
            names = []
            for node in ast.parse(cell.source).body:
                targets = node.targets if isinstance(node, ast.Assign) else (
                    [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else [])
                for t in targets:
                    for n in ast.walk(t):
                        if isinstance(n, ast.Name) and n.id not in names:
                            names.append(n.id)
            return names
    return []


class UnknownParameterError(ValueError):
    """``-p NAME`` for a name that no selected notebook's ``parameters`` cell defines."""


def check_parameters(sources: Sequence[Path], params: Mapping[str, Any]) -> None:
    """Raise :class:`UnknownParameterError` (one line, listing the valid names) for every ``params`` name that
    none of ``sources`` defines in its ``parameters`` cell."""
    declared = {Path(s).stem: notebook_parameters(s) for s in sources}
    valid = sorted({n for names in declared.values() for n in names})
    unknown = [n for n in params if n not in valid]
    if unknown:
        where = (f"{next(iter(declared))} takes" if len(declared) == 1
                 else f"the {len(declared)} selected notebooks take")
        raise UnknownParameterError(f"unknown notebook parameter(s) {', '.join(unknown)}; {where}: "
                                    f"{', '.join(valid) or '(none)'}")


# ------------------------------------------------------------------------------------------ presentation
# What a reader sees of an executed notebook (Jupyter Book 1.x cell tags; no notebook source needs them):
# every code cell's input is folded behind a toggle ("hide-input") unless the source tags it "show-input";
# papermill's injected-parameters cell, the source's parameters cell and the Colab set-up cell are removed
# from the page ("remove-cell"); under the title, a cell with the "Open in Colab" link and a collapsed block
# listing the parameters a reader may change (name, default, value used, meaning) and the command that reruns
# the page with other values.
HIDE_INPUT, SHOW_INPUT, REMOVE_CELL = "hide-input", "show-input", "remove-cell"
_FOLDED = (HIDE_INPUT, SHOW_INPUT, "remove-input", REMOVE_CELL, "hide-cell")  # a choice the source already made
READER_CELL_TAG = "sinkpaper-reader"  # the inserted cell (so a second pass replaces it instead of adding one)


@dataclass
class Parameter:
    name: str
    default: str  # the literal as the source writes it
    help: str  # the source line's trailing comment


def parameter_table(source: Path) -> list[Parameter]:
    """The parameters cell of ``source``: one :class:`Parameter` per assignment, in order."""
    import ast

    for cell in _cells(Path(source)):
        if cell.cell_type == "code" and "parameters" in cell.get("metadata", {}).get("tags", ()):
            lines = cell.source.splitlines()
            out = []
            for node in ast.parse(cell.source).body:
                if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                    target, value = node.targets[0].id, node.value
                elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value:
                    target, value = node.target.id, node.value
                else:
                    continue
                default = ast.get_source_segment(cell.source, value) or ""
                last = lines[node.end_lineno - 1]
                comment = last[node.end_col_offset:].strip()
                out.append(Parameter(target, default, comment[1:].strip() if comment.startswith("#") else ""))
            return out
    return []


def cli_value(value: Any) -> str:
    """``value`` as a shell word that ``-p NAME VALUE`` parses back to it (:func:`parse_param_value`)."""
    import shlex

    return shlex.quote(yaml_value(value))


def yaml_value(value: Any) -> str:
    """``value`` as the YAML text ``-p NAME VALUE`` takes (:func:`parse_param_value` reads it back)."""
    import yaml

    text = value if isinstance(value, str) else yaml.safe_dump(value, default_flow_style=True, width=10**6)
    text = text.strip()
    if text.endswith("\n..."):
        text = text[:-4].strip()
    if text.endswith("..."):
        text = text[:-3].strip()
    if isinstance(value, str) and parse_param_value(value) != value:  # "", "1e-3", "yes": quote for YAML
        text = yaml.safe_dump(value, default_style='"').strip()
    return text


def rerun_command(stem: str, params: Mapping[str, Any] | None = None) -> str:
    """The command that reruns one page, with ``params`` (``profile`` as ``--profile``)."""
    params = dict(params or {})
    words = ["python -m sinkpaper.book run --only", stem]
    if "profile" in params:
        words += ["--profile", cli_value(params.pop("profile"))]
    for name, value in params.items():
        words += ["-p", name, cli_value(value)]
    return " ".join(words)


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def reader_block(stem: str, table: Sequence[Parameter], used: Mapping[str, Any]) -> str:
    """Markdown under a page's title: the Colab link and the collapsed parameters block."""
    from ..book.colab import badge

    out = [badge(stem)]
    if table:
        rows = ["| parameter | default | this page ran with | meaning |", "|---|---|---|---|"]
        for p in table:
            ran = f"`{yaml_value(used[p.name])}`" if p.name in used else "the default"
            rows.append(f"| `{p.name}` | `{_cell(p.default)}` | {_cell(ran)} | {_cell(p.help)} |")
        changed = {k: used[k] for k in used if k in {p.name for p in table}}
        out += ["", "````{dropdown} Parameters of this page, and how to rerun it", *rows, "",
                "Rerun this page as it was built, or change any `-p NAME VALUE` (values are YAML), then "
                "`jupyter-book build .`:", "", "```bash", rerun_command(stem, changed), "```", "````"]
    return "\n".join(out)


def _is_bootstrap(cell) -> bool:
    from ..book.colab import bootstrap_cell

    return cell.get("cell_type") == "code" and bootstrap_cell().splitlines()[0] in cell.get("source", "")


def present(nb, stem: str, table: Sequence[Parameter], used: Mapping[str, Any]) -> None:
    """Prepare executed notebook ``nb`` (changed in place) for reading; see the comment above."""
    import nbformat

    nb.cells = [c for c in nb.cells if READER_CELL_TAG not in c.get("metadata", {}).get("tags", ())]
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        tags = list(cell.metadata.get("tags", ()))
        if ("injected-parameters" in tags or "parameters" in tags or _is_bootstrap(cell)) and REMOVE_CELL not in tags:
            tags.append(REMOVE_CELL)
        elif not any(t in tags for t in _FOLDED):
            tags.append(HIDE_INPUT)
        cell.metadata["tags"] = tags
    title = next((i for i, c in enumerate(nb.cells)
                  if c.cell_type == "markdown" and c.source.lstrip().startswith("# ")), -1)
    if title >= 0:  # the block goes right under the heading: split the heading off the title cell's prose
        heading, _, rest = nb.cells[title].source.lstrip().partition("\n")
        if rest.strip():
            nb.cells[title].source = heading
            nb.cells.insert(title + 1, nbformat.v4.new_markdown_cell(rest.strip("\n")))
    block = nbformat.v4.new_markdown_cell(reader_block(stem, table, used))
    block.metadata["tags"] = [READER_CELL_TAG]
    nb.cells.insert(title + 1, block)
