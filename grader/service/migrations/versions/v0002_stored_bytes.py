"""How many bytes each attempt keeps (its source and its report), for the per-learner storage bound.

Summing one integer column per learner is cheap on every submission; summing
``length(report)`` would read every kept report of the learner each time.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-02
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("attempts") as batch:
        batch.add_column(sa.Column("stored_bytes", sa.BigInteger, nullable=False, server_default="0"))
    # Attempts kept before this revision: their size now (a report's length in characters, close to its bytes).
    op.execute("UPDATE attempts SET stored_bytes = length(source) + coalesce(length(report), 0)")


def downgrade() -> None:
    with op.batch_alter_table("attempts") as batch:
        batch.drop_column("stored_bytes")
