"""The composition root: every service is built here from settings.

The API, the CLI, the workers and the tests all call ``build``; tests pass their own clock,
settings or embedder (a fake of the ``Embedder`` port). Nothing is built at import time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from relata.analysis.factory import build_analysis
from relata.analysis.service import AnalysisService
from relata.concurrency import AiCallLimiter
from relata.config.settings import Settings
from relata.domain.clock import SystemClock
from relata.domain.ports import Clock, Embedder, TextSearch, VectorStore
from relata.embeddings.factory import build_embedder, known_dimensions
from relata.embeddings.reembed import Reembedder, register_reembed
from relata.embeddings.stage import (
    EMBED_ITEM,
    EMBED_STAGE,
    NO_PROVIDER,
    EmbedStage,
    ModelSeen,
    VectorWriter,
    register_embed_stage,
)
from relata.embeddings.status import ModelStatusService
from relata.ingest.admission import Admission
from relata.ingest.catalog import ItemCatalog
from relata.ingest.originals import OriginalStore
from relata.ingest.pipeline import Pipeline
from relata.ingest.service import IngestService
from relata.ingest.stages import ChunkSettings, IngestStages, register_stages
from relata.jobs.queue import JobQueue
from relata.jobs.registry import HandlerRegistry
from relata.jobs.retry import Backoff
from relata.jobs.worker import WorkerPool
from relata.observability.metrics import Metrics
from relata.parsing import limits_from_settings
from relata.ranking.fusion import FusionConfig
from relata.search.answers import AnswerService
from relata.search.service import SearchService
from relata.storage.sql import migrate
from relata.storage.sql.accounts import SqlUserRepository, SqlWorkspaceRepository
from relata.storage.sql.engine import Database
from relata.storage.sql.items import SqlChunkRepository, SqlItemRepository
from relata.storage.sql.jobs import SqlJobRepository
from relata.storage.sql.knowledge import (
    SqlClaimRepository,
    SqlEntityRepository,
    SqlRelationshipRepository,
)
from relata.storage.sql.records import (
    SqlAuditRepository,
    SqlModelVersionRepository,
    SqlProcessingRunRepository,
)
from relata.storage.sql.text_search import SqlTextSearch
from relata.storage.vectors.factory import build_vector_store
from relata.workspaces import WorkspaceService


@dataclass
class Repositories:
    workspaces: SqlWorkspaceRepository
    users: SqlUserRepository
    items: SqlItemRepository
    chunks: SqlChunkRepository
    entities: SqlEntityRepository
    claims: SqlClaimRepository
    relationships: SqlRelationshipRepository
    runs: SqlProcessingRunRepository
    model_versions: SqlModelVersionRepository
    audit: SqlAuditRepository
    jobs: SqlJobRepository


class Health:
    """Liveness and readiness, without the API needing to know about storage."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def readiness(self) -> dict[str, Any]:
        checks: dict[str, Any] = {}
        try:
            self._db.ping()
            checks["database"] = "ok"
        except Exception as exc:  # any failure means not ready; the type is enough to report
            checks["database"] = f"unreachable ({type(exc).__name__})"
            return {"ready": False, "checks": checks}
        current = migrate.current_revision(self._db)
        head = migrate.head_revision()
        checks["migrations"] = "current" if current == head else f"at {current}, need {head}"
        return {"ready": current == head, "checks": checks}


@dataclass
class Container:
    settings: Settings
    clock: Clock
    db: Database
    metrics: Metrics
    repos: Repositories
    health: Health
    workspaces: WorkspaceService
    queue: JobQueue
    registry: HandlerRegistry
    ai_limiter: AiCallLimiter
    # None when RELATA_EMBEDDING_PROVIDER=none: no vectors, no meaning-based search.
    embedder: Embedder | None
    # Chunk vectors (RELATA_VECTOR_STORE), as wide as the embedder's vectors.
    vectors: VectorStore
    # The full-text legs of search (FTS5 BM25 on SQLite, tsvector on PostgreSQL).
    text_search: TextSearch
    # Language-model analysis; disabled (every task reports AnalysisDisabled) when
    # RELATA_ANALYSIS_ENABLED=false or no RELATA_AI_PROVIDER is set.
    analysis: AnalysisService
    # Ingestion: uploads in (``ingest``), items read/deleted/reprocessed (``items``), and the
    # pipeline whose ``add_after_chunk`` later stages (embed_item, ...) join.
    ingest: IngestService
    items: ItemCatalog
    pipeline: Pipeline
    # Hybrid search over the legs above, with explanations.
    search: SearchService
    # Cited answers: search, then the model over the retrieved excerpts (fails safe).
    answers: AnswerService
    # Re-embedding a workspace in bounded batches, and the model status page's numbers.
    reembed: Reembedder
    model_status: ModelStatusService
    extras: dict[str, Any] = field(default_factory=dict)

    def close(self) -> None:
        closer = getattr(self.embedder, "close", None)
        if callable(closer):
            closer()
        self.analysis.close()
        self.search.close()
        self.vectors.close()
        self.db.dispose()

    def worker_pool(self, *, workers: int | None = None, name: str | None = None) -> WorkerPool:
        """A (not yet started) pool of ``RELATA_WORKERS`` threads over this container's queue."""
        s = self.settings
        return WorkerPool(
            self.queue,
            self.registry,
            self.ai_limiter,
            workers=workers if workers is not None else s.workers,
            poll_seconds=s.job_poll_seconds,
            backoff=Backoff(s.job_backoff_seconds, s.job_backoff_max_seconds),
            metrics=self.metrics,
            name=name,
        )


DEFAULT_VECTOR_WIDTH = 384  # all-MiniLM-L6-v2, the default local model


def _vector_width(settings: Settings, embedder: Embedder | None) -> int:
    """The vector store's width: RELATA_EMBEDDING_DIMENSIONS, else the model's known width.

    A known model name answers without loading the local model at start-up; only a local
    model Relata does not know is loaded here to learn its width.
    """
    if settings.embedding_dimensions:
        return settings.embedding_dimensions
    if embedder is None:
        return DEFAULT_VECTOR_WIDTH
    return known_dimensions(embedder.model_id) or embedder.dimensions


def build(
    settings: Settings, *, clock: Clock | None = None, embedder: Embedder | None = None
) -> Container:
    """Everything, from ``settings``; ``embedder`` replaces the configured one (tests)."""
    clock = clock or SystemClock()
    settings.data_path.mkdir(parents=True, exist_ok=True)
    db = Database.from_url(settings.resolved_database_url)
    repos = Repositories(
        workspaces=SqlWorkspaceRepository(db),
        users=SqlUserRepository(db, clock),
        items=SqlItemRepository(db, clock),
        chunks=SqlChunkRepository(db, clock),
        entities=SqlEntityRepository(db, clock),
        claims=SqlClaimRepository(db),
        relationships=SqlRelationshipRepository(db, clock),
        runs=SqlProcessingRunRepository(db),
        model_versions=SqlModelVersionRepository(db),
        audit=SqlAuditRepository(db),
        jobs=SqlJobRepository(db),
    )
    metrics = Metrics()
    registry = HandlerRegistry()
    queue = JobQueue(
        repos.jobs,
        clock,
        max_attempts=settings.job_max_attempts,
        lease_seconds=settings.job_lease_seconds,
        known_kinds=registry.kinds,
    )
    ai_limiter = AiCallLimiter(settings.ai_concurrency, on_wait=metrics.observe_ai_wait)
    if embedder is None:
        embedder = build_embedder(settings, limiter=ai_limiter)
    vectors = build_vector_store(settings, db, _vector_width(settings, embedder))
    ingest, items, pipeline = _build_ingestion(settings, clock, repos, queue, registry, vectors)
    text_search = SqlTextSearch(db)
    search = SearchService(
        repos.items,
        repos.chunks,
        text_search,
        vectors,
        embedder,
        FusionConfig.from_settings(settings),
    )
    analysis = build_analysis(settings, limiter=ai_limiter, metrics=metrics)
    reembed = _build_embedding(
        settings, clock, repos, registry, queue, pipeline, embedder, vectors, metrics
    )
    return Container(
        settings=settings,
        clock=clock,
        db=db,
        metrics=metrics,
        repos=repos,
        health=Health(db),
        workspaces=WorkspaceService(repos.workspaces, clock, settings.default_workspace),
        queue=queue,
        registry=registry,
        ai_limiter=ai_limiter,
        embedder=embedder,
        vectors=vectors,
        text_search=text_search,
        analysis=analysis,
        ingest=ingest,
        items=items,
        pipeline=pipeline,
        search=search,
        answers=AnswerService(search, analysis),
        reembed=reembed,
        model_status=ModelStatusService(
            configured_dimensions=settings.embedding_dimensions,
            embedder=embedder,
            vectors=vectors,
            analysis=analysis,
            chunks=repos.chunks,
            model_versions=repos.model_versions,
            reembedder=reembed,
        ),
    )


def _build_ingestion(
    settings: Settings,
    clock: Clock,
    repos: Repositories,
    queue: JobQueue,
    registry: HandlerRegistry,
    vectors: VectorStore,
) -> tuple[IngestService, ItemCatalog, Pipeline]:
    """The ingest service, the item catalog and the parse/chunk stages on the registry."""
    originals = OriginalStore(settings.data_path)
    pipeline = Pipeline(queue)
    limits = limits_from_settings(settings)
    service = IngestService(
        repos.items,
        originals,
        pipeline,
        clock,
        max_upload_bytes=settings.max_upload_bytes,
        admission=Admission(settings.ingest_concurrency),
        limits=limits,
    )
    catalog = ItemCatalog(repos.items, repos.runs, originals, pipeline)
    stages = IngestStages(
        items=repos.items,
        chunks=repos.chunks,
        runs=repos.runs,
        originals=originals,
        pipeline=pipeline,
        clock=clock,
        chunking=ChunkSettings(settings.chunk_target_chars, settings.chunk_overlap_chars),
        limits=limits,
        max_original_bytes=settings.max_upload_bytes,
    )
    # Vectors are derived data: gone with the item, and dropped before an item is re-chunked.
    catalog.add_delete_hook(vectors.delete_by_item)
    stages.add_before_rechunk(vectors.delete_by_item)
    register_stages(registry, stages)
    return service, catalog, pipeline


def _build_embedding(
    settings: Settings,
    clock: Clock,
    repos: Repositories,
    registry: HandlerRegistry,
    queue: JobQueue,
    pipeline: Pipeline,
    embedder: Embedder | None,
    vectors: VectorStore,
    metrics: Metrics,
) -> Reembedder:
    """The embed stage (after chunking, or recorded as skipped without a provider) and the
    re-embed job, on the registry."""
    writer = None
    if embedder is not None:
        writer = VectorWriter(embedder, vectors, batch_size=settings.embedding_batch_size)
        pipeline.add_after_chunk(EMBED_ITEM)
    else:
        pipeline.add_skipped(EMBED_STAGE, NO_PROVIDER)
    seen = ModelSeen(repos.model_versions, clock)
    stage = EmbedStage(
        items=repos.items,
        chunks=repos.chunks,
        runs=repos.runs,
        pipeline=pipeline,
        clock=clock,
        writer=writer,
        seen=seen,
        metrics=metrics,
    )
    # Registered with or without a provider: a job left from a run with one still settles.
    register_embed_stage(registry, stage)
    reembed = Reembedder(
        queue=queue,
        chunks=repos.chunks,
        pipeline=pipeline,
        writer=writer,
        seen=seen,
        batch_size=settings.reembed_batch_size,
        metrics=metrics,
    )
    register_reembed(registry, reembed)
    return reembed
