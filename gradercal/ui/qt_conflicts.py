"""Conflicts, for people: the packet-conflict dialog and the "changed elsewhere" question.

:class:`QtConflictsDialog` (File ▸ Packet conflicts…, coordinator mode) lists the open
conflicts a packet merge kept (:func:`gradercal.db.packets.list_conflicts`): the
database's value on the left, the packet's on the right, each in full below the table.
*Keep left* / *Keep right* settle the selected conflict through
:func:`gradercal.db.packets.resolve_conflict`; the replaced value and the decision stay
in the history.

:func:`ask_stale` asks a grader what to do when their verdict was changed elsewhere
(another window, a merge, an adjudication) since the response was opened.
"""

from __future__ import annotations

import json
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from gradercal.db.grading import JudgmentValue, StaleJudgmentError
from gradercal.db.packets import list_conflicts, resolve_conflict
from gradercal.db.session import Database
from gradercal.errors import GradercalError
from gradercal.model import verdict_word

COLUMNS = ("#", "Grader", "Task / response / criterion", "Database (left)", "Packet (right)")


def verdict_text(value: Any) -> str:
    """A one-line summary of a judgment or task review value."""
    if not isinstance(value, dict):
        return "—"
    if "answers" in value:
        answers = value.get("answers") or {}
        text = ", ".join(f"{k}={v}" for k, v in sorted(answers.items())) or "no answers"
        return text + (" · comment" if value.get("comment") else "")
    met, level = value.get("met"), value.get("level")
    word = verdict_word(met, missing="no verdict")
    if level is not None:
        word += f" (level {level})"
    if value.get("unclear"):
        word += " · unclear"
    return word


def value_details(value: Any) -> str:
    """The whole value, readable: verdict first, then every text."""
    if not isinstance(value, dict):
        return "(none)"
    lines = [verdict_text(value)]
    for key in ("rationale", "unclear_note", "comment"):
        if value.get(key):
            lines.append(f"\n{key.replace('_', ' ')}:\n{value[key]}")
    if "answers" in value and value.get("answers"):
        lines.append("\n" + json.dumps(value["answers"], indent=2, ensure_ascii=False))
    return "\n".join(lines)


class QtConflictsDialog(QDialog):
    """Open packet conflicts with keep-left (database) / keep-right (packet) buttons."""

    #: A conflict was resolved (its id).
    resolved = Signal(int)

    def __init__(self, db: Database, actor: str = "coordinator", parent: QWidget | None = None):
        super().__init__(parent)
        self.db = db
        self.actor = actor
        self.rows: list[dict[str, Any]] = []
        self.setWindowTitle("Packet conflicts")
        self.resize(1000, 620)
        layout = QVBoxLayout(self)
        self.summary = QLabel("")
        self.summary.setWordWrap(True)
        layout.addWidget(self.summary)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(list(COLUMNS))
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
        self.table.itemSelectionChanged.connect(self._selection_changed)
        layout.addWidget(self.table, 2)
        sides = QHBoxLayout()
        self.left = QPlainTextEdit()
        self.right = QPlainTextEdit()
        for title, box in (("Database (left)", self.left), ("Packet (right)", self.right)):
            box.setReadOnly(True)
            column = QVBoxLayout()
            column.addWidget(QLabel(title))
            column.addWidget(box)
            sides.addLayout(column)
        layout.addLayout(sides, 1)
        self.note = QLineEdit()
        self.note.setPlaceholderText("Note (why), kept with the decision")
        self.note.setMaxLength(2000)
        layout.addWidget(self.note)
        buttons = QHBoxLayout()
        self.show_resolved = QCheckBox("Show resolved")
        self.show_resolved.toggled.connect(lambda _on: self.refresh())
        self.keep_left = QPushButton("Keep &left (database)")
        self.keep_right = QPushButton("Keep &right (packet)")
        self.close_button = QPushButton("Close")
        self.keep_left.clicked.connect(lambda: self.keep("database"))
        self.keep_right.clicked.connect(lambda: self.keep("packet"))
        self.close_button.clicked.connect(self.accept)
        buttons.addWidget(self.show_resolved)
        buttons.addStretch(1)
        for b in (self.keep_left, self.keep_right, self.close_button):
            buttons.addWidget(b)
        layout.addLayout(buttons)
        self.status = QLabel("")
        self.status.setWordWrap(True)
        layout.addWidget(self.status)
        self.refresh()

    # -- data -------------------------------------------------------------------------------------
    def refresh(self) -> None:
        """Read the conflicts again (open ones; all with "Show resolved")."""
        try:
            self.rows = list_conflicts(self.db, include_resolved=self.show_resolved.isChecked())
        except Exception as exc:  # the database went away: say so, keep the dialog
            self.rows = []
            self.status.setText(f"Cannot read the conflicts: {exc}")
        self.table.setRowCount(len(self.rows))
        for i, r in enumerate(self.rows):
            where = " / ".join(
                str(x) for x in (r.get("task_id"), r.get("response_id"), r.get("criterion_id")) if x
            )
            state = "" if r["status"] == "open" else f" ✓ kept {r['resolution']['keep']}"
            cells = (
                f"{r['id']}{state}",
                str(r.get("grader") or ""),
                f"{r['kind']}: {where}",
                verdict_text(self._left_value(r)),
                verdict_text(r.get("packet")),
            )
            for col, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setData(Qt.ItemDataRole.UserRole, r["id"])
                self.table.setItem(i, col, item)
        self.table.resizeColumnsToContents()
        n_open = sum(1 for r in self.rows if r["status"] == "open")
        self.summary.setText(
            f"{n_open} open conflict{'s' if n_open != 1 else ''}: a judgment or task review "
            "changed both in a packet and in the database since the export. The database "
            "keeps its value until you decide."
            if n_open
            else "No open conflicts."
        )
        if self.rows:
            self.table.selectRow(0)
        self._selection_changed()

    @staticmethod
    def _left_value(row: dict[str, Any]) -> Any:
        """The database's value now (it may have changed since the merge)."""
        current = row.get("current")
        if isinstance(current, dict):
            return {k: v for k, v in current.items() if k != "revision"}
        return row.get("database")

    def selected(self) -> dict[str, Any] | None:
        index = self.table.currentRow()
        if not (0 <= index < len(self.rows)) or not self.table.selectedItems():
            return None
        return self.rows[index]

    def _selection_changed(self) -> None:
        row = self.selected()
        self.left.setPlainText(value_details(self._left_value(row)) if row else "")
        self.right.setPlainText(value_details(row.get("packet")) if row else "")
        can = row is not None and row["status"] == "open"
        self.keep_left.setEnabled(can)
        self.keep_right.setEnabled(can)

    # -- decisions ----------------------------------------------------------------------------------
    def keep(self, which: str) -> bool:
        """Resolve the selected conflict keeping ``"database"`` or ``"packet"``."""
        row = self.selected()
        if row is None or row["status"] != "open":
            return False
        try:
            result = resolve_conflict(
                self.db, int(row["id"]), which, note=self.note.text() or None, by=self.actor
            )
        except GradercalError as exc:
            self.status.setText(f"Not resolved: {exc}")
            return False
        except Exception as exc:  # database unreachable, locked too long …
            self.status.setText(f"Not resolved (database error): {exc}")
            return False
        self.note.clear()
        side = "left (database)" if which == "database" else "right (packet)"
        self.status.setText(f"Conflict #{result.conflict_id} resolved: kept {side}.")
        self.resolved.emit(result.conflict_id)
        self.refresh()
        return True


# -- stale views -----------------------------------------------------------------------------------
RELOAD, OVERWRITE, CANCEL = "reload", "overwrite", "cancel"


def stale_message(exc: StaleJudgmentError, mine: JudgmentValue, said: str | None = None) -> str:
    """What the grader is told: what changed, what is there now, what they tried to save.
    ``said`` words the change (the grading view names the criterion as its rubric does)."""
    said = said or str(exc)
    lines = [said[:1].upper() + said[1:] + "."]
    if not exc.adjudicated:
        now = exc.current_value
        there = (
            "no verdict"
            if now is None or not now.answered
            else verdict_text({"met": now.met, "level": now.level, "unclear": now.unclear})
        )
        lines.append(f"\nIn the database now: {there}.")
    mine_text = (
        verdict_text({"met": mine.met, "level": mine.level, "unclear": mine.unclear})
        if mine.answered
        else "no verdict"
    )
    lines.append(f"Yours (not saved): {mine_text}.")
    lines.append(
        "\nReload shows the current value (what you typed for this criterion is dropped); "
        "Overwrite saves yours over it (the other value stays in the history)."
    )
    return "\n".join(lines)


def ask_stale(
    parent: QWidget | None, exc: StaleJudgmentError, mine: JudgmentValue, said: str | None = None
) -> str:
    """Ask what to do with a stale write: :data:`RELOAD`, :data:`OVERWRITE` or :data:`CANCEL`."""
    box = QMessageBox(parent)
    box.setIcon(QMessageBox.Icon.Warning)
    box.setWindowTitle("Changed elsewhere")
    box.setText(stale_message(exc, mine, said))
    reload_button = box.addButton("&Reload", QMessageBox.ButtonRole.AcceptRole)
    overwrite_button = box.addButton("&Overwrite", QMessageBox.ButtonRole.DestructiveRole)
    box.addButton(QMessageBox.StandardButton.Cancel)
    box.setDefaultButton(reload_button)
    box.exec()
    clicked = box.clickedButton()
    if clicked is reload_button:
        return RELOAD
    if clicked is overwrite_button:
        return OVERWRITE
    return CANCEL
