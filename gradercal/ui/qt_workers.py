"""Run functions off the UI thread and get their results back on it.

``submit(fn, *args, done=..., failed=...)`` runs ``fn`` in a ``QThreadPool`` and calls
``done(result)`` or ``failed(exception)`` on the UI thread through queued signals. The
callbacks are usually bound methods of widgets; a widget deleted in the meantime is
skipped silently.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QCoreApplication, QObject, QRunnable, QThreadPool, QTimer, Signal

_LIVE: set[QtJob] = set()
_GC_TIMER: list[QTimer] = []


def collect_garbage_on_ui_thread() -> None:
    """Run Python's cyclic garbage collector on the UI thread only.

    Left automatic, the collector runs in whichever thread happens to allocate — a
    worker parsing a workbook, say — and may finalize Qt widgets that became garbage
    there, destroying them off the UI thread: a segmentation fault (seen in the test
    suite). The usual Qt-for-Python remedy: turn automatic collection off and collect
    from a timer on the UI thread, generation by generation as the thresholds say.
    Idempotent; needs a QCoreApplication.
    """
    app = QCoreApplication.instance()
    if _GC_TIMER or app is None:
        return
    gc.disable()
    timer = QTimer(app)
    timer.setInterval(250)

    def collect() -> None:
        counts = gc.get_count()
        thresholds = gc.get_threshold()
        for generation in (2, 1, 0):
            if counts[generation] > thresholds[generation]:
                gc.collect(generation)
                break

    timer.timeout.connect(collect)
    timer.start()
    _GC_TIMER.append(timer)


def pause_collections(paused: bool) -> None:
    """Stop (``True``) or restart the UI thread's collections; call on the UI thread.

    For a worker thread importing large modules that are frozen (``gc.freeze``) right
    after: collecting those objects meanwhile is a long pause for nothing.
    """
    for timer in _GC_TIMER:
        if paused:
            timer.stop()
        else:
            timer.start()


class _JobSignals(QObject):
    finished = Signal(object)
    failed = Signal(object)


class QtJob(QRunnable):
    """One call of ``fn(*args)`` in a worker thread."""

    def __init__(self, fn: Callable[..., Any], *args: Any) -> None:
        super().__init__()
        self.setAutoDelete(False)
        self.fn = fn
        self.args = args
        self.signals = _JobSignals()
        self.cancelled = False

    def run(self) -> None:
        if self.cancelled:
            self.signals.failed.emit(_Cancelled())
            return
        try:
            result = self.fn(*self.args)
        except BaseException as exc:  # reported on the UI thread, never lost
            self.signals.failed.emit(exc)
        else:
            self.signals.finished.emit(result)


class _Cancelled(Exception):
    pass


def _guard(callback: Callable[[Any], None] | None, job: QtJob) -> Callable[[Any], None]:
    def call(value: Any) -> None:
        _LIVE.discard(job)
        if callback is None or isinstance(value, _Cancelled):
            return
        try:
            callback(value)
        except RuntimeError as exc:  # the receiving widget is gone
            if "already deleted" not in str(exc):
                raise

    return call


def submit(
    fn: Callable[..., Any],
    *args: Any,
    done: Callable[[Any], None] | None = None,
    failed: Callable[[BaseException], None] | None = None,
    pool: QThreadPool | None = None,
) -> QtJob:
    """Run ``fn(*args)`` in ``pool`` (the global pool by default)."""
    collect_garbage_on_ui_thread()
    job = QtJob(fn, *args)
    job.signals.finished.connect(_guard(done, job))
    job.signals.failed.connect(_guard(failed, job))
    _LIVE.add(job)
    (pool or QThreadPool.globalInstance()).start(job)
    return job


def pending_jobs() -> int:
    """Jobs submitted whose result has not reached the UI thread yet (for tests)."""
    return len(_LIVE)
