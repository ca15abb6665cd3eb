"""api_tokens.prefix and api_tokens.role: what a token may do, and how a person tells it apart

A token's secret is shown once and only its SHA-256 is stored (``token_hash``); ``prefix`` is
a short public part of the token (``rl_<prefix>_<secret>``) so that a list of tokens can say
which is which without holding anything that authenticates. ``role`` is the token's role in
its workspace (owner, editor, viewer), at most its creator's. Rows that existed before (none
were ever issued) get the least privilege. Sessions need no change: the CSRF token is derived
from the session token (``relata.auth.sessions``), nothing more is stored.

Revision ID: 0008
Revises: 0007
Create Date: 2027-01-20 10:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("api_tokens") as batch:
        batch.add_column(sa.Column("prefix", sa.String(16), nullable=False, server_default=""))
        batch.add_column(sa.Column("role", sa.String(16), nullable=False, server_default="viewer"))
    op.create_index("ix_sessions_user_id", "sessions", ["user_id"])


def downgrade() -> None:
    op.drop_index("ix_sessions_user_id", table_name="sessions")
    with op.batch_alter_table("api_tokens") as batch:
        batch.drop_column("role")
        batch.drop_column("prefix")
