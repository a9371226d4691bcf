"""No import cycles between bisector's modules (issue 11): the layers import downwards only.

Top-level imports only; a function-level import is a deliberate lazy import (the CLI
loads a command's module when it runs), and those must not hide a cycle either, so
they are counted too, except the CLI's lazy command imports, which nothing imports back.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

from bisector.backends.registry import BACKENDS

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


def _graph(*, entry_points: bool = False) -> dict[str, set[str]]:
    """Each module's imports of bisector's modules; `entry_points`: the CLI and the
    `__main__` modules too (they import every command, and nothing imports them back)."""
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        if not entry_points and (
            name in ("bisector.cli", "bisector.entry") or name.endswith("__main__")
        ):
            continue
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


# -- the map (docs/architecture.md draws it; test_the_map_is_the_architecture_table) ------

# Every module of the package is in exactly one part: the part whose most specific entry
# names it (a package takes its modules, `bisector.search.base` is taken from `search/`).
# The package's own __init__, `bisector`, names only itself.
PARTS: dict[str, tuple[str, ...]] = {
    "entry": (
        "bisector.__main__",
        "bisector.entry",
        "bisector.cli",
        "bisector.clihelp",
        "bisector.commands",
    ),
    "orchestration": ("bisector.bisection", "bisector.nightly"),
    "ui": ("bisector.ui",),
    "search": ("bisector.search",),
    "measurement": ("bisector.measure",),
    "search vocabulary": (
        "bisector.search.base",
        "bisector.search.decide",
        "bisector.search.progress",
    ),
    "settings": ("bisector.settings",),
    "backends": ("bisector.backends", "bisector.sim"),
    "evidence": (
        "bisector.logs",
        "bisector.metrics",
        "bisector.ci",
        "bisector.report",
        "bisector.metric_registry",
        "bisector.upload",
    ),
    "foundations": (
        "bisector",
        "bisector.collected",
        "bisector.config",
        "bisector.cost",
        "bisector.credentials",
        "bisector.dirs",
        "bisector.durations",
        "bisector.errors",
        "bisector.exitcodes",
        "bisector.gitrepo",
        "bisector.inputs",
        "bisector.locking",
        "bisector.numbers",
        "bisector.orphans",
        "bisector.proc",
        "bisector.proclog",
        "bisector.run_index",
        "bisector.runfiles",
        "bisector.signals",
    ),
    "twin": ("bisector.twin",),
}
ROOT = "bisector"

_BELOW_SETTINGS = ("backends", "evidence", "foundations")
# What each part may import besides itself; nothing else, and nothing imports the twin.
# The GCE twin stands beside the entry: it imports the gce backend (to rehearse it) and
# the sim (the log its master serves); nothing in the product imports it, so no run
# loads it. `doctor --rehearse` reaches it only through the registry's "module:function"
# string.
MAY_IMPORT: dict[str, tuple[str, ...]] = {
    "entry": ("orchestration", "ui", "search", "measurement", "search vocabulary", "settings",
              *_BELOW_SETTINGS),
    "orchestration": ("ui", "search", "measurement", "search vocabulary", "settings",
                      *_BELOW_SETTINGS),
    "ui": ("search vocabulary", "evidence", "foundations"),
    "search": ("measurement", "search vocabulary", "settings", *_BELOW_SETTINGS),
    "measurement": ("search vocabulary", "settings", *_BELOW_SETTINGS),
    "search vocabulary": ("evidence", "foundations"),
    "settings": _BELOW_SETTINGS,
    "backends": ("evidence", "foundations"),
    "evidence": ("foundations",),
    "foundations": (),
    "twin": ("settings", *_BELOW_SETTINGS),
}  # fmt: skip
TWIN = PARTS["twin"]


def _within(module: str, parts: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in parts)


def _part_of(module: str) -> str | None:
    """The part whose most specific entry names `module`; None: it is on no part."""
    named = [
        (len(entry), part)
        for part, entries in PARTS.items()
        for entry in entries
        if module == entry or (entry != ROOT and module.startswith(entry + "."))
    ]
    return max(named)[1] if named else None


def _layer_breaches(graph: dict[str, set[str]]) -> list[str]:
    """`module is on no part of the map` for each module the map does not name, and
    `module imports target` for every import the map does not allow."""
    breaches = []
    for module, imported in sorted(graph.items()):
        part = _part_of(module)
        if part is None:
            breaches.append(f"{module} is on no part of the map")
            continue
        allowed = (part, *MAY_IMPORT[part])
        breaches += [
            f"{module} imports {target}"
            for target in sorted(imported)
            if _part_of(target) not in allowed
        ]
    return breaches


def test_each_part_imports_only_what_the_map_allows() -> None:
    """The CLI and the `__main__`s too: the entry may import every part but the twin."""
    assert _layer_breaches(_graph(entry_points=True)) == []


def test_every_module_is_on_the_map_and_every_entry_is_a_module() -> None:
    modules = set(_graph(entry_points=True))
    assert sorted(m for m in modules if _part_of(m) is None) == []
    entries = [entry for part in PARTS.values() for entry in part]
    assert len(entries) == len(set(entries))  # one entry, one part
    assert sorted(e for e in entries if not any(_within(m, (e,)) for m in modules)) == []
    assert set(MAY_IMPORT) == set(PARTS)
    assert all(set(below) <= set(PARTS) for below in MAY_IMPORT.values())
    assert not any("twin" in below for below in MAY_IMPORT.values())


def _doc_entry(text: str) -> str:
    """`logs/` -> bisector.logs, `search/base.py` -> bisector.search.base, `__init__.py`
    -> bisector."""
    path = text.removesuffix("/").removesuffix(".py")
    return ROOT if path == "__init__" else f"{ROOT}.{path.replace('/', '.')}"


def _doc_table(markdown: str) -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    """The rows of the table `| part | modules | may import |`: part -> (its entries,
    the parts it may import)."""
    rows: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}
    lines = iter(markdown.splitlines())
    for line in lines:
        if line.replace(" ", "") == "|part|modules|mayimport|":
            next(lines)  # |---|---|---|
            break
    for line in lines:
        if not line.startswith("|"):
            break
        part, modules, below = (cell.strip() for cell in line.strip("|").split("|"))
        entries = tuple(_doc_entry(m) for m in re.findall(r"`([^`]+)`", modules))
        parts = tuple(p.strip() for p in below.split(",") if p.strip() not in ("", "nothing"))
        rows[part] = (entries, parts)
    return rows


def test_the_map_is_the_architecture_table() -> None:
    """docs/architecture.md's table is this map: the same parts, modules and imports."""
    doc = (PACKAGE.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    table = _doc_table(doc)
    assert {p: set(e) for p, (e, _) in table.items()} == {p: set(e) for p, e in PARTS.items()}
    assert {p: set(b) for p, (_, b) in table.items()} == {p: set(b) for p, b in MAY_IMPORT.items()}


def test_the_doc_table_reader_reads_a_row() -> None:
    doc = (
        "intro\n\n| part | modules | may import |\n|---|---|---|\n"
        "| ui | `ui/` `search/progress.py` | search vocabulary, foundations |\n"
        "| foundations | `__init__.py` `errors.py` | nothing |\n\nafter\n"
    )
    assert _doc_table(doc) == {
        "ui": (("bisector.ui", "bisector.search.progress"), ("search vocabulary", "foundations")),
        "foundations": (("bisector", "bisector.errors"), ()),
    }


def test_nothing_in_the_product_imports_the_twin() -> None:
    """Not the CLI nor a `__main__` either."""
    graph = _graph(entry_points=True)
    assert any(_within(m, TWIN) for m in graph)  # the twin is where this test looks
    importers = [
        f"{module} imports {target}"
        for module, imported in sorted(graph.items())
        if not _within(module, TWIN)
        for target in sorted(imported)
        if _within(target, TWIN)
    ]
    assert importers == []


def test_doctor_reaches_the_twins_rehearsal_through_the_registry_string() -> None:
    drivers = [b.rehearsal for b in BACKENDS.values() if b.rehearsal is not None]
    assert drivers == ["bisector.twin.doctor_rehearsal:run_rehearsal"]
    for driver in drivers:
        module, function = driver.split(":")
        assert callable(getattr(importlib.import_module(module), function))


def test_the_layer_check_finds_the_product_importing_the_twin() -> None:
    graph = {
        "bisector.twin.rehearse": {"bisector.backends.gce.backend", "bisector.sim"},
        "bisector.twin.doctor_rehearsal": {"bisector.commands.doctor"},
        "bisector.backends.gce.backend": {"bisector.twin.state"},
        "bisector.proc": {"bisector.twin"},
    }
    assert _layer_breaches(graph) == [
        "bisector.backends.gce.backend imports bisector.twin.state",
        "bisector.proc imports bisector.twin",
        "bisector.twin.doctor_rehearsal imports bisector.commands.doctor",
    ]


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


def test_the_layer_check_finds_a_module_on_no_part_and_a_foundation_reaching_up() -> None:
    graph = {
        "bisector.newthing": {"bisector.errors"},  # on no part: whatever it imports
        "bisector.errors": {"bisector.newthing"},  # a foundation importing it
        "bisector.cost": {"bisector.backends.registry"},
        "bisector.metrics.readings": {"bisector.backends.collected", "bisector.collected"},
        "bisector.report.model": {"bisector.report.adaptation", "bisector.search.base"},
        "bisector": {"bisector.errors"},  # the package's __init__ is a foundation
        "bisector.measure.evaluator": {"bisector.ui.progress_lines", "bisector.settings"},
        "bisector.search.base": {"bisector.search.plain", "bisector.report.model"},
        "bisector.ui.progress_lines": {"bisector.search.progress", "bisector.measure.early"},
        "bisector.bisection.start": {"bisector.ui.progress_lines", "bisector.twin"},
        "bisector.twin.rehearse": {"bisector.settings", "bisector.measure.evaluator"},
    }
    assert _layer_breaches(graph) == [
        "bisector.bisection.start imports bisector.twin",
        "bisector.cost imports bisector.backends.registry",
        "bisector.errors imports bisector.newthing",
        "bisector.measure.evaluator imports bisector.ui.progress_lines",
        "bisector.metrics.readings imports bisector.backends.collected",
        "bisector.newthing is on no part of the map",
        "bisector.report.model imports bisector.search.base",
        "bisector.search.base imports bisector.search.plain",
        "bisector.twin.rehearse imports bisector.measure.evaluator",
        "bisector.ui.progress_lines imports bisector.measure.early",
    ]


# -- the one door to programs (bisector/proc.py) -------------------------------------------

DOOR = "bisector.proc"
_OS_STARTS = ("system", "popen", "exec", "spawn", "posix_spawn")


def _programs_started(source: str) -> list[str]:
    """What in `source` starts a program: an import of subprocess, an os.system/popen/
    exec*/spawn* call."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.split(".")[0] == "subprocess"]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("subprocess"):
            found.append(f"from {node.module}")
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "os"
            and node.attr.startswith(_OS_STARTS)
        ):
            found.append(f"os.{node.attr}")
    return found


def test_only_the_process_door_starts_programs() -> None:
    """The twin's shims too: their real make and git go through `proc.run`."""
    starts = {
        _module_name(path): found
        for path in sorted(PACKAGE.rglob("*.py"))
        if (found := _programs_started(path.read_text(encoding="utf-8")))
    }
    assert set(starts) == {DOOR}, starts


def test_the_door_check_finds_a_program_started_beside_it() -> None:
    source = "import os, subprocess\nfrom subprocess import run\nos.execvp('make', [])\n"
    assert _programs_started(source) == ["subprocess", "from subprocess", "os.execvp"]
    assert _programs_started("import os\nos.environ.get('PATH')\n") == []


# -- the tests: a test module imports tests/helpers/, never another test module ------------

TESTS = PACKAGE.parent / "tests"
HELPERS = "tests.helpers"


def _test_imports(module: str, source: str) -> list[str]:
    """`module imports target` for each import in `source` (function-level ones too) of a
    module of tests/ that is not tests/helpers/; relative imports resolved."""
    package = module.rsplit(".", 1)[0]
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            # from a package (`from tests import helpers`, `from . import x`): its modules
            package_dir = (TESTS.parent / base.replace(".", "/")).is_dir()
            targets = [f"{base}.{a.name}" for a in node.names] if package_dir else [base]
        else:
            continue
        found += [
            f"{module} imports {target}"
            for target in targets
            if _within(target, ("tests",)) and not _within(target, (HELPERS,))
        ]
    return found


def test_no_test_module_imports_another() -> None:
    """What two test modules share lives in tests/helpers/ (its modules may import each
    other, never a test module either)."""
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        rel = path.relative_to(TESTS.parent).with_suffix("")
        module = ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
        found += _test_imports(module, path.read_text(encoding="utf-8"))
    assert sorted(found) == []


def test_the_test_import_check_finds_a_test_importing_a_test() -> None:
    source = (
        "from tests.helpers.repo import build_repo\n"
        "from tests import helpers\n"
        "from tests.measure.test_early import T0\n"
        "from .sample import sample_report\n"
        "from . import test_links\n"
        "import tests.logs.lines\n"
        "def later() -> None:\n"
        "    from tests.sim.test_model import MAX_OVERLAP_S\n"
    )
    assert _test_imports("tests.report.test_html", source) == [
        "tests.report.test_html imports tests.measure.test_early",
        "tests.report.test_html imports tests.report.sample",
        "tests.report.test_html imports tests.report.test_links",
        "tests.report.test_html imports tests.logs.lines",
        "tests.report.test_html imports tests.sim.test_model",
    ]
    assert _test_imports("tests.helpers.x", "from tests.report.test_html import y\n") == [
        "tests.helpers.x imports tests.report.test_html"
    ]


# -- the tests' names: a test file is named after what it tests (docs/testing.md) ----------

# Folders named for a behaviour that crosses modules, and files at the top named for
# something outside the package.
BEHAVIOURS = ("faults", "contract", "docs")
OUTSIDE_THE_PACKAGE = (
    "test_import_graph.py",  # the whole package: its map, its door, its tests' imports
    "test_dockerfile.py",  # the Dockerfile at the top of the repository
    "test_comments.py",  # every module's comments: why, not when
)


def _tested(test: Path) -> str | None:
    """What `tests/<path>/test_<name>.py` is named after, where <name> is <m> or
    <m>_<aspect>: the module or package `bisector/<path>/<m>`, the script `scripts/<m>.py`
    (tests/scripts/), or the package `bisector/<path>` itself; None: nothing."""
    rel = test.relative_to(TESTS)
    name = rel.stem.removeprefix("test_")
    root = PACKAGE.parent
    if rel.parts[0] == "scripts":
        things = {p.stem: p for p in (root / "scripts").glob("*.py")}
    else:
        folder = PACKAGE.joinpath(*rel.parts[:-1])
        things = {p.stem: p for p in folder.glob("*.py") if not p.stem.startswith("__")}
        things |= {p.parent.name: p.parent for p in folder.glob("*/__init__.py")}
        if folder != PACKAGE and folder.is_dir():
            things.setdefault(folder.name, folder)
    found = [m for m in things if name == m or name.startswith(m + "_")]
    return things[max(found, key=len)].relative_to(root).as_posix() if found else None


def test_every_test_file_is_named_after_what_it_tests() -> None:
    unnamed = [
        str(path.relative_to(TESTS))
        for path in sorted(TESTS.rglob("test_*.py"))
        if path.relative_to(TESTS).parts[0] not in (*BEHAVIOURS, "helpers")
        and path.relative_to(TESTS).as_posix() not in OUTSIDE_THE_PACKAGE
        and _tested(path) is None
    ]
    assert unnamed == []


def test_a_test_file_is_named_after_a_module_a_script_or_its_package() -> None:
    assert _tested(TESTS / "bisection" / "test_pipeline_fold_rounds.py") == (
        "bisector/bisection/pipeline.py"
    )
    assert _tested(TESTS / "backends" / "procs" / "test_builds_cache.py") == (
        "bisector/backends/procs/builds.py"  # not build.py: `build_` is no prefix of it
    )
    assert _tested(TESTS / "test_cost_eta.py") == "bisector/cost.py"
    assert _tested(TESTS / "test_twin.py") == "bisector/twin"
    assert _tested(TESTS / "scripts" / "test_bench_bisect.py") == "scripts/bench_bisect.py"
    assert _tested(TESTS / "twin" / "test_twin.py") == "bisector/twin"
    assert _tested(TESTS / "search" / "test_runner.py") is None  # no search/runner.py
    assert _tested(TESTS / "bisection" / "test_cost.py") is None  # cost.py is at the top
    assert _tested(TESTS / "docs" / "test_docs.py") is None  # there is no bisector/docs
