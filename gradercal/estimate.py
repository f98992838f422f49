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
  the Wald interval ``θ̂ ± z_{(1+ci)/2} se``.

``Y`` is a response's consensus rubric score (``mean_score``) or its pass indicator
(``pass_rate``); ``Ŷ`` the judge's. The labelled responses must be a random sample of
the responses (PPI's assumption): the report counts the human-graded responses left
out because their consensus is incomplete (ties, missing verdicts). The **effective
number of human labels** is ``n_eff = Var(Y)/se²`` — how many human labels a
human-only mean would need for the same standard error — and the **gain** is
``n_eff / n``.

**Stratified PPI** (``stratify="workflow"``; Fisch et al. 2024, "Stratified
Prediction-Powered Inference for Effective Hybrid Evaluation of Language Models",
NeurIPS): PPI++ with its own λ in each stratum ``k``, combined as ``θ̂ = Σ w_k θ̂_k`` with
``w_k`` the stratum's share of all responses and ``se² = Σ w_k² se_k²``. Every stratum
needs two labelled responses (otherwise: null with the reason).

**Rogan–Gladen correction** of the judge's pass rate (Rogan & Gladen 1978, Am J
Epidemiol 107:71): with the judge's apparent pass rate ``p̂`` over all ``N_all``
responses and its sensitivity ``Se = P(judge pass | human pass)`` and specificity
``Sp = P(judge fail | human fail)`` estimated on the labelled responses (``n₊`` human
passes, ``n₋`` human fails), ``π̂ = (p̂ + Sp − 1)/(Se + Sp − 1)``. Its delta-method
variance (Greenland 1996; the three estimates treated as independent binomials)
``Var(π̂) = [p̂(1 − p̂)/N_all + π̂² Se(1 − Se)/n₊ + (1 − π̂)² Sp(1 − Sp)/n₋]/(Se + Sp − 1)²``
carries the uncertainty of the calibration set; the Wald interval is clipped to [0, 1]
and so is ``π̂`` (the unclipped value is reported too). Undefined when
``Se + Sp ≤ 1`` (the judge is no better than chance) or ``n₊``/``n₋`` is 0. By default
``Se`` and ``Sp`` are estimated per model (``pooled=False``); pooling over models
assumes the judge errs alike on every model. The labelled responses are also part of
``p̂``, so the independence is approximate; in simulation the 95% interval covers in
about 97–98% of runs (slightly conservative).

Units are responses; a model with several responses on one task makes them
correlated and the intervals somewhat narrow (a note says so).

This module imports pandas, numpy, scipy and gradercal's core only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd

from gradercal.agreement import human_graders
from gradercal.frames import Frames
from gradercal.scoring import PASS_EPSILON, response_scores

__all__ = [
    "PpiResult",
    "RoganGladenResult",
    "estimate_report",
    "estimate_table",
    "ppi_mean",
    "rogan_gladen",
    "stratified_ppi_mean",
]

FloatArray = npt.NDArray[np.float64]
Stratify = Literal["workflow", "domain"]


def _z(ci: float) -> float:
    from scipy.stats import norm  # type: ignore[import-untyped, unused-ignore]

    return float(norm.ppf((1.0 + ci) / 2.0))


@dataclass(frozen=True)
class PpiResult:
    """A PPI++ estimate of a mean.

    Attributes:
        estimate: ``θ̂`` (None when undefined, see ``note``).
        ci_low, ci_high: The Wald interval.
        se: Standard error.
        lam: The power-tuning ``λ`` (per stratum: None; see ``strata``).
        n_labelled: ``n``.
        n_unlabelled: ``N``.
        n_effective: ``Var(Y)/se²`` (None when ``se = 0``).
        classical: The human-only mean of the labelled ``Y``.
        classical_ci: Its Wald interval ``mean ± z·sd/√n`` (divisor ``n − 1``).
        judge_only: The judge's mean over all ``n + N`` responses (biased in general).
        note: Why a value is missing, or a caveat.
        strata: Per-stratum results (stratified estimates only).
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

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        out: dict[str, Any] = {
            "estimate": self.estimate,
            "ci": None
            if self.ci_low is None or self.ci_high is None
            else [self.ci_low, self.ci_high],
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
            "judge_only": self.judge_only,
            "note": self.note,
        }
        if self.strata is not None:
            out["strata"] = {k: v.to_dict() for k, v in self.strata.items()}
        return out


def _classical(y: FloatArray, z: float) -> tuple[float | None, tuple[float, float] | None]:
    if len(y) == 0:
        return None, None
    m = float(np.mean(y))
    if len(y) < 2:
        return m, None
    half = z * float(np.std(y, ddof=1)) / math.sqrt(len(y))
    return m, (m - half, m + half)


def ppi_mean(
    y: npt.ArrayLike,
    yhat: npt.ArrayLike,
    yhat_unlabelled: npt.ArrayLike,
    *,
    ci: float = 0.95,
    lam: float | None = None,
) -> PpiResult:
    """PPI++ estimate and interval of a mean (see the module docstring).

    Args:
        y: Human values on the labelled responses.
        yhat: Judge values on the same responses.
        yhat_unlabelled: Judge values on the unlabelled responses.
        ci: Confidence level.
        lam: A fixed ``λ`` (None: power-tuned and clipped to [0, 1]).

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
    z = _z(ci)
    classical, classical_ci = _classical(Y, z)
    all_hat = np.concatenate([Yh, Yu])
    judge_only = float(np.mean(all_hat)) if len(all_hat) else None
    if n < 2:
        return PpiResult(
            None,
            None,
            None,
            None,
            None,
            n,
            N,
            None,
            classical,
            classical_ci,
            judge_only,
            note=f"needs at least two human-graded responses (found {n})",
        )
    if N == 0:
        lam_v = 0.0
    elif lam is not None:
        lam_v = float(lam)
    else:
        cov = float(np.mean((Y - Y.mean()) * (Yh - Yh.mean())))
        var = float(np.var(all_hat, ddof=1))
        lam_v = 0.0 if var <= 0 else float(np.clip(cov / ((1.0 + n / N) * var), 0.0, 1.0))
    est = float(np.mean(Y - lam_v * Yh) + (lam_v * float(np.mean(Yu)) if N else 0.0))
    var_u = float(np.var(lam_v * Yu)) / N if N else 0.0
    var_l = float(np.var(Y - lam_v * Yh)) / n
    se = math.sqrt(var_u + var_l)
    vy = float(np.var(Y))
    n_eff = vy / se**2 if se > 0 else None
    return PpiResult(
        est,
        est - z * se,
        est + z * se,
        se,
        lam_v,
        n,
        N,
        n_eff,
        classical,
        classical_ci,
        judge_only,
        note=None if N else "no response without human grades: the human-only mean",
    )


def stratified_ppi_mean(
    y: npt.ArrayLike,
    yhat: npt.ArrayLike,
    strata: Sequence[Any],
    yhat_unlabelled: npt.ArrayLike,
    strata_unlabelled: Sequence[Any],
    *,
    ci: float = 0.95,
) -> PpiResult:
    """Stratified PPI++: one power-tuned estimate per stratum, weighted by stratum size.

    Args:
        y: Human values on the labelled responses.
        yhat: Judge values on them.
        strata: The stratum of each labelled response.
        yhat_unlabelled: Judge values on the unlabelled responses.
        strata_unlabelled: Their strata.
        ci: Confidence level.

    Returns:
        The combined estimate with ``strata`` filled in; undefined when a stratum has
        fewer than two labelled responses.
    """
    Y = np.asarray(y, np.float64)
    Yh = np.asarray(yhat, np.float64)
    Yu = np.asarray(yhat_unlabelled, np.float64)
    s_l = np.asarray([str(s) for s in strata], dtype=object)
    s_u = np.asarray([str(s) for s in strata_unlabelled], dtype=object)
    labels = sorted(set(s_l) | set(s_u))
    total = len(Y) + len(Yu)
    z = _z(ci)
    classical, classical_ci = _classical(Y, z)
    judge_only = float(np.mean(np.concatenate([Yh, Yu]))) if total else None
    parts: dict[str, PpiResult] = {}
    for k in labels:
        parts[k] = ppi_mean(Y[s_l == k], Yh[s_l == k], Yu[s_u == k], ci=ci)
    bad = [k for k, r in parts.items() if r.estimate is None]
    if bad or not labels:
        return PpiResult(
            None,
            None,
            None,
            None,
            None,
            len(Y),
            len(Yu),
            None,
            classical,
            classical_ci,
            judge_only,
            note=(
                "strata with fewer than two human-graded responses: " + ", ".join(bad)
                if bad
                else "no data"
            ),
            strata=parts,
        )
    w = {k: (parts[k].n_labelled + parts[k].n_unlabelled) / total for k in labels}
    est = float(sum(w[k] * float(parts[k].estimate or 0.0) for k in labels))
    se = math.sqrt(sum(w[k] ** 2 * float(parts[k].se or 0.0) ** 2 for k in labels))
    vy = float(np.var(Y))
    return PpiResult(
        est,
        est - z * se,
        est + z * se,
        se,
        None,
        len(Y),
        len(Yu),
        vy / se**2 if se > 0 else None,
        classical,
        classical_ci,
        judge_only,
        note=None,
        strata=parts,
    )


@dataclass(frozen=True)
class RoganGladenResult:
    """The Rogan–Gladen corrected pass rate.

    Attributes:
        estimate: ``π̂`` clipped to [0, 1] (None when undefined).
        unclipped: ``π̂`` before clipping.
        ci_low, ci_high: The delta-method Wald interval, clipped to [0, 1].
        apparent: The judge's pass rate ``p̂`` over all responses.
        sensitivity, specificity: ``Se`` and ``Sp`` on the labelled responses.
        n_all: Responses behind ``p̂``.
        n_positive, n_negative: Labelled human passes / fails.
        note: Why the estimate is missing, or a caveat.
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
            "note": self.note,
        }


def rogan_gladen(
    judge_pass_all: npt.ArrayLike,
    judge_pass_labelled: npt.ArrayLike,
    human_pass_labelled: npt.ArrayLike,
    *,
    ci: float = 0.95,
) -> RoganGladenResult:
    """Rogan–Gladen correction of the judge's pass rate (see the module docstring).

    Args:
        judge_pass_all: The judge's pass verdicts on every response (``p̂``'s base).
        judge_pass_labelled: The judge's verdicts on the human-graded responses.
        human_pass_labelled: The human consensus verdicts on them.
        ci: Confidence level.
    """
    a = np.asarray(judge_pass_all, dtype=bool)
    jl = np.asarray(judge_pass_labelled, dtype=bool)
    hl = np.asarray(human_pass_labelled, dtype=bool)
    n_all, n_pos, n_neg = len(a), int(hl.sum()), int((~hl).sum())
    p = float(np.mean(a)) if n_all else None
    se = float(np.mean(jl[hl])) if n_pos else None
    sp = float(np.mean(~jl[~hl])) if n_neg else None

    def undefined(note: str) -> RoganGladenResult:
        return RoganGladenResult(None, None, None, None, p, se, sp, n_all, n_pos, n_neg, note)

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
    var = (
        p * (1 - p) / n_all + pi**2 * se * (1 - se) / n_pos + (1 - pi) ** 2 * sp * (1 - sp) / n_neg
    ) / j**2
    half = _z(ci) * math.sqrt(var)
    clipped = min(max(pi, 0.0), 1.0)
    note = None if clipped == pi else f"π̂ = {pi:.4g} lies outside [0, 1] and was clipped"
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
    )


def estimate_table(
    frames: Frames,
    judge: str,
    humans: Sequence[str] | None = None,
    *,
    memo: dict[Any, Any] | None = None,
) -> pd.DataFrame:
    """Per response: the judge's score and pass, and the consensus's when complete.

    ``memo``: a dict shared by calls on the same frames (e.g. within one report) to
    reuse the score tables (:data:`gradercal.agreement.Memo`); None: compute afresh.

    Returns:
        ``response_id``, ``task_id``, ``model``, ``workflow``, ``domain``,
        ``judge_score``, ``human_score`` (NaN when the consensus score is undefined),
        ``human_graded`` (some human verdict on it), for every response with a
        complete judge score.
    """
    names = [
        h for h in (list(humans) if humans is not None else human_graders(frames)) if h != judge
    ]
    js = response_scores(frames, judge, include_ungraded=True, memo=memo)
    t = js.loc[js["score"].notna(), ["response_id", "task_id", "model", "score"]].rename(
        columns={"score": "judge_score"}
    )
    if names:
        cs = response_scores(frames, "consensus", humans=names, memo=memo)
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
    memo: dict[Any, Any] | None = None,
) -> dict[str, Any]:
    """Everything ``gradercal estimate --json`` prints (shape in ``docs/agreement.md``).

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
        memo: See :func:`estimate_table`.
    """
    t = estimate_table(frames, judge, humans, memo=memo)
    cut = float(frames.pass_threshold) - PASS_EPSILON
    lab = t["human_score"].notna().to_numpy(bool)
    jpass = t["judge_score"].to_numpy(np.float64) >= cut
    hpass = t["human_score"].to_numpy(np.float64) >= cut
    models = sorted({str(m) for m in t["model"]})
    rows = []
    for model in models:
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
        for fig, yv, yh in (
            (
                "mean_score",
                t["human_score"].to_numpy(np.float64),
                t["judge_score"].to_numpy(np.float64),
            ),
            ("pass_rate", hpass.astype(np.float64), jpass.astype(np.float64)),
        ):
            if stratify is None:
                res = ppi_mean(yv[lm], yh[lm], yh[um], ci=ci)
            else:
                s = t[stratify].map(lambda x: "(none)" if x is None else str(x)).to_numpy(object)
                res = stratified_ppi_mean(yv[lm], yh[lm], list(s[lm]), yh[um], list(s[um]), ci=ci)
            row[fig] = res.to_dict()
        if pooled:
            rg = rogan_gladen(jpass[sel], jpass[lab], hpass[lab], ci=ci)
        else:
            rg = rogan_gladen(jpass[sel], jpass[lm], hpass[lm], ci=ci)
        row["pass_rate_rogan_gladen"] = rg.to_dict()
        row["notes"] = notes
        rows.append(row)
    n_inc = int((~lab & t["human_graded"].to_numpy(bool)).sum())
    notes = []
    n_no_judge = int(frames.responses["response_id"].nunique()) - len(t)
    if n_no_judge:
        notes.append(
            f"{n_no_judge} responses without a complete judge score are left out of every estimate"
        )
    if n_inc:
        notes.append(
            f"{n_inc} human-graded responses lack a complete consensus score (ties or "
            "missing verdicts) and count as unlabelled; if that is not at random, PPI may be biased"
        )
    return {
        "benchmark": benchmark,
        "judge": judge,
        "pass_threshold": float(frames.pass_threshold),
        "ci": ci,
        "stratify": stratify,
        "rogan_gladen_pooled": pooled,
        "n_responses": len(t),
        "n_human_graded": int(lab.sum()),
        "models": rows,
        "notes": notes,
    }
