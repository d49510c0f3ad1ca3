"""The house's floors: each top-level module or package of sinkpaper sits on one tier, and imports (module-level or
inside a function, read from the source with ast) only go to its own tier or below, with no circle anywhere. A new
module fails here until it is given a tier, so the architecture is decided, not grown."""
from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "sinkpaper"

# lowest first; what a tier is for
TIERS: tuple[tuple[str, set[str]], ...] = (
    ("foundation: files, fields, provenance", {"_version", "__version__", "files", "fields", "resources", "devices",
                                               "provenance", "argparsing", "progress"}),
    ("attention and what it records", {"attention", "trace", "hf_attention"}),
    ("fused kernels and the sink metric", {"kernels", "metrics"}),
    ("models, pretrained LMs and what they are probed with", {"models", "lms", "circuits", "mechanism", "streaming"}),
    ("data and inputs", {"data", "probes", "propositions", "long_context"}),
    ("training", {"train"}),
    ("reading stored runs", {"results"}),
    ("the paper's claims and verdicts", {"paper"}),
    ("analyses the chapters and the CLI share", {"analysis"}),
    ("the book", {"book"}),
    ("entry points", {"cli", "__main__", "__init__"}),
)
TIER = {unit: i for i, (_, units) in enumerate(TIERS) for unit in units}


def _unit(path: Path) -> str:
    return path.relative_to(PACKAGE).parts[0].removesuffix(".py")


def import_graph() -> dict[str, set[str]]:
    """{unit: the sinkpaper units it imports}, over every import statement of every module (vendored code aside)."""
    edges: dict[str, set[str]] = defaultdict(set)
    for f in PACKAGE.rglob("*.py"):
        if "vendor" in f.parts:
            continue
        unit, pkg = _unit(f), list(f.relative_to(PACKAGE).parts[:-1])
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = pkg[:len(pkg) - (node.level - 1)]
                    mod = base + (node.module.split(".") if node.module else [])
                    targets = [mod[0]] if mod else [a.name for a in node.names]
                elif node.module and node.module.startswith("sinkpaper."):
                    targets = [node.module.split(".")[1]]
                elif node.module == "sinkpaper":
                    targets = [a.name for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name.split(".")[1] for a in node.names if a.name.startswith("sinkpaper.")]
            edges[unit] |= {t for t in targets if t != unit}
    return edges


def test_every_module_has_a_tier():
    units = {_unit(f) for f in PACKAGE.rglob("*.py") if "vendor" not in f.parts}
    assert not units - set(TIER), f"give these a tier in TIERS: {sorted(units - set(TIER))}"


def test_imports_never_run_back_up_the_house():
    back = sorted(f"{u} ({TIERS[TIER[u]][0]}) imports {t} ({TIERS[TIER[t]][0]})"
                  for u, ts in import_graph().items() for t in ts if t in TIER and u in TIER and TIER[t] > TIER[u])
    assert not back, "imports that run back up the house:\n" + "\n".join(back)


def test_no_circle_between_units():
    graph = import_graph()
    state: dict[str, int] = {}
    circles = []

    def visit(u: str, path: list[str]) -> None:
        state[u] = 1
        for t in sorted(graph.get(u, ())):
            if state.get(t) == 1:
                circles.append(" -> ".join(path[path.index(t):] + [t]) if t in path else f"{u} -> {t}")
            elif t not in state:
                visit(t, path + [t])
        state[u] = 2

    for u in sorted(graph):
        if u not in state:
            visit(u, [u])
    assert not circles, f"import circles: {circles}"


def test_the_checks_catch_a_back_arrow_and_a_circle(monkeypatch):
    graph = {"results": {"paper"}, "paper": {"results"}, "metrics": {"files"}}
    monkeypatch.setattr(sys.modules[__name__], "import_graph", lambda: graph)
    try:
        test_imports_never_run_back_up_the_house()
    except AssertionError as e:
        assert "results (reading stored runs) imports paper" in str(e)
    else:
        raise AssertionError("a back arrow passed")
    try:
        test_no_circle_between_units()
    except AssertionError as e:
        assert "paper -> results -> paper" in str(e) or "results -> paper -> results" in str(e)
    else:
        raise AssertionError("a circle passed")
