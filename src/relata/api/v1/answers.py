"""POST /api/v1/answers: a cited answer from the caller's workspace, or the sources and why not.

The response is 200 whether the answer is ``ok`` or ``unavailable`` (no model configured, no
matching source, or the model's reply was rejected): the retrieved sources are always there.
Only a failure to talk to the model fails the request: 502 when the provider answered with an
error, 503 when it could not be reached or was overloaded, in the one error shape.
See ``relata.search.answers`` and docs/decisions/0012-cited-answers.md.

With ``Accept: text/event-stream`` the answer is streamed as Server-Sent Events
(docs/decisions/0042-streaming-answers.md): ``sources`` (the retrieved sources, as in the
response's ``sources``), ``delta`` events (``{"text"}``: more of the answer as the model writes
it, unchecked, citation markers held back), then one ``final`` (the whole response, exactly as
without streaming: verified citations, each sentence's verdict, the disagreements) or one
``error`` (the error shape plus its ``status``). A bad request or a failed retrieval is still an
ordinary error response: the stream starts only once the sources are known.
"""

from __future__ import annotations

from itertools import chain
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field

from relata.api.deps import ContainerDep, Principal, PrincipalDep
from relata.api.openapi import errors
from relata.api.sse import Frame, event_stream, wants_events
from relata.domain.cancel import Cancel
from relata.schemas.answers import AnswerOut, source_out, to_out
from relata.search.answers import (
    DEFAULT_LIMIT,
    MAX_LIMIT,
    MAX_QUESTION_CHARS,
    AnswerEvent,
    SourcesRetrieved,
    TextWritten,
)

if TYPE_CHECKING:
    from relata.bootstrap import Container

router = APIRouter(tags=["answers"])

_STREAM_DESCRIPTION = (
    "With `Accept: text/event-stream`: Server-Sent Events, each one `data:` line of JSON. "
    '`sources` (a list of `SourceOut`) first; then `delta` events (`{"text": ...}`), the '
    "answer's text as the model writes it, not yet checked, with citation markers held back "
    "(an invented citation is never shown); then one `final` (an `AnswerOut`, exactly the "
    "non-streamed response) or one `error` (the error shape with its HTTP `status`)."
)


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


def answers(body: AnswerRequest, c: Container, p: Principal) -> AnswerOut:
    """The whole answer at once (the JSON response, and the MCP server's ``ask``)."""
    return to_out(c.answers.answer(p.workspace_id, body.question, limit=body.limit))


def answer_frame(event: AnswerEvent) -> Frame:
    """One answer event as its SSE name and JSON data."""
    if isinstance(event, SourcesRetrieved):
        return "sources", [source_out(s).model_dump(mode="json") for s in event.sources]
    if isinstance(event, TextWritten):
        return "delta", {"text": event.text}
    return "final", to_out(event.answer).model_dump(mode="json")


@router.post(
    "/answers",
    response_model=AnswerOut,
    responses={
        **errors(502),
        200: {
            "description": "The answer (JSON), or the streamed answer (text/event-stream).",
            "content": {"text/event-stream": {"schema": {"type": "string"}}},
        },
    },
    description=_STREAM_DESCRIPTION,
    summary="Answers",
    operation_id="answers_api_v1_answers_post",
)
def answers_route(body: AnswerRequest, c: ContainerDep, p: PrincipalDep, request: Request) -> Any:
    if not wants_events(request):
        return answers(body, c, p)
    cancel = Cancel()
    events = c.answers.stream(p.workspace_id, body.question, limit=body.limit, cancel=cancel)
    first = next(events)  # retrieval: its errors are ordinary error responses
    return event_stream(chain([first], events), answer_frame, cancel)
