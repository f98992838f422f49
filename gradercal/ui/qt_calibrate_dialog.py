"""File ▸ Calibrate the judge… (Ctrl+Shift+K): ``gradercal calibrate`` and
``gradercal export-prompt`` in the window.

Choose the judge and the method (threshold, leniency, isotonic, Platt) and Calibrate
(Ctrl+Return): a quarter of the human-graded tasks is held out, the calibrator is fitted
on the rest and saved as the judge's active calibration; the held-out figures (raw →
calibrated, with intervals) are shown. Then Export the prompt package (Alt+X) in the
chosen format (JSON, Markdown, Inspect AI, promptfoo) to the chosen file.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtWidgets import QComboBox, QDialogButtonBox, QPushButton, QSpinBox, QWidget

from gradercal.ui.coordinator_ops import Outcome
from gradercal.ui.judge_ops import METHODS, calibrate, export_prompt, judges
from gradercal.ui.qt_file_field import QtFileField
from gradercal.ui.qt_ops_dialog import QtOpsDialog, hint

if TYPE_CHECKING:
    from gradercal.db.session import Database

FORMATS = {
    "json": ("JSON package (re-importable)", ".json"),
    "markdown": ("Markdown (for people)", ".md"),
    "inspect": ("Inspect AI scorer", ".py"),
    "promptfoo": ("promptfoo configuration", ".yaml"),
}


class QtCalibrateDialog(QtOpsDialog):
    def __init__(self, db: Database, benchmark: str | None, parent: QWidget | None = None) -> None:
        super().__init__("Calibrate the judge", "&Calibrate", parent)
        self.setObjectName("calibrate_dialog")
        self.db = db
        self.benchmark = benchmark
        self.judge = QComboBox()
        # no benchmark yet: the refusal says so when run
        with contextlib.suppress(Exception):
            self.judge.addItems(judges(db, benchmark))
        self.form.addRow("&Judge:", self.judge)
        self.method = QComboBox()
        self.method.addItems(list(METHODS))
        self.form.addRow("&Method:", self.method)
        self.boot = QSpinBox()
        self.boot.setRange(0, 10_000)
        self.boot.setValue(200)
        self.form.addRow("&Bootstrap resamples:", self.boot)
        self.form.addRow(
            hint(
                "A quarter of the human-graded tasks is held out and never fitted on: its "
                "figures are the test. The calibration is saved as the judge's active one."
            )
        )
        self.format = QComboBox()
        for key, (label, _suffix) in FORMATS.items():
            self.format.addItem(label, key)
        self.form.addRow("Package &format:", self.format)
        self.package_file = QtFileField("save", "Prompt package file")
        self.form.addRow("Package f&ile:", self.package_file)
        self.format.currentIndexChanged.connect(self._suggest_file)
        self.judge.currentTextChanged.connect(self._suggest_file)
        self._suggest_file()
        self.export_button = QPushButton("E&xport the package")
        self.export_button.setObjectName("exportPackage")
        self.export_button.clicked.connect(self.export_package)
        self.buttons.addButton(self.export_button, QDialogButtonBox.ButtonRole.ActionRole)

    def _suggest_file(self, *_args: object) -> None:
        key = str(self.format.currentData())
        current = self.package_file.text()
        folder = Path(current).parent if current else Path.home()
        name = self.judge.currentText() or "judge"
        self.package_file.setText(str(folder / f"{name}-package{FORMATS[key][1]}"))

    def work(self) -> tuple[Callable[..., Outcome], tuple[Any, ...]] | str:
        judge = self.judge.currentText().strip()
        if not judge:
            return "this benchmark has no judge verdicts to calibrate (run the judge first)."
        return _calibrate, (
            self.db,
            self.benchmark,
            judge,
            self.method.currentText(),
            self.boot.value(),
            self.report_progress,
        )

    def export_package(self) -> None:
        judge = self.judge.currentText().strip()
        if not judge:
            self._refuse("this benchmark has no judge to export.")
            return
        if not self.package_file.text():
            self._refuse("choose the file to write the package to.")
            return
        self.run_job(
            _export,
            (
                self.db,
                self.benchmark,
                judge,
                str(self.format.currentData()),
                self.package_file.text(),
                self.boot.value(),
                self.report_progress,
            ),
        )


def _calibrate(
    db: Database, benchmark: str | None, judge: str, method: str, n_boot: int, progress: Any
) -> Outcome:
    return calibrate(db, benchmark, judge, method, n_boot=n_boot, progress=progress)


def _export(
    db: Database,
    benchmark: str | None,
    judge: str,
    fmt: str,
    path: str,
    n_boot: int,
    progress: Any,
) -> Outcome:
    return export_prompt(db, benchmark, judge, fmt, path, n_boot=n_boot, progress=progress)
