"""Every table of the authoritative store, on one ``MetaData`` with a naming convention.

Names matter: ``storage.sql.errors`` maps a violated unique constraint or index to a domain
error by its name. The partial unique indexes are what make the pipeline idempotent under
concurrency (docs/ARCHITECTURE.md, "Idempotency"); each carries a ``WHERE`` for both dialects.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Dialect

NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}
metadata = sa.MetaData(naming_convention=NAMING)


class UTCDateTime(sa.types.TypeDecorator[datetime]):
    """Timezone-aware UTC datetimes on both dialects (SQLite stores naive UTC text)."""

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        parsed: datetime = datetime.fromisoformat(value) if isinstance(value, str) else value
        if parsed.tzinfo is None:
            return parsed.replace(tzinfo=UTC)
        return parsed.astimezone(UTC)


def _id() -> sa.Column[str]:
    return sa.Column("id", sa.String(36), primary_key=True)


def _ws(nullable: bool = False) -> sa.Column[str]:
    return sa.Column(
        "workspace_id",
        sa.String(36),
        sa.ForeignKey("workspaces.id", ondelete="CASCADE"),
        nullable=nullable,
    )


def _ts(name: str, nullable: bool = False) -> sa.Column[datetime]:
    return sa.Column(name, UTCDateTime(), nullable=nullable)


def _where(sql: str) -> dict[str, Any]:
    clause = sa.text(sql)
    return {"sqlite_where": clause, "postgresql_where": clause}


workspaces = sa.Table(
    "workspaces",
    metadata,
    _id(),
    sa.Column("slug", sa.String(64), nullable=False, unique=True),
    sa.Column("name", sa.String(200), nullable=False),
    _ts("created_at"),
)

users = sa.Table(
    "users",
    metadata,
    _id(),
    sa.Column("username", sa.String(64), nullable=False, unique=True),
    sa.Column("password_hash", sa.String(255)),
    sa.Column("display_name", sa.String(200), nullable=False, server_default=""),
    sa.Column("is_admin", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("disabled", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("oauth_provider", sa.String(64)),
    sa.Column("oauth_subject", sa.String(255)),
    _ts("created_at"),
    sa.Index(
        "uq_users_oauth_identity",
        "oauth_provider",
        "oauth_subject",
        unique=True,
        **_where("oauth_provider IS NOT NULL"),
    ),
)

workspace_members = sa.Table(
    "workspace_members",
    metadata,
    sa.Column(
        "workspace_id",
        sa.String(36),
        sa.ForeignKey("workspaces.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    sa.Column(
        "user_id", sa.String(36), sa.ForeignKey("users.id", ondelete="CASCADE"), primary_key=True
    ),
    sa.Column("role", sa.String(16), nullable=False),
    _ts("created_at"),
)

sessions = sa.Table(
    "sessions",
    metadata,
    _id(),
    sa.Column(
        "user_id", sa.String(36), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False
    ),
    _ws(),
    sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
    _ts("created_at"),
    _ts("last_seen_at"),
    _ts("idle_expiry"),
    _ts("absolute_expiry"),
    sa.Index(None, "absolute_expiry"),
    sa.Index(None, "user_id"),
)

api_tokens = sa.Table(
    "api_tokens",
    metadata,
    _id(),
    _ws(),
    sa.Column(
        "user_id", sa.String(36), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column("name", sa.String(100), nullable=False),
    sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
    # The public part of the token (``rl_<prefix>_...``), so a list can tell tokens apart.
    sa.Column("prefix", sa.String(16), nullable=False, server_default=""),
    # owner, editor or viewer in the token's workspace (at most its creator's role).
    sa.Column("role", sa.String(16), nullable=False, server_default="viewer"),
    _ts("created_at"),
    _ts("expires_at", nullable=True),
    _ts("last_used_at", nullable=True),
    _ts("revoked_at", nullable=True),
    sa.Index(None, "workspace_id", "user_id", "created_at"),
    sa.Index(None, "expires_at"),
)

# Invitations to a workspace (``relata.auth.invitations``): the code's SHA-256 and public
# prefix, never the code. ``state`` pending until accepted, declined or revoked (once).
invitations = sa.Table(
    "invitations",
    metadata,
    _id(),
    _ws(),
    sa.Column("code_hash", sa.String(64), nullable=False, unique=True),
    sa.Column("prefix", sa.String(16), nullable=False),
    sa.Column("role", sa.String(16), nullable=False),
    sa.Column("state", sa.String(16), nullable=False, server_default="pending"),
    sa.Column("created_by", sa.String(36), sa.ForeignKey("users.id", ondelete="SET NULL")),
    _ts("created_at"),
    _ts("expires_at"),
    _ts("closed_at", nullable=True),
    sa.Column("closed_by", sa.String(36), sa.ForeignKey("users.id", ondelete="SET NULL")),
    sa.Index(None, "workspace_id", "state", "expires_at"),
)

# Failed sign-ins (``storage.sql.signin_failures``): one row per failure of a key (an account
# or a client address), pruned once older than the window. In the database so every HTTP
# process of a deployment counts the same failures (docs/decisions/0036).
signin_failures = sa.Table(
    "signin_failures",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("key", sa.String(200), nullable=False),
    _ts("failed_at"),
    sa.Index(None, "key", "failed_at"),
    sa.Index(None, "failed_at"),
)

# Random keys every process of a deployment must share (``storage.sql.deployment_keys``):
# made once, by whichever process asks first, and never rotated by a restart. Today only the
# OpenID flow cookie's key of a public client (no client secret to derive it from).
deployment_keys = sa.Table(
    "deployment_keys",
    metadata,
    sa.Column("name", sa.String(64), primary_key=True),
    sa.Column("value", sa.LargeBinary(64), nullable=False),
    _ts("created_at"),
)

items = sa.Table(
    "items",
    metadata,
    _id(),
    _ws(),
    sa.Column("title", sa.String(500), nullable=False),
    sa.Column("source_type", sa.String(16), nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("content_hash", sa.String(64), nullable=False),
    sa.Column("deliberate_duplicate", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("size_bytes", sa.BigInteger, nullable=False),
    sa.Column("text", sa.Text),
    # The parsed document's blocks (offsets into ``text``, heading paths, pages), written by
    # the parse stage and read by the chunk stage.
    sa.Column("structure", sa.JSON),
    sa.Column("original_path", sa.String(255)),
    sa.Column("original_filename", sa.String(255)),
    # ``ids.title_key(title)``: how another item's text naming this one by its title finds it
    # (``ItemRepository.find_named``); written with every title.
    sa.Column("title_key", sa.String(300)),
    sa.Column("media_type", sa.String(100)),
    sa.Column("metadata", sa.JSON, nullable=False),
    sa.Column("chunk_count", sa.Integer, nullable=False, server_default="0"),
    sa.Column("error", sa.String(1000)),
    # The pipeline stage (``StageKind`` value) whose failure left the item ``failed``.
    sa.Column("failed_stage", sa.String(32)),
    _ts("created_at", nullable=True),
    _ts("ingested_at"),
    _ts("updated_at", nullable=True),
    _ts("deleted_at", nullable=True),
    sa.Index(None, "workspace_id", "ingested_at"),
    sa.Index(None, "workspace_id", "content_hash"),
    # Listing by status and finding the failed items to reprocess.
    sa.Index(None, "workspace_id", "status", "failed_stage"),
    # Explicit references: an item named by its title or file name (``find_named``).
    sa.Index(None, "workspace_id", "title_key"),
    sa.Index(None, "workspace_id", "original_filename"),
    # Covers search's re-read of candidates without touching the (long) rows.
    sa.Index(
        "ix_items_search_filter",
        "workspace_id",
        "id",
        "deleted_at",
        "source_type",
        "created_at",
        "ingested_at",
    ),
    sa.Index(
        "uq_items_live_content_hash",
        "workspace_id",
        "content_hash",
        unique=True,
        **_where("deleted_at IS NULL AND deliberate_duplicate = false"),
    ),
)

# Every version of an item's content, 1 upward: the last is the item's current content
# (the columns of ``items`` it was copied to). ``original_path`` is NULL once a previous
# version's original has been removed past RELATA_KEEP_PREVIOUS_ORIGINALS; the row stays as
# history (docs/decisions/0045-item-versions.md).
item_versions = sa.Table(
    "item_versions",
    metadata,
    sa.Column(
        "item_id", sa.String(36), sa.ForeignKey("items.id", ondelete="CASCADE"), primary_key=True
    ),
    sa.Column("number", sa.Integer, primary_key=True),
    _ws(),
    sa.Column("sha256", sa.String(64), nullable=False),
    sa.Column("size_bytes", sa.BigInteger, nullable=False),
    sa.Column("source_type", sa.String(16), nullable=False),
    sa.Column("filename", sa.String(255)),
    sa.Column("media_type", sa.String(100)),
    sa.Column("original_path", sa.String(255)),
    _ts("created_at"),
    # Who uploaded it: an ``ActorKind`` value, and the user for a person (NULL for version 1
    # of an item uploaded before versions existed).
    sa.Column("created_by_kind", sa.String(16)),
    sa.Column("created_by", sa.String(36)),
    sa.Index(None, "workspace_id", "original_path"),
)

# An e-mail's attachments (docs/decisions/0048-library-editing-and-attachments.md): one row
# per attachment part, numbered in the message's order; ``item_id`` is the item it became
# (NULL when it was not read: ``reason`` says why, or when that item was deleted since).
item_attachments = sa.Table(
    "item_attachments",
    metadata,
    sa.Column(
        "message_id",
        sa.String(36),
        sa.ForeignKey("items.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    sa.Column("number", sa.Integer, primary_key=True),
    _ws(),
    sa.Column("name", sa.String(255), nullable=False),
    sa.Column("item_id", sa.String(36), sa.ForeignKey("items.id", ondelete="SET NULL")),
    sa.Column("reason", sa.String(500)),
    sa.Index(None, "item_id"),
)

chunks = sa.Table(
    "chunks",
    metadata,
    _id(),
    _ws(),
    sa.Column(
        "item_id", sa.String(36), sa.ForeignKey("items.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column("sequence", sa.Integer, nullable=False),
    sa.Column("text", sa.Text, nullable=False),
    sa.Column("content_hash", sa.String(64), nullable=False),
    sa.Column("heading_path", sa.JSON, nullable=False),
    sa.Column("start_offset", sa.Integer, nullable=False),
    sa.Column("end_offset", sa.Integer, nullable=False),
    sa.Column("page", sa.Integer),
    sa.Column("token_count", sa.Integer, nullable=False, server_default="0"),
    sa.Column("embedding_model", sa.String(200)),
    _ts("created_at"),
    sa.UniqueConstraint("workspace_id", "item_id", "sequence"),
    sa.Index(None, "workspace_id", "embedding_model"),
)

entities = sa.Table(
    "entities",
    metadata,
    _id(),
    _ws(),
    sa.Column("name", sa.String(300), nullable=False),
    sa.Column("entity_type", sa.String(32), nullable=False),
    sa.Column("normalised_key", sa.String(400), nullable=False),
    # How many observations the entity has (kept by the entity stage's transaction).
    sa.Column("observation_count", sa.Integer, nullable=False, server_default="1"),
    # How many live items name it (kept with ``observation_count``).
    sa.Column("item_count", sa.Integer, nullable=False, server_default="0"),
    _ts("created_at"),
    _ts("last_seen_at", nullable=True),
    # When a person last acted on the entity (an alias decision): it is then kept even with
    # no observation left, and shown as having no sources.
    _ts("decided_at", nullable=True),
    # One entity per normalised name *and type*: "Jordan" the person and the place are two.
    sa.UniqueConstraint("workspace_id", "entity_type", "normalised_key"),
)

# Every place an item names an entity: the exact quotation at offsets into the item's text.
entity_observations = sa.Table(
    "entity_observations",
    metadata,
    _id(),
    _ws(),
    sa.Column(
        "entity_id", sa.String(36), sa.ForeignKey("entities.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column(
        "item_id", sa.String(36), sa.ForeignKey("items.id", ondelete="CASCADE"), nullable=False
    ),
    # Chunks are replaced when an item is re-chunked, so no foreign key: the id is a pointer.
    sa.Column("chunk_id", sa.String(36)),
    sa.Column("start_offset", sa.Integer, nullable=False),
    sa.Column("end_offset", sa.Integer, nullable=False),
    sa.Column("quotation", sa.String(300), nullable=False),
    sa.Column("extractor", sa.String(32), nullable=False),
    sa.Column("extractor_version", sa.String(64), nullable=False),
    # Both extractors (deterministic and model) found this mention.
    sa.Column("agreed", sa.Boolean, nullable=False, server_default=sa.false()),
    # The type and display name this mention's own evidence gave (the entity's type and name
    # are decided from all of its mentions: docs/decisions/0050-entity-types-and-names.md).
    sa.Column("observed_type", sa.String(32)),
    sa.Column("observed_name", sa.String(300)),
    _ts("created_at"),
    sa.Index(None, "workspace_id", "item_id"),
    sa.Index(None, "workspace_id", "entity_id", "item_id"),
)

# Words of entity names (and initials, and 4-letter prefixes) -> entities: how alias
# candidates and the entity search leg find entities without scanning the workspace.
entity_tokens = sa.Table(
    "entity_tokens",
    metadata,
    sa.Column(
        "entity_id",
        sa.String(36),
        sa.ForeignKey("entities.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    sa.Column("token", sa.String(100), primary_key=True),
    _ws(),
    sa.Index(None, "workspace_id", "token"),
)

# A candidate alias between two entities, and a person's decision on it. ``pair_key`` is the
# unordered pair of (type, key) identities, so a rejected pair is never proposed again, even
# after reprocessing re-creates the entities.
entity_aliases = sa.Table(
    "entity_aliases",
    metadata,
    _id(),
    _ws(),
    sa.Column(
        "entity_id", sa.String(36), sa.ForeignKey("entities.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column(
        "other_id", sa.String(36), sa.ForeignKey("entities.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column("pair_key", sa.String(64), nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("score", sa.Float, nullable=False, server_default="0"),
    sa.Column("reason", sa.String(300), nullable=False),
    sa.Column("proposer", sa.String(32), nullable=False),
    sa.Column("note", sa.String(1000)),
    sa.Column("decided_by", sa.String(100)),
    _ts("decided_at", nullable=True),
    _ts("created_at"),
    _ts("updated_at", nullable=True),
    sa.UniqueConstraint("workspace_id", "pair_key"),
    sa.Index(None, "workspace_id", "status", "score"),
    sa.Index(None, "workspace_id", "entity_id"),
    sa.Index(None, "workspace_id", "other_id"),
)

claims = sa.Table(
    "claims",
    metadata,
    _id(),
    _ws(),
    sa.Column(
        "item_id", sa.String(36), sa.ForeignKey("items.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column("chunk_id", sa.String(36)),
    # The subject entity's normalised key: the index contradiction candidates come from.
    sa.Column("subject", sa.String(400), nullable=False),
    sa.Column("subject_name", sa.String(300), nullable=False, server_default=""),
    sa.Column("statement", sa.Text, nullable=False),
    sa.Column("nature", sa.String(32), nullable=False),
    sa.Column("quotation", sa.Text),
    # item.text[start_offset:end_offset] == quotation
    sa.Column("start_offset", sa.Integer, nullable=False, server_default="0"),
    sa.Column("end_offset", sa.Integer, nullable=False, server_default="0"),
    sa.Column("facets", sa.JSON),
    # The facets as the detector compares them (``claims.facets.facets_record``), or NULL.
    sa.Column("comparable", sa.JSON),
    sa.Column("confidence", sa.Float, nullable=False, server_default="0"),
    sa.Column("extractor", sa.String(200), nullable=False),
    sa.Column("extractor_version", sa.String(64), nullable=False, server_default=""),
    sa.Column("dedupe_key", sa.String(64), nullable=False),
    _ts("created_at"),
    # The workspace's claims write number when this claim was written (``claim_writes``):
    # the claims stage catches up, in its own write, with claims written after it read.
    sa.Column("write_seq", sa.BigInteger, nullable=False, server_default="0"),
    # The key its sentence shares with its repeats, values masked (``claims.repeats``), or
    # NULL: the changed-facts lookup (docs/decisions/0039).
    sa.Column("repeat_key", sa.String(64)),
    sa.Index(None, "workspace_id", "subject", "write_seq"),
    sa.Index(None, "workspace_id", "repeat_key"),
    sa.Index(None, "workspace_id", "item_id"),
    sa.UniqueConstraint("workspace_id", "dedupe_key"),
)

# One row per workspace: how many times its claims were written. Each claims write bumps it
# first, in its own transaction, so on PostgreSQL the row's lock orders the claims writes of
# one workspace (SQLite's BEGIN IMMEDIATE orders every writer already) and a write sees
# every claim committed before it (docs/decisions/0017, "Claims written meanwhile").
claim_writes = sa.Table(
    "claim_writes",
    metadata,
    sa.Column(
        "workspace_id",
        sa.String(36),
        sa.ForeignKey("workspaces.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    sa.Column("seq", sa.BigInteger, nullable=False),
)

# The contradiction ledger. ``identity`` is the pair of claims (their items, subject and
# places), stable while the text is; ``content`` is what both claims say: a resolved entry
# whose content changes reopens (``history`` keeps what was decided before). Both items'
# rows cascade: deleting an item removes its contradictions.
contradictions = sa.Table(
    "contradictions",
    metadata,
    _id(),
    _ws(),
    sa.Column("identity", sa.String(64), nullable=False),
    sa.Column("content", sa.String(64), nullable=False),
    sa.Column("subject", sa.String(400), nullable=False),
    sa.Column("subject_name", sa.String(300), nullable=False),
    sa.Column(
        "first_item_id",
        sa.String(36),
        sa.ForeignKey("items.id", ondelete="CASCADE"),
        nullable=False,
    ),
    sa.Column(
        "second_item_id",
        sa.String(36),
        sa.ForeignKey("items.id", ondelete="CASCADE"),
        nullable=False,
    ),
    # Each side: the claim's key, statement, quotation and offsets, and the conflicting words.
    sa.Column("first", sa.JSON, nullable=False),
    sa.Column("second", sa.JSON, nullable=False),
    sa.Column("facet", sa.String(32), nullable=False),
    sa.Column("reason", sa.String(500), nullable=False),
    sa.Column("confidence", sa.Float, nullable=False),
    sa.Column("detector", sa.String(64), nullable=False),
    sa.Column("detector_version", sa.String(64), nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("resolution", sa.String(32)),
    sa.Column("note", sa.String(1000)),
    sa.Column("resolved_by", sa.String(100)),
    _ts("resolved_at", nullable=True),
    sa.Column("history", sa.JSON, nullable=False),
    _ts("created_at"),
    _ts("updated_at", nullable=True),
    sa.UniqueConstraint("workspace_id", "identity"),
    sa.Index(None, "workspace_id", "status", "confidence"),
    sa.Index(None, "workspace_id", "first_item_id"),
    sa.Index(None, "workspace_id", "second_item_id"),
    sa.Index(None, "workspace_id", "subject"),
    # The disagreement the pair is evidence of (``claims.disagreements.disagreement_key``).
    sa.Column("disagreement_key", sa.String(64)),
    sa.Index(None, "workspace_id", "disagreement_key"),
)

# One record per disagreement (docs/decisions/0038): a subject, what is disputed (``topic``)
# and its positions (a value and the sources holding it, JSON), rebuilt from the pair records
# above whenever the claims stage records one of them; a person's resolution applies to the
# whole disagreement and is kept until a position's claims change (``history``).
disagreements = sa.Table(
    "disagreements",
    metadata,
    _id(),
    _ws(),
    sa.Column("key", sa.String(64), nullable=False),
    sa.Column("subject", sa.String(400), nullable=False),
    sa.Column("subject_name", sa.String(300), nullable=False),
    sa.Column("topic", sa.String(200), nullable=False),
    sa.Column("facet", sa.String(32), nullable=False),
    sa.Column("kind", sa.String(16), nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    # [{"value", "sources": [side...], "dates": {item_id: iso}}]
    sa.Column("positions", sa.JSON, nullable=False),
    # {item_id: statement} of every source when last decided or rebuilt: what "a position's
    # claims changed" is measured against.
    sa.Column("members", sa.JSON, nullable=False),
    sa.Column("current", sa.Integer),
    sa.Column("confidence", sa.Float, nullable=False),
    sa.Column("resolution", sa.String(32)),
    sa.Column("position", sa.Integer),
    sa.Column("note", sa.String(1000)),
    sa.Column("resolved_by", sa.String(100)),
    _ts("resolved_at", nullable=True),
    sa.Column("history", sa.JSON, nullable=False),
    _ts("created_at"),
    _ts("updated_at", nullable=True),
    sa.UniqueConstraint("workspace_id", "key"),
    sa.Index(None, "workspace_id", "status", "confidence"),
    sa.Index(None, "workspace_id", "subject"),
)

# Scored, evidenced links between two items (docs/decisions/0019): one per unordered pair
# (``dedupe_key``), its type, score and features the scoring model's until a person decides
# (``review_status``), after which reprocessing refreshes only the evidence. Both endpoints
# cascade: deleting an item removes its relationships (and their contribution index).
relationships = sa.Table(
    "relationships",
    metadata,
    _id(),
    _ws(),
    sa.Column(
        "source_id", sa.String(36), sa.ForeignKey("items.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column(
        "target_id", sa.String(36), sa.ForeignKey("items.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column("relationship_type", sa.String(32), nullable=False),
    sa.Column("score", sa.Float, nullable=False),
    sa.Column("score_version", sa.String(32), nullable=False),
    sa.Column("features", sa.JSON, nullable=False),
    sa.Column("evidence", sa.JSON, nullable=False),
    sa.Column("review_status", sa.String(16), nullable=False),
    sa.Column("reviewed_by", sa.String(100)),
    _ts("reviewed_at", nullable=True),
    sa.Column("review_note", sa.String(1000)),
    # The evidence snapshot of the last decision (``EvidenceSnapshot.as_json``): what a
    # rejected relationship's later evidence is compared with. SQL NULL when there is none.
    sa.Column("decision", sa.JSON(none_as_null=True)),
    sa.Column("dedupe_key", sa.String(64), nullable=False),
    _ts("created_at"),
    _ts("updated_at", nullable=True),
    sa.UniqueConstraint("workspace_id", "dedupe_key"),
    sa.Index(None, "workspace_id", "source_id"),
    sa.Index(None, "workspace_id", "target_id"),
    sa.Index(None, "workspace_id", "review_status", "score"),
)

# The contribution index: which shared entities (by key) a relationship's score counts, so
# that when an item is deleted the relationships its entities contributed to are found and
# re-scored without reading every relationship's features.
relationship_entities = sa.Table(
    "relationship_entities",
    metadata,
    sa.Column(
        "relationship_id",
        sa.String(36),
        sa.ForeignKey("relationships.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    sa.Column("entity_key", sa.String(200), primary_key=True),
    _ws(),
    sa.Index(None, "workspace_id", "entity_key"),
)

jobs = sa.Table(
    "jobs",
    metadata,
    _id(),
    sa.Column("kind", sa.String(64), nullable=False),
    _ws(nullable=True),
    sa.Column("payload", sa.JSON, nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("priority", sa.Integer, nullable=False, server_default="0"),
    _ts("run_after"),
    sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
    sa.Column("max_attempts", sa.Integer, nullable=False),
    sa.Column("idempotency_key", sa.String(255)),
    sa.Column("lease_owner", sa.String(100)),
    _ts("lease_expires_at", nullable=True),
    sa.Column("last_error", sa.String(2000)),
    sa.Column("correlation_id", sa.String(128)),
    _ts("created_at"),
    _ts("started_at", nullable=True),
    _ts("finished_at", nullable=True),
    _ts("updated_at", nullable=True),
    sa.Index(None, "status", "run_after", "priority"),
    sa.Index(None, "status", "lease_expires_at"),
    sa.Index(None, "workspace_id", "created_at"),
    sa.Index(
        "ix_jobs_claim_order",
        "status",
        sa.text("priority DESC"),
        "run_after",
        "created_at",
        "id",
    ),
    sa.Index(
        "uq_jobs_pending_idempotency_key",
        "idempotency_key",
        unique=True,
        **_where("status = 'pending'"),
    ),
)

processing_runs = sa.Table(
    "processing_runs",
    metadata,
    _id(),
    _ws(),
    sa.Column(
        "item_id", sa.String(36), sa.ForeignKey("items.id", ondelete="CASCADE"), nullable=False
    ),
    sa.Column("stage", sa.String(32), nullable=False),
    sa.Column("outcome", sa.String(16), nullable=False),
    sa.Column("versions", sa.JSON, nullable=False),
    sa.Column("details", sa.JSON, nullable=False),
    sa.Column("error", sa.String(1000)),
    _ts("started_at"),
    _ts("finished_at", nullable=True),
    sa.Index(None, "workspace_id", "item_id", "started_at"),
)

model_versions = sa.Table(
    "model_versions",
    metadata,
    _id(),
    _ws(),
    sa.Column("kind", sa.String(32), nullable=False),
    sa.Column("name", sa.String(200), nullable=False),
    sa.Column("dimensions", sa.Integer),
    _ts("first_seen_at"),
    _ts("last_seen_at"),
    sa.UniqueConstraint("workspace_id", "kind", "name"),
)

# Append-only: triggers refuse UPDATE and DELETE (and TRUNCATE on PostgreSQL), migration
# 0007. ``workspace_id`` is deliberately no foreign key: a cascade from a deleted workspace
# would be a DELETE the triggers refuse, and the record should outlive what it is about.
audit_events = sa.Table(
    "audit_events",
    metadata,
    _id(),
    sa.Column("workspace_id", sa.String(36), nullable=False),
    sa.Column("action", sa.String(64), nullable=False),
    sa.Column("actor_kind", sa.String(16), nullable=False, server_default="system"),
    sa.Column("actor_user_id", sa.String(36)),
    sa.Column("actor_token_id", sa.String(36)),
    sa.Column("target_kind", sa.String(32)),
    sa.Column("target_id", sa.String(36)),
    sa.Column("details", sa.JSON, nullable=False),
    sa.Column("request_id", sa.String(128)),
    _ts("at"),
    sa.Index(None, "workspace_id", "at"),
    sa.Index(None, "workspace_id", "action", "at"),
)

# A watched folder (``relata watch``, docs/decisions/0047-watched-folder.md): one row per
# folder and workspace, with its status for the settings page; its files below.
watches = sa.Table(
    "watches",
    metadata,
    _id(),
    _ws(),
    sa.Column("root", sa.String(1024), nullable=False),
    sa.Column("state", sa.String(16), nullable=False, server_default="stopped"),
    sa.Column("owner_host", sa.String(255)),
    sa.Column("owner_pid", sa.Integer),
    _ts("created_at"),
    _ts("started_at", nullable=True),
    _ts("heartbeat_at", nullable=True),
    _ts("last_scan_at", nullable=True),
    sa.Column("ingested", sa.Integer, nullable=False, server_default="0"),
    sa.Column("updated", sa.Integer, nullable=False, server_default="0"),
    sa.Column("deleted", sa.Integer, nullable=False, server_default="0"),
    sa.Column("last_error", sa.String(1000)),
    sa.UniqueConstraint("workspace_id", "root"),
)

# A file of a watched folder as last seen: its item (NULL when refused, or when the item was
# deleted from the workspace), size, mtime and SHA-256, and why it was refused.
watched_files = sa.Table(
    "watched_files",
    metadata,
    sa.Column(
        "watch_id", sa.String(36), sa.ForeignKey("watches.id", ondelete="CASCADE"), primary_key=True
    ),
    sa.Column("path", sa.String(1024), primary_key=True),
    _ws(),
    sa.Column("item_id", sa.String(36), sa.ForeignKey("items.id", ondelete="SET NULL")),
    sa.Column("size_bytes", sa.BigInteger, nullable=False),
    sa.Column("mtime_ns", sa.BigInteger, nullable=False),
    sa.Column("sha256", sa.String(64), nullable=False),
    sa.Column("error", sa.String(1000)),
    _ts("updated_at"),
    sa.Index(None, "workspace_id", "item_id"),
)
