"""Which version of its criterion each verdict was given under (issue #16).

A criterion revised in a way that can change a verdict (its text, scale or rule, or its
task's prompt, artifacts or answer format) has *eras*: the first starts at task version 1,
each later one at a version where such a change happened
(:func:`gradercal.db.frames_fetch.verdict_changes`). A verdict belongs to the era of the
task version it was given under — the latest change at or before that version (1 if
none). :func:`read_eras` gives, for every judgment and adjudication on a revised
criterion, its value in each era it was given in
(:func:`gradercal.db.frames_fetch.verdicts_by_era`: a verdict given again replaces the
row's value, and the history keeps the earlier one with the version it was given under);
:func:`gradercal.analysis.versions.agreement_by_version` then compares the eras.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import Connection

from gradercal.analysis.verdict_eras import VerdictEras, eras_from_rows
from gradercal.db.frames_fetch import fetch_eras, has_verdict_changes

if TYPE_CHECKING:
    from gradercal.db.repo import Repository

__all__ = ["has_verdict_changes", "load_eras", "read_eras"]


def load_eras(repo: Repository, benchmark: str | None = None) -> VerdictEras:
    """:func:`read_eras` of the benchmark (its own read transaction)."""
    bench = repo.benchmark(benchmark)
    with repo.db.read() as s:
        return read_eras(s.connection(), bench.id)


def read_eras(conn: Connection, bench_id: int) -> VerdictEras:
    """The revised criteria of benchmark ``bench_id`` and the era of every judgment and
    adjudication on them (external ids and grader names, as the frames have them)."""
    return eras_from_rows(fetch_eras(conn, bench_id))
