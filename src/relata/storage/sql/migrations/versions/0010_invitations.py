"""invitations: how a person joins a workspace, with their consent

An owner no longer adds someone by username (which told anyone whether a username existed,
and made people members without asking them). They create an invitation with a role and an
expiry; its code is shown once and only its SHA-256 is stored (``code_hash``, with the short
public ``prefix`` a list tells codes apart by), like an API token's. A signed-in person who
was handed the code accepts or declines it, once; an owner may revoke it while it is
pending. ``created_by`` and ``closed_by`` (who accepted, declined or revoked it) are set to
NULL when that user is deleted; the invitation goes with its workspace.
docs/decisions/0028-workspace-invitations.md says why.

Revision ID: 0010
Revises: 0009
Create Date: 2027-02-01 10:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "invitations",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.Column("code_hash", sa.String(length=64), nullable=False),
        sa.Column("prefix", sa.String(length=16), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False, server_default="pending"),
        sa.Column("created_by", sa.String(length=36), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("closed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("closed_by", sa.String(length=36), nullable=True),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name="fk_invitations_workspace_id_workspaces",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["created_by"],
            ["users.id"],
            name="fk_invitations_created_by_users",
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["closed_by"], ["users.id"], name="fk_invitations_closed_by_users", ondelete="SET NULL"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_invitations"),
        sa.UniqueConstraint("code_hash", name="uq_invitations_code_hash"),
    )
    op.create_index(
        "ix_invitations_workspace_id_state_expires_at",
        "invitations",
        ["workspace_id", "state", "expires_at"],
    )


def downgrade() -> None:
    op.drop_index("ix_invitations_workspace_id_state_expires_at", table_name="invitations")
    op.drop_table("invitations")
