"""Readable quotations (issue 31): a short quotation is cut only at word boundaries and
always holds the whole conflicting value; related items' reasons use it."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from relata.domain.excerpts import clip_quote
from relata.domain.models import Relationship
from relata.domain.vocabulary import RelationshipType
from relata.relationships.explain import QUOTE_CHARS, evidence_phrases

SENTENCE = (
    "After a long trial period the Sabrewing Array has entered commercial service and "
    "supplies the grid on 2 June 2021, according to the operator, which had planned it "
    "for March 2019 when the consortium first announced the turbines."
)


def _words_whole(clipped: str, text: str) -> None:
    words = set(text.split())
    for w in clipped.strip("…").split():
        assert w in words, (w, clipped)


def test_a_short_quotation_is_shown_whole() -> None:
    assert clip_quote("  The array   began\nin 2019. ", 40) == "The array began in 2019."


def test_the_cut_falls_between_words() -> None:
    clipped = clip_quote(SENTENCE, 60)
    assert clipped.endswith("…") and len(clipped) <= 61
    _words_whole(clipped, SENTENCE)
    assert "comme…" not in clipped and clipped.startswith("After a long")


def test_the_conflicting_value_is_kept_whole_and_words_are_not_cut() -> None:
    at = SENTENCE.index("2 June 2021")
    for limit in (12, 20, 30, 45, 90):
        clipped = clip_quote(SENTENCE, limit, (at, at + len("2 June 2021")))
        assert "2 June 2021" in clipped, (limit, clipped)
        assert clipped.startswith("…") and clipped.endswith("…")
        _words_whole(clipped, SENTENCE)


@settings(max_examples=200, deadline=None)
@given(
    words=st.lists(st.text("abcdefgh", min_size=1, max_size=12), min_size=1, max_size=60),
    limit=st.integers(10, 120),
    data=st.data(),
)
def test_any_window_holds_the_focus_and_only_whole_words(
    words: list[str], limit: int, data: st.DataObject
) -> None:
    text = " ".join(words)
    k = data.draw(st.integers(0, len(words) - 1))
    lo = len(" ".join(words[:k])) + (1 if k else 0)
    hi = lo + len(words[k])
    clipped = clip_quote(text, limit, (lo, hi))
    body = clipped.removeprefix("…").removesuffix("…")
    assert f" {words[k]} " in f" {body} "
    assert f" {body} " in f" {text} "  # a run of whole words of the text


def test_a_related_items_reason_quotes_whole_words() -> None:
    long = "In brief: " + SENTENCE + " " + SENTENCE
    record = {
        "kind": "contradicting_claims",
        "subject_name": "Sabrewing Array",
        "first": {"item": "a", "chunk": None, "start": 0, "end": len(long), "quotation": long},
        "second": {"item": "b", "chunk": None, "start": 0, "end": 5, "quotation": "short"},
    }
    rel = Relationship(
        id="r1",
        workspace_id="w",
        source_id="a",
        target_id="b",
        relationship_type=RelationshipType.CONTRADICTS,
        score=0.9,
        score_version="1",
        dedupe_key="k",
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
        evidence=(record,),
    )
    (phrase,) = evidence_phrases(rel)
    first = phrase.split("“", 1)[1].split("”", 1)[0]
    assert first.endswith("…") and len(first) <= QUOTE_CHARS + 1
    _words_whole(first, long)
