"""The package's shape: one package per part, imports that only point inward, no cycles.

A small AST walk over ``src/funes``: every ``import``/``from ... import`` (also
inside functions and ``TYPE_CHECKING`` blocks, since a lazy import still ties
the modules together) is an edge between two modules of the package. The
packages are the parts of docs/architecture.md; :data:`MAY_IMPORT` says which
part may import which, and each package's ``__init__`` docstring says the same
in its ``May import:`` line.
"""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path
from types import ModuleType

import funes

PACKAGE = Path(funes.__file__).parent

_DOMAIN = {"errors", "models"}
_BELOW_FEATURES = _DOMAIN | {"store", "providers"}
_FEATURES = {"memory", "knowledge", "conversations", "curation", "agents"}
_INSIDE = _BELOW_FEATURES | _FEATURES | {"service"}

#: The parts, innermost first, and what each may import (its own modules always).
MAY_IMPORT: dict[str, set[str]] = {
    "errors": set(),
    "models": {"errors"},
    "store": _DOMAIN,
    "providers": _DOMAIN,
    "memory": _BELOW_FEATURES,
    "knowledge": _DOMAIN | {"store", "memory"},
    "conversations": _DOMAIN | {"store", "memory", "knowledge"},
    "curation": _BELOW_FEATURES | {"memory", "knowledge", "conversations"},
    "agents": _BELOW_FEATURES | {"memory", "knowledge", "conversations"},
    "service": _BELOW_FEATURES | _FEATURES,
    # The shells: the facade and what it hands out (and ``funes`` itself: ``funes.open``); never each other.
    "interfaces": _INSIDE | {"funes"},
    "integrations": _INSIDE | {"funes"},
}


def _load_import_graph() -> ModuleType:
    """scripts/import_graph.py: the one walker of the import graph (the docs' picture is drawn from it too)."""
    path = Path(__file__).resolve().parents[1] / "scripts" / "import_graph.py"
    spec = importlib.util.spec_from_file_location("import_graph", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


import_graph = _load_import_graph()
_part = import_graph.part


def _files() -> dict[str, Path]:
    return import_graph.files(PACKAGE)


def _import_nodes(path: Path, name: str, modules: set[str]) -> list[tuple[str, str]]:
    return list(import_graph.imports(path, name, modules))


def _graph() -> dict[str, set[str]]:
    return import_graph.module_graph(PACKAGE)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                group.append(top)
                if top == node:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return out


def _reaches(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        node = todo.pop()
        for nxt in graph[node]:
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def test_the_import_graph_has_no_cycles() -> None:
    graph = _graph()
    # The root package exports lazily (by name, through funes.models.lazy); nothing inside imports it.
    assert _cycles(graph) == []


def test_the_walk_sees_real_edges() -> None:
    graph = _graph()
    assert "funes.memory.core" in graph["funes.service"]
    assert "funes.store" in graph["funes.memory.core"]
    assert "funes.interfaces.cli.common" in graph["funes.interfaces.cli.records"]
    assert "funes.memory.core" in graph["funes.knowledge.documents"]


def test_the_tree_has_one_entry_per_part() -> None:
    """``ls src/funes`` names the parts: the domain, the facade, and one package per part."""
    entries = {p.name for p in PACKAGE.iterdir() if p.name not in {"__init__.py", "__main__.py", "py.typed"}}
    entries.discard("__pycache__")
    parts = {name.removesuffix(".py") for name in entries}
    assert parts == set(MAY_IMPORT), "a new top-level module or package needs a place in MAY_IMPORT and the docs"
    assert len(entries) <= 12


def test_each_part_imports_only_the_parts_it_may() -> None:
    graph = _graph()
    wrong = []
    for name, targets in graph.items():
        part = _part(name)
        if part == "funes":
            continue  # the public API: lazy exports of every part
        allowed = MAY_IMPORT[part] | {part}
        wrong += [f"{name} -> {t}" for t in sorted(targets) if _part(t) not in allowed]
    assert wrong == []


def test_nothing_inside_imports_the_root_package() -> None:
    graph = _graph()
    inside = [name for name, targets in graph.items() if "funes" in targets and _part(name) in _INSIDE]
    assert inside == []


def test_each_package_docstring_says_what_it_holds_and_what_it_may_import() -> None:
    for part, allowed in MAY_IMPORT.items():
        init = PACKAGE / part / "__init__.py"
        if not init.exists():
            continue  # a module of its own (errors, service): its rule is in MAY_IMPORT
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
        what = doc.partition("\n\n")[0]
        assert what.strip(), f"funes.{part} says nothing about what it holds"
        match = re.search(r"May import:(.*?)(?:\n\n|$)", doc, re.S)
        assert match, f"funes.{part}'s docstring has no 'May import:' line"
        named = set(re.findall(r"``funes\.(\w+)``", match.group(1)))
        rule = sorted(allowed - {"funes"})
        assert named == set(rule), f"funes.{part}'s docstring names {sorted(named)}, the rule {rule}"


def test_private_helpers_stay_inside_their_package() -> None:
    """A name with a leading underscore is imported only from inside its own part."""
    files = _files()
    modules = set(files)
    leaks = [
        f"{name} imports {target}.{imported}"
        for name, path in files.items()
        for target, imported in _import_nodes(path, name, modules)
        if imported.startswith("_") and not imported.startswith("__") and _part(target) != _part(name)
    ]
    assert leaks == []


def test_features_and_the_core_never_reach_the_facade_or_a_shell() -> None:
    graph = _graph()
    for name in (n for n in graph if _part(n) in _FEATURES):
        reached = _reaches(graph, name)
        assert "funes.service" not in reached, f"{name} imports the facade"
        assert not {r for r in reached if _part(r) in {"interfaces", "integrations"}}, f"{name} imports a shell"


def test_cli_command_modules_never_import_the_entry_module() -> None:
    graph = _graph()
    for name, targets in graph.items():
        if name.startswith("funes.interfaces.cli."):
            assert "funes.interfaces.cli" not in targets, f"{name} imports the CLI entry module"


def test_the_domain_model_depends_on_nothing() -> None:
    graph = _graph()
    for name, targets in graph.items():
        if _part(name) == "models":
            assert {t for t in targets if _part(t) != "models"} <= {"funes.errors"}, name
    assert graph["funes.errors"] == set()


def test_no_module_is_over_800_lines() -> None:
    long = {name: n for name, path in _files().items() if (n := len(path.read_text().splitlines())) > 800}
    assert long == {}


def test_framework_adapters_are_shells_nothing_inside_imports() -> None:
    graph = _graph()
    adapters = {n for n in graph if n.startswith("funes.integrations")}
    assert {"funes.integrations.langgraph", "funes.integrations.openai_agents"} <= adapters
    for name, targets in graph.items():
        if name not in adapters:
            assert not targets & adapters, f"{name} imports a framework adapter"
    for name in adapters:
        siblings = {t for t in graph[name] if t in adapters and t != "funes.integrations"}
        assert not siblings, f"{name} imports another adapter"


def test_the_architecture_picture_is_drawn_from_the_code() -> None:
    """docs/images/architecture.svg is what scripts/import_graph.py draws now (rerun it after moving code)."""
    picture = import_graph.PICTURE.read_text(encoding="utf-8")
    assert picture == import_graph.svg(_graph()), "run python scripts/import_graph.py"
