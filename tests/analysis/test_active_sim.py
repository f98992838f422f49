"""Active assignment against uniform assignment, by simulation with known truth.

The design (docs/active.md has the figures): per run one model's responses on a
benchmark, ``N = 4000`` responses of 6 criteria each; a response's quality
``q ~ Beta(a, b)`` (two models: Beta(2, 2) and Beta(5, 2)), the experts' verdicts
``Bernoulli(q)`` per criterion (the truth: the consensus), the score the share met and the
pass ``score ≥ 0.5``. The judge errs on a criterion with a per-response rate ``e``: 10% of
the responses are hard (``e ~ U(0.2, 0.45)``), the rest easy (``e ~ U(0, 0.01)``). Its
confidence in each verdict is ``1 − e``:

* **informative judge**: the confidence is its own (calibrated) ``1 − e``;
* **uninformative judge**: the same confidences shuffled over the responses (same
  spread, no information); its errors are the same as the informative judge's.

How well the confidence ranks the judge's errors is measured (AUC of the uncertainty
``U`` for "the judge's pass differs from the experts'"): ≥ 0.8 for the informative judge,
≈ 0.5 for the other. Equal expert budgets of 100 responses per model:

* **uniform**: 100 responses drawn at random, today's ``ppi_mean`` (small-sample PPI++);
* **same estimator, uniform sample**: :func:`active_ppi_mean` on the uniform draw (all
  of it a "pilot"), to separate the design's gain from the estimator's (today's pass-rate
  interval is an Agresti–Coull-type one, wider at these sizes than the plain ``t``);
* **active**: a uniform pilot of 20, the error model fitted on it, 80 more drawn by
  :func:`gradercal.ops.active.active_probabilities` (default floor) with Poisson sampling
  among the rest, :func:`gradercal.analysis.estimate.active_ppi_mean`.

Goals (issue #35): active intervals for the mean score and the pass rate ≥ 25% narrower on
average than uniform's with the informative judge; never more than 5% wider with the
uninformative one; coverage ≥ 93% for both designs. The truth is the mean over the
``N`` responses of the run.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest

from gradercal.analysis.estimate import active_ppi_mean, ppi_mean
from gradercal.ops.active import Pilot, active_probabilities, fit_error_model

N = 4000
BUDGET = 100
PILOT = 20
CRITERIA = 6
RUNS = 150
MODELS = ((2.0, 2.0), (5.0, 2.0))

Arr = npt.NDArray[np.float64]


def _benchmark(
    rng: np.random.Generator, quality: tuple[float, float], informative: bool
) -> tuple[Arr, Arr, Arr, Arr, Arr]:
    hard = rng.random(N) < 0.1
    e = np.where(hard, rng.uniform(0.2, 0.45, N), rng.uniform(0.0, 0.01, N))
    q = rng.beta(*quality, N)
    truth = rng.random((N, CRITERIA)) < q[:, None]
    judge = truth ^ (rng.random((N, CRITERIA)) < e[:, None])
    conf = 1.0 - e
    if not informative:
        conf = rng.permutation(conf)
    u = conf * (1.0 - conf)  # every criterion of a response shares its confidence
    ys = truth.mean(axis=1)
    fs = judge.mean(axis=1)
    return u, ys, fs, (ys >= 0.5).astype(np.float64), (fs >= 0.5).astype(np.float64)


def _auc(score: Arr, positive: npt.NDArray[np.bool_]) -> float:
    from scipy.stats import rankdata  # type: ignore[import-untyped, unused-ignore]

    r = rankdata(score)
    n1 = int(positive.sum())
    n0 = len(score) - n1
    return float((r[positive].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


def _simulate(informative: bool, seed: int) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    width: dict[str, list[float]] = {k: [] for k in ("u_s", "a_s", "v_s", "u_p", "a_p", "v_p")}
    cover: dict[str, list[bool]] = {k: [] for k in width}
    aucs = []
    for run in range(RUNS):
        u, ys, fs, yp, fp = _benchmark(rng, MODELS[run % len(MODELS)], informative)
        aucs.append(_auc(u, yp != fp))
        lab = np.zeros(N, bool)
        lab[rng.choice(N, BUDGET, replace=False)] = True
        order = rng.permutation(N)
        pilot, rest = order[:PILOT], order[PILOT:]
        err = (ys[pilot] - fs[pilot]) ** 2 + (yp[pilot] - fp[pilot]) ** 2
        a, b, _src = fit_error_model(Pilot(u[pilot], err))
        p, _floor = active_probabilities(np.sqrt(a + b * u[rest]), BUDGET - PILOT)
        take = rng.random(len(rest)) < p
        idx = np.concatenate([pilot, rest[take]])
        prob = np.concatenate([np.full(PILOT, np.nan), p[take]])
        for fig, y, f in (("s", ys, fs), ("p", yp, fp)):
            truth = float(y.mean())
            binary = True if fig == "p" else None
            uni = ppi_mean(y[lab], f[lab], f[~lab], binary=binary)
            act = active_ppi_mean(y[idx], f[idx], prob, f, binary=binary)
            # the same estimator on the uniform sample: the design's share of the gain
            same = active_ppi_mean(y[lab], f[lab], np.full(BUDGET, np.nan), f, binary=binary)
            for key, res in (("u_" + fig, uni), ("a_" + fig, act), ("v_" + fig, same)):
                assert res.ci_low is not None and res.ci_high is not None
                width[key].append(res.ci_high - res.ci_low)
                cover[key].append(res.ci_low <= truth <= res.ci_high)
    out = {f"width_{k}": float(np.mean(v)) for k, v in width.items()}
    out |= {f"cover_{k}": float(np.mean(v)) for k, v in cover.items()}
    out["auc"] = float(np.mean(aucs))
    return out


@pytest.mark.slow
def test_informative_judge_active_intervals_are_a_quarter_narrower() -> None:
    r = _simulate(informative=True, seed=20261206)
    assert r["auc"] >= 0.8
    ratio_s = r["width_a_s"] / r["width_u_s"]
    ratio_p = r["width_a_p"] / r["width_u_p"]
    print(f"informative: AUC {r['auc']:.3f}, width ratios score {ratio_s:.3f} pass {ratio_p:.3f}")
    print({k: round(v, 3) for k, v in r.items()})
    assert (ratio_s + ratio_p) / 2 <= 0.75
    # the design alone (same estimator on both samples) narrows them by ≥ 15%
    design_s = r["width_a_s"] / r["width_v_s"]
    design_p = r["width_a_p"] / r["width_v_p"]
    print(f"design only: score {design_s:.3f} pass {design_p:.3f}")
    assert (design_s + design_p) / 2 <= 0.85
    for key in ("u_s", "a_s", "v_s", "u_p", "a_p", "v_p"):
        assert r[f"cover_{key}"] >= 0.93, key


@pytest.mark.slow
def test_uninformative_judge_costs_at_most_five_percent() -> None:
    r = _simulate(informative=False, seed=20261207)
    assert abs(r["auc"] - 0.5) < 0.05
    ratio_s = r["width_a_s"] / r["width_u_s"]
    ratio_p = r["width_a_p"] / r["width_u_p"]
    print(f"uninformative: AUC {r['auc']:.3f}, ratios score {ratio_s:.3f} pass {ratio_p:.3f}")
    print({k: round(v, 3) for k, v in r.items()})
    assert ratio_s <= 1.05
    assert ratio_p <= 1.05
    design_s = r["width_a_s"] / r["width_v_s"]
    design_p = r["width_a_p"] / r["width_v_p"]
    print(f"design only: score {design_s:.3f} pass {design_p:.3f}")
    assert design_s <= 1.05
    assert design_p <= 1.05
    for key in ("u_s", "a_s", "v_s", "u_p", "a_p", "v_p"):
        assert r[f"cover_{key}"] >= 0.93, key
