"""The main window: start page, grading and task review modes, menus built from the shortcuts."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import shiboken6
from PySide6.QtCore import QEvent, QObject, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QCloseEvent, QGuiApplication, QKeySequence
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDockWidget,
    QLabel,
    QLineEdit,
    QMainWindow,
    QMenu,
    QStackedWidget,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from gradercal.db.grading import GradingStore
from gradercal.errors import GradercalError
from gradercal.ui.grading_state import queue_matches
from gradercal.ui.qt_grading_view import QtGradingView
from gradercal.ui.qt_queue_model import QtQueueModel
from gradercal.ui.qt_review_view import QtReviewView
from gradercal.ui.qt_settings import DEFAULT_FONT_PT, QtAppSettings
from gradercal.ui.qt_shortcuts_dialog import QtShortcutsDialog
from gradercal.ui.qt_start_page import QtStartPage
from gradercal.ui.shortcuts import SHORTCUTS
from gradercal.ui.window_fit import first_geometry, fitted_geometry, screen_key

if TYPE_CHECKING:
    from gradercal.ui.dashboard.qt_process import QtDashboardProcess
    from gradercal.ui.dashboard.qt_view import QtCoordinatorView
    from gradercal.ui.qt_clarifications import QtClarificationsView  # #33
    from gradercal.ui.qt_grade_next import QtGradeNextView  # #35
    from gradercal.ui.qt_judge_dialog import QtJudgeDialog
    from gradercal.ui.qt_progress import QtProgressView
    from gradercal.ui.qt_rubric_history import QtRubricHistoryView  # #33
    from gradercal.ui.qt_tasks import QtTasksView

GRADING_ONLY = {
    "criterion.next_open",
    "verdict.met",
    "verdict.not_met",
    "verdict.partial",
    "verdict.clear",
    "criterion.rationale",
    "criterion.focus",
    "criterion.unclear",
    "response.submit",
    "response.skip",
    "response.reopen",
    "edit.undo",
    "edit.redo",
    "view.queue",
    "view.artifacts",
    "view.guidelines",
    "queue.find",
}
REVIEW_ONLY = {"review.comment"}
ALWAYS = {"help.shortcuts", "app.quit", "view.bigger", "view.smaller", "view.reset_font"}
#: Actions of a coordinator window only; a grader's window never creates them (blinding).
COORDINATOR_ONLY = {
    "view.dashboard",
    "view.progress",
    "view.tasks",
    "judge.run",
    "criterion.revise",
    # #33 review loop: the clarification inbox and the rubric history
    "view.clarifications",
    "view.rubric_history",
    # #35: where to grade next, and the grading plan
    "view.grade_next",
}
# coordinator operations (#33): File ▸ Import, Assign, packets, report, calibrate, remove judge
COORDINATOR_ONLY |= {s.id for s in SHORTCUTS if s.id.startswith("ops.")}
#: What to say when the artifact shown cannot do what a key asked.
CANNOT = {
    "step_page": "The artifact shown has no pages (Ctrl+PgDown shows the next one).",
    "change_zoom": "The artifact shown cannot zoom (PDFs and images can).",
    "step_sheet": "The artifact shown is not a workbook with several sheets.",
    "open_link": "The artifact shown is not a link.",
}
MENUS = {
    "File": "&File",
    "Edit": "&Edit",
    "Rubric": "&Rubric",
    "Responses": "Res&ponses",
    "Artifacts": "&Artifacts",
    "Task review": "&Task review",
    "View": "&View",
    "Help": "&Help",
}


#: The platform's keys for these actions work besides the ones the shortcut table lists
#: (an X11 desktop's redo is Ctrl+Shift+Z only; F1 promises Ctrl+Y as well).
STANDARD_KEYS = {
    "edit.undo": QKeySequence.StandardKey.Undo,
    "edit.redo": QKeySequence.StandardKey.Redo,
}


def _key_sequences(
    keys: tuple[str, ...], standard: QKeySequence.StandardKey | None = None
) -> list[QKeySequence]:
    """The listed keys first (the menu shows the first), then the platform's, once each."""
    out = [QKeySequence(k) for k in keys]
    if standard is not None:
        out += QKeySequence.keyBindings(standard)
    seen: set[str] = set()
    unique = []
    for seq in out:
        text = seq.toString(QKeySequence.SequenceFormat.PortableText)
        if text and text not in seen:
            seen.add(text)
            unique.append(seq)
    return unique


class _QtQueueDock(QDockWidget):
    """The queue dock; ``closed`` tells its own close button from hiding for task review."""

    closed = Signal()

    def closeEvent(self, event: QCloseEvent) -> None:
        super().closeEvent(event)
        self.closed.emit()


class _ActivityFilter(QObject):
    """Tells the time tracker that the grader is at work (keys, clicks, wheel)."""

    def __init__(self, touch: Callable[[], None]) -> None:
        super().__init__()
        self.touch = touch

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:
        if event.type() in (
            QEvent.Type.KeyPress,
            QEvent.Type.MouseButtonPress,
            QEvent.Type.Wheel,
        ):
            self.touch()
        return False


class QtMainWindow(QMainWindow):
    #: A session started: the grading and review views exist.
    session_started = Signal()
    #: The window closed, after its views saved what was pending (an open packet saves then).
    closed = Signal()

    def __init__(
        self,
        store: GradingStore,
        settings: QtAppSettings,
        database: str,
        *,
        track_time: bool = True,
        coordinator: bool = False,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        #: Fixed for the window's life: a coordinator window shows the dashboard and never
        #: starts a grading session; a grader's window has no dashboard action at all.
        self.coordinator = coordinator
        self.coordination: QtCoordinatorView | None = None
        self.progress_view: QtProgressView | None = None
        self.tasks_view: QtTasksView | None = None
        self.grade_next_view: QtGradeNextView | None = None  # #35
        self.store = store
        self.settings = settings
        self.database = database
        self.track_time = track_time
        self.grader: str | None = None
        self.benchmark: str | None = None
        self.mode = "grading"
        self.grading: QtGradingView | None = None
        self.review: QtReviewView | None = None
        self.actions_by_id: dict[str, QAction] = {}
        self.answer_actions: list[QAction] = []
        #: What the window is on when not a plain database ("packet a.gcpkg", "read-only").
        self.location: str | None = None
        self.setWindowTitle("gradercal")
        self.stack = QStackedWidget()
        self.setCentralWidget(self.stack)
        self.progress_label = QLabel("")
        self.statusBar().addPermanentWidget(self.progress_label)
        self.queue_model = QtQueueModel()
        self._build_queue_dock()
        self._build_actions()
        # Input reaches the window's QWindow before any widget: filtering there sees key
        # presses, clicks and wheel turns only (an application-wide filter would see
        # every paint and timer event too).
        self._activity = _ActivityFilter(self._touch)
        self.winId()
        handle = self.windowHandle()
        if handle is not None:
            handle.installEventFilter(self._activity)
        self._restore_window()
        self.queue_wanted = not self.queue_dock.isHidden()  # as the grader left it
        if coordinator:  # no grading queue here: no empty dock either
            self.removeDockWidget(self.queue_dock)
            self.queue_dock.hide()
        self.apply_font(self.settings.font_pt)
        if coordinator:
            self._build_review_loop()  # #33: clarification inbox, rubric history

    # -- construction -------------------------------------------------------------------------
    def _build_queue_dock(self) -> None:
        self.queue_dock = _QtQueueDock("Queue", self)
        self.queue_dock.closed.connect(lambda: setattr(self, "queue_wanted", False))
        self.queue_dock.setObjectName("queueDock")
        box = QWidget()
        layout = QVBoxLayout(box)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.setSpacing(2)
        self.queue_search = QLineEdit()
        self.queue_search.setObjectName("queueSearch")
        self.queue_search.setPlaceholderText("Task, response letter, # or text (Ctrl+G)")
        self.queue_search.setClearButtonEnabled(True)
        self.queue_search.setToolTip(
            "T07 finds task T07, T07 B its response B, 12 the 12th in the queue, other "
            "words the tasks whose prompt or rubric has them. Enter opens the first; Esc "
            "returns to the rubric."
        )
        self.queue_search.textChanged.connect(self._filter_queue)
        self.queue_search.returnPressed.connect(self._open_first_match)
        layout.addWidget(self.queue_search)
        self.queue_found = QLabel("")
        layout.addWidget(self.queue_found)
        self.queue_found.hide()
        self.queue_view = QTableView()
        self.queue_view.setModel(self.queue_model)
        self.queue_view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.queue_view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.queue_view.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.queue_view.verticalHeader().setVisible(False)
        self.queue_view.horizontalHeader().setStretchLastSection(True)
        self.queue_view.activated.connect(self._queue_activated)
        self.queue_view.clicked.connect(self._queue_activated)  # one click opens
        layout.addWidget(self.queue_view, 1)
        self.queue_dock.setWidget(box)
        self.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, self.queue_dock)
        self.queue_dock.hide()
        #: Whether the grader wants the queue shown (it steps aside in task review).
        self.queue_wanted = False
        self._task_texts: dict[str, str] | None = None

    def _build_actions(self) -> None:
        menus: dict[str, QMenu] = {}
        bar = self.menuBar()
        for key, title in MENUS.items():
            menus[key] = bar.addMenu(title)
        handlers = self._handlers()
        for s in SHORTCUTS:
            if s.local or (s.id in COORDINATOR_ONLY and not self.coordinator):
                continue
            action = QAction(s.label, self)
            action.setObjectName(s.id)
            action.setShortcuts(_key_sequences(s.keys, STANDARD_KEYS.get(s.id)))
            action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
            handler = handlers.get(s.id)
            if handler is not None:
                action.triggered.connect(lambda _checked=False, h=handler: self._run(h))
            menus[s.group].addAction(action)
            self.addAction(action)
            self.actions_by_id[s.id] = action
        for value in range(1, 6):
            a = QAction(f"Answer {value}", self)
            a.setShortcut(QKeySequence(str(value)))
            a.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
            a.triggered.connect(lambda _c=False, v=value: self._run(lambda: self._review_answer(v)))
            menus["Task review"].addAction(a)
            self.addAction(a)
            self.answer_actions.append(a)
        self.auto_advance = QAction("Move to the next criterion after a verdict", self)
        self.auto_advance.setCheckable(True)
        self.auto_advance.setChecked(self.settings.auto_advance)
        self.auto_advance.toggled.connect(self._set_auto_advance)
        menus["Rubric"].addSeparator()
        menus["Rubric"].addAction(self.auto_advance)
        if self.coordinator:
            conflicts = QAction("Packet &conflicts…", self)
            conflicts.setObjectName("file.conflicts")
            conflicts.triggered.connect(self.show_conflicts)
            existing = menus["File"].actions()
            if existing:
                menus["File"].insertAction(existing[0], conflicts)
                menus["File"].insertSeparator(existing[0])
            else:
                menus["File"].addAction(conflicts)
            self.conflicts_action = conflicts
            for key, menu in menus.items():  # no grading here: File, View and Help only
                menu.menuAction().setVisible(key in ("File", "View", "Help"))
        # -- Judges view (#34): prompt versions compared by the alignment certificate, and
        # `judge align` started from the window with progress (gradercal/ui/qt_judge_align.py)
        if self.coordinator:
            from gradercal.ui.qt_judge_align import add_judge_align_action

            self.judge_align_action = add_judge_align_action(self, menus["File"])
        self._update_enabled()

    def _run(self, handler: Callable[[], object]) -> None:
        """Run an action's handler; a shortcut is activity too (it never reaches the filter)."""
        self._touch()
        handler()

    def _undo_changed(self, _index: int) -> None:
        self._update_undo()

    def _set_auto_advance(self, on: bool) -> None:
        self.settings.auto_advance = on

    def _handlers(self) -> dict[str, Callable[[], object]]:
        def grading(fn: Callable[[QtGradingView], object]) -> Callable[[], object]:
            return lambda: fn(self.grading) if self.grading and self.mode == "grading" else None

        def review(fn: Callable[[QtReviewView], object]) -> Callable[[], object]:
            return lambda: fn(self.review) if self.review and self.mode == "review" else None

        def both(
            g: Callable[[QtGradingView], object], r: Callable[[QtReviewView], object]
        ) -> Callable[[], object]:
            def call() -> object:
                if self.mode == "grading" and self.grading:
                    return g(self.grading)
                if self.mode == "review" and self.review:
                    return r(self.review)
                return None

            return call

        return {
            "criterion.next": both(lambda g: g.move_criterion(1), lambda r: r.move_statement(1)),
            "criterion.previous": both(
                lambda g: g.move_criterion(-1), lambda r: r.move_statement(-1)
            ),
            "criterion.next_open": grading(lambda g: g.next_open_criterion()),
            "verdict.met": grading(lambda g: g.set_verdict("met")),
            "verdict.not_met": grading(lambda g: g.set_verdict("not_met")),
            "verdict.partial": grading(lambda g: g.set_verdict("partial")),
            "verdict.clear": grading(lambda g: g.set_verdict(None)),
            "criterion.rationale": grading(lambda g: g.focus_rationale()),
            "criterion.focus": grading(lambda g: g.return_to_rubric()),
            "criterion.unclear": grading(lambda g: g.toggle_unclear()),
            "response.next": both(lambda g: g.next_response(), lambda r: r.next_item()),
            "response.previous": both(lambda g: g.previous_response(), lambda r: r.previous_item()),
            "response.submit": grading(lambda g: g.submit()),
            "response.skip": grading(lambda g: g.skip()),
            "response.reopen": grading(lambda g: g.reopen()),
            "artifact.search": both(
                lambda g: g.focus_search(), lambda r: r.artifacts.focus_search()
            ),
            "artifact.next": both(lambda g: g.step_artifact(1), lambda r: r.artifacts.step(1)),
            "artifact.previous": both(
                lambda g: g.step_artifact(-1), lambda r: r.artifacts.step(-1)
            ),
            "artifact.page_next": self._artifact("step_page", 1),
            "artifact.page_previous": self._artifact("step_page", -1),
            "artifact.zoom_in": self._artifact("change_zoom", 1),
            "artifact.zoom_out": self._artifact("change_zoom", -1),
            "artifact.fit": self._artifact("change_zoom", 0),
            "artifact.sheet_next": self._artifact("step_sheet", 1),
            "artifact.sheet_previous": self._artifact("step_sheet", -1),
            "artifact.open_link": self._artifact("open_link"),
            "review.comment": review(lambda r: r.focus_comment()),
            "edit.undo": grading(lambda g: g.undo()),
            "edit.redo": grading(lambda g: g.redo()),
            "view.grading": lambda: self.set_mode("grading"),
            "view.review": lambda: self.set_mode("review"),
            "view.dashboard": self.show_dashboard,
            "view.progress": self.show_progress,
            "view.tasks": self.show_tasks,
            "view.grade_next": self.show_grade_next,  # #35
            "judge.run": self.show_judge_dialog,
            "criterion.revise": self.revise_current_criterion,
            "view.queue": lambda: self.show_queue(not self.queue_dock.isVisible()),
            "queue.find": grading(lambda _g: self.find_in_queue()),
            "view.artifacts": grading(lambda g: g.toggle_artifacts()),
            "view.guidelines": grading(lambda g: g.toggle_guidelines()),
            "view.bigger": lambda: self.apply_font(self.settings.font_pt + 1),
            "view.smaller": lambda: self.apply_font(self.settings.font_pt - 1),
            "view.reset_font": lambda: self.apply_font(DEFAULT_FONT_PT),
            "help.shortcuts": self.show_shortcuts,
            "session.switch": self.switch_grader,
            "app.quit": self.close,
            # coordinator operations (#33): each opens its dialog (gradercal/ui/qt_ops_actions.py)
            **{s.id: self._operation(s.id) for s in SHORTCUTS if s.id.startswith("ops.")},
        }

    def _artifact(self, ability: str, *args: int) -> Callable[[], object]:
        """A handler that asks the shown artifact viewer (grading or task review) to act."""

        def call() -> None:
            panel = None
            if self.mode == "grading" and self.grading is not None:
                panel = self.grading.artifacts
            elif self.mode == "review" and self.review is not None:
                panel = self.review.artifacts
            if panel is not None and not panel.act(ability, *args):
                self._show_message(CANNOT[ability])

        return call

    def _update_enabled(self) -> None:
        started = self.grading is not None
        for sid, action in self.actions_by_id.items():
            if sid in ALWAYS:
                action.setEnabled(True)
            elif sid in COORDINATOR_ONLY:
                action.setEnabled(self.coordinator)
            elif sid in GRADING_ONLY:
                action.setEnabled(started and self.mode == "grading")
            elif sid in REVIEW_ONLY:
                action.setEnabled(started and self.mode == "review")
            else:
                action.setEnabled(started)
            if self.coordinator:
                # Nothing here grades: an action that needs a grading session (the queue's
                # F9 among them) is absent from the menus, not listed greyed out forever.
                action.setVisible(sid in ALWAYS or sid in COORDINATOR_ONLY)
        for a in self.answer_actions:
            a.setEnabled(started and self.mode == "review")
        self._update_undo()

    def _update_undo(self) -> None:
        if self.grading is not None and shiboken6.isValid(self.grading.undo_stack):
            undo = self.actions_by_id["edit.undo"]
            redo = self.actions_by_id["edit.redo"]
            stack = self.grading.undo_stack
            open_ = self.mode == "grading" and self.grading.read_only_reason() is None
            undo.setEnabled(open_ and stack.canUndo())
            redo.setEnabled(open_ and stack.canRedo())
            undo.setText(f"Undo {stack.undoText()}".strip())
            redo.setText(f"Redo {stack.redoText()}".strip())

    # -- sessions -----------------------------------------------------------------------------
    def switch_grader(self) -> QtStartPage | None:
        """Save everything pending, close this grader's views and show the start page, where
        another grader is chosen or created. Not in a packet (its grader is fixed) nor in a
        coordinator window (it has no grader)."""
        if self.coordinator or getattr(self, "packet", None) is not None or self.grading is None:
            self._show_message("The grader of this window cannot be changed")
            return None
        self.grading.shutdown()
        self.grading.save_layout()
        if self.review is not None:
            self.review.shutdown()
        for view in (self.grading, self.review):
            if view is not None:
                self.stack.removeWidget(view)
                view.deleteLater()
        last = self.grader
        self.grading = self.review = None
        self.grader = None
        self.mode = "grading"
        self.queue_model.set_items([], -1)
        self.progress_label.setText("")
        self.queue_dock.setVisible(False)
        self._task_texts = None
        self.queue_search.clear()
        self._update_enabled()
        self._update_title()
        return self.show_start(last)

    def show_start(self, last_grader: str | None = None, *, preselect: bool = False) -> QtStartPage:
        page = QtStartPage(
            self.store,
            last_grader or self.settings.last_grader(self.database),
            preselect=preselect,
        )
        page.chosen.connect(self.start_session)
        self.stack.addWidget(page)
        self.stack.setCurrentWidget(page)
        self.start_page = page
        return page

    def start_session(
        self, grader: str, benchmark: str, mode: str = "grading", *, load: bool = True
    ) -> None:
        """Build the grading and review views for ``grader`` (created when new) in ``benchmark``."""
        if self.coordinator:
            raise GradercalError(
                "a coordinator window does not grade: start `gradercal gui` without "
                "--view dashboard to grade"
            )
        grader = self.store.create_grader(grader).name
        self.grader, self.benchmark = grader, benchmark
        self.settings.set_last_grader(self.database, grader)
        self.grading = QtGradingView(
            self.store,
            grader,
            benchmark,
            self.settings,
            self.database,
            track_time=self.track_time,
        )
        self.review = None  # made when task review mode is first opened
        self.stack.addWidget(self.grading)
        self.grading.message.connect(self._show_message)
        self.grading.queue_changed.connect(self._queue_changed)
        self.grading.undo_stack.indexChanged.connect(self._undo_changed)
        self.grading.restore_layout()
        self.apply_font(self.settings.font_pt)
        self.set_mode(mode, load=False)
        if load:
            if mode == "review" and self.review is not None:
                self.review.load()
            self.grading.load_queue()
        self.session_started.emit()

    def _show_message(self, text: str) -> None:
        self.statusBar().showMessage(text, 10_000)

    def review_view(self) -> QtReviewView:
        """The task review view, made on first use."""
        if self.review is None:
            assert self.grader is not None and self.benchmark is not None
            self.review = QtReviewView(
                self.store, self.grader, self.benchmark, self.settings, self.database
            )
            self.stack.addWidget(self.review)
            self.review.message.connect(self._show_message)
            self.review.queue_changed.connect(self._queue_changed)
        return self.review

    def set_mode(self, mode: str, *, load: bool = True) -> None:
        if self.grading is None:
            return
        if mode == self.mode and self.stack.currentWidget() in (self.grading, self.review):
            return
        if mode == "review":
            review = self.review_view()
            self.grading.flush_text()
            self.stack.setCurrentWidget(review)
            if load and not review.tasks:
                review.load()
        else:
            if self.review is not None:
                self.review.save()
            self.stack.setCurrentWidget(self.grading)
            if load and not self.grading.queue:
                self.grading.load_queue()
        self.mode = mode
        self.queue_dock.setVisible(self.queue_wanted and mode == "grading")
        self._update_title()
        self._queue_changed()

    # -- coordinator mode ---------------------------------------------------------------------
    def open_dashboard(
        self, benchmark: str, *, compute: bool = True, worker: QtDashboardProcess | None = None
    ) -> QtCoordinatorView:
        """Show the coordinator dashboard of ``benchmark`` (coordinator windows only);
        ``worker``: its worker process, started already (else started on first use).

        Raises:
            GradercalError: this is a grader's window.
        """
        if not self.coordinator:
            raise GradercalError("the dashboard is only available in a coordinator window")
        from gradercal.ui.dashboard.qt_view import QtCoordinatorView

        if self.coordination is None or self.coordination.benchmark != benchmark:
            self.coordination = QtCoordinatorView(
                self.store.db, benchmark, self.settings, parent=self, worker=worker
            )
            self.coordination.message.connect(self._show_message)
            self.stack.addWidget(self.coordination)
        self.benchmark = benchmark
        self.mode = "dashboard"
        self.stack.setCurrentWidget(self.coordination)
        self._update_title()
        self._update_enabled()
        if compute and self.coordination.dashboard.result is None:
            self.coordination.dashboard.recompute()
        return self.coordination

    def show_judge_dialog(self) -> QtJudgeDialog | None:
        """The "Run judge…" dialog (coordinator windows only: the judge's verdicts would
        unblind a grader); None in a grader's window."""
        if not self.coordinator:
            return None
        from gradercal.ui.qt_judge_dialog import QtJudgeDialog
        from gradercal.ui.qt_ops_dialog import present

        dialog = QtJudgeDialog(self.store.db, self.benchmark, parent=self)
        dialog.run_finished.connect(self._judge_run_finished)
        present(dialog)  # #33: in front of this window (it opened behind it)
        self.judge_dialog = dialog
        return dialog

    # -- coordinator operations (#33): one dialog each, in front of this window ---------------
    def open_operation(self, shortcut_id: str) -> QWidget | None:
        """File ▸ Import / Assign / packets / report / calibrate / remove a judge
        (coordinator windows only): the dialog of ``shortcut_id``, shown in front, window-modal.
        A finished operation that changed the data offers the dashboard a refresh."""
        if not self.coordinator:
            return None
        from gradercal.ui.qt_ops_actions import open_operation

        dialog = open_operation(self, shortcut_id)
        self.operation_dialog = dialog
        return dialog

    def _operation(self, shortcut_id: str) -> Callable[[], object]:
        return lambda: self.open_operation(shortcut_id)

    def _judge_run_finished(self, stats: dict[str, object]) -> None:
        """A run from the dialog ended: the dashboard offers to refresh (it does not
        recompute by itself, and its headline judge stays the one chosen)."""
        saved = stats.get("saved", stats.get("ok", 0))
        if self.coordination is None or not saved:
            return
        self.coordination.dashboard.offer_refresh(
            f"The judge run stored {saved} verdicts: the numbers shown are from before it."
        )

    def revise_current_criterion(self) -> QWidget | None:
        """Ctrl+E (coordinator windows): the edit dialog of the criterion the dashboard
        or the adjudication view is on; None when there is none."""
        if not self.coordinator or self.coordination is None:
            return None
        if self.stack.currentWidget() is not self.coordination:
            self._show_message("Revise criteria from the dashboard or an adjudication (Ctrl+3).")
            return None
        return self.coordination.revise_current()

    def show_dashboard(self) -> None:
        if not self.coordinator:
            return
        if self.coordination is not None:
            self.coordination.show_dashboard()
            self.stack.setCurrentWidget(self.coordination)
            self.mode = "dashboard"
            self._update_title()
            self._update_enabled()
        elif self.benchmark is not None:
            self.open_dashboard(self.benchmark)

    def show_progress(self) -> QtProgressView | None:
        """The Progress view of the current benchmark (coordinator windows only)."""
        if not self.coordinator or self.benchmark is None:
            return None
        from gradercal.ui.qt_progress import QtProgressView

        if self.progress_view is None or self.progress_view.benchmark != self.benchmark:
            if self.progress_view is not None:
                self.stack.removeWidget(self.progress_view)
                self.progress_view.deleteLater()
            self.progress_view = QtProgressView(self.store.db, self.benchmark, parent=self)
            self.progress_view.message.connect(self._show_message)
            self.stack.addWidget(self.progress_view)
        self.progress_view.refresh()
        self.mode = "progress"
        self.stack.setCurrentWidget(self.progress_view)
        self._update_title()
        self._update_enabled()
        return self.progress_view

    def show_tasks(self) -> QtTasksView | None:
        """The Tasks view (acceptance rounds) of the current benchmark (coordinator windows)."""
        if not self.coordinator or self.benchmark is None:
            return None
        from gradercal.ui.qt_tasks import QtTasksView

        if self.tasks_view is None or self.tasks_view.benchmark != self.benchmark:
            if self.tasks_view is not None:
                self.stack.removeWidget(self.tasks_view)
                self.tasks_view.deleteLater()
            self.tasks_view = QtTasksView(
                self.store.db, self.benchmark, self.grader or "", parent=self
            )
            self.tasks_view.message.connect(self._show_message)
            self.stack.addWidget(self.tasks_view)
        self.tasks_view.refresh()
        self.mode = "tasks"
        self.stack.setCurrentWidget(self.tasks_view)
        self._update_title()
        self._update_enabled()
        return self.tasks_view

    def _update_title(self) -> None:
        parts = ["gradercal"]
        if self.benchmark:
            parts.append(self.benchmark)
        if self.grader:
            parts.append(self.grader)
        if self.mode == "review":
            parts.append("task review")
        if self.mode == "progress":
            parts.append("progress")
        if self.mode == "tasks":
            parts.append("tasks")
        if self.coordinator:
            parts.append("coordinator")
        if self.location:
            parts.append(self.location)
        self.setWindowTitle(" — ".join(parts))

    def _queue_changed(self) -> None:
        self._update_enabled()
        if self.mode == "review" and self.review is not None:
            self.progress_label.setText(self.review.progress_text())
            return
        if self.grading is None:
            return
        self.progress_label.setText(self.grading.progress_text())
        self.queue_model.set_items(self.grading.queue, self.grading.index, self.grading.stale)
        self.queue_view.resizeColumnsToContents()
        self._filter_queue()
        if 0 <= self.grading.index < len(self.grading.queue):
            self.queue_view.selectRow(self.grading.index)

    def show_queue(self, on: bool) -> None:
        """Show or hide the queue (F9); the choice holds across task review."""
        self.queue_wanted = on
        self.queue_dock.setVisible(on and self.mode == "grading")

    def find_in_queue(self) -> None:
        """Ctrl+G: the queue, with the keyboard in its search box."""
        self.show_queue(True)
        self.queue_search.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.queue_search.selectAll()

    def _queue_texts(self) -> dict[str, str]:
        if self._task_texts is None:
            try:
                self._task_texts = self.store.task_texts(self.benchmark)
            except Exception as exc:  # the search still finds ids and letters
                self._show_message(f"Cannot search the task texts: {exc}")
                self._task_texts = {}
        return self._task_texts

    def queue_matches(self) -> list[int]:
        """The queue positions the search box finds (all of them when it is empty)."""
        if self.grading is None:
            return []
        query = self.queue_search.text()
        words = [w for w in query.split() if len(w) > 1 and not w.isdigit()]
        texts = self._queue_texts() if words else None
        return queue_matches(self.grading.queue, query, texts)

    def _filter_queue(self) -> None:
        found = set(self.queue_matches())
        for row in range(self.queue_model.rowCount()):
            self.queue_view.setRowHidden(row, row not in found)
        searching = bool(self.queue_search.text().strip())
        self.queue_found.setVisible(searching)
        n = len(found)
        self.queue_found.setText("Nothing found" if not n else f"{n} found · Enter opens the first")

    def _open_first_match(self) -> None:
        found = self.queue_matches()
        if self.grading is None or not found:
            self._show_message(f"Nothing in the queue matches {self.queue_search.text()!r}.")
            return
        self.grading.open_index(found[0])

    def _queue_activated(self, index: object) -> None:
        from PySide6.QtCore import QModelIndex

        g = self.grading
        valid = isinstance(index, QModelIndex) and index.isValid()
        # a click and an activation of one row open it once
        if g is not None and valid and isinstance(index, QModelIndex) and index.row() != g.index:
            g.open_index(index.row())

    def _review_answer(self, value: int) -> None:
        if self.review is not None and self.mode == "review":
            self.review.answer(value)

    def _touch(self) -> None:
        if self.grading is not None:
            self.grading.tracker.touch()

    # -- view -------------------------------------------------------------------------------------
    def apply_font(self, pt: int) -> None:
        self.settings.font_pt = pt
        font = QGuiApplication.font()
        font.setPointSize(self.settings.font_pt)
        self.stack.setFont(font)
        if self.grading is not None:
            self.grading.rubric.fit_columns()

    def show_shortcuts(self) -> QtShortcutsDialog:
        dialog = QtShortcutsDialog(self, coordinator=self.coordinator)
        dialog.setModal(False)
        dialog.show()
        self.shortcuts_dialog = dialog
        return dialog

    def _available(self) -> tuple[int, int, int, int]:
        screen = self.screen() or QGuiApplication.primaryScreen()
        a = screen.availableGeometry()
        return (a.x(), a.y(), a.width(), a.height())

    def _screen_key(self, available: tuple[int, int, int, int]) -> str:
        screen = self.screen() or QGuiApplication.primaryScreen()
        return screen_key(screen.name(), available)

    def _restore_window(self, available: tuple[int, int, int, int] | None = None) -> None:
        """Open at the size remembered for this screen, else sized to it (``window_fit``);
        either way inside the screen's available area (``available`` overrides it: tests)."""
        available = available or self._available()
        # the one key of releases before per-screen geometry, shrunk to fit like any other
        geometry = self.settings.bytes_value(
            self._screen_key(available)
        ) or self.settings.bytes_value("window/geometry")
        if geometry is not None and self.restoreGeometry(geometry):
            if self.windowState() & (
                Qt.WindowState.WindowMaximized | Qt.WindowState.WindowFullScreen
            ):
                x, y, w, h = first_geometry(available)  # its size when un-maximized
                self.setGeometry(x, y, w, h)
                self.setWindowState(Qt.WindowState.WindowMaximized)
            else:
                g = self.geometry()
                self.setGeometry(*fitted_geometry((g.x(), g.y(), g.width(), g.height()), available))
        else:
            self.setGeometry(*first_geometry(available))
        state = self.settings.bytes_value("window/state")
        if state is not None:
            self.restoreState(state)

    def closeEvent(self, event: QCloseEvent) -> None:
        try:
            if self.grading is not None:
                self.grading.shutdown()
                self.grading.save_layout()
            if self.review is not None:
                self.review.shutdown()
            if self.coordination is not None:
                self.coordination.shutdown()
        finally:
            self.settings.set_bytes(self._screen_key(self._available()), self.saveGeometry())
            self.settings.set_bytes("window/state", self.saveState())
            self.settings.sync()
        super().closeEvent(event)
        self.closed.emit()

    def show_conflicts(self) -> QWidget:
        """File ▸ Packet conflicts… (coordinator windows): keep left (database) or right."""
        from gradercal.ui.qt_conflicts import QtConflictsDialog

        actor = self.grader or "coordinator"
        if self.coordination is not None:  # the name adjudications are recorded under
            actor = self.coordination.adjudication.adjudicator.text().strip() or actor
        dialog = QtConflictsDialog(self.store.db, actor, self)
        dialog.setModal(False)
        dialog.show()
        self.conflicts_dialog = dialog
        return dialog

    # -- #33: the coordinator's review loop in the window ---------------------------------
    # The clarification inbox (Ctrl+6) and the rubric history (Ctrl+7) are views of the
    # stack like Progress and Tasks; the status bar counts the open clarifications; Ctrl+E
    # revises from the history view as it does from the dashboard. Coordinator windows only.
    def _build_review_loop(self) -> None:
        self.clarifications_view: QtClarificationsView | None = None
        self.history_view: QtRubricHistoryView | None = None
        self.clarify_label = QLabel("")
        self.clarify_label.setObjectName("clarify.count")
        self.statusBar().addPermanentWidget(self.clarify_label)
        for sid, show in (
            ("view.clarifications", self.show_clarifications),
            ("view.rubric_history", self.show_rubric_history),
        ):
            self.actions_by_id[sid].triggered.connect(lambda _c=False, h=show: self._run(h))
        self.clarify_timer = QTimer(self)  # the count stays current while the window is open
        self.clarify_timer.setInterval(30_000)
        self.clarify_timer.timeout.connect(self.count_clarifications)
        self.clarify_timer.start()
        QTimer.singleShot(300, self.count_clarifications)
        revise = self.actions_by_id["criterion.revise"]
        revise.triggered.disconnect()
        revise.triggered.connect(lambda _c=False: self._run(self._revise_here))

    def _revise_here(self) -> QWidget | None:
        if self.history_view is not None and self.stack.currentWidget() is self.history_view:
            return self.history_view.revise_selected()
        return self.revise_current_criterion()

    def count_clarifications(self) -> int | None:
        """Show the number of open clarification threads in the status bar."""
        if self.benchmark is None:
            return None
        from gradercal.db.clarifications import list_clarifications

        try:
            n = len(list_clarifications(self.store.db, self.benchmark, status="open"))
        except Exception as exc:  # a closed database, a network outage: say so, go on
            self._show_message(f"clarifications: {exc}")
            return None
        self._set_clarify_count(n)
        return n

    def _set_clarify_count(self, n: int) -> None:
        self.clarify_label.setText(
            f"{n} open clarification{'s' if n != 1 else ''} (Ctrl+6)" if n else ""
        )

    def _show_loop_view(self, view: QWidget, mode: str, title: str) -> None:
        self.mode = mode
        self.stack.setCurrentWidget(view)
        self._update_title()
        self._update_enabled()
        self.setWindowTitle(
            self.windowTitle().replace(" — coordinator", f" — {title} — coordinator")
        )

    def show_clarifications(self) -> QtClarificationsView | None:
        """The clarification inbox of the current benchmark (coordinator windows)."""
        if not self.coordinator or self.benchmark is None:
            return None
        from gradercal.ui.qt_clarifications import QtClarificationsView

        view = self.clarifications_view
        if view is None or view.benchmark != self.benchmark:
            if view is not None:
                self.stack.removeWidget(view)
                view.deleteLater()
            view = QtClarificationsView(self.store.db, self.benchmark, self.grader or "", self)
            view.message.connect(self._show_message)
            view.open_count.connect(self._set_clarify_count)
            self.stack.addWidget(view)
            self.clarifications_view = view
        view.refresh()
        self._show_loop_view(view, "clarifications", "clarifications")
        view.table.setFocus()
        return view

    def show_rubric_history(self) -> QtRubricHistoryView | None:
        """Rubric history and stale verdicts of the current benchmark (coordinator windows)."""
        if not self.coordinator or self.benchmark is None:
            return None
        from gradercal.ui.qt_rubric_history import QtRubricHistoryView

        view = self.history_view
        if view is None or view.benchmark != self.benchmark:
            if view is not None:
                self.stack.removeWidget(view)
                view.deleteLater()
            actor = self.grader or "coordinator"
            view = QtRubricHistoryView(self.store.db, self.benchmark, actor, self)
            view.message.connect(self._show_message)
            self.stack.addWidget(view)
            self.history_view = view
        view.refresh()
        self._show_loop_view(view, "history", "rubric history")
        view.task_table.setFocus()
        return view

    # -- #35: where to grade next, and the grading plan -----------------------------------
    def show_grade_next(self) -> QtGradeNextView | None:
        """View ▸ Where to grade next (Ctrl+8, coordinator windows): the expected interval
        shrinkage of each kind of next batch, its Assign buttons, and the plan's table and
        chart (gradercal/ui/qt_grade_next.py). Computes on first showing."""
        if not self.coordinator or self.benchmark is None:
            return None
        from gradercal.ui.qt_grade_next import QtGradeNextView

        view = self.grade_next_view
        first = view is None or view.benchmark != self.benchmark
        if view is None or first:
            if view is not None:
                self.stack.removeWidget(view)
                view.deleteLater()
            from gradercal.ui.coordinator_ops import human_graders

            try:
                graders = human_graders(self.store.db)
            except Exception:  # a closed database: the field stays empty, the view says more
                graders = []
            view = QtGradeNextView(self.store.db, self.benchmark, graders, self)
            view.message.connect(self._show_message)
            view.assigned.connect(self._batch_assigned)
            view.assign_dialog_requested.connect(self._assign_with_overlap)
            self.stack.addWidget(view)
            self.grade_next_view = view
        self._show_loop_view(view, "grade_next", "where to grade next")
        if first:
            view.compute()
        view.batch.setFocus()
        return view

    def _batch_assigned(self, outcome: Any) -> None:
        if self.coordination is not None:
            self.coordination.dashboard.offer_refresh(
                f"{outcome.headline} The numbers shown are from before it."
            )

    def _assign_with_overlap(self, overlap: int) -> None:
        dialog = self.open_operation("ops.assign")
        spin = getattr(dialog, "overlap", None)
        if spin is not None:
            spin.setValue(overlap)
