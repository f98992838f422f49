"""Confidence sequences (gradercal.analysis.sequential): the formulas, and coverage when
looked at after every batch, with known truth.

The simulation design (kept here and quoted in docs/planning.md): a model's per-task pass
indicators (Bernoulli p) or rubric scores (Beta with mean μ) arrive one expert-graded task at
a time, 400 in all; the coordinator looks after every batch of 20 (20 looks). A sequence
"covers" a run when every look contains the truth. 2,000 runs per scenario.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from gradercal.analysis.sequential import (
    MAX_BET,
    eb_confidence_sequence,
    ppi_confidence_sequence,
)

RUNS, N, BATCH = 2000, 400, 20
LOOKS = np.arange(BATCH, N + 1, BATCH) - 1  # 0-based index of the last label at each look


def _by_the_paper(x: list[float], alpha: float) -> list[tuple[float, float]]:
    """Waudby-Smith & Ramdas (2024), Theorem 2, one observation at a time (no numpy)."""
    out = []
    mu_prev, var_prev = 0.5, 0.25
    s_y = s_sq = s_lam = s_lam_y = s_vpsi = 0.0
    low, high = 0.0, 1.0
    for t, y in enumerate(x, start=1):
        lam = min(math.sqrt(2 * math.log(2 / alpha) / (var_prev * t * math.log(1 + t))), MAX_BET)
        v = 4 * (y - mu_prev) ** 2
        s_vpsi += v * (-math.log(1 - lam) - lam) / 4
        s_lam += lam
        s_lam_y += lam * y
        centre = s_lam_y / s_lam
        radius = (math.log(2 / alpha) + s_vpsi) / s_lam
        low = max(low, min(max(centre - radius, 0.0), 1.0))
        high = min(high, max(min(centre + radius, 1.0), 0.0))
        out.append((low, high))
        s_y += y
        mu = (0.5 + s_y) / (t + 1)
        s_sq += (y - mu) ** 2
        mu_prev, var_prev = mu, (0.25 + s_sq) / (t + 1)
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_vectorised_sequence_equals_the_papers_formulas(seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.beta(2, 3, size=300)
    cs = eb_confidence_sequence(x, alpha=0.05)
    expected = np.array(_by_the_paper(list(x), 0.05))
    np.testing.assert_allclose(cs.low, expected[:, 0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(cs.high, expected[:, 1], rtol=1e-12, atol=1e-12)


def test_bounds_in_other_units_are_the_rescaled_sequence() -> None:
    rng = np.random.default_rng(3)
    d = rng.uniform(-1, 1, size=200)
    a = eb_confidence_sequence(d, lo=-1.0, hi=1.0)
    b = eb_confidence_sequence((d + 1) / 2)
    np.testing.assert_allclose(a.low, 2 * b.low - 1, atol=1e-12)
    np.testing.assert_allclose(a.high, 2 * b.high - 1, atol=1e-12)


def test_the_bounds_only_tighten_and_shrink_like_root_log_t_over_t() -> None:
    rng = np.random.default_rng(4)
    cs = eb_confidence_sequence(rng.binomial(1, 0.3, size=4000).astype(float))
    assert np.all(np.diff(cs.low) >= 0) and np.all(np.diff(cs.high) <= 0)
    width = cs.high - cs.low
    # from 1,000 to 4,000 labels the width falls by about √(4 log 1000 / log 4000) ≈ 1.85
    assert 1.5 < width[999] / width[3999] < 2.3


@pytest.mark.parametrize("bad", [[0.5, 1.2], [0.5, float("nan")], [-0.1]])
def test_values_outside_the_bounds_are_refused(bad: list[float]) -> None:
    with pytest.raises(ValueError, match=r"\[0.0, 1.0\]"):
        eb_confidence_sequence(bad)
    with pytest.raises(ValueError, match="alpha"):
        eb_confidence_sequence([0.5], alpha=1.0)


def _fixed_sample_covers_every_look(y: np.ndarray, truth: float, binary: bool) -> np.ndarray:
    """Whether a 95% fixed-sample interval recomputed at every look covered each time:
    Wilson for pass indicators, Student t for scores."""
    ok = np.ones(y.shape[0], dtype=bool)
    for i in LOOKS:
        n = i + 1
        sample = y[:, :n]
        m = sample.mean(axis=1)
        if binary:
            z = stats.norm.ppf(0.975)
            centre = (m + z**2 / (2 * n)) / (1 + z**2 / n)
            half = z * np.sqrt(m * (1 - m) / n + z**2 / (4 * n**2)) / (1 + z**2 / n)
        else:
            centre = m
            half = stats.t.ppf(0.975, n - 1) * sample.std(axis=1, ddof=1) / np.sqrt(n)
        ok &= (centre - half <= truth) & (truth <= centre + half)
    return ok


def _sequence_covers_every_look(y: np.ndarray, truth: float) -> np.ndarray:
    cs = eb_confidence_sequence(y)
    return ((cs.low[:, LOOKS] <= truth) & (truth <= cs.high[:, LOOKS])).all(axis=1)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("kind", "truth"),
    [("pass", 0.1), ("pass", 0.5), ("pass", 0.8), ("score", 0.35), ("score", 0.7)],
)
def test_looking_after_every_batch_keeps_the_sequence_covering(kind: str, truth: float) -> None:
    """≥ 95% of runs covered at all 20 looks by the sequence; the fixed-sample interval,
    looked at the same way, misses at some look in more than 5% of runs."""
    rng = np.random.default_rng(20261206 + int(truth * 100))
    if kind == "pass":
        y = rng.binomial(1, truth, size=(RUNS, N)).astype(float)
    else:
        conc = 4.0
        y = rng.beta(truth * conc, (1 - truth) * conc, size=(RUNS, N))
    sequence = _sequence_covers_every_look(y, truth).mean()
    fixed = _fixed_sample_covers_every_look(y, truth, binary=kind == "pass").mean()
    assert sequence >= 0.95, f"sequence covered {sequence:.3f}"
    assert fixed < 0.95, f"the fixed-sample interval covered {fixed:.3f} at every look"
    assert fixed < sequence


@pytest.mark.slow
@pytest.mark.parametrize("judge_accuracy", [0.95, 0.75])
def test_the_prediction_powered_sequence_covers_and_a_good_judge_narrows_it(
    judge_accuracy: float,
) -> None:
    """A population of 2,000 responses drawn at pass rate 0.6; the judge is right with the
    given probability on each; experts label a uniformly random order of them (without
    replacement), 300 in all. The target is the population's own rate, the figure a
    benchmark reports."""
    rng = np.random.default_rng(7)
    runs, pop, n = 400, 2000, 300
    looks = LOOKS[: n // BATCH]
    covered = np.empty(runs, dtype=bool)
    ratio = np.empty(runs)
    for r in range(runs):
        human = rng.binomial(1, 0.6, size=pop).astype(float)
        judge = np.where(rng.random(pop) < judge_accuracy, human, 1 - human)
        order = rng.permutation(pop)[:n]
        cs = ppi_confidence_sequence(human[order], judge[order], float(judge.mean()))
        truth = human.mean()
        covered[r] = ((cs.low[looks] <= truth) & (truth <= cs.high[looks])).all()
        plain = eb_confidence_sequence(human[order])
        ratio[r] = (cs.high[-1] - cs.low[-1]) / (plain.high[-1] - plain.low[-1])
    assert covered.mean() >= 0.95, covered.mean()
    if judge_accuracy >= 0.9:
        assert ratio.mean() < 0.8, ratio.mean()  # a good judge buys a narrower sequence
