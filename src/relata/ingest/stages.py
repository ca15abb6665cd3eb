"""The pipeline's first two stages: ``parse`` and ``chunk`` (``relata.pipeline.Stage``).

``ParseStage`` reads the stored original and parses it into a ``Document``; its result stores
the text and the structure (blocks as offsets into the text) on the item. ``ChunkStage``
rebuilds the document from what was stored and chunks it with the configured target and
overlap; its result replaces the item's chunks (one generation; ids are deterministic, so
unchanged content keeps its chunk ids). The runner commits each result with its run, the
item's status and the next stage's job, and handles failure: a deleted item is ``NotFound``
and an unparseable document a ``ValidationError``, both permanent, so the item is marked
failed at that stage with the reason (never document content).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from relata.chunking import CHUNKER_VERSION, chunk_document
from relata.domain.cancel import Cancel
from relata.domain.errors import Permanent
from relata.domain.models import Chunk, Item, SourceType
from relata.domain.ports import ItemRepository, StageTransaction
from relata.domain.vocabulary import StageKind
from relata.ids import chunk_id, content_hash
from relata.ingest.originals import OriginalStore
from relata.ingest.validation import title_from
from relata.parsing import PARSER_VERSION, Block, Document, ParseLimits, parse
from relata.pipeline import Requirement, StagePayload, StageResult

STRUCTURE_VERSION = 1
_MAX_WARNINGS = 20

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


class ParseStage:
    """``parse``: the stored original becomes the item's text and structure."""

    kind = StageKind.PARSE
    requires: frozenset[Requirement] = frozenset()
    versions = {"parser": PARSER_VERSION}  # noqa: RUF012 - read-only by convention

    def __init__(
        self,
        *,
        items: ItemRepository,
        originals: OriginalStore,
        limits: ParseLimits | None = None,
        max_original_bytes: int | None = None,
    ) -> None:
        self._items = items
        self._originals = originals
        self._limits = limits
        self._max_bytes = max_original_bytes

    def run(self, payload: StagePayload, cancel: Cancel) -> StageResult:
        t0 = time.perf_counter()
        item = self._items.get(payload.workspace_id, payload.item_id)
        # A missing original (NotFound) or a refused document (ValidationError): permanent.
        data = self._originals.read(item.original_path or "", max_bytes=self._max_bytes)
        cancel.raise_if_cancelled()
        doc = parse(data, item.source_type, limits=self._limits)
        parse_ms = round((time.perf_counter() - t0) * 1000, 2)
        title = title_from(doc.title) if payload.title_from_document else None
        structure = encode_structure(doc)

        def write(tx: StageTransaction) -> None:
            tx.store_parsed(item.id, text=doc.text, structure=structure, title=title)

        return StageResult(
            write=write,
            versions=dict(self.versions),
            details={
                "parse_ms": parse_ms,
                "chars": len(doc.text),
                "blocks": len(doc.blocks),
                "warnings": list(doc.warnings[:_MAX_WARNINGS]),
            },
        )


class ChunkStage:
    """``chunk``: the stored document becomes the item's chunks (one generation)."""

    kind = StageKind.CHUNK
    requires: frozenset[Requirement] = frozenset()
    versions = {"chunker": CHUNKER_VERSION}  # noqa: RUF012 - read-only by convention

    def __init__(self, *, items: ItemRepository, chunking: ChunkSettings) -> None:
        self._items = items
        self._chunking = chunking
        self._before_rechunk: list[RechunkHook] = []

    def add_before_rechunk(self, hook: RechunkHook) -> None:
        self._before_rechunk.append(hook)

    def run(self, payload: StagePayload, cancel: Cancel) -> StageResult:
        item, structure = self._items.get_parsed(payload.workspace_id, payload.item_id)
        if structure is None or item.text is None:
            raise Permanent("the item was not parsed: reprocess it from parse")
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
        cancel.raise_if_cancelled()
        if item.chunk_count > 0:
            for hook in list(self._before_rechunk):
                hook(item.workspace_id, item.id)

        def write(tx: StageTransaction) -> None:
            tx.replace_chunks(item.id, chunks)

        return StageResult(
            write=write,
            versions=dict(self.versions),
            details={
                "chunks": len(chunks),
                "target_chars": self._chunking.target_chars,
                "overlap_chars": self._chunking.overlap_chars,
            },
        )
