"""``relata worker`` (background workers only, no HTTP) and ``relata jobs`` (list jobs)."""

from __future__ import annotations

import argparse
import json
import logging
from typing import Any

from relata.cli.common import CliError, open_container
from relata.domain.models import Job, JobStatus
from relata.jobs.runner import run_until_signalled
from relata.storage.sql import migrate

log = logging.getLogger("relata.worker")

_STATUSES = [s.value for s in JobStatus]


def register(sub: Any) -> None:
    p = sub.add_parser(
        "worker",
        help="run background workers only (no HTTP); drains on SIGTERM/SIGINT",
        description="Claim and run background jobs with RELATA_WORKERS threads until "
        "SIGTERM/SIGINT, then drain for up to RELATA_SHUTDOWN_TIMEOUT seconds. Run as many "
        "worker processes, on as many machines, as the database can serve.",
    )
    p.add_argument(
        "--workers", type=int, default=None, metavar="N", help="threads (default RELATA_WORKERS)"
    )
    p.set_defaults(handler=_worker)

    p = sub.add_parser("jobs", help="list the default workspace's background jobs")
    p.add_argument("--status", choices=_STATUSES, help="only jobs in this state")
    p.add_argument("--kind", help="only jobs of this kind")
    p.add_argument("--limit", type=int, default=50, help="how many (1-1000, default 50)")
    p.add_argument("--offset", type=int, default=0, help="skip this many (newest first)")
    p.add_argument("--json", action="store_true", help="one JSON array instead of a table")
    p.set_defaults(handler=_jobs)


def _worker(args: argparse.Namespace) -> int:
    with open_container() as c:
        if not migrate.is_current(c.db):
            raise CliError(
                f"database schema is at {migrate.current_revision(c.db) or 'none'}, "
                f"need {migrate.head_revision()}: run `relata migrate` first"
            )
        workers = c.settings.workers if args.workers is None else args.workers
        if not 1 <= workers <= 64:
            raise CliError("relata worker needs 1-64 workers (--workers or RELATA_WORKERS)")
        pool = c.worker_pool(workers=workers)
        kinds = c.registry.kinds()
        log.info(
            "worker starting",
            extra={"fields": {"workers": workers, "kinds": kinds, "db": c.db.dialect}},
        )
        drained = run_until_signalled(pool, c.settings.shutdown_timeout)
        log.info("worker stopped", extra={"fields": {"drained": drained}})
    return 0


def _job_dict(job: Job) -> dict[str, Any]:
    def ts(value: Any) -> str | None:
        return value.isoformat() if value is not None else None

    return {
        "id": job.id,
        "kind": job.kind,
        "status": job.status.value,
        "priority": job.priority,
        "attempts": job.attempts,
        "max_attempts": job.max_attempts,
        "run_after": ts(job.run_after),
        "created_at": ts(job.created_at),
        "started_at": ts(job.started_at),
        "finished_at": ts(job.finished_at),
        "last_error": job.last_error,
        "idempotency_key": job.idempotency_key,
        "correlation_id": job.correlation_id,
    }


def _jobs(args: argparse.Namespace) -> int:
    with open_container(log=False) as c:
        ws = c.workspaces.resolve()
        jobs = c.queue.list(
            ws.id, status=args.status, kind=args.kind, limit=args.limit, offset=args.offset
        )
    if args.json:
        print(json.dumps([_job_dict(j) for j in jobs], indent=2))
        return 0
    if not jobs:
        print("no jobs")
        return 0
    rows = [("ID", "KIND", "STATUS", "ATTEMPTS", "CREATED", "LAST ERROR")]
    for j in jobs:
        error = (j.last_error or "")[:60]
        created = j.created_at.strftime("%Y-%m-%d %H:%M:%S")
        rows.append(
            (j.id, j.kind, j.status.value, f"{j.attempts}/{j.max_attempts}", created, error)
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    for r in rows:
        print("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=False)) + "  " + r[-1])
    return 0
