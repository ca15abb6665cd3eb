"""Bulk ingestion for the command line, the demo seed and the benchmark: files and folders,
JSONL corpora, a tally of outcomes, and running the pipeline until the items settle.

Every loop over input is bounded: a file over ``RELATA_MAX_UPLOAD_BYTES`` is rejected from
its size without being read, a JSONL line is read at most that many bytes (plus room for
the JSON around the text) at a time, and waiting for the pipeline stops at a deadline.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from relata.domain.errors import DuplicateItem, RelataError
from relata.domain.models import SYSTEM_ACTOR, Actor, ItemStatus
from relata.domain.ports import ItemRepository
from relata.ingest.service import MAX_BATCH, IngestRequest, IngestService
from relata.jobs.queue import JobQueue

_JSONL_ALLOWANCE = 64 * 1024  # the JSON around a line's text: ids, title, escapes
_SETTLED = {ItemStatus.READY.value, ItemStatus.FAILED.value}
_MAX_ID_CHARS = 1024


@dataclass
class Tally:
    scanned: int = 0
    ingested: int = 0
    duplicates: int = 0
    rejected: list[tuple[str, str]] = field(default_factory=list)
    item_ids: dict[str, str] = field(default_factory=dict)  # item id -> label
    duplicate_ids: dict[str, str] = field(default_factory=dict)  # existing item id -> label

    def line(self) -> str:
        return (
            f"scanned {self.scanned}, ingested {self.ingested}, "
            f"duplicates {self.duplicates}, rejected {len(self.rejected)}"
        )


class BulkIngest:
    """Feeds requests to ``IngestService.ingest_many`` in batches and tallies the outcomes.

    ``add`` takes a request, or the reason one could not be made (counted as rejected);
    ``flush`` ingests what is buffered (call it at the end). A failure of the whole batch
    (the database is unreachable, say) is raised.
    """

    def __init__(
        self,
        service: IngestService,
        workspace_id: str,
        tally: Tally,
        *,
        batch_size: int = 64,
        actor: Actor = SYSTEM_ACTOR,
    ) -> None:
        self._service = service
        self._workspace_id = workspace_id
        self._actor = actor
        self.tally = tally
        self._batch_size = max(1, min(batch_size, MAX_BATCH))
        self._pending: list[tuple[str, IngestRequest]] = []

    def add(self, label: str, request: IngestRequest | str) -> None:
        if isinstance(request, str):
            self.tally.scanned += 1
            self.tally.rejected.append((label, request))
            return
        self._pending.append((label, request))
        if len(self._pending) >= self._batch_size:
            self.flush()

    def flush(self) -> None:
        batch, self._pending = self._pending, []
        if not batch:
            return
        results = self._service.ingest_many(
            self._workspace_id, [r for _, r in batch], actor=self._actor
        )
        for (label, _), result in zip(batch, results, strict=True):
            self.tally.scanned += 1
            if isinstance(result, DuplicateItem):
                self.tally.duplicates += 1
                if result.existing_id:
                    self.tally.duplicate_ids[result.existing_id] = label
            elif isinstance(result, RelataError):
                self.tally.rejected.append((label, result.message))
            else:
                self.tally.ingested += 1
                self.tally.item_ids[result.id] = label


# ---------------------------------------------------------------- files and folders
def scan(paths: Iterable[str], *, recursive: bool) -> Iterator[tuple[str, Path | str, str]]:
    """(label, path or the reason it is skipped, display name) for every file to ingest.

    A folder contributes its files (and, with ``recursive``, its subfolders' files); hidden
    entries (names starting with '.') are skipped and symlinked folders are not followed.
    """
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            yield from _scan_dir(path, recursive)
        elif path.is_file():
            yield raw, path, path.name
        elif path.exists():
            yield raw, "not a regular file", path.name
        else:
            yield raw, "no such file or directory", path.name


def _scan_dir(root: Path, recursive: bool) -> Iterator[tuple[str, Path | str, str]]:
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".")) if recursive else []
        for name in sorted(filenames):
            if name.startswith("."):
                continue
            full = Path(dirpath) / name
            display = full.relative_to(root).as_posix()
            if full.is_file():
                yield str(full), full, display
            else:
                yield str(full), "not a regular file", display


def file_request(
    path: Path, display_name: str, max_bytes: int, *, allow_duplicate: bool
) -> IngestRequest | str:
    """The request for one file, or why it cannot be ingested."""
    try:
        size = path.stat().st_size
        if size > max_bytes:
            return (
                f"the file is {size} bytes; the limit is {max_bytes} bytes "
                "(RELATA_MAX_UPLOAD_BYTES)"
            )
        with path.open("rb") as f:
            data = f.read(max_bytes + 1)
    except OSError as exc:
        return f"cannot read the file ({exc.strerror or type(exc).__name__})"
    if len(data) > max_bytes:
        return f"the file is over the limit of {max_bytes} bytes (RELATA_MAX_UPLOAD_BYTES)"
    return IngestRequest(data=data, filename=display_name, allow_duplicate=allow_duplicate)


# ---------------------------------------------------------------- JSONL corpora
@dataclass(frozen=True, slots=True)
class JsonlFields:
    id_field: str = "_id"
    title_field: str = "title"
    text_field: str = "text"


def jsonl_requests(
    stream: IO[bytes],
    fields: JsonlFields,
    max_bytes: int,
    *,
    allow_duplicate: bool = False,
    limit: int | None = None,
) -> Iterator[tuple[int, IngestRequest | str]]:
    """(line number, request or the reason the line is rejected) for each non-blank line."""
    max_line = max_bytes + _JSONL_ALLOWANCE
    lineno = 0
    produced = 0
    while limit is None or produced < limit:
        raw = stream.readline(max_line + 1)
        if not raw:
            return
        lineno += 1
        if len(raw) > max_line and not raw.endswith(b"\n"):
            _skip_rest_of_line(stream, max_line)
            produced += 1
            yield lineno, f"the line is longer than {max_line} bytes"
            continue
        if not raw.strip():
            continue
        produced += 1
        yield lineno, _jsonl_record(raw, fields, allow_duplicate)


def _skip_rest_of_line(stream: IO[bytes], chunk: int) -> None:
    while True:
        rest = stream.readline(chunk)
        if not rest or rest.endswith(b"\n"):
            return


def _jsonl_record(raw: bytes, fields: JsonlFields, allow_duplicate: bool) -> IngestRequest | str:
    try:
        record: Any = json.loads(raw)
    except (ValueError, RecursionError):
        return "not valid JSON"
    if not isinstance(record, dict):
        return "not a JSON object"
    text = record.get(fields.text_field)
    if not isinstance(text, str) or not text.strip():
        return f"field {fields.text_field!r} must be a non-empty string"
    title = record.get(fields.title_field)
    if title is not None and not isinstance(title, str):
        return f"field {fields.title_field!r} must be a string"
    metadata: dict[str, str] = {}
    external = record.get(fields.id_field)
    if external is not None:
        if isinstance(external, bool) or not isinstance(external, str | int):
            return f"field {fields.id_field!r} must be a string or an integer"
        external_id = str(external)
        if not external_id or len(external_id) > _MAX_ID_CHARS:
            return f"field {fields.id_field!r} must be 1-{_MAX_ID_CHARS} characters"
        metadata["external_id"] = external_id
    return IngestRequest(text=text, title=title, metadata=metadata, allow_duplicate=allow_duplicate)


# ---------------------------------------------------------------- waiting for the pipeline
@dataclass(frozen=True, slots=True)
class Settled:
    counts: dict[str, int]
    finished: bool
    seconds: float


def wait_until_settled(
    items: ItemRepository,
    queue: JobQueue,
    workspace_id: str,
    item_ids: list[str],
    *,
    timeout: float,
    poll_seconds: float = 0.2,
    progress_seconds: float = 1.0,
    on_progress: Callable[[dict[str, int]], None] | None = None,
    stop: threading.Event | None = None,
) -> Settled:
    """Wait (while workers run elsewhere) until the workspace has no pending or running job,
    or until ``timeout`` seconds have passed; then count the items' statuses.

    A stage enqueues the next before its own job completes, so an item's pipeline always
    has a pending or running job until it is over: no outstanding job means settled. The
    per-item status counts (``on_progress``) are taken at most every ``progress_seconds``.
    """
    start = time.monotonic()
    deadline = start + max(0.0, timeout)
    stop = stop or threading.Event()
    last_progress = 0.0
    while True:
        busy = queue.outstanding(workspace_id)
        now = time.monotonic()
        if on_progress is not None and busy and now - last_progress >= progress_seconds:
            last_progress = now
            on_progress(items.status_counts(workspace_id, item_ids))
        if not busy or now >= deadline or stop.wait(poll_seconds):
            counts = items.status_counts(workspace_id, item_ids)
            settled = sum(n for s, n in counts.items() if s in _SETTLED)
            missing = len(item_ids) - sum(counts.values())  # deleted meanwhile
            finished = not busy and settled + missing >= len(item_ids)
            return Settled(counts, finished, time.monotonic() - start)
