"""relationships: review note and decision snapshot, endpoints cascading from items, the
contribution index, items found by title key and file name

- ``relationships`` gain ``review_note`` and ``decision`` (the evidence snapshot a person
  decided on, docs/decisions/0019); ``reviewed_by`` widens to 100 characters (a reviewer's
  name, as ``contradictions.resolved_by``); ``source_id`` and ``target_id`` become foreign keys
  to ``items`` with ON DELETE CASCADE, so deleting an item removes its relationships on both
  dialects. A relationship whose endpoint is no longer an item points at nothing and is
  deleted first (no stage wrote relationships before this revision).
- ``relationship_entities``: (relationship, shared entity key) pairs, indexed by
  (workspace, key): which relationships an entity contributed to (delete by contribution).
- ``items.title_key`` (``ids.title_key`` of the title), back-filled here, and indexes on
  (workspace, title_key) and (workspace, original_filename): how an item named by another
  one's text is found without a scan.

On SQLite the foreign keys rebuild ``relationships`` (batch "move and copy"; no trigger is
on it); ``items`` only gains a nullable column and indexes, which need no rebuild, so the
full-text triggers of 0002 are untouched, and the back-fill updates ``title_key`` alone (the
triggers fire on ``title`` and ``text``). The downgrade drops what this revision added and
narrows ``reviewed_by`` back (cutting longer names).

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01 12:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

_BATCH = 1000
_TITLE_KEY_LENGTH = 300


def _title_key(title: str) -> str:
    """``relata.ids.title_key`` as of this revision (copied: a migration must not change
    with the code)."""
    return " ".join(title.casefold().split())[:_TITLE_KEY_LENGTH]


def _backfill_title_keys() -> None:
    conn = op.get_bind()
    items = sa.table(
        "items",
        sa.column("id", sa.String),
        sa.column("title", sa.String),
        sa.column("title_key", sa.String),
    )
    select = (
        sa.select(items.c.id, items.c.title)
        .where(items.c.id > sa.bindparam("after"))
        .order_by(items.c.id)
        .limit(_BATCH)
    )
    update = (
        items.update()
        .where(items.c.id == sa.bindparam("p_id"))
        .values(title_key=sa.bindparam("p_key"))
    )
    after = ""
    while True:
        rows = conn.execute(select, {"after": after}).all()
        if not rows:
            return
        conn.execute(update, [{"p_id": r.id, "p_key": _title_key(r.title or "")} for r in rows])
        after = rows[-1].id


def upgrade() -> None:
    op.add_column("items", sa.Column("title_key", sa.String(length=300), nullable=True))
    _backfill_title_keys()
    op.create_index("ix_items_workspace_id_title_key", "items", ["workspace_id", "title_key"])
    op.create_index(
        "ix_items_workspace_id_original_filename", "items", ["workspace_id", "original_filename"]
    )

    op.execute(
        "DELETE FROM relationships WHERE source_id NOT IN (SELECT id FROM items)"
        " OR target_id NOT IN (SELECT id FROM items)"
    )
    with op.batch_alter_table("relationships", schema=None) as batch_op:
        batch_op.add_column(sa.Column("review_note", sa.String(length=1000), nullable=True))
        batch_op.add_column(sa.Column("decision", sa.JSON(), nullable=True))
        batch_op.alter_column(
            "reviewed_by",
            existing_type=sa.String(length=36),
            type_=sa.String(length=100),
            existing_nullable=True,
        )
        for column in ("source_id", "target_id"):
            batch_op.create_foreign_key(
                batch_op.f(f"fk_relationships_{column}_items"),
                "items",
                [column],
                ["id"],
                ondelete="CASCADE",
            )

    op.create_table(
        "relationship_entities",
        sa.Column("relationship_id", sa.String(length=36), nullable=False),
        sa.Column("entity_key", sa.String(length=200), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.ForeignKeyConstraint(
            ["relationship_id"],
            ["relationships.id"],
            name=op.f("fk_relationship_entities_relationship_id_relationships"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_relationship_entities_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "relationship_id", "entity_key", name=op.f("pk_relationship_entities")
        ),
    )
    op.create_index(
        "ix_relationship_entities_workspace_id_entity_key",
        "relationship_entities",
        ["workspace_id", "entity_key"],
    )


def downgrade() -> None:
    """Back to 0005's shape (notes, decision snapshots and title keys are lost)."""
    op.drop_index(
        "ix_relationship_entities_workspace_id_entity_key", table_name="relationship_entities"
    )
    op.drop_table("relationship_entities")
    op.execute(
        "UPDATE relationships SET reviewed_by = substr(reviewed_by, 1, 36)"
        " WHERE length(reviewed_by) > 36"
    )
    with op.batch_alter_table("relationships", schema=None) as batch_op:
        for column in ("target_id", "source_id"):
            batch_op.drop_constraint(
                batch_op.f(f"fk_relationships_{column}_items"), type_="foreignkey"
            )
        batch_op.alter_column(
            "reviewed_by",
            existing_type=sa.String(length=100),
            type_=sa.String(length=36),
            existing_nullable=True,
        )
        batch_op.drop_column("decision")
        batch_op.drop_column("review_note")

    op.drop_index("ix_items_workspace_id_original_filename", table_name="items")
    op.drop_index("ix_items_workspace_id_title_key", table_name="items")
    op.drop_column("items", "title_key")
