"""Candidate aliases: names that may be one subject, proposed with a score and a reason.

Never a merge. Two entities stay two records; a person confirms or rejects each candidate,
and a rejected pair (``rejected``) is never proposed again. Entities of different types are
paired only by ``same_name`` (a person and a place called "Jordan" are homonyms, and stay
two entities unless a person links them). The rules, best first
(docs/decisions/0015-entities.md):

=================  =====  ==========================================================
reason             score  when
=================  =====  ==========================================================
acronym_defined    0.95   the text defines one as the other ("Meridian Tidal Institute
                          (MTI)")
diacritics         0.90   the keys differ only in accents ("Warnemünde" / "Warnemunde")
honorific          0.85   an honorific and a surname, and a full name with that surname
                          ("Dr. Vaughan" / "Ines Vaughan")
initials           0.85   initials for given names ("I. Vaughan" / "Ines Vaughan")
acronym            0.80   capitals that are the initials of the other name ("IMF" /
                          "International Monetary Fund")
prefix             0.75   the leading words of the other name ("Kestrel" / "Kestrel Marine
                          Systems"); 0.60 for places and terms; never a generic word alone
surname            0.70   a bare surname and a full name ("Vaughan" / "Ines Vaughan")
spelling           0.60   one edit apart (keys of 6 characters or more), 0.50 two edits
                          (12 or more); never when a key has a digit ("SB-04" / "SB-05")
same_name          0.50   one key, two types ("Sabrewing Array" the place and the term):
                          the extractor typed one name two ways, or they are homonyms
=================  =====  ==========================================================

Pairs are found through blocking keys (``blocking_keys``: words, initials, one-character
deletions), not by comparing every pair, so the work grows with the number of names, and a
store can look up the few entities that could pair with a new one by the same keys.
"""

from __future__ import annotations

import enum
import unicodedata
from collections import defaultdict
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from relata.domain.models import EntityType
from relata.entities.lexicon import GENERIC_WORDS, NAME_CONNECTORS
from relata.entities.normalise import clean_name, normalise_name, split_honorifics

MAX_BLOCK: Final = 200  # a blocking key shared by more names than this is too common to use
_MIN_SPELLING_CHARS: Final = 6
_MIN_TWO_EDIT_CHARS: Final = 12


class AliasReason(enum.StrEnum):
    ACRONYM_DEFINED = "acronym_defined"
    DIACRITICS = "diacritics"
    HONORIFIC = "honorific"
    INITIALS = "initials"
    ACRONYM = "acronym"
    PREFIX = "prefix"
    SURNAME = "surname"
    SPELLING = "spelling"
    SAME_NAME = "same_name"


@dataclass(frozen=True, slots=True)
class NamedEntity:
    id: str
    name: str
    entity_type: EntityType


@dataclass(frozen=True, slots=True)
class AliasCandidate:
    """``entity_id`` may be known as ``alias_id``'s name; ``entity_id`` < ``alias_id``."""

    entity_id: str
    alias_id: str
    score: float
    reason: AliasReason


@dataclass(frozen=True, slots=True)
class _Name:
    entity: NamedEntity
    key: str
    tokens: tuple[str, ...]
    honorific: bool
    capitals: str | None  # "MTI" when the name is written as an acronym


def _prepare(entity: NamedEntity) -> _Name | None:
    key = normalise_name(entity.name)
    if not key:
        return None
    honorifics, rest = split_honorifics(entity.name)
    compact = clean_name(rest).replace(".", "").replace("&", "")
    is_acronym = (
        2 <= len(compact) <= 8
        and compact.isalpha()
        and sum(c.isupper() for c in compact) >= 2
        and " " not in compact
    )
    return _Name(
        entity,
        key,
        tuple(key.split(" ")),
        bool(honorifics),
        compact.upper() if is_acronym else None,
    )


def _initials(tokens: Sequence[str], *, connectors: bool) -> str:
    return "".join(t[0] for t in tokens if connectors or (t not in NAME_CONNECTORS and t != "the"))


def _strip_accents(key: str) -> str:
    decomposed = unicodedata.normalize("NFKD", key)
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def _deletions(key: str) -> set[str]:
    return {key[:i] + key[i + 1 :] for i in range(len(key))} | {key}


def blocking_keys(name: str) -> set[str]:
    """The keys under which a name can meet its alias candidates (see the module
    docstring); two names that can be aliases share at least one."""
    prepared = _prepare(NamedEntity("", name, EntityType.TERM))
    if prepared is None:
        return set()
    keys = {f"w:{t}" for t in prepared.tokens}
    keys.add(f"a:{_strip_accents(prepared.key)}")
    if len(prepared.tokens) >= 2:
        keys.add(f"i:{_initials(prepared.tokens, connectors=False)}")
        keys.add(f"i:{_initials(prepared.tokens, connectors=True)}")
    if prepared.capitals is not None:
        keys.add(f"i:{prepared.capitals.lower()}")
    if len(prepared.key) >= _MIN_SPELLING_CHARS:
        keys.update(f"d:{d}" for d in _deletions(prepared.key))
    return keys


def _edit_distance(a: str, b: str, limit: int) -> int:
    """Optimal string alignment distance, or ``limit + 1`` once it must exceed ``limit``."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        current = [i] + [0] * len(b)
        for j, cb in enumerate(b, start=1):
            cost = 0 if ca == cb else 1
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                current[j] = min(current[j], previous2[j - 2] + 1)
        if min(current) > limit:
            return limit + 1
        previous2, previous = previous, current
    return previous[-1]


def _judge(x: _Name, y: _Name) -> tuple[float, AliasReason] | None:
    """The best rule that pairs two names of one type, if any."""
    if x.key == y.key:
        return None  # one entity already
    if _strip_accents(x.key) == _strip_accents(y.key):
        return 0.90, AliasReason.DIACRITICS
    short, long = (x, y) if len(x.tokens) <= len(y.tokens) else (y, x)
    kind = x.entity.entity_type
    if kind is EntityType.PERSON:
        found = _person_rule(short, long)
        if found is not None:
            return found
    elif _is_prefix(short.tokens, long.tokens):
        return (0.75 if kind is EntityType.ORGANISATION else 0.60), AliasReason.PREFIX
    for a, b in ((x, y), (y, x)):
        if a.capitals is not None and len(b.tokens) >= 2:
            letters = a.capitals.lower()
            if letters in (
                _initials(b.tokens, connectors=False),
                _initials(b.tokens, connectors=True),
            ):
                return 0.80, AliasReason.ACRONYM
    return _spelling(x.key, y.key)


def _is_prefix(short: tuple[str, ...], long: tuple[str, ...]) -> bool:
    """``short`` is the leading words of ``long``, and not one generic word ("National")."""
    generic = len(short) == 1 and short[0] in GENERIC_WORDS
    return len(short) < len(long) and long[: len(short)] == short and not generic


def _person_rule(short: _Name, long: _Name) -> tuple[float, AliasReason] | None:
    if len(short.tokens) == 1 and len(long.tokens) >= 2 and short.tokens[0] == long.tokens[-1]:
        if short.honorific:
            return 0.85, AliasReason.HONORIFIC
        return 0.70, AliasReason.SURNAME
    if len(short.tokens) == len(long.tokens) >= 2 and short.tokens[-1] == long.tokens[-1]:
        pairs = list(zip(short.tokens[:-1], long.tokens[:-1], strict=True))
        if all(
            a == b or (len(a) == 1 and b.startswith(a)) or (len(b) == 1 and a.startswith(b))
            for a, b in pairs
        ):
            return 0.85, AliasReason.INITIALS
    return None


def _spelling(a: str, b: str) -> tuple[float, AliasReason] | None:
    shortest = min(len(a), len(b))
    if shortest < _MIN_SPELLING_CHARS or any(c.isdigit() for c in a + b):
        return None
    limit = 2 if shortest >= _MIN_TWO_EDIT_CHARS else 1
    distance = _edit_distance(a, b, limit)
    if distance > limit:
        return None
    return (0.60 if distance == 1 else 0.50), AliasReason.SPELLING


def pair_key(a: str, b: str) -> frozenset[str]:
    """The identity of a pair of entity ids, whichever way round (review memory)."""
    return frozenset((a, b))


def propose_aliases(
    entities: Sequence[NamedEntity],
    *,
    focus: Collection[str] | None = None,
    defined: Iterable[tuple[str, str]] = (),
    rejected: Collection[frozenset[str]] = (),
) -> list[AliasCandidate]:
    """Candidate aliases among ``entities`` (see the module docstring), best first.

    ``focus``: only pairs with at least one of these entity ids (the entities an item just
    added); ``defined``: (acronym, expansion) names the texts define; ``rejected``: pairs
    (``pair_key``) a person has rejected, never proposed again.
    """
    names = [n for n in (_prepare(e) for e in entities) if n is not None]
    best: dict[frozenset[str], AliasCandidate] = {}

    def consider(x: _Name, y: _Name, judged: tuple[float, AliasReason] | None) -> None:
        pair = pair_key(x.entity.id, y.entity.id)
        if judged is None or x.entity.id == y.entity.id or pair in best or pair in rejected:
            return
        if focus is not None and x.entity.id not in focus and y.entity.id not in focus:
            return
        first, second = sorted((x.entity.id, y.entity.id))
        best[pair] = AliasCandidate(first, second, judged[0], judged[1])

    by_key: defaultdict[str, list[_Name]] = defaultdict(list)
    for n in names:
        by_key[n.key].append(n)
    for short_name, long_name in defined:
        for x in by_key.get(normalise_name(short_name), []):
            for y in by_key.get(normalise_name(long_name), []):
                if x.entity.entity_type is y.entity.entity_type and x.key != y.key:
                    consider(x, y, (0.95, AliasReason.ACRONYM_DEFINED))

    for group in by_key.values():
        if len(group) <= MAX_BLOCK:
            for position, x in enumerate(group):
                for y in group[position + 1 :]:
                    if x.entity.entity_type is not y.entity.entity_type:
                        consider(x, y, (0.50, AliasReason.SAME_NAME))

    blocks: defaultdict[tuple[EntityType, str], list[_Name]] = defaultdict(list)
    for n in names:
        for key in blocking_keys(n.entity.name):
            blocks[(n.entity.entity_type, key)].append(n)
    for members in blocks.values():
        if len(members) < 2 or len(members) > MAX_BLOCK:
            continue
        for position, x in enumerate(members):
            for y in members[position + 1 :]:
                if pair_key(x.entity.id, y.entity.id) not in best:
                    consider(x, y, _judge(x, y))
    return sorted(best.values(), key=lambda c: (-c.score, c.entity_id, c.alias_id))
