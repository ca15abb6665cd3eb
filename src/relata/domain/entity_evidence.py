"""An entity's type and display name, decided from all of its mentions (ADR 50).

Each mention keeps the type and the name its own evidence gave (the extractor's reading of
that item). One normalised name is one entity: its type is the type most of its mentions
carry, its display name the form the documents use most. Both are pure functions of the
mentions, so they do not depend on the order items were processed in, and a form only a
deleted item used goes with it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from relata.domain.vocabulary import EntityType

#: On a tie of mentions and of items, the type that wins (the more specific reading of a
#: name first: a person or a place is rarely mistaken for a term, the reverse is common).
TYPE_PRECEDENCE: tuple[EntityType, ...] = (
    EntityType.PERSON,
    EntityType.LOCATION,
    EntityType.ORGANISATION,
    EntityType.TERM,
)


def decide_type(evidence: Iterable[tuple[EntityType, str]]) -> EntityType | None:
    """The type of most mentions (``(type, item_id)`` pairs); on a tie, of most items; then
    ``TYPE_PRECEDENCE``. None when there is no mention."""
    mentions: Counter[EntityType] = Counter()
    items: dict[EntityType, set[str]] = {}
    for entity_type, item_id in evidence:
        mentions[entity_type] += 1
        items.setdefault(entity_type, set()).add(item_id)
    if not mentions:
        return None
    return min(
        mentions,
        key=lambda t: (-mentions[t], -len(items[t]), TYPE_PRECEDENCE.index(t)),
    )


def type_votes(types: Iterable[EntityType]) -> list[tuple[EntityType, int]]:
    """How many mentions gave each type, most first (the alternatives a person reviews)."""
    counts = Counter(types)
    return sorted(counts.items(), key=lambda kv: (-kv[1], TYPE_PRECEDENCE.index(kv[0])))


def _all_capitals(name: str) -> bool:
    """A name in capitals that is not an acronym: several words, or one of 5+ letters."""
    letters = [c for c in name if c.isalpha()]
    long = " " in name.strip() or len(letters) >= 5
    return long and len(letters) > 1 and all(c.isupper() for c in letters)


def display_name(names: Iterable[str]) -> str | None:
    """The form the mentions use most; a form in capitals only ("PORT HALLORAN", a dateline
    or a headline) only when no mention writes the name in mixed case. Ties: the
    alphabetically first, so the choice does not depend on order. None when there is none."""
    counts = Counter(n for n in names if n and n.strip())
    if not counts:
        return None
    mixed = [n for n in counts if not _all_capitals(n)]
    pool = mixed or list(counts)
    return min(pool, key=lambda n: (-counts[n], n))
