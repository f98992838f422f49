"""Active assignment: which responses experts grade next, drawn where the judge is unsure.

A pure decision on plain inputs (no database, no Qt), applied by
:func:`gradercal.db.assignments.assign_active`. Following active statistical inference
(Zrnic & Candès 2024, "Active Statistical Inference", ICML), each still unassigned
response ``i`` is sampled with its own probability ``π_i``, larger where the judge is
less sure, and the estimates reweight every expert-graded response by ``1/π_i``
(:func:`gradercal.analysis.estimate.active_ppi_mean`), so they stay unbiased whatever the
judge's confidences are worth.

**The judge's uncertainty about a response** ``U_i`` is the mean over its criteria of
``p(1 − p)``, ``p`` the judge's probability that the criterion is met (its stored
``confidence`` is the probability of its verdict, so ``p(1 − p) = c(1 − c)``): the
variance of a criterion's verdict error if the confidences are calibrated, and so
proportional to the expected squared error of the response's score. Criteria without a
confidence fall back on the disagreement between judge runs (``p`` = the share of runs
saying met); a response with neither gets the mean ``U`` of the others.

**Probabilities.** The optimal probability is proportional to the standard deviation of
the judge's error, ``π_i ∝ √E[(Y − f)² | U_i]``. Without expert grades yet,
``E[(Y − f)² | U] ∝ U`` (the confidences are taken at face value). With a *pilot* (expert
grades already present, each with its judge uncertainty and squared judge error), the
error model is fitted there — ``E[(Y − f)² | U] = a + bU`` by least squares — and ``b``
is kept only when a one-sided test at 5% says it is positive (else ``b = 0``, ``a`` the
mean squared error): a judge whose confidence does not rank its errors gives a uniform
design in 95% of pilots, so an uninformative judge costs (almost) nothing. The pilot's
expert-graded responses count in the estimate as a uniform batch
(:func:`gradercal.analysis.estimate.active_ppi_mean`). The scores ``s_i = √(a + bU_i)`` are scaled
so that the expected number sampled is exactly the budget: ``π_i = min(1, max(π_min,
c·s_i))`` with ``c`` found by bisection (``Σ π_i = budget``), the **floor** ``π_min``
(default a quarter of the uniform rate ``budget/n``) keeping every response's
probability — and so every weight ``1/π_i`` — bounded.

**The draw is Poisson sampling**: response ``i`` is taken when ``u_i < π_i``, ``u_i`` a
uniform number made from a keyed sha256 of ``(seed, "active", response id)``. The
inclusions are independent and the inclusion probabilities are exactly the ``π_i``
(up to 2⁻⁵² rounding); the number drawn is random with mean ``budget`` (its standard
deviation ``√Σπ(1 − π)`` is reported). The same seed and inputs give the same draw on
every machine, whatever the order of the responses.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from gradercal.errors import Problem, ValidationError

__all__ = [
    "ActiveDraw",
    "Pilot",
    "active_probabilities",
    "default_floor",
    "draw_active",
    "fit_error_model",
    "poisson_uniforms",
    "response_uncertainty",
]

FloatArray = npt.NDArray[np.float64]

#: The default floor as a share of the uniform rate ``budget / n``.
FLOOR_SHARE = 0.25

#: Below this many pilot responses the error model is not fitted (face-value confidences).
MIN_PILOT = 20


@dataclass(frozen=True)
class Pilot:
    """Expert-graded responses so far: the judge's uncertainty and its squared error."""

    uncertainty: FloatArray
    squared_error: FloatArray


@dataclass(frozen=True)
class ActiveDraw:
    """An active draw: every candidate's probability and which were taken."""

    response_ids: tuple[str, ...]
    probabilities: FloatArray
    selected: npt.NDArray[np.bool_]
    floor: float
    budget: int
    error_model: tuple[float, float]
    """``(a, b)`` of ``E[(Y − f)² | U] = a + bU`` (``(0, 1)``: confidences at face value)."""
    error_model_source: str
    """``"confidence"`` (no pilot) or ``"pilot"`` (fitted on expert grades so far)."""

    def chosen(self) -> dict[str, float]:
        """Selected response id → its inclusion probability."""
        return {
            rid: float(p)
            for rid, p, s in zip(self.response_ids, self.probabilities, self.selected, strict=True)
            if s
        }

    @property
    def expected_size_sd(self) -> float:
        p = self.probabilities
        return float(math.sqrt(float(np.sum(p * (1.0 - p)))))


def response_uncertainty(
    confidences: Sequence[float | None], run_shares: Sequence[float | None] = ()
) -> float | None:
    """``U`` of one response: mean ``p(1 − p)`` over its criteria (see the module doc).

    ``confidences``: the judge's confidence in each criterion's verdict (None: missing);
    ``run_shares``: per criterion the share of judge runs saying met (None: one run),
    used where the confidence is missing. None when neither gives anything.
    """
    vals: list[float] = []
    shares = list(run_shares) + [None] * max(0, len(confidences) - len(run_shares))
    for c, s in zip(confidences, shares, strict=False):
        if c is not None and math.isfinite(c):
            p = min(max(float(c), 0.0), 1.0)
        elif s is not None and math.isfinite(s):
            p = min(max(float(s), 0.0), 1.0)
        else:
            continue
        vals.append(p * (1.0 - p))
    return float(np.mean(vals)) if vals else None


def fit_error_model(pilot: Pilot | None) -> tuple[float, float, str]:
    """``(a, b, source)`` of the error model (see the module doc)."""
    if pilot is None or len(pilot.uncertainty) < MIN_PILOT:
        return 0.0, 1.0, "confidence"
    u = np.asarray(pilot.uncertainty, np.float64)
    e = np.asarray(pilot.squared_error, np.float64)
    n = len(u)
    mean_e = float(e.mean())
    su = float(np.sum((u - u.mean()) ** 2))
    if su <= 0.0:
        return max(mean_e, 1e-12), 0.0, "pilot"
    b = float(np.sum((u - u.mean()) * (e - mean_e))) / su
    a = mean_e - b * float(u.mean())
    resid = e - a - b * u
    se_b = math.sqrt(float(np.sum(resid**2)) / max(n - 2, 1) / su)
    # a one-sided test at 5%: the confidences are used only when they rank the errors
    b_low = b if b - 1.6448536269514722 * se_b > 0.0 else 0.0
    a_low = mean_e - b_low * float(u.mean())
    # keep the floor of the error model positive: every response has some error variance
    a_low = max(a_low, 0.05 * max(mean_e, 1e-12))
    return a_low, b_low, "pilot"


def default_floor(budget: int, n: int) -> float:
    """The default ``π_min``: :data:`FLOOR_SHARE` × the uniform rate."""
    return FLOOR_SHARE * budget / n if n else 0.0


def active_probabilities(
    scores: npt.ArrayLike, budget: int, floor: float | None = None
) -> tuple[FloatArray, float]:
    """``π_i = min(1, max(π_min, c·s_i))`` with ``Σ π_i = budget`` (bisection on ``c``).

    Returns the probabilities and the floor used. Equal scores give the uniform
    ``budget/n``. Raises ``ValidationError`` for a budget above ``n`` or a floor whose
    total ``n·π_min`` exceeds the budget.
    """
    s = np.asarray(scores, np.float64)
    n = len(s)
    problems: list[Problem] = []
    if budget < 1:
        problems.append(Problem("assign", None, "budget", f"must be ≥ 1, not {budget}"))
    if budget > n:
        problems.append(
            Problem(
                "assign", None, "budget", f"{budget} responses asked, only {n} without assignment"
            )
        )
    pmin = default_floor(budget, n) if floor is None else float(floor)
    if not math.isfinite(pmin) or not 0.0 <= pmin <= 1.0:
        problems.append(Problem("assign", None, "floor", f"must be in [0, 1], not {floor!r}"))
    elif n and pmin * n > budget + 1e-9:
        problems.append(
            Problem(
                "assign",
                None,
                "floor",
                f"π_min = {pmin:g} over {n} responses expects {pmin * n:.1f} > budget {budget}; "
                f"use at most {budget / n:.4g}",
            )
        )
    if problems:
        raise ValidationError(problems)
    if budget == n:
        return np.ones(n), pmin
    s = np.where(np.isfinite(s) & (s > 0), s, 0.0)
    if not np.any(s > 0):
        return np.full(n, budget / n), pmin

    def total(c: float) -> float:
        return float(np.minimum(1.0, np.maximum(pmin, c * s)).sum())

    lo, hi = 0.0, 1.0
    while total(hi) < budget:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if total(mid) < budget:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-15 * hi:
            break
    p = np.minimum(1.0, np.maximum(pmin, hi * s))
    # remove the bisection's last rounding from the free (unclipped) probabilities
    free = (p > pmin) & (p < 1.0)
    if free.any():
        p[free] *= (budget - float(p[~free].sum())) / float(p[free].sum())
        p = np.minimum(1.0, np.maximum(pmin, p))
    return p, pmin


def poisson_uniforms(response_ids: Sequence[str], seed: str | int) -> FloatArray:
    """The uniform number of each response for the Poisson draw (keyed sha256, 52 bits)."""
    out = np.empty(len(response_ids), np.float64)
    key = str(seed)
    for i, rid in enumerate(response_ids):
        h = hashlib.sha256("\x00".join((key, "active", rid)).encode("utf-8")).hexdigest()
        out[i] = int(h[:13], 16) / float(16**13)
    return out


def draw_active(
    uncertainty: Mapping[str, float | None],
    budget: int,
    *,
    floor: float | None = None,
    seed: str | int = 0,
    pilot: Pilot | None = None,
) -> ActiveDraw:
    """Probabilities and the Poisson draw for the responses in ``uncertainty``.

    ``uncertainty``: response id → ``U`` (None: unknown, given the mean of the known).
    """
    ids = tuple(sorted(uncertainty))
    known = [v for v in uncertainty.values() if v is not None and math.isfinite(v)]
    fill = float(np.mean(known)) if known else 0.0
    u = np.array(
        [fill if (v := uncertainty[r]) is None or not math.isfinite(v) else float(v) for r in ids],
        np.float64,
    )
    a, b, source = fit_error_model(pilot)
    scores = np.sqrt(np.maximum(a + b * u, 0.0))
    p, pmin = active_probabilities(scores, budget, floor)
    sel = poisson_uniforms(ids, seed) < p
    return ActiveDraw(ids, p, sel, pmin, budget, (a, b), source)
