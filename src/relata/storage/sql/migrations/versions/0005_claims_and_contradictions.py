"""claims offsets and facets, the contradiction ledger

``claims`` gain the subject's display name, the quotation's offsets into the item's text, a
summary of the comparable facets and the extractor's version. ``contradictions`` is the ledger:
both sides (claim key, statement, quotation, offsets, conflicting words), the facet or reason,
detector and version, confidence, status and a person's resolution with its history; unique
per pair identity, cascading from both items. See docs/decisions/0017.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01 10:02:42.704475
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "contradictions",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.Column("identity", sa.String(length=64), nullable=False),
        sa.Column("content", sa.String(length=64), nullable=False),
        sa.Column("subject", sa.String(length=400), nullable=False),
        sa.Column("subject_name", sa.String(length=300), nullable=False),
        sa.Column("first_item_id", sa.String(length=36), nullable=False),
        sa.Column("second_item_id", sa.String(length=36), nullable=False),
        sa.Column("first", sa.JSON(), nullable=False),
        sa.Column("second", sa.JSON(), nullable=False),
        sa.Column("facet", sa.String(length=32), nullable=False),
        sa.Column("reason", sa.String(length=500), nullable=False),
        sa.Column("confidence", sa.Float(), nullable=False),
        sa.Column("detector", sa.String(length=64), nullable=False),
        sa.Column("detector_version", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("resolution", sa.String(length=32), nullable=True),
        sa.Column("note", sa.String(length=1000), nullable=True),
        sa.Column("resolved_by", sa.String(length=100), nullable=True),
        sa.Column("resolved_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("history", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["first_item_id"],
            ["items.id"],
            name=op.f("fk_contradictions_first_item_id_items"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["second_item_id"],
            ["items.id"],
            name=op.f("fk_contradictions_second_item_id_items"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_contradictions_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_contradictions")),
        sa.UniqueConstraint(
            "workspace_id", "identity", name=op.f("uq_contradictions_workspace_id_identity")
        ),
    )
    with op.batch_alter_table("contradictions", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_contradictions_workspace_id_first_item_id"),
            ["workspace_id", "first_item_id"],
            unique=False,
        )
        batch_op.create_index(
            batch_op.f("ix_contradictions_workspace_id_second_item_id"),
            ["workspace_id", "second_item_id"],
            unique=False,
        )
        batch_op.create_index(
            batch_op.f("ix_contradictions_workspace_id_status_confidence"),
            ["workspace_id", "status", "confidence"],
            unique=False,
        )
        batch_op.create_index(
            batch_op.f("ix_contradictions_workspace_id_subject"),
            ["workspace_id", "subject"],
            unique=False,
        )

    with op.batch_alter_table("claims", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("subject_name", sa.String(length=300), server_default="", nullable=False)
        )
        batch_op.add_column(
            sa.Column("start_offset", sa.Integer(), server_default="0", nullable=False)
        )
        batch_op.add_column(
            sa.Column("end_offset", sa.Integer(), server_default="0", nullable=False)
        )
        batch_op.add_column(sa.Column("facets", sa.JSON(), nullable=True))
        batch_op.add_column(
            sa.Column("extractor_version", sa.String(length=64), server_default="", nullable=False)
        )


def downgrade() -> None:
    """Back to 0004's shape: the ledger and the claims' new columns go (claims too)."""
    op.drop_table("contradictions")
    op.execute("DELETE FROM claims")
    with op.batch_alter_table("claims", schema=None) as batch_op:
        for column in ("extractor_version", "facets", "end_offset", "start_offset", "subject_name"):
            batch_op.drop_column(column)
