"""The artifacts of a task as tabs; each viewer is made and loaded when its tab is first shown.

Moving between responses of the same task keeps the panel as it is (same page, same
zoom, same search), which is how experts compare responses.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QLabel, QTabWidget, QVBoxLayout, QWidget

from gradercal.model import Artifact, ArtifactKind
from gradercal.ui.viewers import create_viewer
from gradercal.ui.viewers.qt_base import QtArtifactViewer, file_label

#: ``loader(sha256)`` returns an artifact's bytes; it runs in worker threads.
Loader = Callable[[str], bytes]

KIND_LABELS = {
    ArtifactKind.PDF: "PDF",
    ArtifactKind.IMAGE: "Image",
    ArtifactKind.TABLE: "Table",
    ArtifactKind.SEQUENCE: "Sequence",
    ArtifactKind.STRUCTURE: "Structure",
    ArtifactKind.TEXT: "Text",
    ArtifactKind.URL: "Link",
}


class QtArtifactPanel(QWidget):
    """Tabs of artifact viewers for one task."""

    #: The viewer of the current tab has its content (or its error) on screen.
    current_ready = Signal()

    def __init__(self, loader: Loader, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.loader = loader
        self.task_key: object = None
        self.artifacts: tuple[Artifact, ...] = ()
        self.viewers: dict[int, QtArtifactViewer] = {}
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        self.tabs.setUsesScrollButtons(True)
        self.tabs.setElideMode(Qt.TextElideMode.ElideRight)
        self.tabs.currentChanged.connect(self._tab_changed)
        layout.addWidget(self.tabs)
        self.empty = QLabel("This task has no artifacts.")
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        layout.addWidget(self.empty)
        self.empty.hide()

    def set_task(self, key: object, artifacts: Sequence[Artifact]) -> None:
        """Show ``artifacts``; nothing changes when ``key`` names the task already shown."""
        if key == self.task_key and tuple(artifacts) == self.artifacts:
            return
        self.task_key = key
        self.artifacts = tuple(artifacts)
        self.tabs.blockSignals(True)
        while self.tabs.count():
            w = self.tabs.widget(0)
            self.tabs.removeTab(0)
            if w is not None:
                w.deleteLater()
        self.viewers = {}
        for i, a in enumerate(self.artifacts):
            holder = QWidget()
            QVBoxLayout(holder).setContentsMargins(0, 0, 0, 0)
            self.tabs.addTab(holder, f"{KIND_LABELS.get(a.kind, 'File')} · {a.title}")
            self.tabs.setTabToolTip(i, f"{a.title}\n{file_label(a) if a.sha256 else a.url}")
        self.tabs.blockSignals(False)
        self.tabs.setVisible(bool(self.artifacts))
        self.empty.setVisible(not self.artifacts)
        if self.artifacts:
            self.tabs.setCurrentIndex(0)
            self._tab_changed(0)
        else:
            self.current_ready.emit()

    def viewer(self, index: int) -> QtArtifactViewer:
        """The viewer of tab ``index`` (made and started on first use)."""
        v = self.viewers.get(index)
        if v is None:
            a = self.artifacts[index]
            sha = a.sha256

            def fetch(sha: str | None = sha) -> bytes:
                if not sha:
                    raise ValueError("no file is stored for this artifact")
                return self.loader(sha)

            v = create_viewer(a, fetch)
            v.ready.connect(lambda i=index: self._viewer_ready(i))
            holder = self.tabs.widget(index)
            layout = holder.layout() if holder is not None else None
            assert layout is not None
            layout.addWidget(v)
            self.viewers[index] = v
            v.start()
        return v

    def current_viewer(self) -> QtArtifactViewer | None:
        i = self.tabs.currentIndex()
        return self.viewer(i) if 0 <= i < len(self.artifacts) else None

    def is_current_ready(self) -> bool:
        v = self.current_viewer()
        return v is None or v.is_ready

    def _tab_changed(self, index: int) -> None:
        if 0 <= index < len(self.artifacts):
            v = self.viewer(index)
            if v.is_ready:
                self.current_ready.emit()

    def _viewer_ready(self, index: int) -> None:
        if index == self.tabs.currentIndex():
            self.current_ready.emit()

    def prefetch(self, artifacts: Sequence[Artifact]) -> None:
        """Get the first artifact of a task shown next ready in the background (PDFs)."""
        if not artifacts or artifacts[0].kind != ArtifactKind.PDF or not artifacts[0].sha256:
            return
        from gradercal.ui.viewers.qt_pdf_viewer import prefetch

        sha = artifacts[0].sha256
        prefetch(sha, lambda: self.loader(sha))

    def step(self, direction: int) -> None:
        n = self.tabs.count()
        if n:
            self.tabs.setCurrentIndex((self.tabs.currentIndex() + direction) % n)

    def act(self, ability: str, *args: int) -> bool:
        """Call one of the current viewer's optional abilities (``step_page``, ``change_zoom``,
        ``step_sheet``, ``open_link``); False when there is no viewer or it has none."""
        v = self.current_viewer()
        if v is None or not v.is_ready or v.error is not None:
            return False
        result: bool = getattr(v, ability)(*args)
        return result

    def focus_search(self) -> bool:
        """Focus the search box of the current viewer, or of the first PDF."""
        v = self.current_viewer()
        if v is not None and v.focus_search():
            return True
        for i, a in enumerate(self.artifacts):
            if a.kind == ArtifactKind.PDF:
                self.tabs.setCurrentIndex(i)
                return self.viewer(i).focus_search()
        return False
