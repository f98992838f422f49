"""The coordinator dashboard: agreement at a glance, and the way into adjudication.

:class:`QtDashboardView` shows what :func:`gradercal.dashboard.compute_dashboard`
computes — overview numbers, agreement with confidence intervals by criterion tag,
workflow, domain and criterion, the rater heatmap, the judge-vs-consensus confusion
matrix, the reliability diagram before and after calibration, per-model scores under
experts / raw judge / calibrated judge / estimate, judges (prompt versions) side by side,
the alt-test verdict, and one tab per table section of
:data:`gradercal.dashboard.tables.TABLE_SECTIONS` (pass ↔ fail flips, criterion health,
the disagreements, task reviews) — recomputed whenever a filter (model, workflow, domain, grader subset) changes.

Computing runs in a separate worker process (:mod:`gradercal.ui.dashboard.worker`, driven
by :class:`gradercal.ui.dashboard.qt_process.QtDashboardProcess`): it opens the database by
URL, keeps the benchmark's frames across recomputations, computes, prepares the tables and
draws the charts; this process only shows the result, so neither the pandas work nor the
garbage collector's walks over large frames stall the window. A progress bar and a Cancel
button show while it runs; a result computed for an older filter set is dropped; errors of
the worker (a bad database, an exception, the process killed) are shown in the window, and
a stopped worker is restarted by the next computation. Charts are the matplotlib figures
of :mod:`gradercal.dashboard.charts` inside ``FigureCanvasQTAgg``, drawn ahead by the worker at the
canvas's size; each is saved as PNG or SVG from its button or context menu. Chart colours
follow the window's light or dark palette (the worker is told which).

:class:`QtCoordinatorView` stacks the dashboard and the adjudication view
(:mod:`gradercal.ui.qt_adjudication`): double-clicking a disagreement, a flip or a
criterion-health entry opens that case; saving an adjudication refreshes the dashboard.
Both exist only in a coordinator window (see :class:`gradercal.ui.qt_main_window.QtMainWindow`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    QPoint,
    QRegularExpression,
    QSize,
    QSortFilterProxyModel,
    Qt,
    QTimer,
    Signal,
)
from PySide6.QtGui import QAction, QColor, QIcon, QPainter, QPalette, QPen, QPixmap
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QFileDialog,
    QFrame,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QMenu,
    QProgressBar,
    QPushButton,
    QSizePolicy,
    QSplitter,
    QStackedWidget,
    QStyle,
    QTableView,
    QTabWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from gradercal.dashboard.result import GROUP_BYS
from gradercal.dashboard.tables import TABLE_SECTIONS
from gradercal.db.adjudication import AdjudicationStore, AdjudicationValue
from gradercal.db.revisions import RevisionReport
from gradercal.db.session import Database
from gradercal.ui.dashboard.data import (
    AGREEMENT_BYS,
    CHART_TAB_LABELS,
    CHARTS,
    GROUPING_TABS,
    Computed,
    PreparedTable,
    Request,
    _missing,
    agreement_wide,
    ci_columns,
    figure_name,
    format_value,
    header_text,
    models_wide,
    prepare_table,
)
from gradercal.ui.dashboard.protocol import Part
from gradercal.ui.dashboard.qt_process import QtDashboardProcess
from gradercal.ui.qt_adjudication import QtAdjudicationView
from gradercal.ui.qt_revise_dialog import QtReviseDialog
from gradercal.ui.qt_widgets import QtFlowLayout
from gradercal.ui.shortcuts import keys

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from gradercal.ui.qt_settings import QtAppSettings

Index = QModelIndex | QPersistentModelIndex
#: Sort by the raw value (numbers as numbers), not by the text shown.
SORT_ROLE = Qt.ItemDataRole.UserRole + 1
#: The whole row as a dict (for double-click → adjudication).
ROW_ROLE = Qt.ItemDataRole.UserRole + 2
#: The row's text in lower case (what the filter box searches).
HAYSTACK_ROLE = Qt.ItemDataRole.UserRole + 3
#: A marked row's note, e.g. an adjudicated disagreement's final verdict (None: unmarked).
MARK_ROLE = Qt.ItemDataRole.UserRole + 4
#: Wait this long after a filter changes before recomputing (several clicks → one run).
RECOMPUTE_DELAY_MS = 250
#: Filter sets one click away computed ahead while idle (:meth:`QtDashboardView.read_ahead`).
READ_AHEAD_FILTERS = 6
READ_AHEAD_ENV = "GRADERCAL_DASHBOARD_READ_AHEAD"


#: The steps of :func:`gradercal.dashboard.compute_dashboard` (its progress labels) each
#: table tab waits for: its own progress shows how many are finished. A table section with
#: its own computation waits for that step (its title, lower case).
SECTION_STEPS: dict[str, tuple[str, ...]] = {
    "agreement": (
        "expert agreement",
        "judges",
        *(f"agreement by {by}" for by in GROUP_BYS if by not in ("overall", "criterion")),
        "health",
    ),
    "judges": ("judges", "calibration"),
    "models": ("models",),
    "flips": ("models",),
    "health": ("health",),
    "disagreements": ("health",),
    **{t.key: (t.title.lower(),) for t in TABLE_SECTIONS if t.compute is not None},
}


def read_ahead_default() -> int:
    """:data:`READ_AHEAD_FILTERS`, or ``$GRADERCAL_DASHBOARD_READ_AHEAD`` (0: none)."""
    value = os.environ.get(READ_AHEAD_ENV, "").strip()
    return int(value) if value.isdigit() else READ_AHEAD_FILTERS


#: The columns that name a disagreement (an adjudication case).
CASE_COLUMNS = ("response_id", "criterion_id")
#: The columns that name a criterion (what "Revise criterion…" edits).
CRITERION_COLUMNS = ("task_id", "criterion_id")
#: The table sections whose rows offer "Revise criterion…".
REVISE_TABLES = ("health", "disagreements")


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


# -- charts -----------------------------------------------------------------------------------
def dark_palette(palette: QPalette) -> bool:
    """Whether ``palette`` is dark (its base colour's lightness under half): the charts
    are then drawn in their dark theme."""
    return palette.color(QPalette.ColorRole.Base).lightness() < 128


def save_figure(figure: Figure, path: Path | str) -> Path:
    """Write ``figure`` as PNG or SVG (by the file's suffix; PNG when there is none)."""
    out = Path(path)
    if out.suffix.lower() not in (".png", ".svg"):
        out = out.with_suffix(".png")
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        from gradercal.dashboard import charts

        saver = getattr(charts, "save_figure", None)
    except ImportError:  # pragma: no cover - the core module ships with the app
        saver = None
    if saver is not None:
        result = saver(figure, out)
        return Path(result) if result is not None else out
    figure.savefig(out, format=out.suffix[1:], facecolor=figure.get_facecolor())
    return out


class QtChart(QWidget):
    """One matplotlib figure in a ``FigureCanvasQTAgg`` with "Save as PNG or SVG…"."""

    #: A short message for the status bar.
    message = Signal(str)

    def __init__(self, title: str, name: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.name = name
        self.figure: Figure | None = None
        self.canvas: QWidget | None = None
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        top = QHBoxLayout()
        self.title = QLabel(title)
        font = self.title.font()
        font.setBold(True)
        self.title.setFont(font)
        top.addWidget(self.title, 1)
        self.save_button = QToolButton()
        self.save_button.setText("Save as PNG or SVG…")
        self.save_button.setEnabled(False)
        self.save_button.clicked.connect(self.save_dialog)
        top.addWidget(self.save_button)
        layout.addLayout(top)
        self.holder = QVBoxLayout()
        self.holder.setContentsMargins(0, 0, 0, 0)
        self.empty = QLabel("Not computed yet.")
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty.setWordWrap(True)
        self.holder.addWidget(self.empty)
        layout.addLayout(self.holder, 1)
        self.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.customContextMenuRequested.connect(self._menu)

    def set_figure(self, figure: Figure | None, empty_text: str = "Nothing to show.") -> None:
        if self.canvas is not None:
            self.holder.removeWidget(self.canvas)
            self.canvas.deleteLater()
            self.canvas = None
        self.figure = figure
        if figure is None:
            self.empty.setText(empty_text)
            self.empty.show()
            self.save_button.setEnabled(False)
            return
        self.empty.hide()
        canvas = canvas_class()(figure)
        canvas.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        canvas.setMinimumSize(200, 160)
        canvas.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        canvas.customContextMenuRequested.connect(lambda pos: self._menu(canvas.mapTo(self, pos)))
        self.holder.addWidget(canvas, 1)
        self.canvas = canvas
        self.save_button.setEnabled(True)

    def set_message(self, text: str) -> None:
        self.set_figure(None, text)

    def _menu(self, pos: QPoint) -> None:
        menu = QMenu(self)
        action = QAction("Save as PNG or SVG…", menu)
        action.setEnabled(self.figure is not None)
        action.triggered.connect(self.save_dialog)
        menu.addAction(action)
        menu.popup(self.mapToGlobal(pos))

    def save(self, path: Path | str) -> Path:
        """Write the chart to ``path`` (.png or .svg)."""
        if self.figure is None:
            raise ValueError(f"the chart {self.name!r} has nothing to save yet")
        return save_figure(self.figure, path)

    def save_dialog(self) -> Path | None:
        if self.figure is None:
            return None
        path, chosen = QFileDialog.getSaveFileName(
            self,
            f"Save {self.title.text()}",
            f"{self.name}.png",
            "PNG image (*.png);;SVG drawing (*.svg)",
        )
        if not path:
            return None
        if not Path(path).suffix and "svg" in chosen.lower():
            path += ".svg"
        try:
            out = self.save(path)
        except Exception as exc:  # disk full, no permission, …: say so, keep going
            self.message.emit(f"Chart not saved: {exc}")
            return None
        self.message.emit(f"Chart saved to {out}")
        return out


_CANVAS: list[type] = []


def canvas_class() -> type:
    """``FigureCanvasQTAgg`` that uses the worker's drawing of a figure on its first draw
    (see :func:`gradercal.ui.dashboard.data.attach_pixels`)."""
    if _CANVAS:
        return _CANVAS[0]
    from matplotlib.backends.backend_qtagg import FigureCanvasQTAgg

    class QtPrerenderedCanvas(FigureCanvasQTAgg):
        def draw(self) -> None:
            pre = getattr(self.figure, "_gradercal_prerendered", None)
            if pre is not None:
                self.figure._gradercal_prerendered = None  # type: ignore[attr-defined]
                renderer, key = pre
                w, h = self.get_width_height(physical=True)
                if key == (w, h, self.figure.dpi):
                    self.renderer = renderer
                    self._lastKey = key
                    self.update()
                    return
            super().draw()  # type: ignore[no-untyped-call]

    _CANVAS.append(QtPrerenderedCanvas)
    return QtPrerenderedCanvas


# -- widgets ------------------------------------------------------------------------------------
class QtChoiceButton(QToolButton):
    """A drop-down of checkable values; all checked (the default) means no filter."""

    changed = Signal()

    def __init__(self, label: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.label = label
        self.values: list[str] = []
        self.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.setMenu(QMenu(self))
        self._actions: dict[str, QAction] = {}
        self._update_text()

    def sizeHint(self) -> QSize:
        """Room for the drop-down arrow after the text (the style drew it over the text)."""
        hint = super().sizeHint()
        style = self.style()
        arrow = style.pixelMetric(QStyle.PixelMetric.PM_MenuButtonIndicator, None, self)
        return QSize(hint.width() + arrow, hint.height())

    def set_values(self, values: Sequence[str]) -> None:
        """Offer ``values``; the selection is kept for values still offered."""
        values = list(values)
        if values == self.values:
            return
        before = self.selected()
        menu = self.menu()
        menu.clear()
        self._actions = {}
        every = QAction("All", menu)
        every.triggered.connect(lambda: self.set_selected(None))
        menu.addAction(every)
        menu.addSeparator()
        for v in values:
            a = QAction(v, menu)
            a.setCheckable(True)
            a.setChecked(before is None or v in before)
            a.toggled.connect(self._toggled)
            menu.addAction(a)
            self._actions[v] = a
        self.values = values
        self._update_text()

    def selected(self) -> tuple[str, ...] | None:
        """The checked values, or None when all are checked (no filter)."""
        if not self._actions:
            return None
        chosen = tuple(v for v, a in self._actions.items() if a.isChecked())
        return None if len(chosen) == len(self._actions) else chosen

    def set_selected(self, values: Sequence[str] | None) -> None:
        for v, a in self._actions.items():
            a.blockSignals(True)
            a.setChecked(values is None or v in values)
            a.blockSignals(False)
        self._update_text()
        self.changed.emit()

    def _toggled(self, _on: bool) -> None:
        self._update_text()
        self.changed.emit()

    def _update_text(self) -> None:
        chosen = self.selected()
        if chosen is None:
            text = "all"
        elif len(chosen) == 1:
            text = chosen[0]
        else:
            text = f"{len(chosen)} of {len(self._actions)}"
        self.setText(f"{self.label}: {text}")
        self.setToolTip(f"{self.label}: " + (", ".join(chosen) if chosen is not None else "all"))


def _keep_one_line(label: QLabel) -> None:
    """Give ``label`` the height of one line of its text even when empty."""
    text = label.text()
    label.setText("Xg")
    label.setMinimumHeight(label.sizeHint().height())
    label.setText(text)


def _pct(x: Any) -> str:
    return "—" if x is None or _missing(x) else f"{100 * float(x):.0f}%"


class QtStatCard(QFrame):
    """A big number with a caption."""

    def __init__(self, caption: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setFrameShape(QFrame.Shape.StyledPanel)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 6, 10, 6)
        layout.setSpacing(0)
        self.value = QLabel("—")
        font = self.value.font()
        font.setPointSizeF(font.pointSizeF() * 1.6)
        font.setBold(True)
        self.value.setFont(font)
        self.caption = QLabel(caption)
        self.caption.setWordWrap(True)
        self.detail = QLabel("")
        small = self.detail.font()
        small.setPointSizeF(small.pointSizeF() * 0.9)
        self.detail.setFont(small)
        self.detail.setWordWrap(True)  # the row of cards fits a 1024-pixel window
        self.detail.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        layout.addWidget(self.value)
        layout.addWidget(self.caption)
        layout.addWidget(self.detail)

    def set(self, value: str, detail: str = "") -> None:
        self.value.setText(value)
        self.detail.setText(detail)
        self.setToolTip(f"{self.caption.text()}: {value}" + (f" ({detail})" if detail else ""))


class QtDashboardView(QWidget):
    """The coordinator dashboard of one benchmark."""

    #: A computation finished and everything (tables and charts) is on screen.
    computed = Signal()
    #: A computation failed or was cancelled (the message says which).
    failed = Signal(str)
    #: Open the adjudication of (response id, criterion id).
    adjudicate_requested = Signal(str, str)
    #: Revise (task id, criterion id): the coordinator view opens the edit dialog.
    revise_requested = Signal(str, str)
    #: A short message for the status bar.
    message = Signal(str)

    def __init__(
        self,
        db: Database,
        benchmark: str,
        parent: QWidget | None = None,
        *,
        settings: QtAppSettings | None = None,
        worker: QtDashboardProcess | None = None,
    ) -> None:
        super().__init__(parent)
        self.db = db
        self.benchmark = benchmark
        self.settings = settings
        #: the key the headline judge is remembered under (the database, password hidden)
        self._database_key = db.url.render_as_string(hide_password=True)
        remembered = (
            settings.headline_judge(self._database_key, benchmark) if settings is not None else None
        )
        #: the headline judge as chosen: a name, "" (the judge with the most verdicts,
        #: chosen), or None (not chosen yet: the first result's judge is pinned)
        self.headline: str | None = remembered
        self.result: Computed | None = None
        self.generation = 0
        #: results of older filter sets dropped on arrival (for tests)
        self.dropped = 0
        self.error_text = ""
        #: bootstrap resamples (None: the core's default), seed, calibration params (None:
        #: the core's default method)
        self.n_boot: int | None = None
        self.seed = 0
        self.calibration: dict[str, Any] | None = None
        #: compute ahead the dashboard of the adjudication being read (:meth:`prefetch`)
        #: and of filter sets one click away (:meth:`read_ahead`)
        self.prefetching = True
        #: how many filter sets :meth:`read_ahead` computes ahead ($GRADERCAL_DASHBOARD_READ_AHEAD)
        self.read_ahead_filters = read_ahead_default()
        self._last_chart_size: tuple[int, int] | None = None
        self._request: Request | None = None
        #: the adjudicated (response id, criterion id) pairs, marked in the disagreements
        self.adjudicated: dict[tuple[str, str], AdjudicationValue] = {}
        #: each table section's count as its tab shows it, e.g. "24"
        self._tab_counts: dict[str, str] = {}
        #: tables and charts still to show, one per event-loop turn: (kind, name, value)
        self._charts_pending: list[tuple[str, str, Any]] = []
        #: the generation whose headline (tiles, alt-test line) is on screen
        self.headline_generation: int | None = None
        #: sections (table and chart tabs) of the running computation not filled yet, and
        #: the computation's steps finished so far (their progress labels)
        self._unfilled: set[str] = set()
        self._steps_done: set[str] = set()
        #: each tab's own title, without its progress
        self._tab_titles: dict[QWidget, str] = {}
        #: the worker process (started by the first computation, or ``worker``: started
        #: already, while the window was built)
        if worker is None:
            worker = QtDashboardProcess(db.url.render_as_string(hide_password=False), self)
        else:
            worker.setParent(self)
        self.worker = worker
        self.worker.progress.connect(self._progress)
        self.worker.computed.connect(self._done)
        self.worker.headline.connect(self._headline_ready)
        self.worker.failed.connect(self._failed)
        self.worker.dropped.connect(self._dropped)
        self.worker.restarted.connect(self._restarted)
        self._build()
        for tabs in (self.tables, self.chart_tabs):
            for i in range(tabs.count()):
                tab = tabs.widget(i)
                if tab is not None:
                    self._tab_titles[tab] = tabs.tabText(i)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(RECOMPUTE_DELAY_MS)
        self._timer.timeout.connect(self.recompute)
        self._chart_timer = QTimer(self)
        self._chart_timer.setInterval(0)
        self._chart_timer.timeout.connect(self._next_chart)

    # -- layout -------------------------------------------------------------------------------
    def _build(self) -> None:
        outer = QVBoxLayout(self)
        outer.setContentsMargins(6, 6, 6, 6)
        outer.setSpacing(6)
        bar = QtFlowLayout(spacing=6)  # wraps on a narrow screen (1024 px) instead of widening
        title = QLabel("Coordinator dashboard")
        font = title.font()
        font.setBold(True)
        font.setPointSizeF(font.pointSizeF() * 1.25)
        title.setFont(font)
        bar.addWidget(title)
        title.setToolTip(self.benchmark)  # the benchmark is in the window title too
        self.models = QtChoiceButton("Models")
        self.workflows = QtChoiceButton("Workflows")
        self.domains = QtChoiceButton("Domains")
        self.graders = QtChoiceButton("Experts")
        for b in (self.models, self.workflows, self.domains, self.graders):
            bar.addWidget(b)
            b.changed.connect(self.schedule_recompute)
        bar.addWidget(QLabel("Judge:"))
        self.judge = QComboBox()
        self.judge.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.judge.addItem("most verdicts", None)
        self.judge.setItemData(
            0,
            "Follows the count: a later judge run with more verdicts would take over",
            Qt.ItemDataRole.ToolTipRole,
        )
        self.judge.setToolTip(
            "The judge the headline numbers, the alt-test and the per-judge charts show; "
            "remembered for this database"
        )
        self.judge.activated.connect(self._judge_chosen)
        bar.addWidget(self.judge)
        self.progress_bar = QProgressBar()
        self.progress_bar.setMaximumWidth(260)
        self.progress_bar.setTextVisible(True)
        bar.addWidget(self.progress_bar)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.clicked.connect(self.cancel)
        bar.addWidget(self.cancel_button)
        self.refresh_button = QPushButton("Recompute")
        self.refresh_button.setToolTip("Read the database again and recompute")
        self.refresh_button.clicked.connect(lambda: self.recompute(reload=True))
        bar.addWidget(self.refresh_button)
        outer.addLayout(bar)

        # After a judge run: new verdicts are in the database, the numbers shown are from
        # before; the coordinator refreshes when ready (nothing recomputes behind them).
        self.refresh_bar = QFrame()
        self.refresh_bar.setObjectName("refreshBar")
        self.refresh_bar.setFrameShape(QFrame.Shape.StyledPanel)
        row = QHBoxLayout(self.refresh_bar)
        row.setContentsMargins(8, 2, 4, 2)
        self.refresh_text = QLabel("")
        self.refresh_text.setWordWrap(True)
        self.refresh_text.setTextFormat(Qt.TextFormat.PlainText)
        row.addWidget(self.refresh_text, 1)
        self.refresh_now = QPushButton("Refresh the dashboard")
        self.refresh_now.setObjectName("refreshNow")
        self.refresh_now.clicked.connect(lambda: self.recompute(reload=True))
        row.addWidget(self.refresh_now)
        dismiss = QToolButton()
        dismiss.setText("✕")
        dismiss.setToolTip("Not now (Recompute reads the database again at any time)")
        dismiss.clicked.connect(self.refresh_bar.hide)
        row.addWidget(dismiss)
        self.refresh_bar.hide()
        outer.addWidget(self.refresh_bar)

        cards = QHBoxLayout()
        cards.setSpacing(6)
        self.cards: dict[str, QtStatCard] = {}
        for key, caption in (
            ("tasks", "tasks"),
            ("responses", "responses"),
            ("criteria", "judgment criteria"),
            ("graders", "graders"),
            ("graded", "units graded by an expert"),
            ("coverage", "judge coverage"),
            ("alpha", "expert–expert α"),
            ("kappa", "judge–consensus κ"),
            ("adjudications", "adjudications"),
        ):
            card = QtStatCard(caption)
            card.setObjectName(f"card_{key}")
            self.cards[key] = card
            cards.addWidget(card, 1)
        outer.addLayout(cards)

        self.verdict = QLabel("")
        self.verdict.setObjectName("altTestVerdict")
        self.verdict.setWordWrap(True)
        self.verdict.setTextFormat(Qt.TextFormat.RichText)
        self.verdict.setContentsMargins(6, 2, 6, 2)
        outer.addWidget(self.verdict)

        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.setChildrenCollapsible(False)
        self.tables = QTabWidget()
        self.tables.setDocumentMode(True)
        self.agreement = QtFrameTable("Filter the groups…")
        self.agreement_by = QComboBox()
        for by in AGREEMENT_BYS:
            self.agreement_by.addItem(f"by {by}", by)
        self.agreement_by.currentIndexChanged.connect(lambda _i: self._show_agreement())
        self.agreement.top.insertWidget(0, self.agreement_by)
        self.tables.addTab(self.agreement, "Agreement")
        self.judges = QtFrameTable("Filter the judges…")
        self.tables.addTab(self.judges, "Judges")
        self.model_table = QtFrameTable("Filter the models…")
        self.tables.addTab(self.model_table, "Models")
        # One tab per table section (gradercal.dashboard.tables), in its order.
        self.section_tables: dict[str, QtFrameTable] = {}
        for table in TABLE_SECTIONS:
            widget = QtFrameTable(table.filter_hint)
            widget.setObjectName(f"table_{table.key}")
            self.section_tables[table.key] = widget
            self.tables.addTab(widget, table.title)
            if table.optional:  # shown when a result has it
                self.tables.setTabVisible(self.tables.indexOf(widget), False)
            if table.opens_adjudication:
                widget.row_activated.connect(self._open_row)
            if table.key in REVISE_TABLES:
                widget.add_row_action("Adjudicate…", self._open_row)
                widget.add_row_action(
                    f"Revise criterion… ({keys('criterion.revise')[0]})",
                    self._revise_row,
                    CRITERION_COLUMNS,
                )
                button = QPushButton("Revise criterion…")
                button.setObjectName(f"revise_{table.key}")
                button.setToolTip(
                    "Edit the selected row's criterion, see the difference and what it "
                    f"changes, save it with a reason ({keys('criterion.revise')[0]})"
                )
                button.clicked.connect(lambda _c=False, w=widget: self._revise_selected(w))
                widget.top.addWidget(button)
        self.splitter.addWidget(self.tables)

        self.chart_tabs = QTabWidget()
        self.chart_tabs.setDocumentMode(True)
        self.charts: dict[str, QtChart] = {}
        for name, chart_title in CHARTS:
            chart = QtChart(chart_title, name)
            chart.message.connect(self.message)
            self.charts[name] = chart
            self.chart_tabs.addTab(chart, CHART_TAB_LABELS[name])
        self.splitter.addWidget(self.chart_tabs)
        self.splitter.setStretchFactor(0, 58)
        self.splitter.setStretchFactor(1, 42)
        self._split_done = False
        outer.addWidget(self.splitter, 1)

        self.notes = QLabel("")
        self.notes.setObjectName("dashboardNotes")
        self.notes.setWordWrap(True)
        self.notes.setTextFormat(Qt.TextFormat.PlainText)
        outer.addWidget(self.notes)
        self.status = QLabel("")
        outer.addWidget(self.status)
        # The labels around the charts keep at least one line's height, text or not: the
        # charts' area then has the same size before and after the first result, and the
        # worker's drawings (made at the size asked for) fit the canvases.
        for label in (self.verdict, self.notes, self.status):
            _keep_one_line(label)

        self._set_busy(False)

    def resizeEvent(self, event: Any) -> None:
        super().resizeEvent(event)
        if not self._split_done and self.splitter.width() > 400:
            # Tables 58%, charts 42% on first layout; the user's dragging is kept after.
            self._split_done = True
            w = self.splitter.width()
            self.splitter.setSizes([int(w * 0.58), w - int(w * 0.58)])

    # -- filters ------------------------------------------------------------------------------
    def filters(self) -> Any:
        from gradercal.dashboard import DashboardFilters

        return DashboardFilters(
            models=self.models.selected(),
            workflows=self.workflows.selected(),
            domains=self.domains.selected(),
            graders=self.graders.selected(),
        )

    def selected_judge(self) -> str | None:
        """The judge to compute with: the chosen headline judge (None: most verdicts)."""
        return self.headline or None

    def _judge_chosen(self, index: int) -> None:
        data = self.judge.itemData(index)
        self.set_headline(None if data is None else str(data))
        self.schedule_recompute()

    def set_headline(self, judge: str | None) -> None:
        """Make ``judge`` the headline judge (None: the one with the most verdicts) and
        remember it for this database and benchmark."""
        self.headline = judge or ""
        if self.settings is not None:
            self.settings.set_headline_judge(self._database_key, self.benchmark, judge)
        self._select_headline()

    def _select_headline(self) -> None:
        want = self.headline or None
        for i in range(self.judge.count()):
            if self.judge.itemData(i) == want:
                self.judge.setCurrentIndex(i)
                return

    def offer_refresh(self, text: str) -> None:
        """Say that the database changed (``text``) and offer to recompute; nothing is
        recomputed until the coordinator asks."""
        self.refresh_text.setText(text)
        self.refresh_bar.show()

    def schedule_recompute(self) -> None:
        """Recompute shortly (several filter clicks in a row make one computation)."""
        self._timer.start()

    # -- computing ------------------------------------------------------------------------------
    @property
    def busy(self) -> bool:
        return self._request is not None

    def recompute(self, reload: bool = False, expect: Any = None) -> int:
        """Start computing with the current filters (``reload``: read everything from the
        database again, else the worker reads what changed); an older computation is
        cancelled and its result, should it still arrive, dropped. ``expect``: the
        adjudication just saved (see :meth:`prefetch`). Returns the generation."""
        self._timer.stop()
        if reload:
            self.refresh_bar.hide()  # the new verdicts are read now
        self.generation += 1
        request = self._new_request(reload)
        self._request = request
        self.error_text = ""
        self._set_busy(True)
        self.progress_bar.setRange(0, 0)
        self.progress_bar.setFormat("starting…")
        self._steps_done = set()
        self._unfilled = {*SECTION_STEPS, *(f"chart:{name}" for name, _t in CHARTS)}
        self._show_section_progress()
        self.worker.compute(request, expect)  # supersedes (cancels) the one running
        return request.generation

    def prefetch(self, hypotheses: list[tuple[str, str, bool, int | None]]) -> None:
        """Let the worker compute ahead the dashboard with each hypothetical adjudication
        (response id, criterion id, met, level) under the current filters, so that
        returning from that adjudication shows it at once."""
        if self.prefetching and self.result is not None:
            self.worker.prefetch(self._new_request(False), hypotheses)

    def neighbours(self) -> list[Any]:
        """The filter sets one click away that the worker computes ahead while idle: the
        current filters with one model alone (each model), then one workflow alone — at
        most :attr:`read_ahead_filters` of them."""
        import dataclasses

        if self.result is None or self.read_ahead_filters <= 0:
            return []
        current = self.filters()
        out = []
        for name in ("models", "workflows"):  # a filter and its options share the name
            for value in self.result.options.get(name, []):
                if getattr(current, name) != (value,):
                    out.append(dataclasses.replace(current, **{name: (value,)}))
        return out[: self.read_ahead_filters]

    def read_ahead(self) -> None:
        """Let the worker compute ahead, at a lower priority, the dashboards of
        :meth:`neighbours` (a filter change to one of them is then shown at once)."""
        if not self.prefetching:
            return
        import dataclasses

        base = self._new_request(False)  # the charts' size now (the first may differ)
        requests = [dataclasses.replace(base, filters=f) for f in self.neighbours()]
        if requests:
            self.worker.prefetch_requests(requests)

    def _new_request(self, reload: bool) -> Request:
        return Request(
            generation=self.generation,
            benchmark=self.benchmark,
            filters=self.filters(),
            judge=self.selected_judge(),
            dark=dark_palette(self.palette()),
            n_boot=self.n_boot,
            seed=self.seed,
            calibration=self.calibration,
            chart_size=self._chart_size(),
            reload=reload,
        )

    def _chart_size(self) -> tuple[int, int] | None:
        """The size a chart's canvas will have, in physical pixels (None before layout)."""
        chart = self.charts[CHARTS[0][0]]
        area = chart.canvas if chart.canvas is not None else chart.empty
        if not self.isVisible() or area.width() < 50:
            # Hidden (the adjudication view is on top): the size it had when last shown.
            return self._last_chart_size
        ratio = area.devicePixelRatioF()
        self._last_chart_size = int(area.width() * ratio), int(area.height() * ratio)
        return self._last_chart_size

    def cancel(self) -> None:
        """Stop the running computation (the last result stays on screen)."""
        self._timer.stop()
        if self._request is None:
            return
        self.worker.cancel(self._request.generation)
        self._request = None
        self.generation += 1  # whatever still arrives is stale
        self._set_busy(False)
        self._clear_section_progress()
        self.error_text = "cancelled"
        self.status.setText("Computation cancelled; the figures shown are from before.")
        self.failed.emit("cancelled")

    def _progress(self, generation: int, done: int, total: int, label: str) -> None:
        if generation != self.generation or self._request is None:
            return
        if total <= 0:
            self.progress_bar.setRange(0, 0)
        else:
            self.progress_bar.setRange(0, total)
            self.progress_bar.setValue(done)
        self.progress_bar.setFormat(label)
        if label not in self._steps_done:
            self._steps_done.add(label)
            self._show_section_progress()

    def section_progress(self, name: str) -> str | None:
        """What section ``name`` (a table tab: ``agreement``, ``judges``, ``models`` or a
        table section's key; or ``chart:<tab>``) shows of the running computation: its own
        progress, e.g. ``"2/6"`` (steps of the computation it needs that are finished),
        ``"preparing"`` / ``"drawing"`` (computed, not on screen yet); None once filled."""
        if name not in self._unfilled:
            return None
        steps = SECTION_STEPS.get(name)
        if not steps:  # a chart: drawn after the computation
            return "drawing" if "done" in self._steps_done else "computing"
        done = sum(1 for step in steps if step in self._steps_done)
        if done == len(steps) or "done" in self._steps_done:
            return "preparing"
        return f"{done}/{len(steps)}"

    def _section_widget(self, name: str) -> QWidget:
        if name.startswith("chart:"):
            return self.charts[name[6:]]
        return self._table_widget(name)

    def _show_section_progress(self, names: Any = None) -> None:
        """Each tab's title with its own progress (:meth:`section_progress`) while its
        section is not filled."""
        every = names is None
        for name in [*SECTION_STEPS, *(f"chart:{n}" for n, _t in CHARTS)] if every else names:
            if name in self.section_tables:
                self._update_tab(name)
            else:
                self._set_tab_progress(name)

    def _set_tab_progress(self, name: str) -> None:
        widget = self._section_widget(name)
        tabs = self.chart_tabs if name.startswith("chart:") else self.tables
        index = tabs.indexOf(widget)
        title = self._tab_titles.get(widget, tabs.tabText(index))
        state = self.section_progress(name)
        tabs.setTabText(index, title if state is None else f"{title} · {state}")

    def _headline_ready(self, generation: int, headline: dict[str, Any]) -> None:
        """The headline of the running computation, ahead of its other sections: the
        tiles and the alt-test line show it at once."""
        if generation != self.generation or self._request is None:
            return
        self._show_headline(headline["overview"], headline["agreement"], headline["alt_test"])
        self.headline_generation = generation

    def _failed(self, generation: int, kind: str, text: str) -> None:
        """The worker could not compute ``generation``: ``kind`` is ``cancelled``,
        ``error`` (``text`` says why) or ``crashed`` (the process stopped)."""
        if generation != self.generation:
            self.dropped += 1
            return
        self._request = None
        self._set_busy(False)
        self._clear_section_progress()
        if kind in ("cancelled", "superseded"):
            self.error_text = "cancelled"
            self.status.setText("Computation cancelled.")
        elif self.headline and f"no grader {self.headline!r}" in text:
            gone = self.headline
            self.headline = None  # pinned again from the next result
            self.message.emit(f"The headline judge {gone} is no longer in this benchmark.")
            self.recompute()
            return
        else:
            self.error_text = text or kind
            self.status.setText(f"Cannot compute the dashboard: {self.error_text}")
            self.message.emit(f"Dashboard not computed: {self.error_text}")
        self.failed.emit(self.error_text)

    def _dropped(self, _generation: int) -> None:
        self.dropped += 1

    def _restarted(self, text: str) -> None:
        self.status.setText(text)
        self.message.emit(text)

    def _done(self, computed: Computed) -> None:
        if computed.generation != self.generation:
            self.dropped += 1
            return
        self._request = None
        self.result = computed
        self._set_busy(False)
        self._apply(computed)

    def _take_unfilled(self, names: set[str]) -> set[str]:
        """Mark ``names`` filled; returns them (their tabs' titles to show again)."""
        self._unfilled -= names
        return names

    def _clear_section_progress(self) -> None:
        self._show_section_progress(self._take_unfilled(set(self._unfilled)))

    def _set_busy(self, busy: bool) -> None:
        self.progress_bar.setVisible(busy)
        self.cancel_button.setVisible(busy)
        self.refresh_button.setEnabled(not busy)

    # -- showing ------------------------------------------------------------------------------
    def _apply(self, c: Computed) -> None:
        d = c.dashboard
        o = d.overview
        if self.headline is None and d.primary_judge is not None:
            # Never chosen: the judge shown now becomes the choice, so a later run of
            # another judge (a test judge that ties on verdicts) cannot take its place.
            self.set_headline(str(d.primary_judge))
        self._set_options(c.options)
        self._show_headline(o, d.agreement, d.alt_test)
        self.headline_generation = c.generation
        for table in TABLE_SECTIONS:
            self._tab_counts[table.key] = str(table.count(d.table(table.key)))
            self._update_tab(table.key)
            if table.optional:  # e.g. agreement per criterion version: only after a revision
                index = self.tables.indexOf(self.section_tables[table.key])
                self.tables.setTabVisible(index, d.has_section(table.key))
        self.notes.setText(" · ".join(d.notes))
        if c.disk:
            lead = f"Shown in {c.seconds:.1f} s from the results kept on disk (same data)"
        elif c.cached:
            lead = f"Shown in {c.seconds:.1f} s (computed ahead)"
        else:
            lead = f"Computed in {c.seconds:.1f} s"
        self.status.setText(
            f"{lead} · {o.get('filters', '')} · "
            f"{o.get('n_boot', 0)} bootstrap resamples, {100 * float(o.get('ci', 0.95)):.0f}% intervals"
        )
        # One table or chart per event-loop turn keeps the window responsive: the visible
        # table and chart first.
        tables: list[tuple[str, str, Any]] = [("table", "agreement", None)] + [
            ("table", name, c.tables[name]) for name in ("judges", "models", *self.section_tables)
        ]
        current_table = self.tables.currentWidget()
        tables.sort(key=lambda p: self._table_widget(p[1]) is not current_table)
        charts: list[tuple[str, str, Any]] = [
            ("chart", name, c.figures.get(self._figure_key(name))) for name, _t in CHARTS
        ]
        current = self.chart_tabs.currentWidget()
        charts.sort(key=lambda p: self.charts[p[1]] is not current)
        pending = [tables[0], charts[0], *tables[1:], *charts[1:]]
        # After a partial update only what changed is shown again.
        self._charts_pending = [p for p in pending if self._part_changed(c, p[0], p[1])]
        # Sections whose part did not change are on screen already.
        coming = {f"chart:{n}" if k == "chart" else n for k, n, _v in self._charts_pending}
        self._show_section_progress(self._take_unfilled(self._unfilled - coming))
        self._chart_timer.start()

    def _show_headline(
        self, o: dict[str, Any], agreement: pd.DataFrame, alt_test: dict[str, Any] | None
    ) -> None:
        """The tiles and the alt-test line, from the overview ``o``, the agreement rows
        (the overall ones suffice) and the alt-test of the primary judge."""
        self.cards["tasks"].set(f"{o['n_tasks']:,}")
        self.cards["responses"].set(f"{o['n_responses']:,}", f"{len(o['models'])} models")
        self.cards["criteria"].set(f"{o['n_judgment_criteria']:,}", f"{o['n_units']:,} units")
        self.cards["graders"].set(
            f"{len(o['humans'])} + {len(o['judges'])}",
            f"experts + judge{'s' if len(o['judges']) != 1 else ''}",
        )
        share = o["share_graded"]
        self.cards["graded"].set(
            _pct(share.get("overall")), f"≥ 2 experts: {_pct(share.get('two_or_more'))}"
        )
        primary = None if o.get("primary_judge") is None else str(o["primary_judge"])
        cov = o["judge_coverage"].get(primary) if primary else None
        self.cards["coverage"].set(_pct(cov), primary or "no judge")
        self.cards["alpha"].set(*self._headline(agreement, "experts", "krippendorff_alpha"))
        self.cards["kappa"].set(*self._headline(agreement, primary, "cohen_kappa"))
        self.cards["adjudications"].set(f"{o['n_adjudications']:,}")
        self.verdict.setText(alt_test_text(alt_test, primary))

    def _part_changed(self, c: Computed, kind: str, name: str) -> bool:
        if kind == "chart":
            return c.is_changed(Part.figure(self._figure_key(name)))
        if name == "agreement":
            return c.is_changed(Part.table(f"agreement:{self.agreement_by.currentData()}"))
        shared = {"judges": Part.dash("judges"), "models": None}.get(name, Part.dash("tables"))
        return c.is_changed(Part.table(name)) or (shared is not None and c.is_changed(shared))

    def _table_widget(self, name: str) -> QtFrameTable:
        return {
            "agreement": self.agreement,
            "judges": self.judges,
            "models": self.model_table,
            **self.section_tables,
        }[name]

    def _next_chart(self) -> None:
        """Show the next pending table or chart (one per event-loop turn); when none is
        left, the computation is on screen: :attr:`computed`."""
        if not self._charts_pending:
            self._chart_timer.stop()
            if self._request is None:
                self._clear_section_progress()
            self.computed.emit()
            self.read_ahead()
            return
        kind, name, value = self._charts_pending.pop(0)
        section = f"chart:{name}" if kind == "chart" else name
        if self._request is None and section in self._unfilled:  # not a newer computation's
            self._show_section_progress(self._take_unfilled({section}))
        if kind == "table":
            if name == "agreement":
                self._show_agreement()
            else:
                self._table_widget(name).set_table(value)
            return
        chart = self.charts[name]
        if value is None or isinstance(value, str):
            chart.set_message(value or "Nothing to show.")
        else:
            chart.set_figure(value)

    @staticmethod
    def _headline(agreement: pd.DataFrame, comparison: str | None, stat: str) -> tuple[str, str]:
        if comparison is None or agreement.empty:
            return "—", ""
        rows = agreement.loc[
            (agreement["by"] == "overall")
            & (agreement["comparison"] == comparison)
            & (agreement["statistic"] == stat)
        ]
        if rows.empty or _missing(rows.iloc[0]["value"]):
            return "—", ""
        r = rows.iloc[0]
        ci = "" if _missing(r["ci_low"]) else f"95% CI {r['ci_low']:.2f}–{r['ci_high']:.2f}"
        return f"{float(r['value']):.2f}", ci

    def _set_options(self, options: dict[str, list[str]]) -> None:
        for button, key in (
            (self.models, "models"),
            (self.workflows, "workflows"),
            (self.domains, "domains"),
            (self.graders, "graders"),
        ):
            button.blockSignals(True)
            button.set_values(options.get(key, []))
            button.blockSignals(False)
        judges = options.get("judges", [])
        have = [self.judge.itemData(i) for i in range(1, self.judge.count())]
        self.judge.blockSignals(True)
        if have != judges:
            while self.judge.count() > 1:
                self.judge.removeItem(1)
            for j in judges:
                self.judge.addItem(j, j)
        self._select_headline()
        self.judge.blockSignals(False)

    def _figure_key(self, name: str) -> str:
        """The figure shown in chart ``name`` (a per-grouping chart follows the agreement table)."""
        return figure_name(name, str(self.agreement_by.currentData()))

    def _show_agreement(self) -> None:
        if self.result is None:
            return
        by = str(self.agreement_by.currentData())
        self.agreement.set_table(self.result.tables[f"agreement:{by}"])
        for name in GROUPING_TABS:
            chart = self.charts[name]
            fig = self.result.figures.get(self._figure_key(name))
            pending = any(p[0] == "chart" and p[1] == name for p in self._charts_pending)
            if not pending and fig is not chart.figure:
                if fig is None or isinstance(fig, str):
                    chart.set_message(fig or "Nothing to show.")
                else:
                    chart.set_figure(fig)

    def show_agreement_by(self, by: str) -> None:
        self.agreement_by.setCurrentIndex(AGREEMENT_BYS.index(by))

    # -- adjudicated disagreements ---------------------------------------------------------------
    def _update_tab(self, key: str) -> None:
        table = next(t for t in TABLE_SECTIONS if t.key == key)
        widget = self.section_tables[key]
        count = self._tab_counts.get(key)
        text = table.title if count is None else f"{table.title} ({count})"
        if key == "disagreements" and count is not None:
            done = widget.model.n_marked
            text = f"{table.title} ({count}, {done:,} adjudicated)" if done else text
        state = self.section_progress(key)
        if state is not None:
            text = f"{text} · {state}"
        self.tables.setTabText(self.tables.indexOf(widget), text)

    def set_adjudicated(self, marks: Mapping[tuple[str, str], AdjudicationValue]) -> None:
        """Mark these (response id, criterion id) pairs adjudicated in the disagreements
        table: a tick in the first column, the final verdict, who and when as the row's
        tooltip, and the count in the tab's title. Kept across recomputations."""
        self.adjudicated = dict(marks)
        self._show_marks()

    def mark_adjudicated(
        self, response_id: str, criterion_id: str, value: AdjudicationValue
    ) -> None:
        """Mark one pair adjudicated now (no database read, no recomputation)."""
        self.adjudicated[(response_id, criterion_id)] = value
        self._show_marks()

    def _show_marks(self) -> None:
        notes: dict[tuple[str, ...], str] = {
            key: adjudication_note(v) for key, v in self.adjudicated.items()
        }
        widget = self.section_tables["disagreements"]
        widget.model.set_marks(notes, adjudicated_icon())
        self._update_tab("disagreements")

    def select_case(self, response_id: str, criterion_id: str) -> bool:
        """Select the disagreement (response id, criterion id) in its table, if shown."""
        widget = self.section_tables["disagreements"]
        row = widget.find_row((response_id, criterion_id))
        if row >= 0:
            widget.select_row(row)
        return row >= 0

    def next_case(self, response_id: str, criterion_id: str) -> tuple[tuple[str, str], bool] | None:
        """The disagreement to adjudicate after (response id, criterion id): the next row
        of the disagreements table as it is shown (its sort and its filter box) that is
        not adjudicated yet, from the top again past the last row. Returns the pair and
        whether the search went round; None when every shown row is adjudicated."""
        widget = self.section_tables["disagreements"]
        n = widget.proxy.rowCount()
        if n == 0:
            return None
        here = widget.find_row((response_id, criterion_id))
        for step in range(1, n + 1):
            row = (here + step) % n
            key = widget.row_key(row)
            if (key[0], key[1]) == (response_id, criterion_id):
                continue
            if (key[0], key[1]) not in self.adjudicated:
                return (key[0], key[1]), here + step >= n and here >= 0
        return None

    # -- drilling down ---------------------------------------------------------------------------
    def case_for_row(self, row: dict[str, Any]) -> tuple[str, str] | None:
        """(response id, criterion id) to adjudicate for a disagreement, flip or health row."""
        if self.result is None:
            return None
        dis = self.result.dashboard.disagreements
        rid, cid, tid = row.get("response_id"), row.get("criterion_id"), row.get("task_id")
        if rid is not None and cid is not None:
            return str(rid), str(cid)
        if rid is not None:  # a flip: the response's first disagreement
            hit = dis.loc[dis["response_id"] == rid] if not dis.empty else dis
            if not hit.empty:
                return str(rid), str(hit.iloc[0]["criterion_id"])
            return None
        if cid is not None and tid is not None:  # a criterion: its first disagreement
            hit = (
                dis.loc[(dis["task_id"] == tid) & (dis["criterion_id"] == cid)]
                if not dis.empty
                else dis
            )
            if not hit.empty:
                return str(hit.iloc[0]["response_id"]), str(cid)
            first = self.result.first_response.get(str(tid))
            if first is not None:
                return first, str(cid)
        return None

    def current_criterion(self) -> tuple[str, str] | None:
        """(task id, criterion id) of the row selected in the table shown, when that row
        names a criterion (criterion health, disagreements)."""
        widget = self.tables.currentWidget()
        if not isinstance(widget, QtFrameTable):
            return None
        row = widget.selected_row()
        if row is None or any(_missing(row.get(c)) for c in CRITERION_COLUMNS):
            return None
        return str(row["task_id"]), str(row["criterion_id"])

    def _revise_row(self, row: dict[str, Any]) -> None:
        if any(_missing(row.get(c)) for c in CRITERION_COLUMNS):
            self.message.emit("This row names no criterion to revise.")
            return
        self.revise_requested.emit(str(row["task_id"]), str(row["criterion_id"]))

    def _revise_selected(self, widget: QtFrameTable) -> None:
        row = widget.selected_row()
        if row is None:
            self.message.emit("Select a criterion's row first, then Revise criterion….")
            return
        self._revise_row(row)

    def _open_row(self, row: dict[str, Any]) -> None:
        case = self.case_for_row(row)
        if case is None:
            self.message.emit("Nothing to adjudicate here: no disagreement on this row.")
            return
        self.adjudicate_requested.emit(*case)

    def shutdown(self) -> None:
        """Stop timers and the worker process (it exits; nothing is left running)."""
        self._timer.stop()
        self._chart_timer.stop()
        self._request = None
        self.worker.stop()


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


def _number(value: Any) -> float:
    return math.nan if value is None else float(value)


def alt_test_text(alt: dict[str, Any] | None, judge: str | None) -> str:
    """The alt-test verdict in one line (rich text)."""
    if judge is None:
        return "<b>No judge</b> has graded this selection: run <code>gradercal judge run</code>."
    if alt is None:
        return f"<b>Alt-test of {judge}:</b> not run (it needs at least two experts per item)."
    rate, adv = (_number(alt.get(k)) for k in ("winning_rate", "advantage_probability"))
    eps = alt.get("epsilon")
    detail = (
        f"winning rate {rate:.2f}, advantage probability {adv:.2f}, "
        f"ε = {eps}, {alt.get('n_items')} items, {alt.get('n_tested', alt.get('n_humans'))} "
        f"of {alt.get('n_humans')} experts tested, {alt.get('test', 'exact score')} test"
    )
    if alt.get("passed"):
        return (
            f"<b>Alt-test: {judge} passes</b> — it may stand in for the experts on this "
            f"selection ({detail})."
        )
    return f"<b>Alt-test: {judge} does not pass</b> — keep experts in the loop ({detail})."


class QtCoordinatorView(QStackedWidget):
    """The dashboard and the adjudication view of one benchmark (coordinator windows only).

    The adjudicator's name is chosen once: ``adjudicator`` (``gui --view dashboard
    --grader NAME``), else the name remembered from the last adjudication saved
    (:attr:`QtAppSettings.adjudicator`), else nobody — the first save then asks for it.
    It is never the operating system's login taken silently. The adjudication view shows
    it in its header.

    The disagreements table marks what is adjudicated (read from the database after each
    computation, and at once when an adjudication is saved here); "Save and next" opens
    the next disagreement still to adjudicate in the table's current order and filter.
    """

    #: A short message for the status bar.
    message = Signal(str)

    def __init__(
        self,
        db: Database,
        benchmark: str,
        settings: QtAppSettings | None = None,
        *,
        adjudicator: str | None = None,
        parent: QWidget | None = None,
        worker: QtDashboardProcess | None = None,
    ) -> None:
        super().__init__(parent)
        self.db = db
        self.benchmark = benchmark
        self.settings = settings
        self.store = AdjudicationStore(db)
        #: the case last opened for adjudication (kept selected in its table)
        self.current_case: tuple[str, str] | None = None
        self.dashboard = QtDashboardView(db, benchmark, settings=settings, worker=worker)
        self.addWidget(self.dashboard)
        remembered = settings.adjudicator if settings is not None else None
        self.adjudication = QtAdjudicationView(self.store, adjudicator or remembered or "")
        self.addWidget(self.adjudication)
        self.dashboard.adjudicate_requested.connect(self.open_adjudication)
        self.dashboard.message.connect(self.message)
        self.dashboard.computed.connect(self._computed)
        self.adjudication.message.connect(self.message)
        self.adjudication.back_requested.connect(self.show_dashboard)
        self.adjudication.saved.connect(self._adjudicated)
        self.adjudication.next_requested.connect(self.open_next)
        self.adjudication.case_loaded.connect(self._prefetch_case)
        self.dashboard.revise_requested.connect(self.revise_criterion)
        self.adjudication.revise_requested.connect(self.revise_criterion)
        #: the criterion edit dialog last opened (None: never)
        self.revise_dialog: QtReviseDialog | None = None
        self.setCurrentWidget(self.dashboard)

    def set_adjudicator(self, name: str) -> None:
        self.adjudication.adjudicator.setText(name)

    def open_adjudication(self, response_id: str, criterion_id: str) -> None:
        self.current_case = (response_id, criterion_id)
        self.setCurrentWidget(self.adjudication)
        self.dashboard.select_case(response_id, criterion_id)
        self.adjudication.open_case(self.benchmark, response_id, criterion_id)

    def open_next(self, response_id: str, criterion_id: str) -> tuple[str, str] | None:
        """Open the disagreement after (response id, criterion id) that is still to
        adjudicate (:meth:`QtDashboardView.next_case`); back to the dashboard when none
        is left. Returns the pair opened."""
        found = self.dashboard.next_case(response_id, criterion_id)
        if found is None:
            self.message.emit(
                "Every disagreement the dashboard's table shows is adjudicated "
                "(its filter box and the dashboard's filters choose which)."
            )
            self.show_dashboard()
            return None
        (rid, cid), wrapped = found
        if wrapped:
            self.message.emit("Past the last row: from the top of the disagreements again.")
        self.open_adjudication(rid, cid)
        return rid, cid

    def show_dashboard(self) -> None:
        self.setCurrentWidget(self.dashboard)
        self.dashboard.setFocus()

    def _adjudicated(self, response_id: str, criterion_id: str) -> None:
        case = self.adjudication.case
        if case is not None and case.current is not None:  # marked at once
            self.dashboard.mark_adjudicated(response_id, criterion_id, case.current)
        name = self.adjudication.adjudicator_name()
        if self.settings is not None and name and name != self.settings.adjudicator:
            self.settings.adjudicator = name  # chosen once: remembered for next time
        # The worker reads the adjudications again (only they changed) and shows the
        # result prefetched for this verdict, or computes it.
        saved = case.current if case is not None else None
        expect = None if saved is None else (response_id, criterion_id, saved.met, saved.level)
        self.dashboard.recompute(expect=expect)

    def _prefetch_case(self) -> None:
        """The case on screen may be given any of its verdicts: compute those dashboards
        ahead (not the verdict it has already)."""
        from gradercal.db.adjudication import verdict_to_value

        case = self.adjudication.case
        if case is None:
            return
        c = case.criterion
        current = case.current
        now = None if current is None else (current.met, current.level)
        hypotheses = []
        for verdict in ("met", "not_met", "partial") if case.allows_partial else ("met", "not_met"):
            met, level = verdict_to_value(c, verdict)
            if (met, level) != now:
                hypotheses.append((case.response_id, c.id, met, level))
        self.dashboard.prefetch(hypotheses)

    def _computed(self) -> None:
        """A computation is on screen: mark what is adjudicated (read off the UI
        thread) and keep the case being adjudicated selected in its table."""
        from gradercal.ui import qt_workers

        generation = self.dashboard.generation
        qt_workers.submit(
            self.store.adjudicated,
            self.benchmark,
            done=lambda marks: self._marks_read(generation, marks),
            failed=lambda exc: self.message.emit(f"Cannot read the adjudications: {exc}"),
        )
        if self.current_case is not None:
            self.dashboard.select_case(*self.current_case)

    def _marks_read(self, generation: int, marks: dict[tuple[str, str], AdjudicationValue]) -> None:
        if generation == self.dashboard.generation:  # else a newer computation reads again
            self.dashboard.set_adjudicated(marks)

    # -- revising criteria ----------------------------------------------------------------
    def actor(self) -> str:
        """Who a revision is recorded under: the adjudicator's name when one is chosen,
        else the operating system's login (as the Tasks view records its decisions)."""
        return self.adjudication.adjudicator_name() or login()

    def current_criterion(self) -> tuple[str, str] | None:
        """(task id, criterion id) the coordinator is on: the adjudication's criterion
        when it is shown, else the selected row of the dashboard's table."""
        if self.currentWidget() is self.adjudication:
            case = self.adjudication.case
            return None if case is None else (case.task.id, case.criterion.id)
        return self.dashboard.current_criterion()

    def revise_current(self) -> QtReviseDialog | None:
        """Ctrl+E: the edit dialog of the current criterion (None: there is none)."""
        found = self.current_criterion()
        if found is None:
            self.message.emit(
                "No criterion to revise here: select a row of Criterion health or "
                "Disagreements, or open an adjudication."
            )
            return None
        return self.revise_criterion(*found)

    def revise_criterion(self, task_id: str, criterion_id: str) -> QtReviseDialog:
        """Open the edit dialog of one criterion (window-modal; it saves by itself)."""
        dialog = QtReviseDialog(
            self.db, self.benchmark, task_id, criterion_id, self.actor(), parent=self
        )
        dialog.setWindowModality(Qt.WindowModality.WindowModal)
        dialog.revised.connect(self._revised)
        self.revise_dialog = dialog
        dialog.open()
        return dialog

    def _revised(self, report: RevisionReport) -> None:
        """A revision was saved: say what it did, offer to recompute, and show the open
        adjudication of that task again (its criterion may read differently now)."""
        parts = [f"Task {report.task_id} revised to version {report.version} ({report.kind})"]
        if report.stale_judgments:
            parts.append(f"{report.stale_judgments} verdicts stale")
        if report.requeued:
            parts.append("back in the queues of " + ", ".join(report.requeued))
        text = "; ".join(parts) + "."
        self.message.emit(text)
        self.dashboard.offer_refresh(f"{text} The numbers shown are from before it.")
        case = self.adjudication.case
        if case is not None and case.task.id == report.task_id:
            self.adjudication.open_case(self.benchmark, case.response_id, case.criterion.id)

    def shutdown(self) -> None:
        self.dashboard.shutdown()


def login() -> str:
    """The operating system's login name ("coordinator" when it cannot be found)."""
    import getpass

    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return "coordinator"


__all__ = [
    "Computed",
    "PreparedTable",
    "QtChart",
    "QtChoiceButton",
    "QtCoordinatorView",
    "QtDashboardView",
    "QtFrameModel",
    "QtFrameTable",
    "adjudicated_icon",
    "adjudication_note",
    "agreement_wide",
    "alt_test_text",
    "ci_columns",
    "dark_palette",
    "format_value",
    "header_text",
    "models_wide",
    "prepare_table",
    "save_figure",
]
