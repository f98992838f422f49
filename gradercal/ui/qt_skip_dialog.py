"""Asking why a response is skipped (a reason is required)."""

from __future__ import annotations

from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QLabel,
    QLineEdit,
    QVBoxLayout,
    QWidget,
)

REASONS = (
    "Outside my expertise",
    "An artifact cannot be opened",
    "The response is empty or unreadable",
    "The task or rubric is broken",
    "Conflict of interest",
)


class QtSkipDialog(QDialog):
    def __init__(self, label: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Skip response")
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel(f"Why do you skip {label}? (required)"))
        self.choice = QComboBox()
        self.choice.addItems(["Choose a reason…", *REASONS, "Other (write below)"])
        layout.addWidget(self.choice)
        self.detail = QLineEdit()
        self.detail.setPlaceholderText("Details (required for “Other”)")
        layout.addWidget(self.detail)
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Skip")
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        layout.addWidget(self.buttons)
        self.choice.currentIndexChanged.connect(self._update)
        self.detail.textChanged.connect(self._update)
        self._update()

    def reason(self) -> str:
        index = self.choice.currentIndex()
        detail = self.detail.text().strip()
        if 1 <= index <= len(REASONS):
            base = REASONS[index - 1]
            return f"{base}: {detail}" if detail else base
        return detail

    def _update(self) -> None:
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(bool(self.reason()))
