"""Reading a benchmark's frames column-wise (the fast path of ``Repository.load_frames``).

The judgments are nearly all of a benchmark's rows (222,360 of about 245,000 at 750 tasks),
and the plain way to read them — joined rows through SQLAlchemy, one Python tuple per row
made into typed columns cell by cell (:func:`gradercal.frames.make_frame`) — spent about
4× the time of a bare driver fetchall. Here:

* the small tables (tasks, criteria, responses, graders, adjudications) are read as
  before, with their database ids;
* the judgments are one ``SELECT`` of integer keys and values from the judgment table
  alone (no join: the benchmark is chosen by a membership test on its responses, which
  SQLite evaluates while scanning the table in id order, so no sort either), fetched
  through the driver's cursor with no per-row processing;
* each fetched column becomes a numpy array in C; the keys become names by a
  ``searchsorted`` lookup in the small tables' sorted ids (one shared, interned string
  object per name, as :data:`gradercal.frames.INTERNED_COLUMNS` asks), and ``met`` /
  ``level`` become pandas' nullable arrays from a value array and a mask.

The result is the same frame, value for value and dtype for dtype, as the rows path
(``Repository.load_frames_by_rows``; ``tests/db/test_frames_read.py`` compares them on
SQLite and PostgreSQL). :func:`read_frames` returns None when a judgment names a
criterion that is not in the benchmark's own tasks (a database written by hand): the
caller then takes the rows path, which joins whatever the judgment names.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
from sqlalchemy import Connection, Text, func, select, type_coerce

from gradercal._util.collector import collections_paused
from gradercal.db import models as m
from gradercal.frames import (
    ADJUDICATION_DTYPES,
    CRITERION_DTYPES,
    JUDGMENT_COLUMNS,
    RESPONSE_DTYPES,
    TASK_DTYPES,
    Frames,
    make_frame,
    object_frame,
)

__all__ = [
    "REVISION_PARTS",
    "collections_paused",
    "read_adjudications",
    "read_frames",
    "read_revision",
]

#: The judgment columns fetched, in this order (keys as database ids).
_JUDGMENT_SELECT = (
    "SELECT j.response_id, j.criterion_id, j.grader_id, j.met, j.level, j.confidence, "
    "j.rationale, j.unclear FROM judgment j "
    "WHERE {key}j.response_id IN (SELECT r.id FROM response r WHERE r.benchmark_id = {bench}) "
    "ORDER BY j.id"
)


def read_frames(conn: Connection, bench_id: int, pass_threshold: float) -> Frames | None:
    """The frames of benchmark ``bench_id`` read on ``conn`` (inside its transaction), or
    None when a judgment's criterion lies outside the benchmark (see the module notes)."""
    with collections_paused():
        return _read_frames(conn, bench_id, pass_threshold)


def _read_frames(conn: Connection, bench_id: int, pass_threshold: float) -> Frames | None:
    n_art = (
        select(m.Artifact.task_id, func.count().label("n")).group_by(m.Artifact.task_id).subquery()
    )
    task_rows = conn.execute(
        select(
            m.Task.external_id,
            m.Task.workflow,
            m.Task.domain,
            m.Task.answer_format,
            func.coalesce(n_art.c.n, 0),
        )
        .outerjoin(n_art, n_art.c.task_id == m.Task.id)
        .where(m.Task.benchmark_id == bench_id)
        .order_by(m.Task.position)
    ).all()
    tasks = make_frame(TASK_DTYPES, ((a, b, c, d, int(n), n > 0) for a, b, c, d, n in task_rows))
    # On SQLite the JSON columns come as their text and are decoded here, once per distinct
    # text (a benchmark's criteria share a few tag lists); elsewhere the driver decodes.
    text_json = conn.dialect.name == "sqlite"
    tags_col: Any = type_coerce(m.Criterion.tags, Text) if text_json else m.Criterion.tags
    target_col: Any = (
        type_coerce(m.Criterion.auto_target, Text) if text_json else m.Criterion.auto_target
    )
    crit_rows = conn.execute(
        select(
            m.Criterion.id,
            m.Task.external_id,
            m.Criterion.external_id,
            m.Criterion.position,
            m.Criterion.text,
            m.Criterion.points,
            m.Criterion.kind,
            tags_col,
            m.Criterion.levels,
            m.Criterion.auto_key,
            target_col,
            m.Criterion.auto_abs_tol,
            m.Criterion.auto_rel_tol,
        )
        .join(m.Task, m.Task.id == m.Criterion.task_id)
        .where(m.Task.benchmark_id == bench_id)
        .order_by(m.Task.position, m.Criterion.position)
    ).all()
    tags = _Decoded(text_json, as_tuple=True)
    targets = _Decoded(text_json, as_tuple=False)
    criteria = make_frame(
        CRITERION_DTYPES,
        ((*r[1:7], tags(r[7]), r[8], r[9], targets(r[10]), r[11], r[12]) for r in crit_rows),
    )
    crit_ids = np.fromiter((r[0] for r in crit_rows), dtype=np.int64, count=len(crit_rows))
    resp_rows = conn.execute(
        select(
            m.Response.id,
            m.Response.external_id,
            m.Task.external_id,
            m.Response.model,
            m.Response.answer,
        )
        .join(m.Task, m.Task.id == m.Response.task_id)
        .where(m.Response.benchmark_id == bench_id)
        .order_by(m.Task.position, m.Response.id)
    ).all()
    responses = make_frame(RESPONSE_DTYPES, (tuple(r[1:]) for r in resp_rows))
    resp_ids = np.fromiter((r[0] for r in resp_rows), dtype=np.int64, count=len(resp_rows))
    grader_rows = conn.execute(select(m.Grader.id, m.Grader.name, m.Grader.kind)).all()
    grader_ids = np.fromiter((r[0] for r in grader_rows), dtype=np.int64, count=len(grader_rows))
    grader_names = _objects([sys.intern(r[1]) for r in grader_rows])
    grader_kinds = _objects([sys.intern(r[2]) for r in grader_rows])

    judgments = _judgments(
        conn,
        bench_id,
        (resp_ids, responses["response_id"].to_numpy(dtype=object)),
        (crit_ids, criteria["criterion_id"].to_numpy(dtype=object)),
        (grader_ids, grader_names, grader_kinds),
    )
    if judgments is None:
        return None
    adjudications = read_adjudications(conn, bench_id)
    return Frames(
        pass_threshold=pass_threshold,
        tasks=tasks,
        criteria=criteria,
        responses=responses,
        judgments=judgments,
        adjudications=adjudications,
    )


class _Decoded:
    """A JSON column's values as SQLAlchemy's JSON type would return them (``json.loads``
    of the stored text; None stays None), decoding each distinct text once. ``as_tuple``:
    the value as a tuple (a list of tags; None → ``()``). A decoded list or dict is never
    shared between cells (each cell gets its own, as before)."""

    _IMMUTABLE = (str, int, float, bool, tuple)

    def __init__(self, from_text: bool, *, as_tuple: bool) -> None:
        self.from_text = from_text
        self.as_tuple = as_tuple
        self._seen: dict[str, Any] = {}

    def __call__(self, value: Any) -> Any:
        if self.from_text and isinstance(value, str):
            if value in self._seen:
                return self._seen[value]
            decoded = json.loads(value)
            out = tuple(decoded or ()) if self.as_tuple else decoded
            if out is None or isinstance(out, self._IMMUTABLE):
                self._seen[value] = out
            return out
        return tuple(value or ()) if self.as_tuple else value


def read_adjudications(conn: Connection, bench_id: int) -> pd.DataFrame:
    """The ``adjudications`` frame of benchmark ``bench_id`` (as in :func:`read_frames`)."""
    a_rows = conn.execute(
        select(
            m.Response.external_id,
            m.Criterion.external_id,
            m.Adjudication.met,
            m.Adjudication.level,
            m.Adjudication.adjudicator,
            m.Adjudication.note,
        )
        .join(m.Response, m.Response.id == m.Adjudication.response_id)
        .join(m.Criterion, m.Criterion.id == m.Adjudication.criterion_id)
        .where(m.Response.benchmark_id == bench_id)
    ).all()
    return make_frame(ADJUDICATION_DTYPES, (tuple(r) for r in a_rows))


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
        select(m.Task.id, m.Task.position, m.Task.content_hash)
        .where(m.Task.benchmark_id == bench_id)
        .order_by(m.Task.id)
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
    judgments = conn.execute(
        select(
            func.count(),
            func.max(m.Judgment.id),
            func.sum(m.Judgment.revision),
            func.max(m.Judgment.updated_at),
        ).where(m.Judgment.response_id.in_(in_bench))
    ).all()
    adjudications = conn.execute(
        select(
            func.count(),
            func.max(m.Adjudication.id),
            func.sum(m.Adjudication.revision),
            func.max(m.Adjudication.updated_at),
        ).where(m.Adjudication.response_id.in_(in_bench))
    ).all()
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


def _objects(values: list[Any]) -> npt.NDArray[np.object_]:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def _judgments(
    conn: Connection,
    bench_id: int,
    responses: tuple[npt.NDArray[np.int64], npt.NDArray[np.object_]],
    criteria: tuple[npt.NDArray[np.int64], npt.NDArray[np.object_]],
    graders: tuple[npt.NDArray[np.int64], npt.NDArray[np.object_], npt.NDArray[np.object_]],
) -> pd.DataFrame | None:
    # SQLite: a unary + keeps the planner from the (response, criterion) index, so the table
    # is scanned in id order and nothing is sorted (0.23 s instead of 0.28 s at 222k rows).
    key = "+" if conn.dialect.name == "sqlite" else ""
    sql = _JUDGMENT_SELECT.format(key=key, bench=int(bench_id))
    cursor = conn.connection.cursor()
    try:
        cursor.execute(sql)
        rows = cursor.fetchall()
    finally:
        cursor.close()
    n = len(rows)
    cols: list[tuple[Any, ...]] = list(zip(*rows, strict=True)) if n else [()] * 8
    del rows
    resp_pos = _positions(responses[0], np.array(cols[0], dtype=np.int64))
    crit_pos = _positions(criteria[0], np.array(cols[1], dtype=np.int64))
    grader_pos = _positions(graders[0], np.array(cols[2], dtype=np.int64))
    if resp_pos is None or crit_pos is None or grader_pos is None:
        return None
    # None → NaN; True / False (PostgreSQL) or 1 / 0 (SQLite) → 1.0 / 0.0.
    met = np.array(cols[3], dtype=np.float64)
    level = np.array(cols[4], dtype=np.float64)
    no_level = np.isnan(level)
    level[no_level] = 0
    data = {
        "response_id": responses[1][resp_pos],
        "criterion_id": criteria[1][crit_pos],
        "grader": graders[1][grader_pos],
        "grader_kind": graders[2][grader_pos],
        "met": pd.arrays.BooleanArray(met == 1.0, np.isnan(met)),
        "level": pd.arrays.IntegerArray(level.astype(np.int64), no_level),
        "confidence": np.array(cols[5], dtype=np.float64),
        "rationale": np.fromiter(cols[6], dtype=object, count=n),
        "unclear": np.array(cols[7], dtype=bool),
    }
    assert tuple(data) == JUDGMENT_COLUMNS
    return object_frame(data)


def _positions(
    ids: npt.NDArray[np.int64], wanted: npt.NDArray[np.int64]
) -> npt.NDArray[np.intp] | None:
    """For each of ``wanted``, its index in ``ids`` (None if any is absent)."""
    if not len(wanted):
        return np.zeros(0, dtype=np.intp)
    if not len(ids):
        return None
    order = np.argsort(ids, kind="stable")
    at = np.searchsorted(ids[order], wanted)
    np.minimum(at, len(ids) - 1, out=at)
    pos = order[at]
    if not np.array_equal(ids[pos], wanted):
        return None
    out: npt.NDArray[np.intp] = pos.astype(np.intp, copy=False)
    return out
