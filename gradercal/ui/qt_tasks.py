"""The coordinator's Tasks view (View ▸ Task acceptance, Ctrl+5).

One sortable table from :func:`gradercal.db.acceptance.load_acceptance`: per task its
status (coloured), round, the reviewers' agreement with its interval, the four survey
means, and whether it is proposed for acceptance or why not. The buttons act on the
selected task as ``gradercal tasks open|accept|reopen|reject`` do, each asking for a
note first (required to send back or reject); a refused action says why in one line.
Refresh is F5.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QInputDialog,
    QLabel,
    QLineEdit,
    QPushButton,
    QTableWidget,
    QVBoxLayout,
    QWidget,
)

from gradercal._util.numbers import fixed
from gradercal.db.acceptance import Acceptance, TaskAcceptance, act, load_acceptance
from gradercal.db.session import Database
from gradercal.errors import GradercalError
from gradercal.model import REVIEW_DIMENSIONS
from gradercal.ops.acceptance import statistic_label
from gradercal.ui.coordinator_words import refusal_text
from gradercal.ui.qt_widgets import QtSortItem

#: Row colours by task status (light tints; the text is drawn dark on them).
STATUS_COLOURS = {
    "draft": "#e4e6ea",
    "in review": "#fbe7b0",
    "needs revision": "#f9cf9f",
    "accepted": "#c8e6c9",
    "rejected": "#f4b6b6",
}

#: Short headings of the survey statements (the full statement is the header's tooltip).
_SURVEY_HEADINGS = {
    "real_research": "research",
    "reasoning_skill": "reasoning",
    "grounded": "grounded",
    "strong_task": "strong",
}
#: (key, heading) of the table's columns: the decision's figures first, then where it sits.
COLUMNS: tuple[tuple[str, str], ...] = (
    ("task", "task"),
    ("status", "status"),
    ("round", "round"),
    ("agreement", "agreement"),
    ("interval", "interval"),
    *((f"survey.{d.key}", _SURVEY_HEADINGS.get(d.key, d.key)) for d in REVIEW_DIMENSIONS),
    ("proposed", "proposed / why not"),
    ("workflow", "workflow"),
    ("domain", "domain"),
    ("note", "note"),
)
#: The widest a text column starts (its whole text is the cell's tooltip).
_MAX_WIDTH = 360
_NUMBERS = frozenset(
    {"round", "agreement", "interval"} | {f"survey.{d.key}" for d in REVIEW_DIMENSIONS}
)

#: The buttons: (action, label, the note dialog's title, note required).
BUTTONS: tuple[tuple[str, str, str, bool], ...] = (
    ("open", "Open round", "Open the next review round", False),
    ("accept", "Accept…", "Accept the task", False),
    ("reopen", "Send back…", "Send the task back for revision", True),
    ("reject", "Reject…", "Reject the task", True),
)


def _num(x: float | None, digits: int = 3) -> str:
    return fixed(x, digits, missing="")


def cells(t: TaskAcceptance) -> dict[str, tuple[str, Any]]:
    """The shown text and the sort key of each column for one task."""
    m = t.measure
    interval = "" if m.low is None or m.high is None else f"[{_num(m.low)}, {_num(m.high)}]"
    if t.state in ("accepted", "rejected", "needs_revision"):
        why = f"decided: {t.status}"
    elif t.proposed:
        why = "proposed"
    else:
        why = refusal_text("; ".join(t.reasons))  # #33: the window's words, not commands
    out: dict[str, tuple[str, Any]] = {
        "task": (t.task, t.task),
        "workflow": (t.workflow or "", t.workflow),
        "domain": (t.domain or "", t.domain),
        "status": (t.status, t.status),
        "round": (
            "" if t.round is None else f"{t.round} {str(t.state).replace('_', ' ')}",
            t.round,
        ),
        "agreement": (_num(m.value), m.value),
        "interval": (interval, m.low),
        "proposed": (why, (not t.proposed, why)),
        "note": (t.note or "", t.note),
    }
    for d in REVIEW_DIMENSIONS:
        v = t.survey.get(d.key)
        out[f"survey.{d.key}"] = (_num(v, 2), v)
    return out


class QtTasksView(QWidget):
    """Task acceptance of one benchmark (coordinator windows)."""

    message = Signal(str)

    def __init__(
        self, db: Database, benchmark: str, actor: str = "", parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.db = db
        self.benchmark = benchmark
        self.actor = actor or _login()
        self.acceptance: Acceptance | None = None
        self.rows: list[TaskAcceptance] = []
        layout = QVBoxLayout(self)
        top = QHBoxLayout()
        self.summary = QLabel("")
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        top.addWidget(self.summary, 1)
        self.buttons: dict[str, QPushButton] = {}
        for action, label, title, required in BUTTONS:
            button = QPushButton(label)
            button.setObjectName(f"tasks.{action}")
            button.clicked.connect(
                lambda _=False, a=action, t=title, r=required: self.decide(a, t, r)
            )
            self.buttons[action] = button
            top.addWidget(button)
        self.refresh_button = QPushButton("Refresh")
        self.refresh_button.setToolTip("Read the tasks again (F5)")
        self.refresh_button.clicked.connect(self.refresh)
        top.addWidget(self.refresh_button)
        layout.addLayout(top)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setObjectName("tasks.table")
        self.table.setHorizontalHeaderLabels([h for _k, h in COLUMNS])
        statements = {f"survey.{d.key}": d.statement for d in REVIEW_DIMENSIONS}
        for c, (key, _h) in enumerate(COLUMNS):
            head = self.table.horizontalHeaderItem(c)
            if head is not None and key in statements:
                head.setToolTip(f"Mean answer (1–5): {statements[key]}")
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.verticalHeader().setVisible(False)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(True)
        self.table.itemSelectionChanged.connect(self._update_buttons)
        layout.addWidget(self.table, 1)
        self.status = QLabel("")
        self.status.setObjectName("tasks.status")
        self.status.setWordWrap(True)
        layout.addWidget(self.status)
        refresh = QShortcut(QKeySequence("F5"), self)
        refresh.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        refresh.activated.connect(self.refresh)
        self._update_buttons()
        # -- #33: close round, force accept, settings; refusals in words -----------------
        from gradercal.ui.qt_task_actions import install

        self.acceptance_actions = install(self)

    # -- data ---------------------------------------------------------------------------
    def refresh(self) -> None:
        """Read the tasks again and fill the table (a failure keeps the old one)."""
        selected = self.selected_task()
        try:
            acc = load_acceptance(self.db, self.benchmark)
        except GradercalError as exc:
            self.message.emit(f"tasks: {exc}")
            return
        self.acceptance = acc
        self.rows = list(acc.tasks)
        self._fill()
        self.summary.setText(self.summary_text())
        if selected is not None:
            self.select(selected)
        self._update_buttons()

    def summary_text(self) -> str:
        acc = self.acceptance
        if acc is None:
            return ""
        s = acc.settings
        counts = ", ".join(f"{n} {k}" for k, n in acc.counts().items() if n)
        proposed = sum(1 for t in acc.tasks if t.proposed and t.state in ("open", "closed"))
        return (
            f"{len(acc.tasks)} tasks ({counts or 'none'}); {proposed} proposed for acceptance · "
            f"bar: {statistic_label(s.statistic)} ≥ {s.bar:g}, survey means ≥ "
            + ", ".join(f"{v:g}" for v in s.survey_min.values())
        )

    def _fill(self) -> None:
        t = self.table
        t.setSortingEnabled(False)
        t.setRowCount(len(self.rows))
        for r, task in enumerate(self.rows):
            colour = STATUS_COLOURS.get(task.status)
            values = cells(task)
            for c, (key, _h) in enumerate(COLUMNS):
                text, sort_key = values[key]
                item = QtSortItem(text, sort_key)
                if key in _NUMBERS:
                    item.setTextAlignment(
                        Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
                    )
                if key == "proposed":
                    waiting = task.waiting if task.round is not None else ()
                    bar = task.at_bar
                    figure = [bar.text()] if bar is not None and bar.probability is not None else []
                    lines = [*map(refusal_text, task.reasons), *waiting, *figure]  # #33
                    item.setToolTip("\n".join(lines) or text)
                elif key == "note" and text:
                    item.setToolTip(text)
                if colour is not None:
                    item.setBackground(QBrush(QColor(colour)))
                    item.setForeground(QBrush(QColor("#1a1a1a")))
                t.setItem(r, c, item)
        if not t.isSortingEnabled() and t.horizontalHeader().sortIndicatorSection() != -1:
            # first fill: the benchmark's order until a header is clicked
            t.horizontalHeader().setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
        t.setSortingEnabled(True)
        t.resizeColumnsToContents()
        for c, (key, _h) in enumerate(COLUMNS):
            if key in ("proposed", "note") and t.columnWidth(c) > _MAX_WIDTH:
                t.setColumnWidth(c, _MAX_WIDTH)

    # -- selection ----------------------------------------------------------------------
    def selected_task(self) -> str | None:
        rows = self.table.selectionModel().selectedRows() if self.table.selectionModel() else []
        if not rows:
            return None
        item = self.table.item(rows[0].row(), 0)
        return None if item is None else item.text()

    def select(self, task: str) -> bool:
        for r in range(self.table.rowCount()):
            item = self.table.item(r, 0)
            if item is not None and item.text() == task:
                self.table.selectRow(r)
                return True
        return False

    def _task(self, name: str | None) -> TaskAcceptance | None:
        return next((t for t in self.rows if t.task == name), None)

    def _update_buttons(self) -> None:
        t = self._task(self.selected_task())
        decided = t is not None and t.state in ("accepted", "rejected")
        for action, button in self.buttons.items():
            if t is None:
                button.setEnabled(False)
            elif action == "open":
                button.setEnabled(t.state not in ("open", "accepted", "rejected"))
            elif action == "reopen":
                button.setEnabled(t.state is not None and t.state != "needs_revision")
            else:
                button.setEnabled(not decided)

    # -- actions ------------------------------------------------------------------------
    def ask_note(self, title: str, required: bool) -> str | None:
        """The note for an action (None: cancelled). Asked again while a required one is empty."""
        dialog = QInputDialog(self)
        dialog.setObjectName("tasks.note")
        dialog.setWindowTitle(title)
        dialog.setInputMode(QInputDialog.InputMode.TextInput)
        dialog.setTextEchoMode(QLineEdit.EchoMode.Normal)
        dialog.setLabelText("Note (required):" if required else "Note (optional):")
        while True:
            if not dialog.exec():
                return None
            text = dialog.textValue().strip()
            if text or not required:
                return text
            dialog.setLabelText("A note is required: say what must change.")

    def decide(self, action: str, title: str = "", required: bool = False) -> bool:
        """Apply ``action`` to the selected task, after asking for a note; True when done."""
        task = self.selected_task()
        if task is None:
            return False
        note = "" if action == "open" else self.ask_note(f"{title}: {task}", required)
        if note is None:
            return False
        try:
            after = act(
                self.db,
                self.benchmark,
                task,
                action,
                note=note or None,
                actor=self.actor,
                source="ui",
            )
        except GradercalError as exc:  # #33: in words; offers to force what force lifts
            return self.acceptance_actions.refused(action, task, note, str(exc))
        text = f"{after.task}: {after.status} (round {after.round})"
        self.status.setText(text)
        self.message.emit(text)
        self.refresh()
        return True


def _login() -> str:
    import getpass

    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return "coordinator"


__all__ = ["BUTTONS", "COLUMNS", "STATUS_COLOURS", "QtTasksView", "cells"]
