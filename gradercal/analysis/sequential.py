"""Anytime-valid confidence sequences: intervals that may be looked at after every batch.

A fixed-sample interval (Wald, Agresti–Coull, the bootstrap) covers the truth with 95%
probability *at one sample size chosen in advance*. A coordinator who opens the dashboard
every day and stops grading once a model's pass rate "is known to ±0.05" looks at it at
many sample sizes and stops at a favourable one: the chance that some look misses the truth
grows with the number of looks (``tests/analysis/test_sequential.py`` measures 20–30% with
20 looks). A **confidence sequence** ``(C_t)`` covers the truth at every ``t`` at once,

    P(μ ∈ C_t for all t ≥ 1) ≥ 1 − α,

so it may be checked after each new label and grading stopped whenever it is narrow enough.

**Method: the predictable plug-in empirical-Bernstein confidence sequence** of
Waudby-Smith & Ramdas (2024), "Estimating means of bounded random variables by betting",
JRSS-B 86(1), Theorem 2 with the predictable plug-in of their eq. (13)–(15). For
observations ``y_1, y_2, …`` in [0, 1] (gradercal rescales ``[lo, hi]`` to it) whose
conditional mean given the past is ``μ`` (i.i.d. draws, or a random order of the units):

* running mean and variance, started at ½ and ¼:
  ``μ̂_t = (½ + Σ_{i≤t} y_i)/(t + 1)``, ``σ̂²_t = (¼ + Σ_{i≤t} (y_i − μ̂_i)²)/(t + 1)``;
* bet sizes fixed before ``y_t`` is seen (predictable):
  ``λ_t = min(√(2 log(2/α) / (σ̂²_{t−1} t log(1 + t))), c)`` with ``c = ½``;
* ``C_t = (Σ λ_i y_i / Σ λ_i) ± (log(2/α) + Σ v_i ψ_E(λ_i)) / Σ λ_i`` with
  ``v_i = 4 (y_i − μ̂_{i−1})²`` and ``ψ_E(λ) = (−log(1 − λ) − λ)/4``;
* intersected with [0, 1] and with every earlier ``C_s`` (an intersection of the sets of
  a confidence sequence is one too), so the bounds only ever tighten.

Why this one and not a package: ``confseq`` (the authors' C++ library with Python bindings)
ships no wheels and was last released in January 2023, so it would need a C++ tool chain
and Boost on every user's machine; the closed form above is a few vectorised lines, checked
in the tests against a plain loop written from the paper's formulas and by coverage
simulations with known truth. Its width shrinks like ``√(log t / t)``: at a few hundred
labels it is about 1.5–2× the fixed-sample interval's — the price of being allowed to look.

**With a judge (prediction-powered):** for a model's mean over all ``N`` responses, where
the judge graded all of them (mean ``m_f``) and experts a uniformly random, sequentially
growing subset, the rectifiers ``d_i = Y_i − f_i ∈ [−1, 1]`` have mean ``μ − m_f``, so
``m_f + C_t(d)`` is a confidence sequence for ``μ`` (the PPI idea of Angelopoulos et al.
2023, in its anytime-valid form); a judge that agrees with the experts gives rectifiers
near 0 and a narrow sequence.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

#: Largest bet (``c`` in the paper): ½ is the authors' default for the two-sided sequence.
MAX_BET = 0.5


@dataclass(frozen=True)
class ConfidenceSequence:
    """Bounds after each observation: ``low[t - 1]``, ``high[t - 1]`` hold after ``t``."""

    low: NDArray[np.float64]
    high: NDArray[np.float64]
    alpha: float

    @property
    def n(self) -> int:
        return int(self.low.shape[-1])

    def last(self) -> tuple[float, float]:
        """The bounds after every observation so far (the 1-D case)."""
        return float(self.low[..., -1]), float(self.high[..., -1])


def eb_confidence_sequence(
    values: ArrayLike,
    *,
    alpha: float = 0.05,
    lo: float = 0.0,
    hi: float = 1.0,
    max_bet: float = MAX_BET,
) -> ConfidenceSequence:
    """The empirical-Bernstein confidence sequence for the mean of ``values`` in [lo, hi].

    ``values`` in the order they were observed; a 2-D array holds one sequence per row
    (simulations), computed at once. The bounds are in the units of ``values``.

    Raises:
        ValueError: ``alpha`` outside (0, 1), ``hi <= lo``, or a value outside [lo, hi].
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if not hi > lo:
        raise ValueError(f"the bounds must satisfy lo < hi, got [{lo}, {hi}]")
    x = np.asarray(values, dtype=np.float64)
    if x.size and (np.nanmin(x) < lo or np.nanmax(x) > hi or np.isnan(x).any()):
        raise ValueError(f"every value must lie in [{lo}, {hi}] (and none be missing)")
    y = (x - lo) / (hi - lo)
    n = y.shape[-1]
    t = np.arange(1, n + 1, dtype=np.float64)
    log_term = np.log(2.0 / alpha)
    # running mean and variance after each observation (started at 1/2 and 1/4)
    mu = (0.5 + np.cumsum(y, axis=-1)) / (t + 1.0)
    var = (0.25 + np.cumsum((y - mu) ** 2, axis=-1)) / (t + 1.0)
    # the same before each observation: what the bet may depend on
    mu_prev = np.concatenate([np.full((*y.shape[:-1], 1), 0.5), mu[..., :-1]], axis=-1)
    var_prev = np.concatenate([np.full((*y.shape[:-1], 1), 0.25), var[..., :-1]], axis=-1)
    lam = np.minimum(np.sqrt(2.0 * log_term / (var_prev * t * np.log1p(t))), max_bet)
    v = 4.0 * (y - mu_prev) ** 2
    psi = (-np.log1p(-lam) - lam) / 4.0
    sum_lam = np.cumsum(lam, axis=-1)
    centre = np.cumsum(lam * y, axis=-1) / sum_lam
    radius = (log_term + np.cumsum(v * psi, axis=-1)) / sum_lam
    low = np.maximum.accumulate(np.clip(centre - radius, 0.0, 1.0), axis=-1)
    high = np.minimum.accumulate(np.clip(centre + radius, 0.0, 1.0), axis=-1)
    # the running intersection of intervals that all cover the truth is never empty; with
    # such a rare miss it can be, and then both bounds meet at the crossing point
    crossed = low > high
    if crossed.any():
        mid = (low + high) / 2.0
        low = np.where(crossed, mid, low)
        high = np.where(crossed, mid, high)
    return ConfidenceSequence(lo + (hi - lo) * low, lo + (hi - lo) * high, alpha)


def ppi_confidence_sequence(
    human: ArrayLike,
    judge_on_labelled: ArrayLike,
    judge_mean_all: float,
    *,
    alpha: float = 0.05,
) -> ConfidenceSequence:
    """Prediction-powered confidence sequence for a mean in [0, 1].

    ``human`` and ``judge_on_labelled`` are the expert and judge values of the labelled
    units in the order they were labelled; ``judge_mean_all`` the judge's mean over every
    unit of the population (labelled or not).
    """
    d = np.asarray(human, dtype=np.float64) - np.asarray(judge_on_labelled, dtype=np.float64)
    cs = eb_confidence_sequence(d, alpha=alpha, lo=-1.0, hi=1.0)
    low = np.clip(judge_mean_all + cs.low, 0.0, 1.0)
    high = np.clip(judge_mean_all + cs.high, 0.0, 1.0)
    return ConfidenceSequence(low, high, alpha)
