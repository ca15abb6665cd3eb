"""watches and watched_files: a watched folder's status and files

``relata watch DIR`` (and ``relata serve`` with RELATA_WATCH_DIR) keeps a workspace in step
with a folder; what it last saw of each file (item, size, mtime, SHA-256, refusal) and the
watch's status are kept here, so a watcher started again catches up and every process can
show the status (docs/decisions/0047-watched-folder.md).

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-06 03:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "watches",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.Column("root", sa.String(length=1024), nullable=False),
        sa.Column("state", sa.String(length=16), server_default="stopped", nullable=False),
        sa.Column("owner_host", sa.String(length=255), nullable=True),
        sa.Column("owner_pid", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_scan_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("ingested", sa.Integer(), server_default="0", nullable=False),
        sa.Column("updated", sa.Integer(), server_default="0", nullable=False),
        sa.Column("deleted", sa.Integer(), server_default="0", nullable=False),
        sa.Column("last_error", sa.String(length=1000), nullable=True),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name="fk_watches_workspace_id_workspaces",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_watches"),
        sa.UniqueConstraint("workspace_id", "root", name="uq_watches_workspace_id_root"),
    )
    op.create_table(
        "watched_files",
        sa.Column("watch_id", sa.String(length=36), nullable=False),
        sa.Column("path", sa.String(length=1024), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.Column("item_id", sa.String(length=36), nullable=True),
        sa.Column("size_bytes", sa.BigInteger(), nullable=False),
        sa.Column("mtime_ns", sa.BigInteger(), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("error", sa.String(length=1000), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["watch_id"],
            ["watches.id"],
            name="fk_watched_files_watch_id_watches",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name="fk_watched_files_workspace_id_workspaces",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["item_id"],
            ["items.id"],
            name="fk_watched_files_item_id_items",
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("watch_id", "path", name="pk_watched_files"),
    )
    op.create_index(
        "ix_watched_files_workspace_id_item_id", "watched_files", ["workspace_id", "item_id"]
    )


def downgrade() -> None:
    op.drop_index("ix_watched_files_workspace_id_item_id", table_name="watched_files")
    op.drop_table("watched_files")
    op.drop_table("watches")
