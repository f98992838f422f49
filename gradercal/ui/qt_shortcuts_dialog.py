"""F1: the keyboard shortcuts of the window it is opened from, from the same table the
window's actions are made of; both columns sized to their text (long actions wrap)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QLabel,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from gradercal.ui.shortcuts import window_shortcuts


def key_text(key: str) -> str:
    """A key as the platform writes it (⌘ on macOS); descriptive keys ("1 … 5") as they are."""
    if "…" in key:
        return key
    text = QKeySequence(key).toString(QKeySequence.SequenceFormat.NativeText)
    return text or key


class QtShortcutsDialog(QDialog):
    def __init__(self, parent: QWidget | None = None, *, coordinator: bool = False) -> None:
        super().__init__(parent)
        self.setWindowTitle(
            "Keyboard shortcuts · coordinator window" if coordinator else "Keyboard shortcuts"
        )
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
        self.tree.setWordWrap(True)
        self.tree.setUniformRowHeights(False)
        for s in window_shortcuts(coordinator=coordinator):
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
        header = self.tree.header()
        header.setStretchLastSection(False)
        # the keys column always shows its keys whole; the actions take the rest and wrap
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        layout.addWidget(self.tree, 1)
        keys_w = self.tree.sizeHintForColumn(1)
        actions_w = min(self.tree.sizeHintForColumn(0), 440)
        self.resize(keys_w + actions_w + 80, 640)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        buttons.accepted.connect(self.accept)
        layout.addWidget(buttons)
