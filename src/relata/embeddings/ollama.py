"""``OllamaEmbedder``: embeddings from an Ollama server (``POST /api/embed``).

Request ``{"model": ..., "input": [...]}``; answer ``{"embeddings": [[...], ...]}`` in input
order. The health check lists the pulled models (``GET /api/tags``) and reports whether the
configured one is among them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from relata.embeddings.remote import HttpEmbedder
from relata.embeddings.vectors import checked_vectors
from relata.providers.retry import MalformedResponse


class OllamaEmbedder(HttpEmbedder):
    provider = "ollama"

    def __init__(self, base_url: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._base = base_url.rstrip("/")

    @property
    def _embed_url(self) -> str:
        return f"{self._base}/api/embed"

    @property
    def _health_url(self) -> str:
        return f"{self._base}/api/tags"

    def _body(self, texts: Sequence[str]) -> dict[str, Any]:
        return {"model": self._model, "input": list(texts)}

    def _vectors(self, answer: Any, expected: int) -> list[list[float]]:
        if not isinstance(answer, dict) or "embeddings" not in answer:
            raise MalformedResponse("ollama embed: the answer has no `embeddings` list")
        return checked_vectors(
            answer["embeddings"],
            expected=expected,
            dimensions=self._dimensions,
            model_id=self._model,
            op="ollama embed",
        )

    def _health_detail(self, answer: Any) -> tuple[bool, str]:
        models = answer.get("models") if isinstance(answer, dict) else None
        if not isinstance(models, list):
            return False, "unexpected answer from /api/tags"
        names = {m.get("name") for m in models if isinstance(m, dict)}
        wanted = {self._model, f"{self._model}:latest"}
        if names & wanted:
            return True, "model available"
        return False, f"model {self._model!r} is not pulled (run `ollama pull {self._model}`)"
