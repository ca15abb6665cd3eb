"""A small fake of the ``Embedder`` port for storage and pipeline tests: deterministic
vectors of any width without loading a model, and a record of what it was asked."""

from __future__ import annotations

import hashlib
import math
import threading
from collections.abc import Sequence

from relata.domain.cancel import Cancel


class FakeEmbedder:
    """Hashed bag-of-words vectors (similar texts get similar vectors), L2-normalised, never
    all zeros. ``calls`` records the size of every ``embed`` call; ``texts`` every input."""

    provider = "fake"

    def __init__(self, dimensions: int = 384, model_id: str = "fake-embedder") -> None:
        self._dimensions = dimensions
        self._model_id = model_id
        self.calls: list[int] = []
        self.texts: list[str] = []
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dimensions(self) -> int:
        return self._dimensions

    def embed(self, texts: Sequence[str], cancel: Cancel) -> list[list[float]]:
        cancel.raise_if_cancelled()
        with self._lock:
            self.calls.append(len(texts))
            self.texts.extend(texts)
        return [self._vector(t) for t in texts]

    def _vector(self, text: str) -> list[float]:
        v = [0.0] * self._dimensions
        v[0] = 0.1  # never all zeros, whatever the text
        for word in text.lower().split():
            h = int.from_bytes(hashlib.sha256(word.encode()).digest()[:8], "big")
            v[h % self._dimensions] += 1.0
        norm = math.sqrt(sum(x * x for x in v))
        return [x / norm for x in v]
