"""``relata ingest``: add files, folders or a JSONL corpus to a workspace, then (by default)
process them in this process until they are ready.

On a terminal, progress is drawn on standard error (the current file, counts and an ETA) and
cleared when done; piped, nothing but the summary is printed. The summary goes to standard
output once; every rejected input, every item whose processing failed and every file that is
already there as a failed item is listed on standard error with its reason. The exit code is
1 when anything was rejected or failed.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from relata.cli.common import CliError, add_workspace_option, open_container
from relata.domain.models import CLI_ACTOR, ItemStatus

if TYPE_CHECKING:
    from relata.bootstrap import Container
    from relata.domain.models import Workspace
    from relata.ingest.bulk import Settled, Tally

_REDRAW_SECONDS = 0.1
_BAR_WIDTH = 20
_BATCH = 500


def register(sub: Any) -> None:
    p = sub.add_parser(
        "ingest",
        help="add files, folders or a JSONL corpus, then process them",
        description="Ingest files (type detected from content: text, Markdown, JSON, PDF, "
        "DOCX, HTML, CSV/TSV, XLSX, PPTX, e-mail), folders (their files; subfolders with "
        "--recursive; hidden entries skipped) "
        "or a JSONL corpus (--jsonl, one item per line). Then process them in this process "
        "until they are ready, unless --no-wait. Exit code 1 when anything was rejected or "
        "failed to process.",
    )
    p.add_argument("paths", nargs="*", metavar="PATH", help="files or folders")
    add_workspace_option(p)
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


# ---------------------------------------------------------------- progress
def eta(seconds: float) -> str:
    """``42s``, ``3:07``, ``1:02:03``."""
    s = max(0, round(seconds))
    if s < 60:
        return f"{s}s"
    minutes, sec = divmod(s, 60)
    if minutes < 60:
        return f"{minutes}:{sec:02d}"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{sec:02d}"


class Progress:
    """One live line on a terminal: the phase, a bar, counts, the current file and an ETA.

    Off a terminal it writes nothing, so piped output is only the summary; ``clear`` removes
    the line before the summary is printed, so nothing is printed twice.
    """

    def __init__(
        self,
        stream: TextIO,
        *,
        total: int | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._stream = stream
        self._tty = stream.isatty()
        self._total = total
        self._clock = clock
        self._phase_started = clock()
        self._last = 0.0
        self._drawn = False

    def ingesting(self, tally: Tally, *, current: str | None = None) -> None:
        done = tally.scanned
        counts = (
            f"new {tally.ingested}, duplicates {tally.duplicates}, rejected {len(tally.rejected)}"
        )
        # The file name goes last: on a narrow terminal it is what gets cut.
        self._draw(
            ["ingest", self._bar(done, self._total), counts, self._eta(done, self._total)]
            + ([current] if current else [])
        )

    def start_processing(self) -> None:
        self._phase_started = self._clock()

    def processing(self, counts: dict[str, int], total: int) -> None:
        ready = counts.get(ItemStatus.READY.value, 0)
        failed = counts.get(ItemStatus.FAILED.value, 0)
        settled = ready + failed
        text = f"ready {ready}, failed {failed}"
        self._draw(["process", self._bar(settled, total), text, self._eta(settled, total)])

    def clear(self) -> None:
        if self._drawn:
            self._stream.write("\r\x1b[K")
            self._stream.flush()
            self._drawn = False

    def _bar(self, done: int, total: int | None) -> str:
        if not total:
            return ""
        filled = int(_BAR_WIDTH * min(done, total) / total)
        return f"[{'#' * filled}{'-' * (_BAR_WIDTH - filled)}] {done}/{total}"

    def _eta(self, done: int, total: int | None) -> str:
        elapsed = self._clock() - self._phase_started
        if not total or done <= 0 or done >= total or elapsed <= 0:
            return ""
        return f"ETA {eta(elapsed / done * (total - done))}"

    def _draw(self, parts: list[str]) -> None:
        if not self._tty:
            return
        now = self._clock()
        if self._drawn and now - self._last < _REDRAW_SECONDS:
            return
        self._last = now
        line = "  ".join(p for p in parts if p)
        width = shutil.get_terminal_size((100, 24)).columns - 1
        if len(line) > width:  # a wrapped line cannot be redrawn in place
            line = line[: max(1, width - 1)] + "…"
        self._stream.write(f"\r\x1b[K{line}")
        self._stream.flush()
        self._drawn = True


# ---------------------------------------------------------------- shared with `relata seed`
def resolve_workspace(c: Container, slug: str | None) -> Workspace:
    """The named workspace (it must exist), or the default one (created when missing)."""
    if slug and slug != c.settings.default_workspace:
        return c.workspaces.resolve(slug)
    ws, _ = c.workspaces.ensure(c.settings.default_workspace, "Default workspace", actor=CLI_ACTOR)
    return ws


def process(
    c: Container, workspace_id: str, tally: Tally, *, timeout: float, progress: Progress
) -> Settled:
    """Run the container's worker pool until the tally's items settle (or ``timeout``)."""
    from relata.ingest.bulk import wait_until_settled

    ids = list(tally.item_ids)
    pool = c.worker_pool(workers=max(1, c.settings.workers))
    progress.start_processing()
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
        progress.clear()
    return settled


def failed_items(
    c: Container, workspace_id: str, labels: dict[str, str]
) -> list[tuple[str, str, str]]:
    """(label, item id, error) of the items among ``labels`` (item id -> label) whose
    processing failed."""
    ids = list(labels)
    out: list[tuple[str, str, str]] = []
    for i in range(0, len(ids), _BATCH):
        for item in c.repos.items.get_many(workspace_id, ids[i : i + _BATCH], with_text=False):
            if item.status is ItemStatus.FAILED:
                out.append((labels[item.id], item.id, item.error or "processing failed"))
    return out


def report_failures(failed: list[tuple[str, str, str]], *, earlier: bool = False) -> None:
    """List failed items on standard error, with what to run about them."""
    for label, item_id, error in failed:
        if earlier:
            print(
                f"failed earlier: {label}: already ingested as item {item_id}, whose "
                f"processing failed: {error}",
                file=sys.stderr,
            )
        else:
            print(f"failed: {label}: {error} (item {item_id})", file=sys.stderr)
    if failed:
        example = failed[0][1]
        print(
            f"`relata item {example}` shows its processing runs; "
            f"`relata reprocess {example}` tries again",
            file=sys.stderr,
        )


# ---------------------------------------------------------------- the command
def _ingest(args: argparse.Namespace) -> int:
    from relata.ingest.bulk import Tally
    from relata.observability.logging import configure_logging

    if not args.paths and not args.jsonl:
        raise CliError("nothing to ingest: give files or folders (PATH...) or --jsonl FILE", 2)
    if args.paths and args.jsonl:
        raise CliError("give files or folders (PATH...) or --jsonl FILE, not both", 2)
    if args.timeout <= 0:
        raise CliError("--timeout must be positive", exit_code=2)
    if args.jsonl and not Path(args.jsonl).is_file():
        raise CliError(f"{args.jsonl} is not a readable file")
    with open_container(log=False, schema="migrate") as c:
        # Worker warnings would interleave with the progress; failures are listed below.
        configure_logging("error", c.settings.log_format)
        ws = resolve_workspace(c, args.workspace)
        started = time.monotonic()
        tally = Tally()
        if args.jsonl:
            progress = _ingest_jsonl(c, ws, args, tally)
        else:
            progress = _ingest_paths(c, ws, args, tally)
        progress.clear()
        print(f"{tally.line()} in {time.monotonic() - started:.1f} s")
        for label, reason in tally.rejected:
            print(f"rejected: {label}: {reason}", file=sys.stderr)
        # A duplicate of a failed item would otherwise pass silently as "duplicates 1".
        failed_before = failed_items(c, ws.id, tally.duplicate_ids)
        report_failures(failed_before, earlier=True)
        failed: list[tuple[str, str, str]] = []
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
            failed = failed_items(c, ws.id, tally.item_ids)
            report_failures(failed)
    return 1 if tally.rejected or failed or failed_before else 0


def _ingest_paths(c: Container, ws: Workspace, args: argparse.Namespace, tally: Tally) -> Progress:
    from relata.ingest.bulk import BulkIngest, file_request, scan

    entries = list(scan(args.paths, recursive=args.recursive))
    progress = Progress(sys.stderr, total=len(entries))
    limit = c.settings.max_upload_bytes
    # Small batches: files may be large, and a batch's files are held in memory.
    bulk = BulkIngest(c.ingest, ws.id, tally, batch_size=8, actor=CLI_ACTOR)
    for label, path, display in entries:
        progress.ingesting(tally, current=display)
        request = (
            file_request(path, display, limit, allow_duplicate=args.allow_duplicate)
            if isinstance(path, Path)
            else path
        )
        bulk.add(label, request)
    bulk.flush()
    return progress


def _ingest_jsonl(c: Container, ws: Workspace, args: argparse.Namespace, tally: Tally) -> Progress:
    from relata.ingest.bulk import BulkIngest, JsonlFields, jsonl_requests

    progress = Progress(sys.stderr)
    fields = JsonlFields(args.id_field, args.title_field, args.text_field)
    path = Path(args.jsonl)
    bulk = BulkIngest(c.ingest, ws.id, tally, actor=CLI_ACTOR)
    with path.open("rb") as stream:
        for lineno, request in jsonl_requests(
            stream, fields, c.settings.max_upload_bytes, allow_duplicate=args.allow_duplicate
        ):
            bulk.add(f"{args.jsonl}:{lineno}", request)
            progress.ingesting(tally, current=f"line {lineno}")
    bulk.flush()
    return progress
