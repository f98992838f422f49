"""Reading a benchmark's frames column-wise (the fast path of ``Repository.load_frames``).

The rows and columns are read by :mod:`gradercal.db.frames_fetch` (no pandas there) and
made into frames by :func:`gradercal.frames.frames_from_rows`. The result is the same
frame, value for value and dtype for dtype, as the rows path
(``Repository.load_frames_by_rows``; ``tests/db/test_frames_read.py`` compares them on
SQLite and PostgreSQL). :func:`read_frames` returns None when a judgment names a
criterion that is not in the benchmark's own tasks (a database written by hand): the
caller then takes the rows path, which joins whatever the judgment names.
"""

from __future__ import annotations

import pandas as pd
from sqlalchemy import Connection

from gradercal._util.collector import collections_paused
from gradercal.db.fingerprint import REVISION_PARTS, read_revision
from gradercal.db.frames_fetch import (
    fetch_adjudications,
    fetch_frames,
    kept_rows,
    kept_versions,
    verdict_changes,
    verdicts_at,
    verdicts_by_era,
)
from gradercal.frame_rows import Version, parse_version
from gradercal.frames import ADJUDICATION_DTYPES, Frames, frames_from_rows, make_frame

__all__ = [
    "REVISION_PARTS",
    "Version",
    "collections_paused",
    "kept_rows",
    "kept_versions",
    "parse_version",
    "read_adjudications",
    "read_frames",
    "read_revision",
    "verdict_changes",
    "verdicts_at",
    "verdicts_by_era",
]


def read_frames(
    conn: Connection, bench_id: int, pass_threshold: float, version: Version = "current"
) -> Frames | None:
    """The frames of benchmark ``bench_id`` read on ``conn`` (inside its transaction), or
    None when a judgment's criterion lies outside the benchmark (see the module notes).
    ``version`` chooses the verdicts after rubric revisions (:data:`Version`)."""
    rows = fetch_frames(conn, bench_id, pass_threshold, version)
    if rows is None:
        return None
    with collections_paused():
        return frames_from_rows(rows)


def read_adjudications(
    conn: Connection, bench_id: int, version: Version = "current"
) -> pd.DataFrame:
    """The ``adjudications`` frame of benchmark ``bench_id`` (as in :func:`read_frames`)."""
    return make_frame(ADJUDICATION_DTYPES, fetch_adjudications(conn, bench_id, version))
