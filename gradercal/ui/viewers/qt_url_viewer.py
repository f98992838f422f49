"""Links: title and address. Never fetched; opened in the browser only when asked."""

from __future__ import annotations

from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QDesktopServices, QGuiApplication
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from gradercal.model import Artifact
from gradercal.ui.shortcuts import keys
from gradercal.ui.viewers.qt_base import Fetch, QtArtifactViewer

SAFE_SCHEMES = ("http", "https", "ftp")


class QtUrlViewer(QtArtifactViewer):
    def __init__(
        self, artifact: Artifact, fetch: Fetch | None = None, parent: QWidget | None = None
    ):
        super().__init__(artifact, None, parent)

    def start(self) -> None:
        if self._started:
            return
        self._started = True
        url = (self.artifact.url or "").strip()
        qurl = QUrl(url)
        if not url or not qurl.isValid() or qurl.scheme().lower() not in SAFE_SCHEMES:
            self.show_error(f"{url or 'no address'!r} is not an http, https or ftp address")
            return
        body = QWidget()
        layout = QVBoxLayout(body)
        layout.setContentsMargins(16, 16, 16, 16)
        title = QLabel(self.artifact.title)
        font = title.font()
        font.setBold(True)
        font.setPointSizeF(font.pointSizeF() * 1.2)
        title.setFont(font)
        title.setWordWrap(True)
        title.setTextFormat(Qt.TextFormat.PlainText)
        layout.addWidget(title)
        self.address = QLabel(url)
        self.address.setTextFormat(Qt.TextFormat.PlainText)
        self.address.setWordWrap(True)
        self.address.setTextInteractionFlags(
            Qt.TextInteractionFlag.TextSelectableByMouse
            | Qt.TextInteractionFlag.TextSelectableByKeyboard
        )
        layout.addWidget(self.address)
        host = qurl.host() or url
        note = QLabel(
            f"This link points to {host}. gradercal does not fetch it; "
            "open it in your browser only if you need to."
        )
        note.setWordWrap(True)
        layout.addWidget(note)
        row = QHBoxLayout()
        self.open_button = QPushButton("Open in browser")
        self.open_button.setToolTip(f"Open in browser ({' or '.join(keys('artifact.open_link'))})")
        self.open_button.clicked.connect(self.open_in_browser)
        row.addWidget(self.open_button)
        copy = QPushButton("Copy address")
        copy.clicked.connect(lambda: QGuiApplication.clipboard().setText(url))
        row.addWidget(copy)
        row.addStretch(1)
        layout.addLayout(row)
        layout.addStretch(1)
        self.set_content(body)
        self.mark_ready()

    def open_link(self) -> bool:
        if self.error is not None or not self.is_ready:
            return False
        self.open_in_browser()
        return True

    def open_in_browser(self) -> bool:
        return QDesktopServices.openUrl(QUrl((self.artifact.url or "").strip()))


__all__ = ["Fetch", "QtUrlViewer"]
