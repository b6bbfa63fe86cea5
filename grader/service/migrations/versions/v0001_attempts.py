"""The attempts table: every submission, its bytes, seed, status and report.

Revision ID: 0001
Revises:
Create Date: 2025-01-01
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "attempts",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("learner", sa.String(255), nullable=False),
        sa.Column("submitted_at", sa.DateTime, nullable=False),
        sa.Column("source", sa.LargeBinary, nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("seed", sa.BigInteger, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("score", sa.Integer),
        sa.Column("max_score", sa.Integer),
        sa.Column("report", sa.Text),
        sa.Column("graded_at", sa.DateTime),
    )
    op.create_index("ix_attempts_learner_id", "attempts", ["learner", "id"])
    op.create_index("ix_attempts_status", "attempts", ["status"])


def downgrade() -> None:
    op.drop_table("attempts")
