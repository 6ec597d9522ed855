"""Installed size of funes-memory and an extra, before and after a change to pyproject.toml.

    python bench/install_size.py                       # [local], this checkout vs. HEAD~ of main
    python bench/install_size.py --extra "" --baseline bba9efe

The dependency closure of ``funes-memory[EXTRA]`` is resolved from the
``pyproject.toml`` of each revision (environment markers evaluated for this
machine), and each distribution's size is the sum of the files its RECORD lists
in this environment's site-packages: the size a fresh venv would hold, without
downloading anything. Funes itself is left out (the same in both). It prints
both totals, the difference, the largest distributions, and those in the
closure that Funes never imports (found by scanning ``src/funes`` for imports
of each distribution's top-level modules).
"""

from __future__ import annotations

import argparse
import ast
import subprocess
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parent.parent
SELF = {"funes", "funes-memory"}


def _pyproject(revision: str | None) -> dict:
    if revision is None:
        return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    text = subprocess.run(
        ["git", "show", f"{revision}:pyproject.toml"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout
    return tomllib.loads(text)


def _applies(req: Requirement, extra: str = "") -> bool:
    if req.marker is None:
        return True
    env = {**default_environment(), "extra": extra}
    return bool(req.marker.evaluate(env))


def _own_requirements(project: dict, extras: set[str]) -> list[Requirement]:
    """The project's requirements for ``extras``, its self-references (funes[x], funes-memory[x]) expanded."""
    optional = project.get("optional-dependencies", {})
    todo, seen, out = list(extras), set(), [Requirement(r) for r in project.get("dependencies", [])]
    while todo:
        extra = todo.pop()
        if extra in seen or not extra:
            continue
        seen.add(extra)
        for text in optional.get(extra, []):
            req = Requirement(text)
            if canonicalize_name(req.name) in SELF:
                todo.extend(req.extras)
            else:
                out.append(req)
    return [r for r in out if _applies(r)]


def closure(project: dict, extra: str) -> dict[str, metadata.Distribution]:
    """Every installed distribution ``funes-memory[extra]`` pulls in, by canonical name."""
    found: dict[str, metadata.Distribution] = {}
    done: set[tuple[str, str]] = set()  # (distribution, extra) pairs already expanded
    todo = list(_own_requirements(project, {extra}))
    while todo:
        req = todo.pop()
        name = canonicalize_name(req.name)
        if name not in found:
            try:
                found[name] = metadata.distribution(req.name)
            except metadata.PackageNotFoundError:
                print(f"  (not installed here, not counted: {req})")
                continue
        for wanted in ("", *sorted(req.extras)):
            if (name, wanted) in done:
                continue
            done.add((name, wanted))
            for text in found[name].requires or []:
                sub = Requirement(text)
                if _applies(sub, wanted) and (wanted == "" or not _applies(sub, "")):
                    todo.append(sub)
    return found


def size_of(dist: metadata.Distribution) -> int:
    """Bytes of the files the distribution installed (its RECORD)."""
    total = 0
    for file in dist.files or []:
        path = Path(str(dist.locate_file(file)))
        if path.is_file():
            total += path.stat().st_size
    return total


def _top_modules(dist: metadata.Distribution) -> set[str]:
    text = dist.read_text("top_level.txt")
    if text:
        return {line.strip() for line in text.splitlines() if line.strip()}
    names = set()
    for file in dist.files or []:
        parts = Path(str(file)).parts
        if parts and not parts[0].endswith((".dist-info", ".data")) and parts[0] != "..":
            names.add(parts[0].removesuffix(".py"))
    return names


def funes_imports() -> set[str]:
    """Top-level modules imported anywhere in src/funes (lazy imports included)."""
    out: set[str] = set()
    for path in (REPO / "src" / "funes").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                out.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                out.add(node.module.split(".")[0])
    return out


def _mb(n: int) -> str:
    return f"{n / 1e6:8.1f} MB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--extra", default="local", help="extra to measure ('' for the base install)")
    parser.add_argument("--baseline", default="main", help="git revision whose pyproject.toml is the baseline")
    parser.add_argument("--top", type=int, default=12)
    args = parser.parse_args()

    label = f"funes-memory[{args.extra}]" if args.extra else "funes-memory"
    before = closure(_pyproject(args.baseline)["project"], args.extra)
    after = closure(_pyproject(None)["project"], args.extra)
    sizes = {name: size_of(d) for name, d in {**before, **after}.items()}
    total_before = sum(sizes[n] for n in before)
    total_after = sum(sizes[n] for n in after)
    print(f"{label}: installed size of the dependencies (site-packages, this machine)")
    print(f"  baseline ({args.baseline}): {_mb(total_before)}  {len(before)} distributions")
    print(f"  this checkout:        {_mb(total_after)}  {len(after)} distributions")
    print(f"  difference:           {_mb(total_after - total_before)}")
    gone, added = sorted(set(before) - set(after)), sorted(set(after) - set(before))
    if gone:
        print(f"  no longer installed: {', '.join(f'{n} ({sizes[n] / 1e6:.1f} MB)' for n in gone)}")
    if added:
        print(f"  newly installed: {', '.join(f'{n} ({sizes[n] / 1e6:.1f} MB)' for n in added)}")
    print(f"\nlargest in {label} now:")
    for name in sorted(after, key=lambda n: -sizes[n])[: args.top]:
        print(f"  {_mb(sizes[name])}  {name}")
    used = funes_imports()
    unused = {n: sizes[n] for n, d in after.items() if not (_top_modules(d) & used)}
    print(f"\nin {label} but never imported by src/funes (pulled in by other packages): {_mb(sum(unused.values()))}")
    for name in sorted(unused, key=lambda n: -unused[n])[: args.top]:
        print(f"  {_mb(unused[name])}  {name}")


if __name__ == "__main__":
    main()
