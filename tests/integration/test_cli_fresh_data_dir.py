"""Every ``relata`` command on a new or unmigrated data dir: it migrates (writing commands),
needs no database (and creates none), or says in one line what it looked for and what to run,
with a non-zero exit code. Never a traceback (docs/decisions/0014-data-dir-resolution.md)."""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from relata.cli.main import build_parser, main
from tests.support.databases import ON_POSTGRESQL

ROOT = Path(__file__).resolve().parents[2]
TOUR_FILE = str(ROOT / "src" / "relata" / "seed" / "tour" / "sb-04-maintenance-log.md")
SOME_ID = "0d3a5c1e-1111-4c53-9a3c-7d8a1e0b2c44"

# ``database_url`` is an empty database here: the ``unmigrated`` fixture's.
pytestmark = pytest.mark.empty_database

# Commands that read: they must never create a database.
READING = {
    "worker": ["worker"],
    "jobs": ["jobs"],
    "items": ["items", "--status", "failed"],
    "item": ["item", SOME_ID],
    "delete": ["delete", SOME_ID, "--yes"],
    "reprocess": ["reprocess", "--failed"],
    "search": ["search", "seals"],
    "ask": ["ask", "Where do the seals feed?"],
    "reembed": ["reembed"],
    "entities": ["entities"],
    "entity": ["entity", SOME_ID],
    "aliases": ["aliases"],
    "claims": ["claims", SOME_ID],
    "contradictions": ["contradictions"],
    "resolve": ["resolve", SOME_ID, "--as", "both_valid"],
    "related": ["related", SOME_ID],
    "review": ["review"],
    "audit": ["audit"],
    "doctor": ["doctor"],
    "users": ["users", "list"],
    "tokens": ["tokens", "list"],
    "workspaces": ["workspaces", "list"],
    "members": ["members", "list"],
    "transfer": ["transfer", "--to", "postgresql+psycopg://nobody@127.0.0.1:1/none"],
    "backup": ["backup", "backup-folder"],
    "mcp": ["mcp"],
}
# Commands that write: they create and migrate the database, and say so.
WRITING = {
    "migrate": ["migrate"],
    "ingest": ["ingest", "--no-wait", TOUR_FILE],
    "watch": ["watch", "--once", "--no-process", str(Path(TOUR_FILE).parent)],
    "seed": ["seed", "--no-demo"],
    "createadmin": ["createadmin", "--username", "ada", "--password-stdin"],
}
# Commands that need no database at all.
NO_DATABASE = {
    "inspect": ["inspect", TOUR_FILE],
    "version": ["version"],
    "config": ["config"],
}
ELSEWHERE = {
    "export": "tests/integration/test_exchange.py: exports a processed workspace, reads it back",
    "import": "tests/integration/test_exchange.py: imports an export into a new workspace",
    "serve": "tests/e2e/test_cli_serve.py: migrates, then logs the data dir and database",
    "bench": "works in a temporary data dir of its own, never the configured one",
    "restore": "tests/integration/test_backup.py: writes a data dir from a backup",
}


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A data dir that does not exist yet, and nothing else configured."""
    for key in [k for k in os.environ if k.startswith("RELATA_")]:
        monkeypatch.delenv(key)
    data = tmp_path / "data"
    monkeypatch.setenv("RELATA_DATA_DIR", str(data))
    monkeypatch.setenv("RELATA_EMBEDDING_PROVIDER", "none")
    monkeypatch.setenv("RELATA_LOG_FORMAT", "text")
    monkeypatch.setattr("sys.stdin", io.StringIO("correct horse battery staple\n"))
    return data


@pytest.fixture
def unmigrated(data_dir: Path, database_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A database that exists but has no schema: an empty SQLite file, or an empty
    PostgreSQL database."""
    if database_url.startswith("sqlite:///"):
        Path(database_url.removeprefix("sqlite:///")).touch()
    monkeypatch.setenv("RELATA_DATABASE_URL", database_url)
    yield database_url


def _one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected one line, got:\n{err}"
    assert "Traceback" not in err
    return lines[0]


def test_every_command_is_covered() -> None:
    sub = next(a for a in build_parser()._actions if isinstance(a.choices, dict))
    covered = READING.keys() | WRITING.keys() | NO_DATABASE.keys() | ELSEWHERE.keys()
    assert set(sub.choices) == covered, "add the new command to one of the tables above"


@pytest.mark.parametrize("name", sorted(READING))
def test_a_reading_command_on_a_new_data_dir_says_what_to_run_in_one_line(
    name: str, data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(READING[name]) == 1
    out, err = capsys.readouterr()
    line = _one_line(err)
    assert out == ""
    assert f"no database at {data_dir / 'relata.db'}" in line
    assert "from RELATA_DATA_DIR" in line and "relata seed" in line and "relata ingest" in line
    assert not data_dir.exists(), "a reading command created the data dir"


@pytest.mark.parametrize("name", sorted(READING))
def test_a_reading_command_on_an_unmigrated_database_says_to_migrate(
    name: str, unmigrated: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(READING[name]) == 1
    out, err = capsys.readouterr()
    line = _one_line(err)
    assert out == ""
    assert "has no schema yet: run `relata migrate`" in line


@ON_POSTGRESQL
def test_an_unmigrated_postgresql_database_says_to_migrate(
    unmigrated: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The schema check reads Alembic's revision the same way on both dialects: every reading
    command on SQLite above, one on PostgreSQL here."""
    test_a_reading_command_on_an_unmigrated_database_says_to_migrate("items", unmigrated, capsys)


@pytest.mark.parametrize("name", sorted(WRITING))
def test_a_writing_command_creates_and_migrates_the_database_and_says_where(
    name: str, data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(WRITING[name]) == 0
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    assert f"data dir {data_dir}" in out + err
    assert (data_dir / "relata.db").is_file()
    assert main(["version"]) == 0
    assert "(current)" in capsys.readouterr().out


@pytest.mark.parametrize("name", sorted(NO_DATABASE))
def test_a_command_that_needs_no_database_creates_none(
    name: str, data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(NO_DATABASE[name]) == 0
    out, err = capsys.readouterr()
    assert err == "" and out
    assert not data_dir.exists()


def test_listing_commands_list_nothing_before_the_default_workspace_exists(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["migrate"]) == 0
    capsys.readouterr()
    assert main(["jobs"]) == 0
    assert capsys.readouterr().out == "no jobs\n"
    assert main(["items"]) == 0
    assert capsys.readouterr().out == "no items\n"
    assert main(["search", "seals"]) == 1
    assert "workspace 'default' does not exist" in _one_line(capsys.readouterr().err)


def test_an_unreachable_database_server_is_one_line(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("RELATA_DATABASE_URL", "postgresql+psycopg://nobody:pw@127.0.0.1:1/none")
    assert main(["jobs"]) == 1
    line = _one_line(capsys.readouterr().err)
    assert line.startswith("relata: database error:") and "pw" not in line
