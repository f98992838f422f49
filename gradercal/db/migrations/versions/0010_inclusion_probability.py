"""active assignment: the probability each assignment's response was drawn with

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-06

``assignment.inclusion_probability`` (nullable float): for a response drawn by
``gradercal assign --strategy active``, the probability it was sampled with (Poisson
sampling, :mod:`gradercal.ops.active`); null for uniform assignments. ``estimate`` weights
expert-graded responses by its inverse. ``assignment.sampling_round`` (nullable integer)
numbers the active draws of a benchmark (1, 2, …), which the estimate treats as batches.
Two new nullable columns; old rows stay null.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("assignment") as batch:
        batch.add_column(sa.Column("inclusion_probability", sa.Float(), nullable=True))
        batch.add_column(sa.Column("sampling_round", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("assignment") as batch:
        batch.drop_column("sampling_round")
        batch.drop_column("inclusion_probability")
