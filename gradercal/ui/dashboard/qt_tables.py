"""The dashboard's tables: a prepared DataFrame behind a sortable, filterable table view.

:class:`QtFrameTable` (a filter box over :class:`QtFrameModel` through
:class:`QtFrameProxy`) shows every table tab of
:class:`gradercal.ui.dashboard.qt_dashboard.QtDashboardView`; rows can be marked (an
adjudicated disagreement: :func:`adjudicated_icon`, :func:`adjudication_note`), offer a
context menu, and be found and selected by their key columns.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

import numpy as np
import pandas as pd
from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    QPoint,
    QRegularExpression,
    QSortFilterProxyModel,
    Qt,
    Signal,
)
from PySide6.QtGui import QColor, QIcon, QPainter, QPen, QPixmap
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QMenu,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from gradercal.db.adjudication import AdjudicationValue
from gradercal.ui.dashboard.data import PreparedTable, _missing, prepare_table

Index = QModelIndex | QPersistentModelIndex
#: Sort by the raw value (numbers as numbers), not by the text shown.
SORT_ROLE = Qt.ItemDataRole.UserRole + 1
#: The whole row as a dict (for double-click → adjudication).
ROW_ROLE = Qt.ItemDataRole.UserRole + 2
#: The row's text in lower case (what the filter box searches).
HAYSTACK_ROLE = Qt.ItemDataRole.UserRole + 3
#: A marked row's note, e.g. an adjudicated disagreement's final verdict (None: unmarked).
MARK_ROLE = Qt.ItemDataRole.UserRole + 4

#: The columns that name a disagreement (an adjudication case).
CASE_COLUMNS = ("response_id", "criterion_id")
#: The columns that name a criterion (what "Revise criterion…" edits).
CRITERION_COLUMNS = ("task_id", "criterion_id")


class QtFrameModel(QAbstractTableModel):
    """A prepared DataFrame behind a table: nothing is copied into widgets.

    Sorting reorders an index array (numpy, stable; missing values last), never the
    frame, so it stays fast on large tables. An estimate with interval columns is one
    column ``0.812  [0.744, 0.871]`` (see :func:`prepare_table`).
    """

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.table = prepare_table(pd.DataFrame())
        self._order = np.arange(0)
        #: (values of :attr:`_mark_columns`) → note, for the rows to mark
        self._marks: Mapping[tuple[str, ...], str] = {}
        self._mark_columns: tuple[str, ...] = CASE_COLUMNS
        self._mark_icon: QIcon | None = None
        #: per source row: its note, or None (unmarked)
        self._row_marks: list[str | None] = []

    def set_table(self, table: PreparedTable) -> None:
        self.beginResetModel()
        self.table = table
        self._order = np.arange(len(table))
        self._row_marks = self._compute_marks()
        self.endResetModel()

    def set_marks(
        self,
        marks: Mapping[tuple[str, ...], str],
        icon: QIcon | None = None,
        columns: tuple[str, ...] = CASE_COLUMNS,
    ) -> None:
        """Mark the rows whose ``columns`` hold a key of ``marks``: ``icon`` in the first
        column, the mark's note as the row's tooltip (:data:`MARK_ROLE` holds it). The
        marks stay across :meth:`set_table` (a recomputation)."""
        self._marks = dict(marks)
        self._mark_columns = columns
        self._mark_icon = icon if icon is not None else self._mark_icon
        self._row_marks = self._compute_marks()
        if self.rowCount() and self.columnCount():
            self.dataChanged.emit(
                self.index(0, 0),
                self.index(self.rowCount() - 1, self.columnCount() - 1),
                [Qt.ItemDataRole.DecorationRole, Qt.ItemDataRole.ToolTipRole, MARK_ROLE],
            )

    def _compute_marks(self) -> list[str | None]:
        frame = self.table.frame
        n = len(self.table)
        if not self._marks or frame is None or n == 0:
            return [None] * n
        if not all(c in frame.columns for c in self._mark_columns):
            return [None] * n
        keys = zip(*(frame[c].astype(str).tolist() for c in self._mark_columns), strict=True)
        return [self._marks.get(k) for k in keys]

    @property
    def n_marked(self) -> int:
        """How many rows of the table are marked."""
        return sum(1 for m in self._row_marks if m is not None)

    def mark(self, row: int) -> str | None:
        """The note of view row ``row`` (None: unmarked)."""
        return self._row_marks[self.source_row(row)] if self._row_marks else None

    def set_frame(self, frame: pd.DataFrame) -> None:
        self.set_table(prepare_table(frame))

    @property
    def frame(self) -> pd.DataFrame:
        frame = self.table.frame
        assert frame is not None, "a shared table reaches the window with its frame filled in"
        return frame

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.table)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.table.columns)

    def source_row(self, row: int) -> int:
        return int(self._order[row])

    def text(self, row: int, column: int) -> str:
        return self.table.texts[column][self._order[row]]

    def row_dict(self, row: int) -> dict[str, Any]:
        return {str(k): v for k, v in self.frame.iloc[self.source_row(row)].items()}

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        r, c = index.row(), index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            return self.text(r, c)
        if role == Qt.ItemDataRole.ToolTipRole:
            text = self.text(r, c)
            mark = self.mark(r)
            if mark is not None:
                return f"{mark}\n\n{text}" if len(text) > 30 else mark
            return text if len(text) > 30 else None
        if role == Qt.ItemDataRole.DecorationRole:
            return self._mark_icon if c == 0 and self.mark(r) is not None else None
        if role == MARK_ROLE:
            return self.mark(r)
        if role == Qt.ItemDataRole.TextAlignmentRole and self.table.numeric[c]:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == HAYSTACK_ROLE:
            return self.table.haystack[self._order[r]]
        if role == ROW_ROLE:
            return self.row_dict(r)
        return None

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        if role != Qt.ItemDataRole.DisplayRole:
            return None
        if orientation == Qt.Orientation.Horizontal:
            if 0 <= section < len(self.table.columns):
                return self.table.headers[section]
            return None
        return str(section + 1)

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        self.layoutAboutToBeChanged.emit()
        n = len(self.table)
        if not 0 <= column < len(self.table.columns):
            self._order = np.arange(n)
        else:
            key = self.table.keys[column]
            descending = order == Qt.SortOrder.DescendingOrder
            ranked = pd.Series(key).sort_values(
                ascending=not descending, kind="stable", na_position="last"
            )
            self._order = ranked.index.to_numpy(dtype=np.int64)
        self.layoutChanged.emit()


class QtFrameProxy(QSortFilterProxyModel):
    """Filters rows by the filter box's words (all must occur, in any column); sorting is
    the source model's (a numpy index, not Python comparisons).

    The filter is Qt's own, on each row's prepared text (:data:`HAYSTACK_ROLE`): with an
    empty filter box Qt accepts rows without calling Python, so showing a table of tens
    of thousands of rows stays a matter of milliseconds.
    """

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.setFilterRole(HAYSTACK_ROLE)
        self.setFilterKeyColumn(0)

    def set_words(self, text: str) -> None:
        words = text.lower().split()
        pattern = "".join(f"(?=.*{QRegularExpression.escape(w)})" for w in words)
        self.setFilterRegularExpression(QRegularExpression(f"^{pattern}" if words else ""))

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        model = self.sourceModel()
        if isinstance(model, QtFrameModel):
            model.sort(column, order)  # layoutChanged updates this proxy's mapping


class QtFrameTable(QWidget):
    """A filter box over a sortable table of a DataFrame."""

    #: A row was double-clicked or activated (Enter): the row as a dict.
    row_activated = Signal(dict)

    def __init__(self, placeholder: str = "Filter…", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        self.top = QHBoxLayout()
        self.filter = QLineEdit()
        self.filter.setPlaceholderText(placeholder)
        self.filter.setClearButtonEnabled(True)
        self.top.addWidget(self.filter, 1)
        self.count = QLabel("")
        self.top.addWidget(self.count)
        layout.addLayout(self.top)
        self.model = QtFrameModel(self)
        self.proxy = QtFrameProxy(self)
        self.proxy.setSourceModel(self.model)
        self.view = QTableView()
        self.view.setModel(self.proxy)
        self.view.setSortingEnabled(True)
        self.view.horizontalHeader().setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
        self.view.setAlternatingRowColors(True)
        self.view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.view.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.view.setWordWrap(False)
        self.view.verticalHeader().setVisible(False)
        self.view.verticalHeader().setDefaultSectionSize(self.view.fontMetrics().height() + 6)
        self.view.horizontalHeader().setStretchLastSection(True)
        self.view.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        layout.addWidget(self.view, 1)
        self.filter.textChanged.connect(self._filter_changed)
        # Double-click or Enter (``activated`` follows the platform's activation rule).
        self.view.activated.connect(self._activated)
        #: the context menu's entries: (text, handler of the row, columns the row needs)
        self._row_actions: list[tuple[str, Callable[[dict[str, Any]], None], tuple[str, ...]]] = []

    def set_table(self, table: PreparedTable) -> None:
        self.model.set_table(table)
        header = self.view.horizontalHeader()
        if header.sortIndicatorSection() >= 0:
            self.model.sort(header.sortIndicatorSection(), header.sortIndicatorOrder())
        self._fit_columns()
        self._update_count()

    def set_frame(self, frame: pd.DataFrame) -> None:
        self.set_table(prepare_table(frame))

    def _fit_columns(self) -> None:
        """Columns as wide as their header and first rows, within limits (no full scan)."""
        metrics = self.view.fontMetrics()
        n = min(self.model.rowCount(), 50)
        last = self.model.columnCount() - 1
        for c in range(self.model.columnCount()):
            head = str(self.model.headerData(c, Qt.Orientation.Horizontal))
            width = metrics.horizontalAdvance(head) + 24
            for r in range(n):
                width = max(width, metrics.horizontalAdvance(self.model.text(r, c)) + 14)
            if c != last:
                self.view.setColumnWidth(c, min(width, 360))

    def _filter_changed(self, text: str) -> None:
        self.proxy.set_words(text)
        self._update_count()

    def _update_count(self) -> None:
        shown, total = self.proxy.rowCount(), self.model.rowCount()
        self.count.setText(f"{shown:,} of {total:,}" if shown != total else f"{total:,} rows")

    def row(self, proxy_row: int) -> dict[str, Any]:
        source = self.proxy.mapToSource(self.proxy.index(proxy_row, 0))
        return self.model.row_dict(source.row())

    def _activated(self, index: QModelIndex) -> None:
        if index.isValid():
            self.row_activated.emit(self.row(index.row()))

    def add_row_action(
        self,
        text: str,
        handler: Callable[[dict[str, Any]], None],
        needs: tuple[str, ...] = (),
    ) -> None:
        """An entry of the rows' context menu: ``handler(row)`` on the row clicked, offered
        on rows with a value in each of ``needs`` (columns)."""
        if not self._row_actions:
            self.view.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
            self.view.customContextMenuRequested.connect(self._row_menu_requested)
        self._row_actions.append((text, handler, needs))

    def selected_row(self) -> dict[str, Any] | None:
        """The selected row as a dict (None: no row is selected)."""
        rows = self.view.selectionModel().selectedRows()
        return self.row(rows[0].row()) if rows else None

    def row_menu(self, proxy_row: int) -> QMenu:
        """The context menu of shown row ``proxy_row`` (each entry enabled when the row has
        what it needs)."""
        menu = QMenu(self)
        row = self.row(proxy_row)
        for text, handler, needs in self._row_actions:
            action = menu.addAction(text)
            action.setEnabled(all(not _missing(row.get(c)) for c in needs))
            action.triggered.connect(lambda _c=False, h=handler, r=row: h(r))
        return menu

    def _row_menu_requested(self, pos: QPoint) -> None:
        index = self.view.indexAt(pos)
        if not index.isValid():
            return
        self.view.selectRow(index.row())
        menu = self.row_menu(index.row())
        menu.popup(self.view.viewport().mapToGlobal(pos))

    def row_key(self, proxy_row: int, columns: tuple[str, ...] = CASE_COLUMNS) -> tuple[str, ...]:
        """The values of ``columns`` in shown row ``proxy_row`` (as text)."""
        source = self.proxy.mapToSource(self.proxy.index(proxy_row, 0)).row()
        frame = self.model.frame
        at = self.model.source_row(source)
        return tuple(str(frame[c].iat[at]) for c in columns)

    def find_row(self, key: tuple[str, ...], columns: tuple[str, ...] = CASE_COLUMNS) -> int:
        """The shown row (sorted and filtered as on screen) whose ``columns`` hold ``key``;
        -1 when no shown row does."""
        frame = self.model.table.frame
        if frame is None or not all(c in frame.columns for c in columns):
            return -1
        for r in range(self.proxy.rowCount()):
            if self.row_key(r, columns) == key:
                return r
        return -1

    def select_row(self, proxy_row: int) -> None:
        """Select shown row ``proxy_row`` and scroll it into view."""
        index = self.proxy.index(proxy_row, 0)
        if index.isValid():
            self.view.selectRow(proxy_row)
            self.view.scrollTo(index, QAbstractItemView.ScrollHint.EnsureVisible)


_ADJUDICATED_ICON: list[QIcon] = []


def adjudicated_icon() -> QIcon:
    """The mark of an adjudicated row: a green tick (drawn once, no image file)."""
    if _ADJUDICATED_ICON:
        return _ADJUDICATED_ICON[0]
    pixmap = QPixmap(16, 16)
    pixmap.fill(QColor(0, 0, 0, 0))
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    pen = QPen(QColor("#2e9d4a"), 2.6)
    pen.setCapStyle(Qt.PenCapStyle.RoundCap)
    pen.setJoinStyle(Qt.PenJoinStyle.RoundJoin)
    painter.setPen(pen)
    painter.drawPolyline([QPoint(3, 8), QPoint(7, 12), QPoint(13, 4)])
    painter.end()
    _ADJUDICATED_ICON.append(QIcon(pixmap))
    return _ADJUDICATED_ICON[0]


def adjudication_note(value: AdjudicationValue) -> str:
    """One adjudication as a row's tooltip: the final verdict, who, when and the note."""
    word = "met" if value.met else "not met"
    if value.level is not None:
        word += f" (level {value.level})"
    at = value.at
    when = at.isoformat(sep=" ", timespec="minutes") if isinstance(at, datetime) else at
    head = f"Adjudicated: {word}, by {value.adjudicator}"
    head += f", {str(when)[:16]}" if when else ""
    if value.revision > 1:
        head += f" (revision {value.revision})"
    note = (value.note or "").strip()
    if len(note) > 300:
        note = note[:299] + "…"
    return f"{head}\n{note}" if note else head
