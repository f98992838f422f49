"""The frame every artifact viewer shares: loading off the UI thread, a clear error panel.

A viewer gets the artifact (a :class:`gradercal.model.Artifact`) and a ``fetch``
callable that returns its bytes (it runs in a worker thread). ``prepare(data)`` also
runs in the worker (parsing, no widgets); ``present(prepared)`` builds the widgets on
the UI thread. Any exception on the way ends in :meth:`show_error`: the tab shows what
went wrong and the app keeps working. ``ready`` is emitted once the content — or the
error — is on screen.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Qt, QThreadPool, Signal
from PySide6.QtWidgets import (
    QLabel,
    QProgressBar,
    QStackedLayout,
    QVBoxLayout,
    QWidget,
)

from gradercal.model import Artifact, ArtifactKind
from gradercal.ui import qt_workers

Fetch = Callable[[], bytes]

_KIND_WORDS = {
    ArtifactKind.PDF: "a PDF",
    ArtifactKind.IMAGE: "an image",
    ArtifactKind.TABLE: "a table (CSV, TSV, XLSX)",
    ArtifactKind.SEQUENCE: "a FASTA or GenBank file",
    ArtifactKind.STRUCTURE: "a PDB, mmCIF, SDF or MOL file",
    ArtifactKind.TEXT: "a text file",
    ArtifactKind.URL: "a link",
}


def file_label(artifact: Artifact) -> str:
    return artifact.original_name or (artifact.path or "").rsplit("/", 1)[-1] or artifact.title


def human_size(n: int | None) -> str:
    if n is None:
        return "size unknown"
    size = float(n)
    for unit in ("bytes", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} bytes"


def describe_error(exc: BaseException) -> str:
    """A short, human sentence for an exception raised while reading a file."""
    text = str(exc).strip() or type(exc).__name__
    if isinstance(exc, ValueError | OSError):
        return text
    return f"{type(exc).__name__}: {text}"


class QtMessagePanel(QWidget):
    """A centred, word-wrapped message (loading notice or error)."""

    def __init__(self, title: str, detail: str = "", *, busy: bool = False) -> None:
        super().__init__()
        layout = QVBoxLayout(self)
        layout.addStretch(1)
        self.title = QLabel(title)
        self.title.setObjectName("messageTitle")
        self.title.setWordWrap(True)
        self.title.setAlignment(Qt.AlignmentFlag.AlignCenter)
        font = self.title.font()
        font.setBold(True)
        self.title.setFont(font)
        layout.addWidget(self.title)
        self.detail = QLabel(detail)
        self.detail.setWordWrap(True)
        self.detail.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.detail.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.detail)
        if busy:
            bar = QProgressBar()
            bar.setRange(0, 0)
            bar.setMaximumWidth(240)
            bar.setTextVisible(False)
            layout.addWidget(bar, 0, Qt.AlignmentFlag.AlignHCenter)
        layout.addStretch(2)


class QtArtifactViewer(QWidget):
    """Base class: subclasses implement :meth:`prepare` and :meth:`present`."""

    ready = Signal()

    #: Thread pool the bytes are fetched and prepared in (None = Qt's global pool).
    pool: QThreadPool | None = None

    def __init__(self, artifact: Artifact, fetch: Fetch | None, parent: QWidget | None = None):
        super().__init__(parent)
        self.artifact = artifact
        self.fetch = fetch
        self.error: str | None = None
        self.is_ready = False
        self._stack = QStackedLayout(self)
        self._loading = QtMessagePanel(
            f"Opening {file_label(artifact)}…", human_size(artifact.size), busy=True
        )
        self._stack.addWidget(self._loading)
        self._started = False

    # -- life cycle ---------------------------------------------------------------------------
    def start(self) -> None:
        """Begin loading (once). Called when the tab is first shown."""
        if self._started:
            return
        self._started = True
        qt_workers.submit(
            self._load_in_worker, done=self._on_loaded, failed=self._on_failed, pool=self.pool
        )

    def _load_in_worker(self) -> Any:
        if self.fetch is None:
            raise ValueError("no file is stored for this artifact")
        return self.prepare(self.fetch())

    def prepare(self, data: bytes) -> Any:
        """Parse the bytes (worker thread; no widgets here)."""
        return data

    def present(self, prepared: Any) -> None:
        """Build the content widgets from :meth:`prepare`'s result (UI thread)."""
        raise NotImplementedError

    def _on_loaded(self, prepared: Any) -> None:
        try:
            self.present(prepared)
        except Exception as exc:  # a viewer bug or odd data must not take the app down
            self.show_error(describe_error(exc))
            return
        self.mark_ready()

    def _on_failed(self, exc: BaseException) -> None:
        self.show_error(describe_error(exc))

    def set_content(self, widget: QWidget) -> None:
        self._stack.addWidget(widget)
        self._stack.setCurrentWidget(widget)

    def mark_ready(self) -> None:
        if not self.is_ready:
            self.is_ready = True
            self.ready.emit()

    def show_error(self, reason: str) -> None:
        what = _KIND_WORDS.get(self.artifact.kind, "a file")
        self.error = reason
        panel = QtMessagePanel(
            f"Cannot show {file_label(self.artifact)}",
            f"{reason}\n\nThe file may be damaged, or it is not {what}. "
            "The rest of the task is unaffected.",
        )
        panel.setObjectName("artifactError")
        self.set_content(panel)
        self.mark_ready()

    # -- optional abilities (the window's keys call them; False: not this kind) ----------------
    def focus_search(self) -> bool:
        """Put the focus in the viewer's search box; False when it has none."""
        return False

    def step_page(self, direction: int) -> bool:
        """Go one page on (+1) or back (-1); False when the viewer has no pages."""
        return False

    def change_zoom(self, direction: int) -> bool:
        """Zoom in (+1), out (-1) or fit to the pane (0); False when it cannot zoom."""
        return False

    def step_sheet(self, direction: int) -> bool:
        """Show the next (+1) or previous (-1) sheet; False without several sheets."""
        return False

    def open_link(self) -> bool:
        """Open the artifact's address in the browser; False when it is not a link."""
        return False
