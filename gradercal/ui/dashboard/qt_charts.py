"""The dashboard's charts: one matplotlib figure in a canvas, saved as PNG or SVG.

The worker draws each figure ahead at the canvas's size (:func:`canvas_class` uses that
drawing on the first paint); :func:`dark_palette` says which chart theme the window's
palette asks for.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QPoint, Qt, Signal
from PySide6.QtGui import QAction, QPalette
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QMenu,
    QSizePolicy,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def dark_palette(palette: QPalette) -> bool:
    """Whether ``palette`` is dark (its base colour's lightness under half): the charts
    are then drawn in their dark theme."""
    return palette.color(QPalette.ColorRole.Base).lightness() < 128


def save_figure(figure: Figure, path: Path | str) -> Path:
    """Write ``figure`` as PNG or SVG (by the file's suffix; PNG when there is none)."""
    out = Path(path)
    if out.suffix.lower() not in (".png", ".svg"):
        out = out.with_suffix(".png")
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        from gradercal.dashboard import charts

        saver = getattr(charts, "save_figure", None)
    except ImportError:  # pragma: no cover - the core module ships with the app
        saver = None
    if saver is not None:
        result = saver(figure, out)
        return Path(result) if result is not None else out
    figure.savefig(out, format=out.suffix[1:], facecolor=figure.get_facecolor())
    return out


class QtChart(QWidget):
    """One matplotlib figure in a ``FigureCanvasQTAgg`` with "Save as PNG or SVG…"."""

    #: A short message for the status bar.
    message = Signal(str)

    def __init__(self, title: str, name: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.name = name
        self.figure: Figure | None = None
        self.canvas: QWidget | None = None
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        top = QHBoxLayout()
        self.title = QLabel(title)
        font = self.title.font()
        font.setBold(True)
        self.title.setFont(font)
        top.addWidget(self.title, 1)
        self.save_button = QToolButton()
        self.save_button.setText("Save as PNG or SVG…")
        self.save_button.setEnabled(False)
        self.save_button.clicked.connect(self.save_dialog)
        top.addWidget(self.save_button)
        layout.addLayout(top)
        self.holder = QVBoxLayout()
        self.holder.setContentsMargins(0, 0, 0, 0)
        self.empty = QLabel("Not computed yet.")
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty.setWordWrap(True)
        self.holder.addWidget(self.empty)
        layout.addLayout(self.holder, 1)
        self.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.customContextMenuRequested.connect(self._menu)

    def set_figure(self, figure: Figure | None, empty_text: str = "Nothing to show.") -> None:
        if self.canvas is not None:
            self.holder.removeWidget(self.canvas)
            self.canvas.deleteLater()
            self.canvas = None
        self.figure = figure
        if figure is None:
            self.empty.setText(empty_text)
            self.empty.show()
            self.save_button.setEnabled(False)
            return
        self.empty.hide()
        canvas = canvas_class()(figure)
        canvas.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        canvas.setMinimumSize(200, 160)
        canvas.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        canvas.customContextMenuRequested.connect(lambda pos: self._menu(canvas.mapTo(self, pos)))
        self.holder.addWidget(canvas, 1)
        self.canvas = canvas
        self.save_button.setEnabled(True)

    def set_message(self, text: str) -> None:
        self.set_figure(None, text)

    def _menu(self, pos: QPoint) -> None:
        menu = QMenu(self)
        action = QAction("Save as PNG or SVG…", menu)
        action.setEnabled(self.figure is not None)
        action.triggered.connect(self.save_dialog)
        menu.addAction(action)
        menu.popup(self.mapToGlobal(pos))

    def save(self, path: Path | str) -> Path:
        """Write the chart to ``path`` (.png or .svg)."""
        if self.figure is None:
            raise ValueError(f"the chart {self.name!r} has nothing to save yet")
        return save_figure(self.figure, path)

    def save_dialog(self) -> Path | None:
        if self.figure is None:
            return None
        path, chosen = QFileDialog.getSaveFileName(
            self,
            f"Save {self.title.text()}",
            f"{self.name}.png",
            "PNG image (*.png);;SVG drawing (*.svg)",
        )
        if not path:
            return None
        if not Path(path).suffix and "svg" in chosen.lower():
            path += ".svg"
        try:
            out = self.save(path)
        except Exception as exc:  # disk full, no permission, …: say so, keep going
            self.message.emit(f"Chart not saved: {exc}")
            return None
        self.message.emit(f"Chart saved to {out}")
        return out


_CANVAS: list[type] = []


def canvas_class() -> type:
    """``FigureCanvasQTAgg`` that uses the worker's drawing of a figure on its first draw
    (see :func:`gradercal.ui.dashboard.data.attach_pixels`)."""
    if _CANVAS:
        return _CANVAS[0]
    from matplotlib.backends.backend_qtagg import FigureCanvasQTAgg

    class QtPrerenderedCanvas(FigureCanvasQTAgg):
        def draw(self) -> None:
            pre = getattr(self.figure, "_gradercal_prerendered", None)
            if pre is not None:
                self.figure._gradercal_prerendered = None  # type: ignore[attr-defined]
                renderer, key = pre
                w, h = self.get_width_height(physical=True)
                if key == (w, h, self.figure.dpi):
                    self.renderer = renderer
                    self._lastKey = key
                    self.update()
                    return
            super().draw()  # type: ignore[no-untyped-call]

    _CANVAS.append(QtPrerenderedCanvas)
    return QtPrerenderedCanvas
