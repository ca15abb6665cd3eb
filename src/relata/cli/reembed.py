"""``relata reembed``: re-embed a workspace's chunks with the current embedding model.

Queues the ``reembed_workspace`` job (bounded batches that re-enqueue themselves; see
``relata.embeddings.reembed``; ``--all`` rebuilds every vector) and shows the counts. With
``--wait`` it runs workers in this process until the re-embedding is over (or ``--timeout``),
printing progress to standard error, then the counts; otherwise ``relata serve`` or
``relata worker`` runs it. Exit code 1 when the re-embedding failed or did not finish in time.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from relata.bootstrap import Container
from relata.cli.common import CliError, open_container
from relata.observability.logging import configure_logging
from relata.storage.sql import migrate

_PROGRESS_SECONDS = 5.0
_POLL_SECONDS = 0.2


def register(sub: Any) -> None:
    p = sub.add_parser(
        "reembed",
        help="re-embed a workspace's chunks with the current embedding model",
        description="Queue the re-embedding of every chunk of the workspace that is not "
        "embedded with the current model (RELATA_EMBEDDING_MODEL), in bounded batches. "
        "Run it after changing the embedding model or RELATA_EMBEDDING_DIMENSIONS.",
    )
    p.add_argument("--workspace", metavar="SLUG", help="the workspace (default: the default)")
    p.add_argument(
        "--all",
        dest="all_chunks",
        action="store_true",
        help="rebuild every vector (deletes the workspace's vectors first): after the vector "
        "store changed or lost vectors",
    )
    p.add_argument(
        "--wait", action="store_true", help="run workers here until the re-embedding is over"
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=3600.0,
        metavar="SECONDS",
        help="with --wait: how long to wait (default 3600)",
    )
    p.set_defaults(handler=_reembed)


def _line(c: Container, workspace_id: str) -> str:
    counts = c.model_status.counts(workspace_id)
    return (
        f"{counts.embedded_current}/{counts.chunks} chunks embedded with the current model, "
        f"{counts.vectors} vectors stored"
    )


def _reembed(args: argparse.Namespace) -> int:
    if args.timeout <= 0:
        raise CliError("--timeout must be positive", exit_code=2)
    with open_container(log=False) as c:
        configure_logging("error", c.settings.log_format)
        if not migrate.is_current(c.db):
            raise CliError(
                f"database schema is at {migrate.current_revision(c.db) or 'none'}, "
                f"need {migrate.head_revision()}: run `relata migrate` first"
            )
        ws = c.workspaces.resolve(args.workspace)
        job = c.reembed.start(ws.id, all_chunks=args.all_chunks)
        model = c.embedder.model_id if c.embedder is not None else "?"
        print(f"re-embedding workspace {ws.slug!r} with {model}: job {job.id} ({job.status})")
        print(_line(c, ws.id))
        if not args.wait:
            print("the job runs in `relata serve` or `relata worker` (or pass --wait)")
            return 0
        finished = _wait(c, ws.id, args.timeout)
        print(_line(c, ws.id))
        latest = c.reembed.latest(ws.id)
        if not finished:
            print("re-embedding did not finish within --timeout; it goes on in a worker")
            return 1
        if latest is not None and latest.status.value != "succeeded":
            print(f"re-embedding {latest.status.value}: {latest.last_error or ''}".rstrip(": "))
            return 1
    return 0


def _wait(c: Container, workspace_id: str, timeout: float) -> bool:
    """Run a worker pool until no re-embed job of the workspace is pending or running."""
    pool = c.worker_pool(workers=max(1, c.settings.workers))
    pool.start()
    deadline = time.monotonic() + timeout
    last = time.monotonic()
    try:
        while c.reembed.outstanding(workspace_id):
            now = time.monotonic()
            if now >= deadline:
                return False
            if now - last >= _PROGRESS_SECONDS:
                last = now
                print(f"re-embedding: {_line(c, workspace_id)}", file=sys.stderr)
            time.sleep(_POLL_SECONDS)
    finally:
        pool.stop(c.settings.shutdown_timeout)
    return True
