"""claims.repeat_key: the key a claim's sentence shares with its repeats, values masked

A second report that repeats a sentence of an earlier one with a changed year, day or
quantity is found through this indexed key (docs/decisions/0039). Existing claims keep NULL
until their items are processed again (``relata reprocess --all``): the key is computed by
the claims stage, not by the migration.

Revision ID: 0015
Revises: 0014
Create Date: 2027-02-21 10:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # A plain ADD COLUMN on both dialects (no table rebuild on SQLite).
    op.add_column("claims", sa.Column("repeat_key", sa.String(length=64)))
    op.create_index("ix_claims_workspace_id_repeat_key", "claims", ["workspace_id", "repeat_key"])


def downgrade() -> None:
    op.drop_index("ix_claims_workspace_id_repeat_key", table_name="claims")
    with op.batch_alter_table("claims") as batch:
        batch.drop_column("repeat_key")
