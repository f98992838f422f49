"""A fingerprint of a benchmark's data, cheap to read (:func:`read_revision`).

Kept apart from :mod:`gradercal.db.frames_read` so that reading it imports neither numpy
nor pandas: the dashboard's worker reads it before anything else, to answer from its
result cache on disk without loading a frame.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import BigInteger, ColumnElement, Connection, Integer, case, cast, func, select

from gradercal.db import models as m

__all__ = ["REVISION_PARTS", "read_revision", "verdict_digest"]


#: The parts of a :func:`read_revision`, one per kind of data a dashboard reads;
#: ``database`` is the database's own identity (``database_info.database_id``).
REVISION_PARTS = (
    "database",
    "benchmark",
    "tasks",
    "responses",
    "graders",
    "judgments",
    "adjudications",
    "reviews",
    "rounds",
)


#: The modulus of :func:`verdict_digest`, 2^31 - 1 (a prime): the product of two values
#: below it stays below 2^62, within SQLite's and PostgreSQL's 64-bit integers.
_P = 2_147_483_647
#: Its constants (fixed: a digest means the same in every process).
_K, _C1, _C2, _C3 = 1_580_030_173, 912_367_517, 1_071_237_119, 618_033_989


def verdict_digest(row_id: Any, value: ColumnElement[Any]) -> ColumnElement[Any]:
    """An aggregate column over the rows selected: a digest of their ``(row_id, value)``
    pairs (``row_id`` a positive integer below 2^31, ``value`` an integer expression of
    magnitude below 2^62).

    Each row adds its value mod P (:data:`_P`, a prime) times a weight drawn from its id
    (``u = id·K + C1``, squared plus a constant twice, all mod P: a polynomial of degree 4
    in the id, so the weights of different rows look unrelated). The sum does not depend
    on the rows' order, and changed values change it unless the changes' weighted sum
    happens to be 0: about one chance in 2^31 for changes that are not built for it. A
    sum of the values themselves would not do: two verdicts flipped in opposite ways
    cancel, and so would (with a weight linear in the id) flips at ids a, b, c, d with
    a + b = c + d. Plain integer SQL, the same on SQLite and PostgreSQL; no intermediate
    reaches 2^63, nor a sum of up to 2^32 rows.
    """
    u = (cast(row_id, BigInteger) * _K + _C1) % _P
    s = (u * u + _C2) % _P
    weight = (s * s + _C3) % _P
    residue = (cast(value, BigInteger) % _P + _P) % _P + 1  # 1 … P: never 0
    return func.sum(residue * weight % _P)


def judgment_value() -> ColumnElement[Any]:
    """A judgment's verdict as one integer (for :func:`verdict_digest`): its met (NULL
    apart), level, unclear flag, task version and confidence to six decimals, packed
    (a level beyond 62 or a task version beyond 15 overlaps the next field: then only
    weaker). Its rationale is not in it: a text changes only with a new revision."""
    j = m.Judgment
    confidence = case(
        (j.confidence.between(-1000, 1000), cast(func.round(j.confidence * 1_000_000), BigInteger)),
        else_=-2_000_000_000,  # NULL (or beyond ±1000)
    )
    met = func.coalesce(cast(j.met, Integer), 2)
    unclear = func.coalesce(cast(j.unclear, Integer), 0)
    level = func.coalesce(j.level, -1) + 1
    return ((confidence * 64 + level) * 8 + met * 2 + unclear) * 16 + j.task_version


def adjudication_value() -> ColumnElement[Any]:
    """An adjudication's verdict as one integer: met, level, task version (the
    adjudicator's name and the note change only with a new revision)."""
    a = m.Adjudication
    met = func.coalesce(cast(a.met, Integer), 2)
    level = func.coalesce(a.level, -1) + 1
    return (level * 4 + met) * 16 + a.task_version


def read_revision(
    conn: Connection, bench_id: int, previous: Mapping[str, str] | None = None
) -> dict[str, str]:
    """A fingerprint of everything :func:`read_frames`, the task reviews and the acceptance
    rounds read, per part (:data:`REVISION_PARTS`, and ``judgment_stamps``): equal
    fingerprints, equal data.

    ``database`` is the database's identity (the UUID its first migration wrote): a
    database rebuilt at the same path or URL is another database, whatever it holds.
    Nothing in gradercal deletes these rows, and every change of a judgment, an
    adjudication, a task review or a round is written with a new ``revision`` or
    ``updated_at`` (imports, grading, the judge, packets, the team triggers); tasks and
    responses carry a content hash of what defines them (criteria and artifacts included).
    So a part's fingerprint is its row count, largest id and those stamps' sum / maximum
    and, for the small tables, the content hashes themselves. The verdicts (judgments and
    adjudications) are fingerprinted by their values too (:func:`verdict_digest`), so that
    verdicts written with the same counts and stamps — imported from other files, or a
    copy edited outside gradercal — still differ.

    The judgments' digest is their one costly part (a scan of every verdict, about 0.1 s
    for the 222k judgments of 750 tasks on SQLite: docs/dashboard.md). Given ``previous``
    (a fingerprint read earlier of this benchmark, in this process) with the same
    ``database`` and ``judgment_stamps`` (the judgments' count, largest id, revision sum,
    newest ``updated_at`` and the criteria's verdict versions), its judgments part is kept
    instead of read again: whatever gradercal writes changes those stamps. A caller
    answering from a cache kept across processes passes no ``previous``.
    """
    import hashlib

    def digest(*values: Any) -> str:
        return hashlib.blake2b(repr(values).encode(), digest_size=16).hexdigest()

    def rows(*values: Any) -> str:
        return digest(*(tuple(row) for row in values))

    database = conn.execute(
        select(m.DatabaseInfo.value).where(m.DatabaseInfo.key == "database_id")
    ).all()
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
    out: dict[str, str] = {
        "database": rows(*database),
        "benchmark": rows(*bench),
        "tasks": rows(*tasks),
        "responses": rows(*responses),
        "graders": rows(*graders),
    }
    j = m.Judgment
    stamps = (
        func.count(),
        func.max(j.id),
        func.sum(j.revision),
        func.max(j.updated_at),
        func.sum(j.task_version),
    )
    kept = previous is not None and previous.get("database") == out["database"]
    if kept:
        assert previous is not None
        stamped: tuple[Any, ...] = tuple(
            conn.execute(select(*stamps).where(j.response_id.in_(in_bench))).one()
        )
        out["judgment_stamps"] = rows((bench_id,), stamped, *verdict_versions)
        kept = previous.get("judgment_stamps") == out["judgment_stamps"] and "judgments" in previous
        if kept:
            out["judgments"] = previous["judgments"]
    if not kept:
        (row,) = conn.execute(
            select(*stamps, verdict_digest(j.id, judgment_value())).where(
                j.response_id.in_(in_bench)
            )
        ).all()
        stamped = tuple(row)[: len(stamps)]
        out["judgment_stamps"] = rows((bench_id,), stamped, *verdict_versions)
        out["judgments"] = rows(row, *verdict_versions)
    adjudications = [
        *conn.execute(
            select(
                func.count(),
                func.max(m.Adjudication.id),
                func.sum(m.Adjudication.revision),
                func.max(m.Adjudication.updated_at),
                func.sum(m.Adjudication.task_version),
                verdict_digest(m.Adjudication.id, adjudication_value()),
            ).where(m.Adjudication.response_id.in_(in_bench))
        ).all(),
        *verdict_versions,
    ]
    out["adjudications"] = rows(*adjudications)
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
    out["reviews"] = rows(*reviews)
    out["rounds"] = rows(*rounds)
    return out
