"""Tables (CSV, TSV, XLSX, Parquet) through pandas into a sortable ``QtDataFrameModel``.

The worker reads a bounded preview (:func:`~gradercal.ui.viewers.tables.read_table_preview`:
the first :data:`~gradercal.ui.viewers.tables.PREVIEW_ROWS` rows of each sheet) and the
bar says how much is shown (``first 1,000 of ≥ 1,000,001 rows``)."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHeaderView,
    QLabel,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from gradercal.model import Artifact
from gradercal.ui.qt_widgets import flow_bar
from gradercal.ui.shortcuts import keys
from gradercal.ui.viewers.qt_base import Fetch, QtArtifactViewer, file_label
from gradercal.ui.viewers.qt_dataframe_model import QtDataFrameModel
from gradercal.ui.viewers.tables import SheetPreview, read_table_preview


def _keys(shortcut_id: str) -> str:
    return " or ".join(keys(shortcut_id))


class QtTableViewer(QtArtifactViewer):
    def __init__(self, artifact: Artifact, fetch: Fetch | None, parent: QWidget | None = None):
        super().__init__(artifact, fetch, parent)
        self.sheets: dict[str, Any] = {}
        self.previews: dict[str, SheetPreview] = {}
        self.model: QtDataFrameModel | None = None

    def prepare(self, data: bytes) -> dict[str, SheetPreview]:
        return read_table_preview(data, file_label(self.artifact))

    def present(self, prepared: Any) -> None:
        self.previews = prepared
        self.sheets = {name: p.frame for name, p in prepared.items()}
        body = QWidget()
        layout = QVBoxLayout(body)
        layout.setContentsMargins(0, 0, 0, 0)
        bar = flow_bar(layout, spacing=8, margins=2)
        self.sheet_box = QComboBox()
        self.sheet_box.addItems(list(self.sheets))
        self.sheet_box.setToolTip(
            f"Sheet ({_keys('artifact.sheet_next')} next, {_keys('artifact.sheet_previous')} previous)"
        )
        self.sheet_box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.sheet_box.setFocusPolicy(Qt.FocusPolicy.ClickFocus)
        # In the bar (with a parent) before it is shown: a parentless widget made visible
        # would be a window of its own, flashing up and taking the focus from the grader.
        bar.add_widget(self.sheet_box)
        self.sheet_box.setVisible(len(self.sheets) > 1)
        self.shape_label = QLabel("")
        bar.add_widget(self.shape_label)
        bar.add_widget(QLabel("Click a header to sort"))
        self.table = QTableView()
        self.table.setAlternatingRowColors(True)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectItems)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        self.table.horizontalHeader().setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
        self.table.verticalHeader().setDefaultSectionSize(self.table.fontMetrics().height() + 6)
        layout.addWidget(self.table, 1)
        self.sheet_box.currentTextChanged.connect(self.show_sheet)
        self.set_content(body)
        self.show_sheet(next(iter(self.sheets)))

    def step_sheet(self, direction: int) -> bool:
        n = len(self.sheets)
        if n < 2:
            return False
        self.sheet_box.setCurrentIndex((self.sheet_box.currentIndex() + direction) % n)
        return True

    def show_sheet(self, name: str) -> None:
        frame = self.sheets[name]
        self.model = QtDataFrameModel(frame)
        self.table.setSortingEnabled(False)
        self.table.setModel(self.model)
        self.table.horizontalHeader().setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
        self.table.setSortingEnabled(True)
        rows, cols = frame.shape
        self.shape_label.setText(self.previews[name].describe())
        # Size columns from the header and the first rows only (never the whole table).
        metrics = self.table.fontMetrics()
        for j in range(min(cols, 200)):
            texts = [str(frame.columns[j])] + [
                self.model.data(self.model.index(i, j)) or "" for i in range(min(rows, 50))
            ]
            width = max(metrics.horizontalAdvance(t) for t in texts) + 24
            self.table.setColumnWidth(j, min(max(width, 48), 360))
