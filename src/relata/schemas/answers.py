"""The answer response (``POST /api/v1/answers``, ``relata ask --json``): a cited answer, or
``unavailable`` with a reason, and always the retrieved sources."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from relata.schemas.claims import ContradictionOut, contradiction_out
from relata.search.answers import Answer


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
        citations=[
            CitationOut(
                ref=s.ref, item_id=s.item_id, chunk_id=s.chunk_id, title=s.title, excerpt=s.excerpt
            )
            for s in ans.citations
        ],
        dropped_citations=ans.dropped_citations,
        sources=[
            SourceOut(
                ref=s.ref,
                item_id=s.item_id,
                chunk_id=s.chunk_id,
                title=s.title,
                excerpt=s.excerpt,
                score=s.score,
            )
            for s in ans.sources
        ],
        contradictions=[contradiction_out(x) for x in ans.contradictions],
    )
