"""The local embedder's batching rule: batches are bounded by padded tokens, not only by texts.

``plan_batches`` decides which inputs share one ``session.run``; its padded size (rows x the
longest text in the batch) is what onnxruntime allocates for, so that is what stays under
``RELATA_EMBEDDING_BATCH_TOKENS``.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relata.config.settings import load_settings
from relata.domain.errors import ConfigError
from relata.embeddings.onnx import plan_batches


def _plan(lengths: list[int], *, rows: int, tokens: int) -> list[list[int]]:
    batches = plan_batches(np.asarray(lengths, dtype=np.intp), max_rows=rows, max_tokens=tokens)
    return [[int(p) for p in batch] for batch in batches]


def test_full_length_passages_are_cut_by_the_token_budget() -> None:
    # 32 passages of 256 tokens: by texts alone one batch of 8,192 padded tokens.
    batches = _plan([256] * 32, rows=32, tokens=1024)
    assert [len(b) for b in batches] == [4] * 8


def test_short_texts_still_share_a_batch_up_to_the_row_limit() -> None:
    batches = _plan([10] * 100, rows=32, tokens=1024)
    assert [len(b) for b in batches] == [32, 32, 32, 4]


def test_a_text_longer_than_the_budget_gets_a_batch_of_its_own() -> None:
    batches = _plan([5, 300, 6, 7], rows=32, tokens=64)
    assert batches == [[0, 2, 3], [1]]


def test_batches_run_shortest_first_and_pad_among_similar_lengths() -> None:
    lengths = [50, 1, 40, 2, 30, 3, 20, 4]
    batches = _plan(lengths, rows=32, tokens=64)
    longest = [max(lengths[p] for p in b) for b in batches]
    assert longest == sorted(longest) and longest[0] == 4
    assert batches[0] == [1, 3, 5, 7]  # the four short ones, in input order among equals


@settings(max_examples=300, deadline=None)
@given(
    lengths=st.lists(st.integers(min_value=1, max_value=512), max_size=300),
    rows=st.integers(min_value=1, max_value=64),
    tokens=st.integers(min_value=1, max_value=8192),
)
def test_no_batch_exceeds_its_bounds_and_every_input_is_in_exactly_one(
    lengths: list[int], rows: int, tokens: int
) -> None:
    batches = _plan(lengths, rows=rows, tokens=tokens)
    positions = [p for b in batches for p in b]
    assert sorted(positions) == list(range(len(lengths)))
    for batch in batches:
        assert 1 <= len(batch) <= rows
        padded = len(batch) * max(lengths[p] for p in batch)
        assert padded <= tokens or len(batch) == 1  # only a lone over-long text may exceed
    # Greedy: a batch stops only because the next text would break a bound.
    for batch, following in itertools.pairwise(batches):
        grown = [*batch, following[0]]
        assert len(grown) > rows or len(grown) * max(lengths[p] for p in grown) > tokens


def test_the_token_budget_is_a_setting_with_a_measured_default() -> None:
    assert load_settings({}).embedding_batch_tokens == 1024
    assert load_settings({"RELATA_EMBEDDING_BATCH_TOKENS": "4096"}).embedding_batch_tokens == 4096


@pytest.mark.parametrize("value", ["0", "15", "lots"])
def test_a_bad_token_budget_names_the_variable(value: str) -> None:
    with pytest.raises(ConfigError, match="RELATA_EMBEDDING_BATCH_TOKENS"):
        load_settings({"RELATA_EMBEDDING_BATCH_TOKENS": value})
