"""``relata watch`` as a process, SIGKILLed in the middle of a batch and started again:
nothing is lost and nothing is ingested twice (docs/decisions/0047-watched-folder.md)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from relata.bootstrap import Container
from relata.config.settings import Settings
from relata.ids import content_hash
from tests.support.ingest import built, workspace_id
from tests.support.mcp import cli_env

# slow: real `relata watch` processes, started four times (make test-fast leaves it out).
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
FILES = 40


@pytest.fixture
def c(settings: Settings) -> Iterator[Container]:
    with built(settings, embedding_provider="none", analysis_enabled=False) as container:
        yield container


def _relata(c: Container, log: Path, *args: str) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "relata.cli.main", *args],
            cwd=ROOT,
            env=cli_env(c, RELATA_ANALYSIS_ENABLED="false", RELATA_LOG_LEVEL="warning"),
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def _watch_id(c: Container, folder: Path) -> str:
    return c.watches._state.open(workspace_id(c), str(folder.resolve()), c.clock.now())


def _tracked(c: Container, folder: Path) -> dict[str, str | None]:
    files = c.watches._state.files(workspace_id(c), _watch_id(c, folder))
    return {rel: f.item_id for rel, f in files.items()}


def _kill_when(proc: subprocess.Popen[bytes], ready: object, log: Path) -> None:
    deadline = time.monotonic() + 60
    while not ready():  # type: ignore[operator]
        if proc.poll() is not None:
            raise AssertionError(f"relata watch exited early:\n{log.read_text()}")
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"relata watch made no progress:\n{log.read_text()}")
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(10)  # reaped: its PID no longer answers, so its watch can be taken over


def _wait(check: object, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, "relata watch made no progress"
        time.sleep(0.02)


def edited_version(c: Container, ws: str, item_id: str | None) -> bool:
    return item_id is not None and len(c.versions.list(ws, item_id)) == 2


def _assert_in_step(c: Container, folder: Path) -> None:
    """Every file is tracked as one live item with its bytes, and no item is left over."""
    ws = workspace_id(c)
    on_disk = {p.relative_to(folder).as_posix(): p for p in folder.rglob("*") if p.is_file()}
    tracked = _tracked(c, folder)
    assert set(tracked) == set(on_disk)
    items = {i: c.repos.items.get(ws, i) for i in tracked.values() if i is not None}
    assert len(items) == len(on_disk)  # one item per file: none twice
    for rel, item_id in tracked.items():
        assert item_id is not None
        assert items[item_id].content_hash == content_hash(on_disk[rel].read_bytes())
    assert c.repos.items.count(ws) == len(on_disk)  # and none orphaned


def test_sigkill_mid_batch_then_restart_loses_and_duplicates_nothing(
    c: Container, tmp_path: Path
) -> None:
    ws = workspace_id(c)
    folder = tmp_path / "watched"
    folder.mkdir()
    for n in range(FILES):
        (folder / f"note-{n:03d}.txt").write_text(f"Field note {n}: {n * 7} seals counted.")
    log = tmp_path / "watch.log"

    # Killed during the catch-up of the new files.
    proc = _relata(c, log, "watch", str(folder), "--no-process")
    _kill_when(proc, lambda: len(_tracked(c, folder)) >= 5, log)
    at_kill = len(_tracked(c, folder))
    assert 0 < at_kill < FILES, "the kill should land in the middle of the batch"

    # While it is down: a tracked file edited, another deleted, one added.
    tracked = _tracked(c, folder)
    edited = sorted(tracked)[0]
    (folder / edited).write_text("Field note, corrected: 12 seals counted.")
    deleted = sorted(tracked)[1]
    (folder / deleted).unlink()
    (folder / "late.txt").write_text("Added while the watcher was down.")

    # Started again: it catches up, watches, and is killed in the middle of a burst of new
    # files (the events' batch).
    proc = _relata(c, log, "watch", str(folder), "--no-process")
    _wait(lambda: "late.txt" in _tracked(c, folder) and edited_version(c, ws, tracked[edited]))
    burst = folder / "burst"
    burst.mkdir()
    for n in range(20):
        (burst / f"b-{n:02d}.txt").write_text(f"Burst note {n} about terns.")
    _kill_when(proc, lambda: any(p.startswith("burst/") for p in _tracked(c, folder)), log)
    in_burst = sum(p.startswith("burst/") for p in _tracked(c, folder))
    assert in_burst < 20, "the kill should land in the middle of the burst"

    # The last start catches up and stops.
    done = _relata(c, log, "watch", str(folder), "--once", "--no-process")
    assert done.wait(120) == 0, log.read_text()
    _assert_in_step(c, folder)
    edited_id = str(_tracked(c, folder)[edited])
    assert [v.number for v in c.versions.list(ws, edited_id)] == [2, 1]
    status = c.watches.statuses(ws)[0]
    assert status.tracked == FILES + 20 and status.failed == 0
