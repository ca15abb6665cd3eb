"""The ingestion pipeline's first two stages as job handlers: ``parse_item`` and ``chunk_item``.

``parse_item`` reads the stored original, parses it into a ``Document``, stores the text and
its structure on the item (status ``processing``), records a processing run (parser version,
timings) and enqueues ``chunk_item``. ``chunk_item`` rebuilds the document from what was
stored, chunks it with the configured target and overlap, replaces the item's chunks (one
generation; ids are deterministic, so unchanged content keeps its chunk ids), records a run
(chunker version) plus a ``skipped`` run for each stage this deployment leaves out
(``Pipeline.skipped``), and enqueues the stage that follows (``Pipeline.advance``); when no
stage follows, it marks the item ``ready`` in the same transaction.

Failures: a deleted item is ``NotFound`` and an unparseable document a ``ValidationError``;
both fail the job at once (``relata.jobs.retry``). An unparseable document, a missing
original or a transient failure on the last attempt mark the item ``failed`` with a short
error naming the stage and the reason, never document content.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from relata.chunking import CHUNKER_VERSION, chunk_document
from relata.domain.cancel import Cancelled
from relata.domain.errors import LeaseLost, NotFound, Permanent, ValidationError
from relata.domain.models import Chunk, Item, ItemStatus, ProcessingRun, SourceType
from relata.domain.ports import (
    ChunkRepository,
    Clock,
    ItemRepository,
    ProcessingRunRepository,
)
from relata.ids import chunk_id, content_hash
from relata.ingest.originals import OriginalStore
from relata.ingest.pipeline import CHUNK_ITEM, PARSE_ITEM, Pipeline, StagePayload, stage_run
from relata.ingest.validation import title_from
from relata.jobs.registry import HandlerRegistry, JobContext
from relata.parsing import PARSER_VERSION, Block, Document, ParseLimits, parse

log = logging.getLogger("relata.ingest")

STRUCTURE_VERSION = 1
_MAX_WARNINGS = 20
_ERROR_CHARS = 300

#: Called with (workspace_id, item_id) before an item that already had chunks is
#: re-chunked (drop its vectors: the idempotency table's ``DeleteByItem``).
RechunkHook = Callable[[str, str], object]


@dataclass(frozen=True, slots=True)
class ChunkSettings:
    target_chars: int
    overlap_chars: int


def encode_structure(doc: Document) -> dict[str, Any]:
    """The stored form of a document's structure: blocks as offsets into the stored text."""
    return {
        "v": STRUCTURE_VERSION,
        "title": doc.title,
        "blocks": [
            [b.start, b.end, b.kind, b.level, b.page, list(b.heading_path)] for b in doc.blocks
        ],
        "metadata": dict(doc.metadata),
        "warnings": list(doc.warnings[:_MAX_WARNINGS]),
    }


def decode_structure(item: Item, structure: dict[str, Any]) -> Document:
    """The document ``encode_structure`` stored; ``Permanent`` if it cannot be read back."""
    text = item.text or ""
    try:
        if structure.get("v") != STRUCTURE_VERSION:
            raise ValueError("unknown structure version")
        blocks = []
        for start, end, kind, level, page, path in structure["blocks"]:
            if not (0 <= start <= end <= len(text)):
                raise ValueError("block offsets outside the text")
            blocks.append(
                Block(
                    text=text[start:end],
                    heading_path=tuple(str(p) for p in path),
                    level=int(level),
                    page=None if page is None else int(page),
                    kind=str(kind),
                    start=int(start),
                    end=int(end),
                )
            )
        return Document(
            title=structure.get("title"),
            source_type=SourceType(item.source_type),
            text=text,
            blocks=tuple(blocks),
            metadata=dict(structure.get("metadata") or {}),
            warnings=tuple(structure.get("warnings") or ()),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise Permanent("the item's stored structure is unreadable; reprocess it") from exc


def _short(exc: BaseException) -> str:
    message = getattr(exc, "message", None) or type(exc).__name__
    message = " ".join(str(message).split())
    return message[:_ERROR_CHARS]


class IngestStages:
    def __init__(
        self,
        *,
        items: ItemRepository,
        chunks: ChunkRepository,
        runs: ProcessingRunRepository,
        originals: OriginalStore,
        pipeline: Pipeline,
        clock: Clock,
        chunking: ChunkSettings,
        limits: ParseLimits | None = None,
        max_original_bytes: int | None = None,
    ) -> None:
        self._items = items
        self._chunks = chunks
        self._runs = runs
        self._originals = originals
        self._pipeline = pipeline
        self._clock = clock
        self._chunking = chunking
        self._limits = limits
        self._max_bytes = max_original_bytes
        self._before_rechunk: list[RechunkHook] = []

    def add_before_rechunk(self, hook: RechunkHook) -> None:
        self._before_rechunk.append(hook)

    # ------------------------------------------------------------ parse_item
    def parse_item(self, ctx: JobContext) -> None:
        p = StagePayload.from_job(ctx.job)
        started, t0 = self._clock.now(), time.perf_counter()
        item = self._items.get(p.workspace_id, p.item_id)
        versions = {"parser": PARSER_VERSION}
        try:
            data = self._originals.read(item.original_path or "", max_bytes=self._max_bytes)
            ctx.cancel.raise_if_cancelled()
            doc = parse(data, item.source_type, limits=self._limits)
        except (NotFound, ValidationError) as exc:
            # A missing original or a document the parser refuses: repeating cannot help.
            self._fail(item, "parse", started, versions, f"could not parse: {_short(exc)}")
            raise
        parsed_s = time.perf_counter() - t0
        ctx.cancel.raise_if_cancelled()
        title = None
        if p.title_from_document:
            title = title_from(doc.title)
        run = self._run(
            item,
            "parse",
            started,
            versions,
            {
                "generation": p.generation,
                "parse_ms": round(parsed_s * 1000, 2),
                "duration_ms": round((time.perf_counter() - t0) * 1000, 2),
                "chars": len(doc.text),
                "blocks": len(doc.blocks),
                "warnings": list(doc.warnings[:_MAX_WARNINGS]),
            },
        )
        self._items.set_parsed(
            p.workspace_id,
            p.item_id,
            text=doc.text,
            structure=encode_structure(doc),
            title=title,
            run=run,
        )
        self._pipeline.enqueue(
            CHUNK_ITEM, StagePayload(p.workspace_id, p.item_id, p.generation), ctx.queue
        )

    # ------------------------------------------------------------ chunk_item
    def chunk_item(self, ctx: JobContext) -> None:
        p = StagePayload.from_job(ctx.job)
        started, t0 = self._clock.now(), time.perf_counter()
        item, structure = self._items.get_parsed(p.workspace_id, p.item_id)
        versions = {"chunker": CHUNKER_VERSION}
        if structure is None or item.text is None:
            self._fail(item, "chunk", started, versions, "could not chunk: the item was not parsed")
            raise Permanent("chunk_item ran before the item was parsed")
        doc = decode_structure(item, structure)
        drafts = chunk_document(
            doc,
            target_chars=self._chunking.target_chars,
            overlap_chars=self._chunking.overlap_chars,
        )
        chunks = [
            Chunk(
                id=chunk_id(item.workspace_id, item.id, d.sequence, digest),
                workspace_id=item.workspace_id,
                item_id=item.id,
                sequence=d.sequence,
                text=d.text,
                content_hash=digest,
                start_offset=d.start,
                end_offset=d.end,
                heading_path=tuple(d.heading_path),
                page=d.page,
            )
            for d in drafts
            for digest in (content_hash(d.text),)
        ]
        ctx.cancel.raise_if_cancelled()
        if item.chunk_count > 0:
            for hook in list(self._before_rechunk):
                hook(item.workspace_id, item.id)
        run = self._run(
            item,
            "chunk",
            started,
            versions,
            {
                "generation": p.generation,
                "duration_ms": round((time.perf_counter() - t0) * 1000, 2),
                "chunks": len(chunks),
                "target_chars": self._chunking.target_chars,
                "overlap_chars": self._chunking.overlap_chars,
            },
        )
        # Recorded as starting when the chunk stage finished, so they list after it.
        skipped = [
            self._run(
                item,
                stage,
                run.finished_at or started,
                {},
                {"generation": p.generation, "reason": reason},
                outcome="skipped",
            )
            for stage, reason in self._pipeline.skipped
        ]
        last = self._pipeline.next_after(CHUNK_ITEM) is None
        self._chunks.replace_for_item(
            item.workspace_id,
            item.id,
            chunks,
            item_status=ItemStatus.READY if last else ItemStatus.PROCESSING,
            runs=[run, *skipped],
        )
        self._pipeline.advance(
            CHUNK_ITEM, StagePayload(p.workspace_id, p.item_id, p.generation), ctx.queue
        )

    # ------------------------------------------------------------ helpers
    def _run(
        self,
        item: Item,
        stage: str,
        started: datetime,
        versions: dict[str, str],
        details: dict[str, Any],
        *,
        outcome: str = "succeeded",
        error: str | None = None,
    ) -> ProcessingRun:
        return stage_run(
            item.workspace_id,
            item.id,
            stage,
            started,
            self._clock.now(),
            versions,
            details,
            outcome=outcome,
            error=error,
        )

    def _fail(
        self, item: Item, stage: str, started: datetime, versions: dict[str, str], error: str
    ) -> None:
        """Mark the item failed and record the failed run (the item may be gone by now)."""
        try:
            self._items.set_status(item.workspace_id, item.id, ItemStatus.FAILED, error=error)
            self._runs.add(
                self._run(item, stage, started, versions, {}, outcome="failed", error=error)
            )
        except NotFound:
            pass

    def guarded(
        self, stage: str, handler: Callable[[JobContext], None]
    ) -> Callable[[JobContext], None]:
        """``handler``, marking the item failed when its last attempt fails transiently."""

        def run(ctx: JobContext) -> None:
            try:
                handler(ctx)
            except (Cancelled, LeaseLost, NotFound, ValidationError, Permanent):
                raise
            except Exception as exc:
                if ctx.job.attempts >= ctx.job.max_attempts:
                    self._mark_failed_after_retries(ctx, stage, exc)
                raise

        return run

    def _mark_failed_after_retries(self, ctx: JobContext, stage: str, exc: Exception) -> None:
        try:
            p = StagePayload.from_job(ctx.job)
            error = f"{stage} failed after {ctx.job.attempts} attempts ({type(exc).__name__})"
            self._items.set_status(p.workspace_id, p.item_id, ItemStatus.FAILED, error=error)
        except Exception:  # best effort: the job's own failure is recorded by the queue
            log.warning("could not mark an item failed", extra={"fields": {"job_id": ctx.job.id}})


def register_stages(registry: HandlerRegistry, stages: IngestStages) -> None:
    """Register ``parse_item`` and ``chunk_item`` on the worker registry."""
    registry.register(PARSE_ITEM, stages.guarded("parse", stages.parse_item))
    registry.register(CHUNK_ITEM, stages.guarded("chunk", stages.chunk_item))
