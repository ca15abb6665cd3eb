"""``relata serve`` on a new data dir migrates it and logs which data dir and database it uses,
the database password redacted."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import sqlalchemy as sa


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _starting_record(env: dict[str, str], log: Path) -> dict[str, object]:
    """Run ``relata serve`` until it logs "starting", stop it, and return that record."""
    full = {k: v for k, v in os.environ.items() if not k.startswith("RELATA_")}
    full.update(env, RELATA_HTTP_ADDR=f"127.0.0.1:{_free_port()}", RELATA_WORKERS="0")
    full.update(RELATA_EMBEDDING_PROVIDER="none", RELATA_SHUTDOWN_TIMEOUT="5")
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "relata.cli.main", "serve"], env=full, stdout=out, stderr=out
        )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            # Only whole lines: the server may be half-way through writing the last one.
            for line in log.read_text().split("\n")[:-1]:
                if line.startswith("{") and json.loads(line).get("msg") == "starting":
                    record: dict[str, object] = json.loads(line)
                    return record
            assert proc.poll() is None, log.read_text()
            time.sleep(0.1)
        raise AssertionError(f"relata serve did not start:\n{log.read_text()}")
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        finally:
            if proc.poll() is None:
                proc.kill()


def test_serve_on_a_new_sqlite_data_dir_migrates_it_and_logs_where_it_is(tmp_path: Path) -> None:
    data = tmp_path / "data"
    record = _starting_record({"RELATA_DATA_DIR": str(data)}, tmp_path / "serve.log")
    assert record["data_dir"] == str(data)
    assert record["database"] == f"sqlite:///{data / 'relata.db'}"
    assert (data / "relata.db").is_file() and record["schema"]


def test_serve_logs_a_postgresql_database_with_its_password_redacted(
    tmp_path: Path, postgres_url: str
) -> None:
    url = sa.make_url(postgres_url).set(password="s3cret-pw")
    env = {
        "RELATA_DATA_DIR": str(tmp_path / "data"),
        "RELATA_DATABASE_URL": url.render_as_string(hide_password=False),
        # This server has no pgvector (the default store with PostgreSQL): serve would stop.
        "RELATA_VECTOR_STORE": "sqlite-vec",
    }
    log = tmp_path / "serve.log"
    record = _starting_record(env, log)
    assert "s3cret-pw" not in log.read_text()
    assert record["database"] == url.render_as_string(hide_password=True)
    assert record["db"] == "postgresql"
