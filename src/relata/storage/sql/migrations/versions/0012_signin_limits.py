"""signin_failures: the sign-in failure limit shared by every HTTP process

Failed sign-ins were counted in each process's memory, so with N HTTP processes
(``relata serve --processes N``) a guesser got N times the allowed failures. One row per
failure of a key (``u:<username>`` or ``a:<client address>``), pruned once older than
RELATA_LOGIN_WINDOW_SECONDS. docs/decisions/0036-http-processes.md says why.

Revision ID: 0012
Revises: 0010
Create Date: 2027-02-10 10:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "signin_failures",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("key", sa.String(length=200), nullable=False),
        sa.Column("failed_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_signin_failures"),
    )
    op.create_index("ix_signin_failures_key_failed_at", "signin_failures", ["key", "failed_at"])
    op.create_index("ix_signin_failures_failed_at", "signin_failures", ["failed_at"])


def downgrade() -> None:
    op.drop_index("ix_signin_failures_failed_at", table_name="signin_failures")
    op.drop_index("ix_signin_failures_key_failed_at", table_name="signin_failures")
    op.drop_table("signin_failures")
