"""Numbers as people read them: the one set of formatters behind every table, report and
message (the command line, the app, the HTML report, the Markdown package).

Two families, which differ only in what they take as "no value":

* :func:`fixed` and :func:`percent` write ``missing`` (an em dash unless told) for
  ``None`` and format anything else as given (a NaN stays ``nan``): the command line's
  tables, whose values are ``None`` when undefined;
* :func:`finite_fixed`, :func:`finite_percent` and :func:`finite_interval` write an em
  dash for ``None``, NaN, infinities and non-numbers: frames' cells (the report).

:func:`cell` writes a mixed value (yes/no, a number, a text); :func:`trimmed` a number
without trailing zeros.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = [
    "DASH",
    "cell",
    "finite_fixed",
    "finite_interval",
    "finite_percent",
    "fixed",
    "percent",
    "trimmed",
]

#: What stands for a number that is not there.
DASH = "—"


def fixed(x: Any, digits: int = 3, missing: str = DASH) -> str:
    """``x`` with ``digits`` decimals (``0.123``); ``missing`` for None."""
    return missing if x is None else f"{x:.{digits}f}"


def percent(x: Any, digits: int = 1, missing: str = DASH) -> str:
    """``x`` (a share) as a percentage with ``digits`` decimals (``12.3%``); ``missing``
    for None."""
    return missing if x is None else f"{x:.{digits}%}"


def _finite(x: Any) -> float | None:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def finite_fixed(x: Any, digits: int = 3) -> str:
    """``x`` with ``digits`` decimals; an em dash for None, NaN, infinities and
    non-numbers."""
    v = _finite(x)
    return DASH if v is None else f"{v:.{digits}f}"


def finite_percent(x: Any, digits: int = 1) -> str:
    """``x`` as a percentage with ``digits`` decimals; an em dash for None, NaN,
    infinities and non-numbers."""
    v = _finite(x)
    return DASH if v is None else f"{v:.{digits}%}"


def finite_interval(value: Any, lo: Any, hi: Any, digits: int = 3) -> str:
    """``value [lo, hi]`` (:func:`finite_fixed`); the value alone without a whole
    interval."""
    text = finite_fixed(value, digits)
    if text != DASH and finite_fixed(lo) != DASH and finite_fixed(hi) != DASH:
        text += f" [{finite_fixed(lo, digits)}, {finite_fixed(hi, digits)}]"
    return text


def cell(x: Any, digits: int = 3) -> str:
    """A table cell of mixed values: an em dash for None, yes/no for a boolean, a number
    with ``digits`` decimals, anything else as its text."""
    if x is None:
        return DASH
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int | float):
        return f"{x:.{digits}f}"
    return str(x)


def trimmed(x: float, digits: int = 3) -> str:
    """``x`` with at most ``digits`` decimals and no trailing zeros (``0.5``, ``2``);
    a non-finite number as Python writes it."""
    return f"{x:.{digits}f}".rstrip("0").rstrip(".") if math.isfinite(x) else str(x)
