"""The composition root builds the embedder from settings, cheaply."""

from __future__ import annotations

from pathlib import Path

from relata.bootstrap import build
from relata.config.settings import Settings
from relata.domain.cancel import Cancel
from relata.embeddings.ollama import OllamaEmbedder
from relata.embeddings.onnx import OnnxEmbedder


def _settings(tmp_path: Path, **changes: object) -> Settings:
    return Settings(data_dir=str(tmp_path / "data")).replace(**changes)


def test_the_container_has_the_local_embedder_by_default(tmp_path: Path) -> None:
    container = build(_settings(tmp_path))
    try:
        assert isinstance(container.embedder, OnnxEmbedder)
        # Built, not loaded: the model loads on first use, so start-up stays fast.
        assert container.embedder.health(Cancel.never()).detail == "loads on first use"
    finally:
        container.close()


def test_provider_none_leaves_the_container_without_an_embedder(tmp_path: Path) -> None:
    container = build(_settings(tmp_path, embedding_provider="none"))
    try:
        assert container.embedder is None
    finally:
        container.close()


def test_an_http_embedder_shares_the_containers_ai_call_limit(tmp_path: Path) -> None:
    container = build(_settings(tmp_path, embedding_provider="ollama"))
    try:
        assert isinstance(container.embedder, OllamaEmbedder)
        assert container.embedder._limiter is container.ai_limiter
    finally:
        container.close()
