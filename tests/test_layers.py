"""The package's layers, read from the source with `ast` (nothing is imported): no import circle among sinkpaper
modules, no plotting or widget package below `sinkpaper/book/`, and every import going to its own floor of the
house or below (:data:`FLOORS`: foundation, attention, kernels and the metric, models and LMs, data, training,
reading stored runs, the paper's claims, analyses, the book, the entry points). Every import statement counts, at module level or inside a function (a lazy import that
closes a circle still means the two modules cannot be understood, or loaded, one without the other); only
`if TYPE_CHECKING:` blocks are skipped.
"""
from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "sinkpaper"


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or \
        (isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST):
    """Every Import / ImportFrom node, outside `if TYPE_CHECKING:` blocks."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node):
            stack.extend(node.orelse)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def import_graph(root: Path = ROOT) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """(edges between sinkpaper modules, the top-level names of every other package each module imports).

    `from X import name` is an edge to X.name when that is a module of the package, else to X. Importing a
    submodule does not count as importing its parent package's __init__ (so a package __init__ that
    re-exports its own submodules closes no circle); an explicit `from ..pkg import name` does.
    """
    files = {_module_name(p, root): p for p in sorted(root.rglob("*.py"))}
    packages = {name for name, p in files.items() if p.name == "__init__.py"}
    edges: dict[str, set[str]] = {name: set() for name in files}
    external: dict[str, set[str]] = {name: set() for name in files}
    top = root.name
    for name, path in files.items():
        base = name if name in packages else name.rpartition(".")[0]
        for node in _imports(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                if node.level:
                    parts = base.split(".")
                    prefix = ".".join(parts[:len(parts) - (node.level - 1)])
                    mod = f"{prefix}.{node.module}" if node.module else prefix
                else:
                    mod = node.module or ""
                targets = [f"{mod}.{a.name}" if f"{mod}.{a.name}" in files else mod for a in node.names]
            for t in targets:
                if t == top or t.startswith(top + "."):
                    while t not in files and "." in t:   # `import sinkpaper.x.y` of a name inside a module
                        t = t.rpartition(".")[0]
                    if t != name:
                        edges[name].add(t)
                else:
                    external[name].add(t.split(".")[0])
    return edges, external


@functools.lru_cache(maxsize=1)
def _package_graph() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    return import_graph(ROOT)


def find_cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each as a sorted list; a module
    that imports itself counts too."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:   # recursive: the package has a few hundred modules at most
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in edges.get(v, ()):
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return sorted(out)


def _within(name: str, layer: str) -> bool:
    return name == layer or name.startswith(layer + ".")


# ----------------------------------------------------------------------------------------------- the checks
def test_the_cycle_finder_finds_circles_and_only_circles():
    assert find_cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []
    assert find_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert find_cycles({"a": {"a"}}) == [["a"]]
    assert find_cycles({"p": {"p.x", "p.y"}, "p.x": {"p.y"}, "p.y": {"p.x"}}) == [["p.x", "p.y"]]


def test_the_graph_reads_relative_lazy_and_submodule_imports(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from .sub import b\n")                  # re-export: no circle
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "a.py").write_text("def f():\n    from . import b\n")       # lazy, a submodule by name
    (pkg / "sub" / "b.py").write_text("from ..sub.a import f\nimport numpy.linalg\n"
                                      "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .. import c\n")
    (pkg / "c.py").write_text("import pkg.sub.b\nimport altair as alt\n")
    edges, external = import_graph(pkg)
    assert edges["pkg"] == {"pkg.sub.b"} and edges["pkg.sub.a"] == {"pkg.sub.b"}
    assert edges["pkg.sub.b"] == {"pkg.sub.a"} and edges["pkg.c"] == {"pkg.sub.b"}
    assert external["pkg.sub.b"] == {"numpy", "typing"} and external["pkg.c"] == {"altair"}
    assert find_cycles(edges) == [["pkg.sub.a", "pkg.sub.b"]]


def test_no_import_circle_in_the_package():
    edges, _ = _package_graph()
    assert len(edges) > 50 and "sinkpaper.data.tokenfile" in edges["sinkpaper.data.build"]
    assert find_cycles(edges) == []


def test_no_plotting_or_widget_package_below_the_book():
    _, external = _package_graph()
    found = {name: sorted(pkgs & {"altair", "ipywidgets"}) for name, pkgs in external.items()
             if not (_within(name, "sinkpaper.book") or _within(name, "sinkpaper.site"))
             and pkgs & {"altair", "ipywidgets"}}
    assert found == {}
    assert "altair" in set().union(*(p for n, p in external.items() if _within(n, "sinkpaper.book")))


# The house's floors, lowest first: each top-level module or package of sinkpaper sits on one, and imports only go
# to its own floor or below (a circle inside a floor is caught by test_no_import_circle_in_the_package). A new
# module fails test_every_unit_has_a_floor until it is given one, so the architecture is decided, not grown.
FLOORS: tuple[tuple[str, frozenset[str]], ...] = tuple((what, frozenset(units)) for what, units in (
    # the package's __init__ holds only its version
    ("foundation: files, provenance, progress", {"__init__", "_version", "files", "fields", "resources", "devices",
                                                 "provenance", "argparsing", "progress"}),
    ("attention and what it records", {"attention", "trace", "hf_attention"}),
    ("the fused operators (and their old name) and the sink metric", {"fused", "kernels", "metrics"}),
    ("models, pretrained LMs and what is read from them", {"models", "lms", "circuits", "mechanism", "streaming"}),
    ("data and inputs", {"data", "probes", "propositions", "long_context"}),
    ("training", {"train"}),
    ("reading stored runs", {"results"}),
    ("the paper's claims and verdicts", {"paper"}),
    ("analyses the chapters and the CLI share", {"analysis"}),
    ("the book (the chapters' shelf)", {"book"}),
    ("the site builder", {"site"}),
    ("entry points", {"cli", "cli_results", "__main__"}),
))
FLOOR = {unit: i for i, (_, units) in enumerate(FLOORS) for unit in units}


def _unit(module: str) -> str:
    """sinkpaper.results.sweeps -> results; the package itself -> __init__."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def back_arrows(edges: dict[str, set[str]]) -> list[str]:
    """Every import that runs up to a higher floor, as "src (its floor) imports dst (its floor)"."""
    return sorted(f"{src} ({FLOORS[FLOOR[_unit(src)]][0]}) imports {dst} ({FLOORS[FLOOR[_unit(dst)]][0]})"
                  for src, dsts in edges.items() for dst in dsts
                  if _unit(src) in FLOOR and _unit(dst) in FLOOR and FLOOR[_unit(dst)] > FLOOR[_unit(src)])


def test_every_unit_has_a_floor():
    edges, _ = _package_graph()
    units = {_unit(m) for m in edges}
    assert not units - set(FLOOR), f"give these a floor in FLOORS: {sorted(units - set(FLOOR))}"


def test_the_back_arrow_check_catches_an_import_up_the_house():
    assert back_arrows({"sinkpaper.results.calibration": {"sinkpaper.paper"}, "sinkpaper.paper.lookup":
                        {"sinkpaper.results.sweeps"}}) == \
        ["sinkpaper.results.calibration (reading stored runs) imports sinkpaper.paper (the paper's claims and verdicts)"]


def test_no_import_runs_back_up_the_house():
    edges, _ = _package_graph()
    assert back_arrows(edges) == []


def test_only_the_entry_points_import_the_cli():
    edges, _ = _package_graph()
    assert sorted(src for src, dsts in edges.items() if "sinkpaper.cli" in dsts) == ["sinkpaper.__main__"]


# transformers' registries of attention (and mask) functions by name: whoever imports one can register a second
# override of a model's attention, with its own stack of state, that drifts from the first
_ATTENTION_REGISTRIES = {"AttentionInterface", "AttentionMaskInterface", "ALL_ATTENTION_FUNCTIONS",
                         "ALL_MASK_ATTENTION_FUNCTIONS"}


def attention_registry_users(root: Path = ROOT) -> list[str]:
    """The modules that import one of transformers' attention-function registries (any import statement)."""
    users = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        names = {a.name.rpartition(".")[2] for node in _imports(tree) for a in node.names}
        names |= {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
        if names & _ATTENTION_REGISTRIES:
            users.append(_module_name(path, root))
    return users


def test_one_module_overrides_the_pretrained_models_attention(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "a.py").write_text("def f():\n    from transformers import AttentionInterface\n")
    (pkg / "b.py").write_text("import transformers\nx = transformers.masking_utils.ALL_MASK_ATTENTION_FUNCTIONS\n")
    (pkg / "c.py").write_text("import transformers\n")
    assert attention_registry_users(pkg) == ["pkg.a", "pkg.b"]
    assert attention_registry_users() == ["sinkpaper.hf_attention"]


# what a module of the presentation layer may not call: the model's forward passes and the metric's measurement
# (those live in sinkpaper.analysis and below; the book only presents what they return)
_MEASURING_CALLS = {"trace", "measure", "measure_sink", "forward"}


def test_the_book_measures_nothing_itself():
    """Nothing under sinkpaper/book/ or sinkpaper/site/ runs a model or measures: no forward pass, trace or metric
    measurement called there, and torch imported only to ask whether CUDA is there (the profile check)."""
    found = []
    for path in sorted([*(ROOT / "book").rglob("*.py"), *(ROOT / "site").rglob("*.py")]):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                if name in _MEASURING_CALLS:
                    found.append(f"{path.name}:{node.lineno} calls {name}()")
        uses = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)
                and isinstance(n.value, ast.Name) and n.value.id == "torch"}
        if uses - {"cuda"}:
            found.append(f"{path.name} uses torch.{', torch.'.join(sorted(uses - {'cuda'}))}")
    assert found == [], "move the measurement into sinkpaper.analysis: " + "; ".join(found)


# A module a newcomer can read in one sitting: past this, split it by what it does (as paper/claim.py and
# paper/claims.py, or the book's shelf and the site builder).
MAX_MODULE_LINES = 600


def test_no_module_is_over_the_line_limit():
    long = {str(p.relative_to(ROOT.parent)): n for p in sorted(ROOT.rglob("*.py"))
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert long == {}, f"split these (over {MAX_MODULE_LINES} lines): {long}"
