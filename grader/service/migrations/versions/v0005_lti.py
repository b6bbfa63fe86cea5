"""LTI 1.3: the launch claims of each learner and the outbox of scores for the LMS (grader.service.lti.store).

``lti_launches`` keeps, per learner and resource link, the launch's ``sub``,
deployment, context, AGS line item and scopes, NRPS URL and roles;
``lti_outbox`` keeps per line item and ``sub`` the score wanted and the score
the LMS accepted, with the tries and the LMS's last answer.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-03
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "lti_launches",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("learner", sa.String(255), nullable=False),
        sa.Column("sub", sa.String(255), nullable=False),
        sa.Column("issuer", sa.String(255), nullable=False),
        sa.Column("deployment_id", sa.String(255), nullable=False),
        sa.Column("context_id", sa.String(255), nullable=False),
        sa.Column("context_title", sa.String(255), nullable=False),
        sa.Column("resource_link_id", sa.String(255), nullable=False),
        sa.Column("lineitem", sa.String(2048)),
        sa.Column("lineitems", sa.String(2048)),
        sa.Column("ags_scopes", sa.Text, nullable=False),
        sa.Column("nrps_url", sa.String(2048)),
        sa.Column("roles", sa.Text, nullable=False),
        sa.Column("launched_at", sa.DateTime, nullable=False),
        sa.UniqueConstraint(
            "learner", "issuer", "deployment_id", "context_id", "resource_link_id", name="uq_lti_launch_link"
        ),
    )
    op.create_index("ix_lti_launches_sub", "lti_launches", ["sub"])
    op.create_table(
        "lti_outbox",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("learner", sa.String(255), nullable=False),
        sa.Column("sub", sa.String(255), nullable=False),
        sa.Column("issuer", sa.String(255), nullable=False),
        sa.Column("lineitem", sa.String(2048), nullable=False),
        sa.Column("scopes", sa.Text, nullable=False),
        sa.Column("score_given", sa.Float, nullable=False),
        sa.Column("score_maximum", sa.Float, nullable=False),
        sa.Column("wanted_at", sa.DateTime, nullable=False),
        sa.Column("sent_given", sa.Float),
        sa.Column("sent_maximum", sa.Float),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("tries", sa.Integer, nullable=False),
        sa.Column("next_try_at", sa.DateTime, nullable=False),
        sa.Column("last_status", sa.Integer),
        sa.Column("last_answer", sa.Text, nullable=False),
        sa.Column("updated_at", sa.DateTime, nullable=False),
        sa.UniqueConstraint("lineitem", "sub", name="uq_lti_outbox_item_sub"),
    )
    op.create_index("ix_lti_outbox_state_next", "lti_outbox", ["state", "next_try_at"])


def downgrade() -> None:
    op.drop_table("lti_outbox")
    op.drop_table("lti_launches")
