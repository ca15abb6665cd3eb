"""The pure pieces of a streamed answer: the event-stream parser (``providers.stream``), the
reader of the reply's ``answer`` field and the hold on citation markers
(``analysis.answer_stream``). Each is fed the same input cut at every position, as a network
may cut it, and must give the same result as the input read whole."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from relata.analysis.answer_stream import AnswerFieldReader, MarkerHold
from relata.providers.retry import MalformedResponse
from relata.providers.stream import SseEvent, SseParser

REFS = ["S1", "S2", "S3"]


def cuts(text: str) -> list[list[str]]:
    """``text`` whole, one character at a time, and cut in two at every position."""
    return [[text], list(text)] + [[text[:i], text[i:]] for i in range(1, len(text))]


def parse(chunks: list[bytes]) -> list[SseEvent]:
    p = SseParser()
    return [e for c in chunks for e in p.feed(c)]


# ---------------------------------------------------------------- the event-stream format
STREAM = (
    b"\xef\xbb\xbf: a comment, ignored\r\n"
    b'data: {"a": 1}\r\n\r\n'
    b"event: delta\ndata: first line\ndata:second line\nid: 7\nretry: 10\n\n"
    b"data\r\r"
    b"data: [DONE]\n\n"
    b"data: unfinished at the end is discarded\n"
)
EXPECTED = [
    SseEvent('{"a": 1}'),
    SseEvent("first line\nsecond line", "delta"),
    SseEvent(""),
    SseEvent("[DONE]"),
]


def test_events_are_parsed_whole_and_however_the_bytes_are_cut() -> None:
    assert parse([STREAM]) == EXPECTED
    assert parse([STREAM[i : i + 1] for i in range(len(STREAM))]) == EXPECTED
    for i in range(1, len(STREAM)):
        assert parse([STREAM[:i], STREAM[i:]]) == EXPECTED, i


def test_an_event_with_no_data_is_not_dispatched() -> None:
    assert parse([b"event: ping\n\n: keep-alive\n\n"]) == []


def test_a_line_or_an_event_past_its_bound_is_malformed() -> None:
    with pytest.raises(MalformedResponse, match="line longer"):
        SseParser(max_line_bytes=10).feed(b"data: " + b"x" * 20)
    with pytest.raises(MalformedResponse, match="event larger"):
        SseParser(max_event_bytes=10).feed(b"data: 123456\ndata: 123456\n")


def test_invalid_utf8_is_replaced_not_fatal() -> None:
    assert parse([b"data: caf\xc3\n\n"]) == [SseEvent("caf\ufffd")]


# ---------------------------------------------------------------- the answer field
REPLY = json.dumps(
    {
        "citations": ["S1", "answer"],
        "nested": {"answer": "not this one"},
        "answer": 'Twelve "turbines" \\ in 2019 [S1].\nSecond line\tand caf\u00e9 \U0001f32c.',
        "sufficient": True,
    }
)


def test_the_answer_field_is_read_whole_and_however_the_reply_is_cut() -> None:
    expected = json.loads(REPLY)["answer"]
    for pieces in cuts(REPLY):
        reader = AnswerFieldReader()
        assert "".join(reader.feed(p) for p in pieces) == expected, pieces
        assert reader.finished


def test_ascii_escaped_replies_decode_the_same() -> None:
    raw = json.dumps({"answer": "caf\u00e9 \U0001f32c [S1]", "sufficient": True}, ensure_ascii=True)
    assert "\\ud83c\\udf2c" in raw
    for pieces in cuts(raw):
        reader = AnswerFieldReader()
        assert "".join(reader.feed(p) for p in pieces) == "caf\u00e9 \U0001f32c [S1]"


def test_a_lone_surrogate_becomes_a_replacement_character() -> None:
    assert AnswerFieldReader().feed('{"answer": "a\\ud83c b"}') == "a\ufffd b"


def test_a_reply_without_an_answer_field_shows_nothing() -> None:
    reader = AnswerFieldReader()
    assert reader.feed('{"sufficient": false, "citations": ["answer"]}') == ""
    assert not reader.finished


@given(st.text(max_size=60), st.integers(min_value=1, max_value=7))
def test_any_answer_is_read_back_exactly(answer: str, size: int) -> None:
    raw = json.dumps({"answer": answer, "sufficient": True, "citations": []})
    reader = AnswerFieldReader()
    got = "".join(reader.feed(raw[i : i + size]) for i in range(0, len(raw), size))
    # A lone surrogate cannot be shown: it is replaced, as the strict decode would reject it.
    assert got == answer.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


# ---------------------------------------------------------------- citation markers held back
@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("Twelve turbines [S1]. Built in 2019 [S1] [S2].", "Twelve turbines. Built in 2019."),
        ("Invented [S9] and listed [S1, S7].", "Invented and listed."),
        ("Spaces  before a marker go with it [S1] ", "Spaces  before a marker go with it "),
        ("Prose in brackets [sic] and [1] stays.", "Prose in brackets [sic] and [1] stays."),
        ("Nested [a [S2] b] brackets.", "Nested [a  b] brackets."),
        ("Unclosed [S1", "Unclosed [S1"),
        ("A line [S1\nbreak", "A line [S1\nbreak"),
    ],
)
def test_citation_markers_are_held_back_and_prose_is_shown(text: str, shown: str) -> None:
    for pieces in cuts(text):
        hold = MarkerHold(REFS)
        assert "".join(hold.feed(p) for p in pieces) + hold.flush() == shown, pieces


def test_a_marker_is_never_released_before_it_is_known_to_be_prose() -> None:
    hold = MarkerHold(REFS)
    assert hold.feed("It is so [S") == "It is so"
    assert hold.feed("9") == ""
    assert hold.feed("]. Done") == ". Done"


def test_an_overlong_bracket_is_prose_and_released() -> None:
    hold = MarkerHold(REFS)
    long = "[" + "x" * 300
    assert hold.feed(long) + hold.flush() == long
