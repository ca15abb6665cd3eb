"""Choosing the embedder from settings, and the embedding settings themselves."""

from __future__ import annotations

import pytest

from relata.config.settings import Settings, load_settings
from relata.domain.cancel import Cancel
from relata.domain.errors import ConfigError
from relata.embeddings.factory import build_embedder, known_dimensions
from relata.embeddings.ollama import OllamaEmbedder
from relata.embeddings.onnx import OnnxEmbedder
from relata.embeddings.openai_compatible import OpenAICompatibleEmbedder


def test_the_default_is_the_local_model_loaded_lazily() -> None:
    embedder = build_embedder(Settings())
    assert isinstance(embedder, OnnxEmbedder)
    assert embedder.model_id == "all-MiniLM-L6-v2"
    assert embedder.health(Cancel.never()).detail == "loads on first use"


def test_provider_none_builds_no_embedder() -> None:
    assert build_embedder(Settings(embedding_provider="none")) is None


def test_ollama_defaults_to_a_known_model_and_width() -> None:
    embedder = build_embedder(Settings(embedding_provider="ollama"))
    assert isinstance(embedder, OllamaEmbedder)
    assert (embedder.model_id, embedder.dimensions) == ("nomic-embed-text", 768)
    embedder.close()


def test_openai_uses_the_base_url_key_and_known_width() -> None:
    settings = Settings(
        embedding_provider="openai",
        openai_base_url="http://127.0.0.1:9/v1",
        openai_api_key="sk-abc",
        embedding_model="text-embedding-3-large",
    )
    embedder = build_embedder(settings)
    assert isinstance(embedder, OpenAICompatibleEmbedder)
    assert embedder.dimensions == 3072
    embedder.close()


def test_an_unknown_model_needs_its_width() -> None:
    settings = Settings(embedding_provider="openai", embedding_model="my-embedder")
    with pytest.raises(ConfigError, match="RELATA_EMBEDDING_DIMENSIONS"):
        build_embedder(settings)
    embedder = build_embedder(settings.replace(embedding_dimensions=512))
    assert embedder is not None and embedder.dimensions == 512


@pytest.mark.parametrize(
    ("model", "width"),
    [
        ("nomic-embed-text:latest", 768),
        ("sentence-transformers/all-MiniLM-L6-v2", 384),
        ("mystery", None),
    ],
)
def test_known_widths_ignore_tags_and_namespaces(model: str, width: int | None) -> None:
    assert known_dimensions(model) == width


def test_embedding_settings_are_read_and_validated() -> None:
    s = load_settings(
        {
            "RELATA_EMBEDDING_PROVIDER": "OpenAI",
            "RELATA_OPENAI_BASE_URL": "http://localhost:8000/v1/",
            "RELATA_OPENAI_API_KEY": "sk-secret-value",
            "RELATA_EMBEDDING_BATCH_SIZE": "8",
            "RELATA_EMBEDDING_TIMEOUT": "2.5",
        }
    )
    assert s.embedding_provider == "openai"
    assert s.openai_base_url == "http://localhost:8000/v1"
    assert (s.embedding_batch_size, s.embedding_timeout) == (8, 2.5)
    assert "sk-secret-value" not in repr(s)


@pytest.mark.parametrize(
    ("env", "value"),
    [
        ("RELATA_EMBEDDING_PROVIDER", "bogus"),
        ("RELATA_EMBEDDING_BATCH_SIZE", "0"),
        ("RELATA_EMBEDDING_DIMENSIONS", "-1"),
        ("RELATA_OLLAMA_URL", "ftp://x"),
        ("RELATA_EMBEDDING_TIMEOUT", "0"),
    ],
)
def test_a_bad_embedding_setting_names_the_variable(env: str, value: str) -> None:
    with pytest.raises(ConfigError, match=env):
        load_settings({env: value})
