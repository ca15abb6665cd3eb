"""The composition root: every service is built here from settings.

The API, the CLI, the workers and the tests all call ``build``; tests pass their own clock
or settings. Nothing is built at import time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from relata.config.settings import Settings
from relata.domain.clock import SystemClock
from relata.domain.ports import Clock
from relata.observability.metrics import Metrics
from relata.storage.sql import migrate
from relata.storage.sql.accounts import SqlUserRepository, SqlWorkspaceRepository
from relata.storage.sql.engine import Database
from relata.storage.sql.items import SqlChunkRepository, SqlItemRepository
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
    extras: dict[str, Any] = field(default_factory=dict)

    def close(self) -> None:
        self.db.dispose()


def build(settings: Settings, *, clock: Clock | None = None) -> Container:
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
    )
    return Container(
        settings=settings,
        clock=clock,
        db=db,
        metrics=Metrics(),
        repos=repos,
        health=Health(db),
        workspaces=WorkspaceService(repos.workspaces, clock, settings.default_workspace),
    )
