"""Reading a benchmark's frames without pandas: rows and numpy columns
(:class:`gradercal.frame_rows.FrameRows`), made into frames by
:func:`gradercal.frames.frames_from_rows` (:mod:`gradercal.db.frames_read`).

The judgments are nearly all of a benchmark's rows (222,360 of about 245,000 at 750 tasks),
and the plain way to read them — joined rows through SQLAlchemy, one Python tuple per row
made into typed columns cell by cell (:func:`gradercal.frames.make_frame`) — spent about
4× the time of a bare driver fetchall. Here:

* the small tables (tasks, criteria, responses, graders, adjudications) are read as
  rows, with their database ids;
* the judgments are one ``SELECT`` of integer keys and values from the judgment table
  alone (no join: the benchmark is chosen by a membership test on its responses, which
  SQLite evaluates while scanning the table in id order, so no sort either), fetched
  through the driver's cursor with no per-row processing;
* each fetched column becomes a numpy array in C; the keys become positions in the small
  tables by a ``searchsorted`` lookup in their sorted ids.

:func:`fetch_frames` returns None when a judgment names a criterion that is not in the
benchmark's own tasks (a database written by hand): the caller then takes the rows path
(``Repository.load_frames_by_rows``), which joins whatever the judgment names.

This module imports SQLAlchemy, numpy and the models, not pandas: ``gradercal report``
reads with it in a forked child while its own process imports pandas and the engines.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
from sqlalchemy import Connection, Text, func, select, type_coerce

from gradercal._util.collector import collections_paused
from gradercal.db import models as m
from gradercal.frame_rows import EraRows, FrameRows, JudgmentColumns, Version, parse_version

if TYPE_CHECKING:
    from gradercal.db.repo import Repository

__all__ = [
    "Version",
    "fetch_adjudications",
    "fetch_eras",
    "fetch_frames",
    "has_verdict_changes",
    "kept_rows",
    "kept_versions",
    "parse_version",
    "verdict_changes",
    "verdicts_at",
    "verdicts_by_era",
]


def verdict_changes(conn: Connection, bench_id: int) -> dict[int, list[int]]:
    """For each criterion (row id) revised in a way that can change a verdict, the task
    versions at which that happened, ascending (a criterion absent: never)."""
    rows = conn.execute(
        select(m.ContentVersion.task_id, m.ContentVersion.version, m.ContentVersion.changes)
        .join(m.Task, m.Task.id == m.ContentVersion.task_id)
        .where(m.Task.benchmark_id == bench_id, m.ContentVersion.version > 1)
        .order_by(m.ContentVersion.task_id, m.ContentVersion.version)
    ).all()
    if not rows:
        return {}
    tasks = sorted({int(t) for t, _v, _c in rows})
    crits: dict[int, dict[str, int]] = {}
    for pk, task_pk, ext in conn.execute(
        select(m.Criterion.id, m.Criterion.task_id, m.Criterion.external_id).where(
            m.Criterion.task_id.in_(tasks)
        )
    ):
        crits.setdefault(int(task_pk), {})[str(ext)] = int(pk)
    out: dict[int, list[int]] = {}
    for task_pk, version, raw in rows:
        changes = json.loads(raw) if isinstance(raw, str) else (raw or {})
        mine = crits.get(int(task_pk), {})
        if any(f.get("kind") == "verdict" for f in changes.get("task", ())):
            ids = list(mine)
        else:
            ids = [
                str(c["id"])
                for c in changes.get("criteria", ())
                if c.get("kind") == "verdict" and not c.get("removed")
            ]
        for ext in ids:
            if ext in mine:
                out.setdefault(mine[ext], []).append(int(version))
    return out


def kept_versions(
    version: Version,
    criterion: npt.NDArray[np.int64],
    given: npt.NDArray[np.int64],
    verdict_version: npt.NDArray[np.int64],
    changes: dict[int, list[int]] | None = None,
) -> npt.NDArray[np.bool_] | None:
    """Which verdicts to keep (None: all). ``criterion`` holds each verdict's criterion
    row id, ``given`` the task version it was given under, ``verdict_version`` its
    criterion's current one; ``changes`` is :func:`verdict_changes` (needed for a number).
    """
    if version == "all":
        return None
    if version == "current":
        keep = given >= verdict_version
        return None if keep.all() else keep
    n = int(version)
    keep = np.ones(len(given), dtype=bool)
    for crit, versions in (changes or {}).items():
        rows = criterion == crit
        if not rows.any():
            continue
        marks = np.asarray([1, *versions], dtype=np.int64)  # the eras' first versions
        era_of_given = marks[np.searchsorted(marks, given[rows], side="right") - 1]
        era_at_n = marks[np.searchsorted(marks, n, side="right") - 1]
        keep[rows] = era_of_given == era_at_n
    return None if keep.all() else keep


#: The judgment columns fetched, in this order (keys as database ids).
_JUDGMENT_SELECT = (
    "SELECT j.response_id, j.criterion_id, j.grader_id, j.met, j.level, j.confidence, "
    "j.rationale, j.unclear, j.task_version FROM judgment j "
    "WHERE {key}j.response_id IN (SELECT r.id FROM response r WHERE r.benchmark_id = {bench}) "
    "ORDER BY j.id"
)


def fetch_frames(
    conn: Connection,
    bench_id: int,
    pass_threshold: float,
    version: Version = "current",
    ahead: Callable[[FrameRows], None] | None = None,
) -> FrameRows | None:
    """The rows of benchmark ``bench_id``'s frames read on ``conn`` (inside its
    transaction), or None when a judgment's criterion lies outside the benchmark (see the
    module notes). ``version`` chooses the verdicts after rubric revisions
    (:data:`~gradercal.frame_rows.Version`). ``ahead``: given the rows of every frame but
    the judgments (an empty list there) before the judgments are read."""
    version = parse_version(version)
    with collections_paused():
        return _fetch_frames(conn, bench_id, pass_threshold, version, ahead)


def _fetch_frames(
    conn: Connection,
    bench_id: int,
    pass_threshold: float,
    version: Version,
    ahead: Callable[[FrameRows], None] | None = None,
) -> FrameRows | None:
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
    tasks = [(a, b, c, d, int(n), n > 0) for a, b, c, d, n in task_rows]
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
            m.Criterion.verdict_version,
        )
        .join(m.Task, m.Task.id == m.Criterion.task_id)
        .where(m.Task.benchmark_id == bench_id)
        .order_by(m.Task.position, m.Criterion.position)
    ).all()
    tags = _Decoded(text_json, as_tuple=True)
    targets = _Decoded(text_json, as_tuple=False)
    criteria = [(*r[1:7], tags(r[7]), r[8], r[9], targets(r[10]), r[11], r[12]) for r in crit_rows]
    crit_ids = np.fromiter((r[0] for r in crit_rows), dtype=np.int64, count=len(crit_rows))
    crit_verdict_versions = np.fromiter(
        (r[13] for r in crit_rows), dtype=np.int64, count=len(crit_rows)
    )
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
        .order_by(m.Task.position, m.Response.position, m.Response.id)
    ).all()
    responses = [tuple(r[1:]) for r in resp_rows]
    resp_ids = np.fromiter((r[0] for r in resp_rows), dtype=np.int64, count=len(resp_rows))
    grader_rows = conn.execute(select(m.Grader.id, m.Grader.name, m.Grader.kind)).all()
    grader_ids = np.fromiter((r[0] for r in grader_rows), dtype=np.int64, count=len(grader_rows))
    grader_names = _objects([sys.intern(r[1]) for r in grader_rows])
    grader_kinds = _objects([sys.intern(r[2]) for r in grader_rows])
    adjudications = fetch_adjudications(conn, bench_id, version)
    if ahead is not None:
        ahead(FrameRows(pass_threshold, tasks, criteria, responses, [], adjudications))

    columns = _judgments(
        conn,
        bench_id,
        resp_ids,
        crit_ids,
        (grader_ids, grader_names, grader_kinds),
        _Versions(version, crit_verdict_versions, conn, bench_id),
    )
    if columns is None:
        return None
    judgments: JudgmentColumns | list[tuple[Any, ...]] = columns
    if isinstance(version, int):  # earlier values come from the history
        judgments = [tuple(r) for r in verdicts_at(conn, bench_id, version, "judgment")]
    return FrameRows(
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


def fetch_adjudications(
    conn: Connection, bench_id: int, version: Version = "current"
) -> list[tuple[Any, ...]]:
    """The rows of the ``adjudications`` frame of benchmark ``bench_id`` (as in
    :func:`fetch_frames`)."""
    a_rows = conn.execute(
        select(
            m.Response.external_id,
            m.Criterion.external_id,
            m.Adjudication.met,
            m.Adjudication.level,
            m.Adjudication.adjudicator,
            m.Adjudication.note,
            m.Adjudication.criterion_id,
            m.Adjudication.task_version,
            m.Criterion.verdict_version,
        )
        .join(m.Response, m.Response.id == m.Adjudication.response_id)
        .join(m.Criterion, m.Criterion.id == m.Adjudication.criterion_id)
        .where(m.Response.benchmark_id == bench_id)
    ).all()
    version = parse_version(version)
    if isinstance(version, int):
        return [tuple(r) for r in verdicts_at(conn, bench_id, version, "adjudication")]
    a_rows = kept_rows(conn, bench_id, version, a_rows)
    return [tuple(r[:6]) for r in a_rows]


def _era(marks: list[int], version: int) -> int:
    """The first version of the era ``version`` falls in (``marks``: 1 and the verdict
    changes, ascending)."""
    return max(v for v in marks if v <= version) if version >= 1 else 1


def verdicts_at(conn: Connection, bench_id: int, version: int, entity: str) -> list[Any]:
    """The rows of the ``judgments`` (``entity = "judgment"``) or ``adjudications`` frame
    as they stood when each task was at ``version``.

    A verdict row holds only its latest value, so an earlier one comes from the history
    (``revision``: every superseded value, with the task version it was given under —
    absent in rows kept before versions existed, when every task was at version 1). For
    each verdict, the latest value given in the same era as ``version`` (between two
    verdict-changing revisions of its criterion) is kept; none, and it is left out.
    """
    out: list[Any] = []
    for head, marks, values in _verdict_values(conn, bench_id, entity, revised_only=False):
        value = values.get(_era(marks, version))
        if value is not None:
            out.append((*head, *value))
    return out


def verdicts_by_era(conn: Connection, bench_id: int, entity: str) -> list[Any]:
    """Every verdict on a criterion revised in a way that can change verdicts, once per
    era of the criterion in which it was given (its latest value there): the rows of
    :func:`verdicts_at` followed by the era (the task version the era began at)."""
    return [
        (*head, *value, era)
        for head, _marks, values in _verdict_values(conn, bench_id, entity, revised_only=True)
        for era, value in sorted(values.items())
    ]


def _verdict_values(
    conn: Connection, bench_id: int, entity: str, *, revised_only: bool
) -> list[tuple[tuple[Any, ...], list[int], dict[int, tuple[Any, ...]]]]:
    """For each verdict (in id order): its key columns, its criterion's era marks, and
    its latest value in each era it was given in (the row itself, then the history)."""
    from gradercal.db.versions import VERDICT_FIELDS

    table: Any = m.Judgment if entity == "judgment" else m.Adjudication
    fields = VERDICT_FIELDS[entity]
    keys: list[Any] = [m.Response.external_id, m.Criterion.external_id]
    if entity == "judgment":
        keys += [m.Grader.name, m.Grader.kind]
    changes = verdict_changes(conn, bench_id)
    q = (
        select(
            *keys,
            *[getattr(table, f) for f in fields],
            table.id,
            table.criterion_id,
            table.task_version,
        )
        .join(m.Response, m.Response.id == table.response_id)
        .join(m.Criterion, m.Criterion.id == table.criterion_id)
        .where(m.Response.benchmark_id == bench_id)
        .order_by(table.id)
    )
    if entity == "judgment":
        q = q.join(m.Grader, m.Grader.id == table.grader_id)
    if revised_only:
        if not changes:
            return []
        q = q.where(table.criterion_id.in_(sorted(changes)))
    rows = conn.execute(q).all()
    n_keys = len(keys)
    earlier: dict[int, list[tuple[int, dict[str, Any]]]] = {}
    revised_ids = [int(r[-3]) for r in rows if int(r[-2]) in changes]
    for start in range(0, len(revised_ids), 500):
        for eid, rev, data in conn.execute(
            select(m.Revision.entity_id, m.Revision.revision, m.Revision.data).where(
                m.Revision.entity == entity,
                m.Revision.entity_id.in_(revised_ids[start : start + 500]),
            )
        ):
            value = json.loads(data) if isinstance(data, str) else data
            earlier.setdefault(int(eid), []).append((int(rev), value))
    out = []
    for r in rows:
        *cols, rid, crit, given = r
        head, current = tuple(cols[:n_keys]), tuple(cols[n_keys:])
        marks = [1, *changes.get(int(crit), [])]
        values = {_era(marks, int(given)): current}
        for _rev, data in sorted(earlier.get(int(rid), []), key=lambda x: x[0], reverse=True):
            era = _era(marks, int(data.get("task_version") or 1))
            values.setdefault(era, tuple(data.get(f) for f in fields))  # the latest first
        out.append((head, marks, values))
    return out


def kept_rows(conn: Connection, bench_id: int, version: Version, rows: Any) -> Any:
    """Of rows ending in (criterion row id, task version given under, the criterion's
    verdict version), those ``version`` keeps (the rows path of :func:`kept_versions`)."""
    version = parse_version(version)
    if isinstance(version, int):
        return verdicts_at(conn, bench_id, version, "judgment")
    if version == "all" or not rows:
        return rows
    crit, given, verdict = (np.array([r[i] for r in rows], dtype=np.int64) for i in (-3, -2, -1))
    changes = verdict_changes(conn, bench_id) if isinstance(version, int) else None
    keep = kept_versions(version, crit, given, verdict, changes)
    return rows if keep is None else [r for r, k in zip(rows, keep, strict=True) if k]


class _Versions:
    """What :func:`_judgments` needs to keep the verdicts ``version`` asks for."""

    def __init__(
        self,
        version: Version,
        verdict_versions: npt.NDArray[np.int64],
        conn: Connection,
        bench_id: int,
    ) -> None:
        self.version = version
        self.verdict_versions = verdict_versions
        self.conn = conn
        self.bench_id = bench_id


def _objects(values: list[Any]) -> npt.NDArray[np.object_]:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def _judgments(
    conn: Connection,
    bench_id: int,
    response_ids: npt.NDArray[np.int64],
    criterion_ids: npt.NDArray[np.int64],
    graders: tuple[npt.NDArray[np.int64], npt.NDArray[np.object_], npt.NDArray[np.object_]],
    versions: _Versions | None = None,
) -> JudgmentColumns | None:
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
    # The rows as one (rows × 9) object array, each column cast from it in C: a third
    # less time than transposing them with zip (0.11 against 0.18 s at 222k rows), the same
    # values (None → NaN in the float columns).
    cols = np.empty((len(rows), 9), dtype=object)
    if rows:
        cols[:] = rows
    del rows
    resp_pos = _positions(response_ids, cols[:, 0].astype(np.int64))
    crit_keys = cols[:, 1].astype(np.int64)
    crit_pos = _positions(criterion_ids, crit_keys)
    grader_pos = _positions(graders[0], cols[:, 2].astype(np.int64))
    if resp_pos is None or crit_pos is None or grader_pos is None:
        return None
    if versions is not None and versions.version == "current" and len(cols):
        changes = (
            verdict_changes(versions.conn, versions.bench_id)
            if isinstance(versions.version, int)
            else None
        )
        keep = kept_versions(
            versions.version,
            crit_keys,
            cols[:, 8].astype(np.int64),
            versions.verdict_versions[crit_pos],
            changes,
        )
        if keep is not None:  # stale verdicts left out: the same columns, fewer rows
            cols = cols[keep]
            resp_pos, crit_pos, grader_pos = resp_pos[keep], crit_pos[keep], grader_pos[keep]
    # None → NaN; True / False (PostgreSQL) or 1 / 0 (SQLite) → 1.0 / 0.0.
    return JudgmentColumns(
        grader_names=graders[1],
        grader_kinds=graders[2],
        response_pos=resp_pos,
        criterion_pos=crit_pos,
        grader_pos=grader_pos,
        met=cols[:, 3].astype(np.float64),
        level=cols[:, 4].astype(np.float64),
        confidence=cols[:, 5].astype(np.float64),
        rationale=cols[:, 6].copy(),
        unclear=cols[:, 7].astype(bool),
    )


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


def has_verdict_changes(repo: Repository, benchmark: str | None = None) -> bool:
    """Whether some criterion of the benchmark was revised in a way that changes verdicts."""
    bench = repo.benchmark(benchmark)
    with repo.db.read() as s:
        return bool(verdict_changes(s.connection(), bench.id))


def fetch_eras(conn: Connection, bench_id: int) -> EraRows | None:
    """The revised criteria of benchmark ``bench_id`` and the rows of every judgment and
    adjudication on them, each followed by its era (external ids and grader names, as the
    frames have them); None when no criterion was revised in a way that changes verdicts."""
    changes = verdict_changes(conn, bench_id)
    if not changes:
        return None
    pks = sorted(changes)
    crit_rows = conn.execute(
        select(m.Criterion.id, m.Task.external_id, m.Criterion.external_id)
        .join(m.Task, m.Task.id == m.Criterion.task_id)
        .where(m.Criterion.id.in_(pks))
    ).all()
    names = {int(pk): (str(t), str(c)) for pk, t, c in crit_rows}
    revised = {
        names[pk]: tuple(int(x) for x in [1, *sorted(set(changes[pk]))])
        for pk in pks
        if pk in names
    }
    return EraRows(
        revised=revised,
        judgments=[tuple(r) for r in verdicts_by_era(conn, bench_id, "judgment")],
        adjudications=[tuple(r) for r in verdicts_by_era(conn, bench_id, "adjudication")],
    )
