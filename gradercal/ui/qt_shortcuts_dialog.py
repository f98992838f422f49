"""F1: every keyboard shortcut, from the same table the window's actions are made of."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from gradercal.ui.shortcuts import SHORTCUTS


def key_text(key: str) -> str:
    """A key as the platform writes it (⌘ on macOS); descriptive keys ("1 … 5") as they are."""
    if "…" in key:
        return key
    text = QKeySequence(key).toString(QKeySequence.SequenceFormat.NativeText)
    return text or key


class QtShortcutsDialog(QDialog):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Keyboard shortcuts")
        self.resize(560, 640)
        layout = QVBoxLayout(self)
        layout.addWidget(
            QLabel(
                "Letters work whenever the cursor is not in a text box; "
                "Esc leaves a text box. Everything is saved as you go."
            )
        )
        self.tree = QTreeWidget()
        self.tree.setHeaderLabels(["Action", "Keys"])
        self.tree.setRootIsDecorated(False)
        groups: dict[str, QTreeWidgetItem] = {}
        for s in SHORTCUTS:
            group = groups.get(s.group)
            if group is None:
                group = QTreeWidgetItem([s.group, ""])
                font = group.font(0)
                font.setBold(True)
                group.setFont(0, font)
                group.setFlags(Qt.ItemFlag.ItemIsEnabled)
                self.tree.addTopLevelItem(group)
                groups[s.group] = group
            group.addChild(QTreeWidgetItem([s.label, "   or   ".join(key_text(k) for k in s.keys)]))
        self.tree.expandAll()
        self.tree.resizeColumnToContents(0)
        layout.addWidget(self.tree, 1)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        buttons.accepted.connect(self.accept)
        layout.addWidget(buttons)
