"""Relata's closed vocabularies, each declared once as a ``StrEnum``.

Stored and sent as their string values, so a row written before a member was added still
reads back; a value outside the enum is refused where it enters (an API parameter, a model's
output), never deep inside. Members may grow; the first sets are recorded in
docs/decisions/0016-pipeline-and-vocabularies.md.
"""

from __future__ import annotations

import enum


class StageKind(enum.StrEnum):
    """The pipeline's stages, **in pipeline order**: the order of the members is the order
    an item goes through them (``relata.pipeline``). Each stage runs as the job kind
    ``<stage>_item``."""

    PARSE = "parse"
    CHUNK = "chunk"
    EMBED = "embed"
    ENTITIES = "entities"
    CLAIMS = "claims"
    RELATIONSHIPS = "relationships"

    @property
    def job_kind(self) -> str:
        return f"{self.value}_item"

    @classmethod
    def from_job_kind(cls, kind: str) -> StageKind | None:
        """The stage a job kind runs, or None for a job that is not a stage."""
        if not kind.endswith("_item"):
            return None
        try:
            return cls(kind.removesuffix("_item"))
        except ValueError:
            return None


class RunOutcome(enum.StrEnum):
    """How one stage's pass over one item ended (``processing_runs.outcome``)."""

    RUNNING = "running"
    SUCCEEDED = "succeeded"
    #: The stage's requirement is not configured here (no embedder, analysis disabled):
    #: the item went on without it. Degraded, never failed.
    SKIPPED = "skipped"
    FAILED = "failed"


class SearchLeg(enum.StrEnum):
    """The retrieval signals search fuses (``relata.ranking``)."""

    TEXT = "text"
    CHUNK_TEXT = "chunk_text"
    VECTOR = "vector"
    ENTITY = "entity"
    RELATIONSHIP = "relationship"


class EntityType(enum.StrEnum):
    """What an entity is (docs/decisions/0015-entities.md): names of people, organisations
    and places, and ``term`` for technical terms (genes, drugs, products, identifiers)."""

    PERSON = "person"
    ORGANISATION = "organisation"
    LOCATION = "location"
    TERM = "term"


class ClaimNature(enum.StrEnum):
    """What kind of statement a claim is (AI_PROVIDER_INTERFACE ``extract_claims``)."""

    FACT = "fact"
    QUANTITY = "quantity"
    EVENT = "event"
    FINDING = "finding"
    OPINION = "opinion"


class RelationshipType(enum.StrEnum):
    """How two items are related (``relationships.relationship_type``)."""

    SUPPORTS = "supports"
    CONTRADICTS = "contradicts"
    UPDATES = "updates"
    REFERENCES = "references"
    SHARES_SUBJECT = "shares_subject"
    SIMILAR = "similar"


class ContradictionStatus(enum.StrEnum):
    OPEN = "open"
    RESOLVED = "resolved"


class Resolution(enum.StrEnum):
    """How a person resolved a contradiction (the ledger, docs/decisions/0017)."""

    FIRST_CORRECT = "first_correct"
    SECOND_CORRECT = "second_correct"
    #: Both hold: a different time or context.
    BOTH_VALID = "both_valid"
    #: Dismissed: not proposed again while both claims are unchanged.
    NOT_A_CONTRADICTION = "not_a_contradiction"
    #: A disagreement: one of its positions (``position``) is correct (ADR 38).
    POSITION_CORRECT = "position_correct"
    #: A supersession a person confirmed: the newer statement holds now (ADR 38).
    SUPERSEDED = "superseded"


class DisagreementStatus(enum.StrEnum):
    """A disagreement's state (ADR 38): ``superseded`` is a state that can change, disputed
    by dated sources, where the newest position holds; a person may still resolve it."""

    OPEN = "open"
    RESOLVED = "resolved"
    SUPERSEDED = "superseded"


class DisagreementKind(enum.StrEnum):
    CONTRADICTION = "contradiction"
    SUPERSESSION = "supersession"


class AuditAction(enum.StrEnum):
    """What an audit event records (``audit_events.action``): consequential actions only,
    by a person or on one's behalf, never reads. Each is recorded by the service that does
    the action, through the injected ``AuditRecorder`` port, once the action has happened."""

    WORKSPACE_CREATED = "workspace.created"
    ITEM_UPLOADED = "item.uploaded"
    ITEM_DELETED = "item.deleted"
    #: One event per item: a ``--failed`` request records one for each item it restarted.
    ITEM_REPROCESSED = "item.reprocessed"
    #: A new version of an item's content (not recorded for an identical re-upload).
    ITEM_VERSION_UPLOADED = "item.version_uploaded"
    #: An item's title or metadata changed by hand (details name the fields, not the values).
    ITEM_EDITED = "item.edited"
    ALIAS_DECIDED = "alias.decided"
    CONTRADICTION_RESOLVED = "contradiction.resolved"
    DISAGREEMENT_RESOLVED = "disagreement.resolved"
    RELATIONSHIP_REVIEWED = "relationship.reviewed"
    REEMBED_STARTED = "reembed.started"
    # Accounts, sessions, tokens, members and settings (the rest of issue 15): declared so
    # that the vocabulary is one list and the API already accepts them as filters; nothing
    # records them until those features exist.
    SIGN_IN_SUCCEEDED = "auth.sign_in"
    SIGN_IN_FAILED = "auth.sign_in_failed"
    SIGNED_OUT = "auth.sign_out"
    TOKEN_CREATED = "token.created"  # noqa: S105 - a word, not a secret
    TOKEN_REVOKED = "token.revoked"  # noqa: S105 - a word, not a secret
    #: Administration (``relata.auth.administration``): a user made by an administrator (in
    #: the workspace they joined) and a password an administrator reset (in each of theirs).
    USER_CREATED = "user.created"
    USER_PASSWORD_RESET = "user.password_reset"  # noqa: S105 - a word, not a secret
    MEMBER_ADDED = "member.added"
    MEMBER_CHANGED = "member.changed"
    MEMBER_REMOVED = "member.removed"
    #: Invitations (docs/decisions/0028-workspace-invitations.md): named by id, never by code.
    INVITATION_CREATED = "invitation.created"
    INVITATION_ACCEPTED = "invitation.accepted"
    INVITATION_DECLINED = "invitation.declined"
    INVITATION_REVOKED = "invitation.revoked"
    SETTINGS_CHANGED = "settings.changed"
    #: An export or an import of a workspace's knowledge (docs/decisions/0041).
    WORKSPACE_EXPORTED = "workspace.exported"
    WORKSPACE_IMPORTED = "workspace.imported"


class ExportFormat(enum.StrEnum):
    """What ``relata export`` and ``GET /api/v1/export`` write (``relata.exchange``)."""

    JSONL = "jsonl"
    CSV = "csv"
    GRAPHML = "graphml"


class Role(enum.StrEnum):
    """A member's role in a workspace (``workspace_members.role``, ``api_tokens.role``).
    Viewers read; editors also upload, review, reprocess and delete; owners also manage."""

    OWNER = "owner"
    EDITOR = "editor"
    VIEWER = "viewer"

    @property
    def rank(self) -> int:
        return {"viewer": 0, "editor": 1, "owner": 2}[self.value]

    def at_least(self, other: Role) -> bool:
        return self.rank >= other.rank


class ActorKind(enum.StrEnum):
    """Who acted, as the audit log records it (``audit_events.actor_kind``)."""

    #: The HTTP API's local principal, until accounts exist (``relata.api.deps``).
    LOCAL = "local"
    #: The command line, acting as an administrator on the local database.
    CLI = "cli"
    #: A signed-in user (``actor_user_id``).
    USER = "user"
    #: An API token (``actor_token_id``, and its owner in ``actor_user_id``).
    TOKEN = "token"  # noqa: S105 - a word, not a secret
    #: Relata itself: start-up, benchmarks, code that names no one.
    SYSTEM = "system"


class AuditTarget(enum.StrEnum):
    """What an audit event is about (``audit_events.target_kind``); the target is named by
    its id only, never by a title or any other content."""

    WORKSPACE = "workspace"
    ITEM = "item"
    ALIAS = "alias"
    CONTRADICTION = "contradiction"
    DISAGREEMENT = "disagreement"
    RELATIONSHIP = "relationship"
    USER = "user"
    TOKEN = "token"  # noqa: S105 - a word, not a secret
    INVITATION = "invitation"


class InvitationState(enum.StrEnum):
    """Where an invitation to a workspace stands (``invitations.state``). Only a ``pending``
    one before its ``expires_at`` can be accepted or declined; every other state is final."""

    PENDING = "pending"
    ACCEPTED = "accepted"
    DECLINED = "declined"
    REVOKED = "revoked"
