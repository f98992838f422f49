"""A pandas DataFrame behind a ``QAbstractTableModel``: nothing is copied into widgets.

Cells are formatted only when the view asks for them (the visible ones). Sorting
reorders an index array, never the frame.
"""

from __future__ import annotations

import datetime as dt
import math
from typing import TYPE_CHECKING, Any

import numpy as np
from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt

if TYPE_CHECKING:
    import pandas as pd

Index = QModelIndex | QPersistentModelIndex


def format_cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float | np.floating):
        f = float(value)
        if math.isnan(f):
            return ""
        return f"{f:.10g}"
    if isinstance(value, bool | np.bool_):
        return "TRUE" if value else "FALSE"
    if isinstance(value, np.datetime64):
        if np.isnat(value):
            return ""
        value = value.astype("datetime64[us]").item()
    if isinstance(value, dt.datetime):
        if value != value:  # NaT
            return ""
        if value.time() == dt.time(0) and value.tzinfo is None:
            return value.date().isoformat()
        return value.isoformat(sep=" ", timespec="seconds")
    text = str(value)
    if text in ("NaT", "<NA>", "nan"):
        return ""
    return text


class QtDataFrameModel(QAbstractTableModel):
    def __init__(self, frame: pd.DataFrame) -> None:
        super().__init__()
        self.frame = frame
        self._columns = [frame.iloc[:, j].to_numpy() for j in range(frame.shape[1])]
        self._numeric = [np.issubdtype(c.dtype, np.number) for c in self._columns]
        self._order = np.arange(frame.shape[0])

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else int(self.frame.shape[0])

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else int(self.frame.shape[1])

    def value(self, row: int, column: int) -> Any:
        return self._columns[column][self._order[row]]

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            return format_cell(self.value(index.row(), index.column()))
        if role == Qt.ItemDataRole.ToolTipRole:
            return repr(self.value(index.row(), index.column()))
        if role == Qt.ItemDataRole.TextAlignmentRole and self._numeric[index.column()]:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        if role != Qt.ItemDataRole.DisplayRole:
            return None
        if orientation == Qt.Orientation.Horizontal:
            if 0 <= section < self.frame.shape[1]:
                return str(self.frame.columns[section])
            return None
        if 0 <= section < self.frame.shape[0]:
            return str(int(self._order[section]) + 1)
        return None

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        self.layoutAboutToBeChanged.emit()
        if column < 0 or column >= len(self._columns):
            self._order = np.arange(self.frame.shape[0])
        else:
            self._order = self._sorted_order(column, order == Qt.SortOrder.DescendingOrder)
        self.layoutChanged.emit()

    def _sorted_order(self, column: int, descending: bool) -> np.ndarray[Any, Any]:
        import pandas as pd

        series = pd.Series(self._columns[column])
        try:
            ranked = series.sort_values(
                ascending=not descending, kind="stable", na_position="last"
            ).index.to_numpy()
        except TypeError:  # mixed types: compare as text
            ranked = (
                series.map(format_cell)
                .sort_values(ascending=not descending, kind="stable")
                .index.to_numpy()
            )
        return np.asarray(ranked, dtype=np.int64)
