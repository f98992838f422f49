"""judge run liveness: host, pid and heartbeat of the process running it

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01

A run whose process was killed stayed ``running`` forever. With the host and process id
of the runner and a heartbeat the writer refreshes, ``gradercal judge runs`` and the next
``judge run`` mark such a run ``interrupted``. Runs written before this revision get
NULLs and are judged by their start time.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("judge_run", sa.Column("host", sa.String(length=255), nullable=True))
    op.add_column("judge_run", sa.Column("pid", sa.Integer(), nullable=True))
    op.add_column("judge_run", sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("judge_run") as batch:
        batch.drop_column("heartbeat_at")
        batch.drop_column("pid")
        batch.drop_column("host")
