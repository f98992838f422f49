"""Starting the desktop app, and screenshot mode.

``run()`` opens the database, builds the main window and runs Qt's event loop.
``screenshot()`` builds the same window offscreen, opens the first queue item that
has an artifact, waits until it is fully shown and saves a PNG of the whole window.
"""

from __future__ import annotations

import contextlib
import os
import sys
import traceback
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

# isort: off
# SQLAlchemy (through gradercal.db) is imported *before* PySide6: once PySide6 is loaded,
# its import hook inspects every later import, which makes big packages about a quarter
# slower to import (start-up time). pandas and Alembic are not needed to grade: they load
# on first use (a table artifact, a schema upgrade).
import gradercal.db.grading  # noqa: F401
import sqlalchemy.dialects.sqlite  # noqa: F401  (loaded by the first SQLite engine)

# isort: on
from PySide6.QtCore import QCoreApplication, QEventLoop, QObject, QTimer
from PySide6.QtWidgets import QMessageBox
from sqlalchemy.exc import SQLAlchemyError

from gradercal.db.grading import GradingStore
from gradercal.errors import GradercalError
from gradercal.ui import COORDINATOR_VIEWS
from gradercal.ui.qt_application import application
from gradercal.ui.qt_grading_view import QtGradingView
from gradercal.ui.qt_main_window import QtMainWindow
from gradercal.ui.qt_review_view import QtReviewView
from gradercal.ui.qt_settings import QtAppSettings

if TYPE_CHECKING:
    from gradercal.ui.dashboard.qt_process import QtDashboardProcess

SCREENSHOT_TIMEOUT_MS = 20_000


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
    """The database's store; a damaged SQLite file is opened read-only (see :func:`mark`)."""
    from gradercal.db.maintenance import grading_store, open_checked

    opened = open_checked(db)
    return grading_store(opened), opened.db.display


def mark(window: QtMainWindow, store: GradingStore) -> None:
    """A read-only database (damaged, or a file that cannot be written): a red banner
    saying why, and the title says so."""
    message = getattr(store, "read_only_message", None)
    if message:
        from gradercal.ui.qt_packet import add_banner

        add_banner(window, f"Read-only: {message}", "error")
        reason = getattr(store, "read_only_reason", None) or "damaged database"
        window.location = f"read-only ({reason})"
        window._update_title()


def _benchmark_names(store: GradingStore, display: str) -> list[str]:
    try:
        return store.benchmark_names()
    except SQLAlchemyError as exc:  # a damaged file, even read-only, may not read at all
        raise GradercalError(f"{display} cannot be read: {exc}") from None


def build_packet_window(
    packet: str | os.PathLike[str],
    view: str = "grading",
    *,
    settings: QtAppSettings | None = None,
    workdir: str | os.PathLike[str] | None = None,
) -> QtMainWindow:
    """Open an offline grading packet and grade into it (see :mod:`gradercal.ui.qt_packet`).

    The grader and the benchmark are the packet's; the title and a banner name the
    packet. The packet file is saved after each response, regularly, and on close.

    Raises:
        GradercalError: the packet is damaged, unsafe or cannot be unpacked.
    """
    from gradercal.db.packets import open_packet
    from gradercal.ui.qt_packet import QtPacketController

    application()
    preload_pdf_engine()
    session = open_packet(packet, workdir=workdir)
    try:
        store = GradingStore(session.db)
        window = QtMainWindow(store, settings or QtAppSettings(), f"packet {session.path}")
        window.location = f"packet {session.path.name}"
        window.packet = QtPacketController(session, window)  # type: ignore[attr-defined]
        window.start_session(session.grader, session.benchmark, view)
        window._update_title()
    except BaseException:
        session.close()
        raise
    window.show()
    return window


def preload_pdf_engine() -> None:
    """Import PyMuPDF in the PDF thread now, so the first PDF does not wait for it."""
    from gradercal._util.pdf import import_pymupdf
    from gradercal.ui import qt_workers
    from gradercal.ui.viewers.qt_pdf_viewer import pdf_pool

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
    once; otherwise the start page asks who is grading. ``view="dashboard"`` opens a
    coordinator window instead (see :func:`build_coordinator_window`).

    Raises:
        GradercalError: the database cannot be opened, or the benchmark is unknown.
    """
    if view in COORDINATOR_VIEWS:
        window = build_coordinator_window(
            db, grader, benchmark, settings=settings, compute=view == "dashboard"
        )
        if view == "progress":
            window.show_progress()
        if view == "tasks":
            window.show_tasks()
        if view == "clarifications":  # #33
            window.show_clarifications()
        if view == "history":  # #33
            window.show_rubric_history()
        if view == "next":  # #35
            window.show_grade_next()
        return window
    application()
    preload_pdf_engine()
    store, display = open_store(db)
    window = QtMainWindow(store, settings or QtAppSettings(), display)
    mark(window, store)
    names = _benchmark_names(store, display)
    if benchmark is None and len(names) == 1:
        benchmark = names[0]
    team_user = store.team_user()
    if team_user is not None:  # team mode: one grades as one's database login, nobody else
        if grader is not None and grader != team_user:
            raise GradercalError(
                f"in team mode you grade as your database login {team_user}, not {grader!r}"
            )
        grader = team_user
    if grader is not None and benchmark is not None:
        benchmark = store.benchmark_name(benchmark)
        window.start_session(grader, benchmark, view)
    else:
        page = window.show_start(grader, preselect=True)
        if benchmark is not None:
            page.benchmark.setCurrentText(benchmark)
    window.show()
    return window


def coordinator_benchmark(store: GradingStore, display: str, benchmark: str | None) -> str:
    """The benchmark a coordinator window shows: ``benchmark``, else the only one."""
    names = store.benchmark_names()
    if not names:
        raise GradercalError(f"database {display} holds no benchmark yet; run `gradercal import`")
    if benchmark is not None:
        return store.benchmark_name(benchmark)
    if len(names) > 1:
        raise GradercalError(
            f"database {display} holds {len(names)} benchmarks; choose one with --benchmark "
            f"({', '.join(names)})"
        )
    return names[0]


def _discard(worker: QtDashboardProcess, owner: QObject | None) -> None:
    """Stop a worker started for a dashboard that is not shown after all. It is handed to
    ``owner`` rather than left to the garbage collector: deleting it while its process's
    last events are queued crashes Qt."""
    worker.stop()
    worker.setParent(owner)


def build_coordinator_window(
    db: str | None = None,
    adjudicator: str | None = None,
    benchmark: str | None = None,
    *,
    settings: QtAppSettings | None = None,
    compute: bool = True,
) -> QtMainWindow:
    """A coordinator window: the dashboard and adjudication of one benchmark, no grading.

    The coordinator role is chosen here, when the window is made, and never changes: a
    grader's window has no dashboard action, a coordinator window starts no grading
    session. ``adjudicator`` is the name adjudications are recorded under (editable in
    the adjudication view).
    """
    from gradercal.ui.dashboard.qt_process import QtDashboardProcess, take_early

    application()
    # The dashboard's worker process starts first of all (#33): its start-up and its
    # import of the database layer overlap the database's check here and the window's
    # build; it is told the database and the benchmark once they are known. ``gradercal
    # gui`` started it earlier still, before this module was imported (launch_early).
    worker = take_early() or QtDashboardProcess("")
    worker.launch()
    try:
        preload_pdf_engine()
        store, display = open_store(db)
        # #33: an empty database opens a coordinator window too, on a page that offers
        # File ▸ Import a benchmark… (the first step of a round run without the terminal)
        if benchmark is None and not store.benchmark_names():
            from gradercal.ui.qt_ops_actions import show_empty_page

            window = QtMainWindow(
                store, settings or QtAppSettings(), display, track_time=False, coordinator=True
            )
            _discard(worker, window)
            mark(window, store)
            show_empty_page(window)
            window.show()
            return window
        bench = coordinator_benchmark(store, display, benchmark)
    except BaseException:
        _discard(worker, QCoreApplication.instance())
        raise
    # Its first request follows (or its answer from the disk); a window opened on another
    # view lets it load the frames.
    worker.url = store.db.url.render_as_string(hide_password=False)
    if compute:
        worker.start(bench)
    else:
        worker.warm(bench)
    window = QtMainWindow(
        store, settings or QtAppSettings(), display, track_time=False, coordinator=True
    )
    mark(window, store)
    view = window.open_dashboard(bench, compute=False, worker=worker)
    if adjudicator:
        view.set_adjudicator(adjudicator)
    window.show()
    if compute:
        view.dashboard.recompute()
    return window


def run(
    db: str | None = None,
    grader: str | None = None,
    benchmark: str | None = None,
    view: str = "grading",
    packet: str | os.PathLike[str] | None = None,
) -> int:
    """Run the app on a database, or (``packet``) on an offline grading packet."""
    app = application()
    window: list[QtMainWindow] = []
    stopped_by = _close_on_signals(window)
    try:
        if packet is not None:
            window.append(build_packet_window(packet, view))
        else:
            window.append(build_window(db, grader, benchmark, view))
    except GradercalError as exc:
        QMessageBox.critical(None, "gradercal", f"Cannot start:\n\n{exc}")
        return 1
    _install_excepthook(window[0])
    code = app.exec()
    return stopped_by[0] if stopped_by else code


#: How often Python gets to run while Qt's event loop waits (ms): a signal's handler runs
#: only then.
_SIGNAL_POLL_MS = 200


def _close_on_signals(window: list[QtMainWindow]) -> list[int]:
    """Ctrl+C in the terminal (SIGINT) and SIGTERM close the window (``window``'s one,
    once built) as its close button does — what is pending saved, the window's geometry
    kept, the dashboard's worker stopped — and end the app; ``run`` then returns 128 +
    the signal's number (the returned list holds it once a signal came). While the window
    is being built they end the process at once (``SystemExit``; the dashboard's worker
    is stopped at exit). Before, Ctrl+C did nothing and SIGTERM ended the interpreter
    under Qt's objects, the worker still running."""
    import signal
    from types import FrameType

    stopped_by: list[int] = []

    def close(signum: int, _frame: FrameType | None) -> None:
        if not window:
            raise SystemExit(128 + signum)
        if not stopped_by:
            stopped_by.append(128 + signum)
            window[0].close()
        QCoreApplication.quit()

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, close)
    # Qt's loop runs no Python code of its own accord: a timer lets the handler run.
    app = QCoreApplication.instance()
    poll = QTimer(app)
    poll.timeout.connect(lambda: None)
    poll.start(_SIGNAL_POLL_MS)
    return stopped_by


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
    """Save a PNG of the whole window showing the first queue item with an artifact
    (``view="dashboard"``: the coordinator dashboard, fully computed)."""
    if view == "dashboard":
        return dashboard_screenshot(out, db, benchmark, size)
    if view in ("progress", "tasks", "clarifications", "history", "next"):
        return progress_screenshot(out, db, benchmark, size, view=view)
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


def progress_screenshot(
    out: Path,
    db: str | None,
    benchmark: str | None,
    size: tuple[int, int],
    *,
    view: str = "progress",
) -> int:
    """Save a PNG of a coordinator window showing grading progress (or, ``view="tasks"``,
    task acceptance; ``"clarifications"``, the inbox; ``"history"``, the rubric history)."""
    app = application()
    window = build_coordinator_window(
        db, None, benchmark, settings=QtAppSettings(readonly=True), compute=False
    )
    window.resize(*size)
    if view == "tasks":
        window.show_tasks()
    elif view == "clarifications":  # #33
        window.show_clarifications()
    elif view == "history":  # #33
        window.show_rubric_history()
    elif view == "next":  # #35: wait for the computation
        shown = window.show_grade_next()
        if shown is not None:
            _wait(not shown.busy, shown.computed, 300_000)
    else:
        window.show_progress()
    for _ in range(5):
        app.processEvents()
    image = window.grab()
    out.parent.mkdir(parents=True, exist_ok=True)
    saved = image.save(str(out), "PNG")
    window.close()
    if not saved:
        raise GradercalError(f"cannot write {out}")
    return 0


def dashboard_screenshot(
    out: Path, db: str | None, benchmark: str | None, size: tuple[int, int]
) -> int:
    """Save a PNG of a coordinator window once its dashboard is fully computed."""
    app = application()
    settings = QtAppSettings(readonly=True)
    window = build_coordinator_window(db, None, benchmark, settings=settings, compute=False)
    window.resize(*size)
    app.processEvents()
    coordination = window.coordination
    if coordination is None:  # #33: an empty database shows what to do first
        import time

        from gradercal.ui.qt_workers import pending_jobs

        until = time.monotonic() + 20  # the PDF engine's preload, say, reports back
        while pending_jobs() and time.monotonic() < until:
            app.processEvents()
            time.sleep(0.02)
        for _ in range(5):
            app.processEvents()
        saved = window.grab().save(str(out), "PNG")
        window.close()
        if not saved:
            raise GradercalError(f"cannot write {out}")
        return 0
    board = coordination.dashboard
    board.recompute()
    ready = _wait(board.result is not None and not board.busy, board.computed, 120_000)
    for _ in range(5):
        app.processEvents()
    image = window.grab()
    out.parent.mkdir(parents=True, exist_ok=True)
    saved = image.save(str(out), "PNG")
    error = board.error_text
    window.close()
    if not saved:
        raise GradercalError(f"cannot write {out}")
    if not ready:
        raise GradercalError(f"the dashboard did not finish computing: {error or 'timed out'}")
    return 0
