"""PPI++ means and their intervals: plain (:func:`ppi_mean`) and stratified
(:func:`stratified_ppi_mean`), with the pieces the other estimators share (quantiles,
clipping, notes, :class:`PpiResult`).

The estimators, their intervals and their coverage are described in
:mod:`gradercal.analysis.estimate`, which re-exports everything here.

This module imports numpy and scipy only.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]


def z_quantile(ci: float) -> float:
    """The normal quantile of a two-sided ``ci`` interval."""
    # (scipy.special's function is what scipy.stats.norm.ppf computes, without importing
    # scipy.stats: about 0.35 s of a report)
    from scipy.special import ndtri  # type: ignore[import-untyped, unused-ignore]

    return float(ndtri((1.0 + ci) / 2.0))


@functools.lru_cache(maxsize=256)
def t_quantile(ci: float, df: float) -> float:
    """The ``t`` quantile (``df`` degrees of freedom) of a two-sided ``ci`` interval."""
    # (scipy.stats.t.ppf computes scipy.special.stdtrit)
    from scipy.special import stdtrit  # type: ignore[import-untyped, unused-ignore]

    return float(stdtrit(df, (1.0 + ci) / 2.0))


Interval = Literal["small-sample", "wald"]

#: Below this many human-graded responses (per model, or per stratum) an interval's
#: coverage was not checked by simulation; the result says so in its note.
MIN_LABELS = 10

#: Strata with fewer human-graded responses are pooled (see :func:`stratified_ppi_mean`).
MIN_STRATUM_LABELS = 10

#: Strata are pooled only when their labelling rates differ by less than this factor.
MAX_RATE_RATIO = 2.0

#: Total weight of the pseudo-pairs at the four corners of [0, 1]² that keep the
#: variance of a continuous target positive (``t`` intervals).
FLOOR_WEIGHT = 0.25

_CORNERS = ((0.0, 0.0), (0.0, 1.0), (1.0, 0.0), (1.0, 1.0))


def is_binary(*arrays: FloatArray) -> bool:
    """Whether every value is 0 or 1."""
    return all(bool(np.all((a == 0.0) | (a == 1.0))) for a in arrays)


def _method_name(interval: Interval, binary: bool, ppi: bool) -> str:
    if interval == "wald":
        base = "wald (z)"
    elif binary:
        base = "agresti-coull (t, n-1 df)"
    else:
        base = "t (n-1 df)"
    return f"ppi++ {base}" if ppi else base


@dataclass(frozen=True)
class _Fit:
    """The pieces of one PPI++ interval (λ fixed)."""

    estimate: float  # θ̂ (unclipped)
    center: float  # the interval's centre (θ̂ except for Agresti–Coull)
    var_l: float  # labelled part of se²
    var_u: float  # unlabelled part of se²
    df: float  # degrees of freedom of var_l (inf: normal quantile)

    @property
    def se(self) -> float:
        return math.sqrt(self.var_l + self.var_u)


def _fit(
    Y: FloatArray,
    Yh: FloatArray,
    Yu: FloatArray,
    lam: float,
    *,
    ci: float,
    binary: bool,
    interval: Interval,
) -> _Fit:
    """``θ̂`` and its standard error for a fixed ``λ`` (``n ≥ 2``); see ``ppi_mean``."""
    n, N = len(Y), len(Yu)
    D = Y - lam * Yh
    est = float(np.mean(D)) + (lam * float(np.mean(Yu)) if N else 0.0)
    var_u = float(np.var(lam * Yu)) / N if N else 0.0
    if interval == "wald":
        return _Fit(est, est, float(np.var(D)) / n, var_u, math.inf)
    corners = np.array([y - lam * yh for y, yh in _CORNERS])
    if binary:
        # Agresti–Coull: q²/4 pseudo-pairs in each cell of the 2×2 table (human × judge),
        # the centre and the variance taken over the augmented labelled sample.
        a = t_quantile(ci, n - 1) ** 2 / 4.0
        n_aug = n + 4.0 * a
        mid = (float(D.sum()) + a * float(corners.sum())) / n_aug
        var = (float(np.sum((D - mid) ** 2)) + a * float(np.sum((corners - mid) ** 2))) / n_aug
        center = mid + (lam * float(np.mean(Yu)) if N else 0.0)
        return _Fit(est, center, var / n_aug, var_u, n - 1.0)
    # t: the sample variance of D with FLOOR_WEIGHT/4 pseudo-pairs at each corner
    m = float(np.mean(D))
    a = FLOOR_WEIGHT / 4.0
    var = (float(np.sum((D - m) ** 2)) + a * float(np.sum((corners - m) ** 2))) / (
        n - 1.0 + FLOOR_WEIGHT
    )
    return _Fit(est, est, var / n, var_u, n - 1.0)


def quantile(ci: float, df: float) -> float:
    """:func:`t_quantile`, or :func:`z_quantile` for infinite ``df``."""
    return z_quantile(ci) if math.isinf(df) else t_quantile(ci, df)


def clip01(x: float) -> float:
    """``x`` clipped to [0, 1]."""
    return min(max(x, 0.0), 1.0)


@dataclass(frozen=True)
class PpiResult:
    """A PPI++ estimate of a mean.

    Attributes:
        estimate: ``θ̂`` clipped to [0, 1] (None when undefined, see ``note``).
        ci_low, ci_high: The interval (``method``), clipped to [0, 1].
        se: The standard error behind the interval.
        lam: The power-tuning ``λ`` (per stratum: None; see ``strata``).
        n_labelled: ``n``.
        n_unlabelled: ``N``.
        n_effective: ``n · (se_classical/se)²`` (None when undefined).
        classical: The human-only mean of the labelled ``Y``.
        classical_ci: Its interval (``classical_method``), clipped to [0, 1].
        judge_only: The judge's mean over all ``n + N`` responses (biased in general).
        note: Why a value is missing, or caveats (joined by ``"; "``).
        strata: Per-stratum results (stratified estimates only).
        method: How ``ci`` was computed, e.g. ``"ppi++ t (n-1 df)"``.
        classical_method: How ``classical_ci`` was computed, e.g. ``"agresti-coull
            (t, n-1 df)"``.
    """

    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    se: float | None
    lam: float | None
    n_labelled: int
    n_unlabelled: int
    n_effective: float | None
    classical: float | None
    classical_ci: tuple[float, float] | None
    judge_only: float | None
    note: str | None = None
    strata: dict[str, PpiResult] | None = None
    method: str | None = None
    classical_method: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        out: dict[str, Any] = {
            "estimate": self.estimate,
            "ci": None
            if self.ci_low is None or self.ci_high is None
            else [self.ci_low, self.ci_high],
            "method": self.method,
            "se": self.se,
            "lambda": self.lam,
            "n_labelled": self.n_labelled,
            "n_unlabelled": self.n_unlabelled,
            "n_effective": self.n_effective,
            "gain": (
                None
                if self.n_effective is None or self.n_labelled == 0
                else self.n_effective / self.n_labelled
            ),
            "classical": self.classical,
            "classical_ci": None if self.classical_ci is None else list(self.classical_ci),
            "classical_method": self.classical_method,
            "judge_only": self.judge_only,
            "note": self.note,
        }
        if self.strata is not None:
            out["strata"] = {k: v.to_dict() for k, v in self.strata.items()}
        return out


def too_few(n: int) -> str:
    """The note of an estimate refused for want of labels (``n`` found)."""
    return f"needs at least two human-graded responses (found {n})"


def undefined_result(
    n: int,
    n_unlabelled: int,
    figures: tuple[float | None, tuple[float, float] | None, float | None],
    note: str,
    method: str,
    classical_method: str,
    strata: dict[str, PpiResult] | None = None,
) -> PpiResult:
    """A :class:`PpiResult` without an estimate (``note`` says why); ``figures``: the
    classical mean, its interval and the judge-only mean, which may still be known."""
    classical, classical_ci, judge_only = figures
    return PpiResult(
        None,
        None,
        None,
        None,
        None,
        n,
        n_unlabelled,
        None,
        classical,
        classical_ci,
        judge_only,
        note=note,
        strata=strata,
        method=method,
        classical_method=classical_method,
    )


def _power_tuned(
    Y: FloatArray, Yh: FloatArray, all_hat: FloatArray, N: int, lam: float | None
) -> float:
    """PPI++'s ``λ``: 0 without unlabelled responses, ``lam`` when given, else
    ``Cov(Y, Ŷ) / ((1 + n/N) Var(Ŷ ∪ Ỹ))`` clipped to [0, 1] (0 when the variance is 0)."""
    if N == 0:
        return 0.0
    if lam is not None:
        return float(lam)
    n = len(Y)
    cov = float(np.mean((Y - Y.mean()) * (Yh - Yh.mean())))
    var = float(np.var(all_hat, ddof=1))
    return 0.0 if var <= 0 else float(np.clip(cov / ((1.0 + n / N) * var), 0.0, 1.0))


def join_notes(notes: Sequence[str | None]) -> str | None:
    """The notes given, once each, joined by ``"; "`` (None: none)."""
    kept = [x for x in notes if x]
    return "; ".join(dict.fromkeys(kept)) if kept else None


def small_note(n: int, what: str = "human-graded responses") -> str | None:
    """The caveat of fewer than :data:`MIN_LABELS` labels (None: enough)."""
    if n >= MIN_LABELS:
        return None
    return (
        f"only {n} {what}: below {MIN_LABELS} the intervals may cover less than their nominal level"
    )


def _classical(
    y: FloatArray, ci: float, binary: bool, interval: Interval
) -> tuple[float | None, tuple[float, float] | None, _Fit | None]:
    if len(y) == 0:
        return None, None, None
    m = float(np.mean(y))
    if len(y) < 2:
        return m, None, None
    empty = np.zeros(0, np.float64)
    if interval == "wald":
        # the human-only Wald interval, sd with divisor n − 1
        s = float(np.std(y, ddof=1)) / math.sqrt(len(y))
        f = _Fit(m, m, s * s, 0.0, math.inf)
    else:
        f = _fit(y, y, empty, 0.0, ci=ci, binary=binary, interval=interval)
    h = quantile(ci, f.df) * f.se
    return m, (clip01(f.center - h), clip01(f.center + h)), f


def ppi_mean(
    y: npt.ArrayLike,
    yhat: npt.ArrayLike,
    yhat_unlabelled: npt.ArrayLike,
    *,
    ci: float = 0.95,
    lam: float | None = None,
    binary: bool | None = None,
    interval: Interval = "small-sample",
) -> PpiResult:
    """PPI++ estimate and interval of a mean (see the module docstring).

    Args:
        y: Human values on the labelled responses.
        yhat: Judge values on the same responses.
        yhat_unlabelled: Judge values on the unlabelled responses.
        ci: Confidence level.
        lam: A fixed ``λ`` (None: power-tuned and clipped to [0, 1]).
        binary: Whether the values are 0/1 (None: when all of them are).
        interval: ``"small-sample"`` (default: Agresti–Coull-type for a binary target,
            ``t`` with ``n − 1`` df and a variance floor otherwise) or ``"wald"`` (the
            textbook ``θ̂ ± z se`` of ``ppi_py``, unclipped).

    Returns:
        The estimate; with ``N = 0`` it is the classical mean (``λ = 0``). Undefined
        (None with a note) with fewer than two labelled responses.
    """
    if not 0.0 < ci < 1.0:
        raise ValueError("ci must be between 0 and 1")
    Y = np.asarray(y, np.float64)
    Yh = np.asarray(yhat, np.float64)
    Yu = np.asarray(yhat_unlabelled, np.float64)
    if Y.shape != Yh.shape:
        raise ValueError("y and yhat must have the same length")
    n, N = len(Y), len(Yu)
    is_bin = is_binary(Y, Yh, Yu) if binary is None else bool(binary)
    method = _method_name(interval, is_bin, ppi=True)
    classical_method = _method_name(interval, is_bin, ppi=False)
    classical, classical_ci, cfit = _classical(Y, ci, is_bin, interval)
    all_hat = np.concatenate([Yh, Yu])
    judge_only = float(np.mean(all_hat)) if len(all_hat) else None
    if n < 2:
        return undefined_result(
            n, N, (classical, classical_ci, judge_only), too_few(n), method, classical_method
        )
    lam_v = _power_tuned(Y, Yh, all_hat, N, lam)
    f = _fit(Y, Yh, Yu, lam_v, ci=ci, binary=is_bin, interval=interval)
    se = f.se
    h = quantile(ci, f.df) * se
    if interval == "wald":
        lo, hi, est = f.center - h, f.center + h, f.estimate
        se_cl2 = float(np.var(Y)) / n
    else:
        lo, hi, est = clip01(f.center - h), clip01(f.center + h), clip01(f.estimate)
        se_cl2 = cfit.se**2 if cfit is not None else 0.0
    n_eff = n * se_cl2 / se**2 if se > 0 and se_cl2 > 0 else None
    notes = [
        None if N else "no response without human grades: the human-only mean",
        None if est == f.estimate else f"θ̂ = {f.estimate:.4g} lies outside [0, 1] and was clipped",
        small_note(n),
    ]
    return PpiResult(
        est,
        lo,
        hi,
        se,
        lam_v,
        n,
        N,
        n_eff,
        classical,
        classical_ci,
        judge_only,
        note=join_notes(notes),
        method=method,
        classical_method=classical_method,
    )


def _compatible(rates: Sequence[float]) -> bool:
    """Whether strata labelled at these rates may be pooled: largest / smallest below
    :data:`MAX_RATE_RATIO` (a stratum without labels pools with none)."""
    lo, hi = min(rates), max(rates)
    return lo > 0.0 and hi < MAX_RATE_RATIO * lo


def _pool_strata(
    counts: dict[str, int], totals: dict[str, int], minimum: int
) -> tuple[dict[str, list[str]], list[str]]:
    """Groups of strata with at least ``minimum`` labels each, and the strata left over.

    A stratum with ``minimum`` labels is a group of its own. The others are pooled only
    with strata labelled at a similar rate (``counts/totals``; :func:`_compatible`):
    taken in order of rate, each joins the pool of the previous ones while the rates
    stay compatible, else starts a new pool. A pool still short absorbs, while it is,
    the compatible group with the fewest labels. Pools that stay short are returned as
    left over (pooling them with strata labelled at other rates would bias the
    estimate: the labelled responses would over-represent the better-labelled stratum)
    — unless every stratum is labelled at a compatible rate: then all form one group.
    """
    rate = {k: counts[k] / totals[k] if totals[k] else 0.0 for k in counts}
    groups = {k: [k] for k, c in counts.items() if c >= minimum}
    small = sorted((k for k, c in counts.items() if c < minimum), key=lambda k: (rate[k], k))
    pools: list[list[str]] = []
    for k in small:
        if pools and _compatible([rate[x] for x in [*pools[-1], k]]):
            pools[-1].append(k)
        else:
            pools.append([k])
    left: list[str] = []
    for pool in pools:
        while sum(counts[k] for k in pool) < minimum:
            fits = [
                g for g, members in groups.items() if _compatible([rate[x] for x in pool + members])
            ]
            if not fits:
                break
            g = min(fits, key=lambda g: (sum(counts[s] for s in groups[g]), g))
            pool += groups.pop(g)
        if sum(counts[k] for k in pool) >= minimum:
            groups["(pooled) " + " + ".join(sorted(pool))] = sorted(pool)
        else:
            left += pool
    if left and _compatible([rate[k] for k in counts]):
        return {"(pooled) " + " + ".join(sorted(counts)): sorted(counts)}, []  # plain PPI++
    return groups, sorted(left)


def stratified_ppi_mean(
    y: npt.ArrayLike,
    yhat: npt.ArrayLike,
    strata: Sequence[Any],
    yhat_unlabelled: npt.ArrayLike,
    strata_unlabelled: Sequence[Any],
    *,
    ci: float = 0.95,
    binary: bool | None = None,
    interval: Interval = "small-sample",
    min_labels: int = MIN_STRATUM_LABELS,
) -> PpiResult:
    """Stratified PPI++: one power-tuned estimate per stratum, weighted by stratum size.

    Strata with fewer than ``min_labels`` labelled responses are pooled into
    ``"(pooled) a + b"`` strata with strata labelled at a similar rate (within
    :data:`MAX_RATE_RATIO`; see :func:`_pool_strata`); when a single stratum is left the
    result is plain PPI++ with a note; when a short stratum has no stratum of a similar
    rate to pool with, the estimate is refused (None, the note says which and why). The combined
    interval is ``Σ w_k c_k ± q·se`` with ``c_k`` the strata's centres,
    ``se² = Σ w_k² se_k²`` and ``q`` the ``t`` quantile with Welch–Satterthwaite df over
    the strata's labelled variance parts (small-sample) or ``z`` (Wald).

    Args:
        y: Human values on the labelled responses.
        yhat: Judge values on them.
        strata: The stratum of each labelled response.
        yhat_unlabelled: Judge values on the unlabelled responses.
        strata_unlabelled: Their strata.
        ci: Confidence level.
        binary: See :func:`ppi_mean`.
        interval: See :func:`ppi_mean`.
        min_labels: The fewest labelled responses a stratum may have (at least 2).

    Returns:
        The combined estimate with ``strata`` filled in (the pooled groups); undefined
        with fewer than two labelled responses in all.
    """
    if min_labels < 2:
        raise ValueError("min_labels must be at least 2")
    Y = np.asarray(y, np.float64)
    Yh = np.asarray(yhat, np.float64)
    Yu = np.asarray(yhat_unlabelled, np.float64)
    s_l = np.asarray([str(s) for s in strata], dtype=object)
    s_u = np.asarray([str(s) for s in strata_unlabelled], dtype=object)
    labels = sorted(set(s_l) | set(s_u))
    is_bin = is_binary(Y, Yh, Yu) if binary is None else bool(binary)
    kw: dict[str, Any] = {"ci": ci, "binary": is_bin, "interval": interval}
    counts = {k: int(np.sum(s_l == k)) for k in labels}
    totals = {k: counts[k] + int(np.sum(s_u == k)) for k in labels}
    groups, left = _pool_strata(counts, totals, min_labels)
    pooled = sorted(k for k in labels if counts[k] < min_labels and k not in left)
    pool_note = (
        f"strata with fewer than {min_labels} human-graded responses pooled: " + ", ".join(pooled)
        if pooled
        else None
    )
    method = _stratified_method(interval, is_bin)
    if left:
        all_hat = np.concatenate([Yh, Yu])
        classical, classical_ci, _ = _classical(Y, ci, is_bin, interval)
        figures = (classical, classical_ci, float(np.mean(all_hat)) if len(all_hat) else None)
        why = _refusal(left, counts, totals, min_labels)
        cmethod = _method_name(interval, is_bin, ppi=False)
        return undefined_result(len(Y), len(Yu), figures, why, method, cmethod, strata={})
    if len(groups) <= 1:
        plain = ppi_mean(Y, Yh, Yu, **kw)
        why = (
            f"stratification refused (no two strata with {min_labels} human-graded "
            "responses each): plain PPI++"
        )
        note = join_notes([why if labels else "no data", plain.note])
        return dataclasses.replace(plain, note=note, strata={})
    return _stratified_estimate(
        (Y, Yh, Yu), (s_l, s_u), groups, ci=ci, binary=is_bin, interval=interval, note=pool_note
    )


def _stratified_estimate(
    values: tuple[FloatArray, FloatArray, FloatArray],
    strata: tuple[npt.NDArray[np.object_], npt.NDArray[np.object_]],
    groups: dict[str, list[str]],
    *,
    ci: float,
    binary: bool,
    interval: Interval,
    note: str | None,
) -> PpiResult:
    """Stratified PPI++ over ``groups`` (at least two; name → its strata): one
    :func:`ppi_mean` per group combined by :func:`_combine_strata`. ``values``: ``Y``,
    ``Ŷ`` and ``Ỹ``; ``strata``: the labelled and the unlabelled responses' strata;
    ``note``: the pooling note."""
    Y, Yh, Yu = values
    s_l, s_u = strata
    total = len(Y) + len(Yu)
    kw: dict[str, Any] = {"ci": ci, "binary": binary, "interval": interval}
    parts: dict[str, PpiResult] = {}
    fits: dict[str, tuple[_Fit, float]] = {}
    for g, members in groups.items():
        ml, mu = np.isin(s_l, members), np.isin(s_u, members)
        r = ppi_mean(Y[ml], Yh[ml], Yu[mu], **kw)
        parts[g] = r
        f = _fit(
            Y[ml], Yh[ml], Yu[mu], float(r.lam or 0.0), ci=ci, binary=binary, interval=interval
        )
        fits[g] = (f, (int(ml.sum()) + int(mu.sum())) / total)
    est_raw, est, lo, hi, se = _combine_strata(list(fits.values()), ci, interval)
    classical, classical_ci, cfit = _classical(Y, ci, binary, interval)
    se_cl2 = (float(np.var(Y)) / len(Y)) if interval == "wald" else (cfit.se**2 if cfit else 0.0)
    notes = [
        note,
        None if est == est_raw else f"θ̂ = {est_raw:.4g} lies outside [0, 1] and was clipped",
        small_note(len(Y)),
    ]
    return PpiResult(
        est,
        lo,
        hi,
        se,
        None,
        len(Y),
        len(Yu),
        len(Y) * se_cl2 / se**2 if se > 0 and se_cl2 > 0 else None,
        classical,
        classical_ci,
        float(np.mean(np.concatenate([Yh, Yu]))),
        note=join_notes(notes),
        strata=parts,
        method=_stratified_method(interval, binary),
        classical_method=_method_name(interval, binary, ppi=False),
    )


def _stratified_method(interval: Interval, binary: bool) -> str:
    return "stratified " + _method_name(interval, binary, ppi=True).replace(
        "n-1 df", "Welch-Satterthwaite df"
    )


def _refusal(left: list[str], counts: dict[str, int], totals: dict[str, int], minimum: int) -> str:
    """Why a stratified estimate is refused: the strata ``left`` short of ``minimum``
    labels with no stratum of a similar labelling rate to pool with."""
    rates = ", ".join(f"{k} {counts[k]} of {totals[k]} ({counts[k] / totals[k]:.0%})" for k in left)
    return (
        f"stratification refused: {rates} human-graded, fewer than {minimum}, and no "
        f"stratum labelled at a rate within {MAX_RATE_RATIO:g}x to pool with (pooling "
        "strata labelled at different rates biases the estimate); label more of them, "
        "or estimate without --stratify"
    )


def _combine_strata(
    fits: Sequence[tuple[_Fit, float]], ci: float, interval: Interval
) -> tuple[float, float, float, float, float]:
    """The strata's fits (each with its weight ``w_k``) combined: ``(θ̂ unclipped, θ̂,
    low, high, se)``; ``θ̂ = Σ w_k θ̂_k``, the interval ``Σ w_k c_k ± q se`` with
    ``se² = Σ w_k² se_k²`` and ``q`` the ``t`` quantile with Welch–Satterthwaite df of
    the labelled parts (small-sample; clipped to [0, 1]) or ``z`` (Wald)."""
    est_raw = sum(w * f.estimate for f, w in fits)
    center = sum(w * f.center for f, w in fits)
    var_l = sum(w**2 * f.var_l for f, w in fits)
    var_u = sum(w**2 * f.var_u for f, w in fits)
    se = math.sqrt(var_l + var_u)
    if interval == "wald":
        q = z_quantile(ci)
        return est_raw, est_raw, center - q * se, center + q * se, se
    # Welch–Satterthwaite df of the labelled parts (the judge-only parts: infinite df)
    den = sum((w**2 * f.var_l) ** 2 / f.df for f, w in fits)
    df = var_l**2 / den if den > 0 else math.inf
    q = quantile(ci, df)
    return est_raw, clip01(est_raw), clip01(center - q * se), clip01(center + q * se), se
