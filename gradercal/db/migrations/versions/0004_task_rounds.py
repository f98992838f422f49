"""task acceptance rounds: one row per review round of a task

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-03

A task's status (draft, in review, needs revision, accepted, rejected) follows from its
rounds (see gradercal.ops.acceptance). A closed round keeps the agreement and survey
means it was decided on. The acceptance settings of a benchmark need no schema change:
they are a JSON value in ``database_info`` (see gradercal.db.acceptance). Existing
databases get an empty table: every task starts as a draft.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "task_round",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("task_id", sa.Integer(), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("opened_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("closed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("decision", sa.String(length=20), nullable=True),
        sa.Column("decided_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("actor", sa.String(length=200), nullable=True),
        sa.Column("statistic", sa.String(length=40), nullable=True),
        sa.Column("agreement", sa.Float(), nullable=True),
        sa.Column("agreement_low", sa.Float(), nullable=True),
        sa.Column("agreement_high", sa.Float(), nullable=True),
        sa.Column("n_units", sa.Integer(), nullable=True),
        sa.Column("n_criteria", sa.Integer(), nullable=True),
        sa.Column("agreement_note", sa.Text(), nullable=True),
        sa.Column("survey", sa.JSON(none_as_null=True), nullable=True),
        sa.Column("passed", sa.Boolean(), nullable=True),
        sa.Column("proposed", sa.Boolean(), nullable=True),
        sa.Column("reasons", sa.JSON(none_as_null=True), nullable=True),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["task_id"], ["task.id"], name=op.f("fk_task_round_task_id_task"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_task_round")),
        sa.UniqueConstraint("task_id", "number", name=op.f("uq_task_round_task_id_number")),
    )


def downgrade() -> None:
    op.drop_table("task_round")
