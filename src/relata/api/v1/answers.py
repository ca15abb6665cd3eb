"""POST /api/v1/answers: a cited answer from the caller's workspace, or the sources and why not.

The response is 200 whether the answer is ``ok`` or ``unavailable`` (no model configured, no
matching source, or the model's reply was rejected): the retrieved sources are always there.
Only a failure to talk to the model fails the request: 502 when the provider answered with an
error, 503 when it could not be reached or was overloaded, in the one error shape.
See ``relata.search.answers`` and docs/decisions/0012-cited-answers.md.
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from relata.api.deps import ContainerDep, PrincipalDep
from relata.search.answers import DEFAULT_LIMIT, MAX_LIMIT, MAX_QUESTION_CHARS, Answer

router = APIRouter(tags=["answers"])


class AnswerRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str = Field(
        min_length=1,
        max_length=MAX_QUESTION_CHARS,
        description="The question; it is also the search query for the sources.",
    )
    limit: int = Field(
        DEFAULT_LIMIT,
        ge=1,
        le=MAX_LIMIT,
        description="How many sources (retrieved excerpts) to answer from.",
    )


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
    contradictions: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Contradictions recorded between the sources. Always empty until "
        "relationship discovery records them (the relationships issue).",
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
        contradictions=[],
    )


@router.post("/answers", response_model=AnswerOut)
def answers(body: AnswerRequest, c: ContainerDep, p: PrincipalDep) -> AnswerOut:
    return to_out(c.answers.answer(p.workspace_id, body.question, limit=body.limit))
