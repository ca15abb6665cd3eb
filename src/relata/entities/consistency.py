"""One item, one reading of each name: the document-level rules.

A name is usually introduced in full and then shortened ("Tomas Reyes" ... "Mr Reyes",
"Kestrel Marine Systems" ... "Kestrel"), and a model that reads sentence by sentence types
each occurrence on its own. Across all the chunks of an item, ``harmonise``:

1. collects votes for each surface form's type: a rule's span counts 2, a model's 1, a
   person named in full votes 2 for its bare surname and 1 for its given name (neither
   when it is a country or state: "George Washington"), an organisation
   votes for its first word ("Kestrel"), 2 when a rule typed it;
2. gives every model span the winning type of its surface (its own on a tie; the short
   form of an organisation never turns a place into one: "Duluth City Council");
3. labels the other occurrences of every known name where no span covers them yet, a
   single word only when it is not part of a longer capitalised run;
4. in headlines written in capitals, where the model is unreliable, keeps only names the
   rest of the item confirms (matched without case).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Final

from relata.domain.models import EntityType
from relata.entities.gazetteer import PLACES
from relata.entities.lexicon import GENERIC_WORDS, HONORIFICS, TITLES
from relata.entities.rules import Passage, Span, name_like
from relata.entities.tokens import is_abbreviation

_MAX_SURFACE_WORDS: Final = 8
_NAMED: Final = (EntityType.PERSON, EntityType.ORGANISATION, EntityType.LOCATION)
Surface = tuple[str, ...]


def _surface(p: Passage, s: Span) -> Surface:
    i, j = p.word_range(s.start, s.end)
    return tuple(w.text for w in p.words[i:j])


def _specific(word: str) -> bool:
    return len(word) >= 3 and name_like(word) and word.casefold() not in GENERIC_WORDS


def _winner(votes: Counter[EntityType], own: EntityType | None = None) -> EntityType:
    """The most voted type; on a tie the span's own type, else a person."""
    best = max(votes.values())
    tied = [t for t, n in votes.items() if n == best]
    if own in tied:
        return own
    return EntityType.PERSON if EntityType.PERSON in tied else tied[0]


class _Knowledge:
    """What the item says about its names."""

    def __init__(self) -> None:
        self.votes: defaultdict[Surface, Counter[EntityType]] = defaultdict(Counter)
        self.person_short: Counter[Surface] = Counter()
        self.org_short: Counter[Surface] = Counter()

    def learn(self, p: Passage, spans: Sequence[Span]) -> None:
        for s in spans:
            surface = _surface(p, s)
            if not surface or len(surface) > _MAX_SURFACE_WORDS:
                continue
            i, _ = p.word_range(s.start, s.end)
            if p.in_caps_line(i) and not s.strong:
                continue
            weight = 2 if s.strong else 1
            self.votes[surface][s.type] += weight
            names = [w for w in surface if not is_abbreviation(w) and len(w) > 1]
            if s.type is EntityType.PERSON and len(names) >= 2:
                # A bare surname is strong evidence; a bare given name ("Paris") weaker.
                for word, vote in ((names[-1], 2), (names[0], 1)):
                    if _specific(word) and word not in PLACES:
                        self.person_short[(word,)] += vote
            elif s.type is EntityType.ORGANISATION and len(surface) >= 2 and _specific(surface[0]):
                self.org_short[(surface[0],)] += weight

    def evidence(self, surface: Surface, own: EntityType | None) -> Counter[EntityType]:
        votes = Counter(self.votes.get(surface, Counter()))
        if self.person_short[surface]:
            votes[EntityType.PERSON] += self.person_short[surface]
        place = own is EntityType.LOCATION or " ".join(surface) in PLACES
        if self.org_short[surface] and not place:
            votes[EntityType.ORGANISATION] += self.org_short[surface]
        return votes

    def surfaces(self) -> set[Surface]:
        return set(self.votes) | set(self.person_short) | set(self.org_short)


def harmonise(passages: Sequence[Passage], spans: Sequence[list[Span]]) -> None:
    """Apply the module's rules to every passage's spans, in place."""
    knowledge = _Knowledge()
    for p, ss in zip(passages, spans, strict=True):
        knowledge.learn(p, ss)
    evidence = {s: knowledge.evidence(s, None) for s in knowledge.surfaces()}
    known = {s: _winner(votes) for s, votes in evidence.items() if votes}
    upper = {
        tuple(w.upper() for w in k): t for k, t in known.items() if len(k) > 1 or len(k[0]) > 2
    }
    for p, ss in zip(passages, spans, strict=True):
        _retype(p, ss, knowledge, upper)
        _fill(p, ss, known, upper)
        ss.sort(key=lambda s: s.start)


def _retype(
    p: Passage, ss: list[Span], knowledge: _Knowledge, upper: dict[Surface, EntityType]
) -> None:
    keep: list[Span] = []
    for s in ss:
        surface = _surface(p, s)
        i, _ = p.word_range(s.start, s.end)
        if p.in_caps_line(i) and not s.strong:
            confirmed = upper.get(tuple(w.upper() for w in surface))
            if confirmed is None:
                continue
            s.type = confirmed
        elif not s.strong:
            votes = knowledge.evidence(surface, s.type)
            if votes:
                s.type = _winner(votes, s.type)
        keep.append(s)
    ss[:] = keep


def _fill(
    p: Passage,
    ss: list[Span],
    known: dict[Surface, EntityType],
    upper: dict[Surface, EntityType],
) -> None:
    covered = bytearray(len(p.words))
    for s in ss:
        i, j = p.word_range(s.start, s.end)
        covered[i:j] = b"\x01" * (j - i)
    first_words = {k[0] for k in known} | {k[0] for k in upper}
    ws, n, i = p.words, len(p.words), 0
    while i < n:
        if covered[i] or ws[i].text not in first_words:
            i += 1
            continue
        caps = p.in_caps_line(i)
        table = upper if caps else known
        for length in range(min(_MAX_SURFACE_WORDS, n - i), 0, -1):
            j = i + length
            if any(covered[i:j]) or not all(p.joined(k) for k in range(i + 1, j)):
                continue
            surface = tuple((w.text.upper() if caps else w.text) for w in ws[i:j])
            found = table.get(surface)
            if found is None or (length == 1 and not caps and _inside_run(p, i)):
                continue
            ss.append(Span(ws[i].start, ws[j - 1].end, found))
            covered[i:j] = b"\x01" * length
            i = j - 1
            break
        i += 1


def _inside_run(p: Passage, i: int) -> bool:
    """Whether word ``i`` is joined to a capitalised neighbour (other than an honorific or
    title before it): then it is part of a longer name this item has not typed."""
    ws = p.words
    if i + 1 < len(ws) and p.joined(i + 1) and name_like(ws[i + 1].text):
        return True
    if i > 0 and p.joined(i) and name_like(ws[i - 1].text):
        before = ws[i - 1].folded
        return before not in HONORIFICS and before not in TITLES
    return False
