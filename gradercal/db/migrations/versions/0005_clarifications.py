"""clarification threads on criteria, and a benchmark's general grading instructions

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-03

A grader's "criterion unclear" flag with a note opens (or joins) a thread on the
criterion (``clarification``, one row per thread: status, the first question, the
current answer) whose messages (``clarification_message``: the graders' questions and
the coordinators' answers) keep the whole exchange. ``benchmark.instructions`` holds
the optional ``instructions`` of benchmark.json, the general grading instructions shown
beside the rubric. It is a column of ``benchmark`` (not a ``database_info`` value like
the acceptance settings) because graders are meant to read it: in team mode they read
the whole ``benchmark`` row, and a table-level grant covers a new column too. Existing
rows keep NULL (no instructions), and no thread exists yet.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("benchmark") as batch:
        batch.add_column(sa.Column("instructions", sa.Text(), nullable=True))
    op.create_table(
        "clarification",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("benchmark_id", sa.Integer(), nullable=False),
        sa.Column("task_id", sa.Integer(), nullable=False),
        sa.Column("criterion_id", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("question", sa.Text(), nullable=False),
        sa.Column("asked_by", sa.String(length=200), nullable=False),
        sa.Column("asked_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("answer", sa.Text(), nullable=True),
        sa.Column("answered_by", sa.String(length=200), nullable=True),
        sa.Column("answered_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["benchmark_id"],
            ["benchmark.id"],
            name=op.f("fk_clarification_benchmark_id_benchmark"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["task_id"], ["task.id"], name=op.f("fk_clarification_task_id_task"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["criterion_id"],
            ["criterion.id"],
            name=op.f("fk_clarification_criterion_id_criterion"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_clarification")),
    )
    op.create_index(
        "ix_clarification_criterion_status", "clarification", ["criterion_id", "status"]
    )
    op.create_table(
        "clarification_message",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("clarification_id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=20), nullable=False),
        sa.Column("author", sa.String(length=200), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("judgment_id", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(
            ["judgment_id"],
            ["judgment.id"],
            name=op.f("fk_clarification_message_judgment_id_judgment"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["clarification_id"],
            ["clarification.id"],
            name=op.f("fk_clarification_message_clarification_id_clarification"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_clarification_message")),
    )
    op.create_index(
        op.f("ix_clarification_message_clarification_id"),
        "clarification_message",
        ["clarification_id"],
    )


def downgrade() -> None:
    op.drop_table("clarification_message")
    op.drop_table("clarification")
    with op.batch_alter_table("benchmark") as batch:
        batch.drop_column("instructions")
