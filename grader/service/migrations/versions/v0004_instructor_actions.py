"""Instructor actions (extensions, extra attempts, overrides, regrades, appeals and answers) and past results.

``instructor_actions`` keeps every action with who, when, what, why and which
learner (none: the whole class); rows are never changed. ``past_results``
keeps the result an attempt had before a regrade queued it again.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-02
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "instructor_actions",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("at", sa.DateTime, nullable=False),
        sa.Column("actor", sa.String(255), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("learner", sa.String(255)),
        sa.Column("attempt_id", sa.Integer),
        sa.Column("refers_to", sa.Integer),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("data", sa.Text, nullable=False),
    )
    op.create_index("ix_actions_learner_id", "instructor_actions", ["learner", "id"])
    op.create_index("ix_actions_kind", "instructor_actions", ["kind"])
    op.create_table(
        "past_results",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("action_id", sa.Integer, nullable=False),
        sa.Column("attempt_id", sa.Integer, nullable=False),
        sa.Column("learner", sa.String(255), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("score", sa.Integer),
        sa.Column("max_score", sa.Integer),
        sa.Column("seed", sa.BigInteger, nullable=False),
        sa.Column("report", sa.Text),
        sa.Column("counted_report", sa.Text),
        sa.Column("key_fingerprint", sa.String(16)),
        sa.Column("graded_at", sa.DateTime),
    )
    op.create_index("ix_past_results_attempt", "past_results", ["attempt_id"])


def downgrade() -> None:
    op.drop_table("past_results")
    op.drop_table("instructor_actions")
