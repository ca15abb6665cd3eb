"""The Embedder contract, run against every adapter.

The first group runs against all three adapters (local ONNX, Ollama, OpenAI-compatible):
one vector per input, in input order, of the declared width; cancellation; no content in
logs. The second group is the HTTP half of the contract, run against both HTTP adapters on a
real local server (tests/support/fake_provider.py): bounded retries, transient versus
permanent failures, redirects and oversized answers refused, the API key absent from errors.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from relata.concurrency import AiCallLimiter
from relata.domain.cancel import Cancel, Cancelled
from relata.domain.errors import Permanent, Unavailable
from relata.domain.ports import Embedder, HealthChecker
from relata.embeddings.ollama import OllamaEmbedder
from relata.embeddings.onnx import OnnxEmbedder
from relata.embeddings.openai_compatible import OpenAICompatibleEmbedder
from relata.embeddings.remote import HttpEmbedder
from relata.providers.retry import RetriesExhausted, RetryPolicy
from tests.support.fake_provider import FakeProvider, Reply, fake_vector

DIMS = 8
FAST_RETRY = RetryPolicy(max_attempts=4, base_delay=0.001, max_delay=0.005)
SECRET_TEXT = "patient 4711 has a confidential diagnosis"
TEXTS = [
    "a",
    "The quick brown fox jumps over the lazy dog near the river bank at dawn.",
    "b c",
    SECRET_TEXT,
    "Mitochondria are the powerhouse of the cell. " * 5,
    "",
    "short one",
]
PATHS = {"ollama": "/api/embed", "openai": "/v1/embeddings"}


@dataclass
class Http:
    """One HTTP adapter under test, with its fake server."""

    kind: str
    fake: FakeProvider

    @property
    def path(self) -> str:
        return PATHS[self.kind]

    def make(self, **overrides: Any) -> HttpEmbedder:
        kwargs: dict[str, Any] = {
            "model": "fake-embed",
            "dimensions": DIMS,
            "batch_size": 4,
            "timeout": 5.0,
            "retry": FAST_RETRY,
        }
        kwargs.update(overrides)
        if self.kind == "ollama":
            return OllamaEmbedder(self.fake.url, **kwargs)
        return OpenAICompatibleEmbedder(self.fake.url + "/v1/", **kwargs)


@pytest.fixture(scope="module")
def onnx() -> OnnxEmbedder:
    return OnnxEmbedder(batch_size=3)


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    with FakeProvider(dimensions=DIMS) as server:
        yield server


@pytest.fixture(params=["ollama", "openai"])
def http(request: pytest.FixtureRequest, fake: FakeProvider) -> Http:
    return Http(request.param, fake)


@pytest.fixture(params=["onnx", "ollama", "openai"])
def any_embedder(request: pytest.FixtureRequest, onnx: OnnxEmbedder) -> Iterator[Embedder]:
    if request.param == "onnx":
        yield onnx
        return
    with FakeProvider(dimensions=DIMS) as server:
        embedder = Http(request.param, server).make()
        yield embedder
        embedder.close()


def _expected(embedder: Embedder, texts: list[str]) -> list[list[float]]:
    if isinstance(embedder, OnnxEmbedder):
        return [embedder.embed([t], Cancel.never())[0] for t in texts]
    return [fake_vector(t, DIMS) for t in texts]


# ---------------------------------------------------------------- every adapter
def test_one_vector_per_input_in_input_order(any_embedder: Embedder) -> None:
    vectors = any_embedder.embed(TEXTS, Cancel.never())
    assert len(vectors) == len(TEXTS)
    got = np.asarray(vectors)
    want = np.asarray(_expected(any_embedder, TEXTS))
    # Each vector pairs with its own text: the best match of row i is row i of the expected.
    similarity = got @ want.T / np.outer(np.linalg.norm(got, axis=1), np.linalg.norm(want, axis=1))
    assert list(similarity.argmax(axis=1)) == list(range(len(TEXTS)))
    assert np.all(np.diag(similarity) > 0.999)


def test_vectors_have_the_declared_width(any_embedder: Embedder) -> None:
    vectors = any_embedder.embed(["one", "two"], Cancel.never())
    assert any_embedder.dimensions > 0
    assert {len(v) for v in vectors} == {any_embedder.dimensions}
    assert all(isinstance(x, float) for x in vectors[0])
    assert any_embedder.model_id


def test_no_input_gives_no_vectors(any_embedder: Embedder) -> None:
    assert any_embedder.embed([], Cancel.never()) == []


def test_a_cancelled_call_raises_cancelled(any_embedder: Embedder) -> None:
    cancel = Cancel()
    cancel.cancel("lease lost")
    with pytest.raises(Cancelled):
        any_embedder.embed(TEXTS, cancel)


def test_health_is_reported(any_embedder: Embedder) -> None:
    assert isinstance(any_embedder, HealthChecker)
    health = any_embedder.health(Cancel.never())
    assert health.ok, health.detail
    assert health.model == any_embedder.model_id


def test_no_document_content_in_logs(
    any_embedder: Embedder, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    any_embedder.embed([SECRET_TEXT, "another text"], Cancel.never())
    assert "confidential" not in caplog.text
    assert all("confidential" not in repr(r.__dict__) for r in caplog.records)


def test_cancelling_a_local_run_in_flight_stops_it(onnx: OnnxEmbedder) -> None:
    long_texts = [
        f"{i} " + "Mitochondrial DNA mutations accumulate with age. " * 40 for i in range(600)
    ]
    cancel = Cancel()
    threading.Timer(0.3, cancel.cancel, args=("lease lost",)).start()
    started = time.monotonic()
    with pytest.raises(Cancelled):
        onnx.embed(long_texts, cancel)  # about half a minute of work if it were not stopped
    assert time.monotonic() - started < 10


# ---------------------------------------------------------------- HTTP adapters
def test_cancelling_a_slow_request_returns_promptly(http: Http) -> None:
    http.fake.enqueue(Reply.slow(30))
    embedder = http.make(timeout=60)
    cancel = Cancel()
    threading.Timer(0.2, cancel.cancel, args=("lease lost",)).start()
    started = time.monotonic()
    with pytest.raises(Cancelled):
        embedder.embed(["x"], cancel)
    assert time.monotonic() - started < 5  # not the 30 s the server would take
    assert len(http.fake.requests) == 1


def test_a_deadline_bounds_the_request(http: Http) -> None:
    http.fake.enqueue(Reply.slow(30))
    with pytest.raises(Cancelled):
        http.make(timeout=60).embed(["x"], Cancel.after(0.3))


def test_a_request_slower_than_the_timeout_is_retried(http: Http) -> None:
    http.fake.enqueue(Reply.slow(30, path=http.path))
    vectors = http.make(timeout=1.0).embed(["x"], Cancel.never())
    assert vectors == [fake_vector("x", DIMS)]
    assert len(http.fake.requests) == 2


def test_a_trickling_answer_is_cut_off_by_the_timeout(http: Http) -> None:
    # About 13 pieces of 16 bytes, 0.25 s apart: every read is quick, the whole is not.
    http.fake.enqueue(*[Reply(path=http.path, trickle=0.25)] * 2)
    started = time.monotonic()
    with pytest.raises(RetriesExhausted, match="did not complete"):
        http.make(timeout=1.0, retry=RetryPolicy(max_attempts=2, base_delay=0.001)).embed(
            ["x"], Cancel.never()
        )
    assert time.monotonic() - started < 6  # each attempt stopped at ~1 s, not ~3 s


@pytest.mark.parametrize("statuses", [[503], [429, 500], [502, 503, 504]])
def test_transient_failures_are_retried_then_succeed(http: Http, statuses: list[int]) -> None:
    http.fake.enqueue(*[Reply.error(s) for s in statuses])
    vectors = http.make().embed(["x", "y"], Cancel.never())
    assert vectors == [fake_vector("x", DIMS), fake_vector("y", DIMS)]
    assert len(http.fake.requests) == len(statuses) + 1


def test_retries_are_bounded(http: Http) -> None:
    http.fake.enqueue(*[Reply.error(503, "overloaded")] * 10)
    with pytest.raises(RetriesExhausted) as info:
        http.make().embed(["x"], Cancel.never())
    assert len(http.fake.requests) == FAST_RETRY.max_attempts
    assert isinstance(info.value, Unavailable)
    assert "overloaded" in str(info.value)


@pytest.mark.parametrize("status", [400, 404])
def test_client_errors_are_permanent_at_once(http: Http, status: int) -> None:
    http.fake.enqueue(Reply.error(status, "model 'fake-embed' not found"))
    with pytest.raises(Permanent, match="not found"):
        http.make().embed(["x"], Cancel.never())
    assert len(http.fake.requests) == 1


@pytest.mark.parametrize(
    "reply",
    [
        Reply.malformed(),
        Reply(json={"unexpected": True}),
        Reply(json={"embeddings": "no", "data": 1}),
    ],
)
def test_a_malformed_envelope_is_retried(http: Http, reply: Reply) -> None:
    http.fake.enqueue(reply)
    assert http.make().embed(["x"], Cancel.never()) == [fake_vector("x", DIMS)]
    assert len(http.fake.requests) == 2


@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_redirects_are_refused(http: Http, status: int) -> None:
    http.fake.enqueue(Reply.redirect(http.fake.url + "/elsewhere", status=status))
    with pytest.raises(Permanent, match="redirect refused"):
        http.make().embed(["x"], Cancel.never())
    assert [r.path for r in http.fake.requests] == [http.path]  # never followed


@pytest.mark.parametrize("chunked", [False, True])
def test_an_oversized_answer_is_refused(http: Http, chunked: bool) -> None:
    http.fake.enqueue(Reply.oversized(200_000, chunked=chunked))
    with pytest.raises(Permanent, match="too large"):
        http.make(max_response_bytes=50_000).embed(["x"], Cancel.never())
    assert len(http.fake.requests) == 1


def test_too_few_vectors_is_permanent(http: Http) -> None:
    def drop_one(doc: Any) -> Any:
        key = "embeddings" if "embeddings" in doc else "data"
        doc[key] = doc[key][:-1]
        return doc

    http.fake.enqueue(Reply(transform=drop_one))
    with pytest.raises(Permanent, match="returned 1 vectors for 2 inputs"):
        http.make().embed(["x", "y"], Cancel.never())
    assert len(http.fake.requests) == 1


def test_a_vector_of_another_width_is_refused_naming_the_fix(http: Http) -> None:
    with pytest.raises(Permanent, match="RELATA_EMBEDDING_DIMENSIONS=8") as info:
        http.make(dimensions=384).embed(["x"], Cancel.never())
    assert "re-embed" in str(info.value)
    assert len(http.fake.requests) == 1


def test_texts_are_sent_in_batches_and_reassembled(http: Http) -> None:
    texts = [f"text {i}" for i in range(7)]
    vectors = http.make(batch_size=3).embed(texts, Cancel.never())
    assert vectors == [fake_vector(t, DIMS) for t in texts]
    assert [r.json["input"] for r in http.fake.requests] == [texts[0:3], texts[3:6], texts[6:]]
    assert {r.json["model"] for r in http.fake.requests} == {"fake-embed"}


def test_every_attempt_holds_an_ai_call_slot(http: Http) -> None:
    waits: list[str] = []
    limiter = AiCallLimiter(1, on_wait=lambda kind, _s: waits.append(kind))
    http.fake.enqueue(Reply.error(503))
    http.make(limiter=limiter, batch_size=2).embed(["a", "b", "c"], Cancel.never())
    assert waits == ["embed"] * 3  # two batches, the first tried twice


def test_the_api_key_never_appears_in_errors(http: Http) -> None:
    key = "sk-test-0123456789abcdef"
    http.fake.api_key = "the-right-key"  # the server echoes the wrong key back in its 401
    with pytest.raises(Permanent) as info:
        http.make(api_key=key).embed(["x"], Cancel.never())
    assert http.fake.requests[0].headers["authorization"] == f"Bearer {key}"
    assert _chain_text(info.value) and key not in _chain_text(info.value)

    http.fake.enqueue(*[Reply.error(500, f"upstream rejected Bearer {key}")] * 4)
    http.fake.api_key = key
    with pytest.raises(RetriesExhausted) as exhausted:
        http.make(api_key=key).embed(["x"], Cancel.never())
    assert key not in _chain_text(exhausted.value)


def test_no_authorization_header_without_a_key(http: Http) -> None:
    http.make().embed(["x"], Cancel.never())
    assert "authorization" not in http.fake.requests[0].headers


def test_failures_log_no_content_or_key(http: Http, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    key = "sk-test-0123456789abcdef"
    http.fake.enqueue(Reply.error(503, f"busy with {SECRET_TEXT}"), Reply.malformed())
    http.make(api_key=key).embed([SECRET_TEXT], Cancel.never())
    assert "retrying" in caplog.text  # the retries are visible, their payloads are not
    for record in caplog.records:
        dumped = repr(record.__dict__)
        assert "confidential" not in dumped and key not in dumped


def test_unreachable_provider_is_unavailable_not_permanent(http: Http) -> None:
    embedder = http.make()
    http.fake.stop()
    with pytest.raises(RetriesExhausted) as info:
        embedder.embed(["x"], Cancel.never())
    assert isinstance(info.value, Unavailable)


def test_health_reports_an_unreachable_provider_without_raising(http: Http) -> None:
    embedder = http.make()
    http.fake.stop()
    health = embedder.health(Cancel.never())
    assert not health.ok and health.provider == http.kind


def test_ollama_health_says_when_the_model_is_not_pulled(fake: FakeProvider) -> None:
    health = Http("ollama", fake).make(model="nomic-embed-text").health(Cancel.never())
    assert not health.ok and "ollama pull nomic-embed-text" in health.detail


def test_openai_results_are_placed_by_index(fake: FakeProvider) -> None:
    fake.enqueue(Reply(transform=lambda doc: {**doc, "data": doc["data"][::-1]}))
    texts = ["first", "second", "third"]
    vectors = Http("openai", fake).make().embed(texts, Cancel.never())
    assert vectors == [fake_vector(t, DIMS) for t in texts]


@pytest.mark.parametrize(
    "indexes", [[0, 0, 1], [0, 1, 3], [-1, 0, 1], ["0", 1, 2]], ids=["dup", "gap", "neg", "str"]
)
def test_openai_indexes_must_cover_every_input_once(fake: FakeProvider, indexes: list[Any]) -> None:
    def renumber(doc: Any) -> Any:
        for row, index in zip(doc["data"], indexes, strict=True):
            row["index"] = index
        return doc

    fake.enqueue(Reply(transform=renumber))
    with pytest.raises(Permanent, match="indexes"):
        Http("openai", fake).make().embed(["a", "b", "c"], Cancel.never())


@pytest.mark.parametrize("value", [None, "1.0", True, [1.0]])
def test_a_vector_value_that_is_not_a_number_is_malformed(fake: FakeProvider, value: Any) -> None:
    def spoil(doc: Any) -> Any:
        doc["embeddings"][0][3] = value
        return doc

    fake.enqueue(*[Reply(transform=spoil)] * 4)
    with pytest.raises(RetriesExhausted, match="not a finite number"):
        Http("ollama", fake).make().embed(["x"], Cancel.never())


def _chain_text(exc: BaseException) -> str:
    parts: list[str] = []
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        parts.append(f"{type(current).__name__}: {current} {current.args!r}")
        current = current.__cause__ or current.__context__
    return "\n".join(parts)
