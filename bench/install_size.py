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

    python bench/install_size.py --fresh --baseline main   # real installs, both revisions, ~5 min

``--fresh`` installs for real instead, in new virtualenvs under the temp
directory, for the baseline revision (its tree from ``git archive``) and for
this checkout: the README's Quickstart 1 command verbatim (read from each
revision's README, ``funes demo`` included), timed; then the same install
command with ``.[all]`` instead of ``.[local]``. For each venv it prints the
wall time, the size of site-packages and the number of distributions
(``pip list``). pip's cache is warm for both sides (run it twice to be sure).
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
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


def quickstart(readme: str) -> str:
    """The README's Quickstart 1 command (the line after the ```bash fence under its marker), as .ci/run reads it."""
    match = re.search(r"^<!-- quickstart:run -->\n```bash\n(.+)$", readme, flags=re.MULTILINE)
    if not match:
        raise SystemExit("no <!-- quickstart:run --> command in the README")
    return match.group(1)


def _fresh_venv(tree: Path, command: str, work: Path) -> tuple[float, int, int]:
    """Run ``command`` in ``tree`` inside a new venv: (seconds, bytes of site-packages, distributions)."""
    venv = Path(tempfile.mkdtemp(dir=work)) / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = dict(os.environ, VIRTUAL_ENV=str(venv), PATH=f"{venv / 'bin'}:{os.environ['PATH']}", HF_HUB_OFFLINE="1")
    env["FUNES_HOME"] = tempfile.mkdtemp(dir=work)
    env.pop("PYTHONHOME", None)
    t0 = time.perf_counter()
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", command], cwd=tree, env=env, capture_output=True, text=True
    )
    seconds = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"{command!r} failed in {tree}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    [site] = (venv / "lib").glob("python3*/site-packages")
    size = sum(f.stat().st_size for f in site.rglob("*") if f.is_file() and not f.is_symlink())
    listed = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "list", "--format=freeze"], capture_output=True, text=True, env=env
    ).stdout.split()
    shutil.rmtree(venv.parent, ignore_errors=True)
    return seconds, size, len([line for line in listed if line.strip()])


def fresh(baseline: str) -> None:
    """Quickstart 1 and the [all] install in fresh venvs, for the baseline revision and this checkout."""
    work = Path(tempfile.mkdtemp(prefix="funes-install-size-"))
    old_tree = work / "baseline"
    old_tree.mkdir()
    archive = subprocess.run(["git", "archive", baseline], cwd=REPO, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(old_tree)], input=archive, check=True)
    print(f"fresh venvs under {work}; python {sys.version.split()[0]}")
    print(f"{'revision':<14} {'install':<10} {'wall time':>10} {'site-packages':>14} {'distributions':>14}  command")
    for label, tree in ((baseline, old_tree), ("this checkout", REPO)):
        run = quickstart((tree / "README.md").read_text(encoding="utf-8"))
        install_all = run.replace('".[local]"', '".[all]"').removesuffix(" && funes demo")
        for name, command in (("quickstart", run), ("[all]", install_all)):
            seconds, size, count = _fresh_venv(tree, command, work)
            print(f"{label:<14} {name:<10} {seconds:>9.1f}s {_mb(size):>14} {count:>14}  {command}", flush=True)
    shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--extra", default="local", help="extra to measure ('' for the base install)")
    parser.add_argument("--baseline", default="main", help="git revision whose pyproject.toml is the baseline")
    parser.add_argument("--top", type=int, default=12)
    parser.add_argument("--fresh", action="store_true", help="install for real in fresh venvs (see above)")
    args = parser.parse_args()
    if args.fresh:
        fresh(args.baseline)
        return

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
