"""Which version of its criterion each verdict was given under (issue #16).

A criterion revised in a way that can change a verdict (its text, scale or rule, or its
task's prompt, artifacts or answer format) has *eras*: the first starts at task version 1,
each later one at a version where such a change happened
(:func:`gradercal.db.frames_read.verdict_changes`). A verdict belongs to the era of the
task version it was given under — the latest change at or before that version (1 if
none). :func:`read_eras` gives, for every judgment and adjudication on a revised
criterion, its value in each era it was given in
(:func:`gradercal.db.frames_read.verdicts_by_era`: a verdict given again replaces the
row's value, and the history keeps the earlier one with the version it was given under);
:func:`gradercal.analysis.versions.agreement_by_version` then compares the eras.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from sqlalchemy import Connection, select

from gradercal.analysis.verdict_eras import VerdictEras
from gradercal.db import models as m
from gradercal.db.frames_read import verdict_changes, verdicts_by_era
from gradercal.frames import ADJUDICATION_DTYPES, JUDGMENT_DTYPES, make_frame

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


def _with_era(dtypes: Mapping[str, Any], rows: list[Any]) -> pd.DataFrame:
    """The frame of ``rows`` (a verdict frame's columns, then the era) with ``era``."""
    frame = make_frame(dtypes, (tuple(r[:-1]) for r in rows))
    frame["era"] = np.fromiter((r[-1] for r in rows), dtype=np.int64, count=len(rows))
    return frame


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

    judgments = _with_era(JUDGMENT_DTYPES, verdicts_by_era(conn, bench_id, "judgment"))
    adjudications = _with_era(ADJUDICATION_DTYPES, verdicts_by_era(conn, bench_id, "adjudication"))
    return VerdictEras(revised=revised, judgments=judgments, adjudications=adjudications)
