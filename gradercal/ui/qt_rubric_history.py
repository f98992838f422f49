"""Rubric history and stale verdicts (View ▸ Rubric history, Ctrl+7; #33).

What ``gradercal rubric history`` and ``gradercal rubric stale`` print, in the window:

* every task with its current version, how many stored versions it has and how many of
  its verdicts a revision made stale (the list on the left; Up/Down move in it);
* the selected task's versions (kind, when, who, why) and, for the selected version,
  what changed, field by field, as a word diff (removed words struck, added underlined);
* the stale verdicts per grader, of the task and of the whole benchmark (people regrade
  them in their queues; the judge with Run judge ▸ stale);
* **Revise criterion…** (Ctrl+E, or the button) opens the revise dialog
  (:class:`gradercal.ui.qt_revise_dialog.QtReviseDialog`) on the criterion chosen in the
  box beside it; a saved revision shows up here at once.

F5 reads everything again.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeySequence, QPalette, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from gradercal.db.revisions import RevisionStore, VersionInfo
from gradercal.db.session import Database
from gradercal.errors import GradercalError
from gradercal.ui.coordinator_words import refusal_text
from gradercal.ui.qt_revise_dialog import QtReviseDialog
from gradercal.ui.rubric_history_text import changes_html, stale_text

__all__ = ["QtRubricHistoryView"]

TASK_COLUMNS = ("task", "version", "revisions", "stale")
VERSION_COLUMNS = ("version", "kind", "when", "by", "reason")


def _table(columns: tuple[str, ...], name: str) -> QTableWidget:
    t = QTableWidget(0, len(columns))
    t.setObjectName(name)
    t.setHorizontalHeaderLabels(list(columns))
    t.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    t.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    t.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
    t.verticalHeader().setVisible(False)
    t.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
    t.horizontalHeader().setStretchLastSection(True)
    return t


def _selected_row(t: QTableWidget) -> int | None:
    model = t.selectionModel()
    rows = model.selectedRows() if model is not None else []
    return rows[0].row() if rows else None


class QtRubricHistoryView(QWidget):
    """The versions of the benchmark's tasks and their stale verdicts."""

    message = Signal(str)

    def __init__(
        self, db: Database, benchmark: str, actor: str = "", parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.db = db
        self.store = RevisionStore(db)
        self.benchmark = benchmark
        self.actor = actor or "coordinator"
        self.tasks: list[tuple[str, int]] = []
        self.history: dict[str, list[VersionInfo]] = {}
        self.stale: dict[str, dict[str, int]] = {}
        self.versions: list[VersionInfo] = []
        self.revise_dialog: QtReviseDialog | None = None
        layout = QVBoxLayout(self)
        top = QHBoxLayout()
        self.summary = QLabel("")
        self.summary.setObjectName("history.summary")
        self.summary.setWordWrap(True)
        top.addWidget(self.summary, 1)
        top.addWidget(QLabel("Criterion:"))
        self.criterion = QComboBox()
        self.criterion.setObjectName("history.criterion")
        self.criterion.setMinimumContentsLength(6)
        top.addWidget(self.criterion)
        self.revise_button = QPushButton("Revise criterion…")
        self.revise_button.setObjectName("history.revise")
        self.revise_button.setToolTip("Edit the chosen criterion of the selected task (Ctrl+E)")
        self.revise_button.clicked.connect(self.revise_selected)
        top.addWidget(self.revise_button)
        refresh = QPushButton("Refresh")
        refresh.setToolTip("Read the versions again (F5)")
        refresh.clicked.connect(self.refresh)
        top.addWidget(refresh)
        layout.addLayout(top)

        split = QSplitter(Qt.Orientation.Horizontal)
        self.task_table = _table(TASK_COLUMNS, "history.tasks")
        self.task_table.itemSelectionChanged.connect(self._show_task)
        split.addWidget(self.task_table)
        right = QSplitter(Qt.Orientation.Vertical)
        self.version_table = _table(VERSION_COLUMNS, "history.versions")
        self.version_table.itemSelectionChanged.connect(self._show_version)
        right.addWidget(self.version_table)
        self.changes = QTextBrowser()
        self.changes.setObjectName("history.changes")
        right.addWidget(self.changes)
        right.setStretchFactor(0, 1)
        right.setStretchFactor(1, 2)
        split.addWidget(right)
        split.setStretchFactor(0, 1)
        split.setStretchFactor(1, 3)
        layout.addWidget(split, 1)
        self.stale_label = QLabel("")
        self.stale_label.setObjectName("history.stale")
        self.stale_label.setWordWrap(True)
        layout.addWidget(self.stale_label)
        # Ctrl+E is the window's "Revise…" action: the coordinator window sends it here
        shortcut = QShortcut(QKeySequence("F5"), self)
        shortcut.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        shortcut.activated.connect(self.refresh)

    # -- data ---------------------------------------------------------------------------
    def refresh(self) -> None:
        """Read the tasks, their versions and the stale verdicts again."""
        selected = self.selected_task()
        try:
            self.tasks = self.store.task_versions(self.benchmark)
            self.history = {}
            for v in self.store.all_history(self.benchmark):
                self.history.setdefault(v.task_id, []).append(v)
            self.stale = self.store.stale_by_task(self.benchmark)
        except GradercalError as exc:
            self._say(f"rubric history: {refusal_text(str(exc))}")
            return
        t = self.task_table
        t.setRowCount(len(self.tasks))
        for r, (task, version) in enumerate(self.tasks):
            stale = sum(self.stale.get(task, {}).values())
            for c, text in enumerate(
                (task, str(version), str(len(self.history.get(task, []))), str(stale or ""))
            ):
                item = QTableWidgetItem(text)
                if c:
                    item.setTextAlignment(
                        Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
                    )
                t.setItem(r, c, item)
        t.resizeColumnsToContents()
        revised = sum(1 for task, _v in self.tasks if self.history.get(task))
        total: dict[str, int] = {}
        for per in self.stale.values():
            for name, n in per.items():
                total[name] = total.get(name, 0) + n
        self.summary.setText(
            f"{len(self.tasks)} tasks, {revised} revised · benchmark: {stale_text(total)}"
        )
        if self.tasks and not (selected is not None and self.select(selected)):
            revised_first = next(
                (i for i, (k, _v) in enumerate(self.tasks) if self.history.get(k)), 0
            )
            t.selectRow(revised_first)
        self._show_task()

    # -- selection ----------------------------------------------------------------------
    def selected_task(self) -> str | None:
        r = _selected_row(self.task_table)
        return None if r is None or r >= len(self.tasks) else self.tasks[r][0]

    def select(self, task: str) -> bool:
        for r, (t, _v) in enumerate(self.tasks):
            if t == task:
                self.task_table.selectRow(r)
                return True
        return False

    def _show_task(self) -> None:
        task = self.selected_task()
        self.versions = list(reversed(self.history.get(task or "", [])))  # newest first
        t = self.version_table
        t.setRowCount(len(self.versions))
        for r, v in enumerate(self.versions):
            when = v.created_at.strftime("%Y-%m-%d %H:%M") if v.created_at else ""
            for c, text in enumerate(
                (f"v{v.version}", v.kind, when, v.actor or "", v.reason or "")
            ):
                item = QTableWidgetItem(text)
                if c == 4 and text:
                    item.setToolTip(text)
                t.setItem(r, c, item)
        t.resizeColumnsToContents()
        self.criterion.clear()
        if task is not None:
            try:
                current, _version = self.store.current(self.benchmark, task)
            except GradercalError as exc:
                self._say(refusal_text(str(exc)))
            else:
                for crit in current.criteria:
                    self.criterion.addItem(crit.id, crit.id)
                    self.criterion.setItemData(
                        self.criterion.count() - 1, crit.text, Qt.ItemDataRole.ToolTipRole
                    )
        self.revise_button.setEnabled(self.criterion.count() > 0)
        stale = self.stale.get(task or "", {})
        self.stale_label.setText(f"Stale verdicts of {task}: {stale_text(stale)}" if task else "")
        if self.versions:
            t.selectRow(0)
        else:
            version = dict(self.tasks).get(task or "", 1)
            self.changes.setHtml(
                f"<p>{task} was never revised (version {version}).</p>" if task else ""
            )
        self._show_version()

    def _show_version(self) -> None:
        r = _selected_row(self.version_table)
        if r is None or r >= len(self.versions):
            return
        v = self.versions[r]
        dark = self.palette().color(QPalette.ColorRole.Base).lightness() < 128
        head = f"<p><b>{v.task_id} v{v.version}</b> ({v.kind})"
        head += f": {v.reason}</p>" if v.reason else "</p>"
        self.changes.setHtml(head + changes_html(v.changes, dark=dark))

    # -- revising -----------------------------------------------------------------------
    def _say(self, text: str) -> None:
        self.message.emit(text)

    def revise_selected(self) -> QtReviseDialog | None:
        """Open the revise dialog on the chosen criterion of the selected task."""
        task = self.selected_task()
        criterion = self.criterion.currentData()
        if task is None or not criterion:
            self._say("Select a task and a criterion to revise.")
            return None
        dialog = QtReviseDialog(self.db, self.benchmark, task, str(criterion), self.actor, self)
        dialog.setWindowModality(Qt.WindowModality.WindowModal)
        dialog.revised.connect(self._revised)
        self.revise_dialog = dialog
        dialog.open()
        return dialog

    def _revised(self, report: object) -> None:
        self.refresh()
        task = getattr(report, "task_id", None)
        if task:
            self.select(str(task))
            self._say(f"Task {task} revised to version {getattr(report, 'version', '?')}.")
