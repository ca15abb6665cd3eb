"""Cited answers: retrieve with search, ask the model about what was retrieved, resolve citations.

``AnswerService.answer`` is the use case behind ``POST /api/v1/answers`` and ``relata ask``
(docs/decisions/0012-cited-answers.md):

1. The question is searched with the hybrid search service (``limit`` results, 1-20, default 5).
   Each result's best excerpt is taken first, then the second-best ones while room remains, up
   to ``limit`` sources in all. Each source gets a short stable reference, ``S1``, ``S2``, ...
   in rank order, mapped to its item and chunk. The excerpt the model reads is exactly the
   excerpt the response shows.
2. No source passed search's relevance floor, or no model (``AnalysisDisabled``): the result
   is ``unavailable`` (``no_sources``, "nothing matched", checked first: ADR 40;
   ``analysis_disabled``) and the model is not called.
3. Otherwise ``AnalysisService.answer`` builds the prompt (instructions only in the system
   message; every excerpt in a block bounded by a per-request random token the content cannot
   forge), calls the model and judges the reply: citations are resolved against the supplied
   references, fabricated ones dropped and counted, and an invalid or degenerate reply becomes
   ``unavailable`` with its reason. Either way the sources are returned.
3a. An ``ok`` answer is checked sentence by sentence (``sentence_checks``; docs/decisions/
   0018-answer-sentence-checks.md): each sentence against the excerpts its inline markers
   cite, ``supported`` (with the supporting sentence's offsets in its excerpt),
   ``unsupported`` (naming the facet) or ``uncited``. ``status`` stays ``ok`` (there is an
   answer to show); ``Answer.support`` says whether every sentence held, and the verdicts
   are counted on ``relata_answer_sentences_total{verdict,facet}``.
4. Only a transport failure fails the request, as one of the two errors the analysis layer
   maps provider failures to (``relata.analysis.failures``): ``ModelProviderFailed`` (502)
   or ``ModelProviderUnavailable`` (503).

5. ``AnswerService.stream`` is the same use case as events (docs/decisions/
   0042-streaming-answers.md): ``SourcesRetrieved``, then ``TextWritten`` pieces of the
   answer as the model writes them (citation markers held back, so no citation is shown
   before it is resolved), then ``Answered`` with the very ``Answer`` of step 3/3a.

Logs carry counts, status and reason only: never the question, an excerpt, the prompt or the
answer.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Final, Literal

from relata.analysis.answer import AnswerResult
from relata.analysis.answer_stream import MarkerHold
from relata.analysis.errors import AnalysisDisabled
from relata.analysis.service import AnalysisService
from relata.domain.cancel import Cancel
from relata.domain.errors import ValidationError
from relata.domain.models import Contradiction
from relata.domain.ports import ContradictionRepository
from relata.entities.deterministic import DeterministicExtractor
from relata.observability.metrics import Metrics
from relata.search.sentence_checks import (
    Evidence,
    SentenceCheck,
    SentenceChecker,
    SentenceVerdict,
    counts,
)
from relata.search.service import MAX_QUERY_CHARS, SearchQuery, SearchResult, SearchService

log = logging.getLogger(__name__)

DEFAULT_LIMIT: Final = 5
MAX_LIMIT: Final = 20
# The question is also the search query, so it has the query's bound.
MAX_QUESTION_CHARS: Final = MAX_QUERY_CHARS

ANALYSIS_DISABLED: Final = "analysis_disabled"
NO_SOURCES: Final = "no_sources"
INSUFFICIENT_EVIDENCE: Final = "insufficient_evidence"

_MESSAGES: Final[dict[str, str]] = {
    NO_SOURCES: "nothing matched: no source in this workspace matches the question (no word or "
    "name of it occurs, and nothing is close to it in meaning), so there is nothing to answer "
    "from",
    INSUFFICIENT_EVIDENCE: "the model judged the retrieved sources insufficient to answer the "
    "question",
    "degenerate_content": "the model returned an empty or placeholder answer, which is not shown",
    "no_valid_citations": "the model's answer cited none of the supplied sources, so it is not "
    "shown",
}


@dataclass(frozen=True, slots=True)
class Source:
    """One retrieved excerpt as supplied to the model under ``ref``."""

    ref: str
    item_id: str
    chunk_id: str
    title: str
    excerpt: str
    score: float  # the item's fused search score
    #: Search's note when the source states something a newer dated source supersedes
    #: (docs/decisions/0038), else None.
    superseded: str | None = None


@dataclass(frozen=True, slots=True)
class Answer:
    """``ok``: ``answer`` with ``citations`` (a subset of ``sources``). ``unavailable``:
    ``answer`` is None and ``reason`` / ``message`` say why. ``sources`` are always there."""

    question: str
    status: Literal["ok", "unavailable"]
    answer: str | None
    reason: str | None
    message: str | None
    citations: tuple[Source, ...]
    dropped_citations: int
    sources: tuple[Source, ...]
    #: Recorded between the sources (deterministic: with or without a model).
    contradictions: tuple[Contradiction, ...] = ()
    #: ``ok`` only: every sentence of ``answer`` with its verdict, in order.
    checks: tuple[SentenceCheck, ...] = ()

    @property
    def support(self) -> Literal["supported", "unsupported", "uncited"] | None:
        """``unsupported`` when any sentence is, else ``uncited`` when any sentence cites
        nothing, else ``supported``; None when there is no answer."""
        if self.status != "ok":
            return None
        verdicts = {c.verdict for c in self.checks}
        if SentenceVerdict.UNSUPPORTED in verdicts:
            return "unsupported"
        return "uncited" if SentenceVerdict.UNCITED in verdicts else "supported"


@dataclass(frozen=True, slots=True)
class SourcesRetrieved:
    """A streamed answer's first event: what was retrieved (``Answer.sources``)."""

    sources: tuple[Source, ...]


@dataclass(frozen=True, slots=True)
class TextWritten:
    """More of the answer's text, not yet checked, its citation markers held back."""

    text: str


@dataclass(frozen=True, slots=True)
class Answered:
    """A streamed answer's last event: the answer, judged and checked."""

    answer: Answer


AnswerEvent = SourcesRetrieved | TextWritten | Answered


class AnswerService:
    def __init__(
        self,
        search: SearchService,
        analysis: AnalysisService,
        contradictions: ContradictionRepository | None = None,
        *,
        checker: SentenceChecker | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        self._search = search
        self._analysis = analysis
        self._contradictions = contradictions
        # The extractor the entities stage runs: spaCy loads on the first checked answer.
        self._checker = checker or SentenceChecker(DeterministicExtractor())
        self._metrics = metrics

    def answer(
        self,
        workspace_id: str,
        question: str,
        *,
        limit: int = DEFAULT_LIMIT,
        cancel: Cancel | None = None,
    ) -> Answer:
        """Answer ``question`` from the workspace's sources (see the module docstring)."""
        q = check_question(question)
        check_limit(limit)
        cancel = cancel or Cancel.never()
        start = time.monotonic()
        sources = self.retrieve(workspace_id, q, limit, cancel)
        return self._finish(workspace_id, self._answer(q, sources, cancel), start)

    def stream(
        self,
        workspace_id: str,
        question: str,
        *,
        limit: int = DEFAULT_LIMIT,
        cancel: Cancel | None = None,
    ) -> Iterator[AnswerEvent]:
        """``answer`` as events (docs/decisions/0042-streaming-answers.md): ``SourcesRetrieved``
        first, then ``TextWritten`` pieces of the answer as the model writes them (citation
        markers held back), then ``Answered`` with the same ``Answer`` that ``answer`` returns.
        Without a streaming model the whole checked answer is one ``TextWritten``; with no
        answer there is none. Raises like ``answer`` (the caller turns that into its error
        event); closing the iterator stops the model."""
        q = check_question(question)
        check_limit(limit)
        cancel = cancel or Cancel.never()
        start = time.monotonic()
        sources = self.retrieve(workspace_id, q, limit, cancel)
        yield SourcesRetrieved(sources)
        if not (sources and self._analysis.enabled and self._analysis.streams):
            result = self._answer(q, sources, cancel)
            if result.answer is not None:
                yield TextWritten(strip_markers(result.answer, [s.ref for s in sources]))
            yield Answered(self._finish(workspace_id, result, start))
            return
        judged: AnswerResult | None = None
        try:
            excerpts = [(s.ref, s.title, s.excerpt) for s in sources]
            for piece in self._analysis.stream_answer(q, excerpts, cancel):
                if isinstance(piece, str):
                    yield TextWritten(piece)
                else:
                    judged = piece
        except AnalysisDisabled as exc:
            result = _unavailable(q, sources, ANALYSIS_DISABLED, exc.message)
        else:
            if judged is None:  # pragma: no cover - stream_answer always ends with one
                raise RuntimeError("the answer stream ended without a judged result")
            result = self._resolve(q, sources, judged)
        yield Answered(self._finish(workspace_id, result, start))

    def _finish(self, workspace_id: str, result: Answer, start: float) -> Answer:
        """Count the verdicts, add the contradictions between the sources, log the outcome."""
        sources = result.sources
        self._count(result.checks)
        if self._contradictions is not None and sources:
            between = self._contradictions.between_items(workspace_id, [s.item_id for s in sources])
            result = replace(result, contradictions=tuple(between))
        log.info(
            "answer finished",
            extra={
                "fields": {
                    "workspace_id": workspace_id,
                    "sources": len(sources),
                    "status": result.status,
                    "reason": result.reason,
                    "citations": len(result.citations),
                    "dropped_citations": result.dropped_citations,
                    "contradictions": len(result.contradictions),
                    **{f"sentences_{v.value}": n for v, n in counts(result.checks).items()},
                    "elapsed_ms": round((time.monotonic() - start) * 1000, 1),
                }
            },
        )
        return result

    def retrieve(
        self, workspace_id: str, question: str, limit: int, cancel: Cancel
    ) -> tuple[Source, ...]:
        """Up to ``limit`` excerpts of the top ``limit`` results, numbered ``S1..`` by rank."""
        query = SearchQuery(text=question, limit=limit)
        response = self._search.search(workspace_id, query, cancel)
        return select_sources(response.results, limit)

    def _answer(self, question: str, sources: tuple[Source, ...], cancel: Cancel) -> Answer:
        # Sources pass search's relevance floor (ADR 40): with none, there is nothing to
        # answer from, with or without a model, and the model is never asked.
        if not sources:
            return _unavailable(question, sources, NO_SOURCES)
        if not self._analysis.enabled:
            reason = self._analysis.disabled_reason
            return _unavailable(question, sources, ANALYSIS_DISABLED, reason)
        try:
            result = self._analysis.answer(
                question, [(s.ref, s.title, s.excerpt) for s in sources], cancel
            )
        except AnalysisDisabled as exc:
            return _unavailable(question, sources, ANALYSIS_DISABLED, exc.message)
        return self._resolve(question, sources, result)

    def _resolve(self, question: str, sources: tuple[Source, ...], result: AnswerResult) -> Answer:
        """The model's judged reply as an ``Answer``: its citations mapped to the sources and
        every sentence checked."""
        if result.status != "ok":
            reason = result.reason or INSUFFICIENT_EVIDENCE
            return _unavailable(
                question, sources, reason, dropped_citations=result.dropped_citations
            )
        by_ref = {s.ref: s for s in sources}
        text = result.answer or ""
        evidence = {s.ref: Evidence(s.ref, s.excerpt, s.title) for s in sources}
        return Answer(
            question=question,
            status="ok",
            answer=result.answer,
            reason=None,
            message=None,
            citations=tuple(by_ref[r] for r in result.citations),
            dropped_citations=result.dropped_citations,
            sources=sources,
            checks=self._checker.check(text, result.markers, evidence, result.citations),
        )

    def _count(self, checks: Sequence[SentenceCheck]) -> None:
        if self._metrics is None:
            return
        for c in checks:
            facet = c.facet.value if c.facet is not None else "none"
            self._metrics.answer_sentences.labels(verdict=c.verdict.value, facet=facet).inc()


def strip_markers(answer: str, supplied_refs: Collection[str]) -> str:
    """``answer`` as a stream shows it: without its citation markers (``MarkerHold``)."""
    hold = MarkerHold(supplied_refs)
    return hold.feed(answer) + hold.flush()


def check_question(question: str) -> str:
    q = (question or "").strip()
    if not q:
        raise ValidationError("question must not be empty", field="question")
    if len(q) > MAX_QUESTION_CHARS:
        raise ValidationError(
            f"question must be at most {MAX_QUESTION_CHARS} characters", field="question"
        )
    return q


def check_limit(limit: int) -> None:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise ValidationError(f"limit must be between 1 and {MAX_LIMIT}", field="limit")


def select_sources(results: Sequence[SearchResult], limit: int) -> tuple[Source, ...]:
    """Every result's best excerpt first, then the next best ones, up to ``limit`` in all;
    returned in rank order (then excerpt order) and numbered ``S1``, ``S2``, ..."""
    picked: list[tuple[int, int, SearchResult]] = []
    seen: set[str] = set()
    depth = max((len(r.excerpts) for r in results), default=0)
    for level in range(depth):
        for r in results:
            if len(picked) >= limit:
                break
            if level < len(r.excerpts) and r.excerpts[level].chunk_id not in seen:
                seen.add(r.excerpts[level].chunk_id)
                picked.append((r.rank, level, r))
    picked.sort(key=lambda p: (p[0], p[1]))
    return tuple(
        Source(
            ref=f"S{n}",
            item_id=r.item.id,
            chunk_id=r.excerpts[level].chunk_id,
            title=r.item.title,
            excerpt=r.excerpts[level].text,
            score=r.score,
            superseded=next((x for x in r.explanation.notes if x.startswith("superseded:")), None),
        )
        for n, (_, level, r) in enumerate(picked, start=1)
    )


def _unavailable(
    question: str,
    sources: tuple[Source, ...],
    reason: str,
    message: str | None = None,
    *,
    dropped_citations: int = 0,
) -> Answer:
    default = f"the model's answer was rejected ({reason}) and is not shown"
    return Answer(
        question=question,
        status="unavailable",
        answer=None,
        reason=reason,
        message=message or _MESSAGES.get(reason, default),
        citations=(),
        dropped_citations=dropped_citations,
        sources=sources,
    )
