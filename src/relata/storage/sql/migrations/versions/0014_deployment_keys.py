"""deployment_keys: random keys shared by every process of a deployment

A public OpenID client (no client secret) signed its flow cookie with a random key per
process, so with ``relata serve --processes N`` a sign-in whose callback reached another
process failed. The key is now made once and kept here (docs/decisions/0036).

Revision ID: 0014
Revises: 0013
Create Date: 2027-02-20 10:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "deployment_keys",
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("value", sa.LargeBinary(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_deployment_keys"),
    )


def downgrade() -> None:
    op.drop_table("deployment_keys")
