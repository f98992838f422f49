"""judge certificates: the outcome of ``gradercal judge align``

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-06

``judge_certificate`` keeps, per judge and benchmark, the JSON certificate of each
alignment (split, candidates with provenance, held-out figures with paired and corrected
intervals, alt-test, cost) with the baseline and chosen prompt versions. New table only.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "judge_certificate",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("grader_id", sa.Integer(), nullable=False),
        sa.Column("benchmark_id", sa.Integer(), nullable=False),
        sa.Column("baseline_prompt_id", sa.Integer(), nullable=False),
        sa.Column("chosen_prompt_id", sa.Integer(), nullable=False),
        sa.Column("proven_better", sa.Boolean(), nullable=False),
        sa.Column("certificate", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["grader_id"],
            ["grader.id"],
            name=op.f("fk_judge_certificate_grader_id_grader"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["benchmark_id"],
            ["benchmark.id"],
            name=op.f("fk_judge_certificate_benchmark_id_benchmark"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["baseline_prompt_id"],
            ["prompt_version.id"],
            name=op.f("fk_judge_certificate_baseline_prompt_id_prompt_version"),
        ),
        sa.ForeignKeyConstraint(
            ["chosen_prompt_id"],
            ["prompt_version.id"],
            name=op.f("fk_judge_certificate_chosen_prompt_id_prompt_version"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_judge_certificate")),
    )


def downgrade() -> None:
    op.drop_table("judge_certificate")
