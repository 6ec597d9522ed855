"""Settings: precedence, validation, the home directory."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import pytest

import funes
from funes.models import config
from funes.providers.embed import HashEmbedder


def write_toml(home: Path, text: str) -> Path:
    """Write $FUNES_HOME/funes.toml."""
    home.mkdir(parents=True, exist_ok=True)
    path = home / "funes.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_every_setting_has_a_default_of_its_type_and_help() -> None:
    assert config.SETTINGS
    for name, setting in config.SETTINGS.items():
        assert setting.name == name and setting.env == "FUNES_" + name.upper()
        assert isinstance(setting.default, setting.type), name
        assert setting.help.strip().endswith((".", ")")), name


def test_precedence_defaults_file_env_arguments(funes_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert config.load().rrf_k == 60 and config.load().origins["rrf_k"] == "default"
    path = write_toml(funes_home, "rrf_k = 10\nsearch_limit = 7\ntenant = 'filed'\n")
    loaded = config.load()
    assert (loaded.rrf_k, loaded.search_limit, loaded.tenant) == (10, 7, "filed")
    assert loaded.origins["rrf_k"] == str(path)
    monkeypatch.setenv("FUNES_RRF_K", "20")
    monkeypatch.setenv("FUNES_TENANT", "from-env")
    loaded = config.load()
    assert (loaded.rrf_k, loaded.search_limit, loaded.tenant) == (20, 7, "from-env")
    assert loaded.origins["rrf_k"] == "env"
    loaded = config.load(rrf_k=30, tenant=None)
    assert (loaded.rrf_k, loaded.tenant) == (30, "from-env") and loaded.origins["rrf_k"] == "argument"


def test_a_funes_section_in_the_file_is_read(funes_home: Path) -> None:
    write_toml(funes_home, "[funes]\nboost_team = 2.0\n")
    assert config.load().boost_team == 2.0


def test_funes_config_points_at_another_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    other = tmp_path / "elsewhere.toml"
    other.write_text("candidates = 5\n", encoding="utf-8")
    monkeypatch.setenv("FUNES_CONFIG", str(other))
    assert config.config_path() == other and config.load().candidates == 5


def test_settings_reach_the_service(funes_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_toml(funes_home, "tenant = 'team-a'\nmax_content_bytes = 100\n")
    monkeypatch.setenv("FUNES_PROJECT", "acme")
    with funes.open(str(tmp_path / "s.db"), embedder=HashEmbedder(8)) as service:
        memory = service.remember("a note")
        assert (memory.tenant, memory.project_id, memory.scope) == ("team-a", "acme", "project")
        with pytest.raises(funes.InvalidInput):
            service.remember("x" * 101)
    with funes.open(str(tmp_path / "s.db"), embedder=HashEmbedder(8), tenant="team-b") as service:
        assert service.remember("a note").tenant == "team-b"


@pytest.mark.parametrize(
    ("where", "value"),
    [("env", "many"), ("env", "1.5"), ("file", "'many'"), ("file", "true"), ("file", "1.5"), ("arg", "x")],
)
def test_bad_values_give_clear_errors(
    funes_home: Path, monkeypatch: pytest.MonkeyPatch, where: str, value: str
) -> None:
    if where == "env":
        monkeypatch.setenv("FUNES_SEARCH_LIMIT", value)
    elif where == "file":
        write_toml(funes_home, f"search_limit = {value}\n")
    with pytest.raises(funes.InvalidInput) as info:
        config.load(**({"search_limit": value} if where == "arg" else {}))
    assert "search_limit" in info.value.message and "int" in info.value.message
    assert "funes config" in (info.value.hint or "")


def test_unknown_settings_and_broken_toml_are_errors(funes_home: Path) -> None:
    write_toml(funes_home, "rrf_kk = 3\n")
    with pytest.raises(funes.InvalidInput) as info:
        config.load()
    assert "rrf_kk" in info.value.message
    write_toml(funes_home, "rrf_k = = 3\n")
    with pytest.raises(funes.InvalidInput) as info:
        config.load()
    assert "not valid TOML" in info.value.message and info.value.hint
    with pytest.raises(funes.InvalidInput):
        config.load(no_such_setting=1)


def test_write_setting_keeps_other_values(funes_home: Path) -> None:
    config.write_setting("rrf_k", "15")
    config.write_setting("tenant", "t1")
    assert (config.load().rrf_k, config.load().tenant) == (15, "t1")
    with pytest.raises(funes.InvalidInput):
        config.write_setting("rrf_k", "fifteen")
    with pytest.raises(funes.InvalidInput):
        config.write_setting("nope", "1")
    assert config.load().rrf_k == 15


def test_home_is_funes_home_when_set(funes_home: Path) -> None:
    assert config.home() == funes_home
    assert config.load().db_file == funes_home / "funes.db"


@pytest.mark.skipif(sys.platform != "linux", reason="the XDG layout is Linux's")
def test_default_home_is_the_platform_data_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FUNES_HOME")
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.setenv("HOME", "/home/someone")
    assert config.home() == Path("/home/someone/.local/share/funes")
    monkeypatch.setenv("XDG_DATA_HOME", "/data/xdg")
    assert config.home() == Path("/data/xdg/funes")


def test_default_home_is_never_tmp(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FUNES_HOME")
    home = str(config.home())
    assert not home.startswith(tempfile.gettempdir()) and not home.startswith("/tmp")
    assert "funes" in home
