"""A worker *process* for the job queue's multi-process tests.

    python -m tests.support.job_worker --db URL --data-dir DIR --name W --mode until-idle ...

``until-idle``: write ``--ready-file``, wait for ``--go-file`` (so several processes start
together), run the pool until no job is pending or running, drain, exit 0.
``signal``: write ``--ready-file`` once the pool runs, then behave exactly like
``relata worker`` (``run_until_signalled``): exit 0 when drained on SIGTERM, 5 when the
deadline left jobs running. ``--max-seconds`` bounds every mode (exit 3), so a broken test
never leaves a process behind.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path

import sqlalchemy as sa

from relata.bootstrap import build
from relata.config.settings import Settings
from relata.jobs.runner import run_until_signalled
from relata.observability.logging import configure_logging
from relata.storage.sql.engine import Database
from relata.storage.sql.tables import jobs
from tests.support.jobs import job_settings, register_test_handlers


def _unfinished(db: Database) -> int:
    with db.read() as conn:
        return int(
            conn.execute(
                sa.select(sa.func.count())
                .select_from(jobs)
                .where(jobs.c.status.in_(["pending", "running"]))
            ).scalar_one()
        )


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--db", required=True)
    p.add_argument("--data-dir", required=True)
    p.add_argument("--name", required=True)
    p.add_argument("--mode", choices=["until-idle", "signal"], required=True)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--ready-file", type=Path, required=True)
    p.add_argument("--go-file", type=Path)
    p.add_argument("--started-dir", type=Path)
    p.add_argument("--shutdown-timeout", type=float, default=5.0)
    p.add_argument("--max-seconds", type=float, default=60.0)
    # Long by default: the tests recover on a manual clock moved past the lease, so its
    # length costs no time, and a long lease cannot expire under a slow, loaded machine.
    p.add_argument("--lease-seconds", type=float, default=30.0)
    args = p.parse_args(argv)

    configure_logging("warning", "text")
    watchdog = threading.Timer(args.max_seconds, os._exit, args=(3,))
    watchdog.daemon = True
    watchdog.start()
    settings = job_settings(
        Settings(data_dir=args.data_dir, database_url=args.db, workers=args.workers)
    )
    settings = settings.replace(job_lease_seconds=args.lease_seconds)
    c = build(settings)
    register_test_handlers(c, args.name, args.started_dir)
    pool = c.worker_pool(name=args.name)
    try:
        if args.mode == "signal":
            drained = run_until_signalled(
                pool, args.shutdown_timeout, on_ready=args.ready_file.touch
            )
            return 0 if drained else 5
        args.ready_file.touch()
        while args.go_file is not None and not args.go_file.exists():
            time.sleep(0.01)
        pool.start()
        while _unfinished(c.db) > 0:
            time.sleep(0.05)
        return 0 if pool.stop(5.0) else 5
    finally:
        c.close()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
