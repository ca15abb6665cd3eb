"""Domain records. Plain dataclasses: no database, HTTP or framework types.

Every record of user content carries ``workspace_id``: the workspace is the data boundary.
Timestamps are timezone-aware UTC ``datetime`` values.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from relata.domain.vocabulary import (
    ActorKind,
    ClaimNature,
    ContradictionStatus,
    DisagreementKind,
    DisagreementStatus,
    InvitationState,
    RelationshipType,
    Resolution,
    Role,
    RunOutcome,
)
from relata.domain.vocabulary import EntityType as EntityType  # re-exported: entities use it

JSONDict = dict[str, Any]


class SourceType(enum.StrEnum):
    TEXT = "text"
    MARKDOWN = "markdown"
    JSON = "json"
    PDF = "pdf"
    DOCX = "docx"
    HTML = "html"
    CSV = "csv"
    TSV = "tsv"
    XLSX = "xlsx"
    PPTX = "pptx"
    EMAIL = "email"


class ItemStatus(enum.StrEnum):
    PENDING = "pending"
    PROCESSING = "processing"
    READY = "ready"
    FAILED = "failed"


class JobStatus(enum.StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


class ReviewStatus(enum.StrEnum):
    UNREVIEWED = "unreviewed"
    CONFIRMED = "confirmed"
    REJECTED = "rejected"
    EDITED = "edited"


class AliasStatus(enum.StrEnum):
    CANDIDATE = "candidate"
    CONFIRMED = "confirmed"
    REJECTED = "rejected"


@dataclass(frozen=True, slots=True)
class Workspace:
    id: str
    slug: str
    name: str
    created_at: datetime


@dataclass(frozen=True, slots=True)
class User:
    id: str
    username: str
    password_hash: str | None
    display_name: str
    is_admin: bool
    created_at: datetime
    oauth_provider: str | None = None
    oauth_subject: str | None = None
    disabled: bool = False


@dataclass(frozen=True, slots=True)
class Session:
    """A signed-in browser (``relata.auth.sessions``): only the token's hash is stored; the
    session ends at ``idle_expiry`` (moved on by use) or ``absolute_expiry``, whichever first."""

    id: str
    user_id: str
    workspace_id: str
    token_hash: str
    created_at: datetime
    idle_expiry: datetime
    absolute_expiry: datetime
    last_seen_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class ApiToken:
    """An API token (``relata.auth.tokens``): one workspace, one role, the secret's hash and a
    short public ``prefix`` to tell it apart; refused once revoked or past ``expires_at``."""

    id: str
    workspace_id: str
    user_id: str
    name: str
    token_hash: str
    created_at: datetime
    expires_at: datetime | None = None
    revoked_at: datetime | None = None
    prefix: str = ""
    role: Role = Role.VIEWER
    last_used_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class Membership:
    """A user's role in one workspace (``workspace_members``)."""

    workspace: Workspace
    role: Role


@dataclass(frozen=True, slots=True)
class Member:
    """One member of a workspace, as its owners see them (``workspace_members`` with the
    user's public fields: never a password hash)."""

    user_id: str
    username: str
    display_name: str
    role: Role
    added_at: datetime


@dataclass(frozen=True, slots=True)
class Invitation:
    """An invitation to a workspace with a role (``relata.auth.invitations``): only the
    code's hash and its short public ``prefix`` are stored. It makes nobody a member until a
    signed-in user accepts it, once, while it is ``pending`` and before ``expires_at``;
    ``closed_by`` is who accepted, declined or revoked it (None: the CLI)."""

    id: str
    workspace_id: str
    role: Role
    code_hash: str
    prefix: str
    created_at: datetime
    expires_at: datetime
    created_by: str | None = None
    state: InvitationState = InvitationState.PENDING
    closed_at: datetime | None = None
    closed_by: str | None = None

    def live(self, now: datetime) -> bool:
        """Whether it can still be accepted or declined at ``now``."""
        return self.state is InvitationState.PENDING and now < self.expires_at


@dataclass(frozen=True, slots=True)
class Item:
    id: str
    workspace_id: str
    title: str
    source_type: SourceType
    content_hash: str
    size_bytes: int
    ingested_at: datetime
    created_at: datetime | None = None
    status: ItemStatus = ItemStatus.PENDING
    deliberate_duplicate: bool = False
    text: str | None = None
    original_path: str | None = None
    original_filename: str | None = None
    media_type: str | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    chunk_count: int = 0
    error: str | None = None
    updated_at: datetime | None = None
    #: The pipeline stage whose failure left the item ``failed`` (a ``StageKind`` value).
    failed_stage: str | None = None


@dataclass(frozen=True, slots=True)
class Attachment:
    """One attachment of an e-mail item (docs/decisions/0048), numbered from 1 in the
    message's order: ``item_id`` is the item it became, None when it was not read
    (``reason`` says why) or that item was deleted since."""

    message_id: str
    number: int
    name: str
    item_id: str | None = None
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class ItemVersion:
    """One version of an item's content (docs/decisions/0045-item-versions.md): numbered from
    1, the highest is the item's current content. ``original_path`` is None once a previous
    version's original was removed (``RELATA_KEEP_PREVIOUS_ORIGINALS``)."""

    item_id: str
    workspace_id: str
    number: int
    sha256: str
    size_bytes: int
    source_type: SourceType
    created_at: datetime
    filename: str | None = None
    media_type: str | None = None
    original_path: str | None = None
    created_by_kind: str | None = None  # an ``ActorKind`` value; None before versions existed
    created_by: str | None = None  # the user, for a person


@dataclass(frozen=True, slots=True)
class Chunk:
    id: str
    workspace_id: str
    item_id: str
    sequence: int
    text: str
    content_hash: str
    start_offset: int
    end_offset: int
    heading_path: tuple[str, ...] = ()
    page: int | None = None
    token_count: int = 0
    embedding_model: str | None = None


@dataclass(frozen=True, slots=True)
class Entity:
    """A person, organisation, place or term a workspace's items name: one per
    (workspace, type, normalised key)."""

    id: str
    workspace_id: str
    name: str
    entity_type: EntityType
    normalised_key: str
    created_at: datetime
    observation_count: int = 1
    last_seen_at: datetime | None = None
    #: When a person last acted on it (an alias decision): kept even with no source left.
    decided_at: datetime | None = None
    #: How many live items name it.
    item_count: int = 0


@dataclass(frozen=True, slots=True)
class EntityObservation:
    """One place an item names an entity: ``item.text[start:end] == quotation``."""

    id: str
    workspace_id: str
    entity_id: str
    item_id: str
    chunk_id: str | None
    start: int
    end: int
    quotation: str
    extractor: str
    extractor_version: str
    created_at: datetime
    agreed: bool = False
    #: The type and name this mention's own evidence gave (the entity's are decided from
    #: all of its mentions); None on rows written before they were kept.
    observed_type: EntityType | None = None
    observed_name: str | None = None


@dataclass(frozen=True, slots=True)
class ObservedMention:
    """What the entity stage hands its unit of work for one mention: the entity's identity
    and display name, and where the item names it."""

    entity_type: EntityType
    normalised_key: str
    name: str
    chunk_id: str | None
    start: int
    end: int
    quotation: str
    extractor: str
    extractor_version: str
    agreed: bool = False
    #: The name's blocking keys, indexed so alias candidates are found without a scan.
    tokens: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class ProposedAlias:
    """A candidate alias between two identities (type, normalised key), with its score and
    the reason a person reads before confirming or rejecting it."""

    first: tuple[EntityType, str, str]  # type, normalised key, display name
    second: tuple[EntityType, str, str]
    score: float
    reason: str
    proposer: str = "deterministic"


@dataclass(frozen=True, slots=True)
class EntityAlias:
    """A candidate link between two entities and a person's decision on it. Confirmed links
    the two (both records stay); rejected is remembered and never proposed again."""

    id: str
    workspace_id: str
    entity_id: str
    other_id: str
    score: float
    reason: str
    proposer: str
    created_at: datetime
    status: AliasStatus = AliasStatus.CANDIDATE
    note: str | None = None
    decided_by: str | None = None
    decided_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class Claim:
    """A statement an item makes about a subject (an entity it names): the exact quotation
    at ``item.text[start:end]``, its nature, and the facets comparison uses."""

    id: str
    workspace_id: str
    item_id: str
    subject: str  # the subject entity's normalised key
    statement: str
    nature: ClaimNature
    dedupe_key: str
    created_at: datetime
    chunk_id: str | None = None
    quotation: str | None = None
    confidence: float = 0.0
    extractor: str = "deterministic"
    subject_name: str = ""
    start: int = 0
    end: int = 0
    extractor_version: str = ""
    #: A summary of the comparable facets (dates, quantities, polarity, direction, predicate).
    facets: JSONDict = field(default_factory=dict)
    #: The facets exactly as the detector compares them (``claims.facets.facets_record``),
    #: so a stored claim is not read again; None: read them from the quotation.
    comparable: JSONDict | None = None
    #: The key its sentence shares with its repeats, values masked
    #: (``claims.repeats``, docs/decisions/0039); None: the sentence is not repeatable.
    repeat_key: str | None = None


@dataclass(frozen=True, slots=True)
class ClaimSide:
    """One side of a contradiction: the claim and its item, quotation and offsets."""

    claim_key: str
    item_id: str
    quotation: str
    start: int
    end: int
    statement: str
    conflict_start: int  # the conflicting words, item offsets
    conflict_end: int


@dataclass(frozen=True, slots=True)
class FoundContradiction:
    """What a detector found between two claims of different items about one subject."""

    identity: str  # the pair, stable across reprocessing of unchanged text
    content: str  # both claims' content: a change reopens a resolved contradiction
    subject: str
    subject_name: str
    first: ClaimSide
    second: ClaimSide
    facet: str
    reason: str
    confidence: float
    detector: str
    detector_version: str


@dataclass(frozen=True, slots=True)
class Contradiction:
    """A ledger entry: two claims that cannot both hold, why, and what a person decided."""

    id: str
    workspace_id: str
    subject: str
    subject_name: str
    first: ClaimSide
    second: ClaimSide
    facet: str
    reason: str
    confidence: float
    detector: str
    detector_version: str
    status: ContradictionStatus
    created_at: datetime
    resolution: Resolution | None = None
    note: str | None = None
    resolved_by: str | None = None
    resolved_at: datetime | None = None
    history: tuple[JSONDict, ...] = ()
    updated_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class DisagreementPosition:
    """A value in a disagreement and every source (a claim of an item) that holds it."""

    value: str
    sources: tuple[ClaimSide, ...] = ()
    #: Each source's date (ISO) by item id, when dated (document date or ``created_at``).
    dates: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class Disagreement:
    """One record per disagreement (ADR 38): a subject, what is disputed (``topic``), and two
    or more positions; the pair-level contradictions are the evidence underneath."""

    id: str
    workspace_id: str
    subject: str
    subject_name: str
    topic: str
    facet: str
    kind: DisagreementKind
    status: DisagreementStatus
    positions: tuple[DisagreementPosition, ...]
    confidence: float
    created_at: datetime
    #: The position that supersedes the others (a supersession), by index.
    current: int | None = None
    resolution: Resolution | None = None
    #: The position a person found correct (``position_correct``), by index.
    position: int | None = None
    note: str | None = None
    resolved_by: str | None = None
    resolved_at: datetime | None = None
    history: tuple[JSONDict, ...] = ()
    updated_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class Relationship:
    id: str
    workspace_id: str
    source_id: str
    target_id: str
    relationship_type: RelationshipType
    score: float
    score_version: str
    dedupe_key: str
    created_at: datetime
    evidence: tuple[JSONDict, ...] = ()
    features: JSONDict = field(default_factory=dict)
    review_status: ReviewStatus = ReviewStatus.UNREVIEWED
    reviewed_by: str | None = None
    reviewed_at: datetime | None = None
    updated_at: datetime | None = None
    #: The reviewer's note (at most 1,000 characters).
    review_note: str | None = None
    #: What the evidence was when a person decided (``relationships.evidence.EvidenceSnapshot``
    #: as JSON): a rejected relationship is proposed again only when its evidence differs
    #: materially from this (docs/decisions/0019).
    decision: JSONDict | None = None


@dataclass(frozen=True, slots=True)
class ProposedRelationship:
    """The relationships stage's finding for one pair, written by
    ``StageTransaction.replace_relationships``. ``relationship.source_id`` is the smaller of the
    two item ids; ``entity_keys`` are the shared entities' keys (the index that delete by
    contribution re-scores through); ``reopen`` proposes a rejected relationship again (its
    evidence changed materially since the rejection)."""

    relationship: Relationship
    entity_keys: tuple[str, ...] = ()
    reopen: bool = False


@dataclass(frozen=True, slots=True)
class Job:
    id: str
    kind: str
    status: JobStatus
    payload: JSONDict
    priority: int
    run_after: datetime
    attempts: int
    max_attempts: int
    created_at: datetime
    workspace_id: str | None = None
    idempotency_key: str | None = None
    lease_owner: str | None = None
    lease_expires_at: datetime | None = None
    last_error: str | None = None
    correlation_id: str | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class ProcessingRun:
    id: str
    workspace_id: str
    item_id: str
    stage: str
    started_at: datetime
    outcome: RunOutcome = RunOutcome.RUNNING
    finished_at: datetime | None = None
    versions: dict[str, str] = field(default_factory=dict)
    details: JSONDict = field(default_factory=dict)
    error: str | None = None


@dataclass(frozen=True, slots=True)
class ModelVersion:
    id: str
    workspace_id: str
    kind: str
    name: str
    first_seen_at: datetime
    last_seen_at: datetime
    dimensions: int | None = None


@dataclass(frozen=True, slots=True)
class Actor:
    """Who performs an audited action: the edges build one (the API from its principal, the
    CLI as ``CLI_ACTOR``) and pass it to the service, which records it with the event.

    Accounts add ``user_id`` (a signed-in user) and ``token_id`` (an API token, with its
    owner in ``user_id``) without the services' signatures changing."""

    kind: ActorKind
    user_id: str | None = None
    token_id: str | None = None


#: Relata itself (start-up, benchmarks, code that names no one).
SYSTEM_ACTOR = Actor(ActorKind.SYSTEM)
#: The command line: an administrator on the local database.
CLI_ACTOR = Actor(ActorKind.CLI)


@dataclass(frozen=True, slots=True)
class AuditEvent:
    """One row of the append-only audit log. ``action`` is an ``AuditAction`` value,
    ``target_kind`` an ``AuditTarget`` value, ``actor_kind`` an ``ActorKind`` value (read
    back as strings: a row written by a later version still reads). ``details`` is small and
    structured (counts, a decision word, a stage), never document content or titles."""

    id: str
    workspace_id: str
    action: str
    at: datetime
    actor_user_id: str | None = None
    target_kind: str | None = None
    target_id: str | None = None
    details: JSONDict = field(default_factory=dict)
    request_id: str | None = None
    actor_kind: str = ActorKind.SYSTEM.value
    actor_token_id: str | None = None
