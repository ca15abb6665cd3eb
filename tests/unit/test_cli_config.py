"""``relata config``: the values in effect with the source of each, the data dir and database
they resolve to, secrets hidden; ``--markdown`` still generates the README's table."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from relata.cli.main import main
from relata.config.settings import SETTINGS, markdown_table


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for key in [k for k in os.environ if k.startswith("RELATA_")]:
        monkeypatch.delenv(key)
    monkeypatch.chdir(tmp_path)


def _config(capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    assert main(["config", "--json"]) == 0
    data: dict[str, object] = json.loads(capsys.readouterr().out)
    return data


def test_the_values_in_effect_and_their_sources_are_shown(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("RELATA_DATA_DIR", "/srv/relata")
    monkeypatch.setenv("RELATA_HTTP_ADDR", "[::1]:9000")
    monkeypatch.setenv("RELATA_LOG_LEVEL", "DEBUG")
    data = _config(capsys)
    rows = {r["variable"]: r for r in data["variables"]}  # type: ignore[attr-defined]
    assert [r for r in rows] == [s.env for s in SETTINGS]
    assert rows["RELATA_DATA_DIR"] == {
        "variable": "RELATA_DATA_DIR",
        "value": "/srv/relata",
        "source": "environment",
    }
    assert rows["RELATA_HTTP_ADDR"]["value"] == "[::1]:9000"
    assert rows["RELATA_LOG_LEVEL"]["value"] == "debug"  # as parsed, not as typed
    assert rows["RELATA_WORKERS"] == {
        "variable": "RELATA_WORKERS",
        "value": "2",
        "source": "default",
    }
    assert data["data_dir"] == "/srv/relata" and data["data_dir_source"] == "from RELATA_DATA_DIR"
    assert data["database"] == "sqlite:////srv/relata/relata.db"
    assert data["database_exists"] is False


def test_the_default_data_dir_is_shown_as_an_absolute_path_relative_to_here(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["config"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == (
        f"data dir:  {tmp_path / 'data'}  (the default ./data, relative to the current directory)"
    )
    assert f"database:  sqlite:///{tmp_path / 'data' / 'relata.db'}  (not created yet)" in out
    assert not (tmp_path / "data").exists(), "config creates nothing"


def test_secrets_are_hidden_and_database_passwords_redacted(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("RELATA_OPENAI_API_KEY", "sk-very-secret")
    monkeypatch.setenv("RELATA_DATABASE_URL", "postgresql+psycopg://relata:hunter2@db:5432/relata")
    assert main(["config"]) == 0
    out = capsys.readouterr().out
    assert "sk-very-secret" not in out and "hunter2" not in out
    assert "(set, hidden)" in out
    assert "postgresql+psycopg://relata:***@db:5432/relata" in out


def test_markdown_is_the_readme_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "--markdown"]) == 0
    assert capsys.readouterr().out == markdown_table()


def test_a_bad_value_is_named_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("RELATA_WORKERS", "lots")
    assert main(["config"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "RELATA_WORKERS='lots' is invalid" in err
