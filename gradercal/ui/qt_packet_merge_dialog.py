"""File ▸ Merge a returned packet… (Ctrl+Shift+M): ``gradercal packet merge``.

A returned ``.gcpkg``'s judgments, task reviews and queue state back into the database.
Merging again changes nothing; a judgment changed both in the packet and in the database
is a conflict, kept beside the database's value: "Show conflicts" (Alt+S) opens the
conflicts dialog to keep one side. A damaged, altered or foreign packet is refused in
words and nothing from it is merged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from PySide6.QtWidgets import QDialogButtonBox, QPushButton, QWidget

from gradercal.ui.coordinator_ops import Outcome, merge_packet
from gradercal.ui.qt_file_field import QtFileField
from gradercal.ui.qt_ops_dialog import QtOpsDialog, present

if TYPE_CHECKING:
    from gradercal.db.session import Database
    from gradercal.ui.qt_conflicts import QtConflictsDialog


class QtPacketMergeDialog(QtOpsDialog):
    def __init__(self, db: Database, actor: str, parent: QWidget | None = None) -> None:
        super().__init__("Merge a returned packet", "&Merge", parent)
        self.setObjectName("packet_merge_dialog")
        self.db = db
        self.actor = actor
        self.file = QtFileField("open", "Returned packet", "Packets (*.gcpkg);;All files (*)")
        self.form.addRow("&Packet:", self.file)
        self.conflicts_button = QPushButton("&Show conflicts…")
        self.conflicts_button.setObjectName("showConflicts")
        self.conflicts_button.setEnabled(False)
        self.conflicts_button.clicked.connect(self.show_conflicts)
        self.buttons.addButton(self.conflicts_button, QDialogButtonBox.ButtonRole.ActionRole)
        self.conflicts_dialog: QtConflictsDialog | None = None

    def work(self) -> tuple[Callable[..., Outcome], tuple[Any, ...]] | str:
        if not self.file.text():
            return "choose the returned packet to merge."
        return merge_packet, (self.db, self.file.text())

    def finished_ok(self, outcome: Outcome) -> None:
        self.conflicts_button.setEnabled(bool(outcome.data.get("conflicts")))

    def show_conflicts(self) -> QtConflictsDialog:
        from gradercal.ui.qt_conflicts import QtConflictsDialog

        dialog = QtConflictsDialog(self.db, self.actor, self)
        present(dialog)
        self.conflicts_dialog = dialog
        return dialog
