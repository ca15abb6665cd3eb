"""Settings: every variable declared once, validated with a message naming it, and documented."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from relata.config.settings import SETTINGS, Settings, load_settings, markdown_table
from relata.domain.errors import ConfigError

README = Path(__file__).resolve().parents[2] / "README.md"


def test_defaults_load_without_environment() -> None:
    s = load_settings({})
    assert s.http_addr == ("127.0.0.1", 8080)
    assert s.data_dir == "./data"
    assert s.resolved_database_url.startswith("sqlite:///")
    assert s.resolved_database_url.endswith("relata.db")
    assert s.log_format == "json"


def test_declarations_and_fields_agree() -> None:
    fields = {f.name: f for f in dataclasses.fields(Settings)}
    names = [s.field for s in SETTINGS]
    assert len(names) == len(set(names)), "a setting is declared twice"
    envs = [s.env for s in SETTINGS]
    assert len(envs) == len(set(envs))
    assert set(names) == set(fields), "every Settings field needs exactly one declaration"
    parsed_defaults = load_settings({})
    for s in SETTINGS:
        assert s.env.startswith("RELATA_")
        assert s.help and s.accepts
        # The declared default, parsed, equals the dataclass default.
        assert getattr(parsed_defaults, s.field) == fields[s.field].default, s.env


@pytest.mark.parametrize(
    ("env", "value"),
    [
        ("RELATA_HTTP_ADDR", "nonsense"),
        ("RELATA_HTTP_ADDR", "127.0.0.1:99999"),
        ("RELATA_HTTP_ADDR", ":8080"),
        ("RELATA_LOG_LEVEL", "loud"),
        ("RELATA_LOG_FORMAT", "xml"),
        ("RELATA_DATABASE_URL", "mysql://x"),
        ("RELATA_SHUTDOWN_TIMEOUT", "-1"),
        ("RELATA_DATA_DIR", "  "),
    ],
)
def test_a_bad_value_names_the_variable_and_what_it_accepts(env: str, value: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_settings({env: value})
    decl = next(s for s in SETTINGS if s.env == env)
    assert env in info.value.message
    assert decl.accepts in info.value.message


def test_ipv6_addresses_are_accepted() -> None:
    assert load_settings({"RELATA_HTTP_ADDR": "[::1]:9000"}).http_addr == ("::1", 9000)


def test_readme_configuration_table_matches_declarations() -> None:
    text = README.read_text(encoding="utf-8")
    begin, end = "<!-- settings:begin -->", "<!-- settings:end -->"
    assert begin in text and end in text, "README lacks the generated settings table markers"
    table = text.split(begin, 1)[1].split(end, 1)[0].strip()
    assert table == markdown_table().strip(), (
        "README configuration table is stale: regenerate it with "
        "`.venv/bin/relata config --markdown`"
    )


def test_the_data_dir_resolves_to_one_absolute_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    default = load_settings({})
    assert default.data_path == tmp_path / "data" and default.data_path.is_absolute()
    assert default.resolved_database_url == f"sqlite:///{tmp_path / 'data' / 'relata.db'}"
    home = load_settings({"RELATA_DATA_DIR": "~/relata"})
    assert home.data_path == tmp_path / "home" / "relata"
    # The configured value itself is kept as given (what `relata config` shows as the value).
    assert default.data_dir == "./data"
