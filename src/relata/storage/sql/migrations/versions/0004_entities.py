"""entities: identity per type, observations, name tokens, alias candidates with decisions

- ``entities``: one row per (workspace, type, normalised key) instead of (workspace, key), so a
  name with two types stays two entities; ``decided_at`` marks an entity a person acted on.
- ``entity_observations``: each mention (item, chunk, offsets, quotation, extractor, version);
  it replaces ``entity_items`` (an item's links to entities are its observations).
- ``entity_tokens``: name words, initials and 4-letter prefixes -> entity: the index alias
  candidates and the entity search leg use instead of scanning the workspace.
- ``entity_aliases``: redefined as a candidate link between two entities with its score,
  reason, status and a person's decision, unique per unordered pair of identities.

``entity_items`` and the old ``entity_aliases`` were never written by any release (no stage
produced entities before this revision), so they are dropped rather than converted. On SQLite
the unique-constraint change rebuilds ``entities`` (batch mode); no full-text trigger is
involved. See docs/decisions/0015-entities.md. The downgrade drops what 0004 added, entities
included.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01 09:24:41
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

_TS = sa.DateTime(timezone=True)


def _fk(column: str, table: str, owner: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        [column],
        [f"{table}.id"],
        name=op.f(f"fk_{owner}_{column}_{table}"),
        ondelete="CASCADE",
    )


def upgrade() -> None:
    op.drop_table("entity_items")
    op.drop_table("entity_aliases")
    with op.batch_alter_table("entities", schema=None) as batch_op:
        batch_op.add_column(sa.Column("decided_at", _TS, nullable=True))
        batch_op.drop_constraint(
            batch_op.f("uq_entities_workspace_id_normalised_key"), type_="unique"
        )
        batch_op.create_unique_constraint(
            batch_op.f("uq_entities_workspace_id_entity_type_normalised_key"),
            ["workspace_id", "entity_type", "normalised_key"],
        )

    op.create_table(
        "entity_observations",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.Column("entity_id", sa.String(length=36), nullable=False),
        sa.Column("item_id", sa.String(length=36), nullable=False),
        sa.Column("chunk_id", sa.String(length=36), nullable=True),
        sa.Column("start_offset", sa.Integer(), nullable=False),
        sa.Column("end_offset", sa.Integer(), nullable=False),
        sa.Column("quotation", sa.String(length=300), nullable=False),
        sa.Column("extractor", sa.String(length=32), nullable=False),
        sa.Column("extractor_version", sa.String(length=64), nullable=False),
        sa.Column("agreed", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("created_at", _TS, nullable=False),
        _fk("entity_id", "entities", "entity_observations"),
        _fk("item_id", "items", "entity_observations"),
        _fk("workspace_id", "workspaces", "entity_observations"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_entity_observations")),
    )
    with op.batch_alter_table("entity_observations", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_entity_observations_workspace_id_entity_id_item_id"),
            ["workspace_id", "entity_id", "item_id"],
            unique=False,
        )
        batch_op.create_index(
            batch_op.f("ix_entity_observations_workspace_id_item_id"),
            ["workspace_id", "item_id"],
            unique=False,
        )

    op.create_table(
        "entity_tokens",
        sa.Column("entity_id", sa.String(length=36), nullable=False),
        sa.Column("token", sa.String(length=100), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        _fk("entity_id", "entities", "entity_tokens"),
        _fk("workspace_id", "workspaces", "entity_tokens"),
        sa.PrimaryKeyConstraint("entity_id", "token", name=op.f("pk_entity_tokens")),
    )
    with op.batch_alter_table("entity_tokens", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_entity_tokens_workspace_id_token"),
            ["workspace_id", "token"],
            unique=False,
        )

    op.create_table(
        "entity_aliases",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.Column("entity_id", sa.String(length=36), nullable=False),
        sa.Column("other_id", sa.String(length=36), nullable=False),
        sa.Column("pair_key", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("score", sa.Float(), server_default="0", nullable=False),
        sa.Column("reason", sa.String(length=300), nullable=False),
        sa.Column("proposer", sa.String(length=32), nullable=False),
        sa.Column("note", sa.String(length=1000), nullable=True),
        sa.Column("decided_by", sa.String(length=100), nullable=True),
        sa.Column("decided_at", _TS, nullable=True),
        sa.Column("created_at", _TS, nullable=False),
        sa.Column("updated_at", _TS, nullable=True),
        _fk("entity_id", "entities", "entity_aliases"),
        _fk("other_id", "entities", "entity_aliases"),
        _fk("workspace_id", "workspaces", "entity_aliases"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_entity_aliases")),
        sa.UniqueConstraint(
            "workspace_id", "pair_key", name=op.f("uq_entity_aliases_workspace_id_pair_key")
        ),
    )
    with op.batch_alter_table("entity_aliases", schema=None) as batch_op:
        for cols in (
            ["workspace_id", "entity_id"],
            ["workspace_id", "other_id"],
            ["workspace_id", "status", "score"],
        ):
            batch_op.create_index(
                batch_op.f(f"ix_entity_aliases_{'_'.join(cols)}"), cols, unique=False
            )


def downgrade() -> None:
    """Back to 0003's shape. Entities, observations and alias decisions are lost (0003 had
    no stage writing them): take a backup first if they matter."""
    op.drop_table("entity_aliases")
    op.drop_table("entity_tokens")
    op.drop_table("entity_observations")
    op.execute("DELETE FROM entities")
    with op.batch_alter_table("entities", schema=None) as batch_op:
        batch_op.drop_constraint(
            batch_op.f("uq_entities_workspace_id_entity_type_normalised_key"), type_="unique"
        )
        batch_op.create_unique_constraint(
            batch_op.f("uq_entities_workspace_id_normalised_key"),
            ["workspace_id", "normalised_key"],
        )
        batch_op.drop_column("decided_at")
    op.create_table(
        "entity_aliases",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.Column("entity_id", sa.String(length=36), nullable=False),
        sa.Column("alias", sa.String(length=300), nullable=False),
        sa.Column("normalised", sa.String(length=400), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("score", sa.Float(), server_default="0", nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["entity_id"],
            ["entities.id"],
            name=op.f("fk_entity_aliases_entity_id_entities"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_entity_aliases_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_entity_aliases")),
        sa.UniqueConstraint(
            "workspace_id",
            "entity_id",
            "normalised",
            name=op.f("uq_entity_aliases_workspace_id_entity_id_normalised"),
        ),
    )
    op.create_table(
        "entity_items",
        sa.Column("entity_id", sa.String(length=36), nullable=False),
        sa.Column("item_id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.ForeignKeyConstraint(
            ["entity_id"],
            ["entities.id"],
            name=op.f("fk_entity_items_entity_id_entities"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["item_id"],
            ["items.id"],
            name=op.f("fk_entity_items_item_id_items"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_entity_items_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("entity_id", "item_id", name=op.f("pk_entity_items")),
    )
    with op.batch_alter_table("entity_items", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_entity_items_workspace_id_item_id"),
            ["workspace_id", "item_id"],
            unique=False,
        )
