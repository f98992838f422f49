"""The coordinator's view: the dashboard and the adjudication view of one benchmark.

:class:`QtCoordinatorView` stacks the dashboard and the adjudication view
(:mod:`gradercal.ui.qt_adjudication`): double-clicking a disagreement, a flip or a
criterion-health entry opens that case; saving an adjudication refreshes the dashboard.
Both exist only in a coordinator window (see :class:`gradercal.ui.qt_main_window.QtMainWindow`).

The dashboard itself is :class:`gradercal.ui.dashboard.qt_dashboard.QtDashboardView`
(with its tables, charts and controls in the ``qt_*`` modules beside it); this module
re-exports the names the dashboard's modules used to define here, so
``from gradercal.ui.dashboard.qt_view import QtDashboardView`` keeps working.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QStackedWidget, QWidget

from gradercal.db.adjudication import AdjudicationStore, AdjudicationValue
from gradercal.db.revisions import RevisionReport
from gradercal.db.session import Database
from gradercal.ui.dashboard.data import (
    Computed,
    PreparedTable,
    agreement_wide,
    ci_columns,
    format_value,
    header_text,
    models_wide,
    prepare_table,
)
from gradercal.ui.dashboard.qt_charts import QtChart, canvas_class, dark_palette, save_figure
from gradercal.ui.dashboard.qt_controls import QtChoiceButton, QtStatCard, alt_test_text
from gradercal.ui.dashboard.qt_dashboard import (
    READ_AHEAD_ENV,
    READ_AHEAD_FILTERS,
    RECOMPUTE_DELAY_MS,
    REVISE_TABLES,
    SECTION_STEPS,
    QtDashboardView,
    read_ahead_default,
)
from gradercal.ui.dashboard.qt_process import QtDashboardProcess
from gradercal.ui.dashboard.qt_tables import (
    CASE_COLUMNS,
    CRITERION_COLUMNS,
    HAYSTACK_ROLE,
    MARK_ROLE,
    ROW_ROLE,
    SORT_ROLE,
    QtFrameModel,
    QtFrameProxy,
    QtFrameTable,
    adjudicated_icon,
    adjudication_note,
)
from gradercal.ui.qt_adjudication import QtAdjudicationView
from gradercal.ui.qt_revise_dialog import QtReviseDialog

if TYPE_CHECKING:
    from gradercal.ui.qt_settings import QtAppSettings


class QtCoordinatorView(QStackedWidget):
    """The dashboard and the adjudication view of one benchmark (coordinator windows only).

    The adjudicator's name is chosen once: ``adjudicator`` (``gui --view dashboard
    --grader NAME``), else the name remembered from the last adjudication saved
    (:attr:`QtAppSettings.adjudicator`), else nobody — the first save then asks for it.
    It is never the operating system's login taken silently. The adjudication view shows
    it in its header.

    The disagreements table marks what is adjudicated (read from the database after each
    computation, and at once when an adjudication is saved here); "Save and next" opens
    the next disagreement still to adjudicate in the table's current order and filter.
    """

    #: A short message for the status bar.
    message = Signal(str)

    def __init__(
        self,
        db: Database,
        benchmark: str,
        settings: QtAppSettings | None = None,
        *,
        adjudicator: str | None = None,
        parent: QWidget | None = None,
        worker: QtDashboardProcess | None = None,
    ) -> None:
        super().__init__(parent)
        self.db = db
        self.benchmark = benchmark
        self.settings = settings
        self.store = AdjudicationStore(db)
        #: the case last opened for adjudication (kept selected in its table)
        self.current_case: tuple[str, str] | None = None
        self.dashboard = QtDashboardView(db, benchmark, settings=settings, worker=worker)
        self.addWidget(self.dashboard)
        remembered = settings.adjudicator if settings is not None else None
        self.adjudication = QtAdjudicationView(self.store, adjudicator or remembered or "")
        self.addWidget(self.adjudication)
        self.dashboard.adjudicate_requested.connect(self.open_adjudication)
        self.dashboard.message.connect(self.message)
        self.dashboard.computed.connect(self._computed)
        self.adjudication.message.connect(self.message)
        self.adjudication.back_requested.connect(self.show_dashboard)
        self.adjudication.saved.connect(self._adjudicated)
        self.adjudication.next_requested.connect(self.open_next)
        self.adjudication.case_loaded.connect(self._prefetch_case)
        self.dashboard.revise_requested.connect(self.revise_criterion)
        self.adjudication.revise_requested.connect(self.revise_criterion)
        #: the criterion edit dialog last opened (None: never)
        self.revise_dialog: QtReviseDialog | None = None
        self.setCurrentWidget(self.dashboard)

    def set_adjudicator(self, name: str) -> None:
        self.adjudication.adjudicator.setText(name)

    def open_adjudication(self, response_id: str, criterion_id: str) -> None:
        self.current_case = (response_id, criterion_id)
        self.setCurrentWidget(self.adjudication)
        self.dashboard.select_case(response_id, criterion_id)
        self.adjudication.open_case(self.benchmark, response_id, criterion_id)

    def open_next(self, response_id: str, criterion_id: str) -> tuple[str, str] | None:
        """Open the disagreement after (response id, criterion id) that is still to
        adjudicate (:meth:`QtDashboardView.next_case`); back to the dashboard when none
        is left. Returns the pair opened."""
        found = self.dashboard.next_case(response_id, criterion_id)
        if found is None:
            self.message.emit(
                "Every disagreement the dashboard's table shows is adjudicated "
                "(its filter box and the dashboard's filters choose which)."
            )
            self.show_dashboard()
            return None
        (rid, cid), wrapped = found
        if wrapped:
            self.message.emit("Past the last row: from the top of the disagreements again.")
        self.open_adjudication(rid, cid)
        return rid, cid

    def show_dashboard(self) -> None:
        self.setCurrentWidget(self.dashboard)
        self.dashboard.setFocus()

    def _adjudicated(self, response_id: str, criterion_id: str) -> None:
        case = self.adjudication.case
        if case is not None and case.current is not None:  # marked at once
            self.dashboard.mark_adjudicated(response_id, criterion_id, case.current)
        name = self.adjudication.adjudicator_name()
        if self.settings is not None and name and name != self.settings.adjudicator:
            self.settings.adjudicator = name  # chosen once: remembered for next time
        # The worker reads the adjudications again (only they changed) and shows the
        # result prefetched for this verdict, or computes it.
        saved = case.current if case is not None else None
        expect = None if saved is None else (response_id, criterion_id, saved.met, saved.level)
        self.dashboard.recompute(expect=expect)

    def _prefetch_case(self) -> None:
        """The case on screen may be given any of its verdicts: compute those dashboards
        ahead (not the verdict it has already)."""
        from gradercal.db.adjudication import verdict_to_value

        case = self.adjudication.case
        if case is None:
            return
        c = case.criterion
        current = case.current
        now = None if current is None else (current.met, current.level)
        hypotheses = []
        for verdict in ("met", "not_met", "partial") if case.allows_partial else ("met", "not_met"):
            met, level = verdict_to_value(c, verdict)
            if (met, level) != now:
                hypotheses.append((case.response_id, c.id, met, level))
        self.dashboard.prefetch(hypotheses)

    def _computed(self) -> None:
        """A computation is on screen: mark what is adjudicated (read off the UI
        thread) and keep the case being adjudicated selected in its table."""
        from gradercal.ui import qt_workers

        generation = self.dashboard.generation
        qt_workers.submit(
            self.store.adjudicated,
            self.benchmark,
            done=lambda marks: self._marks_read(generation, marks),
            failed=lambda exc: self.message.emit(f"Cannot read the adjudications: {exc}"),
        )
        if self.current_case is not None:
            self.dashboard.select_case(*self.current_case)

    def _marks_read(self, generation: int, marks: dict[tuple[str, str], AdjudicationValue]) -> None:
        if generation == self.dashboard.generation:  # else a newer computation reads again
            self.dashboard.set_adjudicated(marks)

    # -- revising criteria ----------------------------------------------------------------
    def actor(self) -> str:
        """Who a revision is recorded under: the adjudicator's name when one is chosen,
        else the operating system's login (as the Tasks view records its decisions)."""
        return self.adjudication.adjudicator_name() or login()

    def current_criterion(self) -> tuple[str, str] | None:
        """(task id, criterion id) the coordinator is on: the adjudication's criterion
        when it is shown, else the selected row of the dashboard's table."""
        if self.currentWidget() is self.adjudication:
            case = self.adjudication.case
            return None if case is None else (case.task.id, case.criterion.id)
        return self.dashboard.current_criterion()

    def revise_current(self) -> QtReviseDialog | None:
        """Ctrl+E: the edit dialog of the current criterion (None: there is none)."""
        found = self.current_criterion()
        if found is None:
            self.message.emit(
                "No criterion to revise here: select a row of Criterion health or "
                "Disagreements, or open an adjudication."
            )
            return None
        return self.revise_criterion(*found)

    def revise_criterion(self, task_id: str, criterion_id: str) -> QtReviseDialog:
        """Open the edit dialog of one criterion (window-modal; it saves by itself)."""
        dialog = QtReviseDialog(
            self.db, self.benchmark, task_id, criterion_id, self.actor(), parent=self
        )
        dialog.setWindowModality(Qt.WindowModality.WindowModal)
        dialog.revised.connect(self._revised)
        self.revise_dialog = dialog
        dialog.open()
        return dialog

    def _revised(self, report: RevisionReport) -> None:
        """A revision was saved: say what it did, offer to recompute, and show the open
        adjudication of that task again (its criterion may read differently now)."""
        parts = [f"Task {report.task_id} revised to version {report.version} ({report.kind})"]
        if report.stale_judgments:
            parts.append(f"{report.stale_judgments} verdicts stale")
        if report.requeued:
            parts.append("back in the queues of " + ", ".join(report.requeued))
        text = "; ".join(parts) + "."
        self.message.emit(text)
        self.dashboard.offer_refresh(f"{text} The numbers shown are from before it.")
        case = self.adjudication.case
        if case is not None and case.task.id == report.task_id:
            self.adjudication.open_case(self.benchmark, case.response_id, case.criterion.id)

    def shutdown(self) -> None:
        self.dashboard.shutdown()


def login() -> str:
    """The operating system's login name ("coordinator" when it cannot be found)."""
    import getpass

    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return "coordinator"


__all__ = [
    "CASE_COLUMNS",
    "CRITERION_COLUMNS",
    "HAYSTACK_ROLE",
    "MARK_ROLE",
    "READ_AHEAD_ENV",
    "READ_AHEAD_FILTERS",
    "RECOMPUTE_DELAY_MS",
    "REVISE_TABLES",
    "ROW_ROLE",
    "SECTION_STEPS",
    "SORT_ROLE",
    "Computed",
    "PreparedTable",
    "QtChart",
    "QtChoiceButton",
    "QtCoordinatorView",
    "QtDashboardView",
    "QtFrameModel",
    "QtFrameProxy",
    "QtFrameTable",
    "QtStatCard",
    "adjudicated_icon",
    "adjudication_note",
    "agreement_wide",
    "alt_test_text",
    "canvas_class",
    "ci_columns",
    "dark_palette",
    "format_value",
    "header_text",
    "login",
    "models_wide",
    "prepare_table",
    "read_ahead_default",
    "save_figure",
]
