"""Light and dark palettes: the forced themes switch the palette and every colour the app
picks itself follows it (verdict colours stay readable on either background)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication

from gradercal.ui.qt_app import application
from gradercal.ui.qt_rubric_model import verdict_color
from gradercal.ui.qt_theme import apply_theme, is_dark, requested_theme

pytestmark = pytest.mark.gui


@pytest.fixture
def app() -> Iterator[QApplication]:
    qapp = application()
    yield qapp
    apply_theme(qapp, "system")  # leave the shared application as the other tests expect


def _contrast(a: QColor, b: QColor) -> float:
    """WCAG contrast ratio of two colours."""

    def lum(c: QColor) -> float:
        def ch(v: float) -> float:
            return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4

        return 0.2126 * ch(c.redF()) + 0.7152 * ch(c.greenF()) + 0.0722 * ch(c.blueF())

    hi, lo = sorted((lum(a), lum(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


@pytest.mark.parametrize("theme", ["dark", "light"])
def test_a_forced_theme_sets_the_palette_and_verdict_colours_stay_readable(
    app: QApplication, theme: str
) -> None:
    assert apply_theme(app, theme) == theme
    assert is_dark(app) is (theme == "dark")
    base = app.palette().color(QPalette.ColorRole.Base)
    text = app.palette().color(QPalette.ColorRole.Text)
    assert _contrast(text, base) >= 7  # body text: WCAG AAA
    for verdict in ("met", "not_met", "partial"):
        colour = verdict_color(verdict)
        assert colour is not None
        assert _contrast(colour, base) >= 4.5, (theme, verdict, colour.name())  # WCAG AA


def test_the_theme_comes_from_the_option_then_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GRADERCAL_THEME", "dark")
    assert requested_theme() == "dark"
    assert requested_theme("light") == "light"
    monkeypatch.setenv("GRADERCAL_THEME", "purple")
    assert requested_theme() == "system"


def test_system_restores_the_styles_own_palette(app: QApplication) -> None:
    apply_theme(app, "dark")
    apply_theme(app, "system")
    assert app.palette().color(QPalette.ColorRole.Window) == (
        app.style().standardPalette().color(QPalette.ColorRole.Window)
    )
