"""``OllamaAnalyser.stream`` over a real socket: Ollama's ``/api/chat`` with ``"stream": true``
answers JSON Lines (``application/x-ndjson``), written here by a real local HTTP server in
Ollama's wire format (tests.support.fake_provider; there is no Ollama server offline, so this
checks the wire format as documented, not a model). The rules of the one safe HTTP path hold
for this stream too (redirects refused, size and line length bounded, cancellation honoured),
plus the idle timeout, the whole-stream timeout and the end-of-stream rule."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator

import pytest

from relata.analysis.ollama import OllamaAnalyser, stream_line
from relata.domain.cancel import Cancel, Cancelled
from relata.domain.errors import Permanent
from relata.domain.ports import CompletionRequest, Message, StreamingAnalyser
from relata.providers.http import ResponseTooLarge
from relata.providers.retry import MalformedResponse, ProviderUnreachable, StatusError
from relata.providers.stream import NdjsonParser
from tests.support.fake_provider import FakeProvider, Reply

CHAT = "/api/chat"
CONTENT = '{"answer": "Twelve turbines [S1].", "sufficient": true, "citations": ["S1"]}'
REQUEST = CompletionRequest(messages=(Message("user", "How many turbines?"),), max_tokens=64)
PIECES = -(-len(CONTENT) // 4)


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    with FakeProvider(chat_content=CONTENT, stream_piece=4) as server:
        yield server


def analyser(fake: FakeProvider, **kw: object) -> OllamaAnalyser:
    options: dict[str, object] = {"timeout": 5.0, "stream_idle_timeout": 1.0, **kw}
    return OllamaAnalyser(base_url=fake.url, model="fake-chat", **options)  # type: ignore[arg-type]


def test_the_content_arrives_in_pieces_that_join_to_the_whole(fake: FakeProvider) -> None:
    a = analyser(fake)
    assert isinstance(a, StreamingAnalyser)
    pieces = list(a.stream(REQUEST, Cancel.never()))
    assert len(pieces) == PIECES
    assert "".join(pieces) == CONTENT
    [sent] = fake.requests_to(CHAT)
    assert sent.json["stream"] is True and sent.headers["accept"] == "application/x-ndjson"
    assert sent.json["options"]["num_predict"] == 64


def test_lines_split_across_reads_are_joined(fake: FakeProvider) -> None:
    fake.enqueue(Reply(path=CHAT, trickle=0.001))
    assert "".join(analyser(fake).stream(REQUEST, Cancel.never())) == CONTENT


def test_a_redirect_is_refused(fake: FakeProvider) -> None:
    fake.enqueue(Reply.redirect("http://elsewhere.invalid/", path=CHAT))
    with pytest.raises(Permanent, match="redirect refused"):
        list(analyser(fake).stream(REQUEST, Cancel.never()))


def test_an_error_status_carries_ollamas_message(fake: FakeProvider) -> None:
    fake.enqueue(Reply(path=CHAT, status=404, json={"error": "model 'fake-chat' not found"}))
    with pytest.raises(StatusError, match="model 'fake-chat' not found") as caught:
        list(analyser(fake).stream(REQUEST, Cancel.never()))
    assert caught.value.status == 404


def test_a_stream_past_the_size_bound_is_refused(fake: FakeProvider) -> None:
    with pytest.raises(ResponseTooLarge):
        list(analyser(fake, max_response_bytes=600).stream(REQUEST, Cancel.never()))


def test_a_reply_that_is_not_json_lines_is_malformed(fake: FakeProvider) -> None:
    fake.enqueue(Reply(path=CHAT, json={"message": {"content": CONTENT}, "done": True}))
    with pytest.raises(MalformedResponse, match="not application/x-ndjson"):
        list(analyser(fake).stream(REQUEST, Cancel.never()))


def test_a_stream_that_ends_without_done_is_malformed(fake: FakeProvider) -> None:
    fake.enqueue(Reply(path=CHAT, cut_after=2))
    pieces: list[str] = []
    with pytest.raises(MalformedResponse, match="without done"):
        pieces.extend(analyser(fake).stream(REQUEST, Cancel.never()))
    assert "".join(pieces) == CONTENT[:8]


def test_a_silent_server_fails_after_the_idle_timeout(fake: FakeProvider) -> None:
    fake.enqueue(Reply(path=CHAT, pause=3.0))
    start = time.monotonic()
    with pytest.raises(ProviderUnreachable, match=r"sent nothing for 0\.5s"):
        list(analyser(fake, stream_idle_timeout=0.5).stream(REQUEST, Cancel.never()))
    assert time.monotonic() - start < 2.5


def test_the_whole_stream_is_bounded_by_the_request_timeout(fake: FakeProvider) -> None:
    """Each line comes before the idle timeout, but the stream as a whole takes too long."""
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
    assert 0 < len(got) < PIECES


def test_a_line_past_its_bound_is_malformed() -> None:
    parser = NdjsonParser(max_line_bytes=16)
    assert parser.feed(b'{"a": 1}\n{"b"') == ['{"a": 1}']
    assert parser.feed(b": 2}\r\n\n") == ['{"b": 2}']  # CRLF, and a blank line skipped
    assert parser.feed(b'{"c": 3}') == [] and parser.finish() == ['{"c": 3}']
    with pytest.raises(MalformedResponse, match="longer than 16 bytes"):
        parser.feed(b'{"long": "' + b"x" * 8)
        parser.feed(b"x" * 8)


def test_each_line_is_read_for_its_content_its_end_or_its_error() -> None:
    def line(**doc: object) -> str:
        return json.dumps(doc)

    assert stream_line(line(message={"role": "assistant", "content": "Tw"}, done=False)) == (
        "Tw",
        False,
    )
    assert stream_line(line(message={"content": ""}, done=True, eval_count=3)) == ("", True)
    assert stream_line(line(done=True)) == ("", True)
    with pytest.raises(Permanent, match="out of memory"):
        stream_line(line(error="out of memory"))
    for bad in ("not json", "[1]", line(done=False), line(message={"content": 7})):
        with pytest.raises(MalformedResponse):
            stream_line(bad)
