"""claims.write_seq and claim_writes: claims written while another item's claims stage ran;
claims.comparable: the facets as the detector compares them

The claims stage compares an item's claims with the stored claims of other items about the
same subjects. Two items whose stages ran at the same moment did not see each other's claims,
so a contradiction between them was missed until one was reprocessed. Each claims write now
takes the next number of its workspace's row in ``claim_writes`` (which on PostgreSQL also
orders the claims writes of a workspace: the row stays locked until the write commits) and
stamps its claims with it; a stage reads the last number with its candidates and, in its
write, compares its claims with those written after that number. Existing claims get
0: they were all written before any stage that runs after this revision read.

``comparable`` holds a claim's facets exactly as the detector compares them
(``relata.claims.facets.facets_record``), so the stored claims an item is compared with are
decoded, not read again from their quotations; existing claims have NULL and are read again
until their item is reprocessed.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-02 12:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "claim_writes",
        sa.Column("workspace_id", sa.String(36), nullable=False),
        sa.Column("seq", sa.BigInteger, nullable=False),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name="fk_claim_writes_workspace_id_workspaces",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("workspace_id", name="pk_claim_writes"),
    )
    # A plain ADD COLUMN on both dialects (no table rebuild on SQLite).
    op.add_column(
        "claims", sa.Column("write_seq", sa.BigInteger, nullable=False, server_default="0")
    )
    op.add_column("claims", sa.Column("comparable", sa.JSON))
    op.drop_index("ix_claims_workspace_id_subject", table_name="claims")
    op.create_index(
        "ix_claims_workspace_id_subject_write_seq",
        "claims",
        ["workspace_id", "subject", "write_seq"],
    )


def downgrade() -> None:
    op.drop_index("ix_claims_workspace_id_subject_write_seq", table_name="claims")
    op.create_index("ix_claims_workspace_id_subject", "claims", ["workspace_id", "subject"])
    with op.batch_alter_table("claims") as batch:
        batch.drop_column("comparable")
        batch.drop_column("write_seq")
    op.drop_table("claim_writes")
