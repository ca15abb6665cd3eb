"""``relata watch DIR``: keep a workspace in step with a folder (relata.ingest.watch,
docs/decisions/0047-watched-folder.md), and the watcher ``relata serve`` runs for
RELATA_WATCH_DIR.

The command catches up with what changed while no watcher ran, then follows the folder until
SIGTERM or SIGINT, printing one line per file it acted on; new items and versions are
processed by background workers in this process (``--no-process`` leaves them to `relata
serve` or `relata worker`). ``--once`` stops after the catch-up (and, unless
``--no-process``, after processing what it added).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from relata.cli.common import CliError, add_workspace_option, open_container

if TYPE_CHECKING:
    from relata.bootstrap import Container
    from relata.ingest.watch import SyncReport

log = logging.getLogger("relata.watch")


def register(sub: Any) -> None:
    p = sub.add_parser(
        "watch",
        help="keep a workspace in step with a folder: new, changed and deleted files",
        description="Catch up with what changed in DIR since the last watch (the state is "
        "in the database), then follow it: a new file is ingested, a changed one becomes a "
        "new version of its item, a deleted one deletes its item "
        "(RELATA_WATCH_ON_DELETE=keep keeps it), a renamed one keeps its item. Hidden files, "
        "editors' temporary files and RELATA_WATCH_IGNORE patterns are ignored; files over "
        "RELATA_MAX_UPLOAD_BYTES, of unsupported types or linked from outside DIR are "
        "refused with the reason. New items are processed here unless --no-process. Stops "
        "on SIGTERM or SIGINT; run it again and it catches up.",
    )
    p.add_argument("dir", metavar="DIR", help="the folder to keep in step")
    add_workspace_option(p)
    p.add_argument(
        "--ignore",
        action="append",
        default=[],
        metavar="GLOB",
        help="also ignore files or folders matching GLOB (repeatable), e.g. '*.log'",
    )
    p.add_argument(
        "--on-delete",
        choices=["delete", "keep"],
        default=None,
        help="what a deleted file does to its item (default RELATA_WATCH_ON_DELETE)",
    )
    p.add_argument("--once", action="store_true", help="catch up, process what changed, and stop")
    p.add_argument(
        "--allow-empty",
        action="store_true",
        help="the folder is meant to be empty: delete the items of all the files it held "
        "(without it, an empty folder, e.g. an unmounted drive, deletes nothing)",
    )
    p.add_argument(
        "--no-process",
        action="store_true",
        help="only ingest; leave processing to `relata serve` or `relata worker`",
    )
    p.set_defaults(handler=_watch)


def print_pass(report: SyncReport) -> None:
    """One line per file acted on: stdout for what changed, stderr for refusals."""
    for rel in report.ingested:
        print(f"ingested: {rel}", flush=True)
    for rel in report.updated:
        print(f"new version: {rel}", flush=True)
    for old, new in report.renamed:
        print(f"renamed: {old} -> {new}", flush=True)
    for rel in report.linked:
        print(f"linked: {rel} (its content is an item already)", flush=True)
    for rel in report.deleted:
        print(f"removed: {rel}", flush=True)
    for rel, reason in report.refused:
        print(f"refused: {rel}: {reason}", file=sys.stderr, flush=True)


def log_pass(report: SyncReport) -> None:
    """A pass of ``relata serve``'s watcher, as counts (file names stay out of the log)."""
    c = report.counts
    log.info(
        "watched folder updated",
        extra={
            "fields": {
                "ingested": c.ingested,
                "updated": c.updated,
                "deleted": c.deleted,
                "renamed": len(report.renamed),
                "linked": len(report.linked),
                "refused": len(report.refused),
            }
        },
    )


def _watch(args: argparse.Namespace) -> int:
    from relata.cli.ingest import resolve_workspace
    from relata.domain.errors import RelataError
    from relata.domain.models import CLI_ACTOR
    from relata.ingest.bulk import wait_until_settled
    from relata.ingest.folder import FolderGone, FolderTooBig
    from relata.jobs.runner import shutdown_signals

    root = Path(args.dir)
    if not root.is_dir():
        raise CliError(f"{args.dir} is not a folder", exit_code=2)
    with open_container(schema="migrate") as c:
        ws = resolve_workspace(c, args.workspace)
        try:
            watcher = c.watches.watcher(
                ws.id,
                root,
                ignore=args.ignore,
                on_delete=args.on_delete,
                actor=CLI_ACTOR,
                on_pass=print_pass,
            )
            watcher.sync.allow_empty = args.allow_empty
            watcher.claim()
        except RelataError as exc:
            raise CliError(exc.message) from None
        pool = None if args.no_process else c.worker_pool(workers=max(1, c.settings.workers))
        if pool is not None:
            pool.start()
        try:
            print(
                f"watching {watcher.root} into workspace {ws.slug!r}",
                file=sys.stderr,
                flush=True,
            )
            if args.once:
                try:
                    report = watcher.catch_up()
                except (FolderGone, FolderTooBig) as exc:
                    raise CliError(str(exc)) from None
                print(report.line())
                if pool is not None and not report.empty():
                    wait_until_settled(c.repos.items, c.queue, ws.id, [], timeout=600.0)
            else:
                with shutdown_signals() as sig:
                    if pool is not None:
                        sig.on_repeat = lambda: pool.cancel_all("second shutdown signal")
                    watcher.run(sig.event)
        finally:
            watcher.release()
            if pool is not None:
                pool.stop(c.settings.shutdown_timeout)
    return 0


def start_background(c: Container, stop: threading.Event) -> threading.Thread | None:
    """``relata serve``'s watcher of RELATA_WATCH_DIR, in a thread of the process that runs
    the background workers; None when no folder is set. A folder or workspace that cannot be
    watched is logged, and serving goes on."""
    from relata.domain.errors import RelataError

    settings = c.settings
    if not settings.watch_dir:
        return None
    try:
        ws = c.workspaces.resolve(settings.watch_workspace or settings.default_workspace)
        watcher = c.watches.watcher(ws.id, Path(settings.watch_dir).expanduser(), on_pass=log_pass)
        watcher.claim()
    except RelataError as exc:
        log.error(
            "RELATA_WATCH_DIR is not watched",
            extra={"fields": {"reason": exc.message, "dir": settings.watch_dir}},
        )
        return None

    def run() -> None:
        try:
            watcher.run(stop)
        except Exception as exc:  # the thread's last word; serving goes on
            log.exception("the folder watcher stopped")
            watcher.record_error(exc)
        finally:
            with contextlib.suppress(RelataError):
                watcher.release()

    log.info(
        "watching a folder",
        extra={"fields": {"dir": str(watcher.root), "workspace": ws.slug}},
    )
    thread = threading.Thread(target=run, name="relata-watch", daemon=True)
    thread.start()
    return thread


def stop_background(thread: threading.Thread | None, stop: threading.Event, timeout: float) -> None:
    """Stop ``start_background``'s watcher (it ends its pass first) within ``timeout``."""
    if thread is None:
        return
    stop.set()
    thread.join(max(0.1, timeout))
