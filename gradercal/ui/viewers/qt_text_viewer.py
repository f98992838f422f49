"""Text artifacts: Markdown rendered, JSON pretty-printed, anything else as plain text."""

from __future__ import annotations

import json
from typing import Any

from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import QPlainTextEdit, QWidget

from gradercal.model import Artifact
from gradercal.ui.qt_markdown import QtMarkdownView
from gradercal.ui.viewers.qt_base import Fetch, QtArtifactViewer, file_label

MAX_TEXT = 10_000_000


class QtTextViewer(QtArtifactViewer):
    def __init__(self, artifact: Artifact, fetch: Fetch | None, parent: QWidget | None = None):
        super().__init__(artifact, fetch, parent)

    def prepare(self, data: bytes) -> tuple[str, str]:
        if b"\x00" in data[:65536]:
            raise ValueError("binary data (NUL bytes): not a text file")
        try:
            text = data[:MAX_TEXT].decode("utf-8-sig")
        except UnicodeDecodeError:
            text = data[:MAX_TEXT].decode("latin-1")
        name = file_label(self.artifact).lower()
        if name.endswith((".md", ".markdown")):
            return "markdown", text
        if name.endswith(".json") and len(data) <= MAX_TEXT:
            try:
                return "plain", json.dumps(json.loads(text), indent=2, ensure_ascii=False)
            except ValueError:
                return "plain", text
        if len(data) > MAX_TEXT:
            text += f"\n… {len(data) - MAX_TEXT:,} more bytes not shown"
        return "plain", text

    def present(self, prepared: Any) -> None:
        kind, text = prepared
        if kind == "markdown":
            view = QtMarkdownView()
            view.set_markdown(text)
            self.set_content(view)
            return
        self.text = QPlainTextEdit()
        self.text.setReadOnly(True)
        self.text.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.text.setPlainText(text)
        self.set_content(self.text)
