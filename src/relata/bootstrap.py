"""The composition root: every service is built here from settings.

The API, the CLI, the workers and the tests all call ``build``; tests pass their own clock,
settings or embedder (a fake of the ``Embedder`` port). Nothing is built at import time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from relata.analysis.factory import build_analysis
from relata.analysis.service import AnalysisService
from relata.audit import AuditService
from relata.auth.accounts import ADDRESS_FACTOR, AccountService
from relata.auth.administration import AdministrationService
from relata.auth.invitations import InvitationService
from relata.auth.members import MemberService
from relata.auth.oidc import OidcService, oidc_config_from
from relata.auth.sessions import SessionService
from relata.auth.tokens import TokenService
from relata.claims.service import ClaimService
from relata.claims.stage import ClaimStage
from relata.concurrency import AiCallLimiter, single_threaded_blas
from relata.config.settings import Settings
from relata.domain.clock import SystemClock
from relata.domain.ports import (
    ApiTokenRepository,
    AttachmentRepository,
    AuditRepository,
    ChunkRepository,
    ClaimRepository,
    Clock,
    ContradictionRepository,
    DisagreementRepository,
    Embedder,
    EntityRepository,
    InvitationRepository,
    ItemRepository,
    ItemVersionRepository,
    JobRepository,
    ModelVersionRepository,
    PasswordHasher,
    ProcessingRunRepository,
    RelationshipRepository,
    SessionRepository,
    TextSearch,
    UserRepository,
    VectorStore,
    WorkspaceRepository,
)
from relata.embeddings.factory import build_embedder, known_dimensions
from relata.embeddings.reembed import Reembedder, register_reembed
from relata.embeddings.stage import EmbedStage, ModelSeen, VectorWriter
from relata.embeddings.status import ModelStatusService
from relata.entities.deterministic import DeterministicExtractor
from relata.entities.service import EntityService
from relata.entities.stage import EntityStage
from relata.exchange.service import ExchangeService
from relata.graph.service import GraphService
from relata.ingest.admission import Admission
from relata.ingest.attachment_versions import AttachmentFollower
from relata.ingest.catalog import ItemCatalog
from relata.ingest.originals import OriginalStore
from relata.ingest.recovery import Recovery
from relata.ingest.service import IngestService
from relata.ingest.stages import ChunkSettings, ChunkStage, ParseStage
from relata.ingest.versions import VersionService
from relata.ingest.watcher import FolderWatches
from relata.jobs.queue import JobQueue
from relata.jobs.registry import HandlerRegistry
from relata.jobs.retry import Backoff, FailureClassifier
from relata.jobs.worker import WorkerPool
from relata.observability.metrics import Metrics
from relata.parsing import limits_from_settings
from relata.pipeline import Pipeline, Requirement, Stage
from relata.providers.http import make_client
from relata.ranking.fusion import FusionConfig
from relata.relationships.service import RelationshipService
from relata.relationships.stage import RelationshipStage
from relata.search.answers import AnswerService
from relata.search.floor import meaning_floor
from relata.search.service import SearchService
from relata.storage.sql import migrate
from relata.storage.sql.accounts import SqlUserRepository, SqlWorkspaceRepository
from relata.storage.sql.ai_slots import local_model_gate, model_server_gate
from relata.storage.sql.attachments import SqlAttachmentRepository
from relata.storage.sql.chunks import SqlChunkRepository
from relata.storage.sql.claims import SqlClaimRepository, SqlContradictionRepository
from relata.storage.sql.credentials import SqlApiTokenRepository, SqlSessionRepository
from relata.storage.sql.deployment_keys import shared_key
from relata.storage.sql.disagreements import SqlDisagreementRepository
from relata.storage.sql.engine import Database
from relata.storage.sql.entities import SqlEntityRepository
from relata.storage.sql.graph import SqlGraphReader
from relata.storage.sql.identities import SqlFederatedIdentities
from relata.storage.sql.invitations import SqlInvitationRepository
from relata.storage.sql.item_versions import SqlItemVersionRepository
from relata.storage.sql.items import SqlItemRepository
from relata.storage.sql.jobs import SqlJobRepository
from relata.storage.sql.knowledge import SqlRelationshipRepository
from relata.storage.sql.ledger import SqlIngestLedger
from relata.storage.sql.records import (
    SqlAuditRepository,
    SqlModelVersionRepository,
    SqlProcessingRunRepository,
)
from relata.storage.sql.signin_failures import SqlFailureLimiter
from relata.storage.sql.text_search import build_text_search
from relata.storage.sql.transient import is_transient
from relata.storage.sql.unit_of_work import SqlUnitOfWork
from relata.storage.sql.watches import SqlWatchStateRepository
from relata.storage.vectors.factory import build_vector_store, resolve_vector_store
from relata.workspaces import WorkspaceService


@dataclass
class Repositories:
    """The stores, typed by their ports (SQL adapters in production, fakes in tests)."""

    workspaces: WorkspaceRepository
    users: UserRepository
    items: ItemRepository
    item_versions: ItemVersionRepository
    attachments: AttachmentRepository
    chunks: ChunkRepository
    entities: EntityRepository
    claims: ClaimRepository
    contradictions: ContradictionRepository
    disagreements: DisagreementRepository
    relationships: RelationshipRepository
    runs: ProcessingRunRepository
    model_versions: ModelVersionRepository
    audit: AuditRepository
    jobs: JobRepository
    sessions: SessionRepository
    api_tokens: ApiTokenRepository
    invitations: InvitationRepository


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
    # The one failure classifier: the queue's and the pipeline's (database errors included).
    classifier: FailureClassifier
    # Calls to a model server (analysis, a remote embedder), RELATA_AI_CONCURRENCY at a time
    # across the deployment's processes (docs/decisions/0033-worker-processes.md).
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
    # pipeline: its stages in StageKind order, run by one runner (relata.pipeline).
    ingest: IngestService
    items: ItemCatalog
    # New versions of an item's content, listed and downloaded (relata.ingest.versions).
    versions: VersionService
    pipeline: Pipeline
    # Watched folders kept in step with a workspace, and their status (relata.ingest.watch).
    watches: FolderWatches
    # What a killed process leaves half-done in ingestion, found and repaired (serve's
    # start-up, relata doctor).
    recovery: Recovery
    # Hybrid search over the legs above, with explanations.
    search: SearchService
    # Cited answers: search, then the model over the retrieved excerpts (fails safe).
    answers: AnswerService
    # Re-embedding a workspace in bounded batches, and the model status page's numbers.
    reembed: Reembedder
    model_status: ModelStatusService
    # Entities, their observations and the aliases people decide on.
    entities: EntityService
    # Claims and the contradiction ledger.
    claims: ClaimService
    # Relationships between items and their review.
    relationships: RelationshipService
    # The append-only audit log: what the services above record, read by /api/v1/audit.
    audit: AuditService
    # People and access: accounts, sign-in and sessions, API tokens, members (relata.auth).
    accounts: AccountService
    tokens: TokenService
    members: MemberService
    invitations: InvitationService
    # The graph view: entities and items, relationships and mentions, bounded.
    graph: GraphService
    # What administrators do (the CLI's users/workspaces commands and the web's /admin).
    admin: AdministrationService
    # Export of a workspace's knowledge, and import of an export (relata.exchange).
    exchange: ExchangeService
    # Federated sign-in (OpenID Connect); None when RELATA_OIDC_ISSUER is empty.
    oidc: OidcService | None = None
    extras: dict[str, Any] = field(default_factory=dict)

    def close(self) -> None:
        closer = getattr(self.embedder, "close", None)
        if callable(closer):
            closer()
        self.analysis.close()
        self.search.close()
        self.vectors.close()
        if self.oidc is not None:
            self.oidc.close()
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
            classifier=self.classifier,
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
    settings: Settings,
    *,
    clock: Clock | None = None,
    embedder: Embedder | None = None,
    stage_order: Sequence[str] | None = None,
    password_hasher: PasswordHasher | None = None,
) -> Container:
    """Everything, from ``settings``; ``embedder`` replaces the configured one,
    ``stage_order`` declares another pipeline order (tests that add a stage) and
    ``password_hasher`` replaces Argon2id at production cost (tests pass a cheaper one)."""
    clock = clock or SystemClock()
    single_threaded_blas()
    settings.data_path.mkdir(parents=True, exist_ok=True)
    db = Database.from_url(settings.resolved_database_url)
    repos = Repositories(
        workspaces=SqlWorkspaceRepository(db),
        users=SqlUserRepository(db, clock),
        items=SqlItemRepository(db, clock),
        item_versions=SqlItemVersionRepository(db),
        attachments=SqlAttachmentRepository(db),
        chunks=SqlChunkRepository(db, clock),
        entities=SqlEntityRepository(db, clock),
        claims=SqlClaimRepository(db, clock),
        contradictions=SqlContradictionRepository(db, clock),
        disagreements=SqlDisagreementRepository(db, clock),
        relationships=SqlRelationshipRepository(db, clock),
        runs=SqlProcessingRunRepository(db),
        model_versions=SqlModelVersionRepository(db),
        audit=SqlAuditRepository(db),
        jobs=SqlJobRepository(db),
        sessions=SqlSessionRepository(db),
        api_tokens=SqlApiTokenRepository(db),
        invitations=SqlInvitationRepository(db),
    )
    metrics = Metrics()
    audit = AuditService(repos.audit, clock)
    registry = HandlerRegistry()
    classifier = FailureClassifier([is_transient])
    queue = JobQueue(
        repos.jobs,
        clock,
        max_attempts=settings.job_max_attempts,
        lease_seconds=settings.job_lease_seconds,
        known_kinds=registry.kinds,
    )
    # RELATA_AI_CONCURRENCY holds across processes (docs/decisions/0033): a model server's
    # slots are the deployment's, the in-process model's are this machine's.
    ai_limiter = AiCallLimiter(
        settings.ai_concurrency,
        on_wait=metrics.observe_ai_wait,
        gate=model_server_gate(db, settings.ai_concurrency),
    )
    if embedder is None:
        local_limiter = AiCallLimiter(
            settings.ai_concurrency,
            on_wait=metrics.observe_ai_wait,
            gate=local_model_gate(db, settings.ai_concurrency),
        )
        embedder = build_embedder(settings, limiter=ai_limiter, local_limiter=local_limiter)
    vectors = build_vector_store(settings, db, _vector_width(settings, embedder))
    analysis = build_analysis(settings, limiter=ai_limiter, metrics=metrics)
    available = set()
    if embedder is not None:
        available.add(Requirement.EMBEDDER)
    if analysis.enabled:
        available.add(Requirement.ANALYSER)
    pipeline = Pipeline(
        queue=queue,
        unit_of_work=SqlUnitOfWork(db, clock),
        registry=registry,
        items=repos.items,
        runs=repos.runs,
        clock=clock,
        classifier=classifier,
        available=available,
        **({"order": stage_order} if stage_order is not None else {}),
    )
    ingest, items, versions = _build_ingestion(settings, clock, repos, pipeline, vectors, audit)
    recovery = Recovery(
        OriginalStore(settings.data_path),
        SqlIngestLedger(db),
        items,
        pipeline,
        clock,
        grace=timedelta(seconds=settings.recovery_grace_seconds),
    )
    reembed = _build_embedding(
        settings, clock, repos, registry, queue, pipeline, embedder, vectors, metrics, audit
    )
    text_search = build_text_search(db)
    relationship_service = RelationshipService(
        repos.relationships, repos.items, repos.entities, audit=audit
    )
    _build_relationships(
        repos, pipeline, items, relationship_service, text_search, vectors, clock, analysis
    )
    _build_knowledge(repos, pipeline, items, analysis, text_search)
    search = SearchService(
        repos.items,
        repos.chunks,
        text_search,
        vectors,
        embedder,
        FusionConfig.from_settings(settings),
        entities=repos.entities,
        contradictions=repos.contradictions,
        relationships=repos.relationships,
        meaning_floor=meaning_floor(
            settings.search_meaning_floor, embedder.model_id if embedder else None
        ),
        disagreements=repos.disagreements,
        snapshot=db.snapshot,
    )
    accounts = _build_accounts(settings, clock, db, repos, audit, password_hasher)
    workspaces = WorkspaceService(repos.workspaces, clock, settings.default_workspace, audit=audit)
    members = MemberService(repos.workspaces, repos.users, clock, audit=audit)
    return Container(
        settings=settings,
        clock=clock,
        db=db,
        metrics=metrics,
        repos=repos,
        health=Health(db),
        workspaces=workspaces,
        queue=queue,
        registry=registry,
        classifier=classifier,
        ai_limiter=ai_limiter,
        embedder=embedder,
        vectors=vectors,
        text_search=text_search,
        analysis=analysis,
        ingest=ingest,
        items=items,
        versions=versions,
        pipeline=pipeline,
        watches=FolderWatches(
            SqlWatchStateRepository(db),
            ingest,
            versions,
            items,
            clock,
            max_upload_bytes=settings.max_upload_bytes,
            on_delete=settings.watch_on_delete,
            ignore=settings.watch_ignore,
            rescan_seconds=settings.watch_rescan_seconds,
        ),
        recovery=recovery,
        search=search,
        answers=AnswerService(search, analysis, repos.contradictions, metrics=metrics),
        reembed=reembed,
        model_status=ModelStatusService(
            configured_dimensions=settings.embedding_dimensions,
            embedder=embedder,
            vectors=vectors,
            analysis=analysis,
            chunks=repos.chunks,
            model_versions=repos.model_versions,
            reembedder=reembed,
            embedded_chunk_limit=(
                settings.vector_warn_chunks
                if resolve_vector_store(settings.vector_store, db.dialect) == "sqlite-vec"
                else None
            ),
        ),
        entities=EntityService(repos.entities, repos.items, audit=audit),
        claims=ClaimService(
            repos.claims,
            repos.contradictions,
            repos.items,
            audit=audit,
            disagreements=repos.disagreements,
        ),
        relationships=relationship_service,
        audit=audit,
        accounts=accounts,
        tokens=TokenService(repos.api_tokens, repos.users, clock, audit=audit),
        members=members,
        invitations=InvitationService(
            repos.invitations, repos.workspaces, repos.users, clock, audit=audit
        ),
        graph=GraphService(SqlGraphReader(db)),
        admin=AdministrationService(accounts, members, workspaces, audit=audit),
        exchange=ExchangeService(
            db,
            workspaces,
            OriginalStore(settings.data_path),
            clock,
            audit=audit,
            max_upload_bytes=settings.max_upload_bytes,
        ),
        oidc=_build_oidc(settings, clock, db, accounts, audit),
    )


OIDC_FLOW_KEY = "oidc_flow_cookie"


def _build_oidc(
    settings: Settings, clock: Clock, db: Database, accounts: AccountService, audit: AuditService
) -> OidcService | None:
    config = oidc_config_from(
        settings.oidc_issuer,
        settings.oidc_client_id,
        settings.oidc_client_secret,
        settings.oidc_redirect_url,
        settings.oidc_provider_name,
    )
    if config is None:
        return None
    # The safe HTTP path's client (no redirects, explicit timeouts); its get/post bound
    # every answer's size (relata.auth.oidc.provider).
    http = make_client(config.timeout)
    return OidcService(
        config,
        SqlFederatedIdentities(db),
        accounts,
        clock,
        audit=audit,
        http=http,
        flow_key=lambda: shared_key(db, OIDC_FLOW_KEY),
    )


def _build_accounts(
    settings: Settings,
    clock: Clock,
    db: Database,
    repos: Repositories,
    audit: AuditService,
    hasher: PasswordHasher | None,
) -> AccountService:
    sessions = SessionService(
        repos.sessions,
        clock,
        idle=timedelta(hours=settings.session_idle_hours),
        absolute=timedelta(days=settings.session_max_days),
    )
    # In the database: every HTTP process (``relata serve --processes N``) counts the same
    # failures, so the limit does not multiply by N (docs/decisions/0036).
    limiter = SqlFailureLimiter(
        db,
        clock,
        max_failures=settings.login_max_failures,
        window_seconds=settings.login_window_seconds,
    )
    address_limiter = SqlFailureLimiter(
        db,
        clock,
        max_failures=ADDRESS_FACTOR * settings.login_max_failures,
        window_seconds=settings.login_window_seconds,
    )
    return AccountService(
        repos.users,
        sessions,
        clock,
        limiter=limiter,
        audit=audit,
        concurrency=settings.password_concurrency,
        address_limiter=address_limiter,
        hasher=hasher,
    )


def _add(pipeline: Pipeline, stage: Stage) -> None:
    """Add ``stage`` when the pipeline's declared order has it (a benchmark or a test may
    declare a shorter or a longer order than ``StageKind``'s)."""
    if pipeline.declares(stage.kind):
        pipeline.add(stage)


def _build_ingestion(
    settings: Settings,
    clock: Clock,
    repos: Repositories,
    pipeline: Pipeline,
    vectors: VectorStore,
    audit: AuditService,
) -> tuple[IngestService, ItemCatalog, VersionService]:
    """The ingest service, the item catalog, item versions and the parse and chunk stages."""
    originals = OriginalStore(settings.data_path)
    limits = limits_from_settings(settings)
    service = IngestService(
        repos.items,
        originals,
        pipeline,
        clock,
        max_upload_bytes=settings.max_upload_bytes,
        admission=Admission(settings.ingest_concurrency),
        audit=audit,
        limits=limits,
        attachments=repos.attachments,
    )
    catalog = ItemCatalog(
        repos.items,
        repos.runs,
        originals,
        pipeline,
        audit=audit,
        chunks=repos.chunks,
        attachments=repos.attachments,
    )
    chunk = ChunkStage(
        items=repos.items,
        chunking=ChunkSettings(settings.chunk_target_chars, settings.chunk_overlap_chars),
    )
    # Vectors are derived data: gone with the item, and dropped before an item is re-chunked.
    catalog.add_delete_hook(vectors.delete_by_item)
    chunk.add_before_rechunk(vectors.delete_by_item)
    _add(
        pipeline,
        ParseStage(
            items=repos.items,
            originals=originals,
            limits=limits,
            max_original_bytes=settings.max_upload_bytes,
        ),
    )
    _add(pipeline, chunk)
    versions = VersionService(
        repos.items,
        repos.item_versions,
        originals,
        pipeline,
        catalog,
        clock,
        admission=service.admission,
        audit=audit,
        max_upload_bytes=settings.max_upload_bytes,
        keep_previous=settings.keep_previous_originals,
        vectors=vectors,
        limits=limits,
        # A message's attachments follow its new versions (docs/decisions/0048).
        follower=AttachmentFollower(
            repos.items,
            repos.attachments,
            repos.item_versions,
            service,
            originals,
            limits=limits,
        ),
    )
    return service, catalog, versions


def _build_knowledge(
    repos: Repositories,
    pipeline: Pipeline,
    items: ItemCatalog,
    analysis: AnalysisService,
    text_search: TextSearch,
) -> None:
    """The knowledge stages after embedding: entities, then claims and contradictions."""
    _add(
        pipeline,
        EntityStage(
            chunks=repos.chunks,
            entities=repos.entities,
            extractor=DeterministicExtractor(),
            analysis=analysis,
        ),
    )
    _add(
        pipeline,
        ClaimStage(
            items=repos.items,
            chunks=repos.chunks,
            entities=repos.entities,
            claims=repos.claims,
            analysis=analysis,
            text_search=text_search,
        ),
    )
    # Observations go with the item's row (ON DELETE CASCADE); the hook also recounts the
    # entities it named and removes those left with no source and no human decision.
    items.add_delete_hook(repos.entities.forget_item)


def _build_relationships(
    repos: Repositories,
    pipeline: Pipeline,
    items: ItemCatalog,
    service: RelationshipService,
    text_search: TextSearch,
    vectors: VectorStore,
    clock: Clock,
    analysis: AnalysisService,
) -> None:
    """The relationships stage, last, and delete by contribution."""
    _add(
        pipeline,
        RelationshipStage(
            items=repos.items,
            entities=repos.entities,
            claims=repos.claims,
            contradictions=repos.contradictions,
            relationships=repos.relationships,
            text_search=text_search,
            clock=clock,
            vectors=vectors,
            analysis=analysis,
        ),
    )
    # Before the entity hook and the item's rows go: it reads the entities the item named.
    items.add_delete_hook(service.forget_item)


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
    audit: AuditService,
) -> Reembedder:
    """The embed stage (skipped by the runner without a provider) and the re-embed job."""
    writer = None
    if embedder is not None:
        writer = VectorWriter(embedder, vectors, batch_size=settings.embedding_batch_size)
    seen = ModelSeen(repos.model_versions, clock)
    _add(pipeline, EmbedStage(chunks=repos.chunks, writer=writer, seen=seen, metrics=metrics))
    reembed = Reembedder(
        queue=queue,
        chunks=repos.chunks,
        pipeline=pipeline,
        writer=writer,
        seen=seen,
        batch_size=settings.reembed_batch_size,
        audit=audit,
        metrics=metrics,
    )
    register_reembed(registry, reembed)
    return reembed
