"""A watched folder (``relata watch``, docs/decisions/0047-watched-folder.md) on a real
filesystem with the real ingest and version services and the real pipeline: files created,
changed, renamed and deleted while the watcher is stopped (the catch-up) and while it runs
(watchfiles' events); the crash windows between an item and its state row; ignore patterns,
links out of the folder and the size limit; one live watcher per folder."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from relata.bootstrap import Container
from relata.config.settings import Settings
from relata.domain.errors import NotFound
from relata.domain.models import ItemStatus
from relata.domain.vocabulary import Role
from relata.domain.watch import WatchState
from relata.ids import content_hash
from relata.ingest.folder import FolderEmptied, FolderGone
from relata.ingest.service import IngestRequest
from relata.ingest.watch import SyncReport
from relata.ingest.watcher import WatchBusy, Watcher
from tests.support.api import api_client
from tests.support.ingest import built, drain, workspace_id

pytestmark = pytest.mark.both_dialects


@pytest.fixture
def c(settings: Settings) -> Iterator[Container]:
    with built(
        settings, embedding_provider="none", analysis_enabled=False, max_upload_bytes=4096
    ) as container:
        yield container


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    d = tmp_path / "watched"
    d.mkdir()
    return d


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _watcher(c: Container, folder: Path, **kw: object) -> Watcher:
    return c.watches.watcher(workspace_id(c), folder, **kw)  # type: ignore[arg-type]


def _tracked(c: Container, w: Watcher) -> dict[str, str | None]:
    files = c.watches._state.files(w.workspace_id, w.watch_id)
    return {rel: f.item_id for rel, f in files.items()}


def _live_items(c: Container) -> int:
    return c.repos.items.count(workspace_id(c))


# ---------------------------------------------------------------- while stopped: the catch-up
def test_what_changed_while_stopped_is_caught_up_with_versions_renames_and_deletes(
    c: Container, folder: Path
) -> None:
    ws = workspace_id(c)
    _write(folder / "tides.md", "# Tides\n\nThe harbour has twelve turbines.")
    _write(folder / "seals.txt", "The seal colony grew to 143 animals in 2024.")
    _write(folder / "notes" / "dredging.txt", "Dredging of the channel starts in May.")
    w = _watcher(c, folder)
    first = w.catch_up()
    assert sorted(first.ingested) == ["notes/dredging.txt", "seals.txt", "tides.md"]
    ids = _tracked(c, w)
    drain(c)
    assert all(c.repos.items.get(ws, i).status is ItemStatus.READY for i in ids.values() if i)

    # While no watcher runs: one file edited, one renamed, one deleted.
    _write(folder / "seals.txt", "The seal colony grew to 150 animals in 2025.")
    (folder / "tides.md").rename(folder / "tides-2026.md")
    (folder / "notes" / "dredging.txt").unlink()
    second = _watcher(c, folder).catch_up()
    assert second.updated == ["seals.txt"]
    assert second.renamed == [("tides.md", "tides-2026.md")]
    assert second.deleted == ["notes/dredging.txt"]
    assert second.ingested == []
    after = _tracked(c, w)
    assert after == {"seals.txt": ids["seals.txt"], "tides-2026.md": ids["tides.md"]}
    with pytest.raises(NotFound):
        c.repos.items.get(ws, str(ids["notes/dredging.txt"]))
    versions = c.versions.list(ws, str(ids["seals.txt"]))
    assert [v.number for v in versions] == [2, 1]
    drain(c)
    assert "150 animals" in c.items.text(ws, str(ids["seals.txt"]))
    assert _live_items(c) == 2

    # Nothing changed: a pass reads nothing and does nothing.
    third = _watcher(c, folder).catch_up()
    assert third.empty() and third.unchanged == 2
    status = w.status()
    assert (status.tracked, status.ingested, status.updated, status.deleted) == (2, 3, 1, 1)
    assert status.last_scan_at is not None


def test_a_copy_is_linked_to_the_same_item_which_goes_with_the_last_copy(
    c: Container, folder: Path
) -> None:
    ws = workspace_id(c)
    text = "Harbour minutes: the council approved the breakwater."
    _write(folder / "minutes.txt", text)
    _write(folder / "copy" / "minutes.txt", text)
    w = _watcher(c, folder)
    report = w.catch_up()
    assert report.ingested == ["copy/minutes.txt"] and report.linked == ["minutes.txt"]
    tracked = _tracked(c, w)
    assert tracked["minutes.txt"] == tracked["copy/minutes.txt"]
    (folder / "copy" / "minutes.txt").unlink()
    assert w.catch_up().deleted == []  # the other copy is still there
    assert c.repos.items.get(ws, str(tracked["minutes.txt"]))
    (folder / "minutes.txt").unlink()
    assert w.catch_up().deleted == ["minutes.txt"]
    assert _live_items(c) == 0


def test_on_delete_keep_leaves_the_item_untracked(c: Container, folder: Path) -> None:
    _write(folder / "keep.txt", "A document the workspace keeps after the file goes.")
    w = _watcher(c, folder, on_delete="keep")
    w.catch_up()
    (folder / "keep.txt").unlink()
    report = w.catch_up()
    assert report.deleted == [] and _tracked(c, w) == {}
    assert _live_items(c) == 1


# ---------------------------------------------------------------- the crash windows
def test_an_item_made_before_a_crash_is_linked_not_ingested_twice(
    c: Container, folder: Path
) -> None:
    """Killed after the item was created and before its row was written: the next pass finds
    the file unknown, and its bytes an item already."""
    ws = workspace_id(c)
    data = "Ingested by a watcher killed before it wrote its state."
    _write(folder / "orphan.txt", data)
    item = c.ingest.ingest(ws, IngestRequest(data=data.encode(), filename="orphan.txt"))
    report = _watcher(c, folder).catch_up()
    assert report.ingested == [] and report.linked == ["orphan.txt"]
    assert _tracked(c, _watcher(c, folder)) == {"orphan.txt": item.id}
    assert _live_items(c) == 1


def test_a_version_made_before_a_crash_is_not_made_again(c: Container, folder: Path) -> None:
    ws = workspace_id(c)
    path = _write(folder / "report.txt", "First draft of the turbine report.")
    w = _watcher(c, folder)
    w.catch_up()
    item_id = str(_tracked(c, w)["report.txt"])
    _write(path, "Second draft of the turbine report.")
    with c.versions.admit():  # the killed watcher's upload
        c.versions.upload(ws, item_id, path.read_bytes(), filename="report.txt")
    report = w.catch_up()
    assert report.updated == [] and report.unchanged == 1
    assert [v.number for v in c.versions.list(ws, item_id)] == [2, 1]
    files = c.watches._state.files(ws, w.watch_id)
    assert files["report.txt"].sha256 == content_hash(path.read_bytes())


def test_a_delete_made_before_a_crash_is_finished(c: Container, folder: Path) -> None:
    ws = workspace_id(c)
    path = _write(folder / "gone.txt", "A file deleted while its watcher was being killed.")
    w = _watcher(c, folder)
    w.catch_up()
    item_id = str(_tracked(c, w)["gone.txt"])
    path.unlink()
    c.items.delete(ws, item_id)  # the killed watcher's delete; its row stayed
    assert "gone.txt" in _tracked(c, w)
    w.catch_up()
    assert _tracked(c, w) == {} and _live_items(c) == 0


# ---------------------------------------------------------------- what is not ingested
def test_ignored_names_are_left_alone_and_refusals_are_recorded_with_a_reason(
    c: Container, folder: Path, tmp_path: Path
) -> None:
    ws = workspace_id(c)
    for name in [".hidden.txt", "draft.txt~", ".#lock.txt", "x.txt.swp", "~$report.docx"]:
        _write(folder / name, f"editor noise {name}")
    _write(folder / ".git" / "config", "[core]")
    _write(folder / "debug.log", "a log the user ignores")
    _write(folder / "drafts" / "one.txt", "a draft the user ignores")
    _write(folder / "kept.txt", "The one document of this folder.")
    secret = _write(tmp_path / "outside" / "secret.txt", "A file outside the watched folder.")
    (folder / "link.txt").symlink_to(secret)
    (folder / "linkdir").symlink_to(secret.parent, target_is_directory=True)
    _write(folder / "big.txt", "x" * 5000)  # over the 4096-byte limit
    (folder / "blob.bin").write_bytes(bytes(range(256)) * 4)
    _write(folder / "empty.txt", "")
    w = _watcher(c, folder, ignore=["*.log", "drafts"])
    report = w.catch_up()
    assert report.ingested == ["kept.txt"]
    reasons = dict(report.refused)
    assert set(reasons) == {"link.txt", "big.txt", "blob.bin", "empty.txt"}
    assert "outside the folder" in reasons["link.txt"]
    assert "4096" in reasons["big.txt"] and "RELATA_MAX_UPLOAD_BYTES" in reasons["big.txt"]
    assert reasons["blob.bin"] and reasons["empty.txt"]
    # An event naming a file behind the linked folder (notify may follow it) reads nothing.
    assert w.sync.reconcile(["linkdir/secret.txt"]).empty()
    assert w.sync.reconcile(["linkdir"]).empty()
    assert c.repos.items.find_by_content_hash(ws, content_hash(secret.read_bytes())) is None
    assert _live_items(c) == 1
    assert w.status().failed == 4
    # Refusals are not repeated while the files stay as they are; a fixed one is ingested.
    assert w.catch_up().empty()
    _write(folder / "big.txt", "Now small enough to be ingested.")
    again = w.catch_up()
    assert again.ingested == ["big.txt"] and w.status().failed == 3


# ---------------------------------------------------------------- while watching
def _until(check: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("the watcher did not catch up in time")
        time.sleep(0.05)


def test_a_running_watcher_follows_creates_changes_renames_and_deletes(
    c: Container, folder: Path
) -> None:
    ws = workspace_id(c)
    _write(folder / "before.txt", "Present before the watcher started.")
    passes: list[SyncReport] = []
    w = _watcher(c, folder, on_pass=passes.append)
    w.claim()
    stop = threading.Event()
    thread = threading.Thread(target=w.run, args=(stop,), kwargs={"debounce_ms": 100})
    thread.start()
    try:
        _until(lambda: "before.txt" in _tracked(c, w))
        _write(folder / "new.txt", "Created while watching.")
        _write(folder / "sub" / "deep.txt", "Created in a new folder while watching.")
        _until(lambda: {"new.txt", "sub/deep.txt"} <= set(_tracked(c, w)))
        item_id = str(_tracked(c, w)["new.txt"])
        _write(folder / "new.txt", "Changed while watching.")
        _until(lambda: len(c.versions.list(ws, item_id)) == 2)
        (folder / "sub").rename(folder / "moved")
        _until(lambda: "moved/deep.txt" in _tracked(c, w))
        (folder / "before.txt").unlink()
        _until(lambda: "before.txt" not in _tracked(c, w))
    finally:
        stop.set()
        thread.join(30)
        w.release()
    assert not thread.is_alive()
    assert set(_tracked(c, w)) == {"new.txt", "moved/deep.txt"}
    assert _tracked(c, w)["new.txt"] == item_id
    assert _live_items(c) == 2
    assert any(p.renamed == [("sub/deep.txt", "moved/deep.txt")] for p in passes)
    assert w.status().state is WatchState.STOPPED


def test_a_second_live_watcher_of_the_same_folder_is_refused(c: Container, folder: Path) -> None:
    first = _watcher(c, folder)
    first.claim()
    assert first.status().live(c.clock.now())
    # Another process of this host, still running (this test's parent), holds it.
    c.watches._state.claim(
        first.workspace_id, first.watch_id, os.uname().nodename, os.getppid(), c.clock.now()
    )
    with pytest.raises(WatchBusy):
        _watcher(c, folder).claim()
    first.release()
    _watcher(c, folder).claim()  # a stopped watch is anyone's


def test_a_file_still_being_written_waits_for_a_later_pass_with_the_removals(
    c: Container, folder: Path
) -> None:
    old = _write(folder / "old-name.txt", "A report copied, not moved, to a new name.")
    w = _watcher(c, folder)
    w.catch_up()
    item_id = _tracked(c, w)["old-name.txt"]
    (folder / "new-name.txt").write_bytes(old.read_bytes())  # a copy: a fresh mtime
    old.unlink()
    settle = 60 * 1_000_000_000
    waiting = w.sync.reconcile(["new-name.txt", "old-name.txt"], settle_ns=settle)
    assert waiting.empty() and set(waiting.deferred) == {"new-name.txt", "old-name.txt"}
    assert _tracked(c, w) == {"old-name.txt": item_id}
    done = w.sync.reconcile(waiting.deferred)
    assert done.renamed == [("old-name.txt", "new-name.txt")]
    assert _tracked(c, w) == {"new-name.txt": item_id}


def test_a_vanished_folder_deletes_nothing(c: Container, folder: Path) -> None:
    """An unmounted or moved folder is an error, not every file deleted."""
    _write(folder / "minutes.txt", "Minutes kept while the drive is unplugged.")
    w = _watcher(c, folder)
    w.catch_up()
    folder.rename(folder.with_name("elsewhere"))
    with pytest.raises(FolderGone):
        w.catch_up()
    assert set(_tracked(c, w)) == {"minutes.txt"} and _live_items(c) == 1
    assert "is missing" in str(w.status().last_error)


def test_an_emptied_folder_deletes_nothing_until_a_person_says_it_is_meant_to_be_empty(
    c: Container, folder: Path
) -> None:
    """An empty mount point looks like every file deleted: a full pass refuses to act on it
    (said in the status) until ``allow_empty``; files deleted one by one still go."""
    for name in ("a.txt", "b.txt", "c.txt"):
        _write(folder / name, f"Notes kept in {name}.")
    w = _watcher(c, folder)
    w.catch_up()
    (folder / "c.txt").unlink()
    w.catch_up()
    assert set(_tracked(c, w)) == {"a.txt", "b.txt"} and _live_items(c) == 2
    for name in ("a.txt", "b.txt"):
        (folder / name).unlink()
    with pytest.raises(FolderEmptied):
        w.catch_up()
    assert set(_tracked(c, w)) == {"a.txt", "b.txt"} and _live_items(c) == 2
    assert "is empty, but 2 of its files have items" in str(w.status().last_error)
    w.sync.allow_empty = True
    report = w.catch_up()
    assert sorted(report.deleted) == ["a.txt", "b.txt"]
    assert _tracked(c, w) == {} and _live_items(c) == 0


def test_a_file_changed_to_another_items_bytes_becomes_that_item(
    c: Container, folder: Path
) -> None:
    a = _write(folder / "a.txt", "The first document about lighthouses.")
    b = _write(folder / "b.txt", "The second document about breakwaters.")
    w = _watcher(c, folder)
    w.catch_up()
    before = _tracked(c, w)
    a.write_bytes(b.read_bytes())
    report = w.catch_up()
    assert report.linked == ["a.txt"] and report.deleted == ["a.txt"]
    assert _tracked(c, w) == {"a.txt": before["b.txt"], "b.txt": before["b.txt"]}
    assert _live_items(c) == 1


def test_the_api_reports_the_status_and_hides_the_path_from_viewers(
    c: Container, folder: Path
) -> None:
    _write(folder / "note.txt", "A note the API reports on.")
    w = _watcher(c, folder)
    w.claim()
    w.catch_up()
    [owner] = api_client(c, role=Role.OWNER).get("/api/v1/settings/watches").json()
    assert owner["root"] == str(folder.resolve()) and owner["state"] == "watching"
    assert (owner["tracked"], owner["ingested"], owner["failed"]) == (1, 1, 0)
    assert owner["last_scan_at"]
    [viewer] = api_client(c, role=Role.VIEWER).get("/api/v1/settings/watches").json()
    assert viewer["root"] is None and viewer["tracked"] == 1
    w.release()
    [stopped] = api_client(c, role=Role.OWNER).get("/api/v1/settings/watches").json()
    assert stopped["state"] == "stopped"
