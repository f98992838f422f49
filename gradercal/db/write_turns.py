"""Fair turns at SQLite's write lock between a bulk writer and short saves.

SQLite lets one writer in at a time, and a writer that finds the lock taken sleeps in
SQLite's busy handler (1 ms, 2 ms, … then 100 ms at a time) before it tries again. A bulk
writer that commits a batch and begins the next one at once frees the lock for a few
microseconds: a save sleeping in its busy handler almost never wakes up in that gap, so it
waits for the whole bulk write, however short each batch is, and fails after
``busy_timeout``. Batches alone do not help; turns do.

The turns are kept with an advisory lock (``flock``) on a small file beside the database,
``<database>-writers``:

* every short writer holds it *shared* from just before its ``BEGIN IMMEDIATE`` until its
  transaction ends (:func:`take`, :func:`release`, hooked into the engine's ``begin``,
  ``commit`` and ``rollback`` events by :mod:`gradercal.db.session`);
* a bulk writer, after each batch's commit, asks for it *exclusively* and lets it go at once
  (:func:`let_waiting_writers_in`). It gets it only when no short writer is waiting or
  writing, so every save that arrived during a batch goes in before the next batch.

A save therefore waits for one batch at most (plus one sleep of the busy handler). The bulk
writer waits for the saves, never longer than :data:`MAX_YIELD_S` per batch, so a stream of
saves cannot starve it either. Where ``flock`` does not exist (Windows) or the file cannot be
made (a read-only folder) the turns are skipped and SQLite's own waiting applies.
"""

from __future__ import annotations

import os
import time
from typing import Any

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

#: Suffix of the turns file beside a SQLite database.
SUFFIX = "-writers"
#: Longest a bulk writer waits for the saves queued behind one of its batches (seconds).
MAX_YIELD_S = 2.0
_INFO_KEY = "gradercal_write_turn"


def path_of(database: str | None) -> str | None:
    """The turns file of a SQLite database file (None for an in-memory database)."""
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    return database + SUFFIX


def _open(path: str) -> int | None:
    if fcntl is None:
        return None
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
    except OSError:  # a read-only folder: no turns, the write itself will say why
        return None


def take(info: dict[str, Any], path: str | None) -> None:
    """Hold the turns file shared for the transaction about to begin on a connection whose
    ``info`` dictionary is given."""
    release(info)
    if path is None:
        return
    fd = _open(path)
    if fd is None:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)  # waits only while a bulk writer is between batches
    except OSError:
        os.close(fd)
        return
    info[_INFO_KEY] = fd


def release(info: dict[str, Any]) -> None:
    """Give the turn back (the transaction ended)."""
    fd = info.pop(_INFO_KEY, None)
    if fd is not None:
        os.close(fd)  # closing the descriptor releases its flock


def let_waiting_writers_in(path: str | None, *, max_wait: float = MAX_YIELD_S) -> float:
    """Between two batches of a bulk write (no transaction open): wait until every short
    writer that holds or waits for a turn is through, at most ``max_wait`` seconds.
    Returns the seconds waited."""
    if path is None:
        return 0.0
    fd = _open(path)
    if fd is None:
        return 0.0
    started = time.perf_counter()
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.perf_counter() - started >= max_wait:
                    break
                time.sleep(0.002)
    finally:
        os.close(fd)
    return time.perf_counter() - started
