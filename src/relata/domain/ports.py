"""Ports: the Protocols the services depend on. Adapters live in ``relata.storage`` and friends.

Every repository method that touches user content takes ``workspace_id`` first. There is
deliberately no method that reads a record by id alone: a record of another workspace is
reported exactly like a missing one (``NotFound``).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from relata.domain.models import (
    AuditEvent,
    Chunk,
    Claim,
    Entity,
    Item,
    ItemStatus,
    ModelVersion,
    ProcessingRun,
    Relationship,
    User,
    Workspace,
)


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware UTC."""
        ...


class WorkspaceRepository(Protocol):
    def create(self, workspace: Workspace) -> Workspace: ...
    def get_by_slug(self, slug: str) -> Workspace: ...
    def get(self, workspace_id: str) -> Workspace: ...
    def list(self) -> list[Workspace]: ...


class UserRepository(Protocol):
    def create(self, user: User) -> User: ...
    def get_by_username(self, username: str) -> User: ...
    def set_password_hash(self, user_id: str, password_hash: str) -> None: ...
    def add_member(self, workspace_id: str, user_id: str, role: str) -> None: ...


class ItemRepository(Protocol):
    def create(self, item: Item) -> Item: ...
    def get(self, workspace_id: str, item_id: str) -> Item: ...
    def get_many(self, workspace_id: str, item_ids: Sequence[str]) -> list[Item]: ...
    def find_by_content_hash(self, workspace_id: str, content_hash: str) -> Item | None: ...
    def list(
        self,
        workspace_id: str,
        *,
        limit: int,
        offset: int = 0,
        source_type: str | None = None,
        created_from: datetime | None = None,
        created_to: datetime | None = None,
    ) -> list[Item]: ...
    def count(self, workspace_id: str) -> int: ...
    def set_status(
        self, workspace_id: str, item_id: str, status: ItemStatus, *, error: str | None = None
    ) -> None: ...
    def set_text(self, workspace_id: str, item_id: str, text: str) -> None: ...
    def delete(self, workspace_id: str, item_id: str) -> None: ...


class ChunkRepository(Protocol):
    def replace_for_item(
        self, workspace_id: str, item_id: str, chunks: Sequence[Chunk]
    ) -> None: ...
    def list_for_item(self, workspace_id: str, item_id: str) -> list[Chunk]: ...
    def count(self, workspace_id: str) -> int: ...


class EntityRepository(Protocol):
    def upsert_by_key(self, entity: Entity, item_id: str | None = None) -> Entity: ...
    def get(self, workspace_id: str, entity_id: str) -> Entity: ...
    def find_by_normalised(self, workspace_id: str, keys: Sequence[str]) -> list[Entity]: ...


class ClaimRepository(Protocol):
    def replace_for_item(
        self, workspace_id: str, item_id: str, claims: Sequence[Claim]
    ) -> None: ...
    def list_for_item(self, workspace_id: str, item_id: str) -> list[Claim]: ...


class RelationshipRepository(Protocol):
    def upsert_by_dedupe_key(self, relationship: Relationship) -> Relationship: ...
    def get(self, workspace_id: str, relationship_id: str) -> Relationship: ...
    def list_for_items(
        self, workspace_id: str, item_ids: Sequence[str], *, include_rejected: bool = False
    ) -> list[Relationship]: ...


class ProcessingRunRepository(Protocol):
    def add(self, run: ProcessingRun) -> ProcessingRun: ...
    def finish(
        self,
        workspace_id: str,
        run_id: str,
        *,
        outcome: str,
        finished_at: datetime,
        details: dict[str, object] | None = None,
        error: str | None = None,
    ) -> None: ...
    def list_for_item(self, workspace_id: str, item_id: str) -> list[ProcessingRun]: ...


class ModelVersionRepository(Protocol):
    def record_seen(
        self, workspace_id: str, kind: str, name: str, dimensions: int | None, at: datetime
    ) -> ModelVersion: ...
    def list(self, workspace_id: str) -> list[ModelVersion]: ...


class AuditRepository(Protocol):
    def append(self, event: AuditEvent) -> None: ...
    def list(self, workspace_id: str, *, limit: int) -> list[AuditEvent]: ...
