"""What an extractor is given and what it returns: chunk texts in, typed mentions out.

Offsets are always into the *item* text: a chunk is ``item_text[base_offset:base_offset +
len(text)]``, so a mention found at ``i`` in a chunk is at ``base_offset + i`` in the item,
and ``item_text[mention.start:mention.end] == mention.quotation`` always holds.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from relata.domain.errors import ValidationError
from relata.domain.models import EntityType


class Extractor(enum.StrEnum):
    DETERMINISTIC = "deterministic"
    MODEL = "model"


@dataclass(frozen=True, slots=True)
class ChunkText:
    """One chunk of an item: its id, its text and where that text starts in the item."""

    chunk_id: str
    text: str
    base_offset: int = 0

    def __post_init__(self) -> None:
        if self.base_offset < 0:
            raise ValidationError(
                f"chunk {self.chunk_id!r} has a negative base offset ({self.base_offset})",
                field="base_offset",
            )


@dataclass(frozen=True, slots=True)
class Mention:
    """One place where an item names an entity.

    ``name`` is the display form of the quotation (``normalise.clean_name``) and
    ``normalised_key`` its key: with ``entity_type`` the entity's identity.
    """

    chunk_id: str
    start: int
    end: int
    quotation: str
    entity_type: EntityType
    name: str
    normalised_key: str
    extractor: Extractor
    extractor_version: str


@dataclass(frozen=True, slots=True)
class AcronymDefinition:
    """The text defines ``acronym`` as ``expansion`` ("Meridian Tidal Institute (MTI)"): a
    strong alias candidate between the two entities, for a person to confirm."""

    chunk_id: str
    acronym: str
    expansion: str
    entity_type: EntityType


@dataclass(frozen=True, slots=True)
class Extraction:
    """An item's mentions in text order, and the acronyms it defines."""

    mentions: tuple[Mention, ...]
    acronyms: tuple[AcronymDefinition, ...] = ()


class EntityExtractor(Protocol):
    """Finds the mentions in one item's chunks; ``extractor`` and ``version`` are recorded
    on every mention it returns."""

    @property
    def extractor(self) -> Extractor: ...

    @property
    def version(self) -> str: ...

    def extract(self, chunks: Sequence[ChunkText]) -> Extraction: ...
