"""The item-version responses (``/api/v1/items/{id}/versions``, ``PUT .../content``, the
CLI's ``relata item ID --json``)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from relata.domain.models import ItemVersion, SourceType
from relata.domain.vocabulary import ActorKind
from relata.schemas.items import ItemOut


class ItemVersionOut(BaseModel):
    number: int = Field(description="1 for the first upload, one more for each new version")
    current: bool = Field(description="the item's content now (the highest number)")
    sha256: str
    size_bytes: int
    source_type: SourceType = Field(description="the type detected from the content")
    media_type: str | None
    filename: str | None = Field(description="as uploaded, for display only")
    created_at: datetime
    created_by_kind: ActorKind | None = Field(
        description="who uploaded it; null for a first version uploaded before versions existed"
    )
    created_by: str | None = Field(description="the user who uploaded it, for a person")
    original_kept: bool = Field(
        description="whether its original can be downloaded (previous ones are kept up to "
        "RELATA_KEEP_PREVIOUS_ORIGINALS)"
    )


class ItemVersionList(BaseModel):
    item_id: str
    versions: list[ItemVersionOut] = Field(description="newest (the current one) first")


class VersionUploadOut(BaseModel):
    unchanged: bool = Field(
        description="true when the file is the current version's bytes: nothing was changed"
    )
    item: ItemOut
    version: ItemVersionOut = Field(description="the new version, or the current one")
    job_id: str | None = Field(description="the new pass's first job; null when unchanged")
    generation: int | None = Field(description="the new pass's number; null when unchanged")


def version_out(v: ItemVersion, *, current: bool) -> ItemVersionOut:
    kind = v.created_by_kind
    return ItemVersionOut(
        number=v.number,
        current=current,
        sha256=v.sha256,
        size_bytes=v.size_bytes,
        source_type=v.source_type,
        media_type=v.media_type,
        filename=v.filename,
        created_at=v.created_at,
        created_by_kind=ActorKind(kind) if kind in set(ActorKind) else None,
        created_by=v.created_by,
        original_kept=v.original_path is not None,
    )


def versions_out(item_id: str, versions: list[ItemVersion]) -> ItemVersionList:
    top = max((v.number for v in versions), default=0)
    return ItemVersionList(
        item_id=item_id, versions=[version_out(v, current=v.number == top) for v in versions]
    )
