"""gradercal plan: its predicted interval half-widths against the realised ones.

The realised half-width is the interval ``gradercal estimate`` (PPI++, small-sample) gives
on held-out synthetic benchmarks (:mod:`gradercal.synth`, other seeds than the pilot's)
simulated at the design: ``T`` tasks graded by ``K`` experts each, the judge on all.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from gradercal.analysis.agreement import judge_agreement
from gradercal.analysis.alt_test import alt_test_frames
from gradercal.analysis.estimate import estimate_report, ppi_mean
from gradercal.analysis.planning import (
    assumed_model,
    fit_pilot,
    plan,
    ppi_half_widths,
)
from gradercal.analysis.verdicts import verdicts
from gradercal.formats import read_path
from gradercal.frames import Frames, frames_from_data
from gradercal.synth import SynthConfig, generate

TASKS = 200
FloatArray = npt.NDArray[np.float64]


def _bench(root: Path, seed: int, experts: int, graded: int) -> Frames:
    out = root / f"b{seed}-{experts}-{graded}"
    generate(
        out,
        SynthConfig(
            tasks=TASKS,
            criteria_per_task=15,
            responses_per_task=2,
            artifacts_per_task=0,
            human_graders=experts,
            numeric_task_share=0.0,
            seed=seed,
        ),
    )
    full = frames_from_data(read_path(out))
    keep = set(full.tasks["task_id"].to_numpy(object)[:graded])
    task_of = dict(zip(full.responses["response_id"], full.responses["task_id"], strict=True))
    j = full.judgments
    kept = j.loc[
        (j["grader_kind"] != "human") | j["response_id"].map(task_of).isin(keep)
    ].reset_index(drop=True)
    return Frames(
        full.pass_threshold, full.tasks, full.criteria, full.responses, kept, full.adjudications
    )


def test_vectorised_half_widths_equal_estimate() -> None:
    rng = np.random.default_rng(3)
    for binary in (True, False):
        for n_lab in (5, 30, 120):
            y = (rng.random(120) < 0.6).astype(float) if binary else rng.beta(4, 2, 120)
            yh = (
                np.where(rng.random(120) < 0.8, y, 1 - y)
                if binary
                else np.clip(y + rng.normal(0, 0.1, 120), 0, 1)
            )
            lab = np.zeros(120, bool)
            lab[:n_lab] = True
            got = ppi_half_widths(y, yh, lab, binary=binary)
            r = ppi_mean(y[lab], yh[lab], yh[~lab], binary=binary)
            assert r.ci_low is not None and r.ci_high is not None
            assert got == pytest.approx((r.ci_high - r.ci_low) / 2, rel=1e-9, abs=1e-12)


def test_assumptions_are_checked() -> None:
    with pytest.raises(ValueError, match="unknown assumption 'kapa'"):
        assumed_model({"kapa": 0.6})
    with pytest.raises(ValueError, match="icc"):
        assumed_model({"icc": 1.5})
    m = assumed_model({"kappa": 0.6, "icc": 0.3, "pass_rate": 0.5, "tasks": 100})
    r = plan(m, tasks=[20, 100], experts=[1, 3], n_sims=20, targets={"pass_rate_half_width": 0.5})
    assert [(d["tasks"], d["experts_per_item"]) for d in r.designs] == [
        (20, 1),
        (20, 3),
        (100, 1),
        (100, 3),
    ]
    assert r.recommended == {"tasks": 20, "experts_per_item": 1, "expert_items": 60}
    widths = [d["expected_half_width"]["pass_rate_half_width"] for d in r.designs]
    assert widths[2] < widths[0]  # more tasks, narrower


@pytest.fixture(scope="module")
def held_out(tmp_path_factory: pytest.TempPathFactory) -> Callable[[int, int, int], Frames]:
    """Synthetic benchmarks by (seed, experts, tasks graded), generated once per module."""
    root = tmp_path_factory.mktemp("plan")
    cache: dict[tuple[int, int, int], Frames] = {}

    def get(seed: int, experts: int, graded: int) -> Frames:
        if (seed, experts, graded) not in cache:
            cache[(seed, experts, graded)] = _bench(root, seed, experts, graded)
        return cache[(seed, experts, graded)]

    return get


@pytest.fixture(scope="module")
def predicted(held_out: Callable[[int, int, int], Frames]) -> dict[tuple[int, int], Any]:
    """The plan fitted to a pilot (seed 1000: 60 tasks graded by 3 experts)."""
    model = fit_pilot(held_out(1000, 3, 60), "judge")
    result = plan(model, tasks=[60, 150], experts=[1, 3], n_sims=100, seed=1)
    return {(d["tasks"], d["experts_per_item"]): d for d in result.designs}


DESIGNS = [(60, 3), (150, 1)]


@pytest.mark.slow
def test_predicted_half_widths_match_realised(
    held_out: Callable[[int, int, int], Frames], predicted: dict[tuple[int, int], Any]
) -> None:
    for graded, experts in DESIGNS:
        realised: dict[tuple[str, str], list[float]] = {}
        for seed in range(8):  # held out: not the pilot's seed
            rep = estimate_report(held_out(seed, experts, graded), "judge")
            for row in rep["models"]:
                for fig in ("pass_rate", "mean_score"):
                    lo, hi = row[fig]["ci"]
                    realised.setdefault((row["model"], fig), []).append((hi - lo) / 2)
        for (model_name, fig), values in realised.items():
            want = float(np.mean(values))
            got = predicted[(graded, experts)]["per_model"][model_name][f"{fig}_half_width"]
            assert abs(got / want - 1) <= 0.15, (graded, experts, model_name, fig, got, want)


@pytest.mark.slow
def test_predicted_kappa_half_width_matches_the_task_clustered_bootstrap(
    held_out: Callable[[int, int, int], Frames], predicted: dict[tuple[int, int], Any]
) -> None:
    """The closed-form κ half-width against ``gradercal agreement``'s bootstrap interval."""
    for graded, experts in DESIGNS:
        widths = []
        for seed in range(4):
            head = judge_agreement(held_out(seed, experts, graded), "judge", n_boot=400).headline
            kappa = head.metrics["cohen_kappa"]
            assert kappa.ci_low is not None and kappa.ci_high is not None
            widths.append((kappa.ci_high - kappa.ci_low) / 2)
        got = predicted[(graded, experts)]["expected_half_width"]["kappa_half_width"]
        want = float(np.mean(widths))
        assert abs(got / want - 1) <= 0.15, (graded, experts, got, want)


@pytest.mark.parametrize("pass_rate", [0.2, 0.5, 0.8])
@pytest.mark.parametrize("task_sd", [0.5, 1.0])
def test_an_assumed_pass_rate_is_the_models_true_pass_rate(
    pass_rate: float, task_sd: float
) -> None:
    model = assumed_model({"pass_rate": pass_rate, "task_sd": task_sd, "criteria": 25})
    rng = np.random.default_rng(0)
    eta = model.logit_met[0] + task_sd * rng.standard_normal(40_000)
    met = rng.random((40_000, 25)) < 1.0 / (1.0 + np.exp(-eta[:, None]))
    true_rate = float(np.mean(met.mean(axis=1) >= model.pass_threshold - 1e-9))
    assert true_rate == pytest.approx(pass_rate, abs=0.01)


def _acceptance_wrong(frames: Frames, bar: float) -> FloatArray:
    """Per graded task: whether its reviewers' percent agreement (the share of agreeing
    pairs per unit, averaged over the task's units) is at or above ``bar``."""
    v = verdicts(frames)
    h = v.loc[v["grader_kind"] == "human"]
    g = h.groupby(["task_id", "response_id", "criterion_id"])["met"].agg(["sum", "count"])
    k, c = g["count"].astype(float), g["sum"].astype(float)
    share = (c * (c - 1) / 2 + (k - c) * (k - c - 1) / 2) / (k * (k - 1) / 2)
    per_task = share.groupby(level=0).mean()
    out: FloatArray = (per_task.to_numpy(np.float64) >= bar).astype(np.float64)
    return out


@pytest.mark.slow
def test_predicted_alttest_power_and_acceptance_error_match_realised(
    held_out: Callable[[int, int, int], Frames],
) -> None:
    """``plan``'s alt-test power and acceptance error rate against the realised ones on
    held-out benchmarks (12 seeds, 20 tasks graded by 3 experts): the share of them on
    which ``gradercal alttest`` (ε = 0.05, bootstrap-t) finds that the judge may replace
    the experts, and the share of graded tasks whose acceptance decision (reviewer
    percent agreement ≥ 0.90) is on the wrong side of the task's true agreement.

    The synth's experts err at fixed rates (sensitivity 0.92, specificity 0.90), so
    every task's true pairwise agreement is ``s² + (1 − s)²`` ≤ 0.853 < 0.90: a task
    accepted by its observed agreement is an acceptance error. Tolerances: ±0.20 for the
    power (binomial sd over 12 benchmarks ≈ 0.13) and ±0.05 for the error rate (240
    tasks; sd ≈ 0.024)."""
    bar, eps = 0.90, 0.05
    cfg = SynthConfig()
    true_agreement = max(
        s * s + (1 - s) * (1 - s) for s in (cfg.human_sensitivity, cfg.human_specificity)
    )
    assert true_agreement < bar
    model = fit_pilot(held_out(1000, 3, 60), "judge")
    pred = plan(model, tasks=[20], experts=[3], n_sims=200, seed=2, epsilon=eps, bar=bar)
    power = pred.designs[0]["power"]
    passed, wrong = [], []
    for seed in range(12):
        f = held_out(seed, 3, 20)
        humans = sorted(set(f.judgments.loc[f.judgments["grader_kind"] == "human", "grader"]))
        passed.append(alt_test_frames(f, "judge", humans, epsilon=eps).passed)
        wrong.append(_acceptance_wrong(f, bar))
    realised_power = float(np.mean(passed))
    realised_error = float(np.mean(np.concatenate(wrong)))
    print(
        f"alt-test power predicted {power['alttest_power']:.3f} realised {realised_power:.3f}; "
        f"acceptance error predicted {power['acceptance_error']:.3f} "
        f"realised {realised_error:.3f}"
    )
    assert 0.2 < power["alttest_power"] < 0.95  # a design where power is informative
    assert abs(power["alttest_power"] - realised_power) <= 0.20
    assert abs(power["acceptance_error"] - realised_error) <= 0.05
