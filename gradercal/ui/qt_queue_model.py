"""The grader's queue as a Qt table model (blinded: task ids and response codes only).

The status column is coloured by state (in progress, submitted, skipped, changed
elsewhere); the open item is bold.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtGui import QColor, QFont, QGuiApplication

from gradercal.db.grading import QueueItem
from gradercal.ui.grading_state import STATUS_WORDS, shown_status
from gradercal.ui.qt_grading_view import format_duration
from gradercal.ui.qt_rubric_model import verdict_color

Index = QModelIndex | QPersistentModelIndex


class QtQueueModel(QAbstractTableModel):
    HEADERS = ("#", "Task", "Resp.", "Status", "Done", "Time")
    STATUS_COLUMN = 3

    def __init__(self) -> None:
        super().__init__()
        self.items: list[QueueItem] = []
        self.current = -1
        self.stale: set[int] = set()
        self._colors: dict[str, QColor | None] = {}

    def set_items(
        self, items: list[QueueItem], current: int, stale: set[int] | None = None
    ) -> None:
        self.beginResetModel()
        self.items = list(items)
        self.current = current
        self.stale = set(stale or ())
        muted = QGuiApplication.palette().placeholderText().color()
        self._colors = {  # looked up once, in the theme's verdict colours
            "in_progress": verdict_color("partial"),
            "submitted": verdict_color("met"),
            "stale": verdict_color("not_met"),
            "skipped": muted,
        }
        self.endResetModel()

    def status_of(self, row: int) -> str:
        q = self.items[row]
        return shown_status(q, q.assignment_id in self.stale)

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
        status = self.status_of(index.row())
        if role == Qt.ItemDataRole.DisplayRole:
            return (
                str(index.row() + 1),
                q.task_id,
                q.code.rsplit(" ", 1)[-1],
                STATUS_WORDS.get(status, status),
                f"{q.n_answered}/{q.n_criteria}",
                format_duration(q.time_spent_s),
            )[index.column()]
        if role == Qt.ItemDataRole.ToolTipRole:
            tip = f"{q.label} · {STATUS_WORDS.get(status, status)}"
            return f"{tip}: {q.skip_reason}" if q.status == "skipped" and q.skip_reason else tip
        if role == Qt.ItemDataRole.ForegroundRole and index.column() == self.STATUS_COLUMN:
            return self._colors.get(status)
        if role == Qt.ItemDataRole.FontRole and index.row() == self.current:
            font = QFont()
            font.setBold(True)
            return font
        return None
