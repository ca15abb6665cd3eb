"""The job queue across real worker *processes*, on SQLite and PostgreSQL: a worker killed
with SIGKILL mid-job is recovered by another, two processes draining one queue run every job
exactly once, and SIGTERM drains a process leaving its unfinished job recoverable.

The processes run ``tests.support.job_worker`` on the system clock, with leases long enough
that none expires on a loaded machine (an expired lease legitimately re-runs a job, which
the exactly-once count would misreport as a double claim). The test process enqueues on a
``ManualClock`` started at the real time and, to recover, moves it an hour ahead, so nothing
sleeps through a lease."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from relata.bootstrap import Container
from relata.config.settings import Settings
from relata.domain.clock import ManualClock
from relata.domain.models import JobStatus
from relata.jobs.retry import Backoff
from relata.jobs.worker import WorkerPool
from tests.support.jobs import (
    EFFECT,
    RECORD,
    build_jobs_container,
    effect_count,
    execution_counts,
    executions_by_worker,
    later_clock,
    register_test_handlers,
    wait_for,
)

# slow: real worker processes (make test-fast leaves them out).
pytestmark = [pytest.mark.both_dialects, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
JOBS = 200


@pytest.fixture
def clock() -> ManualClock:
    return later_clock()


@pytest.fixture
def jc(settings: Settings, clock: ManualClock, tmp_path: Path) -> Iterator[Container]:
    c = build_jobs_container(settings, clock)
    register_test_handlers(c, "recoverer", tmp_path / "started")
    try:
        yield c
    finally:
        c.close()


@pytest.fixture
def ws(jc: Container) -> str:
    return jc.workspaces.resolve().id


class WorkerProcess:
    def __init__(self, jc: Container, tmp: Path, name: str, *args: str) -> None:
        self.ready = tmp / f"{name}.ready"
        self.log = tmp / f"{name}.log"
        (tmp / "started").mkdir(exist_ok=True)
        with self.log.open("w") as out:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "tests.support.job_worker",
                    "--db",
                    jc.settings.resolved_database_url,
                    "--data-dir",
                    str(tmp / name),
                    "--name",
                    name,
                    "--ready-file",
                    str(self.ready),
                    "--started-dir",
                    str(tmp / "started"),
                    *args,
                ],
                cwd=ROOT,
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    def alive(self) -> bool:
        if self.proc.poll() is not None:
            raise AssertionError(f"worker exited early:\n{self.log.read_text()}")
        return True

    def wait(self, timeout: float = 60.0) -> int:
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise AssertionError(f"worker did not exit:\n{self.log.read_text()}") from None

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


def recoverer(jc: Container) -> WorkerPool:
    return WorkerPool(
        jc.queue,
        jc.registry,
        jc.ai_limiter,
        workers=1,
        poll_seconds=0.02,
        backoff=Backoff(0.5, 4.0),
        metrics=jc.metrics,
        name="recoverer",
    )


def test_a_job_whose_worker_was_killed_is_completed_by_another_exactly_once(
    jc: Container, ws: str, tmp_path: Path, clock: ManualClock
) -> None:
    job = jc.queue.enqueue(EFFECT, ws, {"block_attempts": 1})
    worker = WorkerProcess(jc, tmp_path, "doomed", "--mode", "signal", "--workers", "1")
    try:
        wait_for(
            lambda: worker.alive() and (tmp_path / "started" / job.id).exists(),
            what="the job to start",
        )
        os.kill(worker.proc.pid, signal.SIGKILL)  # mid-job: effect written, not completed
        assert worker.wait() == -signal.SIGKILL
    finally:
        worker.close()
    crashed = jc.queue.get(ws, job.id)
    assert crashed.status is JobStatus.RUNNING and crashed.lease_owner is not None
    assert crashed.lease_owner.startswith("doomed/")

    clock.advance(3600)  # long past the dead worker's lease
    pool = recoverer(jc)
    assert [j.id for j in pool.reap()] == [job.id]  # its lease expired: back to the queue
    done = pool.run_one()
    assert done is not None and done.id == job.id
    assert done.status is JobStatus.SUCCEEDED and done.attempts == 2
    assert effect_count(jc.db, job.id) == 1  # the effect exists exactly once
    assert execution_counts(jc.db) == {job.id: 2}  # run twice: once killed, once completed


def test_two_worker_processes_run_every_job_exactly_once(
    jc: Container, ws: str, tmp_path: Path
) -> None:
    # A few milliseconds of work per job: a claim alone takes well under a millisecond, so
    # without it one process could drain the queue before the other's first claim.
    jobs = [jc.queue.enqueue(RECORD, ws, {"n": i, "work_ms": 5}) for i in range(JOBS)]
    go = tmp_path / "go"
    workers = [
        WorkerProcess(jc, tmp_path, name, "--mode", "until-idle", "--go-file", str(go))
        for name in ("w1", "w2")
    ]
    try:
        wait_for(
            lambda: all(w.alive() and w.ready.exists() for w in workers),
            what="both workers ready",
        )
        go.touch()  # both start claiming together
        codes = [w.wait() for w in workers]
        assert codes == [0, 0], [w.log.read_text() for w in workers]
    finally:
        for w in workers:
            w.close()
    counts = execution_counts(jc.db)
    assert len(counts) == JOBS and set(counts.values()) == {1}, "a job ran twice or never"
    assert {j.id for j in jobs} == set(counts)
    assert set(executions_by_worker(jc.db)) == {"w1", "w2"}  # both really took part
    assert {j.status for j in jc.queue.list(ws, limit=1000)} == {JobStatus.SUCCEEDED}


def test_sigterm_drains_the_process_and_its_unfinished_job_is_recovered(
    jc: Container, ws: str, tmp_path: Path, clock: ManualClock
) -> None:
    stuck = jc.queue.enqueue(EFFECT, ws, {"block_attempts": 1})
    worker = WorkerProcess(
        jc,
        tmp_path,
        "drained",
        "--mode",
        "signal",
        "--workers",
        "1",
        "--shutdown-timeout",
        "0.5",
    )
    try:
        wait_for(
            lambda: worker.alive() and (tmp_path / "started" / stuck.id).exists(),
            what="the job to start",
        )
        worker.proc.send_signal(signal.SIGTERM)
        assert worker.wait() == 5, worker.log.read_text()  # exited; the job did not finish
    finally:
        worker.close()
    left = jc.queue.get(ws, stuck.id)
    assert left.status is JobStatus.RUNNING and left.lease_owner is not None

    clock.advance(3600)
    pool = recoverer(jc)
    assert [j.id for j in pool.reap()] == [stuck.id]
    done = pool.run_one()
    assert done is not None and done.status is JobStatus.SUCCEEDED
    assert effect_count(jc.db, stuck.id) == 1
