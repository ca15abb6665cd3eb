"""A watched folder's pure rules: which names are ignored, which event paths a pass covers,
and the settings that shape it (docs/decisions/0047-watched-folder.md)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from relata.config.settings import load_settings
from relata.domain.errors import ConfigError
from relata.domain.watch import LEASE, WatchState, WatchStatus
from relata.ingest.folder import MAX_PATTERNS, IgnoreRules
from relata.ingest.watch import _outermost


@pytest.mark.parametrize(
    "rel",
    [
        ".hidden.txt",
        ".git/config",
        "notes/.DS_Store",
        "draft.txt~",
        ".#lock.md",
        "#autosave.md#",
        "report.docx.swp",
        "~$report.docx",
        "download.pdf.part",
        "save.tmp",
    ],
)
def test_hidden_and_editor_temporary_files_are_ignored_by_default(rel: str) -> None:
    assert IgnoreRules().ignored(rel)


@pytest.mark.parametrize("rel", ["report.docx", "notes/tides.md", "a~b.txt", "swp.txt"])
def test_ordinary_documents_are_not_ignored(rel: str) -> None:
    assert not IgnoreRules().ignored(rel)


def test_patterns_match_names_paths_and_the_folders_on_the_way() -> None:
    rules = IgnoreRules(["*.log", "drafts", "archive/2019/*"])
    assert rules.ignored("server.log") and rules.ignored("deep/down/server.log")
    assert rules.ignored("drafts") and rules.ignored("drafts/one.txt")
    assert rules.ignored("archive/2019/minutes.txt")
    assert not rules.ignored("archive/2020/minutes.txt")
    assert not rules.ignored("logbook.txt")


def test_too_many_or_too_long_patterns_are_refused() -> None:
    with pytest.raises(ValueError, match="at most"):
        IgnoreRules([f"*.x{n}" for n in range(MAX_PATTERNS + 1)])
    with pytest.raises(ValueError, match="longer than"):
        IgnoreRules(["*" * 201])


def test_a_pass_covers_the_outermost_paths_an_event_burst_names() -> None:
    assert _outermost(None) == [None]
    assert _outermost(["a/b.txt", "a", "c.txt", "ab.txt", "a/b/c.txt"]) == ["a", "ab.txt", "c.txt"]


def test_watch_settings_are_validated_naming_the_variable() -> None:
    s = load_settings(
        {
            "RELATA_WATCH_DIR": "/srv/inbox",
            "RELATA_WATCH_ON_DELETE": "keep",
            "RELATA_WATCH_IGNORE": "*.log, drafts ,",
        }
    )
    assert (s.watch_dir, s.watch_on_delete, s.watch_ignore) == (
        "/srv/inbox",
        "keep",
        ("*.log", "drafts"),
    )
    with pytest.raises(ConfigError, match="RELATA_WATCH_ON_DELETE"):
        load_settings({"RELATA_WATCH_ON_DELETE": "archive"})
    with pytest.raises(ConfigError, match="RELATA_WATCH_RESCAN_SECONDS"):
        load_settings({"RELATA_WATCH_RESCAN_SECONDS": "1"})


def test_a_running_watch_without_a_recent_heartbeat_is_not_live() -> None:
    now = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)

    def status(state: WatchState, beat: datetime | None) -> WatchStatus:
        return WatchStatus(
            id="w", workspace_id="ws", root="/srv/inbox", state=state, started_at=None,
            heartbeat_at=beat, last_scan_at=None, ingested=0, updated=0, deleted=0,
            tracked=0, failed=0, last_error=None, owner_host="h", owner_pid=1,
        )  # fmt: skip

    assert status(WatchState.RUNNING, now - LEASE).live(now)
    assert not status(WatchState.RUNNING, now - LEASE - timedelta(seconds=1)).live(now)
    assert not status(WatchState.RUNNING, None).live(now)
    assert not status(WatchState.STOPPED, now).live(now)
