"""``relata ingest``: add files, folders or a JSONL corpus to a workspace, then (by default)
process them in this process until they are ready.

Progress goes to standard error: a live bar on a terminal, otherwise a line every few
seconds. The summary goes to standard output; every rejected input is listed with its
reason, and the exit code is 1 when anything was rejected or failed to process.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from relata.bootstrap import Container
from relata.cli.common import CliError, open_container
from relata.domain.models import ItemStatus, Workspace
from relata.ingest.bulk import (
    BulkIngest,
    JsonlFields,
    Settled,
    Tally,
    file_request,
    jsonl_requests,
    scan,
    wait_until_settled,
)
from relata.observability.logging import configure_logging
from relata.storage.sql import migrate

_TTY_INTERVAL = 0.1
_LINE_INTERVAL = 5.0
_BAR_WIDTH = 24
_BATCH = 500


def register(sub: Any) -> None:
    p = sub.add_parser(
        "ingest",
        help="add files, folders or a JSONL corpus, then process them",
        description="Ingest files (type detected from content: text, Markdown, JSON, PDF, "
        "DOCX), folders (their files; subfolders with --recursive; hidden entries skipped) "
        "or a JSONL corpus (--jsonl, one item per line). Then process them in this process "
        "until they are ready, unless --no-wait. Exit code 1 when anything was rejected.",
    )
    p.add_argument("paths", nargs="*", metavar="PATH", help="files or folders")
    p.add_argument("--workspace", metavar="SLUG", help="target workspace (default: the default)")
    p.add_argument("-r", "--recursive", action="store_true", help="descend into subfolders")
    p.add_argument(
        "--allow-duplicate", action="store_true", help="keep deliberate copies of known content"
    )
    p.add_argument(
        "--no-wait",
        action="store_true",
        help="only ingest; leave processing to `relata serve` or `relata worker`",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=600.0,
        metavar="SECONDS",
        help="how long to wait for processing (default 600)",
    )
    p.add_argument("--jsonl", metavar="FILE", help="a JSONL corpus: one JSON object per line")
    p.add_argument("--id-field", default="_id", help="JSONL: the external id (kept as metadata)")
    p.add_argument("--title-field", default="title", help="JSONL: the title field")
    p.add_argument("--text-field", default="text", help="JSONL: the text field")
    p.set_defaults(handler=_ingest)


class Progress:
    """Counts on standard error: a live bar on a terminal, periodic lines otherwise."""

    def __init__(self, stream: TextIO, *, total: int | None = None) -> None:
        self._stream = stream
        self._tty = stream.isatty()
        self._total = total
        self._last = 0.0
        self._drawn = False

    def ingesting(self, tally: Tally, *, final: bool = False) -> None:
        done = tally.scanned
        if self._tty:
            bar = ""
            if self._total:
                filled = int(_BAR_WIDTH * min(done, self._total) / self._total)
                bar = f"[{'#' * filled}{'-' * (_BAR_WIDTH - filled)}] {done}/{self._total} "
            self._draw(f"ingest {bar}{tally.line()}", final)
        else:
            self._line(f"ingest: {tally.line()}", final)

    def processing(self, counts: dict[str, int], total: int, *, final: bool = False) -> None:
        ready = counts.get(ItemStatus.READY.value, 0)
        failed = counts.get(ItemStatus.FAILED.value, 0)
        text = f"processing: ready {ready}/{total}, failed {failed}"
        if self._tty:
            self._draw(text, final)
        else:
            self._line(text, final)

    def _draw(self, text: str, final: bool) -> None:
        now = time.monotonic()
        if not final and now - self._last < _TTY_INTERVAL:
            return
        self._last = now
        self._stream.write(f"\r\x1b[K{text}" + ("\n" if final else ""))
        self._stream.flush()

    def _line(self, text: str, final: bool) -> None:
        now = time.monotonic()
        if not final and now - self._last < _LINE_INTERVAL:
            return
        if not final and self._last == 0.0:  # the first line waits for the first interval
            self._last = now
            return
        self._last = now
        self._stream.write(text + "\n")
        self._stream.flush()


def resolve_workspace(c: Container, slug: str | None) -> Workspace:
    """The named workspace (it must exist), or the default one (created when missing)."""
    if slug and slug != c.settings.default_workspace:
        return c.workspaces.resolve(slug)
    ws, _ = c.workspaces.ensure(c.settings.default_workspace, "Default workspace")
    return ws


def process(
    c: Container, workspace_id: str, tally: Tally, *, timeout: float, progress: Progress
) -> Settled:
    """Run the container's worker pool until the tally's items settle (or ``timeout``)."""
    ids = list(tally.item_ids)
    pool = c.worker_pool(workers=max(1, c.settings.workers))
    pool.start()
    try:
        settled = wait_until_settled(
            c.repos.items,
            c.queue,
            workspace_id,
            ids,
            timeout=timeout,
            on_progress=lambda counts: progress.processing(counts, len(ids)),
        )
    finally:
        pool.stop(c.settings.shutdown_timeout)
    progress.processing(settled.counts, len(ids), final=True)
    return settled


def failed_items(c: Container, workspace_id: str, tally: Tally) -> list[tuple[str, str]]:
    """(label, error) of the tally's items that failed to process."""
    ids = list(tally.item_ids)
    out: list[tuple[str, str]] = []
    for i in range(0, len(ids), _BATCH):
        for item in c.repos.items.get_many(workspace_id, ids[i : i + _BATCH]):
            if item.status is ItemStatus.FAILED:
                out.append((tally.item_ids[item.id], item.error or "processing failed"))
    return out


def _ingest(args: argparse.Namespace) -> int:
    if bool(args.paths) == bool(args.jsonl):
        raise CliError("give files or folders (PATH...) or --jsonl FILE, not both", exit_code=2)
    if args.timeout <= 0:
        raise CliError("--timeout must be positive", exit_code=2)
    with open_container(log=False) as c:
        # Worker warnings would interleave with the progress; failures are listed below.
        configure_logging("error", c.settings.log_format)
        migrate.upgrade(c.db)
        ws = resolve_workspace(c, args.workspace)
        started = time.monotonic()
        tally = Tally()
        if args.jsonl:
            progress = _ingest_jsonl(c, ws, args, tally)
        else:
            progress = _ingest_paths(c, ws, args, tally)
        progress.ingesting(tally, final=True)
        print(f"{tally.line()} in {time.monotonic() - started:.1f} s")
        for label, reason in tally.rejected:
            print(f"rejected: {label}: {reason}", file=sys.stderr)
        failed: list[tuple[str, str]] = []
        if args.no_wait:
            if tally.item_ids:
                print("processing left to `relata serve` or `relata worker` (--no-wait)")
        elif tally.item_ids:
            settled = process(c, ws.id, tally, timeout=args.timeout, progress=progress)
            counts = settled.counts
            print(
                f"processed {len(tally.item_ids)}: ready {counts.get('ready', 0)}, "
                f"failed {counts.get('failed', 0)} in {settled.seconds:.1f} s"
            )
            if not settled.finished:
                print(
                    "processing did not finish within --timeout; `relata serve` or "
                    "`relata worker` will finish it",
                    file=sys.stderr,
                )
            failed = failed_items(c, ws.id, tally)
            for label, error in failed:
                print(f"failed: {label}: {error}", file=sys.stderr)
    return 1 if tally.rejected or failed else 0


def _ingest_paths(c: Container, ws: Workspace, args: argparse.Namespace, tally: Tally) -> Progress:
    entries = list(scan(args.paths, recursive=args.recursive))
    progress = Progress(sys.stderr, total=len(entries))
    limit = c.settings.max_upload_bytes
    # Small batches: files may be large, and a batch's files are held in memory.
    bulk = BulkIngest(c.ingest, ws.id, tally, batch_size=8)
    for label, path, display in entries:
        request = (
            file_request(path, display, limit, allow_duplicate=args.allow_duplicate)
            if isinstance(path, Path)
            else path
        )
        bulk.add(label, request)
        progress.ingesting(tally)
    bulk.flush()
    return progress


def _ingest_jsonl(c: Container, ws: Workspace, args: argparse.Namespace, tally: Tally) -> Progress:
    progress = Progress(sys.stderr)
    fields = JsonlFields(args.id_field, args.title_field, args.text_field)
    path = Path(args.jsonl)
    if not path.is_file():
        raise CliError(f"{args.jsonl} is not a readable file")
    bulk = BulkIngest(c.ingest, ws.id, tally)
    with path.open("rb") as stream:
        for lineno, request in jsonl_requests(
            stream, fields, c.settings.max_upload_bytes, allow_duplicate=args.allow_duplicate
        ):
            bulk.add(f"{args.jsonl}:{lineno}", request)
            progress.ingesting(tally)
    bulk.flush()
    return progress
