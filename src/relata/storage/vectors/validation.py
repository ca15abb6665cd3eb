"""Checks every vector store applies before touching storage, so both adapters refuse the same
input with the same error.

A batch is validated whole before anything is written: one record of another width refuses
the batch (``Permanent``, naming the fix), so a store never holds a mix of widths. Timestamps
become float Unix seconds, which keep microsecond order and are range-filterable in both
sqlite-vec metadata columns and Qdrant payload indexes.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from relata.domain.errors import MissingWorkspace, Permanent, ValidationError
from relata.domain.ports import VectorHit, VectorRecord

MAX_K = 1000  # sqlite-vec caps k at 4096; a search never needs more than a few hundred
MAX_DIMENSIONS = 8192  # sqlite-vec's limit for float vectors

Vector = npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class PreparedRecord:
    chunk_id: str
    workspace_id: str
    item_id: str
    source_type: str
    created_at: float
    embedding_model: str
    vector: Vector


@dataclass(frozen=True, slots=True)
class SearchFilters:
    """Optional filters, already validated; ``None`` means "no filter"."""

    item_ids: list[str] | None = None
    source_types: list[str] | None = None
    created_from: float | None = None
    created_to: float | None = None

    @property
    def matches_nothing(self) -> bool:
        return self.item_ids == [] or self.source_types == []


def check_dimensions(dimensions: int) -> int:
    if isinstance(dimensions, bool) or not isinstance(dimensions, int):
        raise ValidationError("vector width must be an integer", field="dimensions")
    if not 1 <= dimensions <= MAX_DIMENSIONS:
        raise ValidationError(
            f"vector width {dimensions} is out of range 1..{MAX_DIMENSIONS}", field="dimensions"
        )
    return dimensions


def require_workspace(workspace_id: object) -> str:
    """The vector stores' equivalent of ``ws_filter``: never widen to every workspace."""
    if not isinstance(workspace_id, str) or not workspace_id.strip():
        raise MissingWorkspace("a vector store call was made without a workspace")
    return workspace_id


def check_limit(limit: int) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValidationError("limit must be a positive integer", field="limit")
    return limit


def unit_vector(values: npt.ArrayLike) -> list[float]:
    """The vector scaled to length 1, as plain floats.

    Cosine keeps a direction, not a length, and Qdrant normalises every vector on write; the
    sqlite-vec store normalises on read so both stores hand back the same vectors. Stored
    vectors are never all zeros (``upsert`` refuses them), so the norm is never 0.
    """
    arr = np.asarray(values, dtype=np.float32)
    norm = float(np.linalg.norm(arr))
    unit: list[float] = (arr / norm if norm else arr).tolist()
    return unit


def width_mismatch(got: int, want: int, what: str) -> Permanent:
    return Permanent(
        f"{what} has {got} dimensions but the vector store holds {want}-dimensional vectors; "
        f"set RELATA_EMBEDDING_DIMENSIONS={got}, then re-embed (`relata reembed`)"
    )


def epoch_seconds(value: datetime, field: str) -> float:
    if not isinstance(value, datetime):
        raise ValidationError(f"{field} must be a datetime", field=field)
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValidationError(f"{field} must be timezone-aware", field=field)
    return value.timestamp()


def _vector(values: Sequence[float], dimensions: int, what: str) -> Vector:
    try:
        arr = np.asarray(values, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise Permanent(f"{what} is not a sequence of numbers", cause=exc) from exc
    if arr.ndim != 1:
        raise Permanent(f"{what} is not a flat sequence of numbers")
    if arr.shape[0] != dimensions:
        raise width_mismatch(int(arr.shape[0]), dimensions, what)
    if not bool(np.isfinite(arr).all()):
        raise Permanent(f"{what} contains a value that is not a finite number")
    if not bool(np.any(arr)):
        raise Permanent(f"{what} is all zeros, which has no cosine direction")
    return arr


def _text(value: object, field: str, chunk_id: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise Permanent(f"vector record {chunk_id}: {field} must be a non-empty string")
    return value


def _chunk_id(value: object) -> str:
    # Qdrant accepts UUID point ids and reports them back in canonical form; requiring the
    # canonical form here keeps the id a caller gets back identical in both stores.
    try:
        ok = isinstance(value, str) and str(uuid.UUID(value)) == value
    except ValueError:
        ok = False
    if not ok:
        raise Permanent(f"vector record: chunk_id {value!r} is not a lowercase UUID string")
    return str(value)


def prepare_batch(records: Sequence[VectorRecord], dimensions: int) -> list[PreparedRecord]:
    """Validate the whole batch; return it with duplicates collapsed (the last one wins)."""
    prepared: dict[str, PreparedRecord] = {}
    for record in records:
        chunk_id = _chunk_id(record.chunk_id)
        workspace_id = require_workspace(record.workspace_id)
        try:
            created_at = epoch_seconds(record.created_at, "created_at")
        except ValidationError as exc:
            raise Permanent(f"vector record {chunk_id}: {exc.message}") from exc
        prepared.pop(chunk_id, None)
        prepared[chunk_id] = PreparedRecord(
            chunk_id=chunk_id,
            workspace_id=workspace_id,
            item_id=_text(record.item_id, "item_id", chunk_id),
            source_type=_text(record.source_type, "source_type", chunk_id),
            created_at=created_at,
            embedding_model=_text(record.embedding_model, "embedding_model", chunk_id),
            vector=_vector(record.vector, dimensions, f"the vector of chunk {chunk_id}"),
        )
    return list(prepared.values())


def _str_list(values: Sequence[str] | None, field: str) -> list[str] | None:
    if values is None:
        return None
    if isinstance(values, str):  # a bare string is a sequence of characters: a caller bug
        raise ValidationError(f"{field} must be a list of strings, not a string", field=field)
    out = list(dict.fromkeys(values))
    if not all(isinstance(v, str) and v for v in out):
        raise ValidationError(f"{field} must contain non-empty strings", field=field)
    return out


def prepare_search(
    workspace_id: str,
    vector: Sequence[float],
    dimensions: int,
    *,
    k: int,
    item_ids: Sequence[str] | None,
    source_types: Sequence[str] | None,
    created_from: datetime | None,
    created_to: datetime | None,
) -> tuple[Vector, SearchFilters]:
    require_workspace(workspace_id)
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise ValidationError(f"k must be an integer in 1..{MAX_K}", field="k")
    query = _vector(vector, dimensions, "the query vector")
    filters = SearchFilters(
        item_ids=_str_list(item_ids, "item_ids"),
        source_types=_str_list(source_types, "source_types"),
        created_from=None if created_from is None else epoch_seconds(created_from, "created_from"),
        created_to=None if created_to is None else epoch_seconds(created_to, "created_to"),
    )
    return query, filters


def ranked(hits: list[VectorHit]) -> list[VectorHit]:
    """Best first; ties broken by chunk id so equal scores come back in a stable order."""
    return sorted(hits, key=lambda h: (-h.score, h.chunk_id))


def cosine_similarity_from_distance(distance: float) -> float:
    """sqlite-vec and pgvector report cosine *distance* (1 - similarity)."""
    score = 1.0 - float(distance)
    return score if math.isfinite(score) else -1.0


def ranked_by_distance(rows: Iterable[Sequence[Any]]) -> list[VectorHit]:
    """``(chunk_id, item_id, cosine distance)`` rows as hits, in ``ranked`` order."""
    return ranked(
        [
            VectorHit(
                chunk_id=str(r[0]),
                item_id=str(r[1]),
                score=cosine_similarity_from_distance(r[2]),
            )
            for r in rows
        ]
    )
