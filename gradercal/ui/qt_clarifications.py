"""The coordinator's clarification inbox (View ▸ Clarifications, Ctrl+6; #33).

Graders ask on a criterion (an unclear flag with a note, or ``gradercal clarify ask``);
here the coordinator reads and answers, as ``gradercal clarify list|show|answer|close``
do (:mod:`gradercal.db.clarifications`):

* the threads of the benchmark, open ones first shown (the box above picks open,
  answered, closed or all), with their criterion, how many questions and who asked, and
  the counts of each status above the list;
* the selected thread: the criterion's text, every question and answer in order;
* an answer box: **Send answer** (Ctrl+Return) saves it; with **Re-check** ticked
  (Ctrl+Shift+R) the finished work of every grader whose verdict on the criterion
  predates the answer goes back in progress, exactly as ``clarify answer --recheck``;
* **Close thread** (Ctrl+Shift+X) ends a thread, after a confirmation.

Keys: Up/Down move in the list, A writes the answer, Esc returns to the list, F5 reads
the threads again. Every refusal is said in words (:mod:`gradercal.ui.coordinator_words`).
"""

from __future__ import annotations

import html

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QKeyEvent, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from gradercal.db.clarifications import (
    STATUSES,
    Clarification,
    answer,
    close,
    list_clarifications,
)
from gradercal.db.session import Database
from gradercal.errors import GradercalError
from gradercal.ui.coordinator_words import refusal_text

__all__ = ["COLUMNS", "QtClarificationsView", "asked_by", "status_counts"]

#: The list's columns.
COLUMNS = ("#", "status", "task", "criterion", "questions", "asked by", "question")
#: The status box: (label, status or None for all).
FILTERS = (("Open", "open"), ("Answered", "answered"), ("Closed", "closed"), ("All", None))


def asked_by(thread: Clarification) -> list[str]:
    """Who asked in a thread, in the order they first asked."""
    out: list[str] = []
    for msg in thread.messages:
        if msg.kind == "question" and msg.author not in out:
            out.append(msg.author)
    return out or [thread.asked_by]


def status_counts(threads: list[Clarification]) -> dict[str, int]:
    """How many threads have each status (every status listed, zero included)."""
    counts = dict.fromkeys(STATUSES, 0)
    for t in threads:
        counts[t.status] = counts.get(t.status, 0) + 1
    return counts


def _short(text: str, width: int = 80) -> str:
    one = " ".join(text.split())
    return one if len(one) <= width else one[: width - 1] + "…"


class _EscBack(QObject):
    """Esc in the answer box returns to the list."""

    def __init__(self, back: QWidget) -> None:
        super().__init__(back)
        self.back = back

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:
        if (
            event.type() == QEvent.Type.KeyPress
            and isinstance(event, QKeyEvent)
            and event.key() == Qt.Key.Key_Escape
        ):
            self.back.setFocus(Qt.FocusReason.ShortcutFocusReason)
            return True
        return False


class QtClarificationsView(QWidget):
    """The clarification inbox of one benchmark (coordinator windows)."""

    message = Signal(str)
    #: The number of open threads changed (the window shows it in its status bar).
    open_count = Signal(int)

    def __init__(
        self, db: Database, benchmark: str, actor: str = "", parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.db = db
        self.benchmark = benchmark
        self.actor = actor or _login()
        self.all_threads: list[Clarification] = []
        self.threads: list[Clarification] = []
        layout = QVBoxLayout(self)
        top = QHBoxLayout()
        self.filter = QComboBox()
        self.filter.setObjectName("clarify.filter")
        for label, status in FILTERS:
            self.filter.addItem(label, status)
        self.filter.currentIndexChanged.connect(lambda _i: self._fill())
        top.addWidget(QLabel("Show:"))
        top.addWidget(self.filter)
        self.counts = QLabel("")
        self.counts.setObjectName("clarify.counts")
        top.addWidget(self.counts, 1)
        self.refresh_button = QPushButton("Refresh")
        self.refresh_button.setToolTip("Read the threads again (F5)")
        self.refresh_button.clicked.connect(self.refresh)
        top.addWidget(self.refresh_button)
        layout.addLayout(top)

        split = QSplitter(Qt.Orientation.Horizontal)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setObjectName("clarify.table")
        self.table.setHorizontalHeaderLabels(list(COLUMNS))
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.verticalHeader().setVisible(False)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.itemSelectionChanged.connect(self._show_thread)
        split.addWidget(self.table)

        right = QWidget()
        rlay = QVBoxLayout(right)
        rlay.setContentsMargins(0, 0, 0, 0)
        self.thread_text = QTextBrowser()
        self.thread_text.setObjectName("clarify.thread")
        rlay.addWidget(self.thread_text, 3)
        rlay.addWidget(QLabel("Answer (A to write, Ctrl+Return sends, Esc back to the list):"))
        self.answer_box = QPlainTextEdit()
        self.answer_box.setObjectName("clarify.answer")
        self.answer_box.setPlaceholderText("What graders should do; they read it beside the rubric")
        self.answer_box.installEventFilter(_EscBack(self.table))
        rlay.addWidget(self.answer_box, 2)
        row = QHBoxLayout()
        self.recheck = QCheckBox(
            "Re-check: reopen the finished work of graders who judged it before"
        )
        self.recheck.setObjectName("clarify.recheck")
        self.recheck.setToolTip("Ctrl+Shift+R")
        row.addWidget(self.recheck, 1)
        self.send_button = QPushButton("Send answer")
        self.send_button.setObjectName("clarify.send")
        self.send_button.setToolTip("Ctrl+Return")
        self.send_button.clicked.connect(self.send_answer)
        row.addWidget(self.send_button)
        self.close_button = QPushButton("Close thread…")
        self.close_button.setObjectName("clarify.close")
        self.close_button.setToolTip("Ctrl+Shift+X")
        self.close_button.clicked.connect(self.close_thread)
        row.addWidget(self.close_button)
        rlay.addLayout(row)
        split.addWidget(right)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        layout.addWidget(split, 1)
        self.status = QLabel("")
        self.status.setObjectName("clarify.status")
        self.status.setWordWrap(True)
        layout.addWidget(self.status)

        for keys, slot in (
            ("F5", self.refresh),
            ("A", self.focus_answer),
            ("Ctrl+Return", self.send_answer),
            ("Ctrl+Enter", self.send_answer),
            ("Ctrl+Shift+R", self.recheck.toggle),
            ("Ctrl+Shift+X", self.close_thread),
        ):
            shortcut = QShortcut(QKeySequence(keys), self)
            shortcut.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
            shortcut.activated.connect(slot)
        self._update_buttons()

    # -- data ---------------------------------------------------------------------------
    def refresh(self) -> None:
        """Read the threads again (a failure keeps the old list and says why)."""
        selected = self.selected_id()
        try:
            self.all_threads = list_clarifications(self.db, self.benchmark)
        except GradercalError as exc:
            self._say(f"clarifications: {refusal_text(str(exc))}")
            return
        counts = status_counts(self.all_threads)
        self.counts.setText(" · ".join(f"{n} {status}" for status, n in counts.items()))
        self.open_count.emit(counts["open"])
        self._fill(selected)

    def _fill(self, selected: int | None = None) -> None:
        status = self.filter.currentData()
        self.threads = [t for t in self.all_threads if status is None or t.status == status]
        t = self.table
        t.setRowCount(len(self.threads))
        for r, c in enumerate(self.threads):
            asked = sum(1 for msg in c.messages if msg.kind == "question")
            values = (
                str(c.id), c.status, c.task, c.criterion, str(asked),
                ", ".join(asked_by(c)), _short(c.question),
            )  # fmt: skip
            for col, text in enumerate(values):
                item = QTableWidgetItem(text)
                if col == len(values) - 1:
                    item.setToolTip(c.question)
                t.setItem(r, col, item)
        t.resizeColumnsToContents()
        if t.columnWidth(len(COLUMNS) - 1) > 360:
            t.setColumnWidth(len(COLUMNS) - 1, 360)
        if self.threads and not (selected is not None and self.select(selected)):
            t.selectRow(0)
        self._show_thread()

    # -- selection ----------------------------------------------------------------------
    def selected_id(self) -> int | None:
        model = self.table.selectionModel()
        rows = model.selectedRows() if model is not None else []
        if not rows or rows[0].row() >= len(self.threads):
            return None
        return self.threads[rows[0].row()].id

    def selected(self) -> Clarification | None:
        cid = self.selected_id()
        return next((t for t in self.threads if t.id == cid), None)

    def select(self, clarification_id: int) -> bool:
        for r, t in enumerate(self.threads):
            if t.id == clarification_id:
                self.table.selectRow(r)
                return True
        return False

    def _show_thread(self) -> None:
        c = self.selected()
        self._update_buttons()
        if c is None:
            self.thread_text.setHtml("<p>No thread selected.</p>" if self.threads else
                                "<p>No clarification threads here.</p>")  # fmt: skip
            return
        parts = [
            f"<p><b>#{c.id} · {html.escape(c.status)} · task {html.escape(c.task)}, "
            f"criterion {html.escape(c.criterion)}</b></p>",
            f"<p><i>{html.escape(c.criterion_text)}</i></p>",
        ]
        for msg in c.messages:
            when = msg.created_at.strftime("%Y-%m-%d %H:%M") if msg.created_at else ""
            who = "asked" if msg.kind == "question" else "answered"
            parts.append(
                f"<p><b>{html.escape(msg.author)}</b> {who} {when}:<br>"
                f"{html.escape(msg.text).replace(chr(10), '<br>')}</p>"
            )
        self.thread_text.setHtml("".join(parts))

    def _update_buttons(self) -> None:
        c = self.selected()
        self.send_button.setEnabled(c is not None and c.status != "closed")
        self.close_button.setEnabled(c is not None and c.status != "closed")

    # -- actions ------------------------------------------------------------------------
    def _say(self, text: str) -> None:
        self.status.setText(text)
        self.message.emit(text)

    def focus_answer(self) -> None:
        """A: the cursor in the answer box."""
        self.answer_box.setFocus(Qt.FocusReason.ShortcutFocusReason)

    def send_answer(self) -> bool:
        """Answer the selected thread with the box's text (re-check as ticked)."""
        c = self.selected()
        if c is None:
            self._say("Select a thread first.")
            return False
        recheck = self.recheck.isChecked()
        try:
            done = answer(
                self.db, c.id, self.answer_box.toPlainText(), actor=self.actor, recheck=recheck
            )
        except GradercalError as exc:
            self._say(f"#{c.id}: {refusal_text(str(exc))}")
            return False
        text = f"#{c.id} answered by {done.clarification.answered_by}"
        if recheck:
            who = ", ".join(done.graders) or "nobody"
            n = len(done.reopened)
            text += f"; re-check asked of {who}: {n} finished item{'s' if n != 1 else ''} reopened"
        self.answer_box.clear()
        self.recheck.setChecked(False)
        self.refresh()
        self.select(c.id)
        self.table.setFocus()
        self._say(text)
        return True

    def confirm_close(self, c: Clarification) -> bool:
        box = QMessageBox(self)
        box.setObjectName("clarify.confirm")
        box.setIcon(QMessageBox.Icon.Question)
        box.setWindowTitle(f"Close thread #{c.id}")
        state = "unanswered" if c.answer is None else "answered"
        box.setText(
            f"Close thread #{c.id} ({state}) on {c.task} {c.criterion}? It takes no more "
            "questions: a later question opens a new thread."
        )
        yes = box.addButton("Close thread", QMessageBox.ButtonRole.AcceptRole)
        yes.setObjectName("clarify.confirm.yes")
        box.addButton(QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(yes)
        box.exec()
        return box.clickedButton() is yes

    def close_thread(self) -> bool:
        """Close the selected thread, after a confirmation."""
        c = self.selected()
        if c is None:
            self._say("Select a thread first.")
            return False
        if c.status == "closed":
            self._say(f"#{c.id} is closed already.")
            return False
        if not self.confirm_close(c):
            return False
        try:
            close(self.db, c.id, actor=self.actor)
        except GradercalError as exc:
            self._say(f"#{c.id}: {refusal_text(str(exc))}")
            return False
        self.refresh()
        self._say(f"#{c.id} closed")
        return True


def _login() -> str:
    import getpass

    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return "coordinator"
