"""The rubric of one response as a Qt table model over :class:`RubricState`."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtGui import QColor, QFont, QGuiApplication

from gradercal.ui.grading_state import VERDICT_LABELS, RubricRow, RubricState
from gradercal.ui.inline_html import to_plain

Index = QModelIndex | QPersistentModelIndex

GLYPHS = {"met": "✓", "partial": "◐", "not_met": "✗", None: "·"}
COLUMNS = ("Verdict", "Pts", "Criterion")
VERDICT_COLUMN, POINTS_COLUMN, TEXT_COLUMN = 0, 1, 2


def _dark() -> bool:
    app = QGuiApplication.instance()
    if not isinstance(app, QGuiApplication):
        return False
    return app.palette().window().color().lightness() < 128


def verdict_color(verdict: str | None) -> QColor | None:
    dark = _dark()
    if verdict == "met":
        return QColor("#6fd08c" if dark else "#1b7f3b")
    if verdict == "not_met":
        return QColor("#ff8a80" if dark else "#b3261e")
    if verdict == "partial":
        return QColor("#ffd166" if dark else "#9a6700")
    return None


#: Marks a criterion changed since the grader's verdict (in place of the verdict's glyph).
CHANGED_GLYPH = "↻"
CHANGED_BADGE = "changed since your verdict"


def changed_color() -> QColor:
    """The background of a criterion changed since the grader's verdict (amber)."""
    return QColor("#4a3b10" if _dark() else "#fff1c7")


def verdict_text(row: RubricRow) -> str:
    v = row.verdict
    text = f"{CHANGED_GLYPH if row.changed else GLYPHS[v]} {VERDICT_LABELS[v]}"
    if row.is_auto:
        text = f"auto {GLYPHS[v]}"
    marks = ""
    if row.value.rationale:
        marks += " ✎"
    if row.value.unclear:
        marks += " ⚑"
    return text + marks


class QtRubricModel(QAbstractTableModel):
    def __init__(self) -> None:
        super().__init__()
        self.state: RubricState | None = None
        self._colors: dict[str | None, QColor | None] = {}
        self._muted = QColor()
        self._bold = QFont()
        self._changed = QColor()

    def set_state(self, state: RubricState | None) -> None:
        self.beginResetModel()
        self.state = state
        # Colours looked up once per response, not for every cell the view asks about.
        self._colors = {v: verdict_color(v) for v in ("met", "not_met", "partial", None)}
        self._muted = QGuiApplication.palette().placeholderText().color()
        self._bold = QFont()
        self._bold.setBold(True)
        self._changed = changed_color()
        self.endResetModel()

    def row_changed(self, row: int) -> None:
        self.dataChanged.emit(self.index(row, 0), self.index(row, len(COLUMNS) - 1))

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() or self.state is None else len(self.state)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return COLUMNS[section]
        return None

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or self.state is None:
            return None
        row = self.state.rows[index.row()]
        c = row.criterion
        col = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            if col == VERDICT_COLUMN:
                return verdict_text(row)
            if col == POINTS_COLUMN:
                return f"{c.points:+d}".replace("-", "−")
            if row.changed:
                return f"{row.number}. [{CHANGED_GLYPH} {CHANGED_BADGE}] {to_plain(c.text)}"
            return f"{row.number}. {to_plain(c.text)}"
        if role == Qt.ItemDataRole.ToolTipRole:
            parts = [to_plain(c.text), f"{c.points:+d} points · id {c.id}"]
            if row.changed:
                parts.append(
                    f"Changed since your verdict (given under version {row.given_under}): "
                    "confirm it (the same key again) or change it."
                )
            if c.tags:
                parts.append("Tags: " + ", ".join(c.tags))
            if row.is_auto:
                parts.append("Graded automatically: " + row.auto_note)
            if row.value.rationale:
                parts.append("Rationale: " + row.value.rationale)
            if row.value.unclear:
                parts.append("Flagged unclear: " + (row.value.unclear_note or "(no note)"))
            return "\n".join(parts)
        if role == Qt.ItemDataRole.BackgroundRole:
            return self._changed if row.changed else None
        if role == Qt.ItemDataRole.ForegroundRole:
            if row.is_auto and col != VERDICT_COLUMN:
                return self._muted
            if col == VERDICT_COLUMN:
                return self._muted if row.changed else self._colors.get(row.verdict)
            if col == POINTS_COLUMN and c.points < 0:
                return self._colors.get("not_met")
            return None
        if role == Qt.ItemDataRole.FontRole and col == VERDICT_COLUMN and row.verdict:
            return None if row.changed else self._bold
        if role == Qt.ItemDataRole.TextAlignmentRole:
            if col == POINTS_COLUMN:
                return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignTop)
            return int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        return None
