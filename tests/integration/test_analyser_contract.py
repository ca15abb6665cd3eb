"""Contract suite for both analysers over a real local HTTP server (tests.support.fake_provider).

Each analyser must: send exactly the documented request; return the content raw with the
model and usage; retry transport failures, 429, 5xx and malformed envelopes a bounded number
of times; fail at once on other 4xx, redirects and oversized bodies; extract and redact
provider error messages; honour its timeout and cancellation. Above them, AnalysisService
applies ADR 0007: invalid content is counted once and never retried.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from relata.analysis.answer import ANSWER_SCHEMA, ANSWER_TASK
from relata.analysis.decode import decode_strict
from relata.analysis.errors import AnalysisDisabled, InvalidModelOutput
from relata.analysis.factory import build_analysis
from relata.analysis.ollama import OllamaAnalyser
from relata.analysis.openai_compatible import OpenAICompatibleAnalyser
from relata.analysis.service import AnalysisService
from relata.concurrency import AiCallLimiter
from relata.config.settings import Settings
from relata.domain.cancel import Cancel, Cancelled
from relata.domain.errors import ConfigError, Permanent, ValidationError
from relata.domain.ports import Analyser, CompletionRequest, Message
from relata.observability.metrics import Metrics
from relata.providers.retry import ProviderUnreachable, RetriesExhausted, RetryPolicy
from tests.support.fake_provider import FakeProvider, Reply

GOOD = '{"answer": "The contract was signed in Berlin.", "sufficient": true, "citations": ["S1"]}'
KEY = "sk-test-secret-key-0123456789"
MESSAGES = (Message("system", "Answer as JSON."), Message("user", "Where was it signed?"))
POLICY = RetryPolicy(max_attempts=3, base_delay=0.0, max_delay=0.0)


def no_sleep(cancel: Cancel, seconds: float) -> bool:
    return cancel.cancelled


def request(**kw: Any) -> CompletionRequest:
    fields: dict[str, Any] = {
        "messages": MESSAGES,
        "schema": ANSWER_SCHEMA,
        "schema_name": "relata_generate_answer",
        "max_tokens": 256,
        "temperature": 0.0,
    }
    fields.update(kw)
    return CompletionRequest(**fields)


@dataclass(frozen=True)
class Kind:
    """How one provider differs: its route, its constructor, and where its content lives."""

    name: str
    path: str
    make: Callable[..., Any]
    set_content: Callable[[Any, Any], Any]
    drop_envelope: Callable[[Any], Any]


def _openai(fake: FakeProvider, **kw: Any) -> OpenAICompatibleAnalyser:
    return OpenAICompatibleAnalyser(
        base_url=fake.url + "/v1//", model="fake-chat", retry=POLICY, sleep=no_sleep, **kw
    )


def _ollama(fake: FakeProvider, **kw: Any) -> OllamaAnalyser:
    kw.pop("api_key", None)
    return OllamaAnalyser(
        base_url=fake.url + "/", model="fake-chat", retry=POLICY, sleep=no_sleep, **kw
    )


def _openai_content(doc: Any, content: Any) -> Any:
    doc["choices"][0]["message"]["content"] = content
    return doc


def _ollama_content(doc: Any, content: Any) -> Any:
    doc["message"]["content"] = content
    return doc


OPENAI = Kind(
    "openai",
    "/v1/chat/completions",
    _openai,
    _openai_content,
    lambda doc: {**doc, "choices": []},
)
OLLAMA = Kind(
    "ollama",
    "/api/chat",
    _ollama,
    _ollama_content,
    lambda doc: {k: v for k, v in doc.items() if k != "message"},
)


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    with FakeProvider(chat_content=GOOD) as server:
        yield server


@pytest.fixture(params=[OPENAI, OLLAMA], ids=lambda k: k.name)
def kind(request: pytest.FixtureRequest) -> Kind:
    k: Kind = request.param
    return k


@pytest.fixture
def analyser(kind: Kind, fake: FakeProvider) -> Iterator[Any]:
    a = kind.make(fake)
    try:
        yield a
    finally:
        a.close()


def test_both_adapters_implement_the_port(analyser: Analyser) -> None:
    assert analyser.model_id == "fake-chat"


# ---------------------------------------------------------------- answering well
def test_returns_raw_content_model_and_usage(kind: Kind, fake: FakeProvider, analyser: Any) -> None:
    def with_usage(doc: Any) -> Any:
        if kind is OPENAI:
            doc["usage"] = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
        else:
            doc.update(prompt_eval_count=11, eval_count=7)
        doc["model"] = "served-model"
        return doc

    fake.enqueue(Reply(transform=with_usage))
    response = analyser.complete(request(), Cancel.after(10))
    assert response.content == GOOD  # unparsed
    assert response.model == "served-model"
    assert response.usage is not None
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (11, 7)
    assert response.usage.total_tokens == 18


def test_openai_request_is_exactly_the_structured_output_contract(fake: FakeProvider) -> None:
    analyser = _openai(fake)
    try:
        analyser.complete(request(), Cancel.after(10))
    finally:
        analyser.close()
    (sent,) = fake.requests_to("/v1/chat/completions")  # base URL trimmed, /v1 kept
    assert sent.json["model"] == "fake-chat"
    assert sent.json["messages"] == [
        {"role": "system", "content": "Answer as JSON."},
        {"role": "user", "content": "Where was it signed?"},
    ]
    assert sent.json["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "relata_generate_answer", "strict": True, "schema": ANSWER_SCHEMA},
    }
    assert sent.json["max_tokens"] == 256 and sent.json["temperature"] == 0.0
    assert sent.headers["content-type"] == "application/json"
    assert "authorization" not in sent.headers  # no key configured, no header


def test_openai_sends_bearer_only_with_a_key_and_request_model_wins(fake: FakeProvider) -> None:
    fake.api_key = KEY
    analyser = _openai(fake, api_key=KEY)
    try:
        analyser.complete(request(model="override-model"), Cancel.after(10))
    finally:
        analyser.close()
    (sent,) = fake.requests
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert sent.json["model"] == "override-model"


def test_ollama_request_sends_schema_as_format_without_streaming(fake: FakeProvider) -> None:
    analyser = _ollama(fake)
    try:
        analyser.complete(request(max_tokens=99, temperature=0.2), Cancel.after(10))
    finally:
        analyser.close()
    (sent,) = fake.requests_to("/api/chat")
    assert sent.json["format"] == ANSWER_SCHEMA
    assert sent.json["stream"] is False
    assert sent.json["options"] == {"temperature": 0.2, "num_predict": 99}
    assert sent.json["model"] == "fake-chat"


def test_raw_json_content_is_accepted(kind: Kind, fake: FakeProvider, analyser: Any) -> None:
    fake.enqueue(Reply(transform=lambda doc: kind.set_content(doc, json.loads(GOOD))))
    response = analyser.complete(request(), Cancel.after(10))
    assert decode_strict(response.content, ANSWER_SCHEMA) == json.loads(GOOD)


# ---------------------------------------------------------------- error statuses
@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_client_errors_are_permanent_and_not_retried(
    kind: Kind, fake: FakeProvider, analyser: Any, status: int
) -> None:
    fake.enqueue(Reply.error(status, "model 'fake-chat' not found"))
    with pytest.raises(Permanent) as info:
        analyser.complete(request(), Cancel.after(10))
    assert "model 'fake-chat' not found" in str(info.value)  # error.message extracted
    assert len(fake.requests) == 1


def test_top_level_message_is_extracted(kind: Kind, fake: FakeProvider, analyser: Any) -> None:
    fake.enqueue(Reply(status=400, json={"message": "context length exceeded"}))
    with pytest.raises(Permanent, match="context length exceeded"):
        analyser.complete(request(), Cancel.after(10))


@pytest.mark.parametrize("status", [429, 500, 502, 503])
def test_transient_statuses_are_retried_then_succeed(
    kind: Kind, fake: FakeProvider, analyser: Any, status: int
) -> None:
    fake.enqueue(Reply.error(status, "busy"))
    assert analyser.complete(request(), Cancel.after(10)).content == GOOD
    assert len(fake.requests) == 2


def test_retries_are_bounded(kind: Kind, fake: FakeProvider, analyser: Any) -> None:
    fake.enqueue(*[Reply.error(503, "down")] * 5)
    with pytest.raises(RetriesExhausted) as info:
        analyser.complete(request(), Cancel.after(10))
    assert info.value.attempts == POLICY.max_attempts
    assert len(fake.requests) == POLICY.max_attempts


def test_api_key_echoed_by_the_provider_is_redacted(fake: FakeProvider) -> None:
    fake.api_key = "sk-the-right-one-000000"
    analyser = _openai(fake, api_key=KEY)
    try:
        with pytest.raises(Permanent) as info:
            analyser.complete(request(), Cancel.after(10))
    finally:
        analyser.close()
    assert KEY not in str(info.value)
    assert "[REDACTED]" in str(info.value)


# ---------------------------------------------------------------- envelopes (transient)
def _envelopes(kind: Kind) -> list[Reply]:
    return [
        Reply.malformed(),  # not JSON
        Reply(json=["not", "an", "object"]),
        Reply(transform=kind.drop_envelope),  # no choices / no message
        Reply(transform=lambda doc: kind.set_content(doc, "   ")),  # empty content
        Reply(transform=lambda doc: kind.set_content(doc, None)),  # missing content
    ]


@pytest.mark.parametrize("case", range(5))
def test_malformed_envelope_is_transient_and_retried(
    kind: Kind, fake: FakeProvider, analyser: Any, case: int
) -> None:
    fake.enqueue(_envelopes(kind)[case])
    assert analyser.complete(request(), Cancel.after(10)).content == GOOD
    assert len(fake.requests) == 2


def test_persistently_malformed_envelope_gives_up_after_the_bound(
    kind: Kind, fake: FakeProvider, analyser: Any
) -> None:
    fake.enqueue(*[Reply.malformed()] * 5)
    with pytest.raises(RetriesExhausted):
        analyser.complete(request(), Cancel.after(10))
    assert len(fake.requests) == POLICY.max_attempts


# ---------------------------------------------------------------- redirect, size, time
def test_redirect_is_refused(kind: Kind, fake: FakeProvider, analyser: Any) -> None:
    fake.enqueue(Reply.redirect(fake.url + "/elsewhere", path=kind.path))
    with pytest.raises(Permanent, match="redirect"):
        analyser.complete(request(), Cancel.after(10))
    assert [r.path for r in fake.requests] == [kind.path]


@pytest.mark.parametrize("chunked", [False, True])
def test_oversized_body_is_refused(kind: Kind, fake: FakeProvider, chunked: bool) -> None:
    analyser = kind.make(fake, max_response_bytes=4096)
    try:
        fake.enqueue(Reply.oversized(50_000, chunked=chunked))
        with pytest.raises(Permanent, match="too large"):
            analyser.complete(request(), Cancel.after(10))
        assert len(fake.requests) == 1
    finally:
        analyser.close()


def test_slow_provider_times_out_and_is_retried_bounded(kind: Kind, fake: FakeProvider) -> None:
    analyser = kind.make(fake, timeout=0.2)
    try:
        fake.enqueue(*[Reply.slow(30)] * POLICY.max_attempts)
        with pytest.raises(RetriesExhausted) as info:
            analyser.complete(request(), Cancel.after(20))
        assert isinstance(info.value.last, ProviderUnreachable)
        assert len(fake.requests) == POLICY.max_attempts
    finally:
        analyser.close()


def test_cancellation_interrupts_a_slow_call(kind: Kind, fake: FakeProvider, analyser: Any) -> None:
    fake.enqueue(Reply.slow(30))
    cancel = Cancel.after(20)
    timer = threading.Timer(0.1, cancel.cancel, args=("lease lost",))
    timer.start()
    try:
        with pytest.raises(Cancelled):
            analyser.complete(request(), cancel)
    finally:
        timer.cancel()
    assert len(fake.requests) == 1


def test_cancelled_before_the_call_sends_nothing(
    kind: Kind, fake: FakeProvider, analyser: Any
) -> None:
    cancel = Cancel()
    cancel.cancel()
    with pytest.raises(Cancelled):
        analyser.complete(request(), cancel)
    assert fake.requests == []


# ---------------------------------------------------------------- validation, config, health
@pytest.mark.parametrize(
    ("messages", "field"),
    [
        ((), "messages"),
        ((Message("user", "  \n"),), "messages.content"),
        ((Message(" ", "hi"),), "messages.role"),
        ((Message("wizard", "hi"),), "messages.role"),
    ],
)
def test_bad_messages_are_refused_before_any_call(
    kind: Kind, fake: FakeProvider, analyser: Any, messages: tuple[Message, ...], field: str
) -> None:
    with pytest.raises(ValidationError) as info:
        analyser.complete(request(messages=messages), Cancel.after(10))
    assert info.value.field == field
    assert fake.requests == []


def test_bad_configuration_names_the_setting(kind: Kind) -> None:
    cls: Any = OpenAICompatibleAnalyser if kind is OPENAI else OllamaAnalyser
    with pytest.raises(ConfigError, match="RELATA_AI_MODEL"):
        cls(base_url="http://127.0.0.1:1", model=" ")
    setting = "RELATA_OPENAI_BASE_URL" if kind is OPENAI else "RELATA_OLLAMA_URL"
    with pytest.raises(ConfigError, match=setting):
        cls(base_url="ftp://example", model="m")


def test_health_reports_without_raising(kind: Kind, fake: FakeProvider, analyser: Any) -> None:
    assert analyser.health(Cancel.after(10)).ok
    fake.enqueue(Reply.error(500, "broken"))
    health = analyser.health(Cancel.after(10))
    assert not health.ok and health.provider == kind.name


# ---------------------------------------------------------------- the service (ADR 0007)
def _count(metrics: Metrics, name: str, labels: dict[str, str]) -> float:
    return metrics.registry.get_sample_value(name, labels) or 0.0


def test_invalid_content_is_counted_once_and_never_retried(
    kind: Kind, fake: FakeProvider, analyser: Any
) -> None:
    metrics = Metrics()
    service = AnalysisService(
        analyser, limiter=AiCallLimiter(1), metrics=metrics, provider=kind.name
    )
    fake.chat_content = GOOD + " and some chatter"
    with pytest.raises(InvalidModelOutput) as info:
        service.run(ANSWER_TASK, MESSAGES, Cancel.after(10))
    assert info.value.reason == "trailing_content"
    assert len(fake.requests) == 1
    labels = {"task": "generate_answer", "reason": "trailing_content"}
    assert _count(metrics, "relata_model_invalid_output_total", labels) == 1
    ok = {"provider": kind.name, "task": "generate_answer", "outcome": "ok"}
    assert _count(metrics, "relata_model_calls_total", ok) == 1  # the transport succeeded


def test_service_answer_resolves_and_counts_fabricated_citations(
    kind: Kind, fake: FakeProvider, analyser: Any
) -> None:
    metrics = Metrics()
    service = AnalysisService(
        analyser, limiter=AiCallLimiter(1), metrics=metrics, provider=kind.name
    )
    fake.chat_content = json.dumps(
        {
            "answer": "It was signed in Berlin in 2021.",
            "sufficient": True,
            "citations": ["S1", "S7"],
        }
    )
    result = service.answer("Where?", [("S1", "Minutes", "Signed in Berlin.")], Cancel.after(10))
    assert (result.status, result.citations, result.dropped_citations) == ("ok", ("S1",), 1)
    assert _count(metrics, "relata_answer_citations_dropped_total", {}) == 1
    sent = fake.requests[0].json
    assert sent["messages"][0]["role"] == "system"
    assert "Signed in Berlin." in sent["messages"][1]["content"]


def test_model_calls_wait_for_the_shared_ai_slot(
    kind: Kind, fake: FakeProvider, analyser: Any
) -> None:
    limiter = AiCallLimiter(1)
    service = AnalysisService(analyser, limiter=limiter, provider=kind.name)
    cancel = Cancel.after(10)
    with limiter.slot("embedding"):  # another AI call holds the only slot
        threading.Timer(0.1, cancel.cancel).start()
        with pytest.raises(Cancelled):
            service.complete(ANSWER_TASK, MESSAGES, cancel)
    assert fake.requests == []  # never reached the provider without a slot


def test_disabled_service_reports_disabled_for_every_task() -> None:
    service = build_analysis(
        Settings(analysis_enabled=False, ai_provider="openai", ai_model="m"),
        limiter=AiCallLimiter(1),
    )
    assert not service.enabled and service.model_id is None
    with pytest.raises(AnalysisDisabled, match="RELATA_ANALYSIS_ENABLED"):
        service.run(ANSWER_TASK, MESSAGES, Cancel.after(1))
    with pytest.raises(AnalysisDisabled):
        service.answer("q?", [("S1", "t", "x")], Cancel.after(1))
    none = build_analysis(Settings(ai_provider=""), limiter=AiCallLimiter(1))
    assert not none.enabled and "RELATA_AI_PROVIDER" in (none.disabled_reason or "")


def test_factory_builds_the_configured_provider(fake: FakeProvider) -> None:
    for provider, url_field in (("openai", "openai_base_url"), ("ollama", "ollama_url")):
        settings = Settings(ai_provider=provider, ai_model="fake-chat", **{url_field: fake.url})
        service = build_analysis(settings, limiter=AiCallLimiter(1))
        try:
            assert service.enabled and service.provider == provider
        finally:
            service.close()
    with pytest.raises(ConfigError, match="RELATA_AI_MODEL"):
        build_analysis(Settings(ai_provider="ollama", ai_model=""), limiter=AiCallLimiter(1))
