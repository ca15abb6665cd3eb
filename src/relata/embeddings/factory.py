"""Choose and build the embedder from settings (``RELATA_EMBEDDING_*``).

``build_embedder`` returns ``None`` for provider ``none``: ingestion then completes without
vectors (the embed stage is recorded as skipped) and search says meaning-based search is
unavailable. Building is cheap: the local model loads on first use and the HTTP adapters
only create a client. A model whose width Relata does not know needs
``RELATA_EMBEDDING_DIMENSIONS``; start-up stops with a ``ConfigError`` saying so.
"""

from __future__ import annotations

from relata.concurrency import AiCallLimiter
from relata.config.settings import Settings
from relata.domain.errors import ConfigError
from relata.domain.ports import Embedder
from relata.embeddings.ollama import OllamaEmbedder
from relata.embeddings.onnx import OnnxEmbedder
from relata.embeddings.openai_compatible import OpenAICompatibleEmbedder

DEFAULT_MODELS = {
    "ollama": "nomic-embed-text",
    "openai": "text-embedding-3-small",
}

# Native widths of common embedding models, so the usual choices need no
# RELATA_EMBEDDING_DIMENSIONS. Ollama tags (":latest", ":v1.5") are looked up without the tag.
KNOWN_DIMENSIONS = {
    "all-minilm": 384,
    "all-minilm-l6-v2": 384,
    "all-MiniLM-L6-v2": 384,
    "nomic-embed-text": 768,
    "mxbai-embed-large": 1024,
    "snowflake-arctic-embed": 1024,
    "bge-m3": 1024,
    "bge-large": 1024,
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}


def known_dimensions(model: str) -> int | None:
    name = model.rsplit("/", 1)[-1]
    return KNOWN_DIMENSIONS.get(name) or KNOWN_DIMENSIONS.get(name.split(":", 1)[0])


def build_embedder(
    settings: Settings,
    *,
    limiter: AiCallLimiter | None = None,
    local_limiter: AiCallLimiter | None = None,
) -> Embedder | None:
    """The configured embedder. A model server's calls take ``limiter``'s slots; the local
    model's take ``local_limiter``'s (its calls are this machine's cores: ADR 33), or
    ``limiter``'s when none is given."""
    provider = settings.embedding_provider
    if provider == "none":
        return None
    if provider == "local":
        return OnnxEmbedder(
            settings.embedding_model_dir or None,
            model_id=settings.embedding_model or None,
            dimensions=settings.embedding_dimensions,
            batch_size=settings.embedding_batch_size,
            batch_tokens=settings.embedding_batch_tokens,
            threads=settings.embedding_threads,
            limiter=local_limiter or limiter,
        )
    model = settings.embedding_model or DEFAULT_MODELS[provider]
    dimensions = settings.embedding_dimensions or known_dimensions(model)
    if not dimensions:
        raise ConfigError(
            f"RELATA_EMBEDDING_DIMENSIONS must be set: Relata does not know the vector width "
            f"of embedding model {model!r} (RELATA_EMBEDDING_MODEL)"
        )
    common = {
        "model": model,
        "dimensions": dimensions,
        "batch_size": settings.embedding_batch_size,
        "timeout": settings.embedding_timeout,
        "limiter": limiter,
    }
    if provider == "ollama":
        return OllamaEmbedder(settings.ollama_url, **common)
    if provider == "openai":
        return OpenAICompatibleEmbedder(
            settings.openai_base_url, api_key=settings.openai_api_key, **common
        )
    raise ConfigError(f"RELATA_EMBEDDING_PROVIDER={provider!r} is not supported")
