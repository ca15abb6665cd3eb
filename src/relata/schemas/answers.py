"""The answer response (``POST /api/v1/answers``, ``relata ask --json``): a cited answer with
its sentence checks, or ``unavailable`` with a reason, and always the retrieved sources."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from relata.claims.support import SupportFacet
from relata.schemas.claims import ContradictionOut, contradiction_out
from relata.search.answers import Answer, Source
from relata.search.sentence_checks import SentenceCheck, SentenceVerdict, counts


class CitationOut(BaseModel):
    """A source the answer relies on; ``ref`` is one of the ``sources`` refs."""

    ref: str = Field(description="The source's reference, e.g. `S1`.")
    item_id: str
    chunk_id: str
    title: str
    excerpt: str = Field(description="The excerpt the model read, exactly as in `sources`.")


class SourceOut(CitationOut):
    """A retrieved excerpt, in rank order, as supplied to the model under ``ref``."""

    score: float = Field(description="The item's fused search score.")
    superseded: str | None = Field(
        default=None,
        description="Set when a newer dated source supersedes what this one states (a "
        "supersession in the ledger): says so and quotes the newer statement, which search "
        "ranks first.",
    )


class AnswerSpanOut(BaseModel):
    """Words of the answer: ``answer[start:end] == text``."""

    start: int
    end: int
    text: str


class ExcerptSpanOut(BaseModel):
    """A sentence of a cited source's excerpt: ``excerpt[start:end] == text``."""

    ref: str = Field(description="The cited source's `ref`; the offsets are into its `excerpt`.")
    start: int
    end: int
    text: str


class SentenceCheckOut(BaseModel):
    """One sentence of the answer, checked against the excerpts it cites."""

    start: int = Field(description="Offset of the sentence in `answer` (its markers included).")
    end: int
    text: str = Field(description="`answer[start:end]`.")
    citations: list[str] = Field(
        description="The refs the sentence cites: its `[S1]` markers, or the answer's "
        "citations when it has no markers and is the only sentence or cites one source."
    )
    verdict: SentenceVerdict = Field(
        description="`supported`: the cited excerpts state every date, number, name and the "
        "polarity of the sentence; `unsupported`: one of them is not stated (see `facet`); "
        "`uncited`: the sentence cites nothing."
    )
    facet: SupportFacet | None = Field(
        description="What lacks support when `unsupported` (`date`, `quantity`, `number`, "
        "`entity`, `content`, `polarity`, `direction`); else null."
    )
    reason: str | None = Field(description="A sentence for people when `unsupported`.")
    claimed: AnswerSpanOut | None = Field(
        description="The words of the sentence that lack support, when known."
    )
    span: ExcerptSpanOut | None = Field(
        description="`supported`: the sentence of a cited excerpt that supports it. "
        "`unsupported`: the cited sentence that says otherwise or comes closest (or null)."
    )


class AnswerChecksOut(BaseModel):
    """Every sentence of the answer with its verdict, and how many got each."""

    sentences: list[SentenceCheckOut]
    supported: int
    unsupported: int
    uncited: int


class AnswerOut(BaseModel):
    """A cited answer, or ``unavailable`` with a reason; the sources are always returned."""

    question: str = Field(description="The question as answered (trimmed).")
    status: Literal["ok", "unavailable"]
    answer: str | None = Field(description="The answer when `status` is `ok`, else null.")
    reason: str | None = Field(
        description="Why the answer is unavailable: `analysis_disabled`, `no_sources`, "
        "`insufficient_evidence`, or why the model's reply was rejected (`degenerate_content`, "
        "`no_valid_citations`, `not_json`, `schema_violation`, ...). Null when `ok`."
    )
    message: str | None = Field(description="A sentence for people explaining `reason`.")
    support: Literal["supported", "unsupported", "uncited"] | None = Field(
        description="When `ok`: `unsupported` if any sentence is, else `uncited` if any "
        "sentence cites nothing, else `supported` (see `checks`). Null when unavailable."
    )
    checks: AnswerChecksOut | None = Field(
        description="The answer checked sentence by sentence against the excerpts each "
        "sentence cites; null when unavailable."
    )
    citations: list[CitationOut] = Field(
        description="The sources the answer cites; only refs that were supplied resolve."
    )
    dropped_citations: int = Field(
        description="Citations naming no supplied source (fabricated); dropped, never shown."
    )
    sources: list[SourceOut] = Field(description="Every retrieved excerpt, in rank order.")
    contradictions: list[ContradictionOut] = Field(
        default_factory=list,
        description="Contradictions recorded between the sources, each with both quotations "
        "(deterministic: returned with or without a model).",
    )


def to_out(ans: Answer) -> AnswerOut:
    return AnswerOut(
        question=ans.question,
        status=ans.status,
        answer=ans.answer,
        reason=ans.reason,
        message=ans.message,
        support=ans.support,
        checks=_checks_out(ans) if ans.status == "ok" else None,
        citations=[
            CitationOut(
                ref=s.ref, item_id=s.item_id, chunk_id=s.chunk_id, title=s.title, excerpt=s.excerpt
            )
            for s in ans.citations
        ],
        dropped_citations=ans.dropped_citations,
        sources=[source_out(s) for s in ans.sources],
        contradictions=[contradiction_out(x) for x in ans.contradictions],
    )


def source_out(s: Source) -> SourceOut:
    return SourceOut(
        ref=s.ref,
        item_id=s.item_id,
        chunk_id=s.chunk_id,
        title=s.title,
        excerpt=s.excerpt,
        score=s.score,
        superseded=s.superseded,
    )


def _checks_out(ans: Answer) -> AnswerChecksOut:
    n = counts(ans.checks)
    return AnswerChecksOut(
        sentences=[_sentence_out(c) for c in ans.checks],
        supported=n[SentenceVerdict.SUPPORTED],
        unsupported=n[SentenceVerdict.UNSUPPORTED],
        uncited=n[SentenceVerdict.UNCITED],
    )


def _sentence_out(c: SentenceCheck) -> SentenceCheckOut:
    claimed = None
    if c.claimed is not None:
        start, end = c.claimed  # answer offsets, inside the sentence
        claimed = AnswerSpanOut(start=start, end=end, text=c.text[start - c.start : end - c.start])
    span = (
        ExcerptSpanOut(ref=c.span.ref, start=c.span.start, end=c.span.end, text=c.span.text)
        if c.span is not None
        else None
    )
    return SentenceCheckOut(
        start=c.start,
        end=c.end,
        text=c.text,
        citations=list(c.citations),
        verdict=c.verdict,
        facet=c.facet,
        reason=c.reason,
        claimed=claimed,
        span=span,
    )
