"""what an acceptance round was decided on besides its numbers: interval method, rule

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-06

``task_round.decision_basis`` (JSON, nullable) keeps, when a round closes, how its
agreement interval was formed (``method``), the effective number of units behind it
(``n_effective``) and the agreement test's operating characteristic (``at_bar``: the
rule, whether the round passed, and how often a task exactly at the bar would have the
same outcome; see :mod:`gradercal.ops.acceptance`). Rounds closed before it have none.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # plain ADD COLUMN (no batch copy of the table on SQLite)
    op.add_column("task_round", sa.Column("decision_basis", sa.JSON(), nullable=True))


def downgrade() -> None:
    op.drop_column("task_round", "decision_basis")  # SQLite ≥ 3.35 drops a column in place
