"""The rubric panel: the criteria list, the live score, and the editor of the current criterion.

It only displays and forwards the grader's intentions as signals; the grading view
decides, saves and updates the state.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QModelIndex, QObject, QPersistentModelIndex, Qt, QTimer, Signal
from PySide6.QtGui import (
    QColor,
    QFont,
    QFontMetrics,
    QKeyEvent,
    QPalette,
    QResizeEvent,
    QTextLayout,
)
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QFrame,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QTableView,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from gradercal.ui.grading_state import RubricRow, ScoreSummary
from gradercal.ui.inline_html import to_plain
from gradercal.ui.qt_rubric_model import (
    POINTS_COLUMN,
    TEXT_COLUMN,
    VERDICT_COLUMN,
    QtRubricModel,
    changed_color,
    verdict_color,
)
from gradercal.ui.qt_widgets import flow_bar

#: Lines of a criterion's text shown in its row of the list (the rest is elided; the
#: editor below the list shows the current criterion whole, the tooltip any criterion):
#: on a 720-pixel screen a long rubric still shows five or more criteria at a time.
ROW_LINES = 2
#: Lines of the Guidelines panel before it scrolls (it is sized to shorter content).
GUIDELINE_LINES = 3


def elide_lines(text: str, font: QFont, width: int, lines: int) -> str:
    """``text`` cut to what wraps into ``lines`` lines of ``width`` pixels, its last
    line ending in "…" when something was cut (the text itself when it fits). The lines
    kept are joined by U+2028: an item view drops a plain newline's space."""
    if width <= 0 or lines <= 0:
        return text
    metrics = QFontMetrics(font)
    layout = QTextLayout(text.replace("\n", " "), font)
    layout.beginLayout()
    starts: list[int] = []
    while True:
        line = layout.createLine()
        if not line.isValid():
            break
        line.setLineWidth(width)
        starts.append(line.textStart())
        if len(starts) > lines:
            break
    layout.endLayout()
    if len(starts) <= lines:
        return text
    flat = layout.text()
    head = flat[: starts[lines - 1]].rstrip()
    tail = metrics.elidedText(flat[starts[lines - 1] :], Qt.TextElideMode.ElideRight, width)
    return f"{head}\u2028{tail}" if head else tail  # a line separator: a view keeps it


class _CriterionDelegate(QStyledItemDelegate):
    """Draws (and sizes) a criterion's text cut to :data:`ROW_LINES` lines."""

    def initStyleOption(
        self, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex
    ) -> None:
        super().initStyleOption(option, index)
        if index.column() != TEXT_COLUMN or not option.text:
            return
        widget = option.widget
        style = widget.style() if widget is not None else None
        margin = style.pixelMetric(QStyle.PixelMetric.PM_FocusFrameHMargin) + 1 if style else 3
        width = option.rect.width() - 2 * margin - 2
        option.text = elide_lines(option.text, option.font, width, ROW_LINES)


class QtRubricTable(QTableView):
    """The criteria list. Space scrolls the response; digits set a level. A row is as
    tall as its wrapped text up to :data:`ROW_LINES` lines."""

    scroll_requested = Signal(int)
    level_requested = Signal(int)

    def __init__(self) -> None:
        super().__init__()
        self._heights = QTimer(self)
        self._heights.setSingleShot(True)
        self._heights.setInterval(0)
        self._heights.timeout.connect(self.fit_rows)
        self.setItemDelegateForColumn(TEXT_COLUMN, _CriterionDelegate(self))

    def schedule_row_heights(self) -> None:
        """Recompute the wrapped rows' heights once the column widths have settled."""
        self._heights.start()

    def row_cap(self) -> int:
        """The tallest a row gets, in pixels: :data:`ROW_LINES` lines and the cell margins."""
        return self.fontMetrics().lineSpacing() * ROW_LINES + 8

    def fit_rows(self) -> None:
        """Rows as tall as their wrapped text, capped at :meth:`row_cap`."""
        self.resizeRowsToContents()
        cap = self.row_cap()
        for row in range(self.model().rowCount() if self.model() is not None else 0):
            if self.rowHeight(row) > cap:
                self.setRowHeight(row, cap)

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self.schedule_row_heights()

    def keyPressEvent(self, event: QKeyEvent) -> None:
        key = event.key()
        mods = event.modifiers() & ~Qt.KeyboardModifier.KeypadModifier
        if key == Qt.Key.Key_Space:
            up = bool(mods & Qt.KeyboardModifier.ShiftModifier)
            self.scroll_requested.emit(-1 if up else 1)
            return
        if Qt.Key.Key_0 <= key <= Qt.Key.Key_9 and mods == Qt.KeyboardModifier.NoModifier:
            self.level_requested.emit(int(key) - int(Qt.Key.Key_0))
            return
        super().keyPressEvent(event)


class QtRubricPanel(QWidget):
    current_changed = Signal(int)
    verdict_requested = Signal(object)  # "met" | "partial" | "not_met" | None
    text_edited = Signal()  # rationale or note typed (the view debounces)
    unclear_toggled = Signal(bool)
    editing_done = Signal()  # Esc in an editor, or focus left it
    guidelines_fold_requested = Signal(bool)  # the Guidelines title clicked: fold (True) or not

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = QtRubricModel()
        self._updating = False
        #: The response is submitted or skipped: everything is shown, nothing editable.
        self.read_only = False
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(4)

        self.score_label = QLabel("")
        self.score_label.setObjectName("scoreLabel")
        self.score_label.setWordWrap(True)
        font = self.score_label.font()
        font.setBold(True)
        self.score_label.setFont(font)
        self.score_label.setContentsMargins(6, 4, 6, 0)
        layout.addWidget(self.score_label)

        self.table = QtRubricTable()
        self.table.setModel(self.model)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setWordWrap(True)
        self.table.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.table.setShowGrid(False)
        self.table.setAlternatingRowColors(True)
        self.table.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.table.verticalHeader().setVisible(False)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(VERDICT_COLUMN, QHeaderView.ResizeMode.Fixed)
        header.setSectionResizeMode(POINTS_COLUMN, QHeaderView.ResizeMode.Fixed)
        header.setSectionResizeMode(TEXT_COLUMN, QHeaderView.ResizeMode.Stretch)
        header.sectionResized.connect(lambda *_: self.table.schedule_row_heights())
        self.table.setTabKeyNavigation(False)
        self.table.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOn)
        layout.addWidget(self.table, 1)

        editor = QFrame()
        editor.setFrameShape(QFrame.Shape.StyledPanel)
        ed = QVBoxLayout(editor)
        ed.setContentsMargins(6, 6, 6, 6)
        ed.setSpacing(4)
        self.criterion_label = QLabel("")
        self.criterion_label.setWordWrap(True)
        self.criterion_label.setTextFormat(Qt.TextFormat.PlainText)
        self.criterion_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        ed.addWidget(self.criterion_label)
        self.meta_label = QLabel("")
        self.meta_label.setWordWrap(True)
        self.meta_label.setTextFormat(Qt.TextFormat.PlainText)
        self.meta_label.setForegroundRole(self.meta_label.foregroundRole())
        ed.addWidget(self.meta_label)
        self.auto_label = QLabel("")
        self.auto_label.setWordWrap(True)
        self.auto_label.setTextFormat(Qt.TextFormat.PlainText)
        ed.addWidget(self.auto_label)

        # What changed in the criterion since the grader's verdict (hidden otherwise).
        self.changed_box = QFrame()
        self.changed_box.setObjectName("changedBox")
        self.changed_box.setFrameShape(QFrame.Shape.StyledPanel)
        self.changed_box.setAutoFillBackground(True)
        cl = QVBoxLayout(self.changed_box)
        cl.setContentsMargins(6, 4, 6, 4)
        cl.setSpacing(2)
        self.changed_title = QLabel("")
        self.changed_title.setObjectName("changedTitle")
        self.changed_title.setWordWrap(True)
        self.changed_title.setTextFormat(Qt.TextFormat.PlainText)
        changed_font = self.changed_title.font()
        changed_font.setBold(True)
        self.changed_title.setFont(changed_font)
        cl.addWidget(self.changed_title)
        self.changed_diff = QLabel("")
        self.changed_diff.setObjectName("changedDiff")
        self.changed_diff.setWordWrap(True)
        self.changed_diff.setTextFormat(Qt.TextFormat.RichText)
        self.changed_diff.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        cl.addWidget(self.changed_diff)
        self.changed_hint = QLabel("")
        self.changed_hint.setObjectName("changedHint")
        self.changed_hint.setWordWrap(True)
        self.changed_hint.setTextFormat(Qt.TextFormat.PlainText)
        cl.addWidget(self.changed_hint)
        self.changed_box.setVisible(False)
        ed.addWidget(self.changed_box)

        # The buttons wrap to a second row in a narrow pane instead of widening it.
        row = flow_bar(ed, spacing=4)
        self.buttons: dict[str | None, QPushButton] = {}
        for verdict, text in (
            ("met", "✓ Met (M)"),
            ("partial", "◐ Partial (P)"),
            ("not_met", "✗ Not met (N)"),
            (None, "Clear (⌫)"),
        ):
            b = QPushButton(text)
            b.setCheckable(verdict is not None)
            b.setFocusPolicy(Qt.FocusPolicy.NoFocus)
            b.clicked.connect(lambda _checked=False, v=verdict: self.verdict_requested.emit(v))
            row.add_widget(b)
            self.buttons[verdict] = b

        self.rationale = QPlainTextEdit()
        self.rationale.setPlaceholderText("Rationale (R) — optional. Esc returns to the rubric.")
        self.rationale.setTabChangesFocus(True)
        self.rationale.setFixedHeight(self.rationale.fontMetrics().lineSpacing() * 3 + 14)
        ed.addWidget(self.rationale)
        unclear_row = QHBoxLayout()
        self.unclear = QCheckBox("Criterion unclear  (U)")
        self.unclear.setFocusPolicy(Qt.FocusPolicy.TabFocus)
        unclear_row.addWidget(self.unclear)
        self.note = QLineEdit()
        self.note.setPlaceholderText("What is unclear about this criterion?")
        self.note.setEnabled(False)
        unclear_row.addWidget(self.note, 1)
        ed.addLayout(unclear_row)
        layout.addWidget(editor, 0)

        # The benchmark's grading instructions and the answered clarifications of the
        # current criterion; hidden when there are none.
        self.guidelines = QFrame()
        self.guidelines.setObjectName("guidelines")
        self.guidelines.setFrameShape(QFrame.Shape.StyledPanel)
        gl = QVBoxLayout(self.guidelines)
        gl.setContentsMargins(6, 2, 6, 4)
        gl.setSpacing(2)
        # The title folds the panel to one line (F7, remembered by the grading view).
        self._guidelines_folded = False
        self.guidelines_title = QToolButton()
        self.guidelines_title.setObjectName("guidelinesTitle")
        self.guidelines_title.setText("Guidelines")
        self.guidelines_title.setAutoRaise(True)
        self.guidelines_title.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.guidelines_title.setArrowType(Qt.ArrowType.DownArrow)
        self.guidelines_title.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.guidelines_title.setToolTip("Fold or unfold the guidelines (F7)")
        title_font = self.guidelines_title.font()
        title_font.setBold(True)
        self.guidelines_title.setFont(title_font)
        self.guidelines_title.setFixedHeight(self.guidelines_title.fontMetrics().height() + 4)
        self.guidelines_title.clicked.connect(
            lambda: self.guidelines_fold_requested.emit(not self._guidelines_folded)
        )
        gl.addWidget(self.guidelines_title, 0, Qt.AlignmentFlag.AlignLeft)
        self.guidelines_text = QPlainTextEdit()
        self.guidelines_text.setObjectName("guidelinesText")
        self.guidelines_text.setReadOnly(True)
        self.guidelines_text.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.guidelines_text.installEventFilter(self)
        gl.addWidget(self.guidelines_text)
        self.guidelines.setVisible(False)
        layout.addWidget(self.guidelines, 0)

        self.message = QLabel("")
        self.message.setObjectName("rubricMessage")
        self.message.setWordWrap(True)
        self.message.setContentsMargins(6, 0, 6, 4)
        self.message.setVisible(False)
        layout.addWidget(self.message)

        self.table.selectionModel().currentRowChanged.connect(self._row_changed)
        self.rationale.textChanged.connect(self._text_changed)
        self.note.textChanged.connect(self._text_changed)
        self.unclear.toggled.connect(self._unclear_toggled)
        for w in (self.rationale, self.note):
            w.installEventFilter(self)

    # -- display ------------------------------------------------------------------------------
    def fit_columns(self) -> None:
        metrics = self.table.fontMetrics()
        self.table.setColumnWidth(VERDICT_COLUMN, metrics.horizontalAdvance("✗ Not met ✎ ⚑") + 16)
        self.table.setColumnWidth(POINTS_COLUMN, metrics.horizontalAdvance("−10") + 18)
        self.table.fit_rows()

    def set_read_only(self, on: bool) -> None:
        """Lock the editor (a done response); the view shows the current row again."""
        self.read_only = on

    def set_current_row(self, row: int) -> None:
        if 0 <= row < self.model.rowCount():
            index = self.model.index(row, TEXT_COLUMN)
            self.table.setCurrentIndex(index)
            self.table.scrollTo(index, QAbstractItemView.ScrollHint.EnsureVisible)

    def current_row(self) -> int:
        return self.table.currentIndex().row()

    def show_row(self, row: RubricRow | None) -> None:
        """Fill the editor with ``row`` (without emitting edits)."""
        self._updating = True
        try:
            if row is None:
                self.criterion_label.setText("")
                self.meta_label.setText("")
                self.auto_label.setText("")
                for b in self.buttons.values():
                    b.setEnabled(False)
                self.rationale.setPlainText("")
                self.note.setText("")
                self.unclear.setChecked(False)
                return
            c = row.criterion
            self.criterion_label.setText(f"{row.number}. {to_plain(c.text)}")
            meta = f"{c.points:+d} points".replace("-", "−")
            if c.levels > 2:
                meta += f" · {c.levels} levels (0 … {c.levels - 1})"
            if c.tags:
                meta += " · " + ", ".join(c.tags)
            self.meta_label.setText(meta)
            self.auto_label.setVisible(row.is_auto)
            self.auto_label.setText(f"Graded automatically (read-only): {row.auto_note}")
            editable = not row.is_auto and not self.read_only
            verdict = row.verdict
            for v, b in self.buttons.items():
                b.setEnabled(editable and (v != "partial" or c.levels > 2))
                b.setChecked(v is not None and v == verdict and not row.is_auto)
                self._paint_button(b, verdict_color(v) if v == verdict and v else None)
            self.rationale.setEnabled(editable)
            self.unclear.setEnabled(editable)
            if self.rationale.toPlainText() != (row.value.rationale or ""):
                self.rationale.setPlainText(row.value.rationale or "")
            self.unclear.setChecked(row.value.unclear)
            self.note.setEnabled(editable and row.value.unclear)
            if self.note.text() != (row.value.unclear_note or ""):
                self.note.setText(row.value.unclear_note or "")
        finally:
            self._updating = False

    def show_change(self, title: str, diff_html: str, hint: str) -> None:
        """Show what changed in the current criterion since the grader's verdict: a
        title, the word diff (HTML) and what to do."""
        palette = self.changed_box.palette()
        palette.setColor(QPalette.ColorRole.Window, changed_color())
        self.changed_box.setPalette(palette)
        self.changed_title.setText(title)
        self.changed_diff.setText(diff_html)
        self.changed_diff.setVisible(bool(diff_html))
        self.changed_hint.setText(hint)
        self.changed_box.setVisible(True)

    def hide_change(self) -> None:
        self.changed_box.setVisible(False)

    def change_shown(self) -> bool:
        """Whether the "changed since your verdict" box is shown."""
        return self.changed_box.isVisibleTo(self)

    def _paint_button(self, button: QPushButton, color: QColor | None) -> None:
        """The chosen verdict's button in its colour and bold (palette, not style sheets:
        style sheets re-polish the widget, too slow for every key press)."""
        if button.property("verdictColor") == (color.name() if color else ""):
            return
        button.setProperty("verdictColor", color.name() if color else "")
        palette = self.palette()
        if color is not None:
            palette.setColor(QPalette.ColorRole.ButtonText, color)
        button.setPalette(palette)
        font = button.font()
        font.setBold(color is not None)
        button.setFont(font)

    def show_score(self, summary: ScoreSummary | None) -> None:
        if summary is None:
            self.score_label.setText("")
            return
        self.score_label.setText(summary.text())
        color = verdict_color("met" if summary.passed else "not_met") if summary.complete else None
        palette = self.palette()
        if color is not None:
            palette.setColor(QPalette.ColorRole.WindowText, color)
        self.score_label.setPalette(palette)

    def show_guidelines(self, instructions: str | None, answers: list[str]) -> None:
        """The benchmark's instructions, then the answers on the current criterion."""
        parts: list[str] = []
        if answers:
            parts.append("Clarified for this criterion:")
            parts += [f"• {a}" for a in answers]
        if instructions:
            if parts:
                parts.append("")
            parts += ["Grading instructions:", instructions]
        text = "\n".join(parts)
        if self.guidelines_text.toPlainText() != text:
            self.guidelines_text.setPlainText(text)
        self.guidelines_title.setText(
            f"Guidelines · {len(answers)} clarification{'s' if len(answers) != 1 else ''}"
            if answers
            else "Guidelines"
        )
        self.guidelines.setVisible(bool(parts))
        self._fit_guidelines()

    def guidelines_shown(self) -> str:
        """What the Guidelines panel holds ('' when hidden; folded, only its title shows)."""
        return self.guidelines_text.toPlainText() if self.guidelines.isVisibleTo(self) else ""

    def fold_guidelines(self, folded: bool) -> None:
        """Fold the Guidelines panel to its title line, or unfold it."""
        self._guidelines_folded = folded
        self.guidelines_text.setVisible(not folded)
        self.guidelines_title.setArrowType(
            Qt.ArrowType.RightArrow if folded else Qt.ArrowType.DownArrow
        )

    def guidelines_folded(self) -> bool:
        return self._guidelines_folded

    def _fit_guidelines(self) -> None:
        """The guidelines text as tall as its wrapped lines, at most :data:`GUIDELINE_LINES`
        (then it scrolls): a short instruction leaves its room to the criteria list."""
        box = self.guidelines_text
        layout = box.document().documentLayout()
        # A plain text document's layout counts its height in lines.
        lines = max(1, int(layout.documentSize().height()))
        spacing = box.fontMetrics().lineSpacing()
        margins = 2 * (box.frameWidth() + int(box.document().documentMargin())) + 2
        height = min(lines, GUIDELINE_LINES) * spacing + margins
        if box.height() != height or box.minimumHeight() != height:
            box.setFixedHeight(height)

    def show_message(self, text: str) -> None:
        """A line under the rubric; without one, its room goes to the criteria list."""
        self.message.setText(text)
        self.message.setVisible(bool(text))

    # -- events -------------------------------------------------------------------------------
    def _row_changed(self, current: QModelIndex, _previous: QModelIndex) -> None:
        if current.isValid():
            self.current_changed.emit(current.row())

    def _text_changed(self) -> None:
        if not self._updating:
            self.text_edited.emit()

    def _unclear_toggled(self, on: bool) -> None:
        self.note.setEnabled(on and self.unclear.isEnabled())
        if not self._updating:
            self.unclear_toggled.emit(on)

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:
        if obj is self.guidelines_text and event.type() == QEvent.Type.Resize:
            QTimer.singleShot(0, self, self._fit_guidelines)  # the wrapping follows the width
            return False
        if obj in (self.rationale, self.note):
            if event.type() == QEvent.Type.KeyPress and isinstance(event, QKeyEvent):
                if event.key() == Qt.Key.Key_Escape:
                    self.editing_done.emit()
                    self.table.setFocus(Qt.FocusReason.ShortcutFocusReason)
                    return True
            elif event.type() == QEvent.Type.FocusOut:
                self.editing_done.emit()
        return super().eventFilter(obj, event)

    def rationale_text(self) -> str:
        return self.rationale.toPlainText()

    def note_text(self) -> str:
        return self.note.text()

    def focus_table(self) -> None:
        self.table.setFocus(Qt.FocusReason.OtherFocusReason)

    def focus_rationale(self) -> None:
        if self.rationale.isEnabled():
            self.rationale.setFocus(Qt.FocusReason.ShortcutFocusReason)
            self.rationale.moveCursor(self.rationale.textCursor().MoveOperation.End)

    def focus_note(self) -> None:
        if self.note.isEnabled():
            self.note.setFocus(Qt.FocusReason.ShortcutFocusReason)
