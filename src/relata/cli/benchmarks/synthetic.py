"""A synthetic corpus for ``relata bench scale``: text and vectors at any size, from a seed.

Nothing here comes from a dataset, so the benchmark can run at a million chunks on any
machine and two runs with one seed write the same corpus. The shape follows what makes
search costly in a real one:

* **Terms** follow Zipf's law (exponent ~1.07, as English text does) over a vocabulary whose
  most frequent words are English function words (the full-text legs' stop words, as in real
  text, where "the" and "of" head the list) and the rest pronounceable made-up words, so
  posting lists range from a few chunks to most of them.
* **Topics**: every chunk belongs to one of ``topics`` topics, each with its own few hundred
  mid-frequency words; about a third of a chunk's words are its topic's. A chunk's vector is
  its topic's centre plus noise (cosine ~0.5-0.7 to the centre), so meaning and words agree
  the way they do in documents, and vectors are clustered as real embeddings are (uniform
  random vectors would make the ANN index's job unrealistically easy or hard).
* **Queries** are made from a target chunk: a few of its topic words and one of its rarer
  words as text, its vector plus noise as the query vector. The target is what a person was
  looking for; the benchmark reports where search ranks it, beside latency.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

ZIPF_EXPONENT = 1.07
WORDS_PER_CHUNK = 140  # ~1,000 characters, the default chunk size
TOPIC_SHARE = 0.35
TOPIC_WORDS = 300
_ONSETS = ("b", "c", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "st")
_VOWELS = ("a", "e", "i", "o", "u", "ai", "ou")
# English function words in rough order of frequency: the head of any English text.
FUNCTION_WORDS = (
    "the", "of", "and", "to", "a", "in", "is", "that", "for", "it", "as", "was", "with", "be",
    "by", "on", "not", "this", "are", "at", "or", "from", "an", "which", "but", "have", "were",
    "their", "has", "been", "they", "its", "these", "there", "into", "such", "then", "if",
)  # fmt: skip
_CODAS = ("", "n", "r", "s", "l", "m", "x", "nd", "rt")

Floats = npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class SyntheticChunk:
    text: str
    topic: int
    vector: Floats


@dataclass(frozen=True, slots=True)
class SyntheticQuery:
    text: str
    vector: Floats
    target: int  # the chunk's index in generation order


def vocabulary(size: int, rng: np.random.Generator) -> list[str]:
    """``size`` distinct words, most frequent first: the function words, then made-up words
    of two or three syllables."""
    words: dict[str, None] = dict.fromkeys(FUNCTION_WORDS[:size])
    while len(words) < size:
        syllables = int(rng.integers(2, 4))
        word = "".join(
            _ONSETS[int(rng.integers(len(_ONSETS)))]
            + _VOWELS[int(rng.integers(len(_VOWELS)))]
            + _CODAS[int(rng.integers(len(_CODAS)))]
            for _ in range(syllables)
        )
        words[word] = None
    return list(words)


class SyntheticCorpus:
    """``chunks`` chunks of ``dimensions``-wide vectors, generated in batches from ``seed``."""

    def __init__(
        self,
        *,
        chunks: int,
        dimensions: int,
        seed: int = 7,
        vocabulary_size: int = 50_000,
        topics: int | None = None,
    ) -> None:
        if chunks < 1 or dimensions < 2:
            raise ValueError("chunks and dimensions must be positive")
        self.chunks = chunks
        self.dimensions = dimensions
        self.seed = seed
        rng = np.random.default_rng(seed)
        self.words = vocabulary(vocabulary_size, rng)
        self._rank = {w: i for i, w in enumerate(self.words)}
        ranks = np.arange(1, vocabulary_size + 1, dtype=np.float64)
        weights = ranks**-ZIPF_EXPONENT
        self._cdf = np.cumsum(weights / weights.sum())
        self.topics = topics or max(20, min(2000, chunks // 500))
        # Topic words from the middle of the distribution: not stop-word-like, not hapaxes.
        lo, hi = vocabulary_size // 50, vocabulary_size // 2
        self._topic_words = rng.integers(lo, hi, size=(self.topics, TOPIC_WORDS))
        centres = rng.standard_normal((self.topics, dimensions)).astype(np.float32)
        self._centres = _normalised(centres)

    def batches(self, size: int = 1000) -> Iterator[list[SyntheticChunk]]:
        """Every chunk in order, ``size`` at a time (the same chunks for the same seed)."""
        rng = np.random.default_rng(self.seed + 1)
        done = 0
        while done < self.chunks:
            n = min(size, self.chunks - done)
            topics = rng.integers(0, self.topics, size=n)
            general = np.searchsorted(self._cdf, rng.random((n, WORDS_PER_CHUNK)))
            pick = rng.integers(0, TOPIC_WORDS, size=(n, WORDS_PER_CHUNK))
            topical = self._topic_words[topics[:, None], pick]
            mask = rng.random((n, WORDS_PER_CHUNK)) < TOPIC_SHARE
            ids = np.where(mask, topical, general)
            noise = rng.standard_normal((n, self.dimensions)).astype(np.float32) * 0.045
            vectors = _normalised(self._centres[topics] + noise)
            words = self.words
            yield [
                SyntheticChunk(
                    text=" ".join(words[int(w)] for w in ids[i]).capitalize() + ".",
                    topic=int(topics[i]),
                    vector=vectors[i],
                )
                for i in range(n)
            ]
            done += n

    def queries(
        self, count: int, chunk_texts: dict[int, str], vectors: Floats
    ) -> list[SyntheticQuery]:
        """``count`` queries about chunks chosen from ``chunk_texts`` (index -> text) with
        ``vectors[index]`` their vectors."""
        rng = np.random.default_rng(self.seed + 2)
        targets = sorted(chunk_texts)
        out: list[SyntheticQuery] = []
        for _ in range(count):
            target = targets[int(rng.integers(len(targets)))]
            words = chunk_texts[target].rstrip(".").lower().split()
            # Rarer words (later in the vocabulary) say more: two of the rarest, two random.
            ranked = sorted(set(words), key=self._rank.__getitem__, reverse=True)
            chosen = ranked[:2] + [words[int(rng.integers(len(words)))] for _ in range(2)]
            noise = rng.standard_normal(self.dimensions).astype(np.float32) * 0.03
            vector = _normalised((vectors[target] + noise)[None, :])[0]
            out.append(SyntheticQuery(" ".join(dict.fromkeys(chosen)), vector, target))
        return out


def _normalised(m: Floats) -> Floats:
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    out: Floats = (m / np.maximum(norms, 1e-12)).astype(np.float32)
    return out
