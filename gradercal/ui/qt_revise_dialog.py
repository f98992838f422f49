"""Revise one criterion from the coordinator window (issue #16): edit, see, say why, save.

The dialog shows the criterion as stored (text, points, levels, tags), lets the
coordinator edit it, and shows as they type the word-level difference with the stored
text and what saving would do — asked of the store itself with a dry run
(:meth:`gradercal.db.revisions.RevisionStore.revise_criterion` with ``dry_run=True``,
off the UI thread: the revision made and rolled back, who would get items back
included). Save needs a reason and records the revision with
``source="ui"`` under the coordinator's name. A problem (an empty text or reason, a
refused value, the task revised meanwhile, the database unreachable) is said in the
dialog and nothing is written.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QKeySequence, QPalette, QShortcut
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QFrame,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QSpinBox,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from gradercal.db.revisions import RevisionReport, RevisionStore
from gradercal.db.session import Database
from gradercal.errors import GradercalError, ValidationError
from gradercal.model import Criterion
from gradercal.ui import qt_workers
from gradercal.ui.revision_text import (
    CriterionDraft,
    consequences,
    criterion_changes,
    diff_html,
    parse_tags,
)

#: Wait this long after the last key before asking the store what saving would do.
PREVIEW_DELAY_MS = 300


def _dark(widget: QWidget) -> bool:
    return widget.palette().color(QPalette.ColorRole.Base).lightness() < 128


def _problem_text(exc: BaseException) -> str:
    if isinstance(exc, ValidationError):
        return "; ".join(p.message for p in exc.problems)
    if isinstance(exc, GradercalError):
        return str(exc)
    return f"database error: {exc}"


class QtReviseDialog(QDialog):
    """Edit one criterion of a stored task and save it as a new version of the task."""

    #: The revision was saved: its :class:`RevisionReport`.
    revised = Signal(object)
    #: A new preview is on screen (for tests and screenshots).
    preview_shown = Signal()

    def __init__(
        self,
        db: Database,
        benchmark: str | None,
        task_id: str,
        criterion_id: str,
        actor: str,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.db = db
        self.store = RevisionStore(db)
        self.benchmark = benchmark
        self.task_id = task_id
        self.criterion_id = criterion_id
        self.actor = actor
        self.criterion: Criterion | None = None
        self.version = 0
        #: the saved revision (None until Save succeeded)
        self.report: RevisionReport | None = None
        #: the last dry run shown: its report and the graders it would requeue
        self.preview: tuple[RevisionReport, tuple[str, ...]] | None = None
        self._generation = 0
        self.setObjectName("reviseDialog")
        self.setWindowTitle(f"Revise criterion {criterion_id} of task {task_id}")
        self.resize(820, 560)
        self._build()
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(PREVIEW_DELAY_MS)
        self._timer.timeout.connect(self.refresh_preview)
        self._load()

    # -- layout -------------------------------------------------------------------------
    def _build(self) -> None:
        layout = QVBoxLayout(self)
        layout.setSpacing(6)
        self.title = QLabel("")
        self.title.setObjectName("reviseTitle")
        self.title.setWordWrap(True)
        font = self.title.font()
        font.setBold(True)
        font.setPointSizeF(font.pointSizeF() * 1.15)
        self.title.setFont(font)
        layout.addWidget(self.title)

        form = QFormLayout()
        self.text = QPlainTextEdit()
        self.text.setObjectName("reviseText")
        self.text.setTabChangesFocus(True)
        self.text.setFixedHeight(self.text.fontMetrics().lineSpacing() * 4 + 14)
        form.addRow("&Text", self.text)
        self.points = QSpinBox()
        self.points.setObjectName("revisePoints")
        self.points.setRange(-1000, 1000)
        self.points.setToolTip("Negative points are a penalty when the criterion is met; not 0")
        form.addRow("&Points", self.points)
        self.levels = QSpinBox()
        self.levels.setObjectName("reviseLevels")
        self.levels.setRange(2, 10)
        self.levels.setToolTip("2: met / not met; 3 adds partial; up to 10 levels")
        form.addRow("&Levels", self.levels)
        self.tags = QLineEdit()
        self.tags.setObjectName("reviseTags")
        self.tags.setPlaceholderText("comma-separated, e.g. axis:accuracy, safety")
        form.addRow("T&ags", self.tags)
        layout.addLayout(form)

        changes_title = QLabel("What changes")
        changes_title.setFont(font)
        layout.addWidget(changes_title)
        self.diff = QTextBrowser()
        self.diff.setObjectName("reviseDiff")
        self.diff.setOpenLinks(False)
        self.diff.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        lines = self.diff.fontMetrics().lineSpacing()
        self.diff.setMinimumHeight(lines * 3 + 14)
        self.diff.setMaximumHeight(lines * 8 + 14)
        layout.addWidget(self.diff, 1)
        self.fields = QLabel("")
        self.fields.setObjectName("reviseFields")
        self.fields.setWordWrap(True)
        self.fields.setTextFormat(Qt.TextFormat.PlainText)
        layout.addWidget(self.fields)

        box = QFrame()
        box.setFrameShape(QFrame.Shape.StyledPanel)
        inner = QVBoxLayout(box)
        inner.setContentsMargins(8, 6, 8, 6)
        self.headline = QLabel("")
        self.headline.setObjectName("revisePreviewHead")
        self.headline.setWordWrap(True)
        self.headline.setTextFormat(Qt.TextFormat.PlainText)
        self.headline.setFont(font)
        inner.addWidget(self.headline)
        self.detail = QLabel("")
        self.detail.setObjectName("revisePreview")
        self.detail.setWordWrap(True)
        self.detail.setTextFormat(Qt.TextFormat.PlainText)
        inner.addWidget(self.detail)
        layout.addWidget(box)

        reason_form = QFormLayout()
        self.reason = QLineEdit()
        self.reason.setObjectName("reviseReason")
        self.reason.setMaxLength(2000)
        self.reason.setPlaceholderText("Why (required): kept in the history with the new version")
        reason_form.addRow("&Reason", self.reason)
        self.who = QLabel("")
        self.who.setObjectName("reviseActor")
        self.who.setTextFormat(Qt.TextFormat.PlainText)
        reason_form.addRow("Recorded as", self.who)
        layout.addLayout(reason_form)

        self.error = QLabel("")
        self.error.setObjectName("reviseError")
        self.error.setWordWrap(True)
        self.error.setTextFormat(Qt.TextFormat.PlainText)
        palette = self.error.palette()
        palette.setColor(QPalette.ColorRole.WindowText, Qt.GlobalColor.red)
        self.error.setPalette(palette)
        layout.addWidget(self.error)
        layout.addStretch(0)
        # Fixed heights for what changes while typing (the changed fields, the preview, the
        # refusal): nothing below them moves, so a click aimed at Reason lands there.
        for label, n in ((self.fields, 2), (self.headline, 2), (self.detail, 4), (self.error, 2)):
            label.setFixedHeight(label.fontMetrics().lineSpacing() * n + 4)
            label.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)

        self.buttons = QDialogButtonBox()
        self.save_button = QPushButton("Save revision")
        self.save_button.setObjectName("reviseSave")
        self.save_button.setToolTip("Save as a new version of the task (Ctrl+Return)")
        self.save_button.setAutoDefault(False)
        self.buttons.addButton(self.save_button, QDialogButtonBox.ButtonRole.AcceptRole)
        cancel = self.buttons.addButton(QDialogButtonBox.StandardButton.Cancel)
        if cancel is not None:
            cancel.setAutoDefault(False)
        self.buttons.rejected.connect(self.reject)
        self.save_button.clicked.connect(self.save)
        layout.addWidget(self.buttons)
        for key in ("Ctrl+Return", "Ctrl+Enter"):
            shortcut = QShortcut(QKeySequence(key), self)
            shortcut.activated.connect(self.save)

        self.text.textChanged.connect(self._edited)
        self.points.valueChanged.connect(self._edited)
        self.levels.valueChanged.connect(self._edited)
        self.tags.textChanged.connect(self._edited)
        self.reason.textChanged.connect(lambda _t: self.error.setText(""))

    # -- data ---------------------------------------------------------------------------
    def _load(self) -> None:
        try:
            task, version = self.store.current(self.benchmark, self.task_id)
            criterion = task.criterion(self.criterion_id)
        except KeyError:
            self._cannot(f"task {self.task_id!r} has no criterion {self.criterion_id!r}")
            return
        except Exception as exc:  # a missing task, the database unreachable: said, not raised
            self._cannot(_problem_text(exc))
            return
        self.criterion, self.version = criterion, version
        self.title.setText(
            f"Task {self.task_id} · criterion {self.criterion_id} · now version {version}"
        )
        for w in (self.text, self.points, self.levels, self.tags):
            w.blockSignals(True)
        self.text.setPlainText(criterion.text)
        self.points.setValue(criterion.points)
        self.levels.setValue(criterion.levels)
        self.tags.setText(", ".join(criterion.tags))
        for w in (self.text, self.points, self.levels, self.tags):
            w.blockSignals(False)
        self.who.setText(self.actor or "(nobody: name the coordinator first)")
        self._show_diff()
        self._show_consequences(None)

    def _cannot(self, why: str) -> None:
        self.title.setText(f"Cannot revise criterion {self.criterion_id} of {self.task_id}")
        self.error.setText(why)
        for w in (self.text, self.points, self.levels, self.tags, self.reason, self.save_button):
            w.setEnabled(False)

    def draft(self) -> CriterionDraft | None:
        """The edit as typed (None when the criterion could not be read)."""
        if self.criterion is None:
            return None
        return CriterionDraft(
            self.criterion,
            self.text.toPlainText(),
            self.points.value(),
            self.levels.value(),
            parse_tags(self.tags.text()),
            self.reason.text(),
        )

    # -- live display ---------------------------------------------------------------------
    def _edited(self) -> None:
        self.error.setText("")
        self._show_diff()
        self._generation += 1  # a preview on its way is for an older edit
        self.headline.setText("Working out what this would change…")
        self.detail.setText("")
        self._timer.start()

    def _show_diff(self) -> None:
        draft = self.draft()
        if draft is None:
            return
        self.diff.setHtml(diff_html(draft.old.text, draft.text.strip(), dark=_dark(self)))
        self.fields.setText(" · ".join(criterion_changes(draft.old, draft.revised())))

    def refresh_preview(self) -> None:
        """Ask the store, off the UI thread, what saving the edit would do."""
        self._timer.stop()
        draft = self.draft()
        if draft is None:
            return
        changes = draft.changes()
        if not changes:
            self._show_consequences(None)
            self.preview_shown.emit()
            return
        if "text" in changes and not draft.text.strip():
            self.headline.setText("The criterion's text cannot be empty")
            self.detail.setText("")
            self.preview_shown.emit()
            return
        generation = self._generation
        qt_workers.submit(
            self._dry_run,
            changes,
            done=lambda result: self._preview_done(generation, result),
            failed=lambda exc: self._preview_failed(generation, exc),
        )

    def _dry_run(self, changes: dict[str, Any]) -> tuple[RevisionReport, tuple[str, ...]]:
        """(worker thread) The dry run's report and the graders it would requeue."""
        report = self.store.revise_criterion(
            self.benchmark,
            self.task_id,
            self.criterion_id,
            **changes,
            reason=None,
            actor=self.actor,
            source="ui",
            dry_run=True,
        )
        return report, report.requeued

    def _preview_done(
        self, generation: int, result: tuple[RevisionReport, tuple[str, ...]]
    ) -> None:
        if generation != self._generation:
            return
        self.preview = result
        self._show_consequences(result)
        self.preview_shown.emit()

    def _preview_failed(self, generation: int, exc: BaseException) -> None:
        if generation != self._generation:
            return
        self.preview = None
        self.headline.setText("Cannot be saved as it is")
        self.detail.setText(_problem_text(exc))
        self.preview_shown.emit()

    def _show_consequences(self, result: tuple[RevisionReport, tuple[str, ...]] | None) -> None:
        if result is None:
            self.headline.setText("No change yet")
            self.detail.setText("Edit the text, points, levels or tags to see what it does.")
            return
        head, detail = consequences(*result)
        self.headline.setText(head)
        self.detail.setText(detail)

    # -- saving ---------------------------------------------------------------------------
    def save(self) -> bool:
        """Save the revision; on any problem say it here and write nothing."""
        draft = self.draft()
        if draft is None:
            return False
        problems = draft.problems()
        if not self.actor.strip():
            problems.append(("actor", "Nobody to record it under: name the coordinator first."))
        if problems:
            self.error.setText(" ".join(msg for _f, msg in problems))
            field = problems[0][0]
            target = {"text": self.text, "points": self.points, "reason": self.reason}.get(field)
            if target is not None:
                target.setFocus(Qt.FocusReason.OtherFocusReason)
            return False
        try:
            _task, version = self.store.current(self.benchmark, self.task_id)
            if version != self.version:
                self.error.setText(
                    f"Task {self.task_id} was revised meanwhile (now version {version}): "
                    "close this dialog and open it again to edit the current version."
                )
                return False
            report = self.store.revise_criterion(
                self.benchmark,
                self.task_id,
                self.criterion_id,
                **draft.changes(),
                reason=draft.reason.strip(),
                actor=self.actor.strip(),
                source="ui",
            )
        except Exception as exc:  # refused or unreachable: the dialog stays, nothing written
            self.error.setText(f"Not saved: {_problem_text(exc)}")
            return False
        self.report = report
        self.revised.emit(report)
        self.accept()
        return True


__all__ = ["PREVIEW_DELAY_MS", "QtReviseDialog"]
