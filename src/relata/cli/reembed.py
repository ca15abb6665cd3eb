"""``relata reembed``: re-embed a workspace's chunks with the current embedding model.

Queues the ``reembed_workspace`` job (bounded batches that re-enqueue themselves; see
``relata.embeddings.reembed``; ``--all`` rebuilds every vector) and shows the counts. With
``--wait`` it runs workers in this process until the re-embedding is over (or ``--timeout``),
redrawing the counts on standard error when it is a terminal, then prints them once;
otherwise ``relata serve`` or ``relata worker`` runs it. With nothing to re-embed no job is
queued. Exit code 1 when the re-embedding failed or did not finish in time.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import TYPE_CHECKING, Any

from relata.cli.common import CliError, add_workspace_option, open_container, plural
from relata.domain.models import CLI_ACTOR

if TYPE_CHECKING:
    from relata.bootstrap import Container

_PROGRESS_SECONDS = 1.0
_POLL_SECONDS = 0.2


def register(sub: Any) -> None:
    p = sub.add_parser(
        "reembed",
        help="re-embed a workspace's chunks with the current embedding model",
        description="Queue the re-embedding of every chunk of the workspace that is not "
        "embedded with the current model (RELATA_EMBEDDING_MODEL), in bounded batches. "
        "Run it after changing the embedding model or RELATA_EMBEDDING_DIMENSIONS.",
    )
    add_workspace_option(p)
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
        f"{plural(counts.vectors, 'vector')} stored"
    )


def _reembed(args: argparse.Namespace) -> int:
    from relata.observability.logging import configure_logging

    if args.timeout <= 0:
        raise CliError("--timeout must be positive", exit_code=2)
    with open_container(log=False) as c:
        configure_logging("error", c.settings.log_format)
        ws = c.workspaces.resolve(args.workspace)
        job = c.reembed.start(ws.id, all_chunks=args.all_chunks, actor=CLI_ACTOR)
        if job is None:
            print(f"nothing to re-embed: {_line(c, ws.id)}")
            return 0
        model = c.embedder.model_id if c.embedder is not None else "?"
        print(f"re-embedding workspace {ws.slug!r} with {model}: job {job.id} ({job.status})")
        if not args.wait:
            print(_line(c, ws.id))
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
    """Run a worker pool until no re-embed job of the workspace is pending or running; on a
    terminal, the counts are redrawn on standard error meanwhile (and cleared at the end)."""
    tty = sys.stderr.isatty()
    pool = c.worker_pool(workers=max(1, c.settings.workers))
    pool.start()
    deadline = time.monotonic() + timeout
    last = 0.0
    try:
        while c.reembed.outstanding(workspace_id):
            now = time.monotonic()
            if now >= deadline:
                return False
            if tty and now - last >= _PROGRESS_SECONDS:
                last = now
                sys.stderr.write(f"\r\x1b[Kre-embedding: {_line(c, workspace_id)}")
                sys.stderr.flush()
            time.sleep(_POLL_SECONDS)
    finally:
        pool.stop(c.settings.shutdown_timeout)
        if tty and last:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()
    return True
