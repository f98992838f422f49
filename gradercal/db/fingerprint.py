"""A fingerprint of a benchmark's data, cheap to read (:func:`read_revision`).

Kept apart from :mod:`gradercal.db.frames_read` so that reading it imports neither numpy
nor pandas: the dashboard's worker reads it before anything else, to answer from its
result cache on disk without loading a frame.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, func, select

from gradercal.db import models as m

__all__ = ["REVISION_PARTS", "read_revision"]


#: The parts of a :func:`read_revision`, one per kind of data a dashboard reads.
REVISION_PARTS = (
    "benchmark",
    "tasks",
    "responses",
    "graders",
    "judgments",
    "adjudications",
    "reviews",
    "rounds",
)


def read_revision(conn: Connection, bench_id: int) -> dict[str, str]:
    """A fingerprint of everything :func:`read_frames`, the task reviews and the acceptance
    rounds read, per part (:data:`REVISION_PARTS`): equal fingerprints, equal data.

    Nothing in gradercal deletes these rows, and every change of a judgment, an
    adjudication, a task review or a round is written with a new ``revision`` or ``updated_at``
    (imports, grading, the judge, packets, the team triggers); tasks and responses carry a
    content hash of what defines them (criteria and artifacts included). So a part's
    fingerprint is its row count, largest id and those stamps' sum / maximum — a
    few aggregates, about 0.05 s at 222k judgments — and, for the small tables, the
    content hashes themselves. A changed part is read again; an unchanged one is kept.
    """
    import hashlib

    def digest(*values: Any) -> str:
        return hashlib.blake2b(repr(values).encode(), digest_size=16).hexdigest()

    bench = conn.execute(
        select(m.Benchmark.name, m.Benchmark.pass_threshold).where(m.Benchmark.id == bench_id)
    ).all()
    tasks = conn.execute(
        select(m.Task.id, m.Task.position, m.Task.content_hash, m.Task.version)
        .where(m.Task.benchmark_id == bench_id)
        .order_by(m.Task.id)
    ).all()
    # which verdicts are current depends on the criteria's verdict versions too: a
    # revision changes the judgments and adjudications read without touching their rows
    verdict_versions = conn.execute(
        select(func.count(), func.sum(m.Criterion.verdict_version))
        .join(m.Task, m.Task.id == m.Criterion.task_id)
        .where(m.Task.benchmark_id == bench_id)
    ).all()
    responses = conn.execute(
        select(m.Response.id, m.Response.task_id, m.Response.content_hash)
        .where(m.Response.benchmark_id == bench_id)
        .order_by(m.Response.id)
    ).all()
    graders = conn.execute(
        select(m.Grader.id, m.Grader.name, m.Grader.kind).order_by(m.Grader.id)
    ).all()
    in_bench = select(m.Response.id).where(m.Response.benchmark_id == bench_id)
    judgments: list[Any] = [
        *conn.execute(
            select(
                func.count(),
                func.max(m.Judgment.id),
                func.sum(m.Judgment.revision),
                func.max(m.Judgment.updated_at),
                func.sum(m.Judgment.task_version),
            ).where(m.Judgment.response_id.in_(in_bench))
        ).all(),
        *verdict_versions,
    ]
    adjudications: list[Any] = [
        *conn.execute(
            select(
                func.count(),
                func.max(m.Adjudication.id),
                func.sum(m.Adjudication.revision),
                func.max(m.Adjudication.updated_at),
                func.sum(m.Adjudication.task_version),
            ).where(m.Adjudication.response_id.in_(in_bench))
        ).all(),
        *verdict_versions,
    ]
    reviews = conn.execute(
        select(func.count(), func.max(m.TaskReview.id), func.max(m.TaskReview.updated_at))
        .join(m.Task, m.Task.id == m.TaskReview.task_id)
        .where(m.Task.benchmark_id == bench_id)
    ).all()
    rounds = conn.execute(
        select(func.count(), func.max(m.TaskRound.id), func.sum(m.TaskRound.revision))
        .join(m.Task, m.Task.id == m.TaskRound.task_id)
        .where(m.Task.benchmark_id == bench_id)
    ).all()
    parts = (bench, tasks, responses, graders, judgments, adjudications, reviews, rounds)
    return {
        name: digest(*(tuple(row) for row in rows))
        for name, rows in zip(REVISION_PARTS, parts, strict=True)
    }
