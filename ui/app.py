"""Starting the desktop app, and screenshot mode.

``run()`` opens the database, builds the main window and runs Qt's event loop.
``screenshot()`` builds the same window offscreen, opens the first queue item that
has an artifact, waits until it is fully shown and saves a PNG of the whole window.
"""

from __future__ import annotations

import contextlib
import sys
import traceback
from pathlib import Path
from types import TracebackType

# isort: off
# SQLAlchemy, alembic and pandas (through gradercal.db and the scoring core) are imported
# *before* PySide6: once PySide6 is loaded, its import hook inspects every later import,
# which makes these big packages about a quarter slower to import (start-up time).
import gradercal.db.grading
import gradercal.scoring  # noqa: F401
import sqlalchemy.dialects.sqlite  # noqa: F401  (loaded by the first SQLite engine)

# isort: on
from PySide6.QtCore import QEventLoop, QThreadPool, QTimer
from PySide6.QtWidgets import QApplication, QMessageBox

from gradercal.db.grading import GradingStore
from gradercal.db.session import open_database
from gradercal.errors import GradercalError
from gradercal.ui.qt_grading_view import QtGradingView
from gradercal.ui.qt_main_window import QtMainWindow
from gradercal.ui.qt_review_view import QtReviewView
from gradercal.ui.qt_settings import QtAppSettings

SCREENSHOT_TIMEOUT_MS = 20_000


def application() -> QApplication:
    app = QApplication.instance()
    if isinstance(app, QApplication):
        return app
    app = QApplication(sys.argv[:1])
    # Keep worker threads alive between jobs (starting a thread costs milliseconds).
    QThreadPool.globalInstance().setExpiryTimeout(-1)
    app.setApplicationName("gradercal")
    app.setOrganizationName("gradercal")
    app.setApplicationDisplayName("gradercal")
    # Fusion follows the system's light or dark colour scheme and looks the same everywhere.
    app.setStyle("Fusion")
    from gradercal.ui.qt_workers import collect_garbage_on_ui_thread

    collect_garbage_on_ui_thread()
    return app


def _install_excepthook(window: QtMainWindow) -> None:
    """An unexpected error is shown in the status bar and logged; the window stays open."""

    def hook(kind: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
        traceback.print_exception(kind, exc, tb)
        with contextlib.suppress(RuntimeError):  # the window is already gone
            window.statusBar().showMessage(f"Unexpected error (logged): {exc}", 15_000)

    sys.excepthook = hook


def choose_grader(store: GradingStore, settings: QtAppSettings, database: str) -> str:
    """For non-interactive runs: the last grader on this machine, else the first one, else 'grader'."""
    names = [g.name for g in store.graders()]
    last = settings.last_grader(database)
    if last in names:
        return str(last)
    if names:
        return names[0]
    return store.create_grader("grader").name


def open_store(db: str | None) -> tuple[GradingStore, str]:
    database = open_database(db)
    return GradingStore(database), database.display


def preload_pdf_engine() -> None:
    """Import PyMuPDF in the PDF thread now, so the first PDF does not wait for it."""
    from gradercal.ui import qt_workers
    from gradercal.ui.viewers.qt_pdf_viewer import import_pymupdf, pdf_pool

    qt_workers.submit(import_pymupdf, failed=lambda _exc: None, pool=pdf_pool())


def build_window(
    db: str | None = None,
    grader: str | None = None,
    benchmark: str | None = None,
    view: str = "grading",
    *,
    settings: QtAppSettings | None = None,
) -> QtMainWindow:
    """Open the database and build the main window, shown; the queue loads in the background.

    With a grader and a benchmark (the only one, or ``benchmark``) the session starts at
    once; otherwise the start page asks who is grading.

    Raises:
        GradercalError: the database cannot be opened, or the benchmark is unknown.
    """
    application()
    preload_pdf_engine()
    store, display = open_store(db)
    window = QtMainWindow(store, settings or QtAppSettings(), display)
    names = store.benchmark_names()
    if benchmark is None and len(names) == 1:
        benchmark = names[0]
    if grader is not None and benchmark is not None:
        benchmark = store.benchmark_name(benchmark)
        window.start_session(grader, benchmark, view)
    else:
        page = window.show_start(grader)
        if benchmark is not None:
            page.benchmark.setCurrentText(benchmark)
    window.show()
    return window


def run(
    db: str | None = None,
    grader: str | None = None,
    benchmark: str | None = None,
    view: str = "grading",
) -> int:
    app = application()
    try:
        window = build_window(db, grader, benchmark, view)
    except GradercalError as exc:
        QMessageBox.critical(None, "gradercal", f"Cannot start:\n\n{exc}")
        return 1
    _install_excepthook(window)
    return app.exec()


def _wait(signal_owner_ready: bool, signal: object, timeout_ms: int) -> bool:
    if signal_owner_ready:
        return True
    loop = QEventLoop()
    done = {"ok": False}

    def finish() -> None:
        done["ok"] = True
        loop.quit()

    signal.connect(finish)  # type: ignore[attr-defined]
    QTimer.singleShot(timeout_ms, loop.quit)
    loop.exec()
    return done["ok"]


def screenshot(
    out: Path,
    db: str | None = None,
    grader: str | None = None,
    benchmark: str | None = None,
    view: str = "grading",
    size: tuple[int, int] = (1600, 1000),
) -> int:
    """Save a PNG of the whole window showing the first queue item with an artifact."""
    app = application()
    preload_pdf_engine()
    store, display = open_store(db)
    settings = QtAppSettings(readonly=True)
    names = store.benchmark_names()
    if not names:
        raise GradercalError(f"database {display} holds no benchmark yet; run `gradercal import`")
    bench = store.benchmark_name(benchmark) if benchmark or len(names) == 1 else names[0]
    name = store.create_grader(grader).name if grader else choose_grader(store, settings, display)
    window = QtMainWindow(store, settings, display, track_time=False)
    window.resize(*size)
    window.start_session(name, bench, view, load=False)
    window.show()
    app.processEvents()
    assert window.grading is not None
    target: QtGradingView | QtReviewView
    if view == "review":
        target = window.review_view()
        target.load()
    else:
        target = window.grading
        window.grading.load_queue_now(open_first=True)
    ready = _wait(
        not getattr(target, "_ready_pending", False), target.item_ready, SCREENSHOT_TIMEOUT_MS
    )
    for _ in range(5):
        app.processEvents()
    image = window.grab()
    out.parent.mkdir(parents=True, exist_ok=True)
    if not image.save(str(out), "PNG"):
        raise GradercalError(f"cannot write {out}")
    window.close()
    if not ready:
        print(
            "warning: the artifact was still loading when the screenshot was taken", file=sys.stderr
        )
    return 0
