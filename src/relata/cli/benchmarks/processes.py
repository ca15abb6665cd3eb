"""The pipeline run by ``relata worker --processes N`` for a benchmark: the real command as a
child process over the benchmark's data dir and database, its CPU and (on PostgreSQL) the
database backends' CPU, so a report says where the time went.

The workers' CPU is the supervisor's and its children's, counted by the kernel once the
supervisor has been reaped (``RUSAGE_CHILDREN``). The database's is the CPU of the backends
serving the benchmark's database when the workers stop (``pg_stat_activity`` and
``/proc/<pid>/stat``): connections closed before the end are missed, so it is a floor, and it
is only available when the server runs on this machine.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa

from relata.bootstrap import Container
from relata.cli.common import CliError
from relata.ingest.bulk import Settled, wait_until_settled

_STOP_SECONDS = 120.0


@dataclass(frozen=True, slots=True)
class ProcessRun:
    settled: Settled
    worker_cpu_seconds: float
    database_cpu_seconds: float | None


def run_pipeline_in_processes(
    c: Container,
    workspace_id: str,
    item_ids: list[str],
    *,
    processes: int,
    workers: int | None,
    timeout: float,
) -> ProcessRun:
    """Start ``relata worker --processes N`` on ``c``'s data dir and database, wait until the
    items settle (or ``timeout``), SIGTERM it and wait for the drain."""
    s = c.settings
    env = {
        **os.environ,
        "RELATA_DATA_DIR": str(s.data_path),
        "RELATA_DATABASE_URL": s.resolved_database_url,
        "RELATA_LOG_LEVEL": "error",
    }
    argv = [sys.executable, "-m", "relata.cli.main", "worker", "--processes", str(processes)]
    if workers is not None:
        argv += ["--workers", str(workers)]
    before = _children_cpu()
    db_before = backend_cpu_seconds(c)
    proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL)  # noqa: S603 (own argv)
    try:
        settled = wait_until_settled(
            c.repos.items, c.queue, workspace_id, item_ids, timeout=timeout, poll_seconds=0.1
        )
        db_after = backend_cpu_seconds(c)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(_STOP_SECONDS + s.shutdown_timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise CliError("the worker processes did not stop after SIGTERM") from None
    if code != 0:
        raise CliError(f"relata worker --processes {processes} exited with {code}")
    database = None
    if db_before is not None and db_after is not None:
        database = round(db_after - db_before, 3)
    return ProcessRun(settled, round(_children_cpu() - before, 3), database)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def backend_cpu_seconds(c: Container) -> float | None:
    """CPU seconds of the PostgreSQL backends connected to ``c``'s database now, read from
    /proc; None on SQLite or when the server's processes are not visible here."""
    if c.db.dialect != "postgresql":
        return None
    with c.db.read() as conn:
        pids = conn.execute(
            sa.text("SELECT pid FROM pg_stat_activity WHERE datname = current_database()")
        ).scalars()
        found = [_process_cpu(int(pid)) for pid in pids]
    seen = [cpu for cpu in found if cpu is not None]
    return sum(seen) if seen else None


def _process_cpu(pid: int) -> float | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    ticks = int(fields[11]) + int(fields[12])  # utime, stime
    return ticks / os.sysconf("SC_CLK_TCK")
