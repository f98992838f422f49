"""one open clarification thread per criterion; responses keep their file order apart from their ids

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-06

Two graders flagging the same criterion unclear at the same moment could both find no
open thread and open one each. A partial unique index (``criterion_id`` where
``status = 'open'``) now lets the database keep one: the second flagger's insert fails
and :func:`gradercal.db.clarifications.open_from_flag` joins the thread the first opened.

``response.position`` keeps the order of the file a response was imported from, which
every output lists responses by; row ids of newly imported responses follow another
order (:func:`gradercal.db.repo._blind_order`), so a grader, who reads the ids of the
responses they grade, cannot group them by model. Existing responses get their id as
position (ids followed the file until now): no output changes.

Existing duplicate threads are merged first, nothing lost: of a criterion's open threads the
oldest stays open and receives the messages of the later ones (each question already
is a message of its thread), which are then closed.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

INDEX = "uq_clarification_open_criterion"


def upgrade() -> None:
    # Plain ADD COLUMN (a batch copy of ``response`` on SQLite would cascade its deletes)
    op.add_column(
        "response",
        sa.Column("position", sa.Integer(), server_default=sa.text("0"), nullable=False),
    )
    op.execute("UPDATE response SET position = id")
    conn = op.get_bind()
    duplicates = conn.execute(
        sa.text(
            "SELECT c.id, (SELECT min(k.id) FROM clarification k WHERE k.status = 'open' "
            "AND k.criterion_id = c.criterion_id) AS kept FROM clarification c "
            "WHERE c.status = 'open' AND c.id > (SELECT min(k.id) FROM clarification k "
            "WHERE k.status = 'open' AND k.criterion_id = c.criterion_id) ORDER BY c.id"
        )
    ).all()
    for dup, kept in duplicates:
        conn.execute(
            sa.text(
                "UPDATE clarification_message SET clarification_id = :k WHERE clarification_id = :d"
            ),
            {"k": kept, "d": dup},
        )
        conn.execute(
            sa.text("UPDATE clarification SET status = 'closed' WHERE id = :d"), {"d": dup}
        )
    op.create_index(
        INDEX,
        "clarification",
        ["criterion_id"],
        unique=True,
        sqlite_where=sa.text("status = 'open'"),
        postgresql_where=sa.text("status = 'open'"),
    )


def downgrade() -> None:
    op.drop_index(INDEX, table_name="clarification")
    op.drop_column("response", "position")
