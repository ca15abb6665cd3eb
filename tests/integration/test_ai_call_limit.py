"""RELATA_AI_CONCURRENCY across processes (docs/decisions/0033-worker-processes.md): model
calls from several processes of one deployment never exceed it at the model server, on
SQLite (file locks on the machine) and PostgreSQL (advisory locks in the database); a slot
held by a process that is SIGKILLed is free again; one take holds one slot; a caller waiting
for a slot honours its cancellation."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from relata.bootstrap import Container, build
from relata.concurrency import AiCallLimiter, FileSlots
from relata.config.settings import load_settings
from relata.domain.cancel import Cancel, Cancelled
from relata.storage.sql import migrate
from relata.storage.sql.ai_slots import (
    AdvisorySlots,
    local_model_gate,
    model_server_gate,
)
from relata.storage.sql.engine import Database
from tests.support.worker_processes import ROOT, CountingProvider, wait_until

LIMIT = 2


@pytest.fixture
def provider() -> Iterator[CountingProvider]:
    # Each request is held long enough for concurrent callers to overlap at the server.
    with CountingProvider(dimensions=8, hold=0.05) as p:
        yield p


def env_for(database_url: str, tmp: Path, provider: CountingProvider, limit: int) -> dict[str, str]:
    return {
        **os.environ,
        "RELATA_DATABASE_URL": database_url,
        "RELATA_DATA_DIR": str(tmp / "data"),
        "RELATA_EMBEDDING_PROVIDER": "openai",
        "RELATA_OPENAI_BASE_URL": f"{provider.url}/v1",
        "RELATA_EMBEDDING_MODEL": "fake-embed",
        "RELATA_EMBEDDING_DIMENSIONS": "8",
        "RELATA_AI_CONCURRENCY": str(limit),
        "RELATA_LOG_LEVEL": "warning",
    }


def caller(env: dict[str, str], tmp: Path, name: str, *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.support.ai_caller",
            *args,
            "--ready-file",
            str(tmp / f"{name}.ready"),
        ],
        cwd=ROOT,
        env=env,
    )


def test_the_ai_call_limit_holds_across_processes(
    database_url: str, tmp_path: Path, provider: CountingProvider
) -> None:
    env = env_for(database_url, tmp_path, provider, LIMIT)
    go = tmp_path / "go"
    procs = [
        caller(
            env, tmp_path, f"p{i}", "calls", "--threads", "3", "--calls", "6", "--go-file", str(go)
        )
        for i in range(3)
    ]
    try:
        wait_until(
            lambda: all((tmp_path / f"p{i}.ready").exists() for i in range(3)),
            timeout=120,
            what="three calling processes",
        )
        go.touch()
        assert [p.wait(300) for p in procs] == [0, 0, 0]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert provider.served == 3 * 3 * 6
    # Nine threads in three processes asked at once; the server saw at most two at a time,
    # and did see two (the limit is reached, not replaced by one call at a time).
    assert provider.peak == LIMIT


def built(database_url: str, tmp: Path, provider: CountingProvider, limit: int) -> Container:
    c = build(load_settings(env_for(database_url, tmp, provider, limit)))
    migrate.upgrade(c.db)
    return c


def test_a_slot_held_by_a_killed_process_is_free_again(
    database_url: str, tmp_path: Path, provider: CountingProvider
) -> None:
    c = built(database_url, tmp_path, provider, 1)
    gate = c.ai_limiter.gate
    assert gate is not None
    holder = caller(env_for(database_url, tmp_path, provider, 1), tmp_path, "holder", "hold")
    try:
        wait_until(lambda: (tmp_path / "holder.ready").exists(), timeout=120, what="the holder")
        assert gate.try_acquire() is None  # the only slot is the holder's
        os.kill(holder.pid, signal.SIGKILL)
        assert holder.wait(60) == -signal.SIGKILL
        taken = []
        wait_until(
            lambda: bool(taken.append(gate.try_acquire()) or taken[-1]),
            timeout=60,
            what="the killed holder's slot to come back",
        )
        slot = taken[-1]
        assert slot is not None
        slot.release()
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
        c.close()


@pytest.mark.postgres
def test_one_take_holds_exactly_one_advisory_slot(postgres_url: str) -> None:
    db = Database.from_url(postgres_url)
    try:
        slots = AdvisorySlots(db, 3)
        held = []
        for n in range(1, 4):
            s = slots.try_acquire()
            assert s is not None
            held.append(s)
            assert slots.held() == n  # one statement took one lock, never more
        assert slots.try_acquire() is None
        held.pop().release()
        assert slots.held() == 2
        again = slots.try_acquire()
        assert again is not None and slots.held() == 3
        for s in [*held, again]:
            s.release()
            s.release()  # idempotent
        assert slots.held() == 0
    finally:
        db.dispose()


def test_file_slots_are_contended_by_threads_of_one_process_too(tmp_path: Path) -> None:
    slots = FileSlots(tmp_path / "slots", 2)
    first, second = slots.try_acquire(), slots.try_acquire()
    assert first is not None and second is not None
    found: list[object] = []
    t = threading.Thread(target=lambda: found.append(slots.try_acquire()))
    t.start()
    t.join()
    assert found == [None]
    first.release()
    third = slots.try_acquire()
    assert third is not None
    second.release()
    third.release()


def test_a_caller_waiting_for_a_shared_slot_can_be_cancelled(tmp_path: Path) -> None:
    slots = FileSlots(tmp_path / "slots", 1)
    taken = slots.try_acquire()
    assert taken is not None
    limiter = AiCallLimiter(1, gate=slots)
    cancel = Cancel()
    threading.Timer(0.2, cancel.cancel, args=("test over",)).start()
    with pytest.raises(Cancelled), limiter.slot("embed", cancel):
        pytest.fail("entered a slot that another process holds")
    taken.release()
    with limiter.slot("embed", Cancel.never()):  # and it is usable afterwards
        pass


def test_the_local_model_shares_slots_per_deployment_on_this_machine(tmp_path: Path) -> None:
    one = Database.from_url(f"sqlite:///{tmp_path / 'a' / 'relata.db'}")
    same = Database.from_url(f"sqlite:///{tmp_path / 'a' / '..' / 'a' / 'relata.db'}")
    other = Database.from_url(f"sqlite:///{tmp_path / 'b' / 'relata.db'}")
    try:
        gates = [local_model_gate(db, 2) for db in (one, same, other)]
        dirs = [g.directory for g in gates if isinstance(g, FileSlots)]
        assert len(dirs) == 3 and dirs[0] == dirs[1] != dirs[2]
        # A model server's slots are another set (its calls do not use the cores).
        server = model_server_gate(one, 2)
        assert isinstance(server, FileSlots) and server.directory != dirs[0]
    finally:
        for db in (one, same, other):
            db.dispose()


@pytest.mark.postgres
def test_a_model_server_on_postgresql_is_limited_in_the_database(postgres_url: str) -> None:
    db = Database.from_url(postgres_url)
    try:
        assert isinstance(model_server_gate(db, 2), AdvisorySlots)
        assert isinstance(local_model_gate(db, 2), FileSlots)  # the cores are per machine
    finally:
        db.dispose()
