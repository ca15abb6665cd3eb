"""Request and response models of the items API (the wire shapes, separate from the domain
dataclasses they are built from)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from relata.domain.models import Item, ProcessingRun


class ItemIn(BaseModel):
    """Inline text to ingest (``POST /items`` with ``application/json``)."""

    model_config = ConfigDict(extra="forbid")

    text: str = Field(description="the document text (plain, Markdown or JSON)")
    title: str | None = Field(None, description="1-500 characters; default: found in the text")
    metadata: dict[str, Any] | None = Field(
        None, description="flat map of at most 32 keys ([A-Za-z0-9_.-]) to strings"
    )
    created_at: str | None = Field(
        None, description="ISO 8601; without a timezone it is UTC; at most a day ahead"
    )
    allow_duplicate: bool = Field(False, description="keep a deliberate copy of existing text")


class ItemOut(BaseModel):
    id: str
    title: str
    source_type: str
    status: str
    error: str | None
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


class RunOut(BaseModel):
    id: str
    stage: str
    outcome: str
    started_at: datetime
    finished_at: datetime | None
    versions: dict[str, str]
    details: dict[str, Any]
    error: str | None


class ItemDetailOut(ItemOut):
    runs: list[RunOut]


class ItemPage(BaseModel):
    items: list[ItemOut]
    limit: int
    offset: int
    next_offset: int | None = Field(description="offset of the next page; null on the last")


class ReprocessOut(BaseModel):
    item: ItemOut
    job_id: str
    generation: int


def item_out(item: Item) -> ItemOut:
    return ItemOut(
        id=item.id,
        title=item.title,
        source_type=item.source_type.value,
        status=item.status.value,
        error=item.error,
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
    )


def run_out(run: ProcessingRun) -> RunOut:
    return RunOut(
        id=run.id,
        stage=run.stage,
        outcome=run.outcome,
        started_at=run.started_at,
        finished_at=run.finished_at,
        versions=dict(run.versions),
        details=dict(run.details),
        error=run.error,
    )


_MULTIPART_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["file"],
    "properties": {
        "file": {"type": "string", "format": "binary", "description": "the document"},
        "title": {"type": "string", "description": "1-500 characters"},
        "metadata": {"type": "string", "description": "a JSON object of string values"},
        "created_at": {"type": "string", "description": "ISO 8601 date or date-time"},
        "allow_duplicate": {"type": "boolean", "default": False},
    },
}

#: The request body of ``POST /items``: a file upload or inline text.
CREATE_ITEM_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {"schema": _MULTIPART_SCHEMA},
            "application/json": {"schema": ItemIn.model_json_schema()},
        },
    }
}
