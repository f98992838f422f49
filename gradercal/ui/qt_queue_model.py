"""The grader's queue as a Qt table model (blinded: task ids and response codes only)."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt

from gradercal.db.grading import QueueItem
from gradercal.ui.qt_grading_view import STATUS_WORDS, format_duration

Index = QModelIndex | QPersistentModelIndex


class QtQueueModel(QAbstractTableModel):
    HEADERS = ("#", "Task", "Response", "Status", "Answered", "Time")

    def __init__(self) -> None:
        super().__init__()
        self.items: list[QueueItem] = []
        self.current = -1

    def set_items(self, items: list[QueueItem], current: int) -> None:
        self.beginResetModel()
        self.items = list(items)
        self.current = current
        self.endResetModel()

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.items)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.HEADERS)

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return self.HEADERS[section]
        return None

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        q = self.items[index.row()]
        if role == Qt.ItemDataRole.DisplayRole:
            return (
                str(index.row() + 1),
                q.task_id,
                q.code,
                STATUS_WORDS.get(q.status, q.status),
                f"{q.n_answered} / {q.n_criteria}",
                format_duration(q.time_spent_s),
            )[index.column()]
        if role == Qt.ItemDataRole.ToolTipRole and q.skip_reason:
            return f"Skipped: {q.skip_reason}"
        if role == Qt.ItemDataRole.FontRole and index.row() == self.current:
            from PySide6.QtGui import QFont

            font = QFont()
            font.setBold(True)
            return font
        return None
