"""How every package of Funes exports its public names: on first use, so importing one never loads its siblings."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, str]) -> Callable[[str], Any]:
    """A package's ``__getattr__`` that imports ``exports[name]`` (a module of the package) on first use.

    Every package of Funes exports its public names this way, so importing one
    name never loads its siblings (numpy, SQLite, a model) and ``funes --help`` stays instant.
    """

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        import importlib

        return getattr(importlib.import_module(f".{module}", package), name)

    return __getattr__
