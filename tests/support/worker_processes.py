"""Helpers for the worker-process tests: ``relata worker --processes N`` run for real, a small
synthetic corpus with names, numbers and shared subjects (so every knowledge stage has
something to write), an embedding server that counts its concurrent requests, and the
invariants a finished ingest must hold whatever was killed on the way.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from relata.ingest.service import IngestRequest
from relata.storage.sql.engine import Database
from tests.support.fake_provider import FakeProvider

ROOT = Path(__file__).resolve().parents[2]

_FIRST = ["Alice", "Bruno", "Carla", "Dmitri", "Elena", "Farid", "Grace", "Hiro", "Ingrid", "Jonas"]
_LAST = ["Morgan", "Chen", "Diaz", "Okafor", "Lindqvist", "Haddad", "Ito", "Berg", "Novak", "Silva"]
_PREFIX = ["Norland", "Vexa", "Brightwater", "Quarry", "Helix", "Tamsin", "Orbital", "Crescent"]
_SUFFIX = ["Foods", "Energy", "Robotics", "Textiles", "Pharma", "Logistics", "Media", "Mining"]
_CITIES = ["Paris", "Berlin", "Toronto", "Nairobi", "Osaka", "Lima", "Oslo", "Madrid"]


def corpus(n: int) -> list[IngestRequest]:
    """``n`` short, distinct text items in groups of ten that share a person and a company,
    so entities recur, claims about one company can conflict and items relate."""
    out = []
    for i in range(n):
        g = i // 10
        person = f"{_FIRST[g % 10]} {_LAST[(g // 10) % 10]}"
        company = f"{_PREFIX[g % 8]} {_SUFFIX[(g // 8) % 8]}"
        city = _CITIES[i % 8]
        text = (
            f"{person} joined {company} in {city} in {1990 + i % 30}. "
            f"{company} reported revenue of {10 + i % 90} million dollars in {2000 + i % 20}. "
            f"Note {i}."
        )
        out.append(IngestRequest(text=text, title=f"Note {i}"))
    return out


class CountingProvider(FakeProvider):
    """The fake model server, holding every request ``hold`` seconds and recording the most
    requests it had in flight at once."""

    def __init__(self, *, hold: float = 0.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.hold = hold
        self.in_flight = 0
        self.peak = 0
        self.served = 0
        self._count_lock = threading.Lock()

    def answer(self, method: str, path: str, doc: Any) -> tuple[int, Any]:
        with self._count_lock:
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
        try:
            if self.hold:
                time.sleep(self.hold)
            return super().answer(method, path, doc)
        finally:
            with self._count_lock:
                self.in_flight -= 1
                self.served += 1


def children_of(pid: int) -> list[int]:
    """The live child processes of ``pid`` (Linux: /proc)."""
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(p) for p in text.split()]


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


class Supervised:
    """``relata worker --processes N`` as a real command, its output in ``log``."""

    def __init__(self, tmp: Path, env: Mapping[str, str], *args: str) -> None:
        self.log = tmp / "supervisor.log"
        self.seen: set[int] = set()
        with self.log.open("w") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "relata.cli.main", "worker", *args],
                cwd=ROOT,
                env={**os.environ, **env},
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    def children(self) -> list[int]:
        pids = children_of(self.proc.pid)
        self.seen.update(pids)
        return pids

    def running(self) -> bool:
        if self.proc.poll() is not None:
            raise AssertionError(f"the supervisor exited early:\n{self.output()}")
        return True

    def output(self) -> str:
        return self.log.read_text()

    def stop(self, timeout: float) -> int:
        """SIGTERM the supervisor; its exit code (it drains its children first)."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the supervisor did not stop:\n{self.output()}") from None

    def close(self) -> None:
        """Kill whatever is left (a failed test must not leave processes at work)."""
        for pid in self.children():
            _kill(pid)
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        for pid in self.seen:
            _kill(pid)


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def wait_until(
    predicate: Callable[[], bool], *, timeout: float, what: str, every: float = 0.2
) -> None:
    """Poll ``predicate``; the timeout only guards against a hang, it asserts no speed."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(every)


# ---------------------------------------------------------------- what the database holds
_OWNER_PID = re.compile(r":(\d+)/")


def running_jobs_by_pid(db: Database) -> dict[int, list[str]]:
    """pid -> ids of the jobs it holds a lease on now (from the lease owner token)."""
    with db.read() as conn:
        rows = conn.execute(
            sa.text("SELECT id, lease_owner FROM jobs WHERE status = 'running'")
        ).all()
    held: dict[int, list[str]] = {}
    for job_id, owner in rows:
        m = _OWNER_PID.search(owner or "")
        if m:
            held.setdefault(int(m.group(1)), []).append(job_id)
    return held


def item_statuses(db: Database) -> dict[str, int]:
    with db.read() as conn:
        rows = conn.execute(sa.text("SELECT status, count(*) FROM items GROUP BY status")).all()
    return {str(s): int(n) for s, n in rows}


def scalar(db: Database, sql: str, **params: object) -> Any:
    with db.read() as conn:
        return conn.execute(sa.text(sql), params).scalar_one()


def rows(db: Database, sql: str, **params: object) -> list[Any]:
    with db.read() as conn:
        return list(conn.execute(sa.text(sql), params).all())


#: Natural keys that must be unique in the knowledge a pipeline writes. Entities, claims and
#: relationships have unique constraints on their identity; these are the keys a re-run could
#: still duplicate (an observation has no unique key at all).
DUPLICATE_QUERIES = {
    "chunk": "SELECT item_id, sequence FROM chunks GROUP BY item_id, sequence HAVING count(*) > 1",
    "entity": "SELECT entity_type, normalised_key FROM entities "
    "GROUP BY entity_type, normalised_key HAVING count(*) > 1",
    "entity observation": "SELECT entity_id, item_id, start_offset, end_offset, extractor "
    "FROM entity_observations "
    "GROUP BY entity_id, item_id, start_offset, end_offset, extractor HAVING count(*) > 1",
    "claim": "SELECT item_id, start_offset, end_offset, statement FROM claims "
    "GROUP BY item_id, start_offset, end_offset, statement HAVING count(*) > 1",
    "relationship": "SELECT source_id, target_id, relationship_type FROM relationships "
    "GROUP BY source_id, target_id, relationship_type HAVING count(*) > 1",
    "succeeded job": "SELECT idempotency_key FROM jobs WHERE status = 'succeeded' "
    "GROUP BY idempotency_key HAVING count(*) > 1",
    "stage run": "SELECT item_id, stage FROM processing_runs WHERE outcome = 'succeeded' "
    "GROUP BY item_id, stage HAVING count(*) > 1",
}


def duplicates(db: Database) -> Iterator[tuple[str, list[Any]]]:
    for what, sql in DUPLICATE_QUERIES.items():
        found = rows(db, sql)
        if found:
            yield what, found[:5]
