"""Deterministic claim extraction: sentences about a subject become claims, no model.

For one item: its text is split into sentences (``sentences``); a sentence that names at
least one subject (an entity mention the entities stage found, given here as
``SubjectMention``s with item offsets) and reads as a statement becomes one claim:

* **subject**: the mention that is the grammatical subject of the sentence's predicate when
  the text shows it (the nearest mention before the event or head verb, skipping a mention
  inside an appositive: in "the Sabrewing Array, its project in the Halloran Sound, has
  entered ..." the subject is the Array), else the first mention of the sentence;
* a statement ends with ``.``, ``!`` or ``?``, names an event, or is an unpunctuated line
  in sentence case of five words or more (not a heading or a title);
* **quotation**: the exact sentence, ``text[start:end] == quotation``;
* **statement**: the quotation with its white space collapsed;
* **nature** (``ClaimNature``): opinion when hedged or attributed ("may", "suggests",
  "said"), else event when it names an event predicate, quantity when it carries a number
  with a unit, finding when it reports a result or a direction, else fact;
* **facets** (``facets.extract_facets``), offsets relative to the quotation;
* **confidence**: 0.4, +0.3 when the subject is attached to the predicate, +0.2 when the
  sentence carries a comparable facet (a date, a quantity, an event), at most 0.9.

Claims with the same dedupe key (item, subject, statement) are kept once.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Protocol

from relata.claims.facets import (
    FACETS_VERSION,
    Facets,
    Predicate,
    event_predicate,
    extract_facets,
)
from relata.claims.sentences import Sentence, split_sentences
from relata.claims.words import tokens, word_set
from relata.domain.errors import ValidationError
from relata.domain.vocabulary import ClaimNature
from relata.ids import dedupe_key

RULES_VERSION: Final = "1"
EXTRACTOR: Final = "deterministic"
EXTRACTOR_VERSION: Final = f"claims-{RULES_VERSION}+facets-{FACETS_VERSION}"
MIN_STATEMENT_CHARS: Final = 10
MAX_SENTENCE_CHARS: Final = 1_000
MAX_MENTIONS: Final = 200_000
MAX_CLAIMS: Final = 20_000


class SubjectMention(Protocol):
    """A place where the item names an entity (``relata.entities.mentions.Mention`` is
    one): item offsets, display name and the key that identifies the entity."""

    @property
    def start(self) -> int: ...

    @property
    def end(self) -> int: ...

    @property
    def name(self) -> str: ...

    @property
    def normalised_key(self) -> str: ...


class ChunkSpan(Protocol):
    """A chunk of the item: its text starts at ``base_offset`` in the item."""

    @property
    def chunk_id(self) -> str: ...

    @property
    def base_offset(self) -> int: ...

    @property
    def text(self) -> str: ...


@dataclass(frozen=True, slots=True)
class Subject:
    """What a claim is about: the entity's display name and key, and where the claim's
    item names it (item offsets)."""

    name: str
    key: str
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class ClaimDraft:
    """A claim before it is stored. ``start``/``end`` are item offsets of the quotation;
    the facets' offsets are relative to the quotation (add ``start`` for item offsets)."""

    item_id: str
    subject: Subject
    statement: str
    nature: ClaimNature
    quotation: str
    start: int
    end: int
    confidence: float
    extractor: str
    extractor_version: str
    facets: Facets
    chunk_id: str | None = None
    #: The subject is the predicate's grammatical subject as the text shows it (not only
    #: the first name in the sentence): dates and quantities are compared only then.
    attached: bool = False

    @property
    def dedupe_key(self) -> str:
        """One claim per (item, subject, statement): a sentence repeated in an item, or
        met again on reprocessing, is the same claim."""
        return claim_dedupe_key(self.item_id, self.subject.key, self.statement)


def claim_dedupe_key(item_id: str, subject_key: str, statement: str) -> str:
    return dedupe_key("claim", item_id, subject_key, " ".join(statement.split()).casefold())


_HEDGES: Final = word_set(
    """
    may might could possibly probably perhaps likely unlikely suggest suggests suggested
    suggesting appear appears appeared seem seems seemed believe believes believed think
    thinks hypothesise hypothesised hypothesize hypothesized speculate speculated potentially
    presumably arguably said says should
    """
)
_HEDGE_PHRASES: Final = ("according to", "in our view", "we propose")
_FINDING: Final = word_set(
    """
    found find finds showed shown show shows demonstrate demonstrated demonstrates observed
    associated correlated correlate correlates significant significantly result results
    reported identified revealed confirmed measured detected predict predicts predictive
    """
)
_STATEMENT_END: Final = re.compile(r"[.!?][\"'\u201d\u2019)\]]*$")
_APPOSITIVE: Final = re.compile(r"^\s*,[^,]*,|^\s*\([^)]*\)")
_CONNECTOR: Final = word_set(
    """
    is are was were be been being has have had will would shall should can could may might
    must do does did not first also still now already recently then just only further
    reportedly currently later originally formally officially n't
    """
)


def nature_of(sentence: str, facets: Facets) -> ClaimNature:
    """The nature of a statement by the rules of the module docstring."""
    words = facets.words or frozenset(w.lower() for _, _, w in tokens(sentence))
    lower = sentence.lower()
    if (
        words & _HEDGES
        or any(p in lower for p in _HEDGE_PHRASES)
        or sentence.lstrip().startswith(('"', "\u201c"))
    ):
        return ClaimNature.OPINION
    if facets.predicate is not None and facets.predicate.event:
        return ClaimNature.EVENT
    if facets.quantities:
        return ClaimNature.QUANTITY
    if facets.directions or words & _FINDING:
        return ClaimNature.FINDING
    return ClaimNature.FACT


def _attached(sentence: Sentence, mention: SubjectMention, predicate: Predicate) -> int | None:
    """How many words stand between a mention and the predicate it is the subject of, or
    None when the text shows it is not its subject."""
    gap = sentence.text[mention.end - sentence.start : predicate.start]
    appositive = _APPOSITIVE.match(gap)
    if appositive is not None:
        gap = gap[appositive.end() :]
    if any(ch in gap for ch in ',;:()"\u201c\u201d'):
        return None
    words = gap.split()
    if len(words) > 4 or any(w.lower() not in _CONNECTOR for w in words):
        return None
    return len(words)


def _subject(
    sentence: Sentence, mentions: Sequence[SubjectMention]
) -> tuple[SubjectMention, Facets, bool]:
    event = event_predicate(sentence.text)
    if event is not None:
        before = [m for m in mentions if m.end - sentence.start <= event.start]
        scored = [(gap, m) for m in before if (gap := _attached(sentence, m, event)) is not None]
        if scored:
            chosen = min(scored, key=lambda pair: (pair[0], -pair[1].start))[1]
            facets = extract_facets(sentence.text, subject_end=chosen.end - sentence.start)
            return chosen, facets, True
    first = mentions[0]
    facets = extract_facets(sentence.text, subject_end=first.end - sentence.start)
    attached = facets.predicate is not None and not facets.predicate.event
    return first, facets, attached


def _reads_as_sentence(statement: str) -> bool:
    """An unpunctuated line that is still a sentence, not a heading or a title: at least
    five words, most of them lower case (a title capitalises its words)."""
    words = [w for w in statement.split() if w[0].isalpha()]
    return len(words) >= 5 and sum(w[0].islower() for w in words) * 2 > len(words)


def _chunk_of(start: int, end: int, chunks: Sequence[ChunkSpan]) -> str | None:
    containing = [c for c in chunks if c.base_offset <= start < c.base_offset + len(c.text)]
    whole = [c for c in containing if end <= c.base_offset + len(c.text)]
    chosen = whole or containing
    return chosen[0].chunk_id if chosen else None


def extract_claims(
    item_id: str,
    text: str,
    mentions: Sequence[SubjectMention],
    *,
    chunks: Sequence[ChunkSpan] = (),
) -> tuple[ClaimDraft, ...]:
    """The item's claims in text order (see the module docstring). ``mentions`` are the
    item's entity mentions in item offsets, in any order."""
    if len(mentions) > MAX_MENTIONS:
        raise ValidationError(
            f"an item has at most {MAX_MENTIONS} mentions to extract claims from, "
            f"not {len(mentions)}",
            field="mentions",
        )
    for m in mentions:
        if not (0 <= m.start < m.end <= len(text)):
            raise ValidationError(
                f"mention {m.name!r} at {m.start}..{m.end} is not within the item's text "
                f"({len(text)} characters)",
                field="mentions",
            )
    ordered = sorted(mentions, key=lambda m: (m.start, m.end))
    claims: dict[str, ClaimDraft] = {}
    cursor = 0
    for sentence in split_sentences(text):
        if len(claims) >= MAX_CLAIMS:
            break
        while cursor < len(ordered) and ordered[cursor].start < sentence.start:
            cursor += 1
        inside = []
        for m in ordered[cursor:]:
            if m.start >= sentence.end:
                break
            if m.end <= sentence.end:
                inside.append(m)
        draft = _claim(item_id, sentence, inside, chunks)
        if draft is not None:
            claims.setdefault(draft.dedupe_key, draft)
    return tuple(claims.values())


def _claim(
    item_id: str,
    sentence: Sentence,
    mentions: Sequence[SubjectMention],
    chunks: Sequence[ChunkSpan],
) -> ClaimDraft | None:
    if not mentions:
        return None
    mention, facets, attached = _subject(sentence, mentions)
    subject = Subject(mention.name, mention.normalised_key, mention.start, mention.end)
    return claim_from_sentence(
        item_id,
        sentence,
        subject,
        facets=facets,
        attached=attached,
        chunk_id=_chunk_of(sentence.start, sentence.end, chunks),
    )


def claim_from_sentence(
    item_id: str,
    sentence: Sentence,
    subject: Subject,
    *,
    facets: Facets | None = None,
    attached: bool = False,
    chunk_id: str | None = None,
) -> ClaimDraft | None:
    """The claim one sentence makes about ``subject``, or None when the sentence is no
    statement (too short or long, or neither ending as a sentence nor naming an event)."""
    statement = " ".join(sentence.text.split())
    if not (MIN_STATEMENT_CHARS <= len(statement) <= MAX_SENTENCE_CHARS):
        return None
    if facets is None:
        facets = extract_facets(sentence.text)
    is_event = facets.predicate is not None and facets.predicate.event
    if not (_STATEMENT_END.search(sentence.text) or is_event or _reads_as_sentence(statement)):
        return None
    comparable = bool(facets.dates or facets.quantities or is_event)
    confidence = min(0.9, 0.4 + (0.3 if attached else 0.0) + (0.2 if comparable else 0.0))
    return ClaimDraft(
        item_id=item_id,
        subject=subject,
        statement=statement,
        nature=nature_of(sentence.text, facets),
        quotation=sentence.text,
        start=sentence.start,
        end=sentence.end,
        confidence=round(confidence, 2),
        extractor=EXTRACTOR,
        extractor_version=EXTRACTOR_VERSION,
        facets=facets,
        chunk_id=chunk_id,
        attached=attached,
    )
