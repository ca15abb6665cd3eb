"""Ask: a cited answer, or why not with the sources and their contradictions.

``GET /w/{slug}/ask`` is the form (``?question=`` fills it in, e.g. from a search with no
result); ``POST /w/{slug}/ask`` (CSRF-checked; a viewer may ask) answers with the page itself:
a question changes nothing, so there is nothing to redirect to. It calls the same service as
``POST /api/v1/answers`` and shows:

- ``ok``: the answer with each inline citation marker (``[S1]``) as links to the cited
  passage on the item page (``/w/{slug}/items/{id}#chunk-<chunk id>``, the anchor the item page
  gives every chunk), the cited sources, and every sentence's verdict against the excerpts it
  cites (supported with the supporting sentence, unsupported naming the facet with the words
  that lack support marked, uncited);
- ``unavailable`` (no model configured, no source, a rejected reply): the reason in words and
  what to try next;
- always: the sources that were retrieved, and the contradictions recorded among them with
  both quotations side by side (the ledger's, returned with or without a model).

When the model provider fails (the API's 502 / 503), the page says so with the same status and
still shows the sources and their contradictions: they do not need the model.

Streaming (docs/decisions/0042-streaming-answers.md): ``static/ask.js`` posts the same form
with ``Accept: text/event-stream`` and gets Server-Sent Events: ``sources`` (``{html}``: the
sources section), ``delta`` (``{text}``: more of the answer, unchecked, citation markers held
back; the script shows it as plain text), then ``final`` (``{html}``: the answer section,
sources and contradictions, exactly as the page renders them; a provider failure renders as
it does on the page) or ``error``. Without JavaScript the form posts and the page renders
the whole answer.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import APIRouter, Depends, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from relata.analysis.answer import find_markers
from relata.analysis.failures import ModelProviderFailed, ModelProviderUnavailable
from relata.api.deps import container
from relata.api.errors import status_for
from relata.api.sse import Frame, event_stream, wants_events
from relata.domain.cancel import Cancel
from relata.domain.errors import ValidationError
from relata.schemas.answers import AnswerOut, SentenceCheckOut, SourceOut, to_out
from relata.schemas.claims import ContradictionOut, SideOut
from relata.search.answers import (
    ANALYSIS_DISABLED,
    DEFAULT_LIMIT,
    INSUFFICIENT_EVIDENCE,
    MAX_LIMIT,
    MAX_QUESTION_CHARS,
    NO_SOURCES,
    Answer,
    Source,
    SourcesRetrieved,
    TextWritten,
    check_question,
)
from relata.web.context import Page, field, form, page
from relata.web.templating import fragment, render
from relata.web.text import Segment, Span, segments

if TYPE_CHECKING:
    from relata.bootstrap import Container

router = APIRouter()

#: What to try next, by the reason an answer is unavailable (anything else: ``_RETRY``).
NEXT_STEPS: dict[str, str] = {
    ANALYSIS_DISABLED: "An administrator can configure a language model for Relata. Until "
    "then, read the sources below: they are what the answer would be written from.",
    NO_SOURCES: "Try other words, or check the library for the documents you expect.",
    INSUFFICIENT_EVIDENCE: "Try a narrower question, or read the sources below.",
    ModelProviderFailed.code: "Try again later, or ask an administrator to check the language "
    "model in Settings. The sources below do not need the model.",
    ModelProviderUnavailable.code: "Try again in a moment. The sources below do not need the "
    "model.",
}
_RETRY = "Ask again, perhaps in other words, or read the sources below."
#: What a contradiction's facet means, for people (``ContradictionOut.facet``).
FACET_WORDS = {
    "date": "The dates differ",
    "quantity": "The numbers differ",
    "polarity": "One says it is so, the other that it is not",
    "direction": "They say it changed in opposite directions",
    "judgement": "A language model judged that they disagree",
}
VERDICT_LABELS = {"supported": "Supported", "unsupported": "Unsupported", "uncited": "Uncited"}
SUPPORT_SUMMARY = {
    "supported": "Every sentence is supported by the passage it cites.",
    "unsupported": "Some sentences are not supported by the passages they cite: check them "
    "below before relying on the answer.",
    "uncited": "Some sentences cite no source.",
}


@dataclass(frozen=True, slots=True)
class Cite:
    """A link to a cited passage: ``[S1]`` in the answer."""

    ref: str
    title: str
    url: str


@dataclass(frozen=True, slots=True)
class Piece:
    """A piece of the answer: its words, or an inline citation marker's links."""

    text: str = ""
    cites: tuple[Cite, ...] = ()


@dataclass(frozen=True, slots=True)
class SourceView:
    ref: str
    title: str
    item_url: str
    url: str
    segments: list[Segment]
    #: A newer dated source supersedes what this one states (ADR 38).
    superseded: str | None = None


@dataclass(frozen=True, slots=True)
class SentenceView:
    number: int
    verdict: str
    label: str
    segments: list[Segment]
    cites: list[Cite]
    reason: str | None
    said: str | None  # "Supported by" / "Says instead" (with ``span_*``), or None
    span_cite: Cite | None
    span_text: str | None


@dataclass(frozen=True, slots=True)
class SideView:
    title: str
    url: str
    segments: list[Segment]


@dataclass(frozen=True, slots=True)
class ContradictionView:
    id: str
    subject: str
    facet: str
    what: str
    reason: str
    status: str
    first: SideView
    second: SideView


def passage_url(who: Page, item_id: str, chunk_id: str) -> str:
    return who.url(f"items/{item_id}") + f"?chunk={chunk_id}#chunk-{chunk_id}"


def _cites(refs: Sequence[str], by_ref: Mapping[str, Cite]) -> tuple[Cite, ...]:
    return tuple(by_ref[r] for r in refs if r in by_ref)


def answer_pieces(answer: str, by_ref: Mapping[str, Cite]) -> list[Piece]:
    """The answer's words with each citation marker replaced by links to what it cites; a
    marker naming only refs that were not supplied is left out (dropped citations are never
    shown)."""
    markers, _ = find_markers(answer, list(by_ref))
    pieces: list[Piece] = []
    at = 0
    for m in markers:
        if m.start > at:
            pieces.append(Piece(text=answer[at : m.start]))
        cites = _cites(m.refs, by_ref)
        if cites:
            pieces.append(Piece(cites=cites))
        at = m.end
    if at < len(answer):
        pieces.append(Piece(text=answer[at:]))
    return pieces


def sentence_view(n: int, c: SentenceCheckOut, by_ref: Mapping[str, Cite]) -> SentenceView:
    spans = []
    if c.claimed is not None:
        spans.append(Span(c.claimed.start - c.start, c.claimed.end - c.start, "unsupported"))
    label = VERDICT_LABELS.get(c.verdict.value, c.verdict.value)
    if c.facet is not None:
        label = f"{label}: {c.facet.value}"
    said = None
    if c.span is not None:
        said = "Supported by" if c.verdict.value == "supported" else "The cited passage says"
    return SentenceView(
        number=n,
        verdict=c.verdict.value,
        label=label,
        segments=segments(c.text, spans),
        cites=list(_cites(c.citations, by_ref)),
        reason=c.reason,
        said=said,
        span_cite=by_ref.get(c.span.ref) if c.span is not None else None,
        span_text=c.span.text if c.span is not None else None,
    )


def source_view(who: Page, s: SourceOut, supported: Sequence[tuple[int, int]]) -> SourceView:
    """A source with the sentences that support the answer marked."""
    return SourceView(
        ref=s.ref,
        title=s.title,
        item_url=who.url(f"items/{s.item_id}"),
        url=passage_url(who, s.item_id, s.chunk_id),
        segments=segments(s.excerpt, [Span(a, b, "match") for a, b in supported]),
        superseded=s.superseded,
    )


def _side(who: Page, side: SideOut, titles: Mapping[str, str]) -> SideView:
    conflict = Span(side.conflict_start - side.start, side.conflict_end - side.start, "claim")
    return SideView(
        title=titles.get(side.item_id, "another item"),
        url=who.url(f"items/{side.item_id}"),
        segments=segments(side.quotation, [conflict]),
    )


def contradiction_view(
    who: Page, x: ContradictionOut, titles: Mapping[str, str]
) -> ContradictionView:
    status = x.status.value
    if x.resolution is not None:
        status += f" ({x.resolution.value.replace('_', ' ')})"
    return ContradictionView(
        id=x.id,
        subject=x.subject,
        facet=x.facet,
        what=FACET_WORDS.get(x.facet, "They disagree"),
        reason=x.reason,
        status=status,
        first=_side(who, x.first, titles),
        second=_side(who, x.second, titles),
    )


def answer_context(who: Page, out: AnswerOut) -> dict[str, Any]:
    """What ``ask.html`` shows of an answer (see the module docstring)."""
    by_ref = {
        s.ref: Cite(s.ref, s.title, passage_url(who, s.item_id, s.chunk_id)) for s in out.sources
    }
    supported: dict[str, list[tuple[int, int]]] = {}
    sentences: list[SentenceView] = []
    if out.checks is not None:
        for n, c in enumerate(out.checks.sentences, start=1):
            sentences.append(sentence_view(n, c, by_ref))
            if c.span is not None and c.verdict.value == "supported":
                supported.setdefault(c.span.ref, []).append((c.span.start, c.span.end))
    titles = {s.item_id: s.title for s in out.sources}
    return {
        "out": out,
        "pieces": answer_pieces(out.answer, by_ref) if out.answer else [],
        "support_summary": SUPPORT_SUMMARY.get(out.support or "", ""),
        "sentences": sentences,
        "citations": [
            source_view(who, s, supported.get(s.ref, ()))
            for s in out.sources
            if s.ref in {c.ref for c in out.citations}
        ],
        "sources": [source_view(who, s, ()) for s in out.sources],
        "contradictions": [contradiction_view(who, x, titles) for x in out.contradictions],
        "next_step": NEXT_STEPS.get(out.reason or "", _RETRY),
    }


def _limit(raw: str) -> int:
    try:
        limit = int(raw or DEFAULT_LIMIT)
    except ValueError:
        message = f"sources must be a number from 1 to {MAX_LIMIT}"
        raise ValidationError(message, field="limit") from None
    if not 1 <= limit <= MAX_LIMIT:
        raise ValidationError(f"sources must be from 1 to {MAX_LIMIT}", field="limit")
    return limit


def _answer(
    c: Container, workspace_id: str, question: str, limit: int
) -> tuple[AnswerOut, ModelProviderFailed | ModelProviderUnavailable | None]:
    """The answer; when the model provider failed, the sources and their contradictions
    without it, and the failure."""
    try:
        return to_out(c.answers.answer(workspace_id, question, limit=limit)), None
    except (ModelProviderFailed, ModelProviderUnavailable) as exc:
        q = check_question(question)
        sources = c.answers.retrieve(workspace_id, q, limit, Cancel.never())
        return _failed(c, workspace_id, q, sources, exc), exc


def _failed(
    c: Container,
    workspace_id: str,
    question: str,
    sources: tuple[Source, ...],
    exc: ModelProviderFailed | ModelProviderUnavailable,
) -> AnswerOut:
    """What the page shows when the model provider failed: the sources and their
    contradictions, which do not need the model, and the failure."""
    between = c.claims.between(workspace_id, [s.item_id for s in sources]) if sources else []
    failed = Answer(
        question=question,
        status="unavailable",
        answer=None,
        reason=exc.code,
        message=exc.message,
        citations=(),
        dropped_citations=0,
        sources=sources,
        contradictions=tuple(between),
    )
    return to_out(failed)


def _stream(request: Request, c: Container, who: Page, question: str, limit: int) -> Response:
    """The answer as Server-Sent Events for ``static/ask.js`` (see the module docstring). The
    sources are retrieved before the response starts, so a bad question is an ordinary page."""
    cancel = Cancel()
    events = c.answers.stream(who.workspace_id, question, limit=limit, cancel=cancel)
    first = next(events)
    q = check_question(question)

    def frames() -> Iterator[Frame]:
        sources: tuple[Source, ...] = ()
        try:
            for e in chain([first], events):
                if isinstance(e, SourcesRetrieved):
                    sources = e.sources
                    context = answer_context(who, _pending(q, sources))
                    html = fragment(request, "ask_sources.html", page=who, question=q, **context)
                    yield "sources", {"html": html}
                elif isinstance(e, TextWritten):
                    yield "delta", {"text": e.text}
                else:
                    yield "final", {"html": _results(request, who, to_out(e.answer)), "status": 200}
        except (ModelProviderFailed, ModelProviderUnavailable) as exc:
            out = _failed(c, who.workspace_id, q, sources, exc)
            yield "final", {"html": _results(request, who, out), "status": status_for(exc)}

    return event_stream(frames(), lambda f: f, cancel)


def _pending(question: str, sources: tuple[Source, ...]) -> AnswerOut:
    """An answer not written yet, with its sources: to render the sources section alone."""
    pending = Answer(question, "unavailable", None, None, None, (), 0, sources)
    return to_out(pending)


def _results(request: Request, who: Page, out: AnswerOut) -> str:
    context = {"page": who, "question": out.question, **answer_context(who, out)}
    return "".join(
        fragment(request, name, **context)
        for name in ("ask_answer.html", "ask_sources.html", "ask_contradictions.html")
    )


def _form_context(question: str, limit: int) -> dict[str, Any]:
    return {
        "question": question,
        "limit": limit,
        "max_limit": MAX_LIMIT,
        "max_question": MAX_QUESTION_CHARS,
    }


@router.get("/w/{slug}/ask", name="web_ask")
def ask_form(request: Request, who: Annotated[Page, Depends(page)], question: str = "") -> Response:
    if len(question) > MAX_QUESTION_CHARS:
        raise ValidationError(
            f"question must be at most {MAX_QUESTION_CHARS} characters", field="question"
        )
    return render(
        request, "ask.html", page=who, error=None, **_form_context(question, DEFAULT_LIMIT)
    )


@router.post("/w/{slug}/ask", name="web_ask_post")
async def ask(request: Request) -> Response:
    who, data = await form(request, viewer_may_write=True)
    question = field(data, "question", max_length=MAX_QUESTION_CHARS)
    limit = _limit(field(data, "limit", default=str(DEFAULT_LIMIT), max_length=8))
    if not question:
        return render(
            request,
            "ask.html",
            status_code=400,
            page=who,
            error="Write a question first.",
            **_form_context(question, limit),
        )
    c = container(request)
    if wants_events(request):
        return await run_in_threadpool(_stream, request, c, who, question, limit)
    out, failure = await run_in_threadpool(_answer, c, who.workspace_id, question, limit)
    response = render(
        request,
        "ask.html",
        status_code=status_for(failure) if failure is not None else 200,
        page=who,
        error=None,
        **_form_context(out.question, limit),
        **answer_context(who, out),
    )
    if isinstance(failure, ModelProviderUnavailable) and failure.retry_after is not None:
        response.headers["Retry-After"] = str(failure.retry_after)
    return response
