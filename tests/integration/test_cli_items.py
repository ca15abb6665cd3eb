"""``relata items``, ``item``, ``delete``, ``jobs`` and ``ingest`` on what went wrong: items listed
by status (on real SQLite), one item's runs and error, deletion with
confirmation, the item a failed job worked on, and failed items named by path."""

from __future__ import annotations

import io
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from relata.bootstrap import Container
from relata.cli.main import main
from relata.config.settings import Settings
from relata.domain.models import ItemStatus, SourceType
from relata.ingest.service import IngestRequest
from tests.support.ingest import built, drain, workspace_id

# Sniffed as JSON, but nested beyond the parser's depth bound: its parse fails.
TOO_DEEP = ("[" * 100 + '"x"' + "]" * 100).encode()


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def c(settings: Settings) -> Iterator[Container]:
    with built(settings) as cont:
        yield cont


def test_the_list_filters_by_status_and_combines_with_type(c: Container) -> None:
    ws = workspace_id(c)
    bad = c.ingest.ingest(ws, IngestRequest(data=TOO_DEEP, filename="deep.json"))
    drain(c)
    good = c.ingest.ingest(ws, IngestRequest(text="A note that parses."))
    failed = c.items.list(ws, status=ItemStatus.FAILED)
    assert [i.id for i in failed] == [bad.id]
    pending = c.items.list(ws, status=ItemStatus.PENDING)
    assert [i.id for i in pending] == [good.id]
    assert c.items.list(ws, status=ItemStatus.FAILED, source_type=SourceType.TEXT) == []
    assert {i.id for i in c.items.list(ws)} == {bad.id, good.id}


# ---------------------------------------------------------------- the commands
@pytest.fixture
def cli(c: Container, monkeypatch: pytest.MonkeyPatch) -> Container:
    """``c``'s database and data dir, as the environment the ``relata`` command reads."""
    for key in [k for k in os.environ if k.startswith("RELATA_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("RELATA_DATA_DIR", c.settings.data_dir)
    monkeypatch.setenv("RELATA_DATABASE_URL", c.settings.resolved_database_url)
    monkeypatch.setenv("RELATA_EMBEDDING_PROVIDER", "none")
    monkeypatch.setenv("RELATA_JOB_POLL_SECONDS", "0.05")
    return c


def _failed_and_ready(c: Container) -> tuple[str, str]:
    ws = workspace_id(c)
    bad = c.ingest.ingest(ws, IngestRequest(data=TOO_DEEP, filename="deep.json"))
    good = c.ingest.ingest(ws, IngestRequest(text="Seals feed in the lanes.", title="Seals"))
    drain(c)
    return bad.id, good.id


def test_items_lists_a_page_filtered_by_status_as_a_table_or_json(
    cli: Container, capsys: pytest.CaptureFixture[str]
) -> None:
    bad, good = _failed_and_ready(cli)
    assert main(["items"]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split() == ["ID", "TYPE", "STATUS", "CHUNKS", "INGESTED", "NAME"]
    assert {line.split()[0] for line in table[1:]} == {bad, good}
    assert main(["items", "--status", "failed", "--json"]) == 0
    [listed] = json.loads(capsys.readouterr().out)
    assert listed["id"] == bad and listed["status"] == "failed"
    assert listed["original_filename"] == "deep.json" and "parse" in listed["error"]
    assert main(["items", "--type", "json", "--status", "ready"]) == 0
    assert capsys.readouterr().out == "no items\n"


def test_item_shows_status_error_chunks_and_every_processing_run(
    cli: Container, capsys: pytest.CaptureFixture[str]
) -> None:
    bad, good = _failed_and_ready(cli)
    assert main(["item", bad]) == 0
    out = capsys.readouterr().out
    assert "file:      deep.json" in out and "status:    failed (at parse)" in out
    assert "error:     parse failed" in out and "chunks:    0" in out
    assert re.search(r"^  \S+ \S+  parse\s+failed\s+parse failed", out, flags=re.MULTILINE)
    assert f"relata reprocess {bad}" in out
    assert main(["item", good, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["status"] == "ready" and shown["chunk_count"] >= 1
    assert [(r["stage"], r["outcome"]) for r in shown["runs"]][:2] == [
        ("parse", "succeeded"),
        ("chunk", "succeeded"),
    ]
    assert main(["item", "no-such-item"]) == 1
    assert "no item 'no-such-item' in workspace 'default'" in capsys.readouterr().err


def test_delete_asks_on_a_terminal_and_needs_yes_otherwise(
    cli: Container, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    bad, good = _failed_and_ready(cli)
    ws = workspace_id(cli)
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    assert main(["delete", bad]) == 2
    assert "refusing to delete without --yes" in capsys.readouterr().err
    monkeypatch.setattr("sys.stdin", _Tty("n\n"))
    assert main(["delete", bad]) == 1
    assert "not deleted" in capsys.readouterr().out
    monkeypatch.setattr("sys.stdin", _Tty("y\n"))
    assert main(["delete", bad]) == 0
    assert f"deleted {bad} (deep.json)" in capsys.readouterr().out
    assert main(["delete", good, "--yes"]) == 0
    assert cli.items.list(ws) == []


def test_jobs_names_the_item_and_file_of_a_failed_job(
    cli: Container, capsys: pytest.CaptureFixture[str]
) -> None:
    bad, _ = _failed_and_ready(cli)
    assert main(["jobs", "--status", "failed"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["ID", "KIND", "STATUS", "ATTEMPTS", "CREATED", "ITEM"]
    assert lines[1].rstrip().endswith(f"{bad} deep.json")
    assert lines[2] == "    TooLarge: the JSON is nested deeper than 64 levels"
    assert main(["jobs", "--status", "failed", "--json"]) == 0
    [job] = json.loads(capsys.readouterr().out)
    assert job["item"] == {"id": bad, "title": "deep.json", "filename": "deep.json"}


def test_ingest_lists_a_failed_item_and_then_a_file_that_is_already_there_as_one(
    cli: Container, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "deep.json"
    path.write_bytes(TOO_DEEP)
    assert main(["ingest", str(path)]) == 1
    out, err = capsys.readouterr()
    assert out.count("scanned 1, ingested 1") == 1, "the summary is printed once"
    assert "processed 1: ready 0, failed 1" in out
    [failed] = [line for line in err.splitlines() if line.startswith("failed:")]
    assert failed.startswith(f"failed: {path}: parse failed")
    item_id = cli.items.list(workspace_id(cli))[0].id
    assert f"(item {item_id})" in failed
    assert "\r" not in err, "no progress is drawn when standard error is not a terminal"

    assert main(["ingest", str(path)]) == 1
    out, err = capsys.readouterr()
    assert "duplicates 1" in out
    assert f"failed earlier: {path}: already ingested as item {item_id}" in err
    assert f"`relata reprocess {item_id}` tries again" in err
