"""File ▸ Export a grader's packet… (Ctrl+Shift+E): ``gradercal packet export``.

One grader's assignments, with their tasks, artifacts and the grader's own judgments,
to a ``.gcpkg`` file for offline grading; optionally due in N days (the Progress view
lists packets past it as overdue).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from PySide6.QtWidgets import QComboBox, QSpinBox, QWidget

from gradercal.ui.coordinator_ops import Outcome, export_packet, human_graders
from gradercal.ui.qt_file_field import QtFileField
from gradercal.ui.qt_ops_dialog import QtOpsDialog, hint

if TYPE_CHECKING:
    from gradercal.db.session import Database


class QtPacketExportDialog(QtOpsDialog):
    def __init__(self, db: Database, benchmark: str | None, parent: QWidget | None = None) -> None:
        super().__init__("Export a grader's packet", "&Export", parent)
        self.setObjectName("packet_export_dialog")
        self.db = db
        self.benchmark = benchmark
        self.grader = QComboBox()
        self.grader.setEditable(True)
        with contextlib.suppress(Exception):
            self.grader.addItems(human_graders(db))
        self.form.addRow("&Grader:", self.grader)
        self.file = QtFileField("save", "Packet file", "Packets (*.gcpkg)")
        self.form.addRow("&File:", self.file)
        self.due = QSpinBox()
        self.due.setRange(0, 3650)
        self.due.setSpecialValueText("no due date")
        self.due.setSuffix(" days")
        self.form.addRow("&Due in:", self.due)
        self.form.addRow(
            hint("The packet holds no other grader's work, no judge verdicts, no adjudications.")
        )
        self.grader.currentTextChanged.connect(self._suggest_file)
        self._suggest_file(self.grader.currentText())

    def _suggest_file(self, grader: str) -> None:
        current = self.file.text()
        if not current or current.endswith(".gcpkg"):
            from pathlib import Path

            folder = Path(current).parent if current else Path.home()
            if grader.strip():
                self.file.setText(str(folder / f"{grader.strip()}.gcpkg"))

    def work(self) -> tuple[Callable[..., Outcome], tuple[Any, ...]] | str:
        grader = self.grader.currentText().strip()
        if not grader:
            return "choose whose packet to export."
        if not self.file.text():
            return "choose the packet file to write."
        return export_packet, (self.db, self.benchmark, grader, self.file.text(), self.due.value())
