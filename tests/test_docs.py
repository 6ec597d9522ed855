"""Every setting and every CLI command is documented, and the generated docs are up to date."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from funes.interfaces import docgen
from funes.interfaces.cli import main
from funes.models.config import SETTINGS

DOCS = Path(__file__).resolve().parent.parent / "docs"
REGENERATE = "Run `python -m funes.interfaces.docgen` to regenerate the docs."


def test_settings_doc_lists_every_setting() -> None:
    text = (DOCS / "settings.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^\| `([a-z0-9_]+)` \|", text, flags=re.MULTILINE))
    missing = sorted(set(SETTINGS) - documented)
    assert not missing, f"undocumented settings {missing}. {REGENERATE}"
    for setting in SETTINGS.values():
        assert f"`{setting.env}`" in text


def test_cli_doc_lists_every_command_and_subcommand() -> None:
    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^## `([^`]+)`$", text, flags=re.MULTILINE))
    missing = sorted(set(docgen.command_paths()) - documented)
    assert not missing, f"undocumented commands {missing}. {REGENERATE}"


@pytest.mark.parametrize("name", ["settings.md", "cli.md"])
def test_generated_docs_are_up_to_date(name: str) -> None:
    generated = docgen.generate(DOCS)[DOCS / name]
    assert (DOCS / name).read_text(encoding="utf-8") == generated, REGENERATE


def test_every_command_and_setting_has_help() -> None:
    ctx = click.Context(main, info_name="funes")
    for command, sub in docgen.walk(main, ctx):
        assert command.get_short_help_str().strip(), f"{sub.command_path} has no help text"
    assert all(s.help.strip() for s in SETTINGS.values())


def test_generator_walks_nested_groups() -> None:
    @click.group()
    def root() -> None:
        """Root."""

    @root.group()
    def outer() -> None:
        """Outer group."""

    @outer.group()
    def inner() -> None:
        """Inner group."""

    @inner.command()
    @click.argument("thing")
    def leaf(thing: str) -> None:
        """A leaf command."""

    @root.command(hidden=True)
    def secret() -> None:
        """Hidden."""

    assert docgen.command_paths(root) == ["funes", "funes outer", "funes outer inner", "funes outer inner leaf"]
    text = docgen.cli_markdown(root)
    assert "## `funes outer inner leaf`" in text and "Usage: funes outer inner leaf [OPTIONS] THING" in text
    assert "secret" not in text


def test_check_mode_reports_stale_docs(tmp_path: Path) -> None:
    assert docgen.run([str(tmp_path), "--check"]) == 1
    assert docgen.run([str(tmp_path)]) == 0
    assert docgen.run([str(tmp_path), "--check"]) == 0
    assert (tmp_path / "settings.md").read_text(encoding="utf-8") == docgen.settings_markdown()


def test_the_docs_name_no_path_of_a_development_machine() -> None:
    """What a reader sees never points into one developer's disk (home folders, the workspace, /tmp)."""
    root = Path(__file__).resolve().parents[1]
    machine = re.compile(r"(?<![\w.])/(?:work|root|home|Users|tmp)/[\w.-]")
    found = [
        f"{page.relative_to(root)}:{n}: {line.strip()}"
        for page in [root / "README.md", *sorted((root / "docs").glob("*.md"))]
        for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
        if machine.search(line)
    ]
    assert found == []
