"""The record kinds of an export, the columns each carries, and the checks an imported
record passes (docs/decisions/0041-export-and-import.md).

One ``Kind`` per table: its record name (``"item"``, ``"claim"``...), the exported columns
in order, which of them name another record (and of which kind), and the closed
vocabularies some columns take. Types and lengths come from the table definitions
themselves (``storage.sql.tables``), so a record that would not fit its column is refused
with its line number before anything is written, never truncated or left to the database.

Kinds are listed parents first: an export writes them in this order and an import reads
them in it, so a record only ever names records on earlier lines.
"""

from __future__ import annotations

import enum
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from relata.domain.errors import ValidationError
from relata.domain.models import AliasStatus, ItemStatus, ReviewStatus, SourceType
from relata.domain.vocabulary import (
    ClaimNature,
    ContradictionStatus,
    DisagreementKind,
    DisagreementStatus,
    EntityType,
    RelationshipType,
)
from relata.storage.sql import tables as t

#: The field naming a record's kind (not ``kind``: a disagreement has a column of that name).
RECORD = "record"
#: The first record of every JSON Lines export: what it is and which version of the format.
HEADER_KIND = "relata-export"
FORMAT_VERSION = 1
#: A text column without a declared length (a statement, an item's text) takes at most this.
MAX_TEXT_CHARS = 10_000_000
#: Nested JSON (facets, evidence, positions) deeper than this is refused.
MAX_JSON_DEPTH = 16

UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


@dataclass(frozen=True, slots=True)
class Kind:
    name: str
    table: sa.Table
    columns: tuple[str, ...]
    #: column -> the kind of record it names (an id exported on an earlier line)
    refs: Mapping[str, str] = field(default_factory=dict)
    #: column -> the closed vocabulary it takes
    vocab: Mapping[str, type[enum.StrEnum]] = field(default_factory=dict)
    #: rows left out of an export (a deleted item is no longer the workspace's)
    live: Any = None
    #: columns unique within a workspace (a record repeating one is refused on import)
    unique: tuple[str, ...] = ()

    @property
    def plural(self) -> str:
        """The kind's name in the plural (``entities``): CSV file names, counts."""
        if self.name.endswith("y"):
            return self.name[:-1] + "ies"
        return self.name + ("es" if self.name.endswith("s") else "s")

    def column(self, name: str) -> sa.Column[Any]:
        return self.table.c[name]


def _all_but(table: sa.Table, *left_out: str) -> tuple[str, ...]:
    return tuple(c.name for c in table.columns if c.name not in {"workspace_id", *left_out})


ITEM = Kind(
    "item",
    t.items,
    (
        "id",
        "title",
        "source_type",
        "status",
        "content_hash",
        "deliberate_duplicate",
        "size_bytes",
        "original_filename",
        "media_type",
        "metadata",
        "error",
        "failed_stage",
        "created_at",
        "ingested_at",
        "updated_at",
    ),
    vocab={"source_type": SourceType, "status": ItemStatus},
    live=t.items.c.deleted_at.is_(None),
)
ENTITY = Kind(
    "entity",
    t.entities,
    _all_but(t.entities),
    vocab={"entity_type": EntityType},
    unique=("entity_type", "normalised_key"),
)
MENTION = Kind(
    "mention",
    t.entity_observations,
    _all_but(t.entity_observations, "chunk_id"),
    refs={"entity_id": "entity", "item_id": "item"},
)
ALIAS = Kind(
    "alias",
    t.entity_aliases,
    _all_but(t.entity_aliases),
    refs={"entity_id": "entity", "other_id": "entity"},
    vocab={"status": AliasStatus},
    unique=("pair_key",),
)
CLAIM = Kind(
    "claim",
    t.claims,
    _all_but(t.claims, "chunk_id", "write_seq"),
    refs={"item_id": "item"},
    vocab={"nature": ClaimNature},
    unique=("dedupe_key",),
)
CONTRADICTION = Kind(
    "contradiction",
    t.contradictions,
    _all_but(t.contradictions),
    refs={"first_item_id": "item", "second_item_id": "item"},
    vocab={"status": ContradictionStatus},
    unique=("identity",),
)
DISAGREEMENT = Kind(
    "disagreement",
    t.disagreements,
    _all_but(t.disagreements),
    vocab={"status": DisagreementStatus, "kind": DisagreementKind},
    unique=("key",),
)
RELATIONSHIP = Kind(
    "relationship",
    t.relationships,
    _all_but(t.relationships),
    refs={"source_id": "item", "target_id": "item"},
    vocab={"relationship_type": RelationshipType, "review_status": ReviewStatus},
    unique=("dedupe_key",),
)

KINDS: tuple[Kind, ...] = (
    ITEM,
    ENTITY,
    MENTION,
    ALIAS,
    CLAIM,
    CONTRADICTION,
    DISAGREEMENT,
    RELATIONSHIP,
)
BY_NAME: dict[str, Kind] = {k.name: k for k in KINDS}
#: Fields an item record carries only when the export was asked for originals.
ITEM_EXTRAS = ("text", "original")


# ---------------------------------------------------------------- out: a row as JSON
def jsonable(value: Any) -> Any:
    """A column value as JSON: datetimes as ISO 8601 in UTC, the rest as they are."""
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat()
    return value


def record_of(kind: Kind, row: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {RECORD: kind.name}
    for name in kind.columns:
        out[name] = jsonable(row[name])
    return out


# ---------------------------------------------------------------- in: a record checked
class RecordError(ValidationError):
    """An imported record that is not one this version writes; the message names the line."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}", field="records")
        self.line = line


def _text_ok(value: str) -> bool:
    """No NUL (PostgreSQL refuses it in text) and no lone surrogate (not UTF-8)."""
    if "\x00" in value:
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _json_ok(value: Any, depth: int = 0) -> bool:
    if depth > MAX_JSON_DEPTH:
        return False
    if isinstance(value, dict):
        return all(isinstance(k, str) and _json_ok(v, depth + 1) for k, v in value.items())
    if isinstance(value, list):
        return all(_json_ok(v, depth + 1) for v in value)
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, str):
        return _text_ok(value)
    return (
        value is None or isinstance(value, bool) or (isinstance(value, int) and abs(value) < 2**63)
    )


def _value(kind: Kind, name: str, value: Any) -> Any:
    """``value`` checked against column ``name`` (and its vocabulary); the value to store.
    Raises ``ValueError`` with what is wrong."""
    col = kind.column(name)
    if value is None:
        if not col.nullable:
            raise ValueError(f"{name} is required")
        return None
    ctype = col.type
    if isinstance(ctype, t.UTCDateTime):
        if not isinstance(value, str) or len(value) > 40:
            raise ValueError(f"{name} must be an ISO 8601 date-time")
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            raise ValueError(f"{name} must be an ISO 8601 date-time") from None
        if parsed.tzinfo is None:
            raise ValueError(f"{name} must carry its UTC offset")
        return parsed
    if isinstance(ctype, sa.Boolean):
        if not isinstance(value, bool):
            raise ValueError(f"{name} must be true or false")
        return value
    if isinstance(ctype, sa.Integer):
        top = 2**63 - 1 if isinstance(ctype, sa.BigInteger) else 2**31 - 1
        if isinstance(value, bool) or not isinstance(value, int) or not -top <= value <= top:
            raise ValueError(f"{name} must be an integer of at most {top}")
        return value
    if isinstance(ctype, sa.Float):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"{name} must be a number")
        if not math.isfinite(value):
            raise ValueError(f"{name} must be a finite number")
        return float(value)
    if isinstance(ctype, sa.JSON):
        if not _json_ok(value):
            raise ValueError(
                f"{name} must be JSON at most {MAX_JSON_DEPTH} levels deep, its numbers finite "
                "and 64-bit, its strings without NUL"
            )
        return value
    if isinstance(ctype, sa.String):  # String and Text
        if not isinstance(value, str):
            raise ValueError(f"{name} must be a string")
        if not _text_ok(value):
            raise ValueError(f"{name} holds a NUL or a character that is not UTF-8")
        limit = ctype.length or MAX_TEXT_CHARS
        if len(value) > limit:
            raise ValueError(f"{name} is longer than {limit} characters")
        if (name == "id" or name in kind.refs) and not UUID_RE.match(value):
            raise ValueError(f"{name} must be a lowercase UUID")
        vocab = kind.vocab.get(name)
        if vocab is not None and value not in vocab.__members__.values():
            allowed = ", ".join(v.value for v in vocab)
            raise ValueError(f"{name} must be one of: {allowed}")
        return value
    raise ValueError(f"{name} has a type this version cannot import")  # pragma: no cover


def check_record(
    line: int, record: Any, seen: Mapping[str, set[str]]
) -> tuple[Kind, dict[str, Any]]:
    """The record on ``line`` checked: its kind and its column values (``text`` and
    ``original`` of an item too, unchecked beyond their type). Every id it names must be in
    ``seen`` under the named kind: a record never names one on a later line."""
    if not isinstance(record, dict):
        raise RecordError(line, "a record must be a JSON object")
    name = record.get(RECORD)
    kind = BY_NAME.get(name) if isinstance(name, str) else None
    if kind is None:
        shown = name if isinstance(name, str) and len(name) <= 40 else "?"
        allowed = ", ".join(BY_NAME)
        raise RecordError(line, f"unknown record kind {shown!r}; expected one of: {allowed}")
    extras = ITEM_EXTRAS if kind is ITEM else ()
    unknown = sorted(k for k in record if k != RECORD and k not in kind.columns and k not in extras)
    if unknown:
        raise RecordError(line, f"{kind.name} has unknown fields: {', '.join(unknown[:5])}")
    values: dict[str, Any] = {}
    try:
        for col in kind.columns:
            if col not in record:
                if kind.column(col).nullable:
                    values[col] = None
                    continue
                raise ValueError(f"{col} is required")
            values[col] = _value(kind, col, record[col])
        for extra in extras:
            value = record.get(extra)
            if value is not None and not (isinstance(value, str) and _text_ok(value)):
                raise ValueError(f"{extra} must be a string without NUL")
            values[extra] = value
        for col, target in kind.refs.items():
            if values[col] not in seen[target]:
                raise ValueError(f"{col} names no {target} on an earlier line")
    except ValueError as exc:
        raise RecordError(line, f"{kind.name}: {exc}") from None
    return kind, values
