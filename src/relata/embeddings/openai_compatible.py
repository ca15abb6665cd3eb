"""``OpenAICompatibleEmbedder``: any server speaking the OpenAI embeddings API.

``POST {base}/embeddings`` where ``base`` already ends in ``/v1`` (RELATA_OPENAI_BASE_URL);
request ``{"model": ..., "input": [...]}``; answer ``{"data": [{"index": i, "embedding":
[...]}, ...]}``. The API may return results out of order, so they are placed by ``index``;
every index from 0 to n-1 must appear exactly once. The bearer key is sent only when set.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from relata.domain.errors import Permanent
from relata.embeddings.remote import HttpEmbedder
from relata.embeddings.vectors import checked_vectors, count_mismatch
from relata.providers.retry import MalformedResponse

_OP = "openai embed"


class OpenAICompatibleEmbedder(HttpEmbedder):
    provider = "openai"

    def __init__(self, base_url: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._base = base_url.rstrip("/")

    @property
    def _embed_url(self) -> str:
        return f"{self._base}/embeddings"

    @property
    def _health_url(self) -> str:
        return f"{self._base}/models"

    def _body(self, texts: Sequence[str]) -> dict[str, Any]:
        return {"model": self._model, "input": list(texts)}

    def _vectors(self, answer: Any, expected: int) -> list[list[float]]:
        data = answer.get("data") if isinstance(answer, dict) else None
        if not isinstance(data, list):
            raise MalformedResponse(f"{_OP}: the answer has no `data` list")
        if len(data) != expected:
            raise count_mismatch(self._model, len(data), expected)
        ordered: list[Any] = [None] * expected
        for row in data:
            if not isinstance(row, dict) or "embedding" not in row:
                raise MalformedResponse(f"{_OP}: a `data` entry has no `embedding`")
            index = row.get("index")
            if type(index) is not int or not 0 <= index < expected or ordered[index] is not None:
                raise Permanent(
                    f"embedding model {self._model!r} returned indexes that are not each of "
                    f"0..{expected - 1} exactly once"
                )
            ordered[index] = row["embedding"]
        return checked_vectors(
            ordered, expected=expected, dimensions=self._dimensions, model_id=self._model, op=_OP
        )
