"""versions of tasks and criteria, and the version each verdict was given under

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-03

A task now has a ``version`` (1 when imported, one more per revision), and each
criterion the task version it last changed at (``version``) and last changed *in a way
that can change a verdict* at (``verdict_version``: its text, scale or automatic rule, or
the task's prompt, artifacts or answer format). Every judgment and adjudication records
the task version it was given under (``task_version``): it is *stale* when that is older
than its criterion's ``verdict_version`` (see :mod:`gradercal.ops.revisions`).
``content_version`` keeps each version of a task whole (the task as format v1 writes
it), with what changed, why, who and when. Existing rows are all at version 1, nothing
is stale, and no history row exists until a task is first revised.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _version(name: str) -> sa.Column[int]:
    return sa.Column(name, sa.Integer(), server_default=sa.text("1"), nullable=False)


def upgrade() -> None:
    # Plain ADD COLUMN (never a batch copy of the table: on SQLite, dropping the old
    # ``task`` table would cascade to every response and judgment).
    op.add_column("task", _version("version"))
    op.add_column("criterion", _version("version"))
    op.add_column("criterion", _version("verdict_version"))
    op.add_column("judgment", _version("task_version"))
    op.add_column("adjudication", _version("task_version"))
    op.create_table(
        "content_version",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("task_id", sa.Integer(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=20), nullable=False),
        sa.Column("content", sa.JSON(), nullable=False),
        sa.Column("changes", sa.JSON(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("actor", sa.String(length=200), nullable=True),
        sa.Column("source", sa.String(length=20), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["task_id"],
            ["task.id"],
            name=op.f("fk_content_version_task_id_task"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_content_version")),
        sa.UniqueConstraint("task_id", "version", name=op.f("uq_content_version_task_id_version")),
    )


def downgrade() -> None:
    op.drop_table("content_version")
    for table, column in (
        ("adjudication", "task_version"),
        ("judgment", "task_version"),
        ("criterion", "verdict_version"),
        ("criterion", "version"),
        ("task", "version"),
    ):
        op.drop_column(table, column)  # SQLite ≥ 3.35 drops a column in place
