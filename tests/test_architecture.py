"""The package's shape: no import cycles, features never import the facade, shells stay outside.

A small AST walk over ``src/funes``: every ``import``/``from ... import`` (also
inside functions and ``TYPE_CHECKING`` blocks, since a lazy import still ties
the modules together) is an edge between two modules of the package.
"""

from __future__ import annotations

import ast
from pathlib import Path

import funes

PACKAGE = Path(funes.__file__).parent


def _module_name(path: Path) -> str:
    parts = ("funes", *path.relative_to(PACKAGE).with_suffix("").parts)
    name = ".".join(parts)
    return name.removesuffix(".__init__")


def _imports(path: Path, name: str, modules: set[str]) -> set[str]:
    """The package modules ``path`` imports (a package's ``__init__`` counts as its own module)."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package
                for _ in range(node.level - 1):
                    base = base.rsplit(".", 1)[0]
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            # `from . import x` imports module x when there is one, else a name defined in the package.
            candidates = [f"{target}.{a.name}" if f"{target}.{a.name}" in modules else target for a in node.names]
        elif isinstance(node, ast.Import):
            candidates = [alias.name for alias in node.names]
        else:
            continue
        found.update(c for c in candidates if c in modules and c != name)
    return found


def _graph() -> dict[str, set[str]]:
    files = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    modules = set(files)
    return {name: _imports(path, name, modules) for name, path in files.items()}


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
    # The package __init__ re-exports lazily (importlib by name), so it adds no edges either.
    assert _cycles(graph) == []


def test_the_walk_sees_real_edges() -> None:
    graph = _graph()
    assert "funes.core" in graph["funes.service"]
    assert "funes.store" in graph["funes.core"]
    assert "funes.interfaces.cli.common" in graph["funes.interfaces.cli.records"]


def test_features_and_the_core_never_reach_the_facade_or_a_shell() -> None:
    graph = _graph()
    inner = ["funes.core", "funes.documents", "funes.sessions", "funes.tools", "funes.transfer", "funes.jobs"]
    for name in (n for n in inner if n in graph):
        reached = _reaches(graph, name)
        assert "funes.service" not in reached, f"{name} imports the facade"
        assert not {r for r in reached if r.startswith("funes.interfaces")}, f"{name} imports a shell"


def test_cli_command_modules_never_import_the_entry_module() -> None:
    graph = _graph()
    for name, targets in graph.items():
        if name.startswith("funes.interfaces.cli."):
            assert "funes.interfaces.cli" not in targets, f"{name} imports the CLI entry module"


def test_the_domain_model_depends_on_nothing() -> None:
    graph = _graph()
    assert graph["funes.models"] <= {"funes.errors"}
    assert graph["funes.errors"] == set()


def test_framework_adapters_are_shells_nothing_inside_imports() -> None:
    graph = _graph()
    adapters = {n for n in graph if n.startswith("funes.integrations")}
    assert {"funes.integrations.langgraph", "funes.integrations.openai_agents"} <= adapters
    for name, targets in graph.items():
        if name not in adapters:
            assert not targets & adapters, f"{name} imports a framework adapter"
    for name in adapters:
        assert not {t for t in graph[name] if t.startswith("funes.interfaces")}, f"{name} imports another shell"
        siblings = {t for t in graph[name] if t in adapters and t != "funes.integrations"}
        assert not siblings, f"{name} imports another adapter"
