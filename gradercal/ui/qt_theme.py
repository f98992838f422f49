"""Light and dark palettes.

By default the app follows the system: Fusion takes the platform's colour scheme, and
every colour the app picks itself (verdict colours, chart styles, banners) is derived
from the palette at paint time. ``gradercal gui --theme dark|light`` (or
``GRADERCAL_THEME``) forces one, which is also how the dark palette is checked on a
machine without a desktop (the offscreen platform has no colour scheme).
"""

from __future__ import annotations

import os

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication

THEMES = ("system", "light", "dark")
ENV = "GRADERCAL_THEME"

_DARK = {
    QPalette.ColorRole.Window: "#26282b",
    QPalette.ColorRole.WindowText: "#e6e6e6",
    QPalette.ColorRole.Base: "#1d1f21",
    QPalette.ColorRole.AlternateBase: "#2c2f33",
    QPalette.ColorRole.ToolTipBase: "#2c2f33",
    QPalette.ColorRole.ToolTipText: "#e6e6e6",
    QPalette.ColorRole.PlaceholderText: "#8c8f94",
    QPalette.ColorRole.Text: "#e6e6e6",
    QPalette.ColorRole.Button: "#303338",
    QPalette.ColorRole.ButtonText: "#e6e6e6",
    QPalette.ColorRole.BrightText: "#ff6b6b",
    QPalette.ColorRole.Light: "#45494f",
    QPalette.ColorRole.Midlight: "#3a3d42",
    QPalette.ColorRole.Mid: "#5a5e65",
    QPalette.ColorRole.Dark: "#161719",
    QPalette.ColorRole.Shadow: "#000000",
    QPalette.ColorRole.Highlight: "#3d7bd9",
    QPalette.ColorRole.HighlightedText: "#ffffff",
    QPalette.ColorRole.Link: "#7fb0ff",
    QPalette.ColorRole.LinkVisited: "#c59bff",
}


def dark_palette() -> QPalette:
    """A dark palette for Fusion; disabled texts are dimmed."""
    palette = QPalette()
    for role, colour in _DARK.items():
        palette.setColor(role, QColor(colour))
    for role in (
        QPalette.ColorRole.Text,
        QPalette.ColorRole.WindowText,
        QPalette.ColorRole.ButtonText,
    ):
        palette.setColor(QPalette.ColorGroup.Disabled, role, QColor("#7a7d82"))
    return palette


def requested_theme(explicit: str | None = None) -> str:
    """``explicit``, else ``$GRADERCAL_THEME``, else ``system``; unknown names mean system."""
    theme = (explicit or os.environ.get(ENV) or "system").strip().lower()
    return theme if theme in THEMES else "system"


def apply_theme(app: QApplication, theme: str | None = None) -> str:
    """Apply ``theme`` (see :func:`requested_theme`) to ``app``; returns the theme used."""
    chosen = requested_theme(theme)
    hints = app.styleHints()
    if chosen == "system":
        hints.unsetColorScheme()
        app.setPalette(app.style().standardPalette())
        return chosen
    scheme = Qt.ColorScheme.Dark if chosen == "dark" else Qt.ColorScheme.Light
    hints.setColorScheme(scheme)  # honoured where the platform supports it
    dark_now = app.palette().color(QPalette.ColorRole.Window).lightness() < 128
    if chosen == "dark" and not dark_now:
        app.setPalette(dark_palette())
    elif chosen == "light" and dark_now:
        app.setPalette(app.style().standardPalette())
        if app.palette().color(QPalette.ColorRole.Window).lightness() < 128:
            app.setPalette(QPalette(QColor("#efefef")))
    return chosen


def is_dark(app: QApplication | None = None) -> bool:
    """Whether the palette in use is dark (window colour lightness below half)."""
    app = app or QApplication.instance()  # type: ignore[assignment]
    if not isinstance(app, QApplication):
        return False
    return app.palette().color(QPalette.ColorRole.Window).lightness() < 128
