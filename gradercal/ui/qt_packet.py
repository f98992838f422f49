"""Grading an offline packet in the app, and the banner that says what the window is on.

``gradercal gui FILE.gcpkg`` opens the packet with :func:`gradercal.db.packets.open_packet`
and grades into its working database (a folder beside the file). Durability comes from
that database: every verdict is committed there, with ``synchronous=FULL``, before the
app shows it as saved — a crash loses nothing acknowledged, and the next opening of the
packet packs what the file lacks. :class:`QtPacketController` also keeps the *file* up
to date, so that it can be mailed back at any moment: shortly after every submit, skip
or reopen, every :data:`AUTOSAVE_MS` when something changed, and when the window closes
(each save an atomic replace of the file).
"""

from __future__ import annotations

import contextlib
import sys
import time

from PySide6.QtCore import QObject, Qt, QTimer
from PySide6.QtWidgets import QLabel, QMainWindow, QSizePolicy, QVBoxLayout, QWidget

from gradercal.db.packets import PacketSession
from gradercal.errors import GradercalError

#: Pack the working database into the file this often when it changed (ms).
AUTOSAVE_MS = 60_000
#: Pack this long after the queue changed (a submit, skip, reopen), so bursts save once (ms).
DEBOUNCE_MS = 1_500

_STYLES = {
    "info": "background: palette(alternate-base); padding: 4px 8px;",
    "warning": "background: #fff3cd; color: #533f03; padding: 4px 8px;",
    "error": "background: #f8d7da; color: #58151c; padding: 4px 8px; font-weight: bold;",
}


def add_banner(window: QMainWindow, text: str, kind: str = "info") -> QLabel:
    """Show ``text`` in a strip across the top of ``window`` (one per window; replaced).

    The strip is a word-wrapped label above the window's central widget, in a vertical
    layout: it is as wide as the window and as tall as its text needs at that width
    (a label in a tool bar got the width Qt guesses for wrapped text, a narrow column
    of eight lines, and a tool bar's height does not follow the text).
    """
    banner = window.findChild(QLabel, "bannerLabel")
    if not isinstance(banner, QLabel):
        host = QWidget()
        host.setObjectName("bannerHost")
        layout = QVBoxLayout(host)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        banner = QLabel(host)
        banner.setObjectName("bannerLabel")
        banner.setWordWrap(True)
        banner.setTextFormat(Qt.TextFormat.PlainText)
        banner.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        banner.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Minimum)
        layout.addWidget(banner)
        central = window.takeCentralWidget()
        if central is not None:
            layout.addWidget(central, 1)
        window.setCentralWidget(host)
    banner.setText(text)
    banner.setStyleSheet(_STYLES.get(kind, _STYLES["info"]))
    banner.setAccessibleName(f"{kind}: {text}")
    banner.show()
    return banner


def banner_text(window: QMainWindow) -> str:
    """The banner's text ('' without a banner)."""
    label = window.findChild(QLabel, "bannerLabel")
    return label.text() if isinstance(label, QLabel) else ""


class QtPacketController(QObject):
    """Keeps an open packet's file up to date while the window grades into it.

    ``window`` must emit ``closed`` after its views have flushed (QtMainWindow does);
    the packet is then saved one last time and its database released.
    """

    def __init__(
        self,
        session: PacketSession,
        window: QMainWindow,
        *,
        autosave_ms: int = AUTOSAVE_MS,
        debounce_ms: int = DEBOUNCE_MS,
    ) -> None:
        super().__init__(window)
        self.session = session
        self.window = window
        self.saves = 0
        self.last_error: str | None = None
        self.last_save_s: float | None = None
        self._debounce = QTimer(self)
        self._debounce.setSingleShot(True)
        self._debounce.setInterval(debounce_ms)
        self._debounce.timeout.connect(self.save_if_changed)
        self._autosave = QTimer(self)
        self._autosave.setInterval(autosave_ms)
        self._autosave.timeout.connect(self.save_if_changed)
        self._autosave.start()
        self._hooked = False
        self._closed = False
        window.closed.connect(self.close)  # type: ignore[attr-defined]
        window.session_started.connect(self._hook_views)  # type: ignore[attr-defined]
        self._hook_views()
        notes = " ".join(w[:1].upper() + w[1:] + "." for w in session.warnings)
        add_banner(
            window,
            f"Offline packet {session.path.name} — grading as {session.grader} in "
            f"{session.benchmark}. Every verdict is saved at once (in {session.workdir.name}) "
            "and packed into the packet file after each response and when you close."
            + (f" {notes}" if notes else ""),
            "warning" if session.warnings else "info",
        )

    def _hook_views(self) -> None:
        grading = getattr(self.window, "grading", None)
        if grading is not None and not self._hooked:
            grading.queue_changed.connect(self._queue_changed)
            self._hooked = True
        review = getattr(self.window, "review", None)
        if review is not None:
            review.queue_changed.connect(self._queue_changed)

    def _queue_changed(self) -> None:
        if not self._closed:
            self._debounce.start()

    def save_if_changed(self) -> bool:
        """Pack the working database into the file when it holds something new.

        After :meth:`close` nothing (a queue change arriving late restarts no save).
        """
        if self._closed:
            return True
        try:
            if not self.session.has_unsaved_changes():
                return True
        except GradercalError as exc:
            return self._failed(str(exc))
        return self.save()

    def save(self) -> bool:
        """Pack now. A failure is shown (nothing is lost: the work stays in the folder)."""
        started = time.perf_counter()
        try:
            self.session.save()
        except GradercalError as exc:
            return self._failed(str(exc))
        except OSError as exc:
            return self._failed(f"could not save {self.session.path.name}: {exc}")
        self.saves += 1
        self.last_error = None
        self.last_save_s = time.perf_counter() - started
        self._status(f"Saved into {self.session.path.name}.")
        return True

    def _failed(self, text: str) -> bool:
        self.last_error = text
        self._status(text, 30_000)
        add_banner(self.window, text, "warning")
        return False

    def _status(self, text: str, ms: int = 5_000) -> None:
        with contextlib.suppress(RuntimeError):  # the window is already gone
            self.window.statusBar().showMessage(text, ms)

    def close(self) -> None:
        """Final save and release (when the window closes).

        The window's views have saved what was pending and stopped writing (see
        :meth:`gradercal.ui.qt_grading_view.QtGradingView.shutdown`), so the file packed
        here holds everything the window wrote.
        """
        self._closed = True
        self._debounce.stop()
        self._autosave.stop()
        try:
            self.session.close()
        except GradercalError as exc:
            self.last_error = str(exc)
            print(f"gradercal: {exc}", file=sys.stderr)
