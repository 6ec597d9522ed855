"""How every package of Funes exports its public names: on first use, so importing one never loads its siblings.

A package lists its public names once, as the imports of its ``if TYPE_CHECKING:``
block (``from .core import Core as Core``): type checkers read them there, and
:func:`lazy_exports` reads the same block to import each name when it is first
asked for. So ``from funes.memory import Core`` works, and ``funes --help``
never pays for numpy, SQLite or a model it does not use.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _declared(init_file: Path) -> dict[str, str]:
    """Name -> relative module, from the ``if TYPE_CHECKING:`` imports of a package's ``__init__``."""
    exports: dict[str, str] = {}
    for node in ast.parse(init_file.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for imp in node.body:
                if isinstance(imp, ast.ImportFrom) and imp.level == 1:
                    exports.update((a.asname or a.name, imp.module or "") for a in imp.names)
    return exports


def lazy_exports(package: str, init_file: str) -> tuple[Callable[[str], Any], list[str]]:
    """The package's ``__getattr__`` and ``__all__``: each name of its ``TYPE_CHECKING`` block, imported on first use."""
    exports = _declared(Path(init_file))

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f".{module}" if module else ".", package), name)

    return __getattr__, sorted(exports)
