"""File ▸ Write the report… (Ctrl+Shift+P): ``gradercal report`` in the window.

The agreement report of the current verdicts as a self-contained HTML file and/or a PDF
(choose each file), with progress (reading, computing, drawing the charts); then "Open
it" (Alt+O) shows it in the system's viewer.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QUrl
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QDialogButtonBox, QPushButton, QSpinBox, QWidget

from gradercal.ui.coordinator_ops import Outcome, file_stem, write_report
from gradercal.ui.qt_file_field import QtFileField
from gradercal.ui.qt_ops_dialog import QtOpsDialog, hint

if TYPE_CHECKING:
    from gradercal.db.session import Database


class QtReportDialog(QtOpsDialog):
    def __init__(self, db: Database, benchmark: str | None, parent: QWidget | None = None) -> None:
        super().__init__("Write the report", "&Write", parent)
        self.setObjectName("report_dialog")
        self.db = db
        self.benchmark = benchmark
        base = Path.home() / f"report-{file_stem(benchmark)}"
        self.html = QtFileField("save", "HTML report", "HTML (*.html)")
        self.html.setText(str(base.with_suffix(".html")))
        self.form.addRow("&HTML file:", self.html)
        self.pdf = QtFileField("save", "PDF report", "PDF (*.pdf)")
        self.form.addRow("P&DF file:", self.pdf)
        self.boot = QSpinBox()
        self.boot.setRange(0, 100_000)
        self.boot.setValue(1000)
        self.form.addRow("&Bootstrap resamples:", self.boot)
        self.form.addRow(hint("Leave a file empty to skip it. Nothing in the database changes."))
        self.open_button = QPushButton("&Open it")
        self.open_button.setObjectName("openReport")
        self.open_button.setEnabled(False)
        self.open_button.clicked.connect(self.open_report)
        self.buttons.addButton(self.open_button, QDialogButtonBox.ButtonRole.ActionRole)

    def work(self) -> tuple[Callable[..., Outcome], tuple[Any, ...]] | str:
        html, pdf = self.html.text() or None, self.pdf.text() or None
        if html is None and pdf is None:
            return "choose an HTML or a PDF file to write."
        return _run, (self.db, self.benchmark, html, pdf, self.boot.value(), self.report_progress)

    def finished_ok(self, outcome: Outcome) -> None:
        self.open_button.setEnabled(bool(outcome.data))
        self.open_button.setFocus()

    def open_report(self) -> bool:
        """Open the HTML report (else the PDF) in the system's viewer."""
        if self.outcome is None or not self.outcome.data:
            return False
        path = self.outcome.data.get("html") or self.outcome.data.get("pdf")
        return QDesktopServices.openUrl(QUrl.fromLocalFile(str(Path(str(path)).resolve())))


def _run(
    db: Database,
    benchmark: str | None,
    html: str | None,
    pdf: str | None,
    n_boot: int,
    progress: Any,
) -> Outcome:
    return write_report(db, benchmark, html=html, pdf=pdf, n_boot=n_boot, progress=progress)
