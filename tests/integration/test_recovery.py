"""Recovery after a crash (``relata.ingest.recovery``) on real SQLite and PostgreSQL and a real
data dir: each thing a killed process leaves half-done (a stored original no row refers to, the
temporary file of a write, a row without its first job, a delete cut short) is found, and
repaired with ``fix``; nothing younger than the grace period is touched (an upload in another
process may be between its steps); an original any row refers to, a row marked deleted
included, is never removed; files of names Relata does not write are reported, never
removed. ``relata doctor`` reports the same, with ``--fix`` repairs, and says what the settings
page says about the stored vectors."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from relata.bootstrap import Container
from relata.cli.main import main
from relata.config.settings import Settings
from relata.domain.models import Item, ItemStatus, SourceType
from relata.domain.vocabulary import AuditAction
from relata.ids import content_hash, new_id
from relata.ingest.originals import OriginalStore
from relata.ingest.service import IngestRequest
from tests.support.cli import point_cli_at
from tests.support.fake_embedder import FakeEmbedder
from tests.support.ingest import built, drain, originals_of, workspace_id

# The recovery reads items, jobs and deletes through SQL: both dialects.
pytestmark = pytest.mark.both_dialects

HOUR = 3600
TEXT = b"Kestrel Marine Systems met the Meridian Tidal Institute in Port Halloran."


@pytest.fixture
def c(settings: Settings) -> Iterator[Container]:
    with built(settings, embedder=FakeEmbedder()) as cont:
        yield cont


def _age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def _stray(c: Container, ws: str, data: bytes = TEXT) -> Path:
    """An original stored as an upload stores it, whose row was never written."""
    rel = OriginalStore(c.settings.data_path).save(ws, new_id(), SourceType.TEXT, data)
    return c.settings.data_path / rel


def _partial(c: Container, ws: str) -> Path:
    """The temporary file of a write that was killed before its rename."""
    path = c.settings.data_path / "originals" / ws / f".{new_id()}.0123456789ab.tmp"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(TEXT[:20])
    return path


def _unstarted(c: Container, ws: str, *, age: float = 2 * HOUR) -> Item:
    """A row and its original without the first job: killed between the two."""
    item_id = new_id()
    rel = OriginalStore(c.settings.data_path).save(ws, item_id, SourceType.TEXT, TEXT)
    item = Item(
        id=item_id,
        workspace_id=ws,
        title="tides.txt",
        source_type=SourceType.TEXT,
        content_hash=content_hash(TEXT),
        size_bytes=len(TEXT),
        ingested_at=datetime.now(UTC) - timedelta(seconds=age),
        original_path=rel,
        original_filename="tides.txt",
        media_type="text/plain",
    )
    return c.repos.items.create(item)


# ---------------------------------------------------------------- stray originals
def test_old_stray_originals_and_partial_writes_are_removed_only_with_fix(c: Container) -> None:
    ws = workspace_id(c)
    stray, partial = _stray(c, ws), _partial(c, ws)
    _age(stray, 2 * HOUR)
    _age(partial, 2 * HOUR)
    found = c.recovery.run(fix=False)
    assert {f.rel for f in found.stray} == {
        str(p.relative_to(c.settings.data_path)) for p in (stray, partial)
    }
    assert stray.exists() and partial.exists()  # reported only
    fixed = c.recovery.run(fix=True)
    assert len(fixed.stray) == 2 and not stray.exists() and not partial.exists()
    assert c.recovery.run(fix=True).stray == []


def test_a_file_younger_than_the_grace_period_is_left_alone(c: Container) -> None:
    # An upload in another process between "file written" and "row committed".
    ws = workspace_id(c)
    fresh, fresh_partial = _stray(c, ws), _partial(c, ws)
    report = c.recovery.run(fix=True)
    assert report.stray == [] and len(report.young) == 2
    assert fresh.exists() and fresh_partial.exists()
    # With no grace (nothing else writes here) they go.
    assert len(c.recovery.run(fix=True, grace=timedelta(0)).stray) == 2
    assert not fresh.exists() and not fresh_partial.exists()


def test_an_original_an_item_refers_to_is_never_removed_however_old(c: Container) -> None:
    ws = workspace_id(c)
    item = c.ingest.ingest(ws, IngestRequest(data=TEXT, filename="tides.txt"))
    drain(c)
    path = c.settings.data_path / (item.original_path or "")
    _age(path, 30 * 24 * HOUR)
    report = c.recovery.run(fix=True, grace=timedelta(0))
    assert report.stray == [] and path.exists()
    assert report.scanned_files == 1


def test_names_relata_does_not_write_are_reported_and_kept(c: Container) -> None:
    ws = workspace_id(c)
    root = c.settings.data_path / "originals"
    mine = [root / ws / "notes.txt", root / "not-a-workspace", root / ws / "sub"]
    mine[0].parent.mkdir(parents=True, exist_ok=True)
    mine[0].write_text("someone's own file")
    mine[1].write_text("x")
    mine[2].mkdir()
    for p in mine:
        _age(p, 2 * HOUR)
    report = c.recovery.run(fix=True, grace=timedelta(0))
    assert report.stray == [] and len(report.unknown) == 3
    assert all(p.exists() for p in mine)


# ---------------------------------------------------------------- rows and jobs
def test_an_upload_killed_before_its_first_job_is_started_and_becomes_ready(c: Container) -> None:
    ws = workspace_id(c)
    item = _unstarted(c, ws)
    started = c.ingest.ingest(ws, IngestRequest(data=b"Another document.", filename="b.txt"))
    report = c.recovery.run(fix=False, grace=timedelta(0))
    assert [i.id for i in report.unstarted] == [item.id]  # not the one with its job queued
    assert c.recovery.run(fix=True).unstarted != []
    drain(c)
    for done in (item, started):
        assert c.repos.items.get(ws, done.id).status is ItemStatus.READY
    assert c.recovery.run(fix=True, grace=timedelta(0)).unstarted == []


def test_a_recent_row_without_its_job_yet_is_left_alone(c: Container) -> None:
    ws = workspace_id(c)
    item = _unstarted(c, ws, age=0)  # its own process may be about to enqueue the job
    assert c.recovery.run(fix=True).unstarted == []
    assert c.queue.list(ws) == [] and c.repos.items.get(ws, item.id).status is ItemStatus.PENDING


def test_an_interrupted_delete_is_finished_and_its_original_kept_until_then(
    c: Container,
) -> None:
    ws = workspace_id(c)
    item = c.ingest.ingest(ws, IngestRequest(data=TEXT, filename="tides.txt"))
    drain(c)
    assert c.vectors.count(ws) > 0
    # Killed after the first step of a delete: the row is hidden but still refers to the file.
    c.repos.items.mark_deleted(ws, item.id)
    path = c.settings.data_path / (item.original_path or "")
    _age(path, 2 * HOUR)
    report = c.recovery.run(fix=False, grace=timedelta(0))
    assert report.stray == [] and [i.id for i in report.interrupted_deletes] == [item.id]
    assert path.exists()
    c.recovery.run(fix=True, grace=timedelta(0))
    assert not path.exists() and c.vectors.count(ws) == 0
    assert originals_of(c, ws) == [] and c.repos.chunks.count(ws) == 0
    [event] = c.audit.list(ws, action=AuditAction.ITEM_DELETED)
    assert event.target_id == item.id and event.details["finished"] is True


def test_a_live_item_whose_original_is_gone_is_reported(c: Container) -> None:
    ws = workspace_id(c)
    item = c.ingest.ingest(ws, IngestRequest(data=TEXT, filename="tides.txt"))
    (c.settings.data_path / (item.original_path or "")).unlink()
    assert c.recovery.run(fix=True).missing_originals == [(ws, item.id)]
    assert c.recovery.run(fix=True, missing=False).missing_originals == []


# ---------------------------------------------------------------- relata doctor
@pytest.fixture
def cli(c: Container, monkeypatch: pytest.MonkeyPatch) -> Container:
    return point_cli_at(c, monkeypatch)


def test_doctor_on_a_healthy_data_dir_says_so_and_exits_0(
    cli: Container, capsys: pytest.CaptureFixture[str]
) -> None:
    cli.ingest.ingest(workspace_id(cli), IngestRequest(data=TEXT, filename="tides.txt"))
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    assert "ok: nothing needs attention" in out and "checked 1 stored file" in out


def test_doctor_reports_then_fixes_what_a_crash_left(
    cli: Container, capsys: pytest.CaptureFixture[str]
) -> None:
    c = cli
    ws = workspace_id(c)
    stray, partial, young = _stray(c, ws), _partial(c, ws), _stray(c, ws, b"Being written.")
    _age(stray, 2 * HOUR)
    _age(partial, 2 * HOUR)
    item = _unstarted(c, ws)
    assert main(["doctor"]) == 1
    out = capsys.readouterr().out
    assert "stray originals" in out and "--fix removes them" in out
    assert str(stray.relative_to(c.settings.data_path)) in out
    assert "uploads whose processing never started: --fix starts their processing: 1" in out
    assert "left alone: 1 unreferenced file younger than 3600 s" in out
    assert stray.exists()

    assert main(["doctor", "--fix", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["fixed"] is True and report["needs_attention"] == 0
    assert len(report["stray_originals"]) == 2 and len(report["younger_than_grace"]) == 1
    assert report["unstarted_uploads"] == [{"workspace_id": ws, "item_id": item.id}]
    assert not stray.exists() and not partial.exists() and young.exists()
    assert main(["doctor", "--grace", "0", "--fix"]) == 0
    assert not young.exists()
    capsys.readouterr()
    assert main(["doctor", "--grace", "-1"]) == 1
    assert "--grace must be 0 or more" in capsys.readouterr().err


def test_doctor_warns_of_vectors_that_do_not_match_the_chunks(
    cli: Container, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    c = cli
    ws = workspace_id(c)
    item = c.ingest.ingest(ws, IngestRequest(data=TEXT, filename="tides.txt"))
    drain(c)
    c.vectors.delete_by_item(ws, item.id)  # vectors lost
    # The default local model: its width and name are known without loading it.
    monkeypatch.setenv("RELATA_EMBEDDING_PROVIDER", "local")
    assert main(["doctor", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    [warning, *_] = report["vector_warnings"][c.workspaces.get(ws).slug]
    assert warning.startswith("the vector store holds 0 vectors of width 384 for 1 chunks")
