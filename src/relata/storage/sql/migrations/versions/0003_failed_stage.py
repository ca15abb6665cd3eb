"""items.failed_stage: which pipeline stage left an item failed

Recovery by stage (``relata reprocess --failed``, re-embedding) finds failed items by this
column instead of matching error text, and re-runs them from the stage that failed. Existing
failed items are back-filled from the error prefix the stages wrote before this revision.
Adding a nullable column and an index needs no table rebuild on SQLite, so the full-text
triggers of 0002 are untouched.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01 10:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

_BACKFILL = (
    ("could not parse:", "parse"),
    ("could not chunk:", "chunk"),
    ("could not embed:", "embed"),
    ("parse failed", "parse"),
    ("chunk failed", "chunk"),
)


def upgrade() -> None:
    op.add_column("items", sa.Column("failed_stage", sa.String(32), nullable=True))
    op.create_index(
        "ix_items_workspace_id_status_failed_stage",
        "items",
        ["workspace_id", "status", "failed_stage"],
    )
    items = sa.table(
        "items",
        sa.column("status", sa.String),
        sa.column("error", sa.String),
        sa.column("failed_stage", sa.String),
    )
    for prefix, stage in _BACKFILL:
        op.execute(
            items.update()
            .where(items.c.status == "failed", items.c.error.startswith(prefix))
            .values(failed_stage=stage)
        )


def downgrade() -> None:
    op.drop_index("ix_items_workspace_id_status_failed_stage", table_name="items")
    op.drop_column("items", "failed_stage")
