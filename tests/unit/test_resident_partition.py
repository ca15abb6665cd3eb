"""The in-memory partition sqlite-vec searches are answered from: exact top-k against a
brute-force reference, filters, replacement, removal and growth."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from relata.storage.vectors.resident import ResidentPartition
from relata.storage.vectors.validation import SearchFilters

DIMS = 8


def _cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


def test_search_is_the_exact_top_k_of_the_rows_the_filters_keep() -> None:
    rng = random.Random(3)
    part = ResidentPartition(DIMS)
    rows: dict[str, tuple[str, str, float, list[float]]] = {}
    for i in range(700):  # past the initial capacity: the arrays grow
        v = [rng.uniform(-1, 1) for _ in range(DIMS)]
        row = (f"item-{i % 90}", "pdf" if i % 4 == 0 else "text", float(i), v)
        rows[f"c{i:04d}"] = row
        part.put(f"c{i:04d}", *row)
    for i in range(0, 700, 7):  # removals move the last row into the gap
        part.discard(f"c{i:04d}")
        del rows[f"c{i:04d}"]
    part.discard("never-held")
    for i in range(1, 700, 11):  # replacements change vector and payload
        if f"c{i:04d}" in rows:
            v = [rng.uniform(-1, 1) for _ in range(DIMS)]
            rows[f"c{i:04d}"] = ("item-replaced", "docx", 5.0, v)
            part.put(f"c{i:04d}", *rows[f"c{i:04d}"])
    assert len(part) == len(rows)
    q = [rng.uniform(-1, 1) for _ in range(DIMS)]
    cases = [
        SearchFilters(),
        SearchFilters(item_ids=["item-3", "item-replaced", "nobody"]),
        SearchFilters(source_types=["pdf"], created_from=100.0, created_to=400.0),
        SearchFilters(item_ids=["nobody"]),
    ]
    for filters in cases:

        def keeps(row: tuple[str, str, float, list[float]], f: SearchFilters = filters) -> bool:
            item, kind, created, _ = row
            return (
                (f.item_ids is None or item in f.item_ids)
                and (f.source_types is None or kind in f.source_types)
                and (f.created_from is None or created >= f.created_from)
                and (f.created_to is None or created < f.created_to)
            )

        expected = sorted(
            ((-_cosine(q, r[3]), cid, r[0]) for cid, r in rows.items() if keeps(r)),
        )[:25]
        got = part.search(q, 25, filters)
        assert [(h.chunk_id, h.item_id) for h in got] == [(c, i) for _, c, i in expected]
        assert [h.score for h in got] == pytest.approx([-s for s, _, _ in expected], abs=1e-5)


def test_equal_scores_come_in_chunk_id_order_even_at_the_cut() -> None:
    part = ResidentPartition(2)
    for cid in ("d", "b", "a", "c"):
        part.put(cid, "i", "text", 0.0, [1.0, 0.0])
    part.put("z", "i", "text", 0.0, [2.0, 0.0])  # the same direction: the same score
    assert [h.chunk_id for h in part.search([3.0, 0.0], 3, SearchFilters())] == ["a", "b", "c"]


def test_vectors_without_a_direction_or_of_another_width_are_refused() -> None:
    part = ResidentPartition(3)
    with pytest.raises(ValueError, match="direction"):
        part.put("a", "i", "text", 0.0, [0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="3-dimensional"):
        part.put("a", "i", "text", 0.0, [1.0, 0.0])
    assert part.search([0.0, 0.0, 0.0], 3, SearchFilters()) == []
    assert part.search(np.ones(3), 3, SearchFilters()) == []  # empty
