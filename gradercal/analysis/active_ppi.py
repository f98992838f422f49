"""PPI++ under an active design: the actively drawn responses weighted by ``1/π_i``.

Active inference (Zrnic & Candès 2024) in batches (:func:`active_ppi_mean`). Each labelled
response has its inclusion probability ``π_i``, or NaN for a response labelled outside the
active draws (the *pilot*: earlier uniform assignments, assumed a random sample as
:func:`gradercal.analysis.ppi.ppi_mean` assumes). The active draws are numbered in rounds;
round ``r`` sampled, with its probabilities, only responses labelled in neither the
pilot nor an earlier round. With ``D_i = Y_i − λ f_i``:

* each round's Hájek estimate of the population mean of ``D``, counting the responses
  labelled before it with certainty:
  ``D̄_r = (Σ_before D + Σ_r D/π)/(n_before + Σ_r 1/π)``, with the Poisson-sampling
  variance ``V_r = Σ_r (1 − π)/π² (D − D̄_r)²/N²``;
* the pilot's own mean ``D̄₀`` with ``V₀ = (1 − n₀/N) s²_D/n₀``;
* combined with the batch shares ``α_k = n_k/n``: ``D̄ = Σ α_k D̄_k``,
  ``V = Σ α_k² V_k`` (uncorrelated: each ``D̄_r`` is conditionally unbiased given
  what came before). The pilot's labels therefore count as a uniform batch instead
  of being spent on themselves only, and a draw that came out uniform gives the
  variance of a uniform sample of ``n``.

``λ`` is power-tuned for this design: the slope of ``Y`` on ``f`` over the labelled
responses weighted by their coefficients in ``V`` (the ``λ`` that minimises the
estimated variance), clipped to [0, 1]. ``θ̂ = λ mean_all(f) + D̄``,
``se² = V + Var(λ f_all)/N`` (the population term of ``ppi_mean``), interval
``θ̂ ± t_{n−1} se`` clipped to [0, 1]. ``classical`` is the same estimator with
``λ = 0`` (experts only, weighted); ``n_effective = n · se_classical²/se²``.

**Small samples, binary target** (fewer than :data:`ACTIVE_SMALL_SAMPLE` labels): the
plain ``t`` interval covered only 61–81% at 20–40 labels and pass rates 0.1 / 0.9
(the judge's rarer kind of error sits on responses of small probability, and a small
sample often holds none). The interval is then Agresti–Coull-type on the design's
effective number of labels ``n* = s²_D/V_D`` (Korn & Graubard 1998; ``s²_D`` the
design-weighted variance of ``D``, ``V_D`` the variance of its weighted mean; ``n``
when either is 0): ``a = ACTIVE_PSEUDO·q²/4`` pseudo-pairs at each corner ``c`` of
the 2×2 table (``D`` at ``0, −λ, 1, 1 − λ``), centre ``m = (n* D̄ + a Σc)/(n* + 4a)``
(plus ``λ mean_all(f)``), variance ``[n*(s²_D + (D̄ − m)²) + a Σ(c − m)²]/(n* + 4a)²``
plus the population term, and ``q`` the ``t`` quantile with Kish's effective number
of labels minus one as df (the pilot's count plus each round's ``(Σ1/π)²/Σ1/π²``).
Coverage: tests/analysis/test_active_small_sample.py (docs/planning.md). ``θ̂`` itself
is unchanged.

:mod:`gradercal.analysis.estimate` re-exports everything here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from gradercal.analysis.ppi import (
    PpiResult,
    clip01,
    is_binary,
    join_notes,
    small_note,
    t_quantile,
    too_few,
    undefined_result,
)

FloatArray = npt.NDArray[np.float64]

#: Pseudo-pairs of the active design's small-sample pass-rate interval, in units of the
#: Agresti–Coull ``q²/4`` per cell (see :func:`active_ppi_mean`).
ACTIVE_PSEUDO = 2.0
#: Below this many labels the active design's pass-rate interval is the Agresti–Coull-type
#: one (:func:`active_ppi_mean`): there the plain ``t`` interval covered 69–87% at pass
#: rates 0.1 and 0.9 (tests/analysis/test_active_small_sample.py); at 100 labels it
#: covered 99%.
ACTIVE_SMALL_SAMPLE = 50


def _batches(
    P: FloatArray, rounds: npt.ArrayLike | None
) -> tuple[list[npt.NDArray[np.bool_]], list[float]]:
    """The batches of an active design (the pilot first, then each round) and their
    shares of the labels; see :func:`active_ppi_mean`."""
    drawn = np.isfinite(P)
    if np.any(P[drawn] <= 0.0) or np.any(P[drawn] > 1.0):
        raise ValueError("inclusion probabilities must lie in (0, 1]")
    rnd = np.ones(len(P), np.int64) if rounds is None else np.asarray(rounds, np.int64)
    if rnd.shape != P.shape:
        raise ValueError("rounds must have the length of prob")
    batches = [~drawn] + [drawn & (rnd == k) for k in sorted(set(rnd[drawn].tolist()))]
    n = max(len(P), 1)
    return batches, [float(b.sum()) / n for b in batches]


def _batch_mean(
    D: FloatArray,
    P: FloatArray,
    batches: Sequence[npt.NDArray[np.bool_]],
    alphas: Sequence[float],
    N: int,
) -> tuple[float, float]:
    """The design-weighted mean of ``D`` over a population of ``N`` and its variance:
    the pilot's mean and each round's Hájek estimate combined with the batch shares
    (the estimator of :func:`active_ppi_mean` with ``λ = 0``)."""
    pilot = batches[0]
    n0 = int(pilot.sum())
    d = var = 0.0
    if n0:
        d += alphas[0] * float(D[pilot].mean())
        if n0 > 1:
            var += alphas[0] ** 2 * (1.0 - n0 / N) * float(np.var(D[pilot], ddof=1)) / n0
    before = pilot.copy()
    for b, alpha in zip(batches[1:], alphas[1:], strict=True):
        act, pa = D[b], P[b]
        w_sum = float(before.sum()) + float(np.sum(1.0 / pa))
        d_r = (float(D[before].sum()) + float(np.sum(act / pa))) / w_sum
        v_r = float(np.sum((1.0 - pa) / pa**2 * (act - d_r) ** 2)) / (N * N)
        d += alpha * d_r
        var += alpha**2 * v_r
        before |= b
    return d, var


def active_design_mean(
    y: npt.ArrayLike,
    prob: npt.ArrayLike,
    n_population: int,
    *,
    rounds: npt.ArrayLike | None = None,
) -> tuple[float, float]:
    """The design-weighted mean of any per-response value ``y`` over the ``n_population``
    responses, from the labelled ones under an active design, and its variance.

    The expert-only estimator of :func:`active_ppi_mean` (``λ = 0``, unclipped):
    ``prob`` and ``rounds`` as there (NaN: the uniform pilot). For figures other than
    the mean score and pass rate (e.g. the dashboard's design-weighted judge–consensus
    agreement), which combine such means.

    Returns:
        ``(mean, variance)``; NaN for both with fewer than one labelled response.
    """
    Y = np.asarray(y, np.float64)
    P = np.asarray(prob, np.float64)
    if Y.shape != P.shape:
        raise ValueError("y and prob must have the same length")
    if len(Y) == 0 or n_population < len(Y):
        return math.nan, math.nan
    batches, alphas = _batches(P, rounds)
    return _batch_mean(Y, P, batches, alphas, n_population)


def active_ppi_mean(
    y: npt.ArrayLike,
    yhat: npt.ArrayLike,
    prob: npt.ArrayLike,
    yhat_all: npt.ArrayLike,
    *,
    ci: float = 0.95,
    binary: bool | None = None,
    rounds: npt.ArrayLike | None = None,
) -> PpiResult:
    """PPI++ under an active design: the actively drawn responses weighted by ``1/π_i``
    (the estimator and its intervals: the module docstring).

    Args:
        y: Human values on the labelled responses.
        yhat: Judge values on them.
        prob: Each labelled response's inclusion probability ``π_i`` (NaN: the pilot).
        yhat_all: Judge values on every response (labelled ones included).
        ci: Confidence level.
        binary: Whether the values are 0/1 (None: when all of them are).
        rounds: The round of each labelled response's draw (default: one round).

    Returns:
        The estimate; undefined (None with a note) with fewer than two labelled
        responses or no responses at all.
    """
    if not 0.0 < ci < 1.0:
        raise ValueError("ci must be between 0 and 1")
    Y = np.asarray(y, np.float64)
    F = np.asarray(yhat, np.float64)
    P = np.asarray(prob, np.float64)
    A = np.asarray(yhat_all, np.float64)
    if not (Y.shape == F.shape == P.shape):
        raise ValueError("y, yhat and prob must have the same length")
    batches, alphas = _batches(P, rounds)
    design = _Design(Y, F, P, A, batches, alphas)
    n, N = len(Y), len(A)
    is_bin = is_binary(Y, F, A) if binary is None else bool(binary)
    small = is_bin and n < ACTIVE_SMALL_SAMPLE
    kind = "agresti-coull on the effective n, t with kish df" if small else "t, n-1 df"
    method = f"active ppi++ hajek ({kind})"
    classical_method = f"active hajek ({kind})"
    judge_only = float(np.mean(A)) if N else None
    if n < 2 or N == 0:
        figures = (None, None, judge_only)
        return undefined_result(n, N - n, figures, too_few(n), method, classical_method)
    q = t_quantile(ci, n - 1.0)
    lam = design.tuned_lambda()
    est, var = design.combine(lam)
    cl, cvar = design.combine(0.0)
    se = math.sqrt(var)
    csd = math.sqrt(cvar)
    if small:
        q_kish = t_quantile(ci, max(design.kish_n() - 1.0, 1.0))
        (lo, hi), classical_ci = design.adjusted(lam, q_kish), design.adjusted(0.0, q_kish)
    else:
        lo, hi = clip01(est - q * se), clip01(est + q * se)
        classical_ci = (clip01(cl - q * csd), clip01(cl + q * csd))
    n_eff = n * cvar / var if var > 0 and cvar > 0 else None
    notes = [
        None if clip01(est) == est else f"θ̂ = {est:.4g} lies outside [0, 1] and was clipped",
        small_note(n),
    ]
    return PpiResult(
        clip01(est),
        lo,
        hi,
        se,
        lam,
        n,
        N - n,
        n_eff,
        clip01(cl),
        classical_ci,
        judge_only,
        note=join_notes(notes),
        method=method,
        classical_method=classical_method,
    )


@dataclass(frozen=True)
class _Design:
    """The labelled responses of an active design (``Y``, the judge's ``F``, the
    probabilities ``P``), the judge on all (``A``), and the batches with their shares."""

    Y: FloatArray
    F: FloatArray
    P: FloatArray
    A: FloatArray
    batches: list[npt.NDArray[np.bool_]]
    alphas: list[float]

    def tuned_lambda(self) -> float:
        """The ``λ`` minimising ``Σ c_i (Y_i − λ f_i − centre)² + λ² Var(f_all)/N``, with
        ``c_i`` each labelled response's coefficient in ``V`` (a weighted regression
        slope), clipped to [0, 1]; 1 when no coefficient is positive."""
        Y, F, P, A, N = self.Y, self.F, self.P, self.A, len(self.A)
        drawn = np.isfinite(P)
        pilot = ~drawn
        n0 = int(pilot.sum())
        safe_p = np.where(drawn, P, 1.0)
        c = np.zeros(len(Y))
        if n0 > 1:
            c[pilot] = self.alphas[0] ** 2 * (1.0 - n0 / N) / (n0 * (n0 - 1))
        for b, alpha in zip(self.batches[1:], self.alphas[1:], strict=True):
            c[b] = alpha**2 * (1.0 - safe_p[b]) / safe_p[b] ** 2 / (N * N)
        csum = float(c.sum())
        if csum <= 0:
            return 1.0
        fc = float(np.sum(c * F)) / csum
        yc = float(np.sum(c * Y)) / csum
        sxy = float(np.sum(c * (F - fc) * (Y - yc)))
        sxx = float(np.sum(c * (F - fc) ** 2)) + float(np.var(A)) / N
        return 0.0 if sxx <= 0 else float(np.clip(sxy / sxx, 0.0, 1.0))

    def combine(self, lam_v: float) -> tuple[float, float]:
        """``θ̂`` and ``se²`` for a fixed ``λ``."""
        N = len(self.A)
        d, var = _batch_mean(self.Y - lam_v * self.F, self.P, self.batches, self.alphas, N)
        return lam_v * float(np.mean(self.A)) + d, var + float(np.var(lam_v * self.A)) / N

    def kish_n(self) -> float:
        """Kish's effective number of labels (the small-sample interval's ``t`` quantile:
        a few heavy weights make a small sample): the pilot's count plus each round's
        ``(Σ1/π)²/Σ1/π²``."""
        P = self.P
        return float(int(self.batches[0].sum())) + sum(
            float(np.sum(1.0 / P[b])) ** 2 / float(np.sum(1.0 / P[b] ** 2))
            for b in self.batches[1:]
            if b.any()
        )

    def adjusted(self, lam_v: float, q_kish: float) -> tuple[float, float]:
        """The Agresti–Coull-type interval of a binary target under the design, on the
        design's *effective* number of labels ``n* = s²_D/V_D`` (Korn & Graubard 1998;
        ``s²_D`` the design-weighted variance of ``D``, ``V_D`` the variance of its
        weighted mean; ``n`` when either is 0): ``a = PSEUDO·q²/4`` pseudo-pairs at each
        corner ``c`` of the 2×2 table (``D`` at ``0, −λ, 1, 1 − λ``), centre
        ``m = (n* D̄ + a Σc)/(n* + 4a)``, variance
        ``[n* (s²_D + (D̄ − m)²) + a Σ(c − m)²]/(n* + 4a)²``. The pseudo-pairs stand for
        the rare cell (the judge's rarer kind of error) that a small sample misses."""
        P, batches, alphas, A, N = self.P, self.batches, self.alphas, self.A, len(self.A)
        D = self.Y - lam_v * self.F
        d, v_d = _batch_mean(D, P, batches, alphas, N)
        s2 = max(_batch_mean((D - d) ** 2, P, batches, alphas, N)[0], 0.0)
        n_star = float(len(self.Y)) if v_d <= 0 or s2 <= 0 else s2 / v_d
        a = ACTIVE_PSEUDO * q_kish * q_kish / 4.0
        corners = np.array([0.0, -lam_v, 1.0, 1.0 - lam_v])
        n_aug = n_star + 4.0 * a
        mid = (n_star * d + a * float(corners.sum())) / n_aug
        v = (n_star * (s2 + (d - mid) ** 2) + a * float(np.sum((corners - mid) ** 2))) / n_aug
        h = q_kish * math.sqrt(v / n_aug + float(np.var(lam_v * A)) / N)
        centre = lam_v * float(np.mean(A)) + mid
        return clip01(centre - h), clip01(centre + h)
