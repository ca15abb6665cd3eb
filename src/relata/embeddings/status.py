"""The model status of a workspace (``GET /api/v1/settings/models``).

It reports the embedding provider and its health, the analysis provider and its health, the
models the workspace has seen (``model_versions``), the vector width, and the counts that
say whether the stored vectors match the chunks: chunks, vectors of the current width,
chunks embedded with the current model, with other models, and not at all; the latest
re-embed job with its progress; and plain-language ``warnings`` with the fix: no embedding
provider (meaning-based search is unavailable), a vector count that differs from the chunk
count, chunks embedded with another model (re-embed), a provider that does not answer.

Health checks run side by side, each bounded by ``health_timeout`` seconds (the provider's
``Cancel`` fires at the deadline, and the answer is not waited for past it), so the page
stays quick when a provider is down.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from relata.domain.cancel import Cancel, Cancelled
from relata.domain.models import JobStatus, ModelVersion
from relata.domain.ports import (
    ChunkRepository,
    Embedder,
    HealthChecker,
    ModelVersionRepository,
    ProviderHealth,
    VectorStore,
)
from relata.embeddings.reembed import Reembedder, chunks_done
from relata.embeddings.stage import provider_of

REEMBED_HINT = (
    "re-embed the workspace (POST /api/v1/workspaces/current/reembed or `relata reembed`)"
)
REBUILD_HINT = (
    "rebuild its vectors (POST /api/v1/workspaces/current/reembed?all=true or "
    "`relata reembed --all`)"
)
_GRACE_SECONDS = 0.25


class AnalysisStatusSource(Protocol):
    """What the status needs of ``relata.analysis.AnalysisService``."""

    @property
    def enabled(self) -> bool: ...
    @property
    def provider(self) -> str: ...
    @property
    def model_id(self) -> str | None: ...
    @property
    def disabled_reason(self) -> str | None: ...
    def health(self, cancel: Cancel) -> ProviderHealth | None: ...


@dataclass(frozen=True, slots=True)
class EmbeddingStatus:
    provider: str  # local, ollama, openai or none
    available: bool
    model: str | None
    dimensions: int  # the vector store's width: what is stored and searched
    configured_dimensions: int | None  # RELATA_EMBEDDING_DIMENSIONS; None: the model's own
    health: ProviderHealth | None


@dataclass(frozen=True, slots=True)
class AnalysisStatus:
    enabled: bool
    provider: str
    model: str | None
    disabled_reason: str | None
    health: ProviderHealth | None


@dataclass(frozen=True, slots=True)
class StoredCounts:
    chunks: int
    vectors: int  # of the current width
    embedded_current: int
    embedded_other: dict[str, int]  # model -> chunks
    not_embedded: int


@dataclass(frozen=True, slots=True)
class ReembedState:
    job_id: str
    status: str
    chunks_done: int
    created_at: datetime
    finished_at: datetime | None
    last_error: str | None


@dataclass(frozen=True, slots=True)
class ModelStatus:
    embedding: EmbeddingStatus
    analysis: AnalysisStatus
    models_seen: list[ModelVersion]
    counts: StoredCounts
    reembed: ReembedState | None
    warnings: list[str]


class _Bounded:
    """Runs one health check on its own thread, cancelled at the deadline."""

    def __init__(self, check: Callable[[Cancel], ProviderHealth | None], timeout: float) -> None:
        self.timeout = timeout
        self.result: ProviderHealth | None = None
        self.error: BaseException | None = None
        self._cancel = Cancel.after(timeout)
        self._thread = threading.Thread(
            target=self._run, args=(check,), name="relata-health", daemon=True
        )
        self._thread.start()

    def _run(self, check: Callable[[Cancel], ProviderHealth | None]) -> None:
        try:
            self.result = check(self._cancel)
        except BaseException as exc:  # reported as an unhealthy provider, never raised
            self.error = exc

    def wait(self, provider: str, model: str) -> ProviderHealth | None:
        self._thread.join(self.timeout + _GRACE_SECONDS)
        if self._thread.is_alive() or isinstance(self.error, Cancelled):
            self._cancel.cancel()
            return ProviderHealth(
                ok=False,
                provider=provider,
                model=model,
                detail=f"no answer within {self.timeout:g} s",
            )
        if self.error is not None:
            return ProviderHealth(
                ok=False, provider=provider, model=model, detail=type(self.error).__name__
            )
        return self.result


class ModelStatusService:
    def __init__(
        self,
        *,
        configured_dimensions: int,
        embedder: Embedder | None,
        vectors: VectorStore,
        analysis: AnalysisStatusSource,
        chunks: ChunkRepository,
        model_versions: ModelVersionRepository,
        reembedder: Reembedder,
        health_timeout: float = 2.0,
        embedded_chunk_limit: int | None = None,
    ) -> None:
        if health_timeout <= 0:
            raise ValueError("health_timeout must be positive")
        self._provider = provider_of(embedder) if embedder is not None else "none"
        self._configured = configured_dimensions or None
        self._embedder = embedder
        self._vectors = vectors
        self._analysis = analysis
        self._chunks = chunks
        self._model_versions = model_versions
        self._reembedder = reembedder
        self._timeout = health_timeout
        #: With the embedded vector store: the chunk count past which a workspace is warned
        #: to move to PostgreSQL with pgvector (RELATA_VECTOR_WARN_CHUNKS); None: no warning.
        self._embedded_limit = embedded_chunk_limit or None

    def status(self, workspace_id: str) -> ModelStatus:
        embedder = self._embedder
        embed_check = None
        if embedder is not None and isinstance(embedder, HealthChecker):
            embed_check = _Bounded(embedder.health, self._timeout)
        analysis_check = None
        if self._analysis.enabled:
            analysis_check = _Bounded(self._analysis.health, self._timeout)

        model = embedder.model_id if embedder is not None else None
        counts = self.counts(workspace_id)
        seen = self._model_versions.list(workspace_id)
        reembed = self._reembed_state(workspace_id)

        embedding = EmbeddingStatus(
            provider=self._provider,
            available=embedder is not None,
            model=model,
            dimensions=self._vectors.dimensions,
            configured_dimensions=self._configured,
            health=embed_check.wait(self._provider, model or "") if embed_check else None,
        )
        a = self._analysis
        analysis = AnalysisStatus(
            enabled=a.enabled,
            provider=a.provider,
            model=a.model_id,
            disabled_reason=a.disabled_reason,
            health=analysis_check.wait(a.provider, a.model_id or "") if analysis_check else None,
        )
        return ModelStatus(
            embedding=embedding,
            analysis=analysis,
            models_seen=seen,
            counts=counts,
            reembed=reembed,
            warnings=_warnings(embedding, analysis, counts, reembed)
            + _scale_warning(counts, self._embedded_limit),
        )

    def counts(self, workspace_id: str) -> StoredCounts:
        """The workspace's chunk and vector counts (no provider is contacted)."""
        model = self._embedder.model_id if self._embedder is not None else None
        by_model = self._chunks.count_by_embedding_model(workspace_id)
        other: dict[str, int] = {}
        for name, n in sorted(by_model.items(), key=lambda kv: kv[0] or ""):
            if name:
                other[name] = n
        current = other.pop(model, 0) if model else 0
        return StoredCounts(
            chunks=sum(by_model.values()),
            vectors=self._vectors.count(workspace_id),
            embedded_current=current,
            embedded_other=other,
            not_embedded=by_model.get(None, 0),
        )

    def stored_warnings(self, workspace_id: str) -> list[str]:
        """The warnings about the workspace's stored vectors alone, with their fix (no
        provider is contacted: ``relata doctor``); none without an embedding provider."""
        if self._embedder is None:
            return []
        return _count_warnings(
            self._embedder.model_id,
            self._vectors.dimensions,
            self.counts(workspace_id),
            self._reembed_state(workspace_id),
        )

    def _reembed_state(self, workspace_id: str) -> ReembedState | None:
        job = self._reembedder.latest(workspace_id)
        if job is None:
            return None
        return ReembedState(
            job_id=job.id,
            status=job.status.value,
            chunks_done=chunks_done(job),
            created_at=job.created_at,
            finished_at=job.finished_at,
            last_error=job.last_error,
        )


def _scale_warning(counts: StoredCounts, limit: int | None) -> list[str]:
    if limit is None or counts.chunks <= limit:
        return []
    return [
        f"this workspace holds {counts.chunks:,} chunks, more than {limit:,} "
        "(RELATA_VECTOR_WARN_CHUNKS): the embedded vector store (sqlite-vec) searches every "
        "vector of a workspace, so searches slow down as it grows; move the deployment to "
        "PostgreSQL with pgvector (`relata transfer`, docs/deploy.md)"
    ]


def _warnings(
    embedding: EmbeddingStatus,
    analysis: AnalysisStatus,
    counts: StoredCounts,
    reembed: ReembedState | None,
) -> list[str]:
    out: list[str] = []
    if not embedding.available:
        out.append(
            "meaning-based search is unavailable: no embedding provider is configured "
            "(RELATA_EMBEDDING_PROVIDER=none); search matches keywords, entities and "
            "relationships only"
        )
    elif embedding.health is not None and not embedding.health.ok:
        out.append(f"the embedding provider does not answer: {embedding.health.detail}")
    if analysis.enabled and analysis.health is not None and not analysis.health.ok:
        out.append(f"the analysis provider does not answer: {analysis.health.detail}")
    if not embedding.available:
        return out
    return out + _count_warnings(embedding.model, embedding.dimensions, counts, reembed)


def _count_warnings(
    model: str | None, dimensions: int, counts: StoredCounts, reembed: ReembedState | None
) -> list[str]:
    """The warnings about the stored vectors, with an embedding provider configured."""
    out: list[str] = []
    under_way = reembed is not None and reembed.status in {JobStatus.PENDING, JobStatus.RUNNING}
    hint = "re-embedding is under way" if under_way else REEMBED_HINT
    if counts.vectors != counts.chunks:
        # Every chunk says it is embedded with the current model, yet the counts differ:
        # vectors were lost or orphaned, which only a rebuild repairs.
        stamped = counts.embedded_current == counts.chunks
        fix = REBUILD_HINT if stamped and not under_way else hint
        out.append(
            f"the vector store holds {counts.vectors} vectors of width {dimensions} "
            f"for {counts.chunks} chunks: items still being processed get theirs from the "
            f"pipeline; otherwise {fix}"
        )
    if counts.embedded_other:
        models = ", ".join(f"{m} ({n})" for m, n in counts.embedded_other.items())
        stale = sum(counts.embedded_other.values())
        out.append(
            f"{stale} chunks were embedded with another model than {model} "
            f"({models}); their vectors do not match queries made with it: {hint}"
        )
    return out
