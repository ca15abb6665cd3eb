"""Disagreements: the pair-level contradictions about one subject and one disputed thing,
grouped into positions (docs/decisions/0038-disagreements-and-supersession.md).

Pure, in the domain layer: the ledger (``relata.storage.sql.disagreements``) and the
migration that grouped the ledgers written before it both call these.

* **What is disputed** (``topic_of``): a date conflict is about its event predicate
  ("began_operating"); a quantity conflict about its unit ("day"); a polarity, direction or
  model-judged conflict has no shared name for what is disputed, so each pair stays its own
  disagreement (grouping them by subject alone would merge unrelated findings: precision
  first). The disagreement's key is the subject (the canonical key the stage compared the
  claims under, so confirmed aliases are one subject) and the topic.
* **Positions** (``positions``): the sources (a claim of an item) that never conflict with
  each other form one position. The pair records are the edges of a conflict graph; each
  source, in a fixed order (its value, its item, its offset), joins the first position none
  of whose sources it conflicts with, else opens a new one. Two sources saying "March 2019"
  and two saying "June 2021" are two positions of two sources each; a new source joins the
  position it holds.
* **Timing** (``TIMING``, ``timing_of``): whether what is disputed can change over time. A
  quantity (a period, a capacity, a count) is a **state**; a date of an event (when a project
  began operating, when a company was founded) is an **event**, which happened once; a
  polarity, direction or judged conflict is a **finding**, neither. Only states supersede.
* **Supersession** (``superseding``): a state disputed by dated sources, where every source of
  one position is newer than every source of all the others: that position is current and
  the others are superseded. Undated sources, ties and interleaved dates leave it a
  contradiction.
"""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any, Final

#: At most this many sources are kept in one disagreement's record (the most confident pairs'
#: sources first); a bound on what one row holds.
MAX_SOURCES: Final = 200


class Timing(enum.StrEnum):
    """Whether what is disputed can change over time."""

    #: Can change (a quantity, a status, a term): the newer dated statement supersedes.
    STATE = "state"
    #: Happened once (when an event took place): differing dates contradict.
    EVENT = "event"
    #: A finding or a judgement: neither, a difference contradicts.
    FINDING = "finding"


#: Which facets are states and which events (a tested table; ADR 38).
TIMING: Final[Mapping[str, Timing]] = {
    "date": Timing.EVENT,
    "quantity": Timing.STATE,
    "polarity": Timing.FINDING,
    "direction": Timing.FINDING,
    "judgement": Timing.FINDING,
}

#: Facets whose conflicts are grouped by what is disputed; the others stay one per pair.
_GROUPED: Final = frozenset({"date", "quantity"})


def timing_of(facet: str) -> Timing:
    """The facet's timing; an unknown facet is a finding (it never supersedes)."""
    return TIMING.get(facet, Timing.FINDING)


def topic_of(facet: str, reason: str, identity: str) -> str:
    """What a pair-level contradiction disputes: ``date:began_operating``,
    ``quantity:day``, or, for a facet not grouped, the pair itself."""
    if facet in _GROUPED:
        head = reason.split(":", 1)[0].strip()
        if head and ":" in reason:
            return f"{facet}:{head[:100]}"
    return f"{facet}:pair:{identity}"


def topic_label(topic: str) -> str:
    """How a topic reads: ``date:began_operating`` -> "when it began operating"."""
    facet, _, rest = topic.partition(":")
    if rest.startswith("pair:"):
        return facet
    if rest == "repeat":  # a value changed in a repeated sentence (ADR 39)
        return f"a {'date' if facet == 'date' else 'number'} changed in a repeated sentence"
    if facet == "date":
        return "when it " + rest.replace("_", " ")
    if facet == "quantity":
        return f"a quantity in {rest}" if rest else "a quantity"
    return facet


def disagreement_key(subject: str, topic: str) -> str:
    """The disagreement's key in its workspace: the subject and what is disputed."""
    return hashlib.sha256(f"disagreement\x00{subject}\x00{topic}".encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class Source:
    """A claim of an item holding a position, with its quotation and the words that hold
    the disputed value (item offsets)."""

    item_id: str
    claim_key: str
    quotation: str
    statement: str
    start: int
    end: int
    conflict_start: int
    conflict_end: int

    @property
    def value(self) -> str:
        """The disputed value as the source writes it ("March 2019")."""
        lo = max(0, self.conflict_start - self.start)
        hi = max(lo, self.conflict_end - self.start)
        words = " ".join(self.quotation[lo:hi].split())
        return words or " ".join(self.statement.split())[:80]

    @property
    def ref(self) -> tuple[str, str]:
        return (self.item_id, self.claim_key)

    def record(self) -> dict[str, Any]:
        return {
            "item_id": self.item_id,
            "claim_key": self.claim_key,
            "quotation": self.quotation,
            "statement": self.statement,
            "start": self.start,
            "end": self.end,
            "conflict_start": self.conflict_start,
            "conflict_end": self.conflict_end,
        }

    @classmethod
    def from_record(cls, d: Mapping[str, Any]) -> Source:
        return cls(
            item_id=str(d.get("item_id", "")),
            claim_key=str(d.get("claim_key", "")),
            quotation=str(d.get("quotation", "")),
            statement=str(d.get("statement", "")),
            start=int(d.get("start", 0)),
            end=int(d.get("end", 0)),
            conflict_start=int(d.get("conflict_start", 0)),
            conflict_end=int(d.get("conflict_end", 0)),
        )


@dataclass(frozen=True, slots=True)
class Pair:
    """A pair-level contradiction: the edge between two sources."""

    first: Source
    second: Source


@dataclass(frozen=True, slots=True)
class Position:
    """A value and every source that holds it."""

    value: str
    sources: tuple[Source, ...] = field(default_factory=tuple)

    @property
    def items(self) -> frozenset[str]:
        return frozenset(s.item_id for s in self.sources)


def positions(pairs: Iterable[Pair]) -> list[Position]:
    """The pairs' sources grouped into positions (see the module docstring); the positions in
    order of how many items hold them, then by value."""
    sources: dict[tuple[str, str], Source] = {}
    conflicts: dict[tuple[str, str], set[tuple[str, str]]] = {}
    for p in pairs:
        for s in (p.first, p.second):
            if len(sources) < MAX_SOURCES or s.ref in sources:
                sources.setdefault(s.ref, s)
        a, b = p.first.ref, p.second.ref
        if a in sources and b in sources:
            conflicts.setdefault(a, set()).add(b)
            conflicts.setdefault(b, set()).add(a)
    groups: list[list[Source]] = []
    order = sorted(sources.values(), key=lambda s: (s.value.casefold(), s.item_id, s.start))
    for s in order:
        against = conflicts.get(s.ref, set())
        for g in groups:
            if not any(o.ref in against for o in g):
                g.append(s)
                break
        else:
            groups.append([s])
    out = [Position(_label(g), tuple(g)) for g in groups]
    return sorted(out, key=lambda p: (-len(p.items), p.value.casefold()))


def _label(group: Sequence[Source]) -> str:
    """The form of the value most of its sources write (the first such in order on a tie)."""
    counts: dict[str, int] = {}
    for s in group:
        counts[s.value] = counts.get(s.value, 0) + 1
    return max(counts, key=lambda v: (counts[v], -list(counts).index(v)))


def source_date(created_at: datetime | None, metadata: Mapping[str, Any] | None) -> date | None:
    """A source's date: its document date (``metadata["date"]``, ISO) else ``created_at``;
    None when undated (the time it was ingested is not when it was written)."""
    raw = (metadata or {}).get("date")
    if isinstance(raw, str) and raw.strip():
        try:
            return date.fromisoformat(raw.strip()[:10])
        except ValueError:
            pass
    return created_at.date() if created_at is not None else None


def superseding(
    facet: str, found: Sequence[Position], dates: Mapping[str, date | None]
) -> int | None:
    """The index of the position that supersedes all the others, or None (see the module
    docstring): a state, every source dated, and every source of one position newer than
    every source of every other."""
    if timing_of(facet) is not Timing.STATE or len(found) < 2:
        return None
    spans: list[tuple[date, date]] = []
    for p in found:
        ds = [dates.get(i) for i in p.items]
        if not ds or any(d is None for d in ds):
            return None
        known = [d for d in ds if d is not None]
        spans.append((min(known), max(known)))
    newest = max(range(len(spans)), key=lambda i: spans[i][0])
    if all(spans[newest][0] > hi for i, (_, hi) in enumerate(spans) if i != newest):
        return newest
    return None
