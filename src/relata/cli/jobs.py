"""``relata worker`` (background workers only, no HTTP) and ``relata jobs`` (list jobs).

``relata jobs`` names the item a stage job works on (its id and title or filename), so a
failure such as ``ValidationError: the PDF cannot be read`` says which document it was.
"""

from __future__ import annotations

import argparse
import json
import logging
from typing import TYPE_CHECKING, Any

from relata.cli.common import CliError, add_workspace_option, existing_workspace, open_container
from relata.domain.models import JobStatus

if TYPE_CHECKING:
    from relata.bootstrap import Container
    from relata.domain.models import Job

log = logging.getLogger("relata.worker")

_STATUSES = [s.value for s in JobStatus]
_ERROR_CHARS = 180
_LABEL_CHARS = 40


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

    p = sub.add_parser(
        "jobs",
        help="list a workspace's background jobs, newest first",
        description="List a workspace's background jobs (ingestion stages, re-embedding), "
        "newest first, with their attempts, last error and the item each one works on.",
    )
    add_workspace_option(p)
    p.add_argument("--status", choices=_STATUSES, help="only jobs in this state")
    p.add_argument("--kind", help="only jobs of this kind (e.g. parse_item)")
    p.add_argument(
        "--limit", type=int, default=50, metavar="N", help="how many (1-1000, default 50)"
    )
    p.add_argument("--offset", type=int, default=0, metavar="N", help="skip this many first")
    p.add_argument("--json", action="store_true", help="one JSON array instead of a table")
    p.set_defaults(handler=_jobs)


def _worker(args: argparse.Namespace) -> int:
    from relata.jobs.runner import run_until_signalled

    with open_container() as c:
        workers = c.settings.workers if args.workers is None else args.workers
        if not 1 <= workers <= 64:
            raise CliError("relata worker needs 1-64 workers (--workers or RELATA_WORKERS)")
        c.vectors.prepare()
        pool = c.worker_pool(workers=workers)
        kinds = c.registry.kinds()
        log.info(
            "worker starting",
            extra={"fields": {"workers": workers, "kinds": kinds, "db": c.db.dialect}},
        )
        drained = run_until_signalled(pool, c.settings.shutdown_timeout)
        log.info("worker stopped", extra={"fields": {"drained": drained}})
    return 0


def _job_dict(job: Job, item: dict[str, Any] | None) -> dict[str, Any]:
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
        "item": item,
    }


def _item_id(job: Job) -> str | None:
    value = job.payload.get("item_id")
    return value if isinstance(value, str) and value else None


def _items_of(c: Container, workspace_id: str, jobs: list[Job]) -> dict[str, dict[str, Any]]:
    """item id -> {id, title, filename} for the jobs' items (a deleted one is absent)."""
    ids = list(dict.fromkeys(i for i in map(_item_id, jobs) if i))
    found = c.repos.items.get_many(workspace_id, ids, with_text=False) if ids else []
    return {i.id: {"id": i.id, "title": i.title, "filename": i.original_filename} for i in found}


def _label(item_id: str | None, items: dict[str, dict[str, Any]]) -> str:
    if item_id is None:
        return ""
    item = items.get(item_id)
    if item is None:
        return f"{item_id} (deleted)"
    name = item["filename"] or item["title"] or ""
    if len(name) > _LABEL_CHARS:
        name = name[: _LABEL_CHARS - 1] + "…"
    return f"{item_id} {name}".rstrip()


def _jobs(args: argparse.Namespace) -> int:
    with open_container(log=False) as c:
        ws = existing_workspace(c, args.workspace)
        jobs: list[Job] = []
        items: dict[str, dict[str, Any]] = {}
        if ws is not None:
            jobs = c.queue.list(
                ws.id, status=args.status, kind=args.kind, limit=args.limit, offset=args.offset
            )
            items = _items_of(c, ws.id, jobs)
    if args.json:
        out = [_job_dict(j, items.get(_item_id(j) or "")) for j in jobs]
        print(json.dumps(out, indent=2, ensure_ascii=False))
        return 0
    if not jobs:
        print("no jobs")
        return 0
    rows = [("ID", "KIND", "STATUS", "ATTEMPTS", "CREATED", "ITEM")]
    errors: list[str | None] = [None]
    for j in jobs:
        created = j.created_at.strftime("%Y-%m-%d %H:%M:%S")
        attempts = f"{j.attempts}/{j.max_attempts}"
        rows.append((j.id, j.kind, j.status.value, attempts, created, _label(_item_id(j), items)))
        errors.append(_clip(j.last_error))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    for r, error in zip(rows, errors, strict=True):
        print("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=False)) + "  " + r[-1])
        if error:
            print(f"    {error}")
    return 0


def _clip(error: str | None) -> str | None:
    if not error:
        return None
    line = " ".join(error.split())
    return line if len(line) <= _ERROR_CHARS else line[: _ERROR_CHARS - 1] + "…"
