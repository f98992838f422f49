"""The coordinator window's operation dialogs, by shortcut id (issue #33).

``open_operation(window, "ops.import")`` makes the dialog of that File menu entry,
parented to the window and shown in front of it, window-modal; when an operation that
changed the data succeeds, the dashboard offers a refresh (it never recomputes by itself).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog, QLabel

from gradercal.ui.qt_ops_dialog import QtOpsDialog, present

if TYPE_CHECKING:
    from gradercal.ui.coordinator_ops import Outcome
    from gradercal.ui.qt_main_window import QtMainWindow

#: Operations whose success changes what the dashboard shows.
CHANGES_DATA = {"ops.import", "ops.assign", "ops.packet_merge", "ops.calibrate", "ops.remove_judge"}


def _actor(window: QtMainWindow) -> str:
    """The name the coordinator's resolutions are recorded under."""
    actor = window.grader or "coordinator"
    if window.coordination is not None:
        actor = window.coordination.adjudication.adjudicator.text().strip() or actor
    return actor


def make_dialog(window: QtMainWindow, shortcut_id: str) -> QDialog:
    """The dialog of ``shortcut_id`` (not shown yet)."""
    db = window.store.db
    bench = window.benchmark
    if shortcut_id == "ops.import":
        from gradercal.ui.qt_import_dialog import QtImportDialog

        return QtImportDialog(db, window)
    if shortcut_id == "ops.assign":
        from gradercal.ui.qt_assign_dialog import QtAssignDialog

        return QtAssignDialog(db, bench, window)
    if shortcut_id == "ops.packet_export":
        from gradercal.ui.qt_packet_export_dialog import QtPacketExportDialog

        return QtPacketExportDialog(db, bench, window)
    if shortcut_id == "ops.packet_merge":
        from gradercal.ui.qt_packet_merge_dialog import QtPacketMergeDialog

        return QtPacketMergeDialog(db, _actor(window), window)
    if shortcut_id == "ops.report":
        from gradercal.ui.qt_report_dialog import QtReportDialog

        return QtReportDialog(db, bench, window)
    if shortcut_id == "ops.calibrate":
        from gradercal.ui.qt_calibrate_dialog import QtCalibrateDialog

        return QtCalibrateDialog(db, bench, window)
    if shortcut_id == "ops.remove_judge":
        from gradercal.ui.qt_remove_judge_dialog import QtRemoveJudgeDialog

        return QtRemoveJudgeDialog(db, bench, window)
    raise KeyError(shortcut_id)


#: Whether the first import's dashboard computes at once (tests switch it off).
compute_first = True


def show_empty_page(window: QtMainWindow) -> QLabel:
    """The coordinator window of a database without a benchmark: what to do first."""
    page = QLabel(
        "This database holds no benchmark yet.\n\n"
        "File ▸ Import a benchmark… (Ctrl+Shift+I) brings one in: a benchmark folder, one "
        "of its files, a judgments table, a HealthBench file or Inspect AI logs."
    )
    page.setObjectName("emptyPage")
    page.setWordWrap(True)
    page.setAlignment(Qt.AlignmentFlag.AlignCenter)
    page.setMargin(40)
    window.stack.addWidget(page)
    window.stack.setCurrentWidget(page)
    window.mode = "dashboard"
    return page


def open_operation(window: QtMainWindow, shortcut_id: str) -> QDialog:
    """Make the dialog of ``shortcut_id`` and show it in front of ``window``."""
    dialog = make_dialog(window, shortcut_id)
    if isinstance(dialog, QtOpsDialog) and shortcut_id in CHANGES_DATA:

        def changed(outcome: Outcome) -> None:
            if window.coordination is None and outcome.data.get("benchmark"):
                # the first import into an empty database: its dashboard replaces the page
                window.open_dashboard(str(outcome.data["benchmark"]), compute=compute_first)
                return
            if window.coordination is not None:
                window.coordination.dashboard.offer_refresh(
                    f"{outcome.headline} The numbers shown are from before it."
                )

        dialog.succeeded.connect(changed)
    return present(dialog)
