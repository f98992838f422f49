"""Task review mode: per task, a 5-point survey (and a comment), saved at once per reviewer.

The reviewer sees the task (prompt, rubric, artifacts) — never a response, a model or
anyone else's verdict.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QButtonGroup,
    QFrame,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QRadioButton,
    QScrollArea,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from gradercal.db.grading import GradingStore, ReviewItem, ReviewTask
from gradercal.model import LIKERT, REVIEW_DIMENSIONS
from gradercal.ui.qt_markdown import QtMarkdownView
from gradercal.ui.qt_settings import QtAppSettings
from gradercal.ui.viewers.qt_artifact_panel import QtArtifactPanel


def rubric_markdown(item: ReviewItem) -> str:
    lines = ["**Rubric**", ""]
    for c in item.task.criteria:
        pts = f"{c.points:+d}".replace("-", "−")
        auto = " *(auto)*" if c.auto is not None else ""
        lines.append(f"- **{pts}** {c.text}{auto}")
    return "\n".join(lines)


class QtStatement(QFrame):
    """One survey statement with its five answers."""

    def __init__(self, index: int, statement: str) -> None:
        super().__init__()
        self.setFrameShape(QFrame.Shape.StyledPanel)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 6, 8, 6)
        self.label = QLabel(f"{index + 1}. {statement}")
        self.label.setWordWrap(True)
        layout.addWidget(self.label)
        # The five answers alone on their row, the meaning of the ends on a wrapped line
        # below: the row is narrow enough for the survey column of a 1024 px window
        # (with the ends' words beside the buttons it was cut off at every laptop size).
        row = QHBoxLayout()
        low, high = LIKERT[min(LIKERT)], LIKERT[max(LIKERT)]
        self.group = QButtonGroup(self)
        self.group.setExclusive(True)
        for value, text in LIKERT.items():
            b = QRadioButton(str(value))
            b.setToolTip(f"{value}: {text}")
            b.setFocusPolicy(Qt.FocusPolicy.NoFocus)
            self.group.addButton(b, value)
            row.addWidget(b)
        row.addStretch(1)
        layout.addLayout(row)
        self.scale_label = QLabel(f"{min(LIKERT)} = {low.lower()} · {max(LIKERT)} = {high.lower()}")
        self.scale_label.setWordWrap(True)
        self.scale_label.setEnabled(False)  # drawn in the palette's quieter text colour
        layout.addWidget(self.scale_label)
        self.answer_label = QLabel("")
        self.answer_label.setWordWrap(True)
        layout.addWidget(self.answer_label)
        self.group.idToggled.connect(self._show_answer)

    def _show_answer(self, _id: int, _checked: bool) -> None:
        v = self.value()
        self.answer_label.setText(f"→ {LIKERT[v]}" if v is not None else "not answered")

    def set_current(self, on: bool) -> None:
        font = self.label.font()
        font.setBold(on)
        self.label.setFont(font)
        self.setFrameShadow(QFrame.Shadow.Sunken if on else QFrame.Shadow.Plain)
        self.setLineWidth(2 if on else 1)

    def value(self) -> int | None:
        v = self.group.checkedId()
        return v if v in LIKERT else None

    def set_value(self, value: int | None) -> None:
        self.group.blockSignals(True)
        if value in LIKERT:
            self.group.button(value).setChecked(True)
        else:
            self.group.setExclusive(False)
            for b in self.group.buttons():
                b.setChecked(False)
            self.group.setExclusive(True)
        self.group.blockSignals(False)
        self._show_answer(0, False)


class QtReviewView(QWidget):
    item_ready = Signal()
    message = Signal(str)
    queue_changed = Signal()

    def __init__(
        self,
        store: GradingStore,
        grader: str,
        benchmark: str,
        settings: QtAppSettings,
        database: str,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.store = store
        self.grader = grader
        self.benchmark = benchmark
        self.settings = settings
        self.database = database
        self.tasks: list[ReviewTask] = []
        self.index = -1
        self.current: ReviewItem | None = None
        self.row = 0
        self._ready_pending = False
        self._build()
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)  # holds the focus for the 1–5 keys
        self._comment_timer = QTimer(self)
        self._comment_timer.setSingleShot(True)
        self._comment_timer.setInterval(600)
        self._comment_timer.timeout.connect(self.save)

    def _build(self) -> None:
        outer = QVBoxLayout(self)
        outer.setContentsMargins(4, 4, 4, 4)
        header = QHBoxLayout()
        self.title = QLabel("Task review")
        font = self.title.font()
        font.setBold(True)
        font.setPointSizeF(font.pointSizeF() * 1.25)
        self.title.setFont(font)
        header.addWidget(self.title)
        header.addStretch(1)
        self.position_label = QLabel("")
        header.addWidget(self.position_label)
        self.prev_button = QPushButton("◀ Previous task")
        self.next_button = QPushButton("Next task ▶")
        for b in (self.prev_button, self.next_button):
            b.setFocusPolicy(Qt.FocusPolicy.NoFocus)
            header.addWidget(b)
        outer.addLayout(header)

        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.prompt_view = QtMarkdownView()
        self.splitter.addWidget(self.prompt_view)
        self.artifacts = QtArtifactPanel(self.store.read_blob)
        self.splitter.addWidget(self.artifacts)
        survey = QWidget()
        sl = QVBoxLayout(survey)
        sl.setContentsMargins(4, 0, 4, 0)
        intro = QLabel(
            "How far do you agree? Keys: J/K move between statements, 1–5 answer, "
            "C writes a comment. Everything is saved at once."
        )
        intro.setWordWrap(True)
        sl.addWidget(intro)
        self.statements: list[QtStatement] = []
        for i, d in enumerate(REVIEW_DIMENSIONS):
            st = QtStatement(i, d.statement)
            st.group.idClicked.connect(lambda _v, k=i: self._clicked(k))
            self.statements.append(st)
            sl.addWidget(st)
        sl.addWidget(QLabel("Comment (optional)"))
        self.comment = QPlainTextEdit()
        self.comment.setPlaceholderText(
            "Anything the benchmark authors should know about this task"
        )
        self.comment.textChanged.connect(self._comment_changed)
        self.comment.installEventFilter(self)
        sl.addWidget(self.comment, 1)
        self.status = QLabel("")
        self.status.setWordWrap(True)
        sl.addWidget(self.status)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        # as needed: whatever the fonts, no answer is ever out of reach
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        self.survey_scroll = scroll
        scroll.setWidget(survey)
        self.splitter.addWidget(scroll)
        self.splitter.setSizes([2800, 4000, 3200])
        outer.addWidget(self.splitter, 1)
        self.prev_button.clicked.connect(lambda: self.open_index(self.index - 1))
        self.next_button.clicked.connect(lambda: self.open_index(self.index + 1))
        self.artifacts.current_ready.connect(self._check_ready)
        self._updating = False

    def eventFilter(self, obj: object, event: object) -> bool:
        from PySide6.QtCore import QEvent
        from PySide6.QtGui import QKeyEvent

        if obj is self.comment and isinstance(event, QEvent):
            if (
                event.type() == QEvent.Type.KeyPress
                and isinstance(event, QKeyEvent)
                and event.key() == Qt.Key.Key_Escape
            ):
                self.save()
                self.setFocus(Qt.FocusReason.ShortcutFocusReason)
                return True
            if event.type() == QEvent.Type.FocusOut:
                self.save()
        return super().eventFilter(obj, event)  # type: ignore[arg-type]

    # -- tasks ----------------------------------------------------------------------------------
    def load(self) -> None:
        self.tasks = self.store.review_tasks(self.grader, self.benchmark)
        if not self.tasks:
            self.title.setText("No tasks to review")
            self.item_ready.emit()
            return
        last = self.settings.resume_task(self.database, self.benchmark, self.grader)
        index = next((i for i, t in enumerate(self.tasks) if t.task_id == last), None)
        if index is None:
            index = next((i for i, t in enumerate(self.tasks) if t.n_answered < 4), 0)
        self.open_index(index)
        self.queue_changed.emit()

    def open_index(self, index: int) -> bool:
        if not (0 <= index < len(self.tasks)):
            self.message.emit("No more tasks in that direction.")
            return False
        self.save()
        task_id = self.tasks[index].task_id
        try:
            item = self.store.load_review(self.grader, self.benchmark, task_id)
        except Exception as exc:
            self.message.emit(f"Cannot open task {task_id}: {exc}")
            return False
        self.index, self.current = index, item
        self._ready_pending = True
        self.title.setText(f"Task review · {item.task.id}")
        self.position_label.setText(f"{index + 1} of {len(self.tasks)}")
        self.prompt_view.set_markdown(f"{item.task.prompt}\n\n---\n\n{rubric_markdown(item)}")
        self._updating = True
        for d, st in zip(REVIEW_DIMENSIONS, self.statements, strict=True):
            st.set_value(item.review.answers.get(d.key))
        self.comment.setPlainText(item.review.comment or "")
        self._updating = False
        self.set_row(0)
        self.prev_button.setEnabled(index > 0)
        self.next_button.setEnabled(index < len(self.tasks) - 1)
        self.artifacts.set_task(("review", self.benchmark, item.task.id), item.task.artifacts)
        self.settings.set_resume_task(self.database, self.benchmark, self.grader, item.task.id)
        self._show_saved()
        self.setFocus(Qt.FocusReason.OtherFocusReason)
        self._check_ready()
        return True

    def _check_ready(self) -> None:
        if self._ready_pending and self.artifacts.is_current_ready():
            self._ready_pending = False
            self.item_ready.emit()

    def next_item(self) -> None:
        self.open_index(self.index + 1)

    def previous_item(self) -> None:
        self.open_index(self.index - 1)

    # -- answering ------------------------------------------------------------------------------
    def set_row(self, row: int) -> None:
        self.row = min(max(row, 0), len(self.statements) - 1)
        for i, st in enumerate(self.statements):
            st.set_current(i == self.row)

    def move_statement(self, step: int) -> None:
        self.set_row(self.row + step)

    def answer(self, value: int) -> None:
        if value not in LIKERT or self.current is None:
            return
        self.statements[self.row].set_value(value)
        if self.save() and self.row < len(self.statements) - 1:
            self.set_row(self.row + 1)

    def _clicked(self, row: int) -> None:
        self.set_row(row)
        self.save()

    def _comment_changed(self) -> None:
        if not self._updating:
            self._comment_timer.start()

    def focus_comment(self) -> None:
        self.comment.setFocus(Qt.FocusReason.ShortcutFocusReason)

    def save(self) -> bool:
        self._comment_timer.stop()
        if self.current is None:
            return False
        answers = {
            d.key: st.value() for d, st in zip(REVIEW_DIMENSIONS, self.statements, strict=True)
        }
        comment = self.comment.toPlainText()
        current = self.current.review
        if dict(current.answers) == {k: v for k, v in answers.items() if v is not None} and (
            (current.comment or "") == comment.strip() or (current.comment or "") == comment
        ):
            return True
        try:
            saved = self.store.save_task_review(
                self.grader, self.benchmark, self.current.task.id, answers, comment
            )
        except Exception as exc:
            self.status.setText(f"Not saved: {exc}")
            self.message.emit(f"Not saved: {exc}")
            return False
        self.current = ReviewItem(
            self.current.task, saved, self.current.position, self.current.total
        )
        t = self.tasks[self.index]
        self.tasks[self.index] = ReviewTask(
            t.task_id, t.position, saved.n_answered, bool(saved.comment)
        )
        self._show_saved()
        self.queue_changed.emit()
        return True

    def _show_saved(self) -> None:
        if self.current is None:
            return
        n = self.current.review.n_answered
        self.status.setText(f"{n} of {len(self.statements)} statements answered · saved")

    def progress_text(self) -> str:
        done = sum(1 for t in self.tasks if t.n_answered == len(REVIEW_DIMENSIONS))
        return f"{done} / {len(self.tasks)} tasks reviewed"

    def shutdown(self) -> None:
        self.save()
        self.settings.sync()
