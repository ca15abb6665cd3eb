"""``AnalysisService``: the one door to the language model for every analysis task.

Each call checks that analysis is enabled (else ``AnalysisDisabled``, which the pipeline
treats as degraded quality), waits for a slot of the shared ``AiCallLimiter`` (kind
``"analysis"``), calls the ``Analyser`` and records call counts, latency, tokens and queue
wait per provider and task. ``run`` then applies the one rule for invalid output
(docs/decisions/0007-invalid-model-output.md): content that fails strict decoding or task
validation is counted on ``relata_model_invalid_output_total{task,reason}`` and raised as a
permanent ``InvalidModelOutput``; it is never retried. Transport failures propagate as the
provider raised them (already retried, bounded, by the adapter).

``stream_answer`` is ``answer`` with the text handed over as the model writes it, when the
analyser is a ``StreamingAnalyser`` (docs/decisions/0042-streaming-answers.md): same slot,
same metrics, the joined reply judged exactly as a whole one.

Logs carry the task, provider, model, outcome and timings, never messages or content.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from relata.analysis.answer import (
    ANSWER_TASK,
    AnswerResult,
    Excerpt,
    build_answer_prompt,
    judge_answer,
)
from relata.analysis.answer_stream import AnswerFieldReader, MarkerHold
from relata.analysis.claim_task import (
    CLAIM_TASK,
    JUDGE_TASK,
    ClaimReply,
    JudgementReply,
    build_claim_prompt,
    build_judge_prompt,
    judge_claims,
    judge_judgement,
)
from relata.analysis.decode import decode_strict
from relata.analysis.entity_task import (
    ENTITY_TASK,
    EntityReply,
    build_entity_prompt,
    judge_entities,
)
from relata.analysis.errors import AnalysisDisabled, InvalidModelOutput
from relata.analysis.failures import provider_failure
from relata.analysis.relationship_task import (
    RELATIONSHIP_TASK,
    RelationshipReply,
    build_relationship_prompt,
    judge_relationship,
)
from relata.analysis.task import TaskSpec
from relata.concurrency import AiCallLimiter
from relata.domain.cancel import Cancel, Cancelled
from relata.domain.errors import Permanent, Unavailable
from relata.domain.ports import (
    Analyser,
    CompletionRequest,
    CompletionResponse,
    HealthChecker,
    Message,
    ProviderHealth,
    StreamingAnalyser,
)
from relata.observability.metrics import Metrics
from relata.providers.retry import MalformedResponse, StatusError

log = logging.getLogger(__name__)

LIMITER_KIND = "analysis"


class AnalysisService:
    def __init__(
        self,
        analyser: Analyser | None,
        *,
        limiter: AiCallLimiter,
        metrics: Metrics | None = None,
        provider: str = "",
        max_tokens: int = 512,
        disabled_reason: str = "",
    ) -> None:
        self._analyser = analyser
        self._limiter = limiter
        self._metrics = metrics
        self._provider = provider or (getattr(analyser, "provider", "") if analyser else "")
        self._max_tokens = max_tokens
        self._disabled_reason = disabled_reason or "analysis is disabled"

    @classmethod
    def disabled(cls, reason: str, *, limiter: AiCallLimiter) -> AnalysisService:
        return cls(None, limiter=limiter, disabled_reason=reason)

    @property
    def enabled(self) -> bool:
        return self._analyser is not None

    @property
    def disabled_reason(self) -> str | None:
        return None if self.enabled else self._disabled_reason

    @property
    def provider(self) -> str:
        return self._provider

    @property
    def model_id(self) -> str | None:
        return self._analyser.model_id if self._analyser is not None else None

    def _require(self) -> Analyser:
        if self._analyser is None:
            raise AnalysisDisabled(self._disabled_reason)
        return self._analyser

    # ------------------------------------------------------------------ model calls
    def complete(
        self, task: TaskSpec, messages: Sequence[Message], cancel: Cancel
    ) -> CompletionResponse:
        """One model call for ``task`` through the shared AI-call limit; content unparsed."""
        analyser = self._require()
        request = self._request(task, messages)
        with self._call(task, analyser, cancel):
            response = analyser.complete(request, cancel)
        if response.usage is not None and self._metrics is not None:
            self._metrics.model_tokens.labels(self._provider, task.name, "prompt").inc(
                response.usage.prompt_tokens
            )
            self._metrics.model_tokens.labels(self._provider, task.name, "completion").inc(
                response.usage.completion_tokens
            )
        return response

    def _request(self, task: TaskSpec, messages: Sequence[Message]) -> CompletionRequest:
        return CompletionRequest(
            messages=tuple(messages),
            schema=dict(task.schema),
            schema_name=task.schema_name,
            max_tokens=self._max_tokens,
            temperature=task.temperature,
        )

    @contextmanager
    def _call(self, task: TaskSpec, analyser: Analyser, cancel: Cancel) -> Iterator[None]:
        """A slot of the shared limit for one model call, timed, counted and logged."""
        queued = time.monotonic()
        with self._limiter.slot(LIMITER_KIND, cancel):
            waited = time.monotonic() - queued
            start = time.monotonic()
            outcome = "error"
            try:
                yield
                outcome = "ok"
            except (Cancelled, GeneratorExit):
                outcome = "cancelled"
                raise
            finally:
                elapsed = time.monotonic() - start
                self._observe_call(task.name, outcome, waited, elapsed)
                log.info(
                    "model call finished",
                    extra={
                        "fields": {
                            "task": task.name,
                            "provider": self._provider,
                            "model": analyser.model_id,
                            "outcome": outcome,
                            "queue_wait_ms": round(waited * 1000, 1),
                            "elapsed_ms": round(elapsed * 1000, 1),
                        }
                    },
                )

    def run(self, task: TaskSpec, messages: Sequence[Message], cancel: Cancel) -> dict[str, Any]:
        """Call the model and strictly decode its content; invalid output is counted, raised."""
        response = self.complete(task, messages, cancel)
        try:
            return decode_strict(response.content, task.schema, max_bytes=task.max_output_bytes)
        except InvalidModelOutput as exc:
            self.record_invalid(task.name, exc)
            raise

    def record_invalid(self, task: str, exc: InvalidModelOutput) -> None:
        """Count one rejected response (the reason set is bounded by ``InvalidModelOutput``)."""
        if self._metrics is not None:
            self._metrics.model_invalid_output.labels(task, exc.reason).inc()
        log.warning(
            "model output rejected",
            extra={"fields": {"task": task, "reason": exc.reason, "provider": self._provider}},
        )

    # ------------------------------------------------------------------ extract_entities
    def extract_entities(self, text: str, cancel: Cancel) -> EntityReply:
        """The entities one chunk names, by the model, each at offsets into ``text``.

        Raises ``AnalysisDisabled`` without a model and a failed call as
        ``ModelProviderFailed``/``ModelProviderUnavailable``. A malformed reply gives no row
        (counted under its reason); a bad row is skipped and counted, never fatal."""
        self._require()
        try:
            response = self.complete(ENTITY_TASK, build_entity_prompt(text), cancel)
        except (Unavailable, Permanent) as exc:
            raise provider_failure(exc) from exc
        try:
            reply = judge_entities(response.content, text)
        except InvalidModelOutput as exc:
            self.record_invalid(ENTITY_TASK.name, exc)
            return EntityReply((), Counter({exc.reason: 1}))
        self._record_skipped(ENTITY_TASK.name, reply.skipped)
        return reply

    # ------------------------------------------------------------------ extract_claims
    def extract_claims(self, text: str, subjects: Sequence[str], cancel: Cancel) -> ClaimReply:
        """The claims one chunk makes about ``subjects`` (the item's entity names), by the
        model, each quotation the text's own slice at offsets into ``text``.

        Raises ``AnalysisDisabled`` without a model and a failed call as
        ``ModelProviderFailed``/``ModelProviderUnavailable``. A malformed reply gives no row
        (counted under its reason); a bad row is skipped and counted, never fatal."""
        self._require()
        messages = build_claim_prompt(text, subjects)
        try:
            response = self.complete(CLAIM_TASK, messages, cancel)
        except (Unavailable, Permanent) as exc:
            raise provider_failure(exc) from exc
        try:
            reply = judge_claims(response.content, text, subjects)
        except InvalidModelOutput as exc:
            self.record_invalid(CLAIM_TASK.name, exc)
            return ClaimReply((), Counter({exc.reason: 1}))
        self._record_skipped(CLAIM_TASK.name, reply.skipped)
        return reply

    # ------------------------------------------------------------------ judge_contradiction
    def judge_contradiction(
        self, a: str, b: str, cancel: Cancel, *, subject: str = ""
    ) -> JudgementReply:
        """The model's judgement of whether two quotations about ``subject`` contradict.

        Raises like ``extract_claims``; a rejected reply is a ``JudgementReply`` with no
        judgement and its reason, counted."""
        self._require()
        try:
            response = self.complete(JUDGE_TASK, build_judge_prompt(a, b, subject=subject), cancel)
        except (Unavailable, Permanent) as exc:
            raise provider_failure(exc) from exc
        try:
            return JudgementReply(judge_judgement(response.content))
        except InvalidModelOutput as exc:
            self.record_invalid(JUDGE_TASK.name, exc)
            return JudgementReply(None, Counter({exc.reason: 1}))

    # ------------------------------------------------------------------ classify_relationship
    def classify_relationship(
        self,
        first_excerpt: str,
        second_excerpt: str,
        cancel: Cancel,
        *,
        first_title: str = "",
        second_title: str = "",
    ) -> RelationshipReply:
        """The model's opinion of how two items are related, from an excerpt of each (A the
        first, B the second).

        Raises like ``extract_claims``; a rejected reply is a ``RelationshipReply`` with no
        opinion and its reason, counted."""
        self._require()
        messages = build_relationship_prompt(
            first_excerpt, second_excerpt, first_title=first_title, second_title=second_title
        )
        try:
            response = self.complete(RELATIONSHIP_TASK, messages, cancel)
        except (Unavailable, Permanent) as exc:
            raise provider_failure(exc) from exc
        try:
            return RelationshipReply(judge_relationship(response.content))
        except InvalidModelOutput as exc:
            self.record_invalid(RELATIONSHIP_TASK.name, exc)
            return RelationshipReply(None, Counter({exc.reason: 1}))

    def _record_skipped(self, task: str, skipped: Counter[str]) -> None:
        if self._metrics is not None:
            for reason, n in skipped.items():
                self._metrics.model_invalid_output.labels(task, reason).inc(n)

    # ------------------------------------------------------------------ generate_answer
    def answer(
        self,
        question: str,
        excerpts: Sequence[Excerpt | tuple[str, str, str]],
        cancel: Cancel,
    ) -> AnswerResult:
        """Answer ``question`` from ``excerpts`` with checked citations.

        Raises ``AnalysisDisabled`` when there is no model, and a failed call as
        ``ModelProviderFailed`` / ``ModelProviderUnavailable`` (``relata.analysis.failures``);
        an invalid or degenerate reply is an ``unavailable`` result, counted.
        """
        self._require()
        items = [e if isinstance(e, Excerpt) else Excerpt(*e) for e in excerpts]
        messages = build_answer_prompt(question, items)
        try:
            response = self.complete(ANSWER_TASK, messages, cancel)
        except (Unavailable, Permanent) as exc:
            raise provider_failure(exc) from exc
        return self.judge(response.content, [e.ref_id for e in items])

    @property
    def streams(self) -> bool:
        """Whether the model hands over its reply as it writes it (``StreamingAnalyser``)."""
        return isinstance(self._analyser, StreamingAnalyser)

    def stream_answer(
        self,
        question: str,
        excerpts: Sequence[Excerpt | tuple[str, str, str]],
        cancel: Cancel,
    ) -> Iterator[str | AnswerResult]:
        """``answer``, streamed: the answer's text as the model writes it, citation markers
        held back (``relata.analysis.answer_stream``), then the judged ``AnswerResult`` last.
        A model that cannot stream gives the ``AnswerResult`` alone. Raises like ``answer``;
        closing the iterator stops the model's stream and frees the call's slot."""
        analyser = self._require()
        items = [e if isinstance(e, Excerpt) else Excerpt(*e) for e in excerpts]
        refs = [e.ref_id for e in items]
        if not isinstance(analyser, StreamingAnalyser):
            yield self.answer(question, items, cancel)
            return
        request = self._request(ANSWER_TASK, build_answer_prompt(question, items))
        reader, hold = AnswerFieldReader(), MarkerHold(refs)
        raw: list[str] = []
        shown = 0
        try:
            with self._call(ANSWER_TASK, analyser, cancel):
                pieces = analyser.stream(request, cancel)
                try:
                    for piece in pieces:
                        raw.append(piece)
                        text = hold.feed(reader.feed(piece))
                        # The judged answer is bounded; so is what is shown before it.
                        text = text[: max(0, ANSWER_TASK.max_output_bytes - shown)]
                        if text:
                            shown += len(text)
                            yield text
                finally:
                    close = getattr(pieces, "close", None)
                    if callable(close):
                        close()
        except (Unavailable, Permanent, StatusError, MalformedResponse) as exc:
            raise provider_failure(exc) from exc
        tail = hold.flush()
        if tail and shown < ANSWER_TASK.max_output_bytes:
            yield tail
        yield self.judge("".join(raw), refs)

    def judge(self, raw_content: str, supplied_refs: Collection[str]) -> AnswerResult:
        """``resolve_answer`` plus the metrics: rejections and dropped citations are counted."""
        try:
            result = judge_answer(raw_content, supplied_refs)
        except InvalidModelOutput as exc:
            self.record_invalid(ANSWER_TASK.name, exc)
            return AnswerResult.unavailable(exc.reason)
        if result.dropped_citations and self._metrics is not None:
            self._metrics.answer_citations_dropped.inc(result.dropped_citations)
        return result

    # ------------------------------------------------------------------ lifecycle
    def health(self, cancel: Cancel) -> ProviderHealth | None:
        if self._analyser is None or not isinstance(self._analyser, HealthChecker):
            return None
        return self._analyser.health(cancel)

    def close(self) -> None:
        close = getattr(self._analyser, "close", None)
        if callable(close):
            close()

    def _observe_call(self, task: str, outcome: str, waited: float, elapsed: float) -> None:
        if self._metrics is None:
            return
        self._metrics.model_queue_wait.labels(self._provider, task).observe(waited)
        self._metrics.model_calls.labels(self._provider, task, outcome).inc()
        self._metrics.model_latency.labels(self._provider, task).observe(elapsed)
