"""File ▸ Import a benchmark… (Ctrl+Shift+I): ``gradercal import`` in the window.

A folder (Alt+F) or a file (Alt+I) — a benchmark folder, one of its JSONL files, a
judgments table, a HealthBench file or Inspect AI logs — into the open database, with
progress; a bad file imports nothing and every problem is listed as
``file:line: field: message``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from PySide6.QtWidgets import QComboBox, QFileDialog, QHBoxLayout, QPushButton, QWidget

from gradercal.ui.coordinator_ops import Outcome, existing_benchmarks, import_path
from gradercal.ui.qt_file_field import QtFileField
from gradercal.ui.qt_ops_dialog import QtOpsDialog, hint

if TYPE_CHECKING:
    from gradercal.db.session import Database

#: The benchmark box's first entry: the name the files give.
FROM_FILES = "(as the files say)"


class QtImportDialog(QtOpsDialog):
    def __init__(self, db: Database, parent: QWidget | None = None) -> None:
        super().__init__("Import a benchmark", "&Import", parent)
        self.setObjectName("import_dialog")
        self.db = db
        self.path = QtFileField("folder", "Benchmark folder")
        self.path.button.hide()
        row = QWidget()
        box = QHBoxLayout(row)
        box.setContentsMargins(0, 0, 0, 0)
        box.addWidget(self.path, 1)
        folder = QPushButton("&Folder…")
        folder.clicked.connect(self._choose_folder)
        file = QPushButton("F&ile…")
        file.clicked.connect(self._choose_file)
        box.addWidget(folder)
        box.addWidget(file)
        self.form.addRow("&Path:", row)
        self.benchmark = QComboBox()
        self.benchmark.setEditable(True)
        self.benchmark.addItem(FROM_FILES)
        with contextlib.suppress(Exception):  # an empty database: only the files' name
            self.benchmark.addItems(list(existing_benchmarks(db)))
        self.form.addRow("&Benchmark:", self.benchmark)
        self.form.addRow(
            hint(
                "Everything is checked first: a file with a bad line imports nothing. "
                "Importing the same data again changes nothing."
            )
        )

    def _choose_folder(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "Benchmark folder", self.path.text())
        if path:
            self.path.setText(path)

    def _choose_file(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self,
            "Benchmark file",
            self.path.text(),
            "Benchmark files (*.jsonl *.json *.csv *.tsv *.xlsx *.parquet *.eval);;All files (*)",
        )
        if path:
            self.path.setText(path)

    def work(self) -> tuple[Callable[..., Outcome], tuple[Any, ...]] | str:
        if not self.path.text():
            return "choose a benchmark folder or file to import."
        name = self.benchmark.currentText().strip()
        target = None if name in ("", FROM_FILES) else name
        return _run, (self.db, self.path.text(), target, self.report_progress)


def _run(db: Database, path: str, benchmark: str | None, progress: Any) -> Outcome:
    return import_path(db, path, benchmark=benchmark, progress=progress)
