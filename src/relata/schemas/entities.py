"""The entity responses (``/api/v1/entities``, ``/api/v1/aliases``, and the CLI's ``--json``)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from relata.domain.models import AliasStatus, Entity
from relata.domain.vocabulary import EntityType
from relata.entities.service import AliasView, EntityDetail, Observed


class EntityOut(BaseModel):
    id: str
    name: str
    type: EntityType
    normalised_key: str = Field(description="with the type, the entity's identity")
    observation_count: int = Field(description="0: a person decided on it; no source left")
    item_count: int = Field(default=0, description="how many items name it")
    created_at: datetime
    last_seen_at: datetime | None
    decided_at: datetime | None


class EntityPage(BaseModel):
    entities: list[EntityOut]
    limit: int
    offset: int
    next_offset: int | None = Field(description="offset of the next page; null on the last")


class ObservationOut(BaseModel):
    item_id: str
    item_title: str | None = Field(description="null when the item is gone")
    chunk_id: str | None
    start: int = Field(description="offset into the item's text (code points)")
    end: int
    quotation: str = Field(description="the item's text between start and end, exactly")
    extractor: str
    extractor_version: str


class AliasOut(BaseModel):
    id: str
    status: AliasStatus
    score: float = Field(ge=0, le=1)
    reason: str = Field(description="why the two names may be one subject, in words")
    proposer: str
    entity: EntityOut | None
    other: EntityOut | None
    note: str | None
    decided_by: str | None
    decided_at: datetime | None
    created_at: datetime


class AliasPage(BaseModel):
    aliases: list[AliasOut]
    limit: int
    offset: int
    next_offset: int | None


class CoMentionOut(BaseModel):
    entity: EntityOut
    shared_items: int


class TypeVoteOut(BaseModel):
    type: EntityType
    mentions: int


class EntityDetailOut(EntityOut):
    type_votes: list[TypeVoteOut] = Field(
        description="how many mentions gave each type, most first: the entity's type is the "
        "majority; any other is an alternative reading to review"
    )
    observations: list[ObservationOut]
    aliases: list[AliasOut]
    co_mentioned: list[CoMentionOut]


class ItemEntityOut(EntityOut):
    mentions: int = Field(description="how many times the item names it")


class AliasDecisionIn(BaseModel):
    # A decision is one of these two (a candidate is not a decision), stated in the schema.
    status: Literal[AliasStatus.CONFIRMED, AliasStatus.REJECTED] = Field(
        description="confirmed or rejected"
    )
    note: str | None = Field(default=None, max_length=1000)


def entity_out(e: Entity) -> EntityOut:
    return EntityOut(
        id=e.id,
        name=e.name,
        type=e.entity_type,
        normalised_key=e.normalised_key,
        observation_count=e.observation_count,
        item_count=e.item_count,
        created_at=e.created_at,
        last_seen_at=e.last_seen_at,
        decided_at=e.decided_at,
    )


def observation_out(o: Observed) -> ObservationOut:
    ob = o.observation
    return ObservationOut(
        item_id=ob.item_id,
        item_title=o.item_title,
        chunk_id=ob.chunk_id,
        start=ob.start,
        end=ob.end,
        quotation=ob.quotation,
        extractor=ob.extractor,
        extractor_version=ob.extractor_version,
    )


def alias_out(v: AliasView) -> AliasOut:
    a = v.alias
    return AliasOut(
        id=a.id,
        status=a.status,
        score=a.score,
        reason=a.reason,
        proposer=a.proposer,
        entity=entity_out(v.entity) if v.entity else None,
        other=entity_out(v.other) if v.other else None,
        note=a.note,
        decided_by=a.decided_by,
        decided_at=a.decided_at,
        created_at=a.created_at,
    )


def entity_detail_out(d: EntityDetail) -> EntityDetailOut:
    return EntityDetailOut(
        **entity_out(d.entity).model_dump(),
        type_votes=[TypeVoteOut(type=EntityType(t), mentions=n) for t, n in d.type_votes],
        observations=[observation_out(o) for o in d.observations],
        aliases=[alias_out(a) for a in d.aliases],
        co_mentioned=[
            CoMentionOut(entity=entity_out(e), shared_items=n) for e, n in d.co_mentioned
        ],
    )


def item_entities_out(pairs: list[tuple[Entity, int]]) -> list[ItemEntityOut]:
    return [ItemEntityOut(**entity_out(e).model_dump(), mentions=n) for e, n in pairs]
