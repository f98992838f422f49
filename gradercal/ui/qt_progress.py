"""The coordinator's Progress view (View ▸ Grading progress, Ctrl+4).

Three sortable tables computed by :func:`gradercal.db.progress.load_progress` — per
grader (done, skipped, active time, pace, active time left, forecast), per offline
packet (out, overdue, returned) and per task — over a one-line summary, with Refresh
(F5) and *Export CSV…* (the same three files as ``gradercal progress --csv DIR``).
Overdue packets and unfinished tasks are coloured so they stand out.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QSplitter,
    QTableWidget,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from gradercal.db.progress import load_progress
from gradercal.db.session import Database
from gradercal.errors import GradercalError
from gradercal.ops.progress import COLUMNS, Progress, display, records
from gradercal.ui.qt_widgets import QtSortItem

#: Row colours by status (light tints that stay readable in the dark theme's text too).
STATUS_COLOURS = {
    "overdue": "#f4b6b6",
    "out": "#fbe7b0",
    "returned": "#c8e6c9",
    "graded": "#c8e6c9",
    "grading": "#fbe7b0",
}

#: Left-aligned columns (the rest are numbers and dates, aligned right).
_TEXT_COLUMNS = frozenset({"grader", "packet_id", "status", "task", "workflow", "domain"})
_TITLES = {"graders": "Graders", "packets": "Offline packets", "tasks": "Tasks"}


#: Bar segments of the chart: (field, label, colour).
SEGMENTS = (
    ("submitted", "submitted", "#4c9a55"),
    ("skipped", "skipped", "#9e9e9e"),
    ("in_progress", "in progress", "#e0a030"),
    ("pending", "pending", "#d9dde3"),
)


class _ProgressChart(QWidget):
    """One horizontal bar per grader, split into submitted / skipped / in progress /
    pending; the legend sits above the axes, so it never covers a bar."""

    def __init__(self) -> None:
        super().__init__()
        from matplotlib.backends.backend_qtagg import FigureCanvasQTAgg
        from matplotlib.figure import Figure

        self.figure = Figure(figsize=(6, 2.5), layout="constrained")
        self.canvas = FigureCanvasQTAgg(self.figure)  # type: ignore[no-untyped-call]
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.canvas)
        self.bars: dict[str, list[float]] = {}

    def draw_progress(self, progress: Progress) -> None:
        from matplotlib.ticker import MaxNLocator

        self.figure.clear()
        graders = progress.graders
        self.bars = {f: [float(getattr(g, f)) for g in graders] for f, _l, _c in SEGMENTS}
        if not graders:
            self.canvas.draw_idle()  # type: ignore[no-untyped-call]
            return
        ax = self.figure.add_subplot()
        names = [g.grader for g in graders]
        left = [0.0] * len(graders)
        for field, label, colour in SEGMENTS:
            values = self.bars[field]
            ax.barh(names, values, left=left, color=colour, label=label, height=0.6)
            left = [a + b for a, b in zip(left, values, strict=True)]
        ax.invert_yaxis()
        ax.set_xlabel("responses")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlim(0, max(left) or 1)
        ax.spines[["top", "right"]].set_visible(False)
        ax.legend(loc="lower left", bbox_to_anchor=(0, 1.02), ncols=len(SEGMENTS), frameon=False)
        self.canvas.draw_idle()  # type: ignore[no-untyped-call]


class QtProgressView(QWidget):
    """Grading progress of one benchmark (coordinator windows)."""

    message = Signal(str)

    def __init__(self, db: Database, benchmark: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.db = db
        self.benchmark = benchmark
        self.progress: Progress | None = None
        self.rows: dict[str, list[dict[str, Any]]] = {}
        layout = QVBoxLayout(self)
        top = QHBoxLayout()
        self.summary = QLabel("")
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        top.addWidget(self.summary, 1)
        self.refresh_button = QPushButton("Refresh")
        self.refresh_button.setToolTip("Read the progress again (F5)")
        self.refresh_button.clicked.connect(self.refresh)
        self.export_button = QPushButton("Export CSV…")
        self.export_button.setToolTip("Write graders.csv, packets.csv and tasks.csv to a folder")
        self.export_button.clicked.connect(self.export_dialog)
        top.addWidget(self.refresh_button)
        top.addWidget(self.export_button)
        layout.addLayout(top)
        self.tabs = QTabWidget()
        self.tables: dict[str, QTableWidget] = {}
        self.chart = _ProgressChart()
        for name in ("graders", "packets", "tasks"):
            table = QTableWidget(0, len(COLUMNS[name]))
            table.setObjectName(f"progress.{name}")
            table.setHorizontalHeaderLabels([h for _k, h in COLUMNS[name]])
            table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
            table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
            table.setAlternatingRowColors(True)
            table.verticalHeader().setVisible(False)
            header = table.horizontalHeader()
            header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
            header.setStretchLastSection(True)
            self.tables[name] = table
            if name == "graders":  # the table over a bar per grader
                split = QSplitter(Qt.Orientation.Vertical)
                split.addWidget(table)
                split.addWidget(self.chart)
                split.setStretchFactor(0, 1)
                split.setStretchFactor(1, 1)
                self.tabs.addTab(split, _TITLES[name])
            else:
                self.tabs.addTab(table, _TITLES[name])
        layout.addWidget(self.tabs, 1)
        refresh = QShortcut(QKeySequence("F5"), self)
        refresh.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        refresh.activated.connect(self.refresh)

    # -- data ---------------------------------------------------------------------------
    def refresh(self) -> None:
        """Read the progress again and fill the tables (a failure keeps the old ones)."""
        try:
            progress = load_progress(self.db, self.benchmark)
        except GradercalError as exc:
            self.message.emit(f"progress: {exc}")
            return
        self.progress = progress
        self.rows = records(progress)
        for name, table in self.tables.items():
            self._fill(name, table, self.rows[name])
        self.summary.setText(self.summary_text())
        self.chart.draw_progress(progress)
        for i, name in enumerate(("graders", "packets", "tasks")):
            self.tabs.setTabText(i, f"{_TITLES[name]} ({len(getattr(progress, name))})")

    def summary_text(self) -> str:
        p = self.progress
        if p is None:
            return ""
        if not p.graders:
            return "No grader has assignments yet (File ▸ … or `gradercal assign`)."
        t = p.total
        parts = [
            f"{t.done} of {t.assigned} responses done ({t.skipped} skipped)",
            f"{display('active_s', t.active_s)} active",
        ]
        if t.per_hour is not None:
            parts.append(f"{t.per_hour:.1f} per active hour")
        if t.forecast is not None:
            parts.append(f"forecast {t.forecast:%Y-%m-%d} at the last {p.window_days} days' pace")
        overdue = sum(1 for x in p.packets if x.status == "overdue")
        if overdue:
            parts.append(f"{overdue} packet{'s' if overdue != 1 else ''} overdue")
        graded = sum(1 for x in p.tasks if x.status == "graded")
        parts.append(f"{graded} of {len(p.tasks)} tasks fully graded")
        return " · ".join(parts)

    def _fill(self, name: str, table: QTableWidget, rows: list[dict[str, Any]]) -> None:
        keys = [k for k, _h in COLUMNS[name]]
        table.setSortingEnabled(False)
        table.setRowCount(len(rows))
        for r, row in enumerate(rows):
            colour = STATUS_COLOURS.get(str(row.get("status")))
            for c, key in enumerate(keys):
                value = row[key]
                item = QtSortItem(display(key, value), value)
                if key not in _TEXT_COLUMNS:
                    item.setTextAlignment(
                        Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
                    )
                if key == "packet_id":
                    item.setText(str(value)[:8])
                    item.setToolTip(str(value))
                if colour is not None:
                    item.setBackground(QBrush(QColor(colour)))
                    item.setForeground(QBrush(QColor("#1a1a1a")))
                if name == "graders" and r == len(rows) - 1:
                    font = item.font()
                    font.setBold(True)
                    item.setFont(font)
                table.setItem(r, c, item)
        # the "all graders" row stays last: graders sort among themselves only by refresh
        table.setSortingEnabled(name != "graders")
        table.resizeColumnsToContents()

    # -- export -------------------------------------------------------------------------
    def export_csv(self, folder: Path) -> list[Path]:
        """Write the three tables as CSV files into ``folder`` (formula-safe cells)."""
        from gradercal.formats.tables import write_rows_csv

        if not self.rows:
            self.refresh()
        folder.mkdir(parents=True, exist_ok=True)
        written = []
        for name, rows in self.rows.items():
            path = folder / f"{name}.csv"
            write_rows_csv(path, [k for k, _h in COLUMNS[name]], rows)
            written.append(path)
        return written

    def export_dialog(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Export progress as CSV to a folder")
        if not folder:
            return
        try:
            paths = self.export_csv(Path(folder))
        except OSError as exc:
            self.message.emit(f"cannot write the CSV files: {exc.strerror or exc}")
            return
        self.message.emit(f"wrote {', '.join(p.name for p in paths)} to {folder}")


__all__ = ["SEGMENTS", "STATUS_COLOURS", "QtProgressView"]
