"""The frame every coordinator operation dialog shares (issue #33).

A form on top, then a progress bar and the outcome: what was done, or why it was
refused, in words (a :class:`~gradercal.errors.ValidationError`'s problems one per line
as ``file:line: field: message``). The work runs in a worker thread
(:func:`gradercal.ui.qt_workers.submit`) so the window stays responsive; its progress
reaches the bar through a queued signal. ``Ctrl+Return`` runs the dialog's main
action, ``Esc`` closes it. :func:`present` opens a dialog in front of its window.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from gradercal.errors import GradercalError
from gradercal.ui import qt_workers
from gradercal.ui.coordinator_ops import Outcome


def present(dialog: QDialog) -> QDialog:
    """Show ``dialog`` in front of its parent window, window-modal (the main window
    stays drawn, and the dialog can never end up behind it)."""
    dialog.setWindowModality(Qt.WindowModality.WindowModal)
    dialog.show()
    dialog.raise_()
    dialog.activateWindow()
    return dialog


def refusal_text(exc: BaseException) -> str:
    """Why an operation did not happen, in words (never a traceback)."""
    if isinstance(exc, GradercalError):
        return f"Not done: {exc}"
    if isinstance(exc, OSError):
        where = f"{exc.filename}: " if exc.filename else ""
        return f"Not done: {where}{exc.strerror or exc}"
    return f"Not done: an unexpected error ({type(exc).__name__}: {exc})"


class _ProgressRelay(QObject):
    """Carries (stage, done, total) from the worker thread to the UI thread."""

    step = Signal(str, int, int)


class QtOpsDialog(QDialog):
    """A form, a main button, a progress bar and the outcome."""

    #: Emitted on the UI thread with the Outcome of a successful run.
    succeeded = Signal(object)

    def __init__(self, title: str, action: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(title)
        self.setMinimumWidth(520)
        self.form = QFormLayout()
        layout = QVBoxLayout(self)
        layout.addLayout(self.form)
        self.progress = QProgressBar()
        self.progress.setObjectName("opsProgress")
        self.progress.setTextVisible(True)
        self.progress.hide()
        layout.addWidget(self.progress)
        self.output = QPlainTextEdit()
        self.output.setObjectName("opsOutput")
        self.output.setReadOnly(True)
        self.output.setMinimumHeight(110)
        self.output.setPlaceholderText("What was done, or why not, appears here.")
        layout.addWidget(self.output, 1)
        self.buttons = QDialogButtonBox()
        self.run_button = QPushButton(action)
        self.run_button.setObjectName("opsRun")
        self.run_button.setDefault(True)
        self.run_button.setToolTip(f"{action.replace('&', '')} (Ctrl+Return)")
        self.buttons.addButton(self.run_button, QDialogButtonBox.ButtonRole.ActionRole)
        self.close_button = self.buttons.addButton(QDialogButtonBox.StandardButton.Close)
        self.close_button.clicked.connect(self.reject)
        self.run_button.clicked.connect(self.start)
        layout.addWidget(self.buttons)
        for keys in ("Ctrl+Return", "Ctrl+Enter"):
            QShortcut(QKeySequence(keys), self, self.start)
        self._relay = _ProgressRelay(self)
        self._relay.step.connect(self._step)
        #: The last outcome (None before the first success).
        self.outcome: Outcome | None = None
        #: The last refusal's text ("" when the last run succeeded).
        self.refusal = ""
        self.busy = False

    # -- to override ---------------------------------------------------------------------------
    def work(self) -> tuple[Callable[..., Outcome], tuple[Any, ...]] | str:
        """The function to run and its arguments, or why the form cannot run (words)."""
        raise NotImplementedError

    def finished_ok(self, outcome: Outcome) -> None:
        """Called after a success, before ``succeeded`` is emitted."""

    # -- running -------------------------------------------------------------------------------
    def report_progress(self, stage: str, done: int, total: int) -> None:
        """Thread-safe: move the bar (called from the worker thread)."""
        self._relay.step.emit(stage, done, total)

    def _step(self, stage: str, done: int, total: int) -> None:
        self.progress.show()
        self.progress.setMaximum(max(total, 1))
        self.progress.setValue(min(done, max(total, 1)))
        self.progress.setFormat(f"{stage}: %v of %m")

    def start(self) -> None:
        """Run the main action in a worker thread (ignored while one runs)."""
        if self.busy:
            return
        job = self.work()
        if isinstance(job, str):
            self._refuse(job)
            return
        self.run_job(*job)

    def run_job(self, fn: Callable[..., Outcome], args: tuple[Any, ...]) -> None:
        """Run ``fn(*args)`` in a worker thread; its Outcome goes to the output."""
        if self.busy:
            return
        self.busy = True
        self.run_button.setEnabled(False)
        self.output.setPlainText("Working…")
        self.progress.show()
        self.progress.setRange(0, 0)  # busy until the first step
        qt_workers.submit(fn, *args, done=self._done, failed=self._failed)

    def _done(self, outcome: Outcome) -> None:
        self.busy = False
        self.run_button.setEnabled(True)
        self.progress.setRange(0, 1)
        self.progress.setValue(1)
        self.progress.setFormat("done")
        self.outcome = outcome
        self.refusal = ""
        self.output.setPlainText(outcome.text())
        self.finished_ok(outcome)
        self.succeeded.emit(outcome)

    def _failed(self, exc: BaseException) -> None:
        self.busy = False
        self.run_button.setEnabled(True)
        self.progress.hide()
        self._refuse(refusal_text(exc))

    def _refuse(self, text: str) -> None:
        self.refusal = text if text.startswith("Not done") else f"Not done: {text}"
        self.output.setPlainText(self.refusal)

    def reject(self) -> None:
        if self.busy:  # the work would go on unseen: say so instead
            self.output.appendPlainText("Still working: close when it has finished.")
            return
        super().reject()


def hint(text: str) -> QLabel:
    """A wrapped, muted explanation line for a form."""
    label = QLabel(text)
    label.setWordWrap(True)
    label.setEnabled(False)
    return label
