"""Undoable judgment changes (QUndoStack commands).

A command is pushed *after* its change was saved, so its first ``redo`` does nothing;
undo and redo save the old or new value again (each a new revision: history only
grows). Consecutive text edits of one criterion merge into one step.
"""

from __future__ import annotations

from typing import Protocol

from PySide6.QtGui import QUndoCommand

from gradercal.db.grading import JudgmentValue

_TEXT_EDIT_ID = 0x6A75


class JudgmentWriter(Protocol):
    def write_judgment(self, assignment_id: int, criterion_id: str, value: JudgmentValue) -> bool:
        """Save ``value`` and show it; False (after telling the grader) when it failed."""
        ...


class QtJudgmentCommand(QUndoCommand):
    def __init__(
        self,
        writer: JudgmentWriter,
        assignment_id: int,
        criterion_id: str,
        old: JudgmentValue,
        new: JudgmentValue,
        text: str,
        *,
        text_edit: bool = False,
    ) -> None:
        super().__init__(text)
        self.writer = writer
        self.assignment_id = assignment_id
        self.criterion_id = criterion_id
        self.old = old
        self.new = new
        self.text_edit = text_edit
        self._already_done = True

    def redo(self) -> None:
        if self._already_done:
            self._already_done = False
            return
        self.writer.write_judgment(self.assignment_id, self.criterion_id, self.new)

    def undo(self) -> None:
        self.writer.write_judgment(self.assignment_id, self.criterion_id, self.old)

    def id(self) -> int:
        return _TEXT_EDIT_ID if self.text_edit else -1

    def mergeWith(self, other: QUndoCommand) -> bool:
        if (
            isinstance(other, QtJudgmentCommand)
            and other.text_edit
            and other.assignment_id == self.assignment_id
            and other.criterion_id == self.criterion_id
        ):
            self.new = other.new
            return True
        return False
