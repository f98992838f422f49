"""Markdown shown read-only through ``QTextBrowser.setMarkdown`` — nothing fetched, no raw HTML."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QUrl
from PySide6.QtGui import QDesktopServices, QTextDocument
from PySide6.QtWidgets import QTextBrowser, QWidget

#: GitHub-flavoured Markdown (tables, task lists, strikethrough, autolinks) with raw
#: HTML shown as text: a grader sees exactly what the model wrote.
MARKDOWN_FEATURES = QTextDocument.MarkdownFeature(
    QTextDocument.MarkdownFeature.MarkdownDialectGitHub.value
    | QTextDocument.MarkdownFeature.MarkdownNoHTML.value
)

_STYLE = """
table { border-collapse: collapse; margin: 4px 0; }
th, td { border: 1px solid #8a8a8a; padding: 3px 6px; }
code, pre { font-family: monospace; }
"""


class QtMarkdownView(QTextBrowser):
    """Read-only Markdown. Links open in the browser only when clicked (http/https/mailto)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setOpenLinks(False)
        self.setOpenExternalLinks(False)
        self.document().setDefaultStyleSheet(_STYLE)
        self.document().setDocumentMargin(10)
        self.anchorClicked.connect(self._open_link)

    def set_markdown(self, text: str) -> None:
        self.document().setMarkdown(text or "", MARKDOWN_FEATURES)

    def loadResource(self, type: int, name: QUrl | str) -> Any:
        # Never load images or style sheets named in a response: not from disk, not
        # from the network.
        return None

    @staticmethod
    def _open_link(url: QUrl) -> None:
        if url.scheme() in ("http", "https", "mailto"):
            QDesktopServices.openUrl(url)
