"""Scoring one response against its rubric: auto rules, criterion credit, rubric score.

The scalar half of :mod:`gradercal.analysis.scoring` (which works on whole benchmarks as pandas
frames and re-exports these names). It imports only the standard library, so the
grading app can score the response on screen without loading pandas. The definitions
are in :mod:`gradercal.analysis.scoring`'s docstring.
"""

from __future__ import annotations

import math
import numbers
import re
import sys
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from gradercal.model import AutoRule, Criterion

__all__ = [
    "PASS_EPSILON",
    "auto_rule_from_row",
    "criterion_credit",
    "evaluate_auto",
    "lookup",
    "passes",
    "rubric_score",
]

#: Slack for the pass comparison ``score >= threshold - PASS_EPSILON``.
PASS_EPSILON = 1e-9
#: Relative slack for tolerance comparisons of :func:`evaluate_auto`.
_TOL_EPSILON = Fraction(1, 10**12)
_INDEX_RE = re.compile(r"[0-9]+")


# --------------------------------------------------------------------------- auto


def _numpy() -> Any:
    """numpy when something has already imported it (only then can a value be a numpy
    scalar); this module never imports it, so the grading app starts faster."""
    return sys.modules.get("numpy")


def _is_bool(x: Any) -> bool:
    if isinstance(x, bool):
        return True
    np = _numpy()
    return np is not None and isinstance(x, np.bool_)


def _is_number(x: Any) -> bool:
    """JSON-ish number: a real number that is not a bool (strings never count)."""
    return isinstance(x, numbers.Real) and not _is_bool(x)


def _as_fraction(x: Any) -> Fraction | None:
    """The exact value of a finite number *as written in decimal*, else None.

    Floats are converted through their shortest round-trip ``repr`` so that
    ``46.2`` means 462/10, not the nearest binary double; integers of any size are
    exact. Bools, strings, NaN and infinities give None. Never raises.
    """
    try:
        if not _is_number(x):
            return None
        np = _numpy()
        if isinstance(x, int) or (np is not None and isinstance(x, np.integer)):
            return Fraction(int(x))
        if isinstance(x, Fraction):
            return x
        f = float(x)
        if not math.isfinite(f):
            return None
        return Fraction(repr(f))
    except (ValueError, OverflowError, TypeError, ZeroDivisionError):
        return None


def _values_equal(value: Any, target: Any) -> bool:
    """Exact JSON equality with gradercal's rules (see :func:`evaluate_auto`)."""
    if value is None or target is None:
        return value is None and target is None
    if _is_bool(value) or _is_bool(target):
        return _is_bool(value) and _is_bool(target) and bool(value) == bool(target)
    if _is_number(value) or _is_number(target):
        v, t = _as_fraction(value), _as_fraction(target)
        return v is not None and t is not None and v == t
    if isinstance(value, str) or isinstance(target, str):
        return (
            isinstance(value, str) and isinstance(target, str) and value.strip() == target.strip()
        )
    if isinstance(value, Mapping) and isinstance(target, Mapping):
        return set(value) == set(target) and all(_values_equal(value[k], target[k]) for k in value)
    if isinstance(value, list | tuple) and isinstance(target, list | tuple):
        return len(value) == len(target) and all(
            _values_equal(a, b) for a, b in zip(value, target, strict=True)
        )
    return False


def _walk(answer: Any, segments: Sequence[str]) -> tuple[bool, Any]:
    """Follow ``segments`` into ``answer``; ``(found, value)``."""
    current = answer
    for seg in segments:
        if isinstance(current, Mapping):
            if seg not in current:
                return False, None
            current = current[seg]
        elif isinstance(current, list | tuple) and _INDEX_RE.fullmatch(seg):
            idx = int(seg)
            if idx >= len(current):
                return False, None
            current = current[idx]
        else:
            return False, None
    return True, current


def lookup(answer: Any, key: str) -> tuple[bool, Any]:
    """Resolve an auto-rule key in an answer; ``(found, value)``.

    ``""`` and ``"answer"`` denote the whole answer. A leading ``answer.`` is
    stripped; if the stripped path does not resolve, the literal path is tried
    (so an answer shaped ``{"answer": {...}}`` still works).
    """
    key = key.strip()
    if key in ("", "answer"):
        return True, answer
    segments = key.split(".")
    if segments[0] == "answer":
        found, value = _walk(answer, segments[1:])
        if found:
            return found, value
    return _walk(answer, segments)


def _tolerance(x: Any) -> Fraction | float | None:
    """Normalise a tolerance: None/NaN/non-number → None, negative → 0, inf kept."""
    if x is None or not _is_number(x):
        return None
    try:
        f = float(x)
    except (OverflowError, ValueError, TypeError):
        return math.inf
    if math.isnan(f):
        return None
    if math.isinf(f):
        return math.inf if f > 0 else Fraction(0)
    frac = _as_fraction(x)
    return max(frac, Fraction(0)) if frac is not None else None


def evaluate_auto(rule: AutoRule, answer: Any) -> bool:
    """Grade one ``auto`` criterion from a response's structured answer.

    Key: a dotted path (``"answer.results.0.kd_nM"``). A leading ``answer.`` is
    optional; segments made of ASCII digits index lists (non-negative only); other
    segments look up object keys. ``"answer"`` or ``""`` is the whole answer. When
    the answer itself has a top-level ``"answer"`` key, ``answer.x`` falls back to
    ``answer["answer"]["x"]`` if ``answer["x"]`` does not exist. Keys containing dots
    cannot be addressed.

    Without tolerance (``abs_tol`` and ``rel_tol`` both None or NaN) the value must
    equal ``target`` exactly:

    * numbers compare by value (``1 == 1.0``), as the decimals they are written as;
      ``0.1 + 0.2`` is not ``0.3`` — use a tolerance for computed values;
    * bools are not numbers (``True`` ≠ ``1``);
    * strings compare after trimming surrounding whitespace, case-sensitively;
      a numeric-looking string is still a string (``"42"`` ≠ ``42``);
    * lists and objects compare element-wise with the same rules;
    * a value of ``None`` (JSON null) is never met.

    With a tolerance, both value and target must be finite numbers (not bools,
    not strings — **numeric strings are not parsed**, because structured answers
    are typed JSON and a string answer is a formatting error the rubric should
    see) and the criterion is met when
    ``|value − target| ≤ max(abs_tol or 0, rel_tol·|target| or 0)``. The comparison
    uses the decimal values as written plus a relative slack of 1e-12, so a value
    exactly on the boundary (``46.2`` against ``42 ± 10%``) is met. Negative
    tolerances count as 0; an infinite tolerance accepts any finite number. NaN
    and infinite values or targets are never met.

    A missing key, an index out of range, or a type mismatch is "not met". This
    function never raises on odd answers.

    Args:
        rule: The criterion's rule.
        answer: The response's parsed JSON answer (any value, or None).

    Returns:
        Whether the criterion is met.
    """
    try:
        found, value = lookup(answer, str(rule.key))
        if not found or value is None:
            return False
        abs_tol, rel_tol = _tolerance(rule.abs_tol), _tolerance(rule.rel_tol)
        if abs_tol is None and rel_tol is None:
            return _values_equal(value, rule.target)
        v, t = _as_fraction(value), _as_fraction(rule.target)
        if v is None or t is None:
            return False
        if abs_tol == math.inf or (rel_tol == math.inf and t != 0):
            return True
        tol = Fraction(0)
        if isinstance(abs_tol, Fraction):
            tol = max(tol, abs_tol)
        if isinstance(rel_tol, Fraction):
            tol = max(tol, rel_tol * abs(t))
        slack = _TOL_EPSILON * max(abs(v), abs(t), tol)
        return abs(v - t) <= tol + slack
    except Exception:  # a grading rule must never crash a report
        return False


def auto_rule_from_row(key: Any, target: Any, abs_tol: Any, rel_tol: Any) -> AutoRule:
    def _opt(x: Any) -> float | None:
        if x is None or (isinstance(x, float) and math.isnan(x)):
            return None
        return float(x)

    return AutoRule(
        key=str(key) if key is not None else "",
        target=target,
        abs_tol=_opt(abs_tol),
        rel_tol=_opt(rel_tol),
    )


# ------------------------------------------------------------------ scalar scoring


def criterion_credit(
    points: int, levels: int = 2, *, met: bool | None = None, level: int | None = None
) -> float | None:
    """Points earned on one criterion, or None when it has no verdict.

    ``level`` (clipped to 0 … levels−1) wins over ``met``; without a level, met
    gives full ``points`` and not met gives 0. ``levels`` below 2 count as 2.

    Examples: ``criterion_credit(10, 3, level=1)`` → 5.0;
    ``criterion_credit(-8, met=True)`` → -8.0; ``criterion_credit(5)`` → None.
    """
    top = max(int(levels), 2) - 1
    if level is not None:
        k = min(max(int(level), 0), top)
    elif met is not None:
        k = top if met else 0
    else:
        return None
    return points * k / top


def rubric_score(
    criteria: Sequence[Criterion],
    met: Mapping[str, bool | None],
    *,
    levels: Mapping[str, int | None] | None = None,
    answer: Any = None,
) -> float:
    """The rubric score of one grader on one response (reference implementation).

    Args:
        criteria: The task's rubric.
        met: Criterion id → met verdict (None or absent = no verdict) for the
            judgment criteria. Entries for auto criteria are ignored.
        levels: Criterion id → ordinal level, for criteria graded on a scale.
        answer: The response's structured answer, for auto criteria.

    Returns:
        Σ credit / Σ positive points, clipped to [0, 1]; NaN when the positive
        points sum to 0 or when a judgment criterion has no verdict.
        Example: points +24, +10, +5, −8 with {+24, −8} met → (24 − 8)/39 ≈ 0.41026.
    """
    levels = levels or {}
    positive = sum(c.points for c in criteria if c.points > 0)
    earned = 0.0
    for c in criteria:
        if c.auto is not None:
            earned += c.points if evaluate_auto(c.auto, answer) else 0
            continue
        credit = criterion_credit(c.points, c.levels, met=met.get(c.id), level=levels.get(c.id))
        if credit is None:
            return math.nan
        earned += credit
    if positive <= 0:
        return math.nan
    return min(max(earned / positive, 0.0), 1.0)


def passes(score: float, threshold: float) -> bool:
    """``score >= threshold - PASS_EPSILON``; False for a NaN score."""
    return not math.isnan(score) and score >= threshold - PASS_EPSILON
