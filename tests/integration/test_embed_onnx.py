"""The local ONNX embedder: it reproduces the reference model and is configurable.

The reference vectors in tests/fixtures/embeddings_reference.json were computed with the
original all-MiniLM-L6-v2 (sentence-transformers on PyTorch, full precision); how is recorded
in the file and in scripts/make_reference_embeddings.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from relata.domain.cancel import Cancel
from relata.domain.errors import ConfigError, Permanent
from relata.embeddings.onnx import OnnxEmbedder, default_model_files

REFERENCE = Path(__file__).resolve().parents[1] / "fixtures" / "embeddings_reference.json"


@pytest.fixture(scope="module")
def onnx() -> OnnxEmbedder:
    return OnnxEmbedder(batch_size=4)


def test_reproduces_the_reference_model(onnx: OnnxEmbedder) -> None:
    ref = json.loads(REFERENCE.read_text(encoding="utf-8"))
    assert ref["max_seq_length"] == onnx.max_tokens == 256
    got = onnx.embed_array(ref["sentences"], Cancel.never())
    want = np.asarray(ref["vectors"], dtype=np.float32)
    assert got.shape == want.shape == (len(ref["sentences"]), 384)
    cosine = (got * want).sum(axis=1) / np.linalg.norm(want, axis=1)
    assert np.all(cosine >= 0.99), cosine
    # And each sentence is closest to its own reference, not merely close to all of them.
    assert list((got @ want.T).argmax(axis=1)) == list(range(len(want)))


def test_vectors_are_unit_length_float32(onnx: OnnxEmbedder) -> None:
    arr = onnx.embed_array(["one", "two three four"], Cancel.never())
    assert arr.dtype == np.float32 and arr.shape == (2, 384)
    assert np.allclose(np.linalg.norm(arr, axis=1), 1.0, atol=1e-5)
    assert np.allclose(onnx.embed(["one", "two three four"], Cancel.never()), arr)


def test_long_texts_are_truncated_to_the_token_limit(onnx: OnnxEmbedder) -> None:
    batches = onnx.tokenize(["word " * 1000, "short"])
    widths = sorted(feeds["input_ids"].shape[1] for _, feeds in batches)
    assert widths[-1] == 256


def test_batches_are_grouped_by_length(onnx: OnnxEmbedder) -> None:
    texts = ["x " * n for n in (50, 1, 40, 2, 30, 3, 20, 4)]
    batches = onnx.tokenize(texts)
    widths = [feeds["input_ids"].shape[1] for _, feeds in batches]
    assert widths == sorted(widths) and widths[0] < 10  # short ones padded only among themselves
    positions = sorted(int(p) for pos, _ in batches for p in pos)
    assert positions == list(range(len(texts)))


def test_a_configured_width_that_differs_is_refused_naming_the_fix() -> None:
    embedder = OnnxEmbedder(dimensions=768)
    with pytest.raises(Permanent, match="RELATA_EMBEDDING_DIMENSIONS=384"):
        embedder.embed(["x"], Cancel.never())


def test_another_model_dir_is_used_with_its_own_settings(tmp_path: Path) -> None:
    model, tokenizer = default_model_files()
    (tmp_path / "model.onnx").symlink_to(model)
    (tmp_path / "tokenizer.json").symlink_to(tokenizer)
    (tmp_path / "sentence_bert_config.json").write_text('{"max_seq_length": 16}')
    embedder = OnnxEmbedder(tmp_path, model_id="my-minilm", batch_size=2)
    assert embedder.model_id == "my-minilm" and embedder.max_tokens == 16
    assert embedder.dimensions == 384
    batches = embedder.tokenize(["word " * 100])
    assert batches[0][1]["input_ids"].shape == (1, 16)
    assert OnnxEmbedder(tmp_path).model_id == tmp_path.name


def test_cls_pooling_is_taken_from_the_pooling_config(tmp_path: Path) -> None:
    model, tokenizer = default_model_files()
    (tmp_path / "model.onnx").symlink_to(model)
    (tmp_path / "tokenizer.json").symlink_to(tokenizer)
    (tmp_path / "1_Pooling").mkdir()
    (tmp_path / "1_Pooling" / "config.json").write_text('{"pooling_mode_cls_token": true}')
    text = ["Aspirin reduces the risk of heart attack."]
    cls = OnnxEmbedder(tmp_path).embed_array(text, Cancel.never())
    mean = OnnxEmbedder().embed_array(text, Cancel.never())
    assert np.allclose(np.linalg.norm(cls), 1.0, atol=1e-5)
    assert float((cls * mean).sum()) < 0.99  # a different pooling, so a different vector


def test_a_model_dir_without_the_files_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="RELATA_EMBEDDING_MODEL_DIR"):
        OnnxEmbedder(tmp_path)


def _passages() -> list[str]:
    """Texts from a few tokens to past the 256-token truncation, all different (also in
    their first 256 tokens: each starts with its number)."""
    words = ["aspirin", "reduces", "the", "risk", "of", "heart", "attack", "in", "adults"]
    return [
        f"passage {n}: " + " ".join(words[(n + k) % len(words)] for k in range(n * 7 + 1))
        for n in range(40)
    ]


def test_batches_stay_within_the_token_budget() -> None:
    embedder = OnnxEmbedder(batch_size=32, batch_tokens=600)
    texts = _passages()
    batches = embedder.tokenize(texts)
    for positions, feeds in batches:
        rows, width = feeds["input_ids"].shape
        assert rows == len(positions)
        assert rows * width <= 600 or rows == 1
    full = [len(pos) for pos, feeds in batches if feeds["input_ids"].shape[1] == 256]
    assert set(full) <= {1, 2} and 2 in full  # 2 x 256 fits in 600 tokens, 3 x 256 does not
    assert sorted(int(p) for pos, _ in batches for p in pos) == list(range(len(texts)))


def test_a_text_over_the_token_budget_runs_alone() -> None:
    embedder = OnnxEmbedder(batch_size=32, batch_tokens=100)
    batches = embedder.tokenize(["short one", "word " * 500, "short two"])
    shapes = [feeds["input_ids"].shape for _, feeds in batches]
    assert shapes[-1] == (1, 256) and [int(p) for p in batches[-1][0]] == [1]
    assert all(rows * width <= 100 for rows, width in shapes[:-1])


def test_token_budgeted_batches_give_the_same_vectors_in_input_order() -> None:
    texts = _passages()
    cancel = Cancel.never()
    by_texts = OnnxEmbedder(batch_size=32, batch_tokens=1 << 20).embed_array(texts, cancel)
    by_tokens = OnnxEmbedder(batch_size=32, batch_tokens=600).embed_array(texts, cancel)
    alone = OnnxEmbedder(batch_size=1).embed_array(texts, cancel)
    for got in (by_tokens, by_texts):
        cosine = (got * alone).sum(axis=1)
        assert np.all(cosine >= 0.9999), cosine.min()
    # Input order, not batch order: each row is nearest to its own text's vector.
    assert list((by_tokens @ alone.T).argmax(axis=1)) == list(range(len(texts)))
