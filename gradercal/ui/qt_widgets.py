"""Small widgets that let the window shrink to a laptop screen without hiding anything.

* :class:`QtElidedLabel` — a one-line label that asks for little width and shows "…"
  when it gets less than its text needs (the whole text stays in ``text()`` and in its
  tooltip), so a long title never sets the window's minimum width.
* :class:`QtFlowLayout` — lays its items out in rows and wraps to a new row when the
  width runs out (tool bars of the artifact viewers, the verdict buttons): every control
  stays reachable at any width, and the bar never demands the width of one long row.
* :class:`QtSortItem` — a read-only table cell shown as text and sorted by its value
  (numbers as numbers, blanks last), for the coordinator's sortable tables.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QMargins, QPoint, QRect, QSize, Qt
from PySide6.QtGui import QPainter, QPaintEvent, QResizeEvent
from PySide6.QtWidgets import (
    QBoxLayout,
    QLabel,
    QLayout,
    QLayoutItem,
    QSizePolicy,
    QTableWidgetItem,
    QWidget,
    QWidgetItem,
)

#: The narrowest an elided label gets: a few characters and the ellipsis.
ELIDED_MIN_CHARS = 6


class QtElidedLabel(QLabel):
    """Plain text on one line, cut with "…" when narrow; the tooltip then has all of it."""

    def __init__(self, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(text, parent)
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setWordWrap(False)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        self._own_tip = ""
        self._update_tip()

    def setText(self, text: str) -> None:
        super().setText(text)
        self._update_tip()

    def set_tip(self, tip: str) -> None:
        """A tooltip of its own (shown whether or not the text is cut)."""
        self._own_tip = tip
        self._update_tip()

    def minimumSizeHint(self) -> QSize:
        hint = super().minimumSizeHint()
        metrics = self.fontMetrics()
        margins = self.contentsMargins()
        least = metrics.horizontalAdvance("M" * ELIDED_MIN_CHARS + "…")
        full = metrics.horizontalAdvance(self.text())
        width = min(least, full) + margins.left() + margins.right()
        return QSize(width, hint.height())

    def is_elided(self) -> bool:
        return self.fontMetrics().horizontalAdvance(self.text()) > self.contentsRect().width()

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._update_tip()

    def _update_tip(self) -> None:
        tip = self._own_tip or (self.text() if self.is_elided() else "")
        if self.toolTip() != tip:
            self.setToolTip(tip)

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        rect = self.contentsRect()
        shown = self.fontMetrics().elidedText(
            self.text(), Qt.TextElideMode.ElideRight, rect.width()
        )
        painter.setPen(self.palette().color(self.foregroundRole()))
        painter.setFont(self.font())
        align = self.alignment()
        if not align & Qt.AlignmentFlag.AlignVertical_Mask:
            align |= Qt.AlignmentFlag.AlignVCenter
        painter.drawText(rect, int(align), shown)
        painter.end()


class QtFlowLayout(QLayout):
    """Items left to right, wrapping into more rows when the width is short."""

    def __init__(
        self, parent: QWidget | None = None, *, spacing: int = 4, margins: int = 0
    ) -> None:
        super().__init__(parent)
        self._items: list[QLayoutItem] = []
        self._spacing = spacing
        self.setContentsMargins(QMargins(margins, margins, margins, margins))

    # -- QLayout ----------------------------------------------------------------------------
    def addItem(self, item: QLayoutItem) -> None:
        self._items.append(item)

    def add_widget(self, widget: QWidget) -> QWidget:
        """Add ``widget`` (returned, for chaining)."""
        self.addChildWidget(widget)
        self.addItem(QWidgetItem(widget))
        self.invalidate()
        return widget

    def count(self) -> int:
        return len(self._items)

    def itemAt(self, index: int) -> QLayoutItem | None:
        return self._items[index] if 0 <= index < len(self._items) else None

    def takeAt(self, index: int) -> QLayoutItem | None:
        return self._items.pop(index) if 0 <= index < len(self._items) else None

    def expandingDirections(self) -> Qt.Orientation:
        return Qt.Orientation(0)

    def hasHeightForWidth(self) -> bool:
        return True

    def heightForWidth(self, width: int) -> int:
        return self._arrange(QRect(0, 0, width, 0), move=False)

    def setGeometry(self, rect: QRect) -> None:
        super().setGeometry(rect)
        self._arrange(rect, move=True)

    def sizeHint(self) -> QSize:
        """One row of everything."""
        m = self.contentsMargins()
        shown = [i for i in self._items if not i.isEmpty()]
        width = sum(i.sizeHint().width() for i in shown) + self._spacing * max(len(shown) - 1, 0)
        height = max((i.sizeHint().height() for i in shown), default=0)
        return QSize(width + m.left() + m.right(), height + m.top() + m.bottom())

    def minimumSize(self) -> QSize:
        """As wide as the widest item (the rest wraps below it)."""
        m = self.contentsMargins()
        size = QSize()
        for item in self._items:
            if not item.isEmpty():
                size = size.expandedTo(item.minimumSize())
        return size + QSize(m.left() + m.right(), m.top() + m.bottom())

    def _arrange(self, rect: QRect, *, move: bool) -> int:
        m = self.contentsMargins()
        area = rect.adjusted(m.left(), m.top(), -m.right(), -m.bottom())
        x, y, row_height = area.x(), area.y(), 0
        row: list[tuple[QLayoutItem, QPoint, QSize]] = []

        def place_row() -> None:
            for item, point, size in row:  # centred vertically in the row
                if move:
                    offset = (row_height - size.height()) // 2
                    item.setGeometry(QRect(point + QPoint(0, offset), size))

        for item in self._items:
            if item.isEmpty():
                continue
            size = item.sizeHint().boundedTo(item.maximumSize()).expandedTo(item.minimumSize())
            size.setWidth(min(size.width(), max(area.width(), item.minimumSize().width())))
            gap = self._spacing
            if row and x + size.width() > area.right() + 1:
                place_row()
                row = []
                x = area.x()
                y += row_height + self._spacing
                row_height = 0
            row.append((item, QPoint(x, y), size))
            x += size.width() + gap
            row_height = max(row_height, size.height())
        place_row()
        return y + row_height - rect.y() + m.bottom()


def flow_bar(into: QBoxLayout, *, spacing: int = 4, margins: int = 0) -> QtFlowLayout:
    """A wrapping bar added to ``into`` at once, on a widget of its own: what is put in it
    has a parent from the start (a parentless widget made visible would be a window)."""
    box = QWidget()
    bar = QtFlowLayout(box, spacing=spacing, margins=margins)
    into.addWidget(box)
    return bar


__all__ = ["QtElidedLabel", "QtFlowLayout", "flow_bar"]


class QtSortItem(QTableWidgetItem):
    """A read-only cell shown as text and sorted by its value (numbers as numbers, blanks
    last)."""

    def __init__(self, text: str, key: Any) -> None:
        super().__init__(text)
        self.key = key
        self.setFlags(self.flags() & ~Qt.ItemFlag.ItemIsEditable)

    def __lt__(self, other: QTableWidgetItem) -> bool:
        a, b = self.key, getattr(other, "key", None)
        if a is None or b is None:
            return a is not None and b is None
        if isinstance(a, int | float) and isinstance(b, int | float):
            return a < b
        return str(a) < str(b)
