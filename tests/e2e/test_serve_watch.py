"""``relata serve`` with RELATA_WATCH_DIR keeps the folder in step from the process that runs
the background workers, records its status in the database, and stops it on SIGTERM
(docs/decisions/0047-watched-folder.md)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.e2e.test_cli_serve import _free_port

# slow: a real `relata serve` with workers.
pytestmark = pytest.mark.slow


def _rows(db: Path, sql: str) -> list[tuple[object, ...]]:
    if not db.is_file():
        return []
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
    try:
        return conn.execute(sql).fetchall()
    except sqlite3.OperationalError:  # not migrated yet
        return []
    finally:
        conn.close()


def _until(check: Callable[[], bool], proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 90
    while not check():
        assert proc.poll() is None, log.read_text()
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.1)


@pytest.mark.parametrize("processes", ["1", "2"])  # one process; a supervisor and two HTTP
def test_serve_watches_the_configured_folder_and_stops_it_on_sigterm(
    tmp_path: Path, processes: str
) -> None:
    data, folder = tmp_path / "data", tmp_path / "inbox"
    folder.mkdir()
    (folder / "first.txt").write_text("The first note of the inbox, about the estuary.")
    env = {k: v for k, v in os.environ.items() if not k.startswith("RELATA_")}
    env.update(
        RELATA_DATA_DIR=str(data),
        RELATA_HTTP_ADDR=f"127.0.0.1:{_free_port()}",
        RELATA_HTTP_PROCESSES=processes,
        RELATA_WORKERS="1",
        RELATA_EMBEDDING_PROVIDER="none",
        RELATA_ANALYSIS_ENABLED="false",
        RELATA_SHUTDOWN_TIMEOUT="10",
        RELATA_WATCH_DIR=str(folder),
    )
    db = data / "relata.db"
    log = tmp_path / "serve.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "relata.cli.main", "serve"], env=env, stdout=out, stderr=out
        )
    try:
        ready = (
            "SELECT count(*) FROM watched_files w JOIN items i ON i.id = w.item_id "
            "WHERE i.status = 'ready'"
        )
        _until(lambda: _rows(db, ready) == [(1,)], proc, log)
        (folder / "second.txt").write_text("A second note, written while serve runs.")
        _until(lambda: _rows(db, ready) == [(2,)], proc, log)
        status = _rows(db, "SELECT root, state, ingested, last_scan_at FROM watches")
        assert status[0][:3] == (str(folder.resolve()), "running", 2) and status[0][3]
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0, log.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert _rows(db, "SELECT state FROM watches") == [("stopped",)]
