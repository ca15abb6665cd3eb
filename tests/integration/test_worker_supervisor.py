"""The worker supervisor with real child processes: it restarts a child that dies, gives up
(non-zero) on one that keeps dying, kills a child that outlives the drain deadline, and its
children drain by themselves when the supervisor is killed. ``relata worker --processes``
refuses a missing database before it starts anything."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from relata.jobs.supervisor import (
    EXIT_CHILDREN_FAILING,
    EXIT_OK,
    ProcessSupervisor,
    RestartPolicy,
)
from relata.storage.sql import migrate
from relata.storage.sql.engine import Database
from tests.support.worker_processes import ROOT, Supervised, alive, wait_until

QUICK = RestartPolicy(
    max_restarts=2, healthy_seconds=3600, backoff_seconds=0.01, backoff_max_seconds=0.05
)


def python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


class Running:
    """A supervisor's ``run`` in a thread, stopped (and its children reaped) at the end."""

    def __init__(self, supervisor: ProcessSupervisor) -> None:
        self.supervisor = supervisor
        self.stop = threading.Event()
        self.code: int | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        self.code = self.supervisor.run(self.stop)

    def finish(self, timeout: float = 60) -> int | None:
        self.stop.set()
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "the supervisor did not stop"
        return self.code


@pytest.fixture
def running() -> Iterator[list[Running]]:
    started: list[Running] = []
    yield started
    for r in started:
        for pid in r.supervisor.pids:
            os.kill(pid, signal.SIGKILL)
        r.finish()


def test_a_child_that_keeps_dying_makes_the_supervisor_give_up_non_zero(tmp_path: Path) -> None:
    starts = tmp_path / "starts"
    starts.mkdir()
    code = (
        f"import os, sys; open(os.path.join({str(starts)!r}, str(os.getpid())), 'w'); sys.exit(3)"
    )
    supervisor = ProcessSupervisor([python(code)], shutdown_timeout=1, policy=QUICK)
    assert supervisor.run(threading.Event()) == EXIT_CHILDREN_FAILING
    assert len(list(starts.iterdir())) == QUICK.max_restarts + 1  # the first start, 2 restarts


def test_a_killed_child_is_restarted_and_a_stop_ends_every_child(
    running: list[Running],
) -> None:
    sleeper = python("import time; time.sleep(600)")
    supervisor = ProcessSupervisor([sleeper, sleeper], shutdown_timeout=5, policy=QUICK)
    r = Running(supervisor)
    running.append(r)
    wait_until(lambda: len(supervisor.pids) == 2, timeout=60, what="two children")
    first = supervisor.pids
    os.kill(first[0], signal.SIGKILL)
    wait_until(
        lambda: len(supervisor.pids) == 2 and supervisor.pids != first,
        timeout=60,
        what="the killed child to be replaced",
    )
    assert first[1] in supervisor.pids  # the other one was left alone
    every = set(first) | set(supervisor.pids)
    assert r.finish() == EXIT_OK  # SIGTERM ends the sleepers
    assert not [p for p in every if alive(p)]


def test_a_child_that_outlives_the_drain_deadline_is_killed(running: list[Running]) -> None:
    stubborn = python(
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"
    )
    supervisor = ProcessSupervisor(
        [stubborn], shutdown_timeout=0.2, exit_grace_seconds=0.5, policy=QUICK
    )
    r = Running(supervisor)
    running.append(r)
    wait_until(lambda: len(supervisor.pids) == 1, timeout=60, what="the child")
    pid = supervisor.pids[0]
    assert r.finish() == EXIT_OK
    assert not alive(pid)


@pytest.mark.slow
def test_worker_processes_drain_by_themselves_when_the_supervisor_is_killed(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    db = Database.from_url(f"sqlite:///{data / 'relata.db'}")
    migrate.upgrade(db)
    db.dispose()
    env = {
        "RELATA_DATA_DIR": str(data),
        "RELATA_DATABASE_URL": "",
        "RELATA_EMBEDDING_PROVIDER": "none",
        "RELATA_LOG_FORMAT": "text",
    }
    sup = Supervised(tmp_path, env, "--processes", "2", "--workers", "1")
    try:
        wait_until(
            lambda: (
                sup.running()
                and len(sup.children()) == 2
                # each child logs its pool's start, so both are past start-up
                and sup.output().count("workers started") == 2
            ),
            timeout=120,
            what="two worker processes at work",
        )
        children = sup.children()
        sup.proc.kill()
        sup.proc.wait(30)
        wait_until(
            lambda: not [p for p in children if alive(p)],
            timeout=60,
            what="the orphaned workers to drain and exit",
        )
        assert sup.output().count("the supervisor went away; draining") == 2
    finally:
        sup.close()


def test_worker_processes_refuse_a_missing_database_before_starting_any(
    tmp_path: Path,
) -> None:
    done = worker_command(tmp_path / "nothing", "--processes", "3")
    assert done.returncode == 1
    assert "no database at" in done.stderr
    assert "worker process started" not in done.stderr


def test_worker_processes_are_refused_outside_one_to_sixty_four(tmp_path: Path) -> None:
    done = worker_command(tmp_path, "--processes", "0")
    assert done.returncode == 1
    assert "1-64 processes" in done.stderr


def worker_command(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``relata worker ARGS`` on ``data_dir`` (SQLite), run to its end."""
    env = {**os.environ, "RELATA_DATA_DIR": str(data_dir), "RELATA_DATABASE_URL": ""}
    return subprocess.run(
        [sys.executable, "-m", "relata.cli.main", "worker", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
