"""Which version of its criterion each verdict was given under (issue #16).

A criterion revised in a way that can change a verdict (its text, scale or rule, or its
task's prompt, artifacts or answer format) has *eras*: the first starts at task version 1,
each later one at a version where such a change happened
(:func:`gradercal.db.frames_read.verdict_changes`). A verdict belongs to the era of the
task version it was given under — the latest change at or before that version (1 if
none). :func:`read_eras` tells, for every judgment and adjudication on a revised
criterion, its era; :func:`gradercal.analysis.versions.agreement_by_version` then compares
the eras on frames loaded with ``version="all"``.

Only the verdicts the judgment and adjudication tables hold are counted: a verdict given
again replaces the earlier one there (the earlier value is kept in the ``revision``
history, which does not record the version it was given under), so an earlier era holds
the verdicts not yet given again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from sqlalchemy import Connection, select

from gradercal.analysis.versions import VerdictEras
from gradercal.db import models as m
from gradercal.db.frames_read import verdict_changes

if TYPE_CHECKING:
    from gradercal.db.repo import Repository

__all__ = ["has_verdict_changes", "load_eras", "read_eras"]


def has_verdict_changes(repo: Repository, benchmark: str | None = None) -> bool:
    """Whether some criterion of the benchmark was revised in a way that changes verdicts."""
    bench = repo.benchmark(benchmark)
    with repo.db.read() as s:
        return bool(verdict_changes(s.connection(), bench.id))


def load_eras(repo: Repository, benchmark: str | None = None) -> VerdictEras:
    """:func:`read_eras` of the benchmark (its own read transaction)."""
    bench = repo.benchmark(benchmark)
    with repo.db.read() as s:
        return read_eras(s.connection(), bench.id)


def _eras(marks: dict[int, np.ndarray], crit: np.ndarray, given: np.ndarray) -> np.ndarray:
    """The era (first task version) of each verdict: the latest mark ≤ its version."""
    out = np.ones(len(crit), dtype=np.int64)
    for pk, mk in marks.items():
        rows = crit == pk
        if rows.any():
            out[rows] = mk[np.searchsorted(mk, given[rows], side="right") - 1]
    return out


def read_eras(conn: Connection, bench_id: int) -> VerdictEras:
    """The revised criteria of benchmark ``bench_id`` and the era of every judgment and
    adjudication on them (external ids and grader names, as the frames have them)."""
    changes = verdict_changes(conn, bench_id)
    if not changes:
        return VerdictEras.empty()
    pks = sorted(changes)
    crit_rows = conn.execute(
        select(m.Criterion.id, m.Task.external_id, m.Criterion.external_id)
        .join(m.Task, m.Task.id == m.Criterion.task_id)
        .where(m.Criterion.id.in_(pks))
    ).all()
    names = {int(pk): (str(t), str(c)) for pk, t, c in crit_rows}
    marks = {pk: np.asarray([1, *sorted(set(v))], dtype=np.int64) for pk, v in changes.items()}
    revised = {names[pk]: tuple(int(x) for x in marks[pk]) for pk in pks if pk in names}

    j_rows = conn.execute(
        select(
            m.Response.external_id,
            m.Criterion.external_id,
            m.Grader.name,
            m.Judgment.criterion_id,
            m.Judgment.task_version,
        )
        .join(m.Response, m.Response.id == m.Judgment.response_id)
        .join(m.Criterion, m.Criterion.id == m.Judgment.criterion_id)
        .join(m.Grader, m.Grader.id == m.Judgment.grader_id)
        .where(m.Response.benchmark_id == bench_id, m.Judgment.criterion_id.in_(pks))
        .order_by(m.Judgment.id)
    ).all()
    j_crit = np.fromiter((r[3] for r in j_rows), dtype=np.int64, count=len(j_rows))
    j_given = np.fromiter((r[4] for r in j_rows), dtype=np.int64, count=len(j_rows))
    judgments = pd.DataFrame(
        {
            "response_id": pd.Series([str(r[0]) for r in j_rows], dtype=object),
            "criterion_id": pd.Series([str(r[1]) for r in j_rows], dtype=object),
            "grader": pd.Series([str(r[2]) for r in j_rows], dtype=object),
            "era": _eras(marks, j_crit, j_given),
        }
    )
    a_rows = conn.execute(
        select(
            m.Response.external_id,
            m.Criterion.external_id,
            m.Adjudication.criterion_id,
            m.Adjudication.task_version,
        )
        .join(m.Response, m.Response.id == m.Adjudication.response_id)
        .join(m.Criterion, m.Criterion.id == m.Adjudication.criterion_id)
        .where(m.Response.benchmark_id == bench_id, m.Adjudication.criterion_id.in_(pks))
        .order_by(m.Adjudication.id)
    ).all()
    a_crit = np.fromiter((r[2] for r in a_rows), dtype=np.int64, count=len(a_rows))
    a_given = np.fromiter((r[3] for r in a_rows), dtype=np.int64, count=len(a_rows))
    adjudications = pd.DataFrame(
        {
            "response_id": pd.Series([str(r[0]) for r in a_rows], dtype=object),
            "criterion_id": pd.Series([str(r[1]) for r in a_rows], dtype=object),
            "era": _eras(marks, a_crit, a_given),
        }
    )
    return VerdictEras(revised=revised, judgments=judgments, adjudications=adjudications)
