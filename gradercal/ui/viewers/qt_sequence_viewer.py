"""Sequences (FASTA, GenBank): records with lengths and GC content, a wrapped view with a ruler."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QLabel,
    QPlainTextEdit,
    QSplitter,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from gradercal._util.numbers import percent
from gradercal.model import Artifact
from gradercal.ui.viewers.qt_base import Fetch, QtArtifactViewer, file_label
from gradercal.ui.viewers.sequences import SequenceFile, SequenceRecord, parse_sequences, wrapped

#: Letters laid out per record; longer records show their start and say so.
MAX_SHOWN = 2_000_000

Index = QModelIndex | QPersistentModelIndex


def _pct(x: float | None) -> str:
    return percent(x, missing="")


class QtRecordModel(QAbstractTableModel):
    HEADERS = ("Record", "Length", "Type", "GC", "Description")

    def __init__(self, records: tuple[SequenceRecord, ...]) -> None:
        super().__init__()
        self.records = records

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.records)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.HEADERS)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        r = self.records[index.row()]
        col = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            unit = "aa" if r.kind == "protein" else "bp"
            return (
                r.id,
                f"{r.length:,} {unit}",
                (r.molecule or r.kind).upper() if r.kind != "empty" else "empty",
                _pct(r.gc_content),
                r.description,
            )[col]
        if role == Qt.ItemDataRole.TextAlignmentRole and col in (1, 3):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.ToolTipRole and col == 4:
            feats = ", ".join(f"{k} × {v}" for k, v in r.features.items())
            return r.description + (f"\nFeatures: {feats}" if feats else "")
        return None

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return self.HEADERS[section]
        return None


class QtSequenceViewer(QtArtifactViewer):
    def __init__(self, artifact: Artifact, fetch: Fetch | None, parent: QWidget | None = None):
        super().__init__(artifact, fetch, parent)
        self.parsed: SequenceFile | None = None

    def prepare(self, data: bytes) -> tuple[SequenceFile, str]:
        parsed = parse_sequences(data, file_label(self.artifact))
        return parsed, self._layout(parsed.records[0])

    @staticmethod
    def _layout(record: SequenceRecord) -> str:
        text = wrapped(record.sequence, limit=MAX_SHOWN)
        if record.length > MAX_SHOWN:
            text += f"\n… {record.length - MAX_SHOWN:,} more letters not shown"
        return f">{record.id} {record.description}\n{text}"

    def present(self, prepared: Any) -> None:
        parsed, first_text = prepared
        self.parsed = parsed
        body = QWidget()
        layout = QVBoxLayout(body)
        layout.setContentsMargins(0, 0, 0, 0)
        n = len(parsed.records)
        summary = f"{parsed.format.upper()} · {n} record{'s' if n != 1 else ''}"
        summary += f" · {parsed.total_length:,} letters"
        if parsed.gc_content is not None:
            summary += f" · GC {_pct(parsed.gc_content)} overall"
        self.summary = QLabel(summary)
        self.summary.setWordWrap(True)
        self.summary.setContentsMargins(6, 4, 6, 2)
        layout.addWidget(self.summary)
        split = QSplitter(Qt.Orientation.Vertical)
        self.records_view = QTableView()
        self.records_model = QtRecordModel(parsed.records)
        self.records_view.setModel(self.records_model)
        self.records_view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.records_view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.records_view.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.records_view.verticalHeader().setVisible(False)
        self.records_view.horizontalHeader().setStretchLastSection(True)
        self.records_view.horizontalHeader().setSectionResizeMode(
            QHeaderView.ResizeMode.ResizeToContents
        )
        split.addWidget(self.records_view)
        self.text = QPlainTextEdit()
        self.text.setReadOnly(True)
        self.text.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.text.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.text.setPlainText(first_text)
        split.addWidget(self.text)
        split.setStretchFactor(0, 1)
        split.setStretchFactor(1, 3)
        layout.addWidget(split, 1)
        self.set_content(body)
        self.records_view.selectRow(0)
        self.records_view.selectionModel().currentRowChanged.connect(self._record_changed)

    def _record_changed(self, current: QModelIndex, _previous: QModelIndex) -> None:
        if self.parsed is not None and current.isValid():
            self.text.setPlainText(self._layout(self.parsed.records[current.row()]))
