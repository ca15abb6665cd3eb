"""item_versions: every version of an item's content

An item's content can be replaced by a new version (``PUT /api/v1/items/{id}/content``);
each version's hash, size, type, filename and original are kept here, the last one being the
item's current content. Every existing item gets its version 1 from its own columns
(docs/decisions/0045-item-versions.md).

Revision ID: 0017
Revises: 0016
Create Date: 2027-02-24 10:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "item_versions",
        sa.Column("item_id", sa.String(length=36), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("size_bytes", sa.BigInteger(), nullable=False),
        sa.Column("source_type", sa.String(length=16), nullable=False),
        sa.Column("filename", sa.String(length=255), nullable=True),
        sa.Column("media_type", sa.String(length=100), nullable=True),
        sa.Column("original_path", sa.String(length=255), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("created_by_kind", sa.String(length=16), nullable=True),
        sa.Column("created_by", sa.String(length=36), nullable=True),
        sa.ForeignKeyConstraint(
            ["item_id"],
            ["items.id"],
            name="fk_item_versions_item_id_items",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name="fk_item_versions_workspace_id_workspaces",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("item_id", "number", name="pk_item_versions"),
    )
    op.create_index(
        "ix_item_versions_workspace_id_original_path",
        "item_versions",
        ["workspace_id", "original_path"],
    )
    op.execute(
        "INSERT INTO item_versions (item_id, number, workspace_id, sha256, size_bytes, "
        "source_type, filename, media_type, original_path, created_at) "
        "SELECT id, 1, workspace_id, content_hash, size_bytes, source_type, "
        "original_filename, media_type, original_path, ingested_at FROM items"
    )


def downgrade() -> None:
    op.drop_index("ix_item_versions_workspace_id_original_path", table_name="item_versions")
    op.drop_table("item_versions")
