"""``OpenAICompatibleAnalyser.stream`` over a real socket (tests.support.fake_provider): the
rules of the one safe HTTP path hold for a stream too (redirects refused, size bounded, keys
redacted, cancellation honoured), plus the idle timeout and the end-of-stream rule."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from relata.analysis.openai_compatible import OpenAICompatibleAnalyser, chunk_content
from relata.domain.cancel import Cancel, Cancelled
from relata.domain.errors import Permanent
from relata.domain.ports import CompletionRequest, Message, StreamingAnalyser
from relata.providers.http import ResponseTooLarge
from relata.providers.retry import MalformedResponse, ProviderUnreachable, StatusError
from tests.support.fake_provider import FakeProvider, Reply

CHAT = "/v1/chat/completions"
CONTENT = '{"answer": "Twelve turbines [S1].", "sufficient": true, "citations": ["S1"]}'
REQUEST = CompletionRequest(messages=(Message("user", "How many turbines?"),), max_tokens=64)
KEY = "sk-streamtestsecret0123456789"


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    with FakeProvider(chat_content=CONTENT, stream_piece=4) as server:
        yield server


def analyser(fake: FakeProvider, **kw: object) -> OpenAICompatibleAnalyser:
    options: dict[str, object] = {"timeout": 5.0, "stream_idle_timeout": 1.0, **kw}
    return OpenAICompatibleAnalyser(
        base_url=fake.url + "/v1",
        model="fake-chat",
        **options,  # type: ignore[arg-type]
    )


def test_the_content_arrives_in_pieces_that_join_to_the_whole(fake: FakeProvider) -> None:
    a = analyser(fake)
    assert isinstance(a, StreamingAnalyser)
    pieces = list(a.stream(REQUEST, Cancel.never()))
    assert len(pieces) == -(-len(CONTENT) // 4)
    assert "".join(pieces) == CONTENT
    [sent] = fake.requests_to(CHAT)
    assert sent.json["stream"] is True and sent.headers["accept"] == "text/event-stream"
    assert sent.json["max_tokens"] == 64


def test_a_redirect_is_refused(fake: FakeProvider) -> None:
    fake.enqueue(Reply.redirect("http://elsewhere.invalid/", path=CHAT))
    with pytest.raises(Permanent, match="redirect refused"):
        list(analyser(fake).stream(REQUEST, Cancel.never()))


def test_an_error_status_carries_the_provider_message_with_the_key_redacted() -> None:
    with FakeProvider(api_key="the-right-key") as fake:
        a = analyser(fake, api_key=KEY)
        with pytest.raises(StatusError) as caught:
            list(a.stream(REQUEST, Cancel.never()))
    assert caught.value.status == 401
    assert KEY not in str(caught.value) and "Incorrect API key" in str(caught.value)


def test_a_stream_past_the_size_bound_is_refused(fake: FakeProvider) -> None:
    with pytest.raises(ResponseTooLarge):
        list(analyser(fake, max_response_bytes=300).stream(REQUEST, Cancel.never()))


def test_a_reply_that_is_not_an_event_stream_is_malformed(fake: FakeProvider) -> None:
    fake.enqueue(Reply(path=CHAT, json={"choices": []}))
    with pytest.raises(MalformedResponse, match="not an event stream"):
        list(analyser(fake).stream(REQUEST, Cancel.never()))


def test_a_stream_that_ends_without_done_is_malformed(fake: FakeProvider) -> None:
    fake.enqueue(Reply(path=CHAT, cut_after=2))
    pieces: list[str] = []
    with pytest.raises(MalformedResponse, match=r"without \[DONE\]"):
        pieces.extend(analyser(fake).stream(REQUEST, Cancel.never()))
    assert "".join(pieces) == CONTENT[:8]


def test_a_silent_provider_fails_after_the_idle_timeout(fake: FakeProvider) -> None:
    fake.enqueue(Reply(path=CHAT, pause=3.0))
    start = time.monotonic()
    with pytest.raises(ProviderUnreachable, match=r"sent nothing for 0\.5s"):
        list(analyser(fake, stream_idle_timeout=0.5).stream(REQUEST, Cancel.never()))
    assert time.monotonic() - start < 2.5


def test_the_whole_stream_is_bounded_by_the_request_timeout(fake: FakeProvider) -> None:
    """Each event comes before the idle timeout, but the stream as a whole takes too long."""
    fake.enqueue(Reply(path=CHAT, pause=0.3))
    start = time.monotonic()
    with pytest.raises(ProviderUnreachable, match=r"did not finish within 1\.0s"):
        list(analyser(fake, timeout=1.0, stream_idle_timeout=0.8).stream(REQUEST, Cancel.never()))
    assert time.monotonic() - start < 2.0


def test_cancelling_stops_a_stream_within_a_moment(fake: FakeProvider) -> None:
    """Cancelled once the first piece has arrived (not on a clock: a loaded machine may take
    a while to start the stream), the stream stops within a moment, mid-way."""
    fake.enqueue(Reply(path=CHAT, pause=0.2))
    cancel = Cancel()
    got: list[str] = []
    timer = threading.Timer(0.1, cancel.cancel)
    cancelled_at = 0.0
    try:
        with pytest.raises(Cancelled):
            for piece in analyser(fake).stream(REQUEST, cancel):
                got.append(piece)
                if len(got) == 1:
                    timer.start()
                    cancelled_at = time.monotonic() + 0.1
    finally:
        timer.cancel()
    assert time.monotonic() - cancelled_at < 0.5
    assert 0 < len(got) < -(-len(CONTENT) // 4)


def test_each_event_is_read_for_its_content_or_its_error() -> None:
    with pytest.raises(Permanent, match="context length exceeded") as caught:
        chunk_content(f'{{"error": {{"message": "context length exceeded {KEY}"}}}}', KEY)
    assert KEY not in str(caught.value)
    with pytest.raises(MalformedResponse):
        chunk_content("not json", KEY)
    with pytest.raises(MalformedResponse):
        chunk_content('{"choices": [{"delta": {"content": 7}}]}', KEY)
    assert chunk_content('{"choices": []}', KEY) == ""  # a usage-only chunk
    assert chunk_content('{"choices": [{"delta": {"role": "assistant"}}]}', KEY) == ""
    assert chunk_content('{"choices": [{"delta": {"content": "Tw"}}]}', KEY) == "Tw"
