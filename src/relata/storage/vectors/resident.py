"""``ResidentPartition``: one workspace's vectors of one width held in memory and searched
exactly with NumPy (docs/decisions/0025-resident-vector-partitions.md).

sqlite-vec answers a KNN query by scanning the whole partition in C (about 1 µs per vector
on this build, which has no SIMD), so every search costs time in proportion to the
workspace. The same exact search as one float32 matrix-vector product is 10-20x cheaper.
``SqliteVecStore`` keeps a copy per workspace it searches and brings it up to date from its
change log before each search; this module is the copy alone, with no I/O.

Scores are the cosine similarity of the query and each stored vector (both scaled to unit
length here, as vec0's cosine distance does implicitly), in float32; the hits are the true
top ``k`` of the rows that pass the filters, best first, equal scores in chunk-id order (as
``validation.ranked`` orders vec0's hits).
"""

from __future__ import annotations

from typing import Any, TypeVar, cast

import numpy as np
import numpy.typing as npt

from relata.domain.ports import VectorHit
from relata.storage.vectors.validation import SearchFilters

_INITIAL_ROWS = 256


class ResidentPartition:
    """The vectors of one workspace and width, with the payload the filters read.

    ``seq`` is the position in the store's change log that this copy reflects; the store
    moves it forward as it applies changes. Not thread-safe: the store serialises access.
    """

    def __init__(self, dimensions: int, seq: int = 0, *, capacity: int = _INITIAL_ROWS) -> None:
        self.dimensions = dimensions
        self.seq = seq
        self._ids: list[str] = []
        self._pos: dict[str, int] = {}
        rows = max(1, capacity)
        self._vectors = np.zeros((rows, dimensions), dtype=np.float32)
        self._created = np.zeros(rows, dtype=np.float64)
        self._item = np.zeros(rows, dtype=np.int64)
        self._type = np.zeros(rows, dtype=np.int64)
        self._item_codes: dict[str, int] = {}
        self._item_names: list[str] = []
        self._type_codes: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._ids)

    @staticmethod
    def row_bytes(dimensions: int) -> int:
        """Memory of one row: the float32 vector and the three payload numbers."""
        return 4 * dimensions + 24

    @property
    def nbytes(self) -> int:
        """Memory held by the arrays (the row capacity, not only the rows in use)."""
        return int(
            self._vectors.nbytes + self._created.nbytes + self._item.nbytes + self._type.nbytes
        )

    # ------------------------------------------------------------------ changes
    def put(
        self,
        chunk_id: str,
        item_id: str,
        source_type: str,
        created_at: float,
        vector: npt.ArrayLike,
    ) -> None:
        """Add the chunk's vector, or replace it (and its payload) when it is held."""
        arr = np.asarray(vector, dtype=np.float32)
        if arr.shape != (self.dimensions,):
            raise ValueError(f"a {self.dimensions}-dimensional vector was expected")
        norm = float(np.linalg.norm(arr))
        if not norm or not np.isfinite(norm):
            raise ValueError("a stored vector has no direction")
        row = self._pos.get(chunk_id)
        if row is None:
            row = len(self._ids)
            self._grow(row + 1)
            self._ids.append(chunk_id)
            self._pos[chunk_id] = row
        self._vectors[row] = arr / norm
        self._created[row] = created_at
        self._item[row] = self._code(self._item_codes, item_id, self._item_names)
        self._type[row] = self._code(self._type_codes, source_type, None)

    def discard(self, chunk_id: str) -> None:
        """Remove the chunk's vector when it is held (the last row moves into its place)."""
        row = self._pos.pop(chunk_id, None)
        if row is None:
            return
        last = len(self._ids) - 1
        moved = self._ids.pop()
        if row != last:
            self._ids[row] = moved
            self._pos[moved] = row
            self._vectors[row] = self._vectors[last]
            self._created[row] = self._created[last]
            self._item[row] = self._item[last]
            self._type[row] = self._type[last]

    def _grow(self, rows: int) -> None:
        capacity = self._vectors.shape[0]
        if rows <= capacity:
            return
        while capacity < rows:
            capacity *= 2
        self._vectors = _resized(self._vectors, capacity)
        self._created = _resized(self._created, capacity)
        self._item = _resized(self._item, capacity)
        self._type = _resized(self._type, capacity)

    @staticmethod
    def _code(codes: dict[str, int], value: str, names: list[str] | None) -> int:
        code = codes.get(value)
        if code is None:
            code = codes[value] = len(codes)
            if names is not None:
                names.append(value)
        return code

    # ------------------------------------------------------------------ search
    def search(self, query: npt.ArrayLike, k: int, filters: SearchFilters) -> list[VectorHit]:
        """The ``k`` rows closest to ``query`` among those passing ``filters``."""
        n = len(self._ids)
        q = np.asarray(query, dtype=np.float32)
        norm = float(np.linalg.norm(q))
        if n == 0 or not norm or k < 1:
            return []
        rows = self._passing(n, filters)
        if rows is not None and rows.size == 0:
            return []
        vectors = self._vectors[:n] if rows is None else self._vectors[rows]
        scores = vectors @ (q / norm)
        if scores.size > k:
            # Every row scoring at least the k-th best, ties included, then the exact order.
            kth = np.partition(scores, scores.size - k)[scores.size - k]
            best = np.flatnonzero(scores >= kth)
        else:
            best = np.arange(scores.size)
        at = best if rows is None else rows[best]
        hits = [
            (float(s), self._ids[int(r)], int(r)) for s, r in zip(scores[best], at, strict=True)
        ]
        hits.sort(key=lambda h: (-h[0], h[1]))
        return [
            VectorHit(chunk_id=cid, item_id=self._item_names[int(self._item[r])], score=s)
            for s, cid, r in hits[:k]
        ]

    def _passing(self, n: int, filters: SearchFilters) -> npt.NDArray[np.intp] | None:
        """The rows the filters keep, or None when there are none (every row)."""
        mask: npt.NDArray[np.bool_] | None = None

        def keep(more: npt.NDArray[np.bool_]) -> None:
            nonlocal mask
            mask = more if mask is None else mask & more

        if filters.item_ids is not None:
            keep(np.isin(self._item[:n], _codes(self._item_codes, filters.item_ids)))
        if filters.source_types is not None:
            keep(np.isin(self._type[:n], _codes(self._type_codes, filters.source_types)))
        if filters.created_from is not None:
            keep(self._created[:n] >= filters.created_from)
        if filters.created_to is not None:
            keep(self._created[:n] < filters.created_to)
        return None if mask is None else np.flatnonzero(mask)


def _codes(codes: dict[str, int], values: list[str]) -> npt.NDArray[np.int64]:
    return np.asarray([codes[v] for v in values if v in codes], dtype=np.int64)


_Array = TypeVar("_Array", bound="np.ndarray[Any, Any]")


def _resized(arr: _Array, rows: int) -> _Array:
    out = np.zeros((rows, *arr.shape[1:]), dtype=arr.dtype)
    out[: arr.shape[0]] = arr
    return cast(_Array, out)
