"""Plan the expert grading: the intervals and decisions a design of expert work would give.

``gradercal plan`` answers, before or during grading, "how many tasks must the experts
grade, and how many experts per response, for a pass-rate interval of ±0.05?". It fits a
**task-clustered model** of the benchmark to the judgments so far (a pilot) or builds it
from stated assumptions, then simulates each design of a grid (tasks graded ×
experts per item) many times (a parametric bootstrap) and reports the expected figures.

**The model** (criterion level; one response per model and task, as in a benchmark):

* a task ``t`` has the judgment criteria of a pilot task drawn at random (their points,
  penalties included), so rubric sizes and weights are the benchmark's own;
* response ``(t, m)`` of model ``m`` has a latent logit ``η = a_m + u_t + v_tm`` with a task
  effect ``u_t ~ N(0, τ²ρ)`` shared by the models and a response effect
  ``v_tm ~ N(0, τ²(1 − ρ))``; each positive criterion is truly met with probability
  ``sigmoid(η)``, each penalty applies with ``sigmoid(b_m + u_t + v_tm)``;
* an expert's verdict is the truth flipped with probability ``e_t``, the task's expert
  error, ``logit e_t ~ N(logit e, σ_e²)`` (tasks differ in how clear their rubrics are);
  the experts' verdicts are independent given the truth;
* the judge says met with probability ``Se_m`` on a truly met criterion and ``1 − Sp_m``
  on a truly unmet one (per model: a judge may err more on one model's answers); it
  grades every response.

**Fitting a pilot** (:func:`fit_pilot`, moment estimates on the judgment criteria):
``e`` from the expert–expert disagreement ``d`` on items graded twice or more
(``d = 2e(1 − e)``), ``σ_e`` from the spread of the per-task disagreements beyond their
binomial noise; the consensus's own error rate ``e_c`` (majority of ``K`` experts) follows;
``a_m`` and ``b_m`` from the consensus met rates corrected for ``e_c``; ``Se`` and ``Sp``
by solving the two linear equations of the judge × consensus table under those rates;
``τ²`` from the variance of the responses' corrected met fractions beyond their binomial
noise (on the logit scale, by the delta method), ``ρ`` from their covariance between
models within a task. **Assumptions** (:func:`assumed_model`): ``kappa`` is the judge's
Cohen's κ against the true verdicts, ``icc`` the experts' intra-class correlation on one
criterion, ``pass_rate`` every model's true pass rate, and optional ``tasks``, ``models``,
``criteria``, ``task_sd``, ``prevalence``.

**What a simulated design gives** (the same figures gradercal reports on real data):

* ``pass_rate_half_width`` and ``mean_score_half_width``: the half-width of
  :func:`gradercal.analysis.estimate.ppi_mean`'s small-sample PPI++ interval (the
  estimator of ``gradercal estimate``, computed here vectorised with the same formulas:
  power-tuned λ, Agresti–Coull-type pass-rate interval, ``t`` interval with the variance
  floor, clipping to [0, 1]) for each model, labelled = the graded tasks' responses whose
  consensus is complete (with an even number of experts a tied criterion leaves the
  response unlabelled, as in gradercal), unlabelled = the rest; the reported value is
  the widest model's (``per_model`` lists each);
* ``kappa_half_width``: the judge–consensus Cohen's κ over the graded criteria, its 95%
  half-width from the task-clustered linearisation (the influence function of κ summed
  per task, ``√(G/(G−1) Σ IF_t²)``), the large-sample form of the task-clustered
  bootstrap gradercal reports;
* ``alttest_power``: the probability that the alt-test (ε, α = 0.05) finds that the judge
  may replace the experts, with each expert slot of a response as an annotator, the
  task-clustered statistic with a normal reference instead of the bootstrap-t, and the
  Benjamini–Yekutieli correction (needs ≥ 2 experts per item);
* ``acceptance_error``: the share of graded tasks whose acceptance decision (reviewer
  percent agreement ≥ bar, the point rule) differs from the decision the task's true
  agreement ``1 − 2e_t(1 − e_t)`` would give (needs ≥ 2 experts per item).

Designs share their random draws (the first ``T`` tasks and the first ``K`` experts of
one simulated population), so differences between designs are not simulation noise.
The tests (``tests/analysis/test_planning.py``) check the predicted half-widths against
the intervals ``gradercal estimate`` gives on held-out synthetic benchmarks
(:mod:`gradercal.synth`) simulated at the design.

Pure numpy/scipy on plain arrays and :class:`~gradercal.frames.Frames`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from gradercal.frames import Frames

__all__ = [
    "TARGETS",
    "PlanModel",
    "PlanResult",
    "assumed_model",
    "fit_pilot",
    "next_batches",
    "plan",
    "ppi_half_widths",
]

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

#: Target name → (kind, better): ``"half_width"`` targets are met at or below the value,
#: the others at or above (power) or at or below (error rates).
TARGETS: dict[str, tuple[str, str]] = {
    "pass_rate_half_width": ("half_width", "below"),
    "mean_score_half_width": ("half_width", "below"),
    "kappa_half_width": ("half_width", "below"),
    "alttest_power": ("power", "above"),
    "acceptance_error": ("power", "below"),
}

ASSUMPTION_KEYS = (
    "kappa",
    "icc",
    "pass_rate",
    "tasks",
    "models",
    "criteria",
    "task_sd",
    "prevalence",
    "pass_threshold",
)

_FLOOR_WEIGHT = 0.25  # gradercal.analysis.estimate.FLOOR_WEIGHT


def _sigmoid(x: FloatArray) -> FloatArray:
    out: FloatArray = 1.0 / (1.0 + np.exp(-x))
    return out


def _logit(p: float) -> float:
    p = min(max(p, 1e-4), 1 - 1e-4)
    return math.log(p / (1 - p))


def _majority_error(e: float, k: int) -> float:
    """P(the majority of ``k`` experts is wrong | no tie), each wrong with probability ``e``."""
    from scipy.stats import binom  # type: ignore[import-untyped, unused-ignore]

    wrong = np.arange(k + 1)
    pm = binom.pmf(wrong, k, e)
    bad = float(pm[wrong * 2 > k].sum())
    tie = float(pm[wrong * 2 == k].sum())
    return bad / (1.0 - tie) if tie < 1 else 0.5


@dataclass(frozen=True)
class PlanModel:
    """The task-clustered model a plan simulates (see the module docstring)."""

    models: tuple[str, ...]
    n_tasks: int
    rubrics: tuple[tuple[int, ...], ...]  # points of each template task's judgment criteria
    logit_met: tuple[float, ...]  # a_m
    logit_penalty: tuple[float, ...]  # b_m
    latent_sd: float  # τ
    task_share: float  # ρ
    expert_error: float  # e
    expert_error_sd: float  # σ_e (logit scale)
    judge_sensitivity: tuple[float, ...]  # per model
    judge_specificity: tuple[float, ...]
    pass_threshold: float
    source: str  # "pilot" or "assumed"
    pilot: dict[str, Any] = field(default_factory=dict)  # the pilot's own figures

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "models": list(self.models),
            "n_tasks": self.n_tasks,
            "template_tasks": len(self.rubrics),
            "mean_criteria_per_task": float(np.mean([len(r) for r in self.rubrics])),
            "logit_met": dict(zip(self.models, self.logit_met, strict=True)),
            "logit_penalty": dict(zip(self.models, self.logit_penalty, strict=True)),
            "latent_sd": self.latent_sd,
            "task_share": self.task_share,
            "expert_error": self.expert_error,
            "expert_error_sd": self.expert_error_sd,
            "judge_sensitivity": dict(zip(self.models, self.judge_sensitivity, strict=True)),
            "judge_specificity": dict(zip(self.models, self.judge_specificity, strict=True)),
            "pass_threshold": self.pass_threshold,
            "pilot": self.pilot,
        }


# --------------------------------------------------------------------------- fitting


def fit_pilot(frames: Frames, judge: str, *, n_tasks: int | None = None) -> PlanModel:
    """Fit the task-clustered model to the judgments so far (see the module docstring).

    Raises:
        ValueError: no judge verdicts, no human verdicts, or no item graded by two experts.
    """
    crit, j, jj, hh = _pilot_verdicts(frames, judge)
    models = tuple(sorted({str(m) for m in frames.responses["model"]}))
    key = ["response_id", "criterion_id"]
    agg = hh.groupby(key, sort=False).agg(
        k=("met", "size"), c=("met", "sum"), task_id=("task_id", "first")
    )
    agg = agg.reset_index()
    multi = agg.loc[agg["k"] >= 2]
    if multi.empty:
        raise ValueError(
            "no item graded by two experts: the expert error cannot be fitted "
            "(grade some items twice, or give --assume)"
        )
    d, e, sd_e = _expert_error(multi)
    k_pilot = max(round(float(agg["k"].median())), 1)
    e_c = _majority_error(e, k_pilot)
    decided = agg.loc[agg["c"] * 2 != agg["k"]].assign(cons=lambda x: x["c"] * 2 > x["k"])
    both = decided.merge(jj[[*key, "met"]], on=key).merge(
        j.drop_duplicates(key)[[*key, "model", "points"]], on=key
    )
    a_m, b_m, tau, rho = _model_rates(both, models, e_c)
    sens, spec = _judge_rates(both, models, e_c)
    rubrics = tuple(
        tuple(int(x) for x in g.to_numpy())
        for _, g in crit.groupby("task_id", sort=True)["points"]
        if len(g)
    )
    all_tasks = int(frames.tasks["task_id"].nunique())
    pilot = {
        "tasks_graded": int(hh["task_id"].nunique()),
        "experts_per_item": k_pilot,
        "expert_disagreement": d,
        "judge_consensus_agreement": float((both["met"] == both["cons"]).mean())
        if len(both)
        else None,
    }
    return PlanModel(
        models=models,
        n_tasks=int(n_tasks or all_tasks),
        rubrics=rubrics,
        logit_met=tuple(a_m),
        logit_penalty=tuple(b_m),
        latent_sd=tau,
        task_share=rho,
        expert_error=e,
        expert_error_sd=sd_e,
        judge_sensitivity=tuple(sens),
        judge_specificity=tuple(spec),
        pass_threshold=float(frames.pass_threshold),
        source="pilot",
        pilot=pilot,
    )


def _pilot_verdicts(
    frames: Frames, judge: str
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The judgment criteria, every verdict (with its response's task and model and its
    criterion's points), the judge's and the experts' (refused when either is empty)."""
    crit = frames.criteria
    crit = crit.loc[crit["kind"] == "judgment", ["task_id", "criterion_id", "points"]]
    resp = frames.responses[["response_id", "task_id", "model"]]
    j = frames.judgments
    j = j.loc[j["met"].notna(), ["response_id", "criterion_id", "grader", "grader_kind", "met"]]
    j = j.merge(resp, on="response_id").merge(crit, on=["task_id", "criterion_id"])
    j["met"] = j["met"].astype(bool)
    jj = j.loc[j["grader"] == judge]
    hh = j.loc[j["grader_kind"] == "human"]
    if jj.empty:
        raise ValueError(f"no verdicts of the judge {judge!r} to plan from")
    if hh.empty:
        raise ValueError("no expert verdicts yet: give --assume instead of a pilot")
    return crit, j, jj, hh


def _expert_error(multi: pd.DataFrame) -> tuple[float, float, float]:
    """``(d, e, σ_e)`` from the items graded by two experts or more (``k`` verdicts, ``c``
    of them met, their ``task_id``): the disagreement, the expert error (``d = 2e(1 − e)``,
    kept within [0.001, 0.45]) and its spread over tasks beyond binomial noise (logit
    scale, at most 2)."""
    k_, c_ = multi["k"].to_numpy(float), multi["c"].to_numpy(float)
    pairs = k_ * (k_ - 1) / 2
    dis = c_ * (k_ - c_)  # disagreeing pairs
    d = float(dis.sum() / pairs.sum())
    e = (1.0 - math.sqrt(max(1.0 - 2.0 * d, 0.0))) / 2.0
    e = min(max(e, 1e-3), 0.45)
    # spread of per-task disagreement beyond binomial noise → σ_e on the logit scale
    per_task = (
        pd.DataFrame({"t": multi["task_id"].to_numpy(), "dis": dis, "pairs": pairs})
        .groupby("t")
        .sum()
    )
    dt = (per_task["dis"] / per_task["pairs"]).to_numpy(float)
    if len(dt) < 3:
        return d, e, 0.0
    noise = float(np.mean(d * (1 - d) / per_task["pairs"].to_numpy(float)))
    excess = max(float(np.var(dt, ddof=1)) - noise, 0.0)
    # d = 2e(1-e): dd/dlogit(e) = 2e(1-e)(1-2e)
    slope = 2 * e * (1 - e) * (1 - 2 * e)
    return d, e, min(math.sqrt(excess) / slope, 2.0) if slope > 0 else 0.0


def _corrected(q: float, e_c: float) -> float:
    """A consensus met rate ``q`` corrected for the consensus's error ``e_c``, within
    [0.005, 0.995]."""
    scale = 1.0 - 2.0 * e_c
    return min(max((q - e_c) / scale, 0.005), 0.995)


def _model_rates(
    both: pd.DataFrame, models: Sequence[str], e_c: float
) -> tuple[list[float], list[float], float, float]:
    """``(a_m, b_m, τ, ρ)`` from the decided consensus verdicts (``both``: ``cons``,
    ``model``, ``points``, ``response_id``, ``task_id``; ``e_c`` the consensus's error):
    the models' met and penalty logits, the latent spread and its task share."""
    scale = 1.0 - 2.0 * e_c
    a_m, b_m, tau2s = [], [], []
    pos_both = both.loc[both["points"] > 0]
    neg_both = both.loc[both["points"] < 0]
    frac_by_model: dict[str, pd.Series] = {}
    for m in models:
        pm = pos_both.loc[pos_both["model"] == m]
        nm = neg_both.loc[neg_both["model"] == m]
        q = float(pm["cons"].mean()) if len(pm) else 0.5
        p = _corrected(q, e_c)
        a_m.append(_logit(p))
        b_m.append(_logit(_corrected(float(nm["cons"].mean()), e_c)) if len(nm) else _logit(0.1))
        g = pm.groupby("response_id")["cons"].agg(["mean", "size"])
        if len(g) >= 3:
            frac = ((g["mean"] - e_c) / scale).clip(0.0, 1.0)
            frac_by_model[m] = pd.Series(
                frac.to_numpy(), index=pm.groupby("response_id")["task_id"].first().loc[g.index]
            )
            binom_noise = float(np.mean(q * (1 - q) / g["size"])) / scale**2
            v = max(float(np.var(frac, ddof=1)) - binom_noise, 0.0)
            tau2s.append(v / (p * (1 - p)) ** 2)
    tau = math.sqrt(float(np.mean(tau2s))) if tau2s else 1.0
    tau = min(tau, 4.0)
    # task share ρ: covariance of the models' met fractions within a task
    rho = 0.5
    if len(frac_by_model) >= 2:
        wide = pd.DataFrame({m: s.groupby(level=0).mean() for m, s in frac_by_model.items()})
        wide = wide.dropna()
        if len(wide) >= 3:
            cov = wide.cov().to_numpy()
            off = cov[~np.eye(len(cov), dtype=bool)].mean()
            tot = max(float(np.mean(np.diag(cov))), 1e-9)
            rho = float(min(max(off / tot, 0.0), 1.0))
    return a_m, b_m, tau, rho


def _judge_rates(
    both: pd.DataFrame, models: Sequence[str], e_c: float
) -> tuple[list[float], list[float]]:
    """The judge's sensitivity and specificity against the truth, per model (all models'
    verdicts for a model with fewer than 10), from the judge × consensus table."""
    sens, spec = [], []
    for mname in models:
        bm = both.loc[both["model"] == mname]
        if len(bm) < 10:
            bm = both
        prev = _corrected(float(bm["cons"].mean()), e_c) if len(bm) else 0.5
        p11 = float((bm["met"] & bm["cons"]).mean()) if len(bm) else 0.4
        p10 = float((bm["met"] & ~bm["cons"]).mean()) if len(bm) else 0.1
        # p11 = prev·Se·(1−e_c) + (1−prev)·F·e_c ; p10 = prev·Se·e_c + (1−prev)·F·(1−e_c)
        mat = np.array([[prev * (1 - e_c), (1 - prev) * e_c], [prev * e_c, (1 - prev) * (1 - e_c)]])
        se_j, fpr = np.linalg.solve(mat, np.array([p11, p10]))
        sens.append(float(np.clip(se_j, 0.5, 0.999)))
        spec.append(float(np.clip(1 - fpr, 0.5, 0.999)))
    return sens, spec


def _kappa_sym(e: float, p: float) -> float:
    q = p * (1 - e) + (1 - p) * e
    pe = p * q + (1 - p) * (1 - q)
    return ((1 - e) - pe) / (1 - pe)


def _intercept_for_pass_rate(pass_rate: float, tau: float, n_crit: int, thr: float) -> float:
    """The logit ``a`` whose true pass rate is ``pass_rate``: a response passes when at
    least ``⌈thr·C − 1e-9⌉`` of its ``C`` one-point criteria are met, each with probability
    ``sigmoid(a + τz)``, ``z ~ N(0, 1)`` (Gauss–Hermite quadrature, then bisection)."""
    from scipy.stats import binom  # type: ignore[import-untyped, unused-ignore]

    nodes, weights = np.polynomial.hermite_e.hermegauss(40)
    weights = weights / weights.sum()
    need = math.ceil(thr * n_crit - 1e-9)

    def rate(a: float) -> float:
        p = _sigmoid(a + tau * nodes)
        return float(np.sum(weights * binom.sf(need - 1, n_crit, p)))

    lo, hi = -15.0, 15.0
    for _ in range(80):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if rate(mid) < pass_rate else (lo, mid)
    return (lo + hi) / 2


def assumed_model(values: Mapping[str, float]) -> PlanModel:
    """A model from stated assumptions (see the module docstring; defaults below).

    ``kappa`` (0.6) judge–truth κ, ``icc`` (0.5) the experts' ICC on a criterion,
    ``pass_rate`` (0.5), ``tasks`` (750), ``models`` (3), ``criteria`` (25),
    ``task_sd`` (1.0: τ), ``prevalence`` (0.6: share of criteria truly met),
    ``pass_threshold`` (0.7).

    Raises:
        ValueError: an unknown name or a value out of range (the message names it).
    """
    unknown = sorted(set(values) - set(ASSUMPTION_KEYS))
    if unknown:
        raise ValueError(f"unknown assumption {unknown[0]!r} (known: {', '.join(ASSUMPTION_KEYS)})")
    kappa = float(values.get("kappa", 0.6))
    icc = float(values.get("icc", 0.5))
    pass_rate = float(values.get("pass_rate", 0.5))
    prev = float(values.get("prevalence", 0.6))
    thr = float(values.get("pass_threshold", 0.7))
    tau = float(values.get("task_sd", 1.0))
    for name, v, lo, hi in (
        ("kappa", kappa, 0.0, 0.99),
        ("icc", icc, 0.01, 0.99),
        ("pass_rate", pass_rate, 0.01, 0.99),
        ("prevalence", prev, 0.05, 0.95),
        ("pass_threshold", thr, 0.05, 1.0),
        ("task_sd", tau, 0.0, 4.0),
    ):
        if not lo <= v <= hi:
            raise ValueError(f"assumption {name}: must be between {lo} and {hi}, got {v}")
    n_tasks = int(values.get("tasks", 750))
    n_models = int(values.get("models", 3))
    n_crit = int(values.get("criteria", 25))
    if n_tasks < 2 or n_models < 1 or n_crit < 1:
        raise ValueError("assumption tasks/models/criteria: must be at least 2/1/1")
    # icc = p(1-p)(1-2e)^2 / (q(1-q)), q = p(1-e)+(1-p)e: bisection on e in [0, 1/2)
    lo_e, hi_e = 0.0, 0.5
    for _ in range(60):
        mid = (lo_e + hi_e) / 2
        q = prev * (1 - mid) + (1 - prev) * mid
        val = prev * (1 - prev) * (1 - 2 * mid) ** 2 / (q * (1 - q))
        lo_e, hi_e = (mid, hi_e) if val > icc else (lo_e, mid)
    e = lo_e
    lo_j, hi_j = 0.0, 0.5
    for _ in range(60):
        mid = (lo_j + hi_j) / 2
        lo_j, hi_j = (mid, hi_j) if _kappa_sym(mid, prev) > kappa else (lo_j, mid)
    ej = lo_j
    a = _intercept_for_pass_rate(pass_rate, tau, n_crit, thr)
    names = tuple(f"model-{chr(ord('a') + i)}" if i < 26 else f"model-{i}" for i in range(n_models))
    return PlanModel(
        models=names,
        n_tasks=n_tasks,
        rubrics=((1,) * n_crit,),
        logit_met=(a,) * n_models,
        logit_penalty=(_logit(0.1),) * n_models,
        latent_sd=tau,
        task_share=0.5,
        expert_error=max(e, 1e-4),
        expert_error_sd=0.0,
        judge_sensitivity=(1 - ej,) * n_models,
        judge_specificity=(1 - ej,) * n_models,
        pass_threshold=thr,
        source="assumed",
        pilot={k: float(v) for k, v in values.items()},
    )


# --------------------------------------------------------------------------- estimators


def _t_quantile(df: FloatArray, ci: float) -> FloatArray:
    from scipy.stats import t  # type: ignore[import-untyped, unused-ignore]

    out: FloatArray = np.asarray(t.ppf((1 + ci) / 2, np.maximum(df, 1.0)), dtype=np.float64)
    return out


def ppi_half_widths(
    y: FloatArray, yhat: FloatArray, labelled: BoolArray, *, binary: bool, ci: float = 0.95
) -> FloatArray:
    """Half-widths of :func:`gradercal.analysis.estimate.ppi_mean`'s small-sample interval,
    vectorised over the leading axes.

    ``y`` (human values, anything where unlabelled), ``yhat`` (judge values) and
    ``labelled`` have shape ``(..., units)``; the interval of each leading index uses the
    labelled units as ``n`` and the others as the ``N`` unlabelled ones. NaN where fewer
    than two units are labelled.
    """
    L = labelled.astype(np.float64)
    n = L.sum(-1)
    total = float(labelled.shape[-1])
    N = total - n
    with np.errstate(invalid="ignore", divide="ignore"):
        yl = np.where(labelled, y, 0.0)
        my = (yl * L).sum(-1) / n
        mh = (yhat * L).sum(-1) / n
        cov = (((yl - my[..., None]) * (yhat - mh[..., None])) * L).sum(-1) / n
        var_all = np.var(yhat, axis=-1, ddof=1)
        lam = np.where(
            (N > 0) & (var_all > 0), np.clip(cov / ((1 + n / np.maximum(N, 1)) * var_all), 0, 1), 0
        )
        U = 1.0 - L
        mu_u = (yhat * U).sum(-1) / np.maximum(N, 1)
        var_u = np.where(
            N > 0,
            lam**2 * ((yhat - mu_u[..., None]) ** 2 * U).sum(-1) / np.maximum(N, 1) ** 2,
            0.0,
        )
        D = yl - lam[..., None] * yhat
        corners = np.stack([0 * lam, -lam, 1 + 0 * lam, 1 - lam], axis=-1)
        q = _t_quantile(n - 1.0, ci)
        if binary:
            a = q**2 / 4.0
            n_aug = n + 4 * a
            mid = ((D * L).sum(-1) + a * corners.sum(-1)) / n_aug
            var = (((D - mid[..., None]) ** 2) * L).sum(-1) + a * (
                (corners - mid[..., None]) ** 2
            ).sum(-1)
            var_l = var / n_aug / n_aug
            centre = mid + lam * np.where(N > 0, mu_u, 0.0)
        else:
            m = (D * L).sum(-1) / n
            floor = _FLOOR_WEIGHT / 4
            var = (
                (((D - m[..., None]) ** 2) * L).sum(-1)
                + floor * ((corners - m[..., None]) ** 2).sum(-1)
            ) / (n - 1 + _FLOOR_WEIGHT)
            var_l = var / n
            centre = m + lam * np.where(N > 0, mu_u, 0.0)
        h = q * np.sqrt(var_l + var_u)
        width = (np.clip(centre + h, 0, 1) - np.clip(centre - h, 0, 1)) / 2
    out: FloatArray = np.where(n >= 2, width, np.nan)
    return out


# --------------------------------------------------------------------------- simulation


@dataclass(frozen=True)
class PlanResult:
    """What :func:`plan` found; ``to_dict`` is ``gradercal plan --json``."""

    model: PlanModel
    targets: dict[str, float]
    designs: list[dict[str, Any]]
    recommended: dict[str, Any] | None
    n_sims: int
    epsilon: float
    bar: float
    ci: float
    seed: int
    notes: list[str]

    def to_dict(self) -> dict[str, Any]:
        return {
            "targets": self.targets,
            "designs": self.designs,
            "recommended": self.recommended,
            "model": self.model.to_dict(),
            "n_sims": self.n_sims,
            "epsilon": self.epsilon,
            "bar": self.bar,
            "ci": self.ci,
            "seed": self.seed,
            "notes": self.notes,
        }


def default_task_grid(n_tasks: int) -> list[int]:
    """Tasks graded: a roughly geometric grid from 20 up to every task."""
    base = [20, 40, 60, 100, 150, 200, 300, 400, 500, 750, 1000, 1500, 2000]
    grid = sorted({t for t in base if t < n_tasks} | {n_tasks})
    return [t for t in grid if t >= 2]


def _by(pvals: FloatArray, alpha: float) -> FloatArray:
    """Benjamini–Yekutieli rejections along the last axis."""
    m = pvals.shape[-1]
    c = float(np.sum(1.0 / np.arange(1, m + 1)))
    order = np.sort(pvals, axis=-1)
    ks = np.arange(1, m + 1)
    ok = order <= ks * alpha / (m * c)
    # the largest k with p_(k) <= bound: reject every p <= p_(k)
    kmax = np.where(ok.any(-1), m - np.argmax(ok[..., ::-1], axis=-1), 0)
    thresh = np.where(
        kmax > 0, np.take_along_axis(order, np.maximum(kmax - 1, 0)[..., None], -1)[..., 0], -1.0
    )
    out: FloatArray = (pvals <= thresh[..., None]).astype(np.float64)
    return out


def plan(
    model: PlanModel,
    *,
    tasks: Sequence[int] | None = None,
    experts: Sequence[int] = (1, 3, 5),
    targets: Mapping[str, float] | None = None,
    n_sims: int = 200,
    epsilon: float = 0.2,
    bar: float = 0.90,
    ci: float = 0.95,
    seed: int = 0,
    progress: Callable[[str, int, int], None] | None = None,
) -> PlanResult:
    """Simulate every design ``tasks × experts`` ``n_sims`` times (see the module docstring).

    Raises:
        ValueError: an unknown target, or a design outside the benchmark.
    """
    targets = dict(targets or {})
    grid_t, grid_k = _design_grid(model, targets, tasks, experts)
    rng = np.random.default_rng(seed)
    M, G, Kmax = len(model.models), model.n_tasks, grid_k[-1]
    templates = _templates(model)
    cmax = templates.shape[1]
    keys = [(t, k) for t in grid_t for k in grid_k]
    acc: dict[tuple[int, int], dict[str, list[FloatArray]]] = {
        key: {n: [] for n in ("pass", "mean", "kappa", "alt", "accept")} for key in keys
    }
    chunk = max(1, min(n_sims, int(4e6 // max(G * M * cmax * (Kmax + 2), 1)) or 1))
    done = 0
    while done < n_sims:
        S = min(chunk, n_sims - done)
        sim = _simulate(rng, model, templates, S, grid_t[-1], Kmax)
        for k in grid_k:
            sums = _expert_sums(sim, k, bar)
            _add_figures(acc, sim, sums, k, grid_t, ci=ci, epsilon=epsilon)
        done += S
        if progress is not None:
            progress("simulating designs", done, n_sims)
    designs = [_design_row(model, t, k, acc[(t, k)], targets) for t, k in keys]
    ok = [d for d in designs if d["meets_targets"]]
    recommended = None
    if ok:
        best = min(ok, key=lambda d: (d["expert_items"], d["experts_per_item"]))
        recommended = {
            "tasks": best["tasks"],
            "experts_per_item": best["experts_per_item"],
            "expert_items": best["expert_items"],
        }
    notes = []
    if targets and not ok:
        notes.append("no design of the grid meets every target: grade more tasks or relax a target")
    if any(k % 2 == 0 for k in grid_k):
        notes.append(
            "with an even number of experts a tied criterion leaves its response without a "
            "consensus (unlabelled) unless adjudicated; the figures count that loss"
        )
    if 1 in grid_k:
        notes.append("with one expert per item there is no alt-test and no acceptance agreement")
    return PlanResult(model, targets, designs, recommended, n_sims, epsilon, bar, ci, seed, notes)


#: The normal quantile of a 95% interval (the κ half-width).
_Z95 = 1.959963984540054


def _design_grid(
    model: PlanModel,
    targets: Mapping[str, float],
    tasks: Sequence[int] | None,
    experts: Sequence[int],
) -> tuple[list[int], list[int]]:
    """The tasks and experts of :func:`plan`'s grid, sorted (refused outside the benchmark
    or with an unknown target)."""
    for name in targets:
        if name not in TARGETS:
            raise ValueError(f"unknown target {name!r} (known: {', '.join(TARGETS)})")
    grid_t = sorted(set(tasks or default_task_grid(model.n_tasks)))
    grid_k = sorted(set(experts))
    if not grid_t or grid_t[0] < 2 or grid_t[-1] > model.n_tasks:
        raise ValueError(f"tasks graded must be between 2 and {model.n_tasks} (the benchmark)")
    if not grid_k or grid_k[0] < 1 or grid_k[-1] > 15:
        raise ValueError("experts per item must be between 1 and 15")
    return grid_t, grid_k


def _templates(model: PlanModel) -> FloatArray:
    """The template tasks' criteria points, one row per task (0: no criterion)."""
    cmax = max(len(r) for r in model.rubrics)
    templates = np.zeros((len(model.rubrics), cmax), np.float64)
    for i, r in enumerate(model.rubrics):
        templates[i, : len(r)] = r
    return templates


def _score(met: BoolArray, p: FloatArray) -> FloatArray:
    """Rubric scores: the points of the criteria met over the positive points, in [0, 1]."""
    tot = np.where(p > 0, p, 0).sum(-1)
    raw = (p * met).sum(-1) / np.maximum(tot, 1e-12)
    out: FloatArray = np.clip(raw, 0, 1)
    return out


@dataclass(frozen=True)
class _Population:
    """``S`` simulated benchmarks: their criteria, the judge's verdicts and scores on every
    response, and the verdicts of ``Kmax`` experts on the first ``Tmax`` tasks."""

    pts: FloatArray  # (S, G, C) points, 0 where a task has fewer criteria
    judge: BoolArray  # (S, M, G, C)
    e_t: FloatArray  # (S, Tmax) each task's expert error
    experts_met: BoolArray  # (K, S, M, T, C)
    cum: npt.NDArray[np.int16]  # met counts of the first k experts
    j_score: FloatArray  # (S, M, G)
    j_pass: FloatArray
    thr: float  # the pass threshold (less a rounding margin)

    @property
    def valid(self) -> BoolArray:
        out: BoolArray = self.pts != 0
        return out


def _simulate(
    rng: np.random.Generator, model: PlanModel, templates: FloatArray, S: int, Tmax: int, Kmax: int
) -> _Population:
    """Draw ``S`` benchmarks of ``model`` (see the module docstring), in :func:`plan`'s order
    of random draws."""
    M, G = len(model.models), model.n_tasks
    cmax = templates.shape[1]
    a_m = np.asarray(model.logit_met)[None, :, None, None]
    b_m = np.asarray(model.logit_penalty)[None, :, None, None]
    tau, rho = model.latent_sd, model.task_share
    thr = model.pass_threshold - 1e-9
    pick = rng.integers(0, len(model.rubrics), size=(S, G))
    pts = templates[pick]  # (S, G, C)
    u = rng.standard_normal((S, 1, G, 1)) * tau * math.sqrt(rho)
    v = rng.standard_normal((S, M, G, 1)) * tau * math.sqrt(1 - rho)
    eta = np.where(pts[:, None] > 0, a_m, b_m) + u + v  # (S, M, G, C)
    truth = rng.random(eta.shape) < _sigmoid(eta)
    uj = rng.random(eta.shape)
    sens = np.asarray(model.judge_sensitivity)[None, :, None, None]
    spec = np.asarray(model.judge_specificity)[None, :, None, None]
    judge = np.where(truth, uj < sens, uj >= spec)
    e_t = _sigmoid(
        _logit(model.expert_error) + model.expert_error_sd * rng.standard_normal((S, Tmax))
    )
    flips = rng.random((Kmax, S, M, Tmax, cmax)) < e_t[None, :, None, :, None]
    experts_met = truth[None, :, :, :Tmax] ^ flips  # (K, S, M, T, C)
    cum = np.cumsum(experts_met, axis=0, dtype=np.int16)  # met counts of the first k
    j_score = _score(judge, pts[:, None])  # (S, M, G)
    j_pass = (j_score >= thr).astype(np.float64)
    return _Population(pts, judge, e_t, experts_met, cum, j_score, j_pass, thr)


@dataclass(frozen=True)
class _ExpertSums:
    """The consensus of the first ``k`` experts of a :class:`_Population` and its per-task
    sums (a design with ``t`` tasks takes the first ``t``)."""

    resp_ok: BoolArray  # (S, M, T) responses with a consensus on every criterion
    c_score: FloatArray  # (S, M, T)
    c_pass: FloatArray
    un_all: FloatArray  # (S, T) units, judge–consensus agreements, judge and consensus mets
    ag_all: FloatArray
    jm_all: FloatArray
    cm_all: FloatArray
    wrong_all: FloatArray | None  # (S, T) acceptance decided wrongly (k ≥ 2)
    n_items: FloatArray | None  # (S, T) items per task (k ≥ 2)
    st_slots: list[FloatArray]  # per expert slot: the alt-test's d summed per task (k ≥ 2)


def _expert_sums(sim: _Population, k: int, bar: float) -> _ExpertSums:
    """:class:`_ExpertSums` of the first ``k`` experts (``bar``: the acceptance bar)."""
    Tmax, M = sim.e_t.shape[1], sim.judge.shape[1]
    valid, judge = sim.valid, sim.judge
    cnt = sim.cum[k - 1]
    cons = cnt * 2 > k  # (S, M, T, C)
    tie = (cnt * 2 == k) & valid[:, None, :Tmax]
    resp_ok = ~tie.any(-1)  # (S, M, T)
    c_score = _score(cons, sim.pts[:, None, :Tmax])
    c_pass = (c_score >= sim.thr).astype(np.float64)
    agree = (cons == judge[:, :, :Tmax]) & valid[:, None, :Tmax] & ~tie
    unit = valid[:, None, :Tmax] & ~tie
    un_all = unit.sum(axis=(1, 3)).astype(np.float64)  # (S, Tmax)
    ag_all = agree.sum(axis=(1, 3)).astype(np.float64)
    jm_all = (judge[:, :, :Tmax] & unit).sum(axis=(1, 3)).astype(np.float64)
    cm_all = (cons & unit).sum(axis=(1, 3)).astype(np.float64)
    wrong_all = n_items = None
    st_slots = []
    if k >= 2:
        pairs = k * (k - 1) / 2
        ag_pairs = (cnt * (cnt - 1) / 2 + (k - cnt) * (k - cnt - 1) / 2) / pairs
        # acceptance: per task, reviewer percent agreement against the bar
        w = valid[:, None, :Tmax]
        obs_all = (ag_pairs * w).sum(axis=(1, 3)) / (M * w.sum(axis=(1, 3)))
        true_ag = 1 - 2 * sim.e_t * (1 - sim.e_t)
        wrong_all = ((obs_all >= bar) != (true_ag >= bar)).astype(np.float64)
        # alt-test: each expert slot against the others, d summed per task
        n_items = np.broadcast_to(w, cons.shape).sum(axis=(1, 3)).astype(np.float64)
        for slot in range(k):
            me = sim.experts_met[slot]
            others = cnt - me
            s_h = np.where(me, others, (k - 1) - others)
            s_f = np.where(judge[:, :, :Tmax], others, (k - 1) - others)
            dd = (s_h >= s_f).astype(np.int8) - (s_f >= s_h).astype(np.int8)
            st_slots.append((dd * w).sum(axis=(1, 3)).astype(np.float64))  # (S, Tmax)
    return _ExpertSums(
        resp_ok, c_score, c_pass, un_all, ag_all, jm_all, cm_all, wrong_all, n_items, st_slots
    )


def _add_figures(
    acc: dict[tuple[int, int], dict[str, list[FloatArray]]],
    sim: _Population,
    sums: _ExpertSums,
    k: int,
    grid_t: Sequence[int],
    *,
    ci: float,
    epsilon: float,
) -> None:
    """Append each design ``(t, k)``'s figures of these simulations to ``acc``."""
    S, M, G = sim.j_score.shape
    Tmax = sim.e_t.shape[1]
    y_pass = np.zeros((S, M, G))
    y_pass[:, :, :Tmax] = sums.c_pass
    y_mean = np.zeros((S, M, G))
    y_mean[:, :, :Tmax] = sums.c_score
    for t in grid_t:
        lab = np.zeros((S, M, G), bool)
        lab[:, :, :t] = sums.resp_ok[:, :, :t]
        box = acc[(t, k)]
        box["pass"].append(ppi_half_widths(y_pass, sim.j_pass, lab, binary=True, ci=ci))
        box["mean"].append(ppi_half_widths(y_mean, sim.j_score, lab, binary=False, ci=ci))
        box["kappa"].append(_kappa_half_width(sums, t))
        if k >= 2:
            assert sums.wrong_all is not None
            box["accept"].append(sums.wrong_all[:, :t].mean(-1))
            box["alt"].append(_alttest_passes(sums, t, epsilon))


def _kappa_half_width(sums: _ExpertSums, t: int) -> FloatArray:
    """The judge–consensus κ's 95% half-width over the first ``t`` tasks' graded criteria,
    from the task-clustered linearisation."""
    un, ag = sums.un_all[:, :t], sums.ag_all[:, :t]
    jm, cm = sums.jm_all[:, :t], sums.cm_all[:, :t]
    ntot = un.sum(-1)
    po, pj, pc = ag.sum(-1) / ntot, jm.sum(-1) / ntot, cm.sum(-1) / ntot
    pe = pj * pc + (1 - pj) * (1 - pc)
    d_po = 1 / (1 - pe)
    d_pe = (po - 1) / (1 - pe) ** 2
    inf = (
        d_po[:, None] * (ag - po[:, None] * un)
        + d_pe[:, None] * (2 * pc - 1)[:, None] * (jm - pj[:, None] * un)
        + d_pe[:, None] * (2 * pj - 1)[:, None] * (cm - pc[:, None] * un)
    ) / ntot[:, None]
    se_k = np.sqrt(t / (t - 1) * (inf**2).sum(-1))
    out: FloatArray = _Z95 * se_k
    return out


def _alttest_passes(sums: _ExpertSums, t: int, epsilon: float) -> FloatArray:
    """1 where the alt-test over the first ``t`` tasks finds that the judge may replace
    the experts (half of the expert slots rejected after Benjamini–Yekutieli), else 0."""
    from scipy.stats import norm  # type: ignore[import-untyped, unused-ignore]

    assert sums.n_items is not None
    nt = sums.n_items[:, :t]
    pvals = []
    for st_all in sums.st_slots:
        st = st_all[:, :t]
        dbar = st.sum(-1) / nt.sum(-1)
        se_d = np.sqrt(t / (t - 1) * ((st - dbar[:, None] * nt) ** 2).sum(-1)) / nt.sum(-1)
        zz = (dbar - epsilon) / np.maximum(se_d, 1e-12)
        pvals.append(norm.cdf(zz))
    pv = np.stack(pvals, axis=-1)
    out: FloatArray = (_by(pv, 0.05).mean(-1) >= 0.5).astype(np.float64)
    return out


def _design_row(
    model: PlanModel,
    t: int,
    k: int,
    box: Mapping[str, list[FloatArray]],
    targets: Mapping[str, float],
) -> dict[str, Any]:
    """One design's entry of :attr:`PlanResult.designs` from its simulated figures."""
    pr = np.concatenate(box["pass"], axis=0)  # (sims, M)
    ms = np.concatenate(box["mean"], axis=0)
    kp = np.concatenate(box["kappa"])
    per_model = {
        name: {
            "pass_rate_half_width": _nanmean(pr[:, i]),
            "mean_score_half_width": _nanmean(ms[:, i]),
        }
        for i, name in enumerate(model.models)
    }
    hw = {
        "pass_rate_half_width": max(v["pass_rate_half_width"] or 0.0 for v in per_model.values()),
        "mean_score_half_width": max(v["mean_score_half_width"] or 0.0 for v in per_model.values()),
        "kappa_half_width": _nanmean(kp),
    }
    power = {
        "alttest_power": _nanmean(np.concatenate(box["alt"])) if box["alt"] else None,
        "acceptance_error": _nanmean(np.concatenate(box["accept"])) if box["accept"] else None,
    }
    return {
        "tasks": t,
        "experts_per_item": k,
        "expert_items": t * len(model.models) * k,
        "expected_half_width": hw,
        "power": power,
        "per_model": per_model,
        "meets_targets": _meets(hw, power, targets) if targets else None,
    }


def _nanmean(x: FloatArray) -> float | None:
    x = np.asarray(x, np.float64)
    x = x[~np.isnan(x)]
    return float(x.mean()) if x.size else None


def _meets(
    hw: Mapping[str, float | None], power: Mapping[str, float | None], targets: Mapping[str, float]
) -> bool:
    for name, goal in targets.items():
        value = hw.get(name, power.get(name))
        if value is None:
            return False
        if TARGETS[name][1] == "below" and value > goal:
            return False
        if TARGETS[name][1] == "above" and value < goal:
            return False
    return True


# --------------------------------------------------------------------------- the next batch

#: The headline figures of :func:`next_batches` (the widest model's for the first two).
HEADLINE = ("pass_rate_half_width", "mean_score_half_width", "kappa_half_width")


def next_batches(
    model: PlanModel,
    *,
    tasks_now: int,
    experts_now: int,
    batch_responses: int,
    extra_experts: int = 1,
    n_sims: int = 200,
    seed: int = 0,
    progress: Callable[[str, int, int], None] | None = None,
) -> list[dict[str, Any]]:
    """The expected half-widths now and after each kind of next batch (the window's
    "Where to grade next", docs/planning.md).

    One :func:`plan` of the designs ``{T, T + ⌈N/M⌉} × {K, K + extra}`` (shared draws, so
    the differences are not simulation noise), ``T = tasks_now`` tasks graded by
    ``K = experts_now`` experts each, ``N = batch_responses`` more responses over ``M``
    models (a task's responses come ``M`` at a time in the plan's model). Rows, in order:

    * ``"now"``: the design ``(T, K)`` (figures ``None`` when ``T < 2``);
    * ``"uniform"``: ``N`` more responses drawn uniformly, ``(T + ⌈N/M⌉, K)``;
    * ``"active"``: ``N`` more drawn where the judge is least sure. The plan simulates
      uniform draws only: the figures are the uniform row's (``"bound": "at most"``),
      which the weighted estimate matched or beat in the simulation of docs/planning.md
      (17% narrower from the design with an informative judge, within 2% either way with
      an uninformative one); the plan does not simulate the active design itself;
    * ``"experts"``: ``extra`` more experts on each item already graded, ``(T, K + extra)``
      (absent when ``T < 2``).

    Each row: ``kind``, ``tasks``, ``experts_per_item``, ``added_responses`` (responses to
    grade, each by every expert of the design: ``added_items`` counts expert-graded items),
    ``expected_half_width`` (the widest model's for the pass rate and mean score),
    ``per_model`` and ``shrink`` (``now − after`` per headline figure, ``None`` without a
    figure now).

    Raises:
        ValueError: a batch below one response, or a design outside the benchmark (as
            :func:`plan`).
    """
    if batch_responses < 1:
        raise ValueError("the batch must hold at least one response")
    if experts_now < 1 or extra_experts < 1:
        raise ValueError("experts per item must be at least 1")
    m = len(model.models)
    t_now = max(0, min(int(tasks_now), model.n_tasks))
    t_after = min(t_now + math.ceil(batch_responses / m), model.n_tasks)
    t_after = max(t_after, 2)
    k_now, k_more = int(experts_now), int(experts_now) + int(extra_experts)
    grid_t = sorted({t for t in (t_now, t_after) if t >= 2})
    grid_k = [k_now, k_more] if t_now >= 2 else [k_now]
    result = plan(model, tasks=grid_t, experts=grid_k, n_sims=n_sims, seed=seed, progress=progress)
    found = {(d["tasks"], d["experts_per_item"]): d for d in result.designs}
    now = found.get((t_now, k_now), _no_figures(model))
    added = (t_after - t_now) * m
    rows = [
        {
            "kind": "now",
            "tasks": t_now,
            "experts_per_item": k_now,
            "added_responses": 0,
            "added_items": 0,
            "expected_half_width": dict(now["expected_half_width"]),
            "per_model": now["per_model"],
            "shrink": dict.fromkeys(HEADLINE, 0.0 if t_now >= 2 else None),
        },
        _batch_row(found[(t_after, k_now)], now, "uniform", added, added * k_now),
        {
            **_batch_row(found[(t_after, k_now)], now, "active", added, added * k_now),
            "bound": "at most",
        },
    ]
    if t_now >= 2:
        more = _batch_row(found[(t_now, k_more)], now, "experts", 0, t_now * m * (k_more - k_now))
        rows.append({**more, "added_experts": k_more - k_now})
    return rows


def _no_figures(model: PlanModel) -> dict[str, Any]:
    """A design's figures when there are none (fewer than two tasks graded)."""
    return {
        "expected_half_width": dict.fromkeys(HEADLINE),
        "per_model": {
            name: {"pass_rate_half_width": None, "mean_score_half_width": None}
            for name in model.models
        },
    }


def _batch_row(
    d: Mapping[str, Any], now: Mapping[str, Any], kind: str, added: int, items: int
) -> dict[str, Any]:
    """A row of :func:`next_batches`: design ``d`` of the plan after a batch of ``kind``,
    and how much it shrinks the figures of ``now``."""
    hw = {key: d["expected_half_width"][key] for key in HEADLINE}
    before = now["expected_half_width"]
    return {
        "kind": kind,
        "tasks": d["tasks"],
        "experts_per_item": d["experts_per_item"],
        "added_responses": added,
        "added_items": items,
        "expected_half_width": hw,
        "per_model": d["per_model"],
        "shrink": {
            key: None if before[key] is None or hw[key] is None else before[key] - hw[key]
            for key in HEADLINE
        },
    }
