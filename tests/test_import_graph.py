"""No import cycles between bisector's modules (issue 11): the layers import downwards only.

Top-level imports only; a function-level import is a deliberate lazy import (the CLI
loads a command's module when it runs), and those must not hide a cycle either, so
they are counted too, except the CLI's lazy command imports, which nothing imports back.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "bisector"


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.startswith("bisector"):
                found.add(node.module)
                found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("bisector"))
    return found


def _graph() -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        if name in ("bisector.cli", "bisector.entry") or name.endswith("__main__"):
            continue  # the entry point imports every command; nothing imports it back
        graph[name] = {m for m in _imports(path) if m in modules and m != name}
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            # A package's __init__ re-exporting its own modules is not a cycle.
            if node.startswith(nxt + ".") or nxt.startswith(node + "."):
                continue
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_no_import_cycles() -> None:
    cycle = _cycle(_graph())
    assert cycle is None, " -> ".join(cycle or [])


def test_the_graph_check_finds_a_cycle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


# -- the layers (docs/architecture.md draws them) -----------------------------------------

# What a part of the package may never import: each part sees only the parts below it.
ENTRY = ("bisector.cli", "bisector.entry", "bisector.commands")
ORCHESTRATION = ("bisector.bisection", "bisector.nightly")
STRATEGIES = ("bisector.search",)  # but its vocabulary, below: measure uses those
SEARCH_VOCABULARY = ("bisector.search.base", "bisector.search.decide", "bisector.search.progress")
MEASURE = ("bisector.measure",)
FORBIDDEN: dict[str, tuple[str, ...]] = {
    "bisector.backends": ENTRY + ORCHESTRATION + STRATEGIES + MEASURE,
    "bisector.sim": ENTRY + ORCHESTRATION + STRATEGIES + MEASURE,
    "bisector.logs": ENTRY + ORCHESTRATION + STRATEGIES + MEASURE,
    "bisector.metrics": ENTRY + ORCHESTRATION + STRATEGIES + MEASURE,
    "bisector.ci": ENTRY + ORCHESTRATION + STRATEGIES + MEASURE,
    "bisector.report": ENTRY + ORCHESTRATION + STRATEGIES + MEASURE,
    "bisector.measure": ENTRY + ORCHESTRATION + STRATEGIES,
    "bisector.search": ENTRY + ORCHESTRATION,
    "bisector.bisection": ENTRY,
    "bisector.nightly": ENTRY,
}


# Measurement speaks the searches' vocabulary (Job, Decision, Progress), not their strategies.
ALLOWED: dict[str, tuple[str, ...]] = {"bisector.measure": SEARCH_VOCABULARY}


def _within(module: str, parts: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in parts)


def _layer_breaches(graph: dict[str, set[str]]) -> list[str]:
    """`module imports target` for every import that reaches above its layer; a module in
    no listed part (config.py, proc.py, ...) may import anything but the entry layer."""
    breaches = []
    for module, imported in sorted(graph.items()):
        part = next((p for p in FORBIDDEN if _within(module, (p,))), None)
        forbidden = FORBIDDEN[part] if part else () if _within(module, ENTRY) else ENTRY
        allowed = ALLOWED.get(part or "", ())
        breaches += [
            f"{module} imports {target}"
            for target in sorted(imported)
            if _within(target, forbidden) and not _within(target, allowed)
        ]
    return breaches


def test_each_part_imports_only_the_layers_below_it() -> None:
    assert _layer_breaches(_graph()) == []


def test_the_layer_check_finds_a_backend_importing_measurement() -> None:
    graph = {
        "bisector.backends.x": {"bisector.measure.evaluator"},
        "bisector.measure.evaluator": {"bisector.search.decide"},  # the vocabulary: allowed
        "bisector.measure.other": {"bisector.search.plain"},  # a strategy: not
        "bisector.search.plain": {"bisector.measure.evaluator"},
        "bisector.logs.y": {"bisector.commands.run"},
        "bisector.settings": {"bisector.backends.registry", "bisector.cli"},
        "bisector.commands.run": {"bisector.bisection.start"},
    }
    assert _layer_breaches(graph) == [
        "bisector.backends.x imports bisector.measure.evaluator",
        "bisector.logs.y imports bisector.commands.run",
        "bisector.measure.other imports bisector.search.plain",
        "bisector.settings imports bisector.cli",
    ]
