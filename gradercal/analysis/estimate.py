"""Bias-corrected estimates of a benchmark's numbers from a human-graded subset.

The experts grade a subset of the responses; the judge grades all of them. Two
corrections of the judge's numbers:

**Prediction-powered inference (PPI++).** Angelopoulos, Duchi & Zrnic (2023), "PPI++:
Efficient Prediction-Powered Inference", arXiv:2311.01453, §2 and Example 1 (mean
estimation). With ``n`` labelled responses (human value ``Y_i``, judge value ``Ŷ_i``)
and ``N`` unlabelled ones (judge value ``Ỹ_j`` only):

* estimate ``θ̂_λ = mean(Y − λŶ) + λ mean(Ỹ)``;
* power tuning ``λ̂ = Cov(Y, Ŷ) / ((1 + n/N) Var(Ŷ ∪ Ỹ))``, clipped to [0, 1]
  (``Cov`` with divisor ``n`` on the labelled pairs, ``Var`` with divisor ``n + N − 1``
  over all judge values — the choices of the authors' ``ppi_py`` package, so λ = 0
  gives the classical human-only mean and λ = 1 the original PPI);
* standard error ``se² = Var(λỸ)/N + Var(Y − λŶ)/n`` (divisors ``N`` and ``n``), and
  the Wald interval ``θ̂ ± z_{(1+ci)/2} se`` (``interval="wald"``, equal to ``ppi_py``).

The Wald interval needs many labels: with ~10 it covers far less than 95% and collapses
to zero width when the labels (or the judge's errors on them) are all alike. The default
``interval="small-sample"`` therefore uses, with ``q = t_{n−1, (1+ci)/2}``:

* a **binary** target (the pass indicator): an Agresti–Coull-type interval — ``q²/4``
  pseudo-pairs are added to each cell of the labelled 2×2 table (human × judge, i.e.
  ``D = Y − λŶ`` at the corners ``0, −λ, 1, 1 − λ``); the centre ``c`` and the variance
  ``v`` of ``D`` are taken over the augmented sample of size ``ñ = n + q²`` (divisor
  ``ñ``) and the interval is ``c + λ mean(Ỹ) ± q √(v/ñ + Var(λỸ)/N)``. With ``λ = 0``
  it is the Agresti–Coull interval (with ``q`` for ``z``) of the human-only rate,
  which is also the ``classical_ci``;
* a **continuous** target (the rubric score in [0, 1]): ``θ̂ ± q se`` with the labelled
  variance ``[Σ(D − D̄)² + Σ_corners (FLOOR_WEIGHT/4)(d − D̄)²]/(n − 1 + FLOOR_WEIGHT)``,
  the four corners of [0, 1]² entering as pseudo-pairs of total weight 0.25 so that the
  variance never vanishes; with ``λ = 0`` it is the human-only ``t`` interval with that
  floor (the ``classical_ci``);
* every interval and ``θ̂`` clipped to [0, 1] (a clipped ``θ̂`` is noted); ``method``
  and ``classical_method`` name the intervals; fewer than ``MIN_LABELS`` (10)
  labelled responses add a note.

``n_effective = n · se_classical²/se²`` (the classical interval's standard error
against PPI++'s, so ``λ = 0`` gives ``n``; with ``"wald"`` ``se_classical² = Var(Y)/n``).
In the simulation of ``tests/analysis/test_estimate_coverage.py`` (docs/agreement.md has the
table) these intervals cover the truth in ≥ 93% of runs at 10, 20 and 40 labels for
true pass rates 0.05, 0.5 and 0.9, where the Wald intervals covered 58–94% (pooled; 31%
in the worst scenario).

``Y`` is a response's consensus rubric score (``mean_score``) or its pass indicator
(``pass_rate``); ``Ŷ`` the judge's. The labelled responses must be a random sample of
the responses (PPI's assumption): the report counts the human-graded responses left
out because their consensus is incomplete (ties, missing verdicts). The **effective
number of human labels** ``n_eff`` is how many human labels a human-only mean would
need for the same standard error, and the **gain** is ``n_eff / n``.

**Stratified PPI** (``stratify="workflow"``; Fisch et al. 2024, "Stratified
Prediction-Powered Inference for Effective Hybrid Evaluation of Language Models",
NeurIPS): PPI++ with its own λ in each stratum ``k``, combined as ``θ̂ = Σ w_k θ̂_k`` with
``w_k`` the stratum's share of all responses and ``se² = Σ w_k² se_k²``; small-sample
intervals use the strata's centres and the ``t`` quantile with Welch–Satterthwaite df of
the strata's labelled variance parts. Strata with fewer than ``MIN_STRATUM_LABELS`` (10)
labelled responses are pooled into ``"(pooled) a + b"`` strata, but only with strata
labelled at a similar rate (largest / smallest rate below ``MAX_RATE_RATIO`` = 2): a
pooled stratum's labelled responses must be a fair sample of it, else its estimate
inherits plain PPI's bias (pooling whatever was short, as before, covered ~85% for the
pass rate with workflows labelled at 8–25%). A short pool absorbs the compatible
stratum with the fewest labels while it is short; when one stratum is left the result
is plain PPI++ with the note "stratification refused …"; when a short stratum has no
stratum of a similar rate to pool with, the estimate is refused (None; the note names
the stratum, its labelling rate and why). In simulation, a minimum of 5 labels gave
86–89% coverage of the pass rate in some designs, a minimum of 10 at least 94.8%.

**Rogan–Gladen correction** of the judge's pass rate (Rogan & Gladen 1978, Am J
Epidemiol 107:71): with the judge's apparent pass rate ``p̂`` over all ``N_all``
responses and its sensitivity ``Se = P(judge pass | human pass)`` and specificity
``Sp = P(judge fail | human fail)`` estimated on the labelled responses (``n₊`` human
passes, ``n₋`` human fails), ``π̂ = (p̂ + Sp − 1)/(Se + Sp − 1)``. Its delta-method
variance (Greenland 1996; the three estimates treated as independent binomials)
``Var(π̂) = [p̂(1 − p̂)/N_all + π̂² Se(1 − Se)/n₊ + (1 − π̂)² Sp(1 − Sp)/n₋]/(Se + Sp − 1)²``
carries the uncertainty of the calibration set. By default (``interval="small-sample"``)
the three binomial variances are evaluated at Agresti–Coull-adjusted proportions
(``(x + z²/2)/(m + z²)`` over ``m + z²``), so that ``Se = 1`` or ``Sp = 1`` on a few
labels does not make the interval collapse (cf. the adjusted Wald interval of Lang &
Reiczigel 2014, Prev Vet Med 113:13); ``interval="wald"`` uses the raw proportions. The
interval ``π̂ ± z√Var`` is clipped to [0, 1] and so is ``π̂`` (the unclipped value is
reported too). Undefined when
``Se + Sp ≤ 1`` (the judge is no better than chance) or ``n₊``/``n₋`` is 0. By default
``Se`` and ``Sp`` are estimated per model (``pooled=False``); pooling over models
assumes the judge errs alike on every model. The labelled responses are also part of
``p̂``, so the independence is approximate; in simulation with 300 labels the 95%
interval covers in about 98% of runs (slightly conservative), with 10 labels (when
defined) in about 99% where the raw-proportion interval covers 86%.

Units are responses; a model with several responses on one task makes them
correlated and the intervals somewhat narrow (a note says so).

The PPI++ estimators live in :mod:`gradercal.analysis.ppi` (plain and stratified) and
:mod:`gradercal.analysis.active_ppi` (the active design); this module adds Rogan–Gladen
and the per-model report, and re-exports them all.

This module imports pandas, numpy, scipy and gradercal's core only.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd

from gradercal.analysis.active_ppi import (
    ACTIVE_PSEUDO,
    ACTIVE_SMALL_SAMPLE,
    active_design_mean,
    active_ppi_mean,
)
from gradercal.analysis.context import AnalysisContext
from gradercal.analysis.ppi import (
    FLOOR_WEIGHT,
    MAX_RATE_RATIO,
    MIN_LABELS,
    MIN_STRATUM_LABELS,
    Interval,
    PpiResult,
    join_notes,
    ppi_mean,
    small_note,
    stratified_ppi_mean,
    t_quantile,
    z_quantile,
)
from gradercal.analysis.scoring import PASS_EPSILON, response_scores
from gradercal.analysis.verdicts import human_graders
from gradercal.frames import Frames

__all__ = [
    "ACTIVE_PSEUDO",
    "ACTIVE_SMALL_SAMPLE",
    "FLOOR_WEIGHT",
    "MAX_RATE_RATIO",
    "MIN_LABELS",
    "MIN_STRATUM_LABELS",
    "Interval",
    "PpiResult",
    "RoganGladenResult",
    "active_design_mean",
    "active_ppi_mean",
    "estimate_report",
    "estimate_table",
    "ppi_mean",
    "rogan_gladen",
    "stratified_ppi_mean",
]

#: The ``t`` quantile under its former name (tests/analysis/test_active_small_sample.py).
_t = t_quantile

FloatArray = npt.NDArray[np.float64]
Stratify = Literal["workflow", "domain"]


@dataclass(frozen=True)
class RoganGladenResult:
    """The Rogan–Gladen corrected pass rate.

    Attributes:
        estimate: ``π̂`` clipped to [0, 1] (None when undefined).
        unclipped: ``π̂`` before clipping.
        ci_low, ci_high: The delta-method interval (``method``), clipped to [0, 1].
        apparent: The judge's pass rate ``p̂`` over all responses.
        sensitivity, specificity: ``Se`` and ``Sp`` on the labelled responses.
        n_all: Responses behind ``p̂``.
        n_positive, n_negative: Labelled human passes / fails.
        note: Why the estimate is missing, or caveats.
        method: How the interval was computed.
    """

    estimate: float | None
    unclipped: float | None
    ci_low: float | None
    ci_high: float | None
    apparent: float | None
    sensitivity: float | None
    specificity: float | None
    n_all: int
    n_positive: int
    n_negative: int
    note: str | None = None
    method: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        return {
            "estimate": self.estimate,
            "unclipped": self.unclipped,
            "ci": None
            if self.ci_low is None or self.ci_high is None
            else [self.ci_low, self.ci_high],
            "apparent": self.apparent,
            "sensitivity": self.sensitivity,
            "specificity": self.specificity,
            "n_all": self.n_all,
            "n_positive": self.n_positive,
            "n_negative": self.n_negative,
            "method": self.method,
            "note": self.note,
        }


def rogan_gladen(
    judge_pass_all: npt.ArrayLike,
    judge_pass_labelled: npt.ArrayLike,
    human_pass_labelled: npt.ArrayLike,
    *,
    ci: float = 0.95,
    interval: Interval = "small-sample",
) -> RoganGladenResult:
    """Rogan–Gladen correction of the judge's pass rate (see the module docstring).

    Args:
        judge_pass_all: The judge's pass verdicts on every response (``p̂``'s base).
        judge_pass_labelled: The judge's verdicts on the human-graded responses.
        human_pass_labelled: The human consensus verdicts on them.
        ci: Confidence level.
        interval: ``"small-sample"`` (default: the delta-method variance evaluated at
            Agresti–Coull-adjusted ``p̂``, ``Se``, ``Sp``) or ``"wald"`` (at the raw
            proportions).
    """
    a = np.asarray(judge_pass_all, dtype=bool)
    jl = np.asarray(judge_pass_labelled, dtype=bool)
    hl = np.asarray(human_pass_labelled, dtype=bool)
    n_all, n_pos, n_neg = len(a), int(hl.sum()), int((~hl).sum())
    p = float(np.mean(a)) if n_all else None
    se = float(np.mean(jl[hl])) if n_pos else None
    sp = float(np.mean(~jl[~hl])) if n_neg else None

    method = "delta-method wald (z)" + (
        ", agresti-coull-adjusted variances" if interval == "small-sample" else ""
    )

    def undefined(note: str) -> RoganGladenResult:
        return RoganGladenResult(
            None, None, None, None, p, se, sp, n_all, n_pos, n_neg, note, method
        )

    if p is None:
        return undefined("no judge verdicts")
    if se is None or sp is None:
        return undefined(
            "sensitivity and specificity need human-graded passes and fails "
            f"(found {n_pos} passes, {n_neg} fails)"
        )
    j = se + sp - 1.0
    if j <= 0:
        return undefined(f"Se + Sp − 1 = {j:.3g} ≤ 0: the judge's verdicts carry no information")
    pi = (p + sp - 1.0) / j
    z = z_quantile(ci)
    var = (
        _binom_var(p, n_all, z, interval)
        + pi**2 * _binom_var(se, n_pos, z, interval)
        + (1 - pi) ** 2 * _binom_var(sp, n_neg, z, interval)
    ) / j**2
    half = z * math.sqrt(var)
    clipped = min(max(pi, 0.0), 1.0)
    note = join_notes(
        [
            None if clipped == pi else f"π̂ = {pi:.4g} lies outside [0, 1] and was clipped",
            small_note(n_pos + n_neg),
        ]
    )
    return RoganGladenResult(
        clipped,
        pi,
        max(pi - half, 0.0),
        min(pi + half, 1.0),
        p,
        se,
        sp,
        n_all,
        n_pos,
        n_neg,
        note,
        method,
    )


def _binom_var(x: float, m: int, z: float, interval: Interval) -> float:
    """``x(1 − x)/m``, at the Agresti–Coull-adjusted proportion when small-sample."""
    if interval == "wald":
        return x * (1 - x) / m
    m_aug = m + z * z
    x_aug = (x * m + z * z / 2.0) / m_aug
    return x_aug * (1 - x_aug) / m_aug


def estimate_table(
    frames: Frames,
    judge: str,
    humans: Sequence[str] | None = None,
    *,
    context: AnalysisContext | None = None,
) -> pd.DataFrame:
    """Per response: the judge's score and pass, and the consensus's when complete.

    ``context``: an ``AnalysisContext`` shared by calls on the same frames (e.g. within one
    report) to reuse the score tables; None: compute afresh.

    Returns:
        ``response_id``, ``task_id``, ``model``, ``workflow``, ``domain``,
        ``judge_score``, ``human_score`` (NaN when the consensus score is undefined),
        ``human_graded`` (some human verdict on it), for every response with a
        complete judge score.
    """
    names = [
        h for h in (list(humans) if humans is not None else human_graders(frames)) if h != judge
    ]
    js = response_scores(frames, judge, include_ungraded=True, context=context)
    t = js.loc[js["score"].notna(), ["response_id", "task_id", "model", "score"]].rename(
        columns={"score": "judge_score"}
    )
    if names:
        cs = response_scores(frames, "consensus", humans=names, context=context)
        t = t.merge(
            cs.loc[:, ["response_id", "score"]].rename(columns={"score": "human_score"}),
            on="response_id",
            how="left",
        )
    else:
        t = t.assign(human_score=np.nan)
    hj = frames.judgments
    graded = set(hj.loc[hj["grader"].isin(names), "response_id"])
    tasks = frames.tasks.drop_duplicates("task_id").set_index("task_id")
    return t.assign(
        workflow=t["task_id"].map(tasks["workflow"]).astype(object),
        domain=t["task_id"].map(tasks["domain"]).astype(object),
        human_graded=t["response_id"].isin(graded),
    ).reset_index(drop=True)


def estimate_report(
    frames: Frames,
    judge: str,
    humans: Sequence[str] | None = None,
    *,
    stratify: Stratify | None = None,
    ci: float = 0.95,
    pooled: bool = False,
    benchmark: str | None = None,
    context: AnalysisContext | None = None,
    inclusion: Mapping[str, float] | None = None,
    rounds: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """Everything ``gradercal estimate --json`` prints (shape in ``docs/agreement.md``).

    ``inclusion``: response id → the probability it was drawn with by an active design
    (``assign --strategy active``). Empty or None: ``design: "uniform"`` and the uniform
    estimators, exactly as before. Otherwise ``design: "active"`` and the mean score and
    pass rate are :func:`active_ppi_mean` (responses labelled without a probability form
    the uniform pilot batch); ``stratify`` is then refused with a note.

    Per model: PPI++ (stratified when asked) estimates of the mean score and the pass
    rate, the classical human-only and the raw judge figures beside them, and the
    Rogan–Gladen corrected pass rate.

    Args:
        frames: The benchmark frames.
        judge: The judge's grader name.
        humans: The graders of the consensus (default: every human grader).
        stratify: ``"workflow"`` or ``"domain"`` for stratified PPI (None: plain PPI++).
        ci: Confidence level.
        pooled: Estimate the judge's Se/Sp over all models for Rogan–Gladen.
        benchmark: The benchmark's name, echoed in the report.
        context: See :func:`estimate_table`.
    """
    t = estimate_table(frames, judge, humans, context=context)
    active = bool(inclusion)
    cut = float(frames.pass_threshold) - PASS_EPSILON
    lab = t["human_score"].notna().to_numpy(bool)
    jpass = t["judge_score"].to_numpy(np.float64) >= cut
    hpass = t["human_score"].to_numpy(np.float64) >= cut
    values = {
        "mean_score": (
            t["human_score"].to_numpy(np.float64),
            t["judge_score"].to_numpy(np.float64),
        ),
        "pass_rate": (hpass.astype(np.float64), jpass.astype(np.float64)),
    }
    if active:
        probs = t["response_id"].map(dict(inclusion or {})).to_numpy(np.float64)
        draw_round = t["response_id"].map(dict(rounds or {})).fillna(1).to_numpy(np.int64)
        estimate = functools.partial(_active_figure, probs=probs, rounds=draw_round, ci=ci)
    else:
        strata = (
            None
            if stratify is None
            else t[stratify].map(lambda x: "(none)" if x is None else str(x)).to_numpy(object)
        )
        estimate = functools.partial(_uniform_figure, strata=strata, ci=ci)
    rows = [
        _model_row(t, model, lab, values, estimate, passes=(jpass, hpass), pooled=pooled, ci=ci)
        for model in sorted({str(m) for m in t["model"]})
    ]
    return {
        "benchmark": benchmark,
        "judge": judge,
        "pass_threshold": float(frames.pass_threshold),
        "ci": ci,
        "stratify": None if active else stratify,
        "design": "active" if active else "uniform",
        "rogan_gladen_pooled": pooled,
        "n_responses": len(t),
        "n_human_graded": int(lab.sum()),
        "models": rows,
        "notes": _report_notes(frames, t, lab, active, stratify),
    }


Masks = npt.NDArray[np.bool_]


def _active_figure(
    yv: FloatArray,
    yh: FloatArray,
    masks: tuple[Masks, Masks, Masks],
    *,
    binary: bool | None,
    probs: npt.NDArray[np.floating[Any]],
    rounds: npt.NDArray[np.integer[Any]],
    ci: float,
) -> PpiResult:
    """One model's figure under an active design; ``masks``: the model's responses, its
    labelled and its unlabelled ones."""
    sel, lm, _um = masks
    return active_ppi_mean(
        yv[lm], yh[lm], probs[lm], yh[sel], ci=ci, binary=binary, rounds=rounds[lm]
    )


def _uniform_figure(
    yv: FloatArray,
    yh: FloatArray,
    masks: tuple[Masks, Masks, Masks],
    *,
    binary: bool | None,
    strata: npt.NDArray[np.object_] | None,
    ci: float,
) -> PpiResult:
    """One model's figure, PPI++ (stratified by ``strata`` when given); ``masks`` as in
    :func:`_active_figure`."""
    _sel, lm, um = masks
    if strata is None:
        return ppi_mean(yv[lm], yh[lm], yh[um], ci=ci, binary=binary)
    s = strata
    return stratified_ppi_mean(
        yv[lm], yh[lm], list(s[lm]), yh[um], list(s[um]), ci=ci, binary=binary
    )


def _model_row(
    t: pd.DataFrame,
    model: str,
    lab: Masks,
    values: Mapping[str, tuple[FloatArray, FloatArray]],
    estimate: Callable[..., PpiResult],
    *,
    passes: tuple[Masks, Masks],
    pooled: bool,
    ci: float,
) -> dict[str, Any]:
    """One model's row of :func:`estimate_report`: its counts, each figure of ``values``
    (human and judge values) by ``estimate``, and the Rogan–Gladen pass rate from
    ``passes`` (the judge's and the consensus's pass verdicts)."""
    sel = (t["model"] == model).to_numpy(bool)
    lm, um = sel & lab, sel & ~lab
    row: dict[str, Any] = {
        "model": model,
        "n_responses": int(sel.sum()),
        "n_human_graded": int(lm.sum()),
        "n_incomplete_consensus": int((sel & ~lab & t["human_graded"].to_numpy(bool)).sum()),
    }
    per_task = t.loc[sel].groupby("task_id").size()
    notes = []
    if (per_task > 1).any():
        notes.append("several responses per task: intervals treat them as independent")
    for fig, (yv, yh) in values.items():
        binary = True if fig == "pass_rate" else None
        row[fig] = estimate(yv, yh, (sel, lm, um), binary=binary).to_dict()
    jpass, hpass = passes
    rl = lab if pooled else lm
    row["pass_rate_rogan_gladen"] = rogan_gladen(jpass[sel], jpass[rl], hpass[rl], ci=ci).to_dict()
    row["notes"] = notes
    return row


def _report_notes(
    frames: Frames, t: pd.DataFrame, lab: npt.NDArray[np.bool_], active: bool, stratify: str | None
) -> list[str]:
    """The report's notes: responses left out, the active design's caveats, incomplete
    consensus (``t``: :func:`estimate_table`; ``lab``: its responses with a consensus score)."""
    n_inc = int((~lab & t["human_graded"].to_numpy(bool)).sum())
    notes = []
    n_no_judge = int(frames.responses["response_id"].nunique()) - len(t)
    if n_no_judge:
        notes.append(
            f"{n_no_judge} responses without a complete judge score are left out of every estimate"
        )
    if active and stratify is not None:
        notes.append(
            "active design: the estimates are weighted by the sampling probabilities; "
            f"stratification by {stratify} is not combined with them and was not applied"
        )
    if active:
        notes.append(
            "Rogan–Gladen sensitivity/specificity are unweighted: under the active design "
            "the expert-graded responses over-represent the judge's uncertain ones"
        )
    if n_inc:
        notes.append(
            f"{n_inc} human-graded responses lack a complete consensus score (ties or "
            "missing verdicts) and count as unlabelled; if that is not at random, PPI may be biased"
        )
    return notes
