"""LTI line items: the LMS column of each assignment of the course file, per course (grader.service.lti.store).

``lti_lineitems`` keeps per platform, context and assignment the AGS line
item its scores go to (found by ``resourceId``, made by the tool, or declared
through Deep Linking), unique, with the claim of the sender making it.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-07
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "lti_lineitems",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("issuer", sa.String(255), nullable=False),
        sa.Column("context_id", sa.String(255), nullable=False),
        sa.Column("assignment_id", sa.String(255), nullable=False),
        sa.Column("lineitem", sa.String(2048)),
        sa.Column("origin", sa.String(16), nullable=False),
        sa.Column("label", sa.String(255), nullable=False),
        sa.Column("score_maximum", sa.Float, nullable=False),
        sa.Column("claimed_at", sa.DateTime),
        sa.Column("updated_at", sa.DateTime, nullable=False),
        sa.UniqueConstraint("issuer", "context_id", "assignment_id", name="uq_lti_lineitem_assignment"),
    )


def downgrade() -> None:
    op.drop_table("lti_lineitems")
