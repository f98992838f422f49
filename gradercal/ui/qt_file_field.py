"""A path box with a "Choose…" button (file to open, file to save, or folder)."""

from __future__ import annotations

from typing import Literal

from PySide6.QtWidgets import QFileDialog, QHBoxLayout, QLineEdit, QPushButton, QWidget

Mode = Literal["open", "save", "folder"]


class QtFileField(QWidget):
    """A line edit for a path and a button that opens the platform's file chooser."""

    def __init__(
        self, mode: Mode, caption: str, filters: str = "", parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.mode: Mode = mode
        self.caption = caption
        self.filters = filters
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.edit = QLineEdit()
        self.edit.setClearButtonEnabled(True)
        layout.addWidget(self.edit, 1)
        self.button = QPushButton("Choose…")
        self.button.clicked.connect(self.choose)
        layout.addWidget(self.button)
        self.setFocusProxy(self.edit)

    def text(self) -> str:
        return self.edit.text().strip()

    def setText(self, text: str) -> None:
        self.edit.setText(text)

    def choose(self) -> None:
        start = self.text()
        if self.mode == "folder":
            path = QFileDialog.getExistingDirectory(self, self.caption, start)
        elif self.mode == "save":
            path, _ = QFileDialog.getSaveFileName(self, self.caption, start, self.filters)
        else:
            path, _ = QFileDialog.getOpenFileName(self, self.caption, start, self.filters)
        if path:
            self.edit.setText(path)
