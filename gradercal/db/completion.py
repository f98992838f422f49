"""When each response's expert consensus was completed: the time of its last expert verdict.

The order in which the confidence sequences of ``estimate --sequential`` and ``progress``
take the labelled responses (:mod:`gradercal.analysis.sequential_report`).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import func, select

from gradercal.db import models as m
from gradercal.db.session import Database

__all__ = ["consensus_completion_times"]


def consensus_completion_times(db: Database, benchmark_id: int) -> dict[str, datetime]:
    """Response external id → the latest ``updated_at`` of a human verdict on it."""
    q = (
        select(m.Response.external_id, func.max(m.Judgment.updated_at))
        .join(m.Judgment, m.Judgment.response_id == m.Response.id)
        .join(m.Grader, m.Grader.id == m.Judgment.grader_id)
        .where(m.Response.benchmark_id == benchmark_id, m.Grader.kind == "human")
        .group_by(m.Response.external_id)
    )
    with db.read() as s:
        return {str(rid): t for rid, t in s.execute(q).all() if t is not None}
