"""``relata.providers.http`` on a real local server: the plumbing every provider adapter uses.

The embedders' contract suite covers these paths through the adapters; here the helpers are
exercised directly, including the chat shapes the language-model analysers use.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from relata.domain.cancel import Cancel, Cancelled
from relata.domain.errors import Permanent
from relata.providers.http import get_json, make_client, post_json, safe_url
from relata.providers.retry import MalformedResponse, StatusError
from tests.support.fake_provider import FakeProvider, Reply


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    with FakeProvider(chat_content=lambda doc: f"echo {len(doc['messages'])}") as server:
        yield server


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with make_client(5.0) as c:
        yield c


def _post(client: httpx.Client, url: str, **kw: object) -> object:
    options: dict[str, object] = {
        "op": "test",
        "headers": {},
        "max_bytes": 1_000_000,
        "cancel": Cancel.never(),
    }
    options.update(kw)
    return post_json(client, url, {"model": "fake-chat", "messages": [{}, {}]}, **options)  # type: ignore[arg-type]


def test_the_client_refuses_redirects_and_bounds_every_phase() -> None:
    with make_client(7.0) as c:
        assert c.follow_redirects is False
        assert (c.timeout.connect, c.timeout.read, c.timeout.write, c.timeout.pool) == (
            7.0,
            7.0,
            7.0,
            7.0,
        )


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/api/chat"])
def test_chat_answers_are_decoded(fake: FakeProvider, client: httpx.Client, path: str) -> None:
    doc = _post(client, fake.url + path)
    assert isinstance(doc, dict)
    content = doc["choices"][0]["message"] if "choices" in doc else doc["message"]
    assert content["content"] == "echo 2"
    assert fake.requests[0].json["model"] == "fake-chat"


def test_get_json_reads_a_model_list(fake: FakeProvider, client: httpx.Client) -> None:
    doc = get_json(
        client,
        fake.url + "/v1/models",
        op="t",
        headers={},
        max_bytes=10_000,
        cancel=Cancel.never(),
    )
    assert [m["id"] for m in doc["data"]] == ["fake-embed", "fake-chat"]


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (Reply(status=400, json={"error": {"message": "bad schema", "type": "x"}}), "bad schema"),
        (Reply(status=404, json={"error": "model 'x' not found, try pulling it"}), "not found"),
        (Reply(status=422, json={"message": "unprocessable"}), "unprocessable"),
        (Reply(status=500, body=b"<html>Internal   Server\nError</html>"), "Internal Server Error"),
    ],
)
def test_a_status_error_carries_the_providers_own_message(
    fake: FakeProvider, client: httpx.Client, reply: Reply, message: str
) -> None:
    fake.enqueue(reply)
    with pytest.raises(StatusError) as info:
        _post(client, fake.url + "/v1/chat/completions", op="openai chat")
    assert info.value.status == reply.status and info.value.op == "openai chat"
    assert message in info.value.body and message in str(info.value)


def test_a_long_error_body_is_truncated(fake: FakeProvider, client: httpx.Client) -> None:
    fake.enqueue(Reply(status=500, body=b"x" * 200_000))
    with pytest.raises(StatusError) as info:
        _post(client, fake.url + "/api/chat")
    assert len(info.value.body) <= 301


def test_retry_after_is_read_from_a_429(fake: FakeProvider, client: httpx.Client) -> None:
    fake.enqueue(Reply.error(429, "slow down", headers={"Retry-After": "3"}))
    with pytest.raises(StatusError) as info:
        _post(client, fake.url + "/api/chat")
    assert info.value.retry_after == 3.0


def test_invalid_json_is_a_malformed_response(fake: FakeProvider, client: httpx.Client) -> None:
    fake.enqueue(Reply.malformed(b"<html>proxy login</html>"))
    with pytest.raises(MalformedResponse, match="invalid JSON"):
        _post(client, fake.url + "/api/chat")


def test_a_redirect_is_permanent_and_not_followed(fake: FakeProvider, client: httpx.Client) -> None:
    fake.enqueue(Reply.redirect("http://169.254.169.254/latest/meta-data"))
    with pytest.raises(Permanent, match="redirect refused"):
        _post(client, fake.url + "/api/chat")
    assert len(fake.requests) == 1


def test_a_body_over_the_limit_is_refused(fake: FakeProvider, client: httpx.Client) -> None:
    fake.enqueue(Reply.oversized(5_000, chunked=True))
    with pytest.raises(Permanent, match="too large"):
        _post(client, fake.url + "/api/chat", max_bytes=1_000)


def test_the_deadline_of_the_cancel_bounds_the_request(
    fake: FakeProvider, client: httpx.Client
) -> None:
    fake.enqueue(Reply.slow(30))
    with pytest.raises(Cancelled):
        _post(client, fake.url + "/api/chat", cancel=Cancel.after(0.2))


def test_safe_url_drops_credentials_and_query() -> None:
    url = "https://user:pw@api.example.com:8443/v1/embeddings?key=abc#frag"
    assert safe_url(url) == "https://api.example.com:8443/v1/embeddings"
