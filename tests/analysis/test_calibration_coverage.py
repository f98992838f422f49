"""Coverage of the out-of-fold intervals of the threshold calibration, by simulation.

The out-of-fold "after" figures estimate how well a calibrator *fitted by this
procedure* on data of this size agrees with the experts on new tasks. Estimand: with
``m`` the number of training tasks of one fold (4/5 of the calibration tasks), ``t_D``
the threshold fitted on a sample ``D`` of ``m`` tasks and ``C(t)`` the population
confusion matrix of the verdicts ``s ≥ t`` (a new item of a new task), the truth is the
figure (Cohen's kappa, percent agreement) of ``E_D[C(t_D)]`` — the expectation of the
pooled out-of-fold confusion matrix. On pure noise (the judge's probability independent
of the experts' verdict) every fitted rule is independent of the verdict, so the true
kappa is exactly 0, whatever the fit. For an informative judge ``E_D`` is computed by
Monte Carlo over independent training samples, ``C(t)`` exactly (discrete scores).

Items are clustered in tasks (each task has its own met rate, Beta(3, 2)), so the task
is the unit of resampling. The old interval resamples tasks with the fitted thresholds
held fixed (``oof_interval="fixed"``); the new one redoes the cross-fit on every task
resample (``"refit"``).
"""

from __future__ import annotations

import numpy as np
import pytest

from gradercal.analysis import calibration as cal
from gradercal.analysis.agreement import comparison_metrics

#: The judge's probability of met takes these values (confidences 0.55 … 0.95).
VALUES = np.array([0.05, 0.15, 0.25, 0.35, 0.45, 0.55, 0.65, 0.75, 0.85, 0.95])
_NOISE = np.array([2, 3, 4, 5, 6, 10, 12, 14, 12, 8], float)
_MET = np.array([1, 1, 2, 2, 3, 6, 9, 13, 17, 20], float)
_UNMET = np.array([10, 10, 8, 6, 4, 9, 9, 5, 2, 1], float)  # a lenient judge
#: P(s | expert not met), P(s | expert met).
SCENARIOS = {
    "noise": (_NOISE / _NOISE.sum(), _NOISE / _NOISE.sum()),
    "informative": (_UNMET / _UNMET.sum(), _MET / _MET.sum()),
}
MET_RATE = 0.6  # mean of Beta(3, 2)
N_TASKS, PER_TASK, FOLDS = 25, 12, 5
N_SEEDS, N_BOOT = 80, 100


def _draw(rng: np.random.Generator, n_tasks: int, scenario: str) -> tuple[np.ndarray, ...]:
    p0, p1 = SCENARIOS[scenario]
    rate = rng.beta(3, 2, n_tasks)
    y = (rng.random((n_tasks, PER_TASK)) < rate[:, None]).astype(int).ravel()
    s0 = rng.choice(VALUES, size=len(y), p=p0)
    s1 = rng.choice(VALUES, size=len(y), p=p1)
    return np.where(y == 1, s1, s0), y, np.repeat(np.arange(n_tasks), PER_TASK)


def _population_confusion(t: float, scenario: str) -> np.ndarray:
    p0, p1 = SCENARIOS[scenario]
    q0, q1 = p0[t <= VALUES].sum(), p1[t <= VALUES].sum()
    return np.array(
        [MET_RATE * q1, (1 - MET_RATE) * q0, MET_RATE * (1 - q1), (1 - MET_RATE) * (1 - q0)]
    )


def _truth(scenario: str, n_fits: int = 2000) -> dict[str, float]:
    """Kappa and agreement of ``E_D[C(t_D)]``, and the raw judge's kappa (t = 0.5)."""
    rng = np.random.default_rng(99)
    m = N_TASKS - N_TASKS // FOLDS
    conf = np.zeros(4)
    for _ in range(n_fits):
        s, y, _t = _draw(rng, m, scenario)
        est = cal.ThresholdCalibrator().fit(s[:, None], y)
        # one class only: the calibrator predicts it (t below or above every score)
        t = est.threshold_ if len(est.classes_) == 2 else (0.0 if est.classes_[0] == 1 else 2.0)
        conf += _population_confusion(t, scenario)
    after = comparison_metrics((conf / n_fits)[None, :])
    raw = comparison_metrics(_population_confusion(0.5, scenario)[None, :])
    return {
        "kappa": float(after["cohen_kappa"][0]),
        "agreement": float(after["percent_agreement"][0]),
        "change": float(after["cohen_kappa"][0] - raw["cohen_kappa"][0]),
    }


def _coverage(scenario: str) -> dict[str, dict[str, float]]:
    truth = _truth(scenario)
    if scenario == "noise":
        assert truth["kappa"] == pytest.approx(0.0, abs=1e-12)  # exact: C(t) is a product
    hits = {iv: dict.fromkeys(truth, 0) for iv in cal.OOF_INTERVALS}
    for seed in range(N_SEEDS):
        s, y, task = _draw(np.random.default_rng(1000 + seed), N_TASKS, scenario)
        for iv in cal.OOF_INTERVALS:
            fig = cal.criterion_cross_fit(
                s, y, task, n_splits=FOLDS, n_boot=N_BOOT, seed=seed, oof_interval=iv
            )
            for key, (block, name) in {
                "kappa": ("after", "cohen_kappa"),
                "agreement": ("after", "percent_agreement"),
                "change": ("change", "cohen_kappa"),
            }.items():
                lo, hi = fig[block][name]["ci"]
                hits[iv][key] += lo <= truth[key] <= hi
    return {iv: {k: v / N_SEEDS for k, v in h.items()} for iv, h in hits.items()}


@pytest.mark.slow
@pytest.mark.parametrize("scenario", ["noise", "informative"])
def test_refit_interval_covers_and_the_fixed_one_does_not(scenario: str) -> None:
    cov = _coverage(scenario)
    # Monte-Carlo standard error of a coverage near 0.95 over 150 seeds:
    # sqrt(0.95 · 0.05 / 150) = 0.018. The refit interval must reach 0.90 (nominal
    # minus 2.8 SE) on every figure; the fixed-fit interval, measured on the very same
    # data sets, must stay below 0.90 on the figure it misses most (it covered 0.84 on
    # pure noise and 0.83 on the informative judge: 6 SE below nominal), so this test
    # fails on the old behaviour. (The refit interval is conservative: 0.99–1.00.)
    for key, value in cov["refit"].items():
        assert value >= 0.90, (key, cov)
    assert min(cov["fixed"].values()) < 0.90, cov
    assert np.mean(list(cov["refit"].values())) > np.mean(list(cov["fixed"].values())) + 0.04
