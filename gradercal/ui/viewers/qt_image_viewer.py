"""Images: fit, zoom (buttons, Ctrl+wheel, +/−), pan by dragging. Decoded off the UI thread."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QByteArray, Qt
from PySide6.QtGui import QImage, QImageReader, QPainter, QPixmap, QResizeEvent, QWheelEvent
from PySide6.QtWidgets import (
    QGraphicsPixmapItem,
    QGraphicsScene,
    QGraphicsView,
    QLabel,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from gradercal.model import Artifact
from gradercal.ui.qt_widgets import flow_bar
from gradercal.ui.shortcuts import keys
from gradercal.ui.viewers.qt_base import Fetch, QtArtifactViewer


def _keys(shortcut_id: str) -> str:
    return " or ".join(keys(shortcut_id))


def decode_image(data: bytes) -> QImage:
    """Decode with Qt's image plugins (PNG, JPEG, GIF, TIFF, WebP, SVG, …); worker thread."""
    from PySide6.QtCore import QBuffer, QIODevice

    buf = QBuffer()
    buf.setData(QByteArray(data))
    buf.open(QIODevice.OpenModeFlag.ReadOnly)
    reader = QImageReader(buf)
    reader.setAutoTransform(True)
    img = reader.read()
    if img.isNull():
        fmt = bytes(reader.format().data()).decode() or "unknown"
        raise ValueError(f"not a readable image ({reader.errorString()}; format {fmt})")
    return img


class QtImageView(QGraphicsView):
    def __init__(self, owner: QtImageViewer) -> None:
        super().__init__()
        self.owner = owner
        self.setDragMode(QGraphicsView.DragMode.ScrollHandDrag)
        self.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform)
        self.setTransformationAnchor(QGraphicsView.ViewportAnchor.AnchorUnderMouse)

    def wheelEvent(self, event: QWheelEvent) -> None:
        if event.modifiers() & Qt.KeyboardModifier.ControlModifier:
            self.owner.zoom_by(1.25 if event.angleDelta().y() > 0 else 0.8)
            return
        super().wheelEvent(event)

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        if self.owner.fit:
            self.owner.fit_to_view()

    def keyPressEvent(self, event: Any) -> None:
        key = event.key()
        if key in (Qt.Key.Key_Plus, Qt.Key.Key_Equal):
            self.owner.zoom_by(1.25)
        elif key == Qt.Key.Key_Minus:
            self.owner.zoom_by(0.8)
        elif key == Qt.Key.Key_0:
            self.owner.set_fit(True)
        else:
            super().keyPressEvent(event)


class QtImageViewer(QtArtifactViewer):
    def __init__(self, artifact: Artifact, fetch: Fetch | None, parent: QWidget | None = None):
        super().__init__(artifact, fetch, parent)
        self.fit = True
        self.scale_factor = 1.0
        self.image: QImage | None = None

    def prepare(self, data: bytes) -> QImage:
        return decode_image(data)

    def present(self, prepared: Any) -> None:
        self.image = prepared
        body = QWidget()
        layout = QVBoxLayout(body)
        layout.setContentsMargins(0, 0, 0, 0)
        bar = flow_bar(layout, spacing=4, margins=2)
        buttons = {}
        for name, text, tip in (
            ("fit", "Fit", f"Fit the image to the panel (0 or {_keys('artifact.fit')})"),
            ("actual", "100%", "Actual size"),
            ("out", "−", f"Zoom out (− or {_keys('artifact.zoom_out')}, Ctrl+wheel)"),
            ("in", "+", f"Zoom in (+ or {_keys('artifact.zoom_in')}, Ctrl+wheel)"),
        ):
            b = QToolButton()
            b.setText(text)
            b.setToolTip(tip)
            b.setAutoRaise(True)
            b.setFocusPolicy(Qt.FocusPolicy.NoFocus)
            bar.add_widget(b)
            buttons[name] = b
        self.zoom_label = QLabel("")
        self.zoom_label.setMinimumWidth(self.zoom_label.fontMetrics().horizontalAdvance("3200%"))
        bar.add_widget(self.zoom_label)
        bar.add_widget(QLabel(f"{prepared.width()} × {prepared.height()} px · drag to pan"))
        self.scene = QGraphicsScene(self)
        self.item = QGraphicsPixmapItem(QPixmap.fromImage(prepared))
        self.item.setTransformationMode(Qt.TransformationMode.SmoothTransformation)
        self.scene.addItem(self.item)
        self.view = QtImageView(self)
        self.view.setScene(self.scene)
        layout.addWidget(self.view, 1)
        buttons["fit"].clicked.connect(lambda: self.set_fit(True))
        buttons["actual"].clicked.connect(self.actual_size)
        buttons["in"].clicked.connect(lambda: self.zoom_by(1.25))
        buttons["out"].clicked.connect(lambda: self.zoom_by(0.8))
        self.set_content(body)
        self.fit_to_view()

    def change_zoom(self, direction: int) -> bool:
        if self.image is None:
            return False
        if direction == 0:
            self.set_fit(True)
        else:
            self.zoom_by(1.25 if direction > 0 else 0.8)
        return True

    def set_fit(self, on: bool) -> None:
        self.fit = on
        if on:
            self.fit_to_view()

    def fit_to_view(self) -> None:
        if self.image is None:
            return
        self.view.fitInView(self.item, Qt.AspectRatioMode.KeepAspectRatio)
        self.scale_factor = self.view.transform().m11()
        self._show_zoom()

    def actual_size(self) -> None:
        self.fit = False
        self.view.resetTransform()
        self.scale_factor = 1.0
        self._show_zoom()

    def zoom_by(self, factor: float) -> None:
        new = min(max(self.scale_factor * factor, 0.02), 32.0)
        self.fit = False
        self.view.scale(new / self.scale_factor, new / self.scale_factor)
        self.scale_factor = new
        self._show_zoom()

    def _show_zoom(self) -> None:
        self.zoom_label.setText(f"{self.scale_factor * 100:.0f}%")
