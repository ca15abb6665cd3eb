"""item_attachments: an e-mail's attachments as items of their own

Each attachment part of an uploaded message is a row: the item it became, or why it was not
read (docs/decisions/0048-library-editing-and-attachments.md). Messages uploaded before
keep their attachments as sections of their text; nothing is backfilled.

Revision ID: 0018
Revises: 0017
Create Date: 2027-03-02 10:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "item_attachments",
        sa.Column("message_id", sa.String(length=36), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("item_id", sa.String(length=36), nullable=True),
        sa.Column("reason", sa.String(length=500), nullable=True),
        sa.ForeignKeyConstraint(
            ["message_id"],
            ["items.id"],
            name="fk_item_attachments_message_id_items",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["item_id"],
            ["items.id"],
            name="fk_item_attachments_item_id_items",
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name="fk_item_attachments_workspace_id_workspaces",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("message_id", "number", name="pk_item_attachments"),
    )
    op.create_index("ix_item_attachments_item_id", "item_attachments", ["item_id"])


def downgrade() -> None:
    op.drop_index("ix_item_attachments_item_id", table_name="item_attachments")
    op.drop_table("item_attachments")
