"""The item responses (``/api/v1/items``, the CLI's item commands with ``--json``): an item,
its processing runs, a page of items, and a reprocessing receipt."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from relata.domain.models import Chunk, Entity, Item, ItemStatus, ProcessingRun, SourceType
from relata.domain.vocabulary import RunOutcome, StageKind
from relata.schemas.entities import ItemEntityOut, item_entities_out


class ItemOut(BaseModel):
    id: str
    title: str
    source_type: SourceType = Field(description="the type detected from the content")
    status: ItemStatus
    error: str | None
    failed_stage: StageKind | None = Field(
        default=None, description="the pipeline stage whose failure left the item failed"
    )
    content_hash: str
    size_bytes: int
    media_type: str | None
    original_filename: str | None = Field(description="as uploaded, for display only")
    metadata: dict[str, str]
    chunk_count: int
    deliberate_duplicate: bool
    created_at: datetime | None
    ingested_at: datetime
    updated_at: datetime | None
    attachment_of: str | None = Field(
        None, description="the e-mail item this item is an attachment of, if any"
    )


class RunOut(BaseModel):
    id: str
    stage: str = Field(description="the pipeline stage (parse, chunk, embed, ...)")
    outcome: RunOutcome
    started_at: datetime
    finished_at: datetime | None
    versions: dict[str, str]
    details: dict[str, Any]
    error: str | None


class ItemDetailOut(ItemOut):
    runs: list[RunOut]
    entities: list[ItemEntityOut] = Field(
        default_factory=list, description="the entities the item names, most named first"
    )


class ItemPage(BaseModel):
    items: list[ItemOut]
    limit: int
    offset: int
    next_offset: int | None = Field(description="offset of the next page; null on the last")


class ItemTextOut(BaseModel):
    """A window of an item's extracted text. Offsets count characters (Unicode code points)
    from the start of the text, as every quotation's offsets into its item do."""

    item_id: str
    offset: int = Field(description="where this window starts in the text")
    length: int = Field(description="the whole text's length in characters")
    text: str = Field(description="the text from `offset`, at most `limit` characters")
    next_offset: int | None = Field(description="where the next window starts; null at the end")


class ChunkOut(BaseModel):
    id: str
    sequence: int = Field(description="the chunk's place in the item, from 0")
    text: str
    start_offset: int = Field(description="where the chunk starts in the item's text")
    end_offset: int
    heading_path: list[str] = Field(description="the headings the chunk is under, outermost first")
    page: int | None = Field(description="the page it is on (PDF), else null")
    token_count: int
    embedding_model: str | None = Field(description="the model that embedded it, null if none")


class ChunkPage(BaseModel):
    item_id: str
    chunks: list[ChunkOut]
    limit: int
    offset: int
    next_offset: int | None = Field(description="offset of the next page; null on the last")


class ReprocessOut(BaseModel):
    item: ItemOut
    job_id: str
    generation: int
    from_stage: StageKind = Field(description="the stage the new pass starts at")


def item_out(item: Item, *, attachment_of: str | None = None) -> ItemOut:
    """The item's response; ``attachment_of``: the message it is an attachment of (the
    caller looks it up: ``ItemCatalog.attachment_of`` or ``messages_of``)."""
    return ItemOut(
        id=item.id,
        title=item.title,
        source_type=item.source_type,
        status=item.status,
        error=item.error,
        failed_stage=StageKind(item.failed_stage) if item.failed_stage else None,
        content_hash=item.content_hash,
        size_bytes=item.size_bytes,
        media_type=item.media_type,
        original_filename=item.original_filename,
        metadata=dict(item.metadata),
        chunk_count=item.chunk_count,
        deliberate_duplicate=item.deliberate_duplicate,
        created_at=item.created_at,
        ingested_at=item.ingested_at,
        updated_at=item.updated_at,
        attachment_of=attachment_of,
    )


def item_text_out(item_id: str, text: str, offset: int, limit: int) -> ItemTextOut:
    """The window ``text[offset:offset + limit]`` of an item's text."""
    window = text[offset : offset + limit]
    end = offset + len(window)
    return ItemTextOut(
        item_id=item_id,
        offset=offset,
        length=len(text),
        text=window,
        next_offset=end if end < len(text) else None,
    )


def chunk_out(chunk: Chunk) -> ChunkOut:
    return ChunkOut(
        id=chunk.id,
        sequence=chunk.sequence,
        text=chunk.text,
        start_offset=chunk.start_offset,
        end_offset=chunk.end_offset,
        heading_path=list(chunk.heading_path),
        page=chunk.page,
        token_count=chunk.token_count,
        embedding_model=chunk.embedding_model,
    )


def item_detail_out(
    item: Item, runs: list[ProcessingRun], entities: list[tuple[Entity, int]] | None = None
) -> ItemDetailOut:
    return ItemDetailOut(
        **item_out(item).model_dump(),
        runs=[run_out(r) for r in runs],
        entities=item_entities_out(entities or []),
    )


def run_out(run: ProcessingRun) -> RunOut:
    return RunOut(
        id=run.id,
        stage=run.stage,
        outcome=RunOutcome(run.outcome),
        started_at=run.started_at,
        finished_at=run.finished_at,
        versions=dict(run.versions),
        details=dict(run.details),
        error=run.error,
    )
