"""Ports: the Protocols the services depend on. Adapters live in ``relata.storage`` and friends.

Every repository method that touches user content takes ``workspace_id`` first. There is
deliberately no method that reads a record by id alone: a record of another workspace is
reported exactly like a missing one (``NotFound``).
"""

from __future__ import annotations

import builtins
from collections.abc import Container, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from relata.domain.cancel import Cancel
from relata.domain.models import (
    Actor,
    AliasStatus,
    ApiToken,
    Attachment,
    AuditEvent,
    Chunk,
    Claim,
    Contradiction,
    Disagreement,
    Entity,
    EntityAlias,
    EntityObservation,
    FoundContradiction,
    Invitation,
    Item,
    ItemStatus,
    ItemVersion,
    Job,
    JobStatus,
    JSONDict,
    Member,
    Membership,
    ModelVersion,
    ObservedMention,
    ProcessingRun,
    ProposedAlias,
    ProposedRelationship,
    Relationship,
    ReviewStatus,
    Session,
    User,
    Workspace,
)
from relata.domain.vocabulary import (
    AuditAction,
    AuditTarget,
    ContradictionStatus,
    DisagreementKind,
    DisagreementStatus,
    InvitationState,
    RelationshipType,
    Resolution,
    Role,
)


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware UTC."""
        ...


class PasswordHasher(Protocol):
    """One-way password hashes (Argon2id in ``relata.auth.passwords``)."""

    def hash(self, password: str) -> str:
        """A salted hash of ``password``; ``ValidationError`` for a too short or long one."""
        ...

    def verify(self, stored_hash: str, password: str) -> bool:
        """Whether ``password`` matches ``stored_hash`` (False for a malformed hash)."""
        ...


class WorkspaceRepository(Protocol):
    def create(self, workspace: Workspace, *, owner_id: str | None = None) -> Workspace:
        """DuplicateKey when the slug is taken. With ``owner_id`` that user is made its
        owner in the same transaction (never a workspace left without the owner asked for)."""
        ...

    def get_by_slug(self, slug: str) -> Workspace: ...
    def get(self, workspace_id: str) -> Workspace: ...
    def list(self) -> list[Workspace]: ...
    def delete(self, workspace_id: str) -> None:
        """Delete the workspace and everything its rows hold, in one transaction; NotFound
        when there is none. Its vectors and originals are the caller's to remove."""
        ...


class UserRepository(Protocol):
    def create(self, user: User) -> User: ...
    def get(self, user_id: str) -> User: ...
    def get_by_username(self, username: str) -> User: ...
    def list(self) -> builtins.list[User]: ...
    def count(self) -> int: ...
    def set_password_hash(self, user_id: str, password_hash: str) -> None: ...
    def add_member(self, workspace_id: str, user_id: str, role: str) -> None: ...
    def memberships(self, user_id: str) -> builtins.list[Membership]:
        """Every workspace the user is a member of, with the role, by slug."""
        ...

    def role_in(self, user_id: str, workspace_id: str) -> Role | None:
        """The user's role in that workspace; None when not a member."""
        ...

    def members(self, workspace_id: str) -> builtins.list[Member]:
        """The workspace's members, by username."""
        ...

    def set_role(self, workspace_id: str, user_id: str, role: str) -> Role:
        """Change a member's role; returns the previous one. NotFound when not a member,
        ``LastOwner`` when it would leave the workspace without an owner (checked in the
        same transaction, so two owners demoting each other cannot both succeed)."""
        ...

    def remove_member(self, workspace_id: str, user_id: str) -> Role:
        """Remove a member; returns the role they had. NotFound and ``LastOwner`` as
        ``set_role``."""
        ...


class SessionRepository(Protocol):
    """Server-side sessions, found by the token's hash only (``relata.auth.sessions``)."""

    def create(self, session: Session) -> None: ...
    def get_by_hash(self, token_hash: str) -> Session | None: ...
    def touch(self, session_id: str, last_seen_at: datetime, idle_expiry: datetime) -> None: ...
    def delete(self, session_id: str) -> None: ...
    def delete_for_user(self, user_id: str) -> int: ...
    def purge_expired(self, now: datetime, limit: int) -> int:
        """Delete at most ``limit`` sessions past either expiry; returns how many."""
        ...


class ApiTokenRepository(Protocol):
    """API tokens, found by the secret's hash only (``relata.auth.tokens``)."""

    def create(self, token: ApiToken) -> None: ...
    def get_by_hash(self, token_hash: str) -> ApiToken | None: ...
    def get(self, workspace_id: str, token_id: str) -> ApiToken:
        """NotFound when missing or in another workspace."""
        ...

    def list(self, workspace_id: str, user_id: str | None = None) -> builtins.list[ApiToken]: ...
    def revoke(self, workspace_id: str, token_id: str, at: datetime) -> ApiToken:
        """Set ``revoked_at`` (kept if already set); NotFound as ``get``."""
        ...

    def mark_used(self, token_id: str, at: datetime) -> None: ...


class InvitationRepository(Protocol):
    """Invitations to workspaces, found by the code's hash only (``relata.auth.invitations``).
    Each change is one conditional write: a code is accepted, declined or revoked once."""

    def create(self, invitation: Invitation, *, max_live: int) -> None:
        """``Conflict`` when the workspace already has ``max_live`` invitations pending and
        unexpired at ``invitation.created_at`` (counted in the same transaction)."""
        ...

    def get(self, workspace_id: str, invitation_id: str) -> Invitation:
        """NotFound when missing or in another workspace."""
        ...

    def get_by_hash(self, code_hash: str) -> Invitation | None: ...
    def list_live(self, workspace_id: str, now: datetime) -> builtins.list[Invitation]:
        """The workspace's invitations pending and unexpired at ``now``, oldest first."""
        ...

    def close(
        self,
        workspace_id: str,
        invitation_id: str,
        state: InvitationState,
        *,
        at: datetime,
        by: str | None,
    ) -> bool:
        """Move a live invitation to a final state (declined, revoked); False when it was
        not live at ``at`` (nothing written)."""
        ...

    def accept(self, invitation_id: str, user_id: str, at: datetime) -> Invitation:
        """In one write transaction: the invitation, live at ``at``, becomes accepted by
        ``user_id`` and the user a member with its role. NotFound when it is not live;
        ``Conflict`` (code ``already_member``) when the user is a member already; in both
        cases nothing is written."""
        ...


class ItemRepository(Protocol):
    def create(self, item: Item) -> Item: ...
    def create_many(self, items: Sequence[Item]) -> None: ...
    def get(self, workspace_id: str, item_id: str) -> Item: ...
    def get_many(
        self, workspace_id: str, item_ids: Sequence[str], *, with_text: bool = True
    ) -> list[Item]: ...
    def find_by_content_hash(self, workspace_id: str, content_hash: str) -> Item | None: ...
    def find_by_content_hashes(
        self, workspace_id: str, content_hashes: Sequence[str]
    ) -> dict[str, str]: ...
    def list(
        self,
        workspace_id: str,
        *,
        limit: int,
        offset: int = 0,
        source_type: str | None = None,
        created_from: datetime | None = None,
        created_to: datetime | None = None,
        status: str | None = None,
        contains: str | None = None,
        item_ids: Sequence[str] | None = None,
    ) -> list[Item]:
        """``contains``: the title or the original file name holds this text, letters in
        any case, ``%`` and ``_`` literal; ``item_ids``: only among these items."""
        ...

    def count(self, workspace_id: str) -> int: ...
    def set_status(
        self,
        workspace_id: str,
        item_id: str,
        status: ItemStatus,
        *,
        error: str | None = None,
        failed_stage: str | None = None,
    ) -> None: ...
    def filter_live(
        self,
        workspace_id: str,
        item_ids: Sequence[str],
        *,
        source_type: str | None = None,
        created_from: datetime | None = None,
        created_to: datetime | None = None,
    ) -> set[str]:
        """Which of ``item_ids`` are live and pass the filters (search's re-read)."""
        ...

    def list_failed(
        self, workspace_id: str, *, stage: str | None = None, limit: int
    ) -> builtins.list[Item]:
        """Up to ``limit`` failed live items (those that failed at ``stage``), oldest first."""
        ...

    def set_text(self, workspace_id: str, item_id: str, text: str) -> None: ...
    def set_details(
        self, workspace_id: str, item_id: str, *, title: str, metadata: dict[str, str]
    ) -> Item: ...
    def get_parsed(self, workspace_id: str, item_id: str) -> tuple[Item, dict[str, Any] | None]: ...
    def status_counts(self, workspace_id: str, item_ids: Sequence[str]) -> dict[str, int]: ...
    def mark_deleted(self, workspace_id: str, item_id: str) -> Item: ...
    def delete(self, workspace_id: str, item_id: str) -> None: ...
    def find_named(
        self,
        workspace_id: str,
        *,
        titles: Sequence[str] = (),
        filenames: Sequence[str] = (),
        exclude_item: str | None = None,
        limit: int = 50,
    ) -> builtins.list[Item]:
        """Live items (without text) whose title is one of ``titles`` or whose original file
        name is one of ``filenames``, by an index, never a scan. Titles compare by their
        ``title_key`` (``ids.title_key``: casefolded, whitespace collapsed), file names
        exactly. At most ``limit``, oldest first."""
        ...


@dataclass(frozen=True, slots=True)
class ChunkToEmbed:
    """A chunk with what its embedding needs from its item: the title (passage context) and
    the vector payload's ``source_type`` and ``created_at`` (the item's own date, else the
    time it was ingested)."""

    chunk: Chunk
    title: str
    source_type: str
    created_at: datetime


class ChunkRepository(Protocol):
    def replace_for_item(self, workspace_id: str, item_id: str, chunks: Sequence[Chunk]) -> None:
        """Exactly one generation of the item's chunks (``NotFound`` when it is gone)."""
        ...

    def list_for_item(self, workspace_id: str, item_id: str) -> list[Chunk]: ...
    def get_many(self, workspace_id: str, chunk_ids: Sequence[str]) -> list[Chunk]:
        """The chunks among ``chunk_ids`` of this workspace, in the order given."""
        ...

    def count(self, workspace_id: str) -> int: ...
    def list_to_embed(self, workspace_id: str, item_id: str) -> list[ChunkToEmbed]:
        """The live item's chunks in order; ``NotFound`` when the item is gone."""
        ...

    def list_unembedded(self, workspace_id: str, model: str, *, limit: int) -> list[ChunkToEmbed]:
        """Up to ``limit`` chunks of live items not yet embedded with ``model``."""
        ...

    def set_embedding_model(self, workspace_id: str, chunk_ids: Sequence[str], model: str) -> int:
        """Stamp the chunks with the model that embedded them; how many were stamped."""
        ...

    def count_by_embedding_model(self, workspace_id: str) -> dict[str | None, int]:
        """Chunks per ``embedding_model`` (None: not embedded)."""
        ...

    def clear_embedding_model(self, workspace_id: str) -> int:
        """Mark every chunk of the workspace as not embedded (before a rebuild)."""
        ...


class StageTransaction(Protocol):
    """One write transaction of the pipeline, scoped to one workspace: a stage's result, its
    processing run, the item's status, the next stage's job and the finished job's completion
    are committed together or not at all (``relata.pipeline``). Every method that names an
    item raises ``NotFound`` when the item is gone (deleted meanwhile), which rolls all back.
    """

    def store_parsed(
        self, item_id: str, *, text: str, structure: dict[str, Any], title: str | None
    ) -> None:
        """The parse stage's result: the text, its structure and (when given) a title."""
        ...

    def replace_chunks(self, item_id: str, chunks: Sequence[Chunk]) -> None:
        """The chunk stage's result: exactly one generation of the item's chunks."""
        ...

    def stamp_embedding_model(self, item_id: str, chunk_ids: Sequence[str], model: str) -> int:
        """The embed stage's result: the item's chunks stamped with the model."""
        ...

    def replace_entities(
        self,
        item_id: str,
        mentions: Sequence[ObservedMention],
        aliases: Sequence[ProposedAlias],
    ) -> int:
        """The entity stage's result: the item's observations become exactly ``mentions``
        (entities upserted on their identity, counts kept, entities left with no observation
        and no human decision removed) and the candidate aliases are proposed, never over a
        decided pair. Returns how many candidates were added or refreshed."""
        ...

    def replace_claims(self, item_id: str, claims: Sequence[Claim]) -> None:
        """The claims stage's result: the item's claims become exactly ``claims``. It takes
        the workspace's next claims write number first, which orders the claims writes of a
        workspace: after it, this transaction sees every claim committed before it."""
        ...

    def claims_written_after(
        self, after: int, subjects: Sequence[str], *, exclude_item: str, limit: int
    ) -> list[Claim]:
        """Claims of other live items about ``subjects`` written after claims write
        ``after`` (the number ``ClaimRepository.candidates`` read): those a stage that read
        before them has not compared with, the most confident first, at most ``limit``."""
        ...

    def repeats_written_after(
        self, after: int, keys: Sequence[str], *, exclude_item: str, limit: int
    ) -> list[Claim]:
        """As ``claims_written_after``, for the claims whose sentences have one of the
        repeat ``keys`` (``ClaimRepository.repeats``)."""
        ...

    def items_claims_written_after(
        self, after: int, item_ids: Sequence[str], *, exclude_item: str, limit: int
    ) -> list[Claim]:
        """As ``claims_written_after``, for the claims of the live items ``item_ids``
        (``ClaimRepository.of_items``)."""
        ...

    def record_contradictions(self, found: Sequence[FoundContradiction]) -> int:
        """Upsert contradictions on their identity: new ones open, decided ones kept, changed
        ones reopened with their history. How many are new or reopened."""
        ...

    def replace_relationships(
        self,
        item_id: str,
        proposed: Sequence[ProposedRelationship],
        drop: Sequence[str],
    ) -> int:
        """The relationships stage's result. Each proposed relationship is upserted on its
        dedupe key: a new one is inserted unreviewed; an unreviewed one takes the new type,
        score, version, features and evidence; a confirmed or edited one refreshes only its
        evidence (never its decision, type, score, version or features); a rejected one
        refreshes only its evidence unless ``reopen``, when it becomes unreviewed with the
        new values (its ``decision`` kept). The contribution index (shared entity keys) is
        replaced for each. ``drop`` are dedupe keys of pairs no longer storable: deleted if
        unreviewed, else left alone. How many were inserted or reopened."""
        ...

    def create_items(self, items: Sequence[Item]) -> None:
        """New items with their version 1 (a message's new attachments, written with the
        message's new version); ``DuplicateItem`` when some content is live already."""
        ...

    def mark_deleted(self, item_ids: Sequence[str]) -> None:
        """The first step of deleting these items (gone from every read, their content free
        again); the caller removes the rest after the commit, as ``ItemCatalog.delete`` does.
        Items gone already are skipped."""
        ...

    def replace_attachments(self, message_id: str, attachments: Sequence[Attachment]) -> None:
        """The message's attachment rows become exactly ``attachments`` (docs/decisions/0048)."""
        ...

    def switch_version(self, version: ItemVersion) -> None:
        """A new version of the item's content (``relata.ingest.versions``): recorded, and
        copied to the item (hash, size, type, filename, original), whose text, structure
        and chunks go at once so search sees the new version only; the rest the old version
        contributed is replaced by the pass that follows. ``DuplicateItem`` when another
        live item holds that content."""
        ...

    def add_run(self, run: ProcessingRun) -> None: ...
    def set_item_status(
        self,
        item_id: str,
        status: ItemStatus,
        *,
        error: str | None = None,
        failed_stage: str | None = None,
    ) -> None: ...
    def enqueue(self, job: Job) -> Job:
        """Add a pending job, or return the pending job that already has its key."""
        ...

    def complete_job(self, job_id: str, owner: str, now: datetime) -> None:
        """Mark the running job ``succeeded``; ``LeaseLost`` (all rolled back) when ``owner``
        no longer holds its lease, so a stale worker's result is never committed."""
        ...


class AttachmentRepository(Protocol):
    """E-mail items' attachments (``item_attachments``): what each became, or why not."""

    def add(self, workspace_id: str, attachments: Sequence[Attachment]) -> None:
        """Record a message's attachments (once, when it is ingested)."""
        ...

    def of_message(self, workspace_id: str, message_id: str) -> list[Attachment]:
        """The message's attachments in order (empty for another workspace's item)."""
        ...

    def message_of(self, workspace_id: str, item_id: str) -> str | None:
        """The message the item is an attachment of, if any."""
        ...

    def messages_of(self, workspace_id: str, item_ids: Sequence[str]) -> dict[str, str]:
        """For those of ``item_ids`` that are attachments of a live message: that message's
        id (at most 1000 ids are looked up)."""
        ...


class ItemVersionRepository(Protocol):
    """The versions of items' content (``item_versions``), written with the item: version
    1 by ``ItemRepository.create``, later ones by ``StageTransaction.switch_version``."""

    def list_for_item(self, workspace_id: str, item_id: str) -> list[ItemVersion]:
        """The item's versions, newest first (empty for another workspace's item)."""
        ...

    def get(self, workspace_id: str, item_id: str, number: int) -> ItemVersion:
        """One version; ``NotFound`` when the item or the version is not there."""
        ...

    def forget_original(self, workspace_id: str, item_id: str, number: int) -> None:
        """The version's original is about to be removed: its path becomes NULL."""
        ...

    def original_paths(self, workspace_id: str, item_id: str) -> list[str]:
        """Every stored original path the item's versions refer to."""
        ...


class UnitOfWork(Protocol):
    def begin(
        self, workspace_id: str, *, durable: bool = True
    ) -> AbstractContextManager[StageTransaction]:
        """A write transaction: committed when the block ends, rolled back if it raises.
        ``durable=False`` for what the pipeline re-derives (a stage's result): its commit may
        be lost to a power loss, never to a killed process (docs/decisions/0029)."""
        ...

    def snapshot(self) -> AbstractContextManager[None]:
        """A block whose reads (through this store's repositories, in this thread) share one
        read transaction: one consistent view, and one transaction instead of one per read.
        Writes inside it are not seen by those reads: a stage's ``run`` only reads."""
        ...


class EntityRepository(Protocol):
    """Entities, their observations and alias candidates (docs/decisions/0015-entities.md).
    Written by the entity stage through its unit of work; decisions through ``decide_alias``."""

    def get(self, workspace_id: str, entity_id: str) -> Entity: ...
    def get_many(self, workspace_id: str, entity_ids: Sequence[str]) -> list[Entity]: ...
    def list(
        self,
        workspace_id: str,
        *,
        name: str | None = None,
        entity_type: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> builtins.list[Entity]: ...
    def find_by_keys(self, workspace_id: str, keys: Sequence[str]) -> builtins.list[Entity]: ...
    def similar(
        self, workspace_id: str, tokens: Iterable[str], *, limit: int = 50
    ) -> builtins.list[Entity]: ...
    def observations(
        self, workspace_id: str, entity_id: str, *, limit: int = 100
    ) -> builtins.list[EntityObservation]: ...
    def observations_for_item(
        self, workspace_id: str, item_id: str
    ) -> builtins.list[EntityObservation]: ...
    def mentions_by_item(
        self, workspace_id: str, entity_ids: Sequence[str], *, limit: int
    ) -> builtins.list[tuple[str, str, int]]: ...
    def co_mentioned(
        self, workspace_id: str, entity_id: str, *, limit: int = 20
    ) -> builtins.list[tuple[Entity, int]]: ...
    def type_votes(self, workspace_id: str, entity_id: str) -> builtins.list[tuple[str, int]]: ...
    def items_naming(
        self,
        workspace_id: str,
        entity_ids: Sequence[str],
        *,
        exclude_item: str | None = None,
        per_entity: int = 50,
        max_items_with: int = 200,
    ) -> dict[str, tuple[int, builtins.list[str]]]: ...
    def first_observations(
        self, workspace_id: str, entity_ids: Sequence[str], item_ids: Sequence[str]
    ) -> dict[tuple[str, str], EntityObservation]: ...
    def aliases(
        self,
        workspace_id: str,
        *,
        status: AliasStatus | None = None,
        entity_id: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> builtins.list[EntityAlias]: ...
    def confirmed_alias_ids(
        self, workspace_id: str, entity_ids: Sequence[str]
    ) -> dict[str, set[str]]: ...
    def decide_alias(
        self,
        workspace_id: str,
        alias_id: str,
        status: AliasStatus,
        *,
        by: str,
        note: str | None = None,
    ) -> EntityAlias: ...
    def forget_item(self, workspace_id: str, item_id: str) -> None: ...


class ClaimRepository(Protocol):
    def replace_for_item(
        self, workspace_id: str, item_id: str, claims: Sequence[Claim]
    ) -> None: ...
    def list_for_item(self, workspace_id: str, item_id: str) -> builtins.list[Claim]: ...
    def list_by_subjects(
        self,
        workspace_id: str,
        subjects: Sequence[str],
        *,
        exclude_item: str | None = None,
        limit: int = 2000,
    ) -> builtins.list[Claim]:
        """Claims of live items about any of ``subjects`` (by the subject index)."""
        ...

    def candidates(
        self, workspace_id: str, subjects: Sequence[str], *, exclude_item: str, limit: int
    ) -> tuple[int, builtins.list[Claim]]:
        """The number of the workspace's last committed claims write (0 before the first),
        then ``list_by_subjects`` less the item's own, in one read: every claim of a write up
        to that number is among them (later ones may be too); the claims stage compares
        those written after it in its own write."""
        ...

    def repeats(
        self, workspace_id: str, keys: Sequence[str], *, exclude_item: str, limit: int
    ) -> tuple[int, builtins.list[Claim]]:
        """As ``candidates``, for the claims of other live items whose sentences have one
        of the repeat ``keys`` (the ``(workspace, repeat_key)`` index; docs/decisions/0039)."""
        ...

    def of_items(
        self,
        workspace_id: str,
        item_ids: Sequence[str],
        *,
        exclude_item: str,
        limit: int,
        held: Container[str] = ...,
    ) -> tuple[int, builtins.list[str], builtins.list[Claim]]:
        """As ``candidates``, for the claims of the live items ``item_ids`` other than
        ``exclude_item`` (the ``(workspace, item_id)`` index): those of the items whose
        wording is most like an item's (docs/decisions/0052). Returns the mark, the ids of
        all of them (the most confident first), and the claims whose ids are not in
        ``held`` (the caller holds those already: a stored claim never changes)."""
        ...


class ContradictionRepository(Protocol):
    """The contradiction ledger (docs/decisions/0017); written by the claims stage through
    its unit of work, resolved by a person through ``resolve``."""

    def get(self, workspace_id: str, contradiction_id: str) -> Contradiction: ...
    def list(
        self,
        workspace_id: str,
        *,
        status: ContradictionStatus | None = None,
        subject: str | None = None,
        item_id: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> builtins.list[Contradiction]: ...
    def between_items(
        self, workspace_id: str, item_ids: Sequence[str]
    ) -> builtins.list[Contradiction]: ...
    def open_counts(self, workspace_id: str, item_ids: Sequence[str]) -> dict[str, int]: ...
    def resolve(
        self,
        workspace_id: str,
        contradiction_id: str,
        resolution: Resolution,
        *,
        by: str,
        note: str | None = None,
    ) -> Contradiction: ...


class DisagreementRepository(Protocol):
    """One record per disagreement (docs/decisions/0038), rebuilt from the pair-level
    contradictions by the claims stage's write; resolved by a person through ``resolve``."""

    def get(self, workspace_id: str, disagreement_id: str) -> Disagreement: ...
    def list(
        self,
        workspace_id: str,
        *,
        status: DisagreementStatus | None = None,
        kind: DisagreementKind | None = None,
        subject: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> builtins.list[Disagreement]: ...
    def supersessions(
        self, workspace_id: str, item_ids: Sequence[str]
    ) -> builtins.list[Disagreement]: ...
    def resolve(
        self,
        workspace_id: str,
        disagreement_id: str,
        resolution: Resolution,
        *,
        by: str,
        position: int | None = None,
        note: str | None = None,
    ) -> Disagreement: ...


class RelationshipRepository(Protocol):
    """Scored, evidenced links between items (docs/decisions/0019); written by the
    relationships stage through its unit of work, decided by a person through ``review``.
    Everything is workspace-scoped: another workspace's relationship is ``NotFound``."""

    def upsert_by_dedupe_key(self, relationship: Relationship) -> Relationship: ...
    def get(self, workspace_id: str, relationship_id: str) -> Relationship: ...
    def list_for_items(
        self,
        workspace_id: str,
        item_ids: Sequence[str],
        *,
        include_rejected: bool = False,
        limit: int = 1000,
        light: bool = False,
        followed_from: float | None = None,
    ) -> builtins.list[Relationship]:
        """Relationships with either endpoint in ``item_ids``, best score first (id breaks
        ties); rejected ones only when asked; ``light``: without features and evidence;
        ``followed_from``: only those a person confirmed or edited, or unreviewed ones
        scoring at least this (what search expands along)."""
        ...

    def queue(
        self, workspace_id: str, *, limit: int = 50, offset: int = 0
    ) -> builtins.list[Relationship]:
        """The review queue: unreviewed relationships, best score first, id breaking ties."""
        ...

    def review(
        self,
        workspace_id: str,
        relationship_id: str,
        status: ReviewStatus,
        *,
        by: str,
        relationship_type: RelationshipType | None = None,
        note: str | None = None,
        decision: JSONDict | None = None,
    ) -> Relationship:
        """A person's decision: ``confirmed``, ``rejected`` or ``edited`` (which sets
        ``relationship_type``, required then). Records who, when, the note and the evidence
        snapshot (``decision``). ``NotFound`` for a missing or another workspace's one."""
        ...

    def delete_for_item(self, workspace_id: str, item_id: str) -> int:
        """Remove every relationship with the item as an endpoint; how many."""
        ...

    def sharing_entities(
        self, workspace_id: str, entity_keys: Sequence[str], *, limit: int = 500
    ) -> builtins.list[Relationship]:
        """Relationships whose shared-entity evidence names any of ``entity_keys`` (by the
        contribution index), best score first."""
        ...

    def rescore(
        self,
        workspace_id: str,
        updates: Sequence[Relationship],
        drop: Sequence[str],
    ) -> None:
        """Delete by contribution: each of ``updates`` (by id) takes the given type, score,
        version and features if it is still unreviewed (a reviewed one keeps them); the ids
        in ``drop`` are deleted if still unreviewed. One transaction."""
        ...


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
    """The audit log's store: append and read, nothing else. The database refuses UPDATE,
    DELETE (and TRUNCATE on PostgreSQL) on ``audit_events`` by triggers (migration 0007), so
    no code path, raw SQL included, can change what was recorded."""

    def append(self, event: AuditEvent) -> None: ...
    def append_many(self, events: Sequence[AuditEvent]) -> None:
        """All of ``events`` in one transaction (they must share a workspace)."""
        ...

    def list(
        self,
        workspace_id: str,
        *,
        action: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> builtins.list[AuditEvent]:
        """The workspace's events, newest first (ties by id), ``since <= at < until``."""
        ...


class AuditRecorder(Protocol):
    """Records that an action happened: injected into every service whose actions are
    audited (``relata.audit.AuditService`` in production). Called after the action
    succeeded; the request id is the current correlation id, the time the clock's.

    ``details`` is small and structured (ids, counts, a decision word, a stage): never
    document content, titles or names. A recorder refuses anything larger."""

    def record(
        self,
        workspace_id: str,
        action: AuditAction,
        actor: Actor,
        *,
        target_kind: AuditTarget | None = None,
        target_id: str | None = None,
        details: Mapping[str, object] | None = None,
    ) -> AuditEvent: ...

    def record_each(
        self,
        workspace_id: str,
        action: AuditAction,
        actor: Actor,
        target_kind: AuditTarget,
        targets: Sequence[tuple[str, Mapping[str, object]]],
    ) -> builtins.list[AuditEvent]:
        """One event per ``(target_id, details)``, all written in one transaction."""
        ...


@dataclass(frozen=True, slots=True)
class TextHit:
    """An item found by full text. ``score``: higher is better, comparable within one result
    list only; ``rank`` is 1-based; ``matched_terms`` are the document words the index matched
    (lower-cased), from the title and the best passage of the text."""

    id: str
    score: float
    rank: int
    matched_terms: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ChunkTextHit:
    """A chunk found by full text. ``highlights`` are ``(start, end)`` offsets (code points,
    end exclusive) into the chunk's text of every word the index matched."""

    chunk_id: str
    item_id: str
    score: float
    rank: int
    matched_terms: tuple[str, ...] = ()
    highlights: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True, slots=True)
class TextMarks:
    """What the index matched in one chunk: the document words (lower-cased) and their
    ``(start, end)`` offsets into the chunk's text (code points, end exclusive)."""

    matched_terms: tuple[str, ...] = ()
    highlights: tuple[tuple[int, int], ...] = ()


class TextSearch(Protocol):
    """Full-text legs of search. Always workspace-filtered (``MissingWorkspace`` on an empty
    one), live items only; a query with no words returns ``[]``; user query syntax is never
    interpreted (terms are ORed). ``item_ids=[]`` matches nothing, ``None`` means no filter.

    ``marks=False`` ranks only: the hits carry no matched terms or highlights, which cost more
    than the ranking (the highlighter re-reads every hit's text). A caller that shows a page
    of a longer candidate list ranks without marks, then asks ``mark_items`` /
    ``mark_chunks`` for the page: the same words and offsets the marked search gives."""

    def search_items(
        self,
        workspace_id: str,
        query: str,
        *,
        limit: int,
        source_type: str | None = None,
        created_from: datetime | None = None,
        created_to: datetime | None = None,
        item_ids: Sequence[str] | None = None,
        marks: bool = True,
    ) -> list[TextHit]: ...
    def search_chunks(
        self,
        workspace_id: str,
        query: str,
        *,
        limit: int,
        item_ids: Sequence[str] | None = None,
        marks: bool = True,
    ) -> list[ChunkTextHit]: ...
    def mark_items(
        self, workspace_id: str, query: str, item_ids: Sequence[str]
    ) -> dict[str, tuple[str, ...]]:
        """The words of each live item the query matched (title and best passage), as
        ``search_items`` reports them; items that match nothing are left out."""
        ...

    def mark_chunks(
        self, workspace_id: str, query: str, chunk_ids: Sequence[str]
    ) -> dict[str, TextMarks]:
        """Matched words and highlight offsets of each live chunk, as ``search_chunks``
        reports them; chunks that match nothing are left out."""
        ...

    def items_matching(self, workspace_id: str, query: str, item_ids: Sequence[str]) -> set[str]:
        """Which of the live ``item_ids`` match any query term (title or text): unranked,
        so it reads only those items' matches."""
        ...

    def items_containing(
        self,
        workspace_id: str,
        phrase: str,
        *,
        limit: int,
        exclude_item: str | None = None,
    ) -> list[str]:
        """Live items with a chunk holding ``phrase``'s words in this order, as the index
        tokenizes them (at most ``limit``, in no set order): candidates for an exact lookup
        the caller checks in the text. Unscored, so it reads only the phrase's matches."""
        ...

    def items_sharing_terms(
        self,
        workspace_id: str,
        terms: Sequence[str],
        *,
        limit: int,
        exclude_item: str | None = None,
        max_items_per_term: int = ...,
    ) -> list[TextHit]:
        """Live items holding the most, and the rarest, of ``terms`` (words the caller chose,
        reduced as a query is), best first: each scores the sum of the IDF, over the
        workspace's live items, of the terms it holds (presence, not frequency or length).
        A term held by more than ``max_items_per_term`` items is too common to count and is
        not read further, so the cost is bounded by the terms, not by the workspace's size.
        ``matched_terms`` are the terms each holds. For relating items, not for search."""
        ...


@dataclass(frozen=True, slots=True)
class VectorRecord:
    """One chunk's vector and its thin payload: exactly what retrieval filters on, no text.

    ``chunk_id`` (a UUID string) is the point id, so re-embedding overwrites in place.
    """

    chunk_id: str
    workspace_id: str
    item_id: str
    source_type: str
    created_at: datetime
    embedding_model: str
    vector: Sequence[float]


@dataclass(frozen=True, slots=True)
class VectorHit:
    """A search result: ``score`` is cosine similarity, higher is better."""

    chunk_id: str
    item_id: str
    score: float


class VectorStore(Protocol):
    """Vectors of one width (``dimensions``), one partition per workspace
    (docs/decisions/0008-vector-stores.md).

    ``upsert`` validates the whole batch before writing anything: a vector of another width
    is ``Permanent`` (the fix: set ``RELATA_EMBEDDING_DIMENSIONS``, then re-embed). Every
    method taking ``workspace_id`` raises ``MissingWorkspace`` on an empty one; ``search``
    always filters by it. Date filters are ``created_from <= created_at < created_to``; an
    empty ``item_ids``/``source_types`` sequence matches nothing, ``None`` means no filter.
    """

    dimensions: int

    def prepare(self) -> None:
        """Check and create what the store needs before its first vector (pgvector: the
        extension and the table), raising ``ConfigError`` with the operator's fix; called at
        start-up by ``relata migrate``, ``serve`` and ``worker``. Idempotent."""
        ...

    def upsert(self, records: Sequence[VectorRecord]) -> None: ...
    def search(
        self,
        workspace_id: str,
        vector: Sequence[float],
        *,
        k: int,
        item_ids: Sequence[str] | None = None,
        source_types: Sequence[str] | None = None,
        created_from: datetime | None = None,
        created_to: datetime | None = None,
    ) -> list[VectorHit]: ...
    def delete_by_item(self, workspace_id: str, item_id: str) -> int: ...
    def delete_by_workspace(self, workspace_id: str) -> int: ...
    def item_vectors(
        self, workspace_id: str, item_id: str, *, limit: int = 256
    ) -> list[list[float]]:
        """The stored vectors of the item's chunks (current width), at most ``limit``, in
        chunk-id order; ``[]`` when it has none. The relationships stage averages them into an
        item-level vector to find the item's nearest neighbours."""
        ...

    def count(self, workspace_id: str) -> int:
        """Vectors of the current width stored for the workspace."""
        ...

    def export(
        self, workspace_id: str, *, after: str | None = None, limit: int = 256
    ) -> list[VectorRecord]:
        """The workspace's vectors of the current width with their payload, in chunk-id
        order, at most ``limit`` (1..1000) after chunk id ``after``: a bounded page, so a
        whole store is read page by page (``relata transfer`` copies one store into
        another; docs/decisions/0034). Vectors come back as stored (float32 values; Qdrant
        stores them normalised), ``created_at`` as a UTC datetime."""
        ...

    def close(self) -> None: ...


class JobRepository(Protocol):
    """The job queue's store (``relata.jobs``). ``owner`` is the lease token of one claim:
    every transition of a running job checks it and raises ``LeaseLost`` when it no longer
    holds, so a stale worker can never overwrite the new owner's result."""

    def enqueue(self, job: Job, *, durable: bool = True) -> Job:
        """Insert a pending job, or return the pending job that already has its key.
        ``durable=False``: a commit a later durable one must make durable (the uploads of
        ``relata.ingest``: their audit record; docs/decisions/0029)."""
        ...

    def get(self, workspace_id: str, job_id: str) -> Job: ...
    def list(
        self,
        workspace_id: str,
        *,
        status: JobStatus | None = None,
        kind: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> list[Job]: ...
    def has_outstanding(self, workspace_id: str, *, kind: str | None = None) -> bool:
        """Whether a job of the workspace (of ``kind``) is pending or running, read in one
        statement: a job completing while enqueuing its successor is never missed."""
        ...

    def claim(self, owner: str, now: datetime, lease_until: datetime) -> Job | None:
        """Atomically lease the next due pending job to ``owner`` (attempts + 1)."""
        ...

    def renew(self, job_id: str, owner: str, lease_until: datetime, now: datetime) -> None: ...
    def succeed(self, job_id: str, owner: str, now: datetime) -> Job: ...
    def fail(self, job_id: str, owner: str, now: datetime, error: str) -> Job: ...
    def reschedule(
        self, job_id: str, owner: str, now: datetime, run_after: datetime, error: str
    ) -> Job:
        """Return a running job to pending (a retry); cancelled if a pending twin exists."""
        ...

    def release_expired(self, now: datetime, *, limit: int = 100) -> builtins.list[Job]:
        """Return running jobs whose lease has expired to pending (or fail them when their
        attempt budget is spent); the jobs as they now are."""
        ...


class Embedder(Protocol):
    """Turns texts into vectors of one fixed width (docs/decisions/0006-embedding-providers.md).

    ``embed`` returns exactly one vector per input, in input order, each ``dimensions`` wide;
    anything else is ``Permanent``. It honours ``cancel`` (raising ``Cancelled``), retries only
    transient failures and only a bounded number of times, and never logs the texts.
    """

    @property
    def model_id(self) -> str:
        """Stamped onto every vector (``embedding_model``) and recorded in model_versions."""
        ...

    @property
    def dimensions(self) -> int: ...

    @property
    def provider(self) -> str:
        """A bounded label for metrics and runs: ``local``, ``ollama``, ``openai``."""
        ...

    def embed(self, texts: Sequence[str], cancel: Cancel) -> list[list[float]]: ...
    def close(self) -> None:
        """Release sessions and threads; the embedder is not used afterwards."""
        ...


@dataclass(frozen=True, slots=True)
class ProviderHealth:
    """What the model status page shows for one provider."""

    ok: bool
    provider: str
    model: str
    detail: str = ""
    latency_ms: float | None = None


@runtime_checkable
class HealthChecker(Protocol):
    """Optional: a provider that reports its own health (raises nothing but Cancelled)."""

    def health(self, cancel: Cancel) -> ProviderHealth: ...


@dataclass(frozen=True, slots=True)
class Message:
    """One chat message: ``role`` is system, user or assistant."""

    role: str
    content: str


@dataclass(frozen=True, slots=True)
class CompletionRequest:
    """A language-model call. ``schema`` (named ``schema_name``) asks for structured output;
    ``model`` overrides the provider's configured model for this call."""

    messages: tuple[Message, ...]
    schema: dict[str, object] | None = None
    schema_name: str = "relata_task"
    max_tokens: int = 512
    temperature: float = 0.0
    model: str | None = None


@dataclass(frozen=True, slots=True)
class TokenUsage:
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


@dataclass(frozen=True, slots=True)
class CompletionResponse:
    """The raw, unparsed content: parsing belongs to ``relata.analysis`` so that a validation
    failure is attributed to the task, not to the transport."""

    content: str
    model: str
    usage: TokenUsage | None = None


class Analyser(Protocol):
    """A language model behind one provider (docs/decisions/0007-invalid-model-output.md).

    ``complete`` honours ``cancel`` (raising ``Cancelled``), applies a per-request timeout,
    retries only transient failures a bounded number of times, refuses redirects, bounds the
    response size and never logs messages or content. An envelope that is not as promised
    (not JSON, no choices, empty content) is transient; the content itself is returned as-is.
    """

    @property
    def model_id(self) -> str: ...

    def complete(self, request: CompletionRequest, cancel: Cancel) -> CompletionResponse: ...


@runtime_checkable
class StreamingAnalyser(Protocol):
    """Optional: an ``Analyser`` that can also hand over a completion's content as the model
    writes it (docs/decisions/0042-streaming-answers.md).

    ``stream`` yields the content in pieces, in order; joined, they are what ``complete``
    would have returned, still unparsed. It keeps ``complete``'s rules (cancel, redirects,
    size bound, no content logged) and adds an idle timeout between pieces; a stream is not
    retried once it has started. Close the iterator to stop the model early.
    """

    @property
    def model_id(self) -> str: ...

    def complete(self, request: CompletionRequest, cancel: Cancel) -> CompletionResponse: ...

    def stream(self, request: CompletionRequest, cancel: Cancel) -> Iterator[str]: ...
