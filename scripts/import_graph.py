"""The import graph of ``src/funes``: as data for tests/test_architecture.py, as a picture for the docs.

Every ``import`` and ``from ... import`` counts, also inside functions and
``TYPE_CHECKING`` blocks (a lazy import still ties two modules together).

    python scripts/import_graph.py            # rewrite docs/images/architecture.svg
    python scripts/import_graph.py --check    # exit 1 when the picture is out of date

The picture has one box per part (a top-level package or module of ``funes``),
innermost at the bottom; an arrow is "imports" (hover: how many module imports it
stands for), left out where a longer path implies it. Parts on one row never import
each other.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from html import escape
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "funes"
PICTURE = ROOT / "docs" / "images" / "architecture.svg"


def module_name(path: Path, package: Path = PACKAGE) -> str:
    """``src/funes/memory/core.py`` -> ``funes.memory.core``; a package's ``__init__`` is the package."""
    name = ".".join(("funes", *path.relative_to(package).with_suffix("").parts))
    return name.removesuffix(".__init__")


def files(package: Path = PACKAGE) -> dict[str, Path]:
    """Every module of the package by its dotted name."""
    return {module_name(p, package): p for p in sorted(package.rglob("*.py"))}


def imports(path: Path, name: str, modules: set[str]) -> Iterator[tuple[str, str]]:
    """(module, imported name) for each module of the package that ``path`` imports; '' for a whole module."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = package
            for _ in range(node.level - 1):
                base = base.rsplit(".", 1)[0]
            target = (f"{base}.{node.module}" if node.module else base) if node.level else node.module or ""
            for alias in node.names:
                # `from . import x` imports module x when there is one, else a name defined in the package.
                if f"{target}.{alias.name}" in modules:
                    yield f"{target}.{alias.name}", ""
                elif target in modules and target != name:
                    yield target, alias.name
        elif isinstance(node, ast.Import):
            yield from ((alias.name, "") for alias in node.names if alias.name in modules and alias.name != name)


def module_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Each module and the modules of the package it imports."""
    found = files(package)
    modules = set(found)
    return {name: {m for m, _ in imports(path, name, modules)} for name, path in found.items()}


def part(module: str) -> str:
    """The part a module belongs to: ``funes.memory.core`` -> ``memory``; the root (and ``__main__``) is ``funes``."""
    pieces = module.split(".")
    return pieces[1] if len(pieces) > 1 and pieces[1] != "__main__" else "funes"


def part_graph(graph: dict[str, set[str]]) -> dict[str, dict[str, int]]:
    """Part -> imported part -> how many module imports cross between them (the root package left out)."""
    out: dict[str, dict[str, int]] = {part(m): {} for m in graph if part(m) != "funes"}
    for name, targets in graph.items():
        src = part(name)
        for target in targets:
            dst = part(target)
            if src != dst and "funes" not in (src, dst):
                out[src][dst] = out[src].get(dst, 0) + 1
    return out


def reduced(parts: dict[str, dict[str, int]]) -> dict[str, set[str]]:
    """The imports between parts less those implied by others (a -> c goes when a -> b -> c exists)."""

    def reach(start: str) -> set[str]:
        seen: set[str] = set()
        todo = [start]
        while todo:
            for nxt in parts[todo.pop()]:
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    return {
        p: {q for q in targets if not any(q in reach(r) for r in targets if r != q)} for p, targets in parts.items()
    }


def rows(parts: dict[str, dict[str, int]]) -> list[list[str]]:
    """The parts in rows, innermost first: a part sits one row above the highest part it imports."""
    level: dict[str, int] = {}

    def depth(p: str) -> int:
        if p not in level:
            level[p] = 1 + max((depth(q) for q in parts[p]), default=-1)
        return level[p]

    for p in parts:
        depth(p)
    out: list[list[str]] = [[] for _ in range(max(level.values()) + 1)]
    for p in sorted(parts):
        out[level[p]].append(p)
    return out


BOX_W, BOX_H, GAP_X, GAP_Y, MARGIN, LABELS = 170, 46, 40, 74, 24, 130

#: The layer each part belongs to (docs/architecture.md), written beside its row.
LAYERS = {
    "interfaces": "shells",
    "integrations": "shells",
    "service": "facade",
    "agents": "features",
    "curation": "features",
    "conversations": "features",
    "knowledge": "features",
    "memory": "core",
    "store": "protocols",
    "providers": "protocols",
    "models": "domain",
    "errors": "domain",
}


def svg(graph: dict[str, set[str]]) -> str:
    """The picture: boxes by row (innermost at the bottom), an arrow per import not implied by others."""
    parts = part_graph(graph)
    layout = rows(parts)
    sizes = {p: sum(1 for m in graph if part(m) == p) for p in parts}
    boxes = max(len(r) for r in layout) * (BOX_W + GAP_X) - GAP_X
    width = boxes + 2 * MARGIN + LABELS
    height = len(layout) * (BOX_H + GAP_Y) - GAP_Y + 2 * MARGIN + 20
    at: dict[str, tuple[float, float]] = {}
    labels: list[str] = []
    for i, row in enumerate(layout):
        y = height - MARGIN - 20 - (i + 1) * BOX_H - i * GAP_Y
        span = len(row) * (BOX_W + GAP_X) - GAP_X
        for j, p in enumerate(row):
            at[p] = (MARGIN + (boxes - span) / 2 + j * (BOX_W + GAP_X), y)
        layer = " / ".join(dict.fromkeys(LAYERS.get(p, "?") for p in row))
        labels.append(
            f'<text x="{MARGIN + boxes + 24}" y="{y + BOX_H / 2 + 5:.0f}" font-size="13" font-style="italic" '
            f'fill="#7a8290">{escape(layer)}</text>'
        )
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="Helvetica, Arial, sans-serif">',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#8a8f98"/></marker></defs>',
        f'<rect width="{width}" height="{height}" fill="white"/>',
    ]
    arrows = reduced(parts)
    for src in sorted(parts):
        for dst in sorted(arrows[src]):
            count = parts[src][dst]
            (x1, y1), (x2, y2) = at[src], at[dst]
            a, b = (x1 + BOX_W / 2, y1 + BOX_H), (x2 + BOX_W / 2, y2)
            out.append(
                f'<line x1="{a[0]:.0f}" y1="{a[1]:.0f}" x2="{b[0]:.0f}" y2="{b[1]:.0f}" stroke="#b8bdc6" '
                f'stroke-width="1.2" marker-end="url(#arrow)"><title>{src} imports {dst}: {count}</title></line>'
            )
    for p, (x, y) in sorted(at.items()):
        kind = "module" if sizes[p] == 1 and not (PACKAGE / p).is_dir() else f"{sizes[p]} modules"
        out += [
            f'<rect x="{x:.0f}" y="{y:.0f}" width="{BOX_W}" height="{BOX_H}" rx="7" fill="#eef3fb" stroke="#4a6fa5"/>',
            f'<text x="{x + BOX_W / 2:.0f}" y="{y + 20:.0f}" text-anchor="middle" font-size="15" '
            f'font-weight="bold" fill="#1d2b3a">{escape(p)}</text>',
            f'<text x="{x + BOX_W / 2:.0f}" y="{y + 37:.0f}" text-anchor="middle" font-size="11" '
            f'fill="#56606b">{kind}</text>',
        ]
    out += labels
    out.append(
        f'<text x="{MARGIN}" y="{height - MARGIN + 6}" font-size="11" fill="#56606b">'
        "Arrow: imports (implied ones left out). Drawn by scripts/import_graph.py.</text>"
    )
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main(argv: list[str]) -> int:
    picture = svg(module_graph())
    if "--check" in argv:
        if not PICTURE.exists() or PICTURE.read_text(encoding="utf-8") != picture:
            print(f"{PICTURE.relative_to(ROOT)} is out of date: run python scripts/import_graph.py", file=sys.stderr)
            return 1
        return 0
    PICTURE.parent.mkdir(parents=True, exist_ok=True)
    PICTURE.write_text(picture, encoding="utf-8")
    print(f"wrote {PICTURE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
