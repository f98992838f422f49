"""The dashboard's controls and headline: the filter drop-downs (:class:`QtChoiceButton`),
the tiles (:class:`QtStatCard`, :func:`headline_value`) and the alt-test line
(:func:`alt_test_text`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
from PySide6.QtCore import QSize, Signal
from PySide6.QtGui import QAction, QPalette
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QMenu,
    QStyle,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from gradercal.ui.dashboard.data import _missing


class QtChoiceButton(QToolButton):
    """A drop-down of checkable values; all checked (the default) means no filter."""

    changed = Signal()

    def __init__(self, label: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.label = label
        self.values: list[str] = []
        self.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.setMenu(QMenu(self))
        self._actions: dict[str, QAction] = {}
        self._update_text()

    def sizeHint(self) -> QSize:
        """Room for the drop-down arrow after the text (the style drew it over the text)."""
        hint = super().sizeHint()
        style = self.style()
        arrow = style.pixelMetric(QStyle.PixelMetric.PM_MenuButtonIndicator, None, self)
        return QSize(hint.width() + arrow, hint.height())

    def set_values(self, values: Sequence[str]) -> None:
        """Offer ``values``; the selection is kept for values still offered."""
        values = list(values)
        if values == self.values:
            return
        before = self.selected()
        menu = self.menu()
        menu.clear()
        self._actions = {}
        every = QAction("All", menu)
        every.triggered.connect(lambda: self.set_selected(None))
        menu.addAction(every)
        menu.addSeparator()
        for v in values:
            a = QAction(v, menu)
            a.setCheckable(True)
            a.setChecked(before is None or v in before)
            a.toggled.connect(self._toggled)
            menu.addAction(a)
            self._actions[v] = a
        self.values = values
        self._update_text()

    def selected(self) -> tuple[str, ...] | None:
        """The checked values, or None when all are checked (no filter)."""
        if not self._actions:
            return None
        chosen = tuple(v for v, a in self._actions.items() if a.isChecked())
        return None if len(chosen) == len(self._actions) else chosen

    def set_selected(self, values: Sequence[str] | None) -> None:
        for v, a in self._actions.items():
            a.blockSignals(True)
            a.setChecked(values is None or v in values)
            a.blockSignals(False)
        self._update_text()
        self.changed.emit()

    def _toggled(self, _on: bool) -> None:
        self._update_text()
        self.changed.emit()

    def _update_text(self) -> None:
        chosen = self.selected()
        if chosen is None:
            text = "all"
        elif len(chosen) == 1:
            text = chosen[0]
        else:
            text = f"{len(chosen)} of {len(self._actions)}"
        self.setText(f"{self.label}: {text}")
        self.setToolTip(f"{self.label}: " + (", ".join(chosen) if chosen is not None else "all"))


def keep_one_line(label: QLabel) -> None:
    """Give ``label`` the height of one line of its text even when empty."""
    text = label.text()
    label.setText("Xg")
    label.setMinimumHeight(label.sizeHint().height())
    label.setText(text)


def pct(x: Any) -> str:
    return "—" if x is None or _missing(x) else f"{100 * float(x):.0f}%"


class QtStatCard(QFrame):
    """A big number with a caption."""

    def __init__(self, caption: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setFrameShape(QFrame.Shape.StyledPanel)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 6, 10, 6)
        layout.setSpacing(0)
        self.value = QLabel("—")
        font = self.value.font()
        font.setPointSizeF(font.pointSizeF() * 1.6)
        font.setBold(True)
        self.value.setFont(font)
        self.caption = QLabel(caption)
        self.caption.setWordWrap(True)
        self.detail = QLabel("")
        small = self.detail.font()
        small.setPointSizeF(small.pointSizeF() * 0.9)
        self.detail.setFont(small)
        self.detail.setWordWrap(True)  # the row of cards fits a 1024-pixel window
        self.detail.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        layout.addWidget(self.value)
        layout.addWidget(self.caption)
        layout.addWidget(self.detail)

    def set(self, value: str, detail: str = "") -> None:
        self.value.setText(value)
        self.detail.setText(detail)
        self.setToolTip(f"{self.caption.text()}: {value}" + (f" ({detail})" if detail else ""))


#: The headline's tiles, in their order: (key, caption).
STAT_CARDS = (
    ("tasks", "tasks"),
    ("responses", "responses"),
    ("criteria", "judgment criteria"),
    ("graders", "graders"),
    ("graded", "units graded by an expert"),
    ("coverage", "judge coverage"),
    ("alpha", "expert–expert α"),
    ("kappa", "judge–consensus κ"),
    ("adjudications", "adjudications"),
)


def stat_cards(layout: QHBoxLayout) -> dict[str, QtStatCard]:
    """The headline's tiles (:data:`STAT_CARDS`) side by side in ``layout``, by key."""
    cards: dict[str, QtStatCard] = {}
    for key, caption in STAT_CARDS:
        card = QtStatCard(caption)
        card.setObjectName(f"card_{key}")
        cards[key] = card
        layout.addWidget(card, 1)
    return cards


def show_headline(
    cards: Mapping[str, QtStatCard],
    verdict: QLabel,
    o: dict[str, Any],
    agreement: pd.DataFrame,
    alt_test: dict[str, Any] | None,
) -> None:
    """The tiles and the alt-test line, from the overview ``o``, the agreement rows
    (the overall ones suffice) and the alt-test of the primary judge."""
    cards["tasks"].set(f"{o['n_tasks']:,}")
    cards["responses"].set(f"{o['n_responses']:,}", f"{len(o['models'])} models")
    cards["criteria"].set(f"{o['n_judgment_criteria']:,}", f"{o['n_units']:,} units")
    cards["graders"].set(
        f"{len(o['humans'])} + {len(o['judges'])}",
        f"experts + judge{'s' if len(o['judges']) != 1 else ''}",
    )
    share = o["share_graded"]
    cards["graded"].set(pct(share.get("overall")), f"≥ 2 experts: {pct(share.get('two_or_more'))}")
    primary = None if o.get("primary_judge") is None else str(o["primary_judge"])
    cov = o["judge_coverage"].get(primary) if primary else None
    cards["coverage"].set(pct(cov), primary or "no judge")
    cards["alpha"].set(*headline_value(agreement, "experts", "krippendorff_alpha"))
    cards["kappa"].set(*headline_value(agreement, primary, "cohen_kappa"))
    cards["adjudications"].set(f"{o['n_adjudications']:,}")
    verdict.setText(alt_test_text(alt_test, primary))


def headline_value(agreement: pd.DataFrame, comparison: str | None, stat: str) -> tuple[str, str]:
    """A tile's value and detail: statistic ``stat`` of ``comparison`` over all items
    (the ``overall`` agreement row) and its 95% interval; ``"—"`` when there is none."""
    if comparison is None or agreement.empty:
        return "—", ""
    rows = agreement.loc[
        (agreement["by"] == "overall")
        & (agreement["comparison"] == comparison)
        & (agreement["statistic"] == stat)
    ]
    if rows.empty or _missing(rows.iloc[0]["value"]):
        return "—", ""
    r = rows.iloc[0]
    ci = "" if _missing(r["ci_low"]) else f"95% CI {r['ci_low']:.2f}–{r['ci_high']:.2f}"
    return f"{float(r['value']):.2f}", ci


def _number(value: Any) -> float:
    return math.nan if value is None else float(value)


def alt_test_text(alt: dict[str, Any] | None, judge: str | None) -> str:
    """The alt-test verdict in one line (rich text)."""
    if judge is None:
        return "<b>No judge</b> has graded this selection: run <code>gradercal judge run</code>."
    if alt is None:
        return f"<b>Alt-test of {judge}:</b> not run (it needs at least two experts per item)."
    rate, adv = (_number(alt.get(k)) for k in ("winning_rate", "advantage_probability"))
    eps = alt.get("epsilon")
    detail = (
        f"winning rate {rate:.2f}, advantage probability {adv:.2f}, "
        f"ε = {eps}, {alt.get('n_items')} items, {alt.get('n_tested', alt.get('n_humans'))} "
        f"of {alt.get('n_humans')} experts tested, {alt.get('test', 'exact score')} test"
    )
    if alt.get("passed"):
        return (
            f"<b>Alt-test: {judge} passes</b> — it may stand in for the experts on this "
            f"selection ({detail})."
        )
    return f"<b>Alt-test: {judge} does not pass</b> — keep experts in the loop ({detail})."
