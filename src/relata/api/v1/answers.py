"""POST /api/v1/answers: a cited answer from the caller's workspace, or the sources and why not.

The response is 200 whether the answer is ``ok`` or ``unavailable`` (no model configured, no
matching source, or the model's reply was rejected): the retrieved sources are always there.
Only a failure to talk to the model fails the request: 502 when the provider answered with an
error, 503 when it could not be reached or was overloaded, in the one error shape.
See ``relata.search.answers`` and docs/decisions/0012-cited-answers.md.
"""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from relata.api.deps import ContainerDep, PrincipalDep
from relata.api.openapi import errors
from relata.schemas.answers import AnswerOut, to_out
from relata.search.answers import DEFAULT_LIMIT, MAX_LIMIT, MAX_QUESTION_CHARS

router = APIRouter(tags=["answers"])


class AnswerRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str = Field(
        min_length=1,
        max_length=MAX_QUESTION_CHARS,
        description="The question; it is also the search query for the sources. Not blank.",
        json_schema_extra={"pattern": r"\S"},  # the service refuses blank with its own message
    )
    limit: int = Field(
        DEFAULT_LIMIT,
        ge=1,
        le=MAX_LIMIT,
        description="How many sources (retrieved excerpts) to answer from.",
    )


@router.post("/answers", response_model=AnswerOut, responses=errors(502))
def answers(body: AnswerRequest, c: ContainerDep, p: PrincipalDep) -> AnswerOut:
    return to_out(c.answers.answer(p.workspace_id, body.question, limit=body.limit))
