"""Contradictions between statements that say nearly the same thing, whatever their subjects
(docs/decisions/0052-similar-statements.md; issue 31).

Pure, no database. The facet rules compare a claim with other items' claims filed under the
same subject entity (``contradict``) and with its repeats (``changed``). Two sources often
state one finding in sentences that share no entity the entities stage found, or that name
none ("ALDH1 expression is associated with poorer prognosis" against an abstract's "high
ALDH1 expression was not associated with survival"), so their claims never met. Here:

* **Statement claims** (``statement_claims``): a sentence that has no claim yet, reads as a
  statement, asserts (``Facets.assertive``) and carries a cue the rules compare (a negation
  or a direction) becomes a claim whose subject is ``~s:<digest of its words>``
  (``STATEMENT_SUBJECT_PREFIX``). The facet rules' subject index skips such subjects; two
  items that write the identical sentence share it.
* **Candidates** come from an index, never from all pairs of the workspace: the stage looks
  up ``lookup_terms`` (the longest words of the item's comparable claims: long words are
  rare ones) in the workspace's full-text index of items (``TextSearch.items_sharing_terms``:
  one indexed lookup per word, each stopped at a bound, items scored by the rarity of the
  words they share) and reads the claims of the ``SIMILAR_ITEMS`` best.
* **Comparison** (``similar_contradictions``): each of the item's assertive claims against
  each of those by the rules that need no shared subject (``contradict.compare_statements``:
  polarity, then direction, both only between statements that share most of their content
  words, ``contradict.MIN_OVERLAP``). Guards, precision first: a pair the subject index
  compares already (one subject group) is left to it; two claims about different named
  subjects are compared only when each sentence names both ("Aspirin raises the risk of
  bleeding in older patients" / "Warfarin lowers the risk of bleeding in older patients" are
  not); a pair already recorded by another rule is not recorded again.

A pair's subject is read from its two claims in a fixed order (their items, then offsets), so
whichever item is processed second records the same identity: the entity of the first side
that has one, else the first side's statement subject. Polarity and direction conflicts are
one disagreement per pair (``domain.disagreements``), so this changes no grouping.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Final

from relata.claims.contradict import Contradiction, compare_statements
from relata.claims.extract import ChunkSpan, ClaimDraft, Subject, claim_from_sentence
from relata.claims.facets import Facets, extract_facets
from relata.claims.repeats import REPEAT_SUBJECT_PREFIX
from relata.claims.sentences import split_sentences
from relata.claims.words import STOP_WORDS, content_terms

#: The subject of a claim that is only a statement (it names no entity and repeats no value).
STATEMENT_SUBJECT_PREFIX: Final = "~s:"
#: Prefixes of subjects that are no entity: never compared in the subject index.
NOT_ENTITY_PREFIXES: Final = (REPEAT_SUBJECT_PREFIX, STATEMENT_SUBJECT_PREFIX)
#: Words of the item's comparable claims looked up in the full-text index, at most.
LOOKUP_TERMS: Final = 24
#: Items whose claims are compared, at most (those sharing most of the rarest words).
SIMILAR_ITEMS: Final = 20
#: Statement claims one item makes, at most (a bound on what one item writes).
MAX_STATEMENTS: Final = 2_000
#: A display name of a statement subject is cut to this many characters.
LABEL_CHARS: Final = 80

_WORD: Final = re.compile(r"[^\W_]+")


def is_entity_subject(key: str) -> bool:
    return not key.startswith(NOT_ENTITY_PREFIXES)


def comparable(facets: Facets) -> bool:
    """A sentence the subject-free rules can set against another: it asserts and carries a
    negation or a direction (``compare_statements`` needs one of them on one side)."""
    return facets.assertive and bool(facets.negations or facets.directions)


def statement_subject(statement: str) -> str:
    """``~s:`` and a digest of the statement's words (case and punctuation aside)."""
    words = " ".join(w.casefold() for w in _WORD.findall(statement))
    return STATEMENT_SUBJECT_PREFIX + hashlib.sha256(words.encode()).hexdigest()[:40]


def statement_label(statement: str, limit: int = LABEL_CHARS) -> str:
    """A statement as a short display name."""
    text = " ".join(statement.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    return (cut.rsplit(" ", 1)[0] if " " in cut else cut).rstrip(" ,;:") + "…"


def statement_claims(
    item_id: str,
    text: str,
    taken: Collection[tuple[int, int]],
    chunks: Sequence[ChunkSpan] = (),
) -> list[ClaimDraft]:
    """A claim for each sentence of ``text`` not in ``taken`` (the spans that have a claim
    already) that the subject-free rules can compare (``comparable``)."""
    out: list[ClaimDraft] = []
    for sentence in split_sentences(text):
        if len(out) >= MAX_STATEMENTS:
            break
        if (sentence.start, sentence.end) in taken:
            continue
        facets = extract_facets(sentence.text)
        if not comparable(facets):
            continue
        statement = " ".join(sentence.text.split())
        subject = Subject(
            statement_label(statement), statement_subject(statement), sentence.start, sentence.start
        )
        draft = claim_from_sentence(
            item_id, sentence, subject, facets=facets, chunk_id=_chunk_id(sentence.start, chunks)
        )
        if draft is not None:
            out.append(draft)
    return out


def _chunk_id(start: int, chunks: Sequence[ChunkSpan]) -> str | None:
    for c in chunks:
        if c.base_offset <= start < c.base_offset + len(c.text):
            return c.chunk_id
    return None


def lookup_terms(drafts: Iterable[ClaimDraft], n: int = LOOKUP_TERMS) -> list[str]:
    """The words to look up for the item's comparable claims: distinct words (case aside)
    of four letters or more, or mixing letters and digits ("p53"), not stop words or the
    cue words themselves ("increases" says how, not what about), the longest first (a long
    word is a rare one; the index weighs them by the workspace's own rarity afterwards),
    equal lengths in order of appearance."""
    seen: dict[str, None] = {}
    for d in drafts:
        f = d.facets
        if not comparable(f):
            continue
        cues = {w.lower() for c in (*f.negations, *f.directions) for w in c.text.split()}
        for m in _WORD.finditer(d.quotation):
            w = m.group(0).lower()
            letters = sum(c.isalpha() for c in w)
            if w in STOP_WORDS or w in cues or not (letters >= 4 or (0 < letters < len(w))):
                continue
            seen.setdefault(w, None)
    return sorted(seen, key=len, reverse=True)[:n]


def _named_in(name_of: ClaimDraft, other: ClaimDraft) -> bool:
    """The other claim's sentence names this claim's subject (all of its content words)."""
    words = content_terms(name_of.subject.name)
    return bool(words) and words <= other.facets.terms


def _pair_verdict(a: ClaimDraft, b: ClaimDraft, canonical: Mapping[str, str]) -> bool:
    """Whether the pair is for this path: not one the subject index compares (both about
    one entity group), and not two claims about different named subjects unless each
    sentence names both ("Warfarin, unlike aspirin, lowers the risk" says nothing against
    "Aspirin raises the risk")."""
    ka, kb = a.subject.key, b.subject.key
    if not (is_entity_subject(ka) and is_entity_subject(kb)):
        return True
    if canonical.get(ka, ka) == canonical.get(kb, kb):
        return False  # the subject index compared them, with every rule
    return _named_in(a, b) and _named_in(b, a)


def pair_subject(a: ClaimDraft, b: ClaimDraft) -> tuple[str, str]:
    """The subject key and display name a pair is recorded under: of its sides in a fixed
    order (item, then offset), the first entity subject, else the first side's statement."""
    first, second = sorted((a, b), key=lambda d: (d.item_id, d.start))
    for d in (first, second):
        if is_entity_subject(d.subject.key):
            return d.subject.key, d.subject.name
    if first.subject.key.startswith(STATEMENT_SUBJECT_PREFIX):
        return first.subject.key, first.subject.name
    return statement_subject(first.statement), statement_label(first.statement)


def _cued(f: Facets) -> bool:
    return bool(f.negations or f.directions)


def similar_contradictions(
    mine: Sequence[ClaimDraft],
    theirs: Sequence[ClaimDraft],
    canonical: Mapping[str, str],
    known: Iterable[frozenset[str]] = (),
) -> list[tuple[str, str, Contradiction]]:
    """The subject-free rules' contradictions between the item's claims and other items'
    (as ``(subject, subject_name, contradiction)``), one per pair of claims, leaving out
    pairs in ``known`` (their dedupe keys: recorded by another rule already)."""
    seen = set(known)
    own = [d for d in mine if d.facets.assertive]
    other = [d for d in theirs if d.facets.assertive]
    out: list[tuple[str, str, Contradiction]] = []
    for a in own:
        for b in other:
            if a.item_id == b.item_id:
                continue
            fa, fb = a.facets, b.facets
            if not (_cued(fa) or _cued(fb)) or len(fa.terms & fb.terms) < 2:
                continue  # cheap tests first: no rule could flag the pair
            pair = frozenset({a.dedupe_key, b.dedupe_key})
            if pair in seen or not _pair_verdict(a, b, canonical):
                continue
            c = compare_statements(a, b)
            if c is None:
                continue
            seen.add(pair)
            subject, name = pair_subject(a, b)
            out.append((subject, name, c))
    return out
