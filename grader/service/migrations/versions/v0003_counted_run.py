"""The counted run of each attempt (same code, same grade): its report and the seed key's fingerprint.

With a seed key an attempt is graded twice: on the learner's hidden, fixed
seed (``counted_report``: the score that counts) and on the fresh seed the
learner is shown (``seed``/``report``, as before). Attempts stored before this
revision have no counted run: the service queues them for one at its next start.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-02
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("attempts") as batch:
        batch.add_column(sa.Column("counted_report", sa.Text, nullable=True))
        batch.add_column(sa.Column("key_fingerprint", sa.String(16), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("attempts") as batch:
        batch.drop_column("key_fingerprint")
        batch.drop_column("counted_report")
