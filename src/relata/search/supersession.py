"""Search prefers the current statement (docs/decisions/0038, "Search and answers").

When a result's item holds a superseded position of a supersession (a state disputed by
dated sources, the newer one current) and an item holding the current position is among
the results too, the current one is moved to just before it, and both say so in their
notes: the older "superseded by" the newer's quotation, the newer "the current statement".
Nothing is dropped: the older statement stays in the results, below the newer one. Pure: the
search service passes the fused results and the supersessions their items are sources of.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Final

from relata.domain.models import Disagreement
from relata.ranking.fusion import FusedResult

_QUOTE: Final = 160


def _short(text: str) -> str:
    words = " ".join(text.split())
    if len(words) <= _QUOTE:
        return words
    cut = words[:_QUOTE].rsplit(" ", 1)[0]
    return cut + "…"


def superseded_by(found: Sequence[Disagreement]) -> dict[str, list[tuple[str, str, str]]]:
    """For each older source's item id: ``(newer item id, the newer's quotation, what is
    disputed)`` of every supersession it loses."""
    out: dict[str, list[tuple[str, str, str]]] = {}
    for d in found:
        if d.current is None or not 0 <= d.current < len(d.positions):
            continue
        current = d.positions[d.current]
        if not current.sources:
            continue
        newer = current.sources[0]
        holding = {x.item_id for x in current.sources}
        for n, p in enumerate(d.positions):
            if n == d.current:
                continue
            for s in p.sources:
                if s.item_id in holding:
                    continue
                entry = (newer.item_id, newer.quotation, p.value)
                if entry not in out.setdefault(s.item_id, []):
                    out[s.item_id].append(entry)
    return out


def prefer_current(
    results: Sequence[FusedResult], found: Sequence[Disagreement]
) -> list[FusedResult]:
    """``results`` with every current statement before the statements it supersedes, and
    notes saying so (see the module docstring)."""
    older = superseded_by(found)
    if not older:
        return list(results)
    order = list(results)
    for r in list(order):
        at = order.index(r)
        for newer_id, _, _ in older.get(r.id, ()):
            later = next((i for i, x in enumerate(order) if x.id == newer_id), None)
            if later is not None and later > at:
                order.insert(at, order.pop(later))
                at += 1
    newer_of: dict[str, list[str]] = {}
    for old_id, entries in older.items():
        for newer_id, _, _ in entries:
            newer_of.setdefault(newer_id, []).append(old_id)
    out = []
    for rank, r in enumerate(order, start=1):
        if r.rank != rank:
            r = dataclasses.replace(r, rank=rank)
        notes = list(r.explanation.notes)
        for _, quotation, value in older.get(r.id, ()):
            notes.append(
                f"superseded: this source's “{value}” is older than a dated source that says "
                f"“{_short(quotation)}”"
            )
        if r.id in newer_of:
            notes.append("the current statement: it supersedes an older dated source")
        if len(notes) != len(r.explanation.notes):
            r = dataclasses.replace(
                r, explanation=dataclasses.replace(r.explanation, notes=tuple(notes))
            )
        out.append(r)
    return out
