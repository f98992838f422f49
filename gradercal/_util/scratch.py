"""Scratch folders that do not outlive their process, even a killed one.

A process killed with SIGKILL (or a power cut) cannot remove its temporary folders, and
gradercal's hold whole packet databases. :func:`scratch_dir` names each folder after the
process that made it (``<prefix><pid>-<random>``) and, before making a new one, removes
the folders of the same prefix whose process is gone, so the next run cleans up after a
killed one. :func:`exit_on_sigterm` turns SIGTERM into a normal exit, so ``finally``
blocks and context managers (these folders included) run when a process is stopped.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

__all__ = ["TEMP_PREFIXES", "exit_on_sigterm", "scratch_dir", "sweep_stale", "sweep_temp"]

#: The prefixes of gradercal's scratch folders in the system's temporary folder.
TEMP_PREFIXES = ("gradercal-merge-", "gradercal-info-", "gradercal-stdin-")


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True


def sweep_stale(prefix: str, parent: Path | None = None) -> list[Path]:
    """Remove ``parent``'s folders named ``<prefix><pid>-…`` whose process has ended;
    returns what was removed (folders of live processes and other names are left)."""
    where = Path(parent) if parent is not None else Path(tempfile.gettempdir())
    removed: list[Path] = []
    try:
        entries = list(where.iterdir())
    except OSError:
        return removed
    for entry in entries:
        if not entry.name.startswith(prefix) or not entry.is_dir() or entry.is_symlink():
            continue
        pid_text = entry.name[len(prefix) :].partition("-")[0]
        if not pid_text.isdigit() or _alive(int(pid_text)):
            continue
        shutil.rmtree(entry, ignore_errors=True)
        if not entry.exists():
            removed.append(entry)
    return removed


def sweep_temp() -> list[Path]:
    """:func:`sweep_stale` for every prefix of :data:`TEMP_PREFIXES` (one listing of the
    temporary folder; every command starts with it)."""
    where = Path(tempfile.gettempdir())
    return [p for prefix in TEMP_PREFIXES for p in sweep_stale(prefix, where)]


@contextlib.contextmanager
def scratch_dir(prefix: str, parent: Path | None = None) -> Iterator[Path]:
    """A new private folder (removed on exit), after removing the stale ones of ``prefix``."""
    sweep_stale(prefix, parent)
    path = Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=parent))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def exit_on_sigterm() -> None:
    """Make SIGTERM end the process as ``sys.exit(143)`` does (cleanups run), where the
    default is to stop at once. Only from the main thread; a no-op elsewhere."""

    def _stop(_signum: int, _frame: FrameType | None) -> None:
        sys.exit(128 + signal.SIGTERM)

    with contextlib.suppress(ValueError):  # not the main thread
        signal.signal(signal.SIGTERM, _stop)
