"""A generated answer checked sentence by sentence against the excerpts each sentence cites.

``SentenceChecker.check`` (docs/decisions/0018-answer-sentence-checks.md):

1. The answer's inline citation markers (``[S1]``, found by ``relata.analysis.answer``) are
   blanked to spaces of the same length, so offsets stay those of the answer, and the text is
   split into sentences (``relata.claims.sentences``). A marker belongs to the sentence it is
   in, else to the sentence before it ("... in 2019. [S1]"); the sentence's span then runs to
   the end of its last marker.
2. A sentence cites the supplied refs of its markers. With no marker in the whole answer, a
   one-sentence answer, or an answer whose reply cited one source only, has the reply's
   ``citations`` for every sentence; otherwise a sentence without a marker is ``uncited``.
3. The names in the answer are found once with the entity extractor (the same one the
   entities stage runs), and each cited sentence is judged by
   ``relata.claims.support.check_support``: ``supported`` with the span of the supporting
   sentence (offsets into its excerpt), or ``unsupported`` naming the facet.

Pure: no I/O beyond the extractor's model, nothing logged.
"""

from __future__ import annotations

import bisect
import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Protocol

from relata.claims.sentences import Sentence, split_sentences
from relata.claims.support import (
    Name,
    ReadExcerpt,
    Support,
    SupportFacet,
    check_support,
    read_excerpt,
)
from relata.domain.errors import ValidationError
from relata.entities.mentions import ChunkText, EntityExtractor, Mention

#: ``ANSWER_TASK.max_output_bytes`` bounds a reply; an answer is at most this long.
MAX_ANSWER_CHARS: Final = 40_000


class SentenceVerdict(enum.StrEnum):
    SUPPORTED = "supported"
    UNSUPPORTED = "unsupported"
    UNCITED = "uncited"


class CitationMarkerLike(Protocol):
    """An inline marker: ``answer[start:end]`` names ``refs`` (``analysis.answer``'s
    ``CitationMarker`` is one)."""

    @property
    def start(self) -> int: ...

    @property
    def end(self) -> int: ...

    @property
    def refs(self) -> tuple[str, ...]: ...


@dataclass(frozen=True, slots=True)
class Evidence:
    """A supplied excerpt, under the ref the model saw it by."""

    ref: str
    text: str
    title: str = ""


@dataclass(frozen=True, slots=True)
class EvidenceSpan:
    """A sentence of a cited excerpt: ``excerpt[start:end] == text``."""

    ref: str
    start: int
    end: int
    text: str


@dataclass(frozen=True, slots=True)
class SentenceCheck:
    """One sentence of the answer, ``answer[start:end] == text`` (its markers included).

    ``supported``: ``span`` is the cited sentence that supports it. ``unsupported``:
    ``facet`` names what lacks support, ``claimed`` (answer offsets) the words, ``reason``
    why, and ``span`` the cited sentence that says otherwise or comes closest (or None).
    ``uncited``: no citation, nothing else."""

    start: int
    end: int
    text: str
    citations: tuple[str, ...]
    verdict: SentenceVerdict
    facet: SupportFacet | None = None
    claimed: tuple[int, int] | None = None
    reason: str | None = None
    span: EvidenceSpan | None = None


class SentenceChecker:
    """Checks answers with ``extractor`` for names (see the module docstring)."""

    def __init__(self, extractor: EntityExtractor) -> None:
        self._extractor = extractor

    def check(
        self,
        answer: str,
        markers: Sequence[CitationMarkerLike],
        evidence: Mapping[str, Evidence],
        fallback: Sequence[str] = (),
    ) -> tuple[SentenceCheck, ...]:
        """Every sentence of ``answer`` with its verdict; ``evidence`` holds every ref a
        marker or ``fallback`` (the reply's citations) may name."""
        if len(answer) > MAX_ANSWER_CHARS:
            raise ValidationError(
                f"an answer to check has at most {MAX_ANSWER_CHARS} characters, not {len(answer)}",
                field="answer",
            )
        blanked = _blank(answer, markers)
        sentences = split_sentences(blanked)
        refs = _refs_by_sentence(sentences, markers, fallback)
        names = self._names(blanked) if any(refs) else ()
        read: dict[str, ReadExcerpt] = {}
        checks: list[SentenceCheck] = []
        for sentence, cited, end in zip(sentences, refs, _ends(sentences, markers), strict=True):
            text = answer[sentence.start : end]
            if not cited:
                checks.append(SentenceCheck(sentence.start, end, text, (), SentenceVerdict.UNCITED))
                continue
            excerpts = [_read(read, evidence, r) for r in cited]
            in_sentence = [
                Name(m.start - sentence.start, m.end - sentence.start, m.quotation)
                for m in names
                if sentence.start <= m.start and m.end <= sentence.end
            ]
            support = check_support(sentence.text, in_sentence, excerpts)
            checks.append(_check(sentence, end, text, cited, support))
        return tuple(checks)

    def _names(self, text: str) -> tuple[Mention, ...]:
        return self._extractor.extract([ChunkText("answer", text)]).mentions


def _blank(answer: str, markers: Sequence[CitationMarkerLike]) -> str:
    chars = list(answer)
    for m in markers:
        chars[m.start : m.end] = " " * (m.end - m.start)
    return "".join(chars)


def _owner(sentences: Sequence[Sentence], at: int) -> int:
    """The sentence a marker at offset ``at`` belongs to: the one it is in, else the one
    before it, else the first."""
    starts = [s.start for s in sentences]
    return max(bisect.bisect_right(starts, at) - 1, 0)


def _refs_by_sentence(
    sentences: Sequence[Sentence], markers: Sequence[CitationMarkerLike], fallback: Sequence[str]
) -> list[tuple[str, ...]]:
    if not markers:
        whole = tuple(dict.fromkeys(fallback))
        if len(sentences) == 1 or len(whole) == 1:
            return [whole for _ in sentences]
        return [() for _ in sentences]
    refs: list[dict[str, None]] = [{} for _ in sentences]
    for m in markers:
        if sentences:
            refs[_owner(sentences, m.start)].update(dict.fromkeys(m.refs))
    return [tuple(r) for r in refs]


def _ends(sentences: Sequence[Sentence], markers: Sequence[CitationMarkerLike]) -> list[int]:
    """Each sentence's end, stretched over the markers that follow it."""
    ends = [s.end for s in sentences]
    for m in markers:
        if sentences:
            i = _owner(sentences, m.start)
            ends[i] = max(ends[i], m.end)
    return ends


def _read(cache: dict[str, ReadExcerpt], evidence: Mapping[str, Evidence], ref: str) -> ReadExcerpt:
    if ref not in cache:
        e = evidence.get(ref)
        if e is None:
            raise ValidationError(f"no excerpt was supplied under ref {ref!r}", field="ref")
        cache[ref] = read_excerpt(e.ref, e.text, e.title)
    return cache[ref]


def _check(
    sentence: Sentence, end: int, text: str, cited: tuple[str, ...], support: Support
) -> SentenceCheck:
    span = support.span
    evidence = EvidenceSpan(span.ref, span.start, span.end, span.text) if span else None
    if support.facet is None:
        return SentenceCheck(
            sentence.start, end, text, cited, SentenceVerdict.SUPPORTED, span=evidence
        )
    claimed = support.claimed
    return SentenceCheck(
        sentence.start,
        end,
        text,
        cited,
        SentenceVerdict.UNSUPPORTED,
        facet=support.facet,
        claimed=(sentence.start + claimed[0], sentence.start + claimed[1]) if claimed else None,
        reason=support.reason,
        span=evidence,
    )


def counts(checks: Sequence[SentenceCheck]) -> dict[SentenceVerdict, int]:
    """How many sentences got each verdict (every verdict present, zero or more)."""
    out = dict.fromkeys(SentenceVerdict, 0)
    for c in checks:
        out[c.verdict] += 1
    return out
