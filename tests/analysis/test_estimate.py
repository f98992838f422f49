"""gradercal.analysis.estimate: PPI++ by hand and against ppi-python, its coverage and unbiasedness
in repeated simulations, stratified PPI, Rogan–Gladen, and the report on a synthetic
benchmark graded by the experts only in part."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from gradercal.analysis.estimate import (
    estimate_report,
    estimate_table,
    ppi_mean,
    rogan_gladen,
    stratified_ppi_mean,
)
from gradercal.analysis.scoring import response_scores
from gradercal.formats import read_path
from gradercal.frames import Frames, frames_from_data
from gradercal.synth import SynthConfig, generate

Z95 = 1.959963984540054


def test_ppi_hand_worked() -> None:
    # the textbook Wald interval (interval="wald"; the small-sample default is checked in
    # tests/analysis/test_estimate_coverage.py)
    # λ = 1 (plain PPI): Y = [1, 0, 1, 1], Ŷ = [1, 1, 1, 0], Ỹ = [1, 1, 0, 1, 1, 1]
    # θ = mean(Y − Ŷ) + mean(Ỹ) = (0 − 1 + 0 + 1)/4 + 5/6 = 5/6
    # se² = Var(Ỹ)/6 + Var(Y − Ŷ)/4 = (5/36)/6 + (2/4)/4 = 5/216 + 1/8
    r = ppi_mean([1, 0, 1, 1], [1, 1, 1, 0], [1, 1, 0, 1, 1, 1], lam=1.0, interval="wald")
    assert r.estimate == pytest.approx(5 / 6)
    se = math.sqrt(5 / 216 + 1 / 8)
    assert r.se == pytest.approx(se)
    assert r.ci_low == pytest.approx(5 / 6 - Z95 * se)
    assert r.classical == pytest.approx(0.75)
    assert r.judge_only == pytest.approx(8 / 10)  # Ŷ ∪ Ỹ: 3 + 5 ones of 10
    # n_eff = Var(Y)/se² = (3/16)/se²
    assert r.n_effective == pytest.approx((3 / 16) / se**2)
    assert r.method == "ppi++ wald (z)"
    # λ = 0 is the classical mean, se² = Var(Y)/n with divisor n
    c = ppi_mean([1, 0, 1, 1], [1, 1, 1, 0], [1, 1, 0, 1, 1, 1], lam=0.0, interval="wald")
    assert c.estimate == pytest.approx(0.75)
    assert c.se == pytest.approx(math.sqrt((3 / 16) / 4))
    assert c.n_effective == pytest.approx(4.0)


def test_ppi_power_tuning_by_hand() -> None:
    # λ = Cov(Y, Ŷ)/((1 + n/N) Var(Ŷ ∪ Ỹ)); Y = [0, 1, 1, 0], Ŷ = [0, 1, 1, 1], Ỹ = [1, 0, 1, 1]
    # Cov (divisor n = 4): mean(Y) = .5, mean(Ŷ) = .75; products (y − .5)(ŷ − .75):
    # .375, .125, .125, −.125 → sum .5, Cov = .125. Var of the 8 judge values (divisor 7):
    # 6 ones, 2 zeros → 8·(6/8)(2/8)/7 = 12/56. λ = .125/((1 + 4/4)·12/56) = 0.291666…
    r = ppi_mean([0, 1, 1, 0], [0, 1, 1, 1], [1, 0, 1, 1])
    assert r.lam == pytest.approx(0.125 / (2 * 12 / 56))


def test_ppi_equals_ppi_python() -> None:
    ppi = pytest.importorskip("ppi_py")
    from ppi_py.ppi import _calc_lam_glm

    rng = np.random.default_rng(0)
    for n, N in ((50, 400), (200, 200), (30, 5000)):
        y = rng.normal(0.5, 0.2, n)
        yhat = y + 0.1 + rng.normal(0, 0.1, n)
        yu = rng.normal(0.6, 0.22, N)
        mine = ppi_mean(y, yhat, yu, ci=0.9, interval="wald")
        lo, hi = ppi.ppi_mean_ci(y, yhat, yu, alpha=0.1)
        assert mine.ci_low == pytest.approx(float(lo[0]), abs=1e-12)
        assert mine.ci_high == pytest.approx(float(hi[0]), abs=1e-12)
        assert mine.estimate == pytest.approx(
            float(ppi.ppi_mean_pointestimate(y, yhat, yu)[0]), abs=1e-12
        )
        theta = float(ppi.ppi_mean_pointestimate(y, yhat, yu, lam=1)[0])
        lam = _calc_lam_glm(
            (y - theta)[:, None],
            (yhat - theta)[:, None],
            (yu - theta)[:, None],
            np.eye(1),
            clip=True,
        )
        assert mine.lam == pytest.approx(float(lam), abs=1e-12)


def test_ppi_edge_cases() -> None:
    one = ppi_mean([1.0], [1.0], [0.0, 1.0])
    assert one.estimate is None and "at least two" in (one.note or "")
    everyone = ppi_mean([0.2, 0.4, 0.9], [0.3, 0.4, 0.8], [])
    assert everyone.lam == 0.0 and everyone.estimate == pytest.approx(0.5)
    assert "human-only" in (everyone.note or "")
    # all-equal labels: the Wald interval has zero width, the default a floored variance
    flat_wald = ppi_mean([0.5, 0.5], [0.5, 0.5], [0.5, 0.5], interval="wald")
    assert flat_wald.se == 0.0 and flat_wald.n_effective is None
    flat = ppi_mean([0.5, 0.5], [0.5, 0.5], [0.5, 0.5])
    assert flat.se is not None and flat.se > 0.0 and flat.n_effective == pytest.approx(2.0)
    assert flat.ci_low is not None and flat.ci_high is not None
    assert 0.0 <= flat.ci_low < 0.5 < flat.ci_high <= 1.0
    assert "only 2 human-graded" in (flat.note or "")


def _simulate(rng: np.random.Generator, n: int, N: int) -> tuple[np.ndarray, ...]:
    """Human scores Y ~ Beta(2, 3) (mean 0.4); a judge biased by +0.12 with noise."""
    y_all = rng.beta(2.0, 3.0, n + N)
    yhat_all = np.clip(y_all + 0.12 + rng.normal(0.0, 0.08, n + N), 0.0, 1.0)
    return y_all[:n], yhat_all[:n], yhat_all[n:]


def test_ppi_coverage_and_unbiasedness_in_repeated_simulations() -> None:
    """95% PPI++ intervals cover the true mean 0.4 in 93–97% of 2000 simulated
    benchmarks (150 human-graded, 1500 judge-only responses); the PPI estimates are
    unbiased while the judge alone is biased by about +0.12."""
    rng = np.random.default_rng(11)
    truth = 2.0 / 5.0
    n_sims = 2000
    est, judge_only, cover, gains = [], [], 0, []
    for _ in range(n_sims):
        y, yh, yu = _simulate(rng, 150, 1500)
        r = ppi_mean(y, yh, yu)
        assert r.estimate is not None and r.ci_low is not None and r.ci_high is not None
        est.append(r.estimate)
        judge_only.append(r.judge_only)
        cover += r.ci_low <= truth <= r.ci_high
        gains.append((r.n_effective or 0) / 150)
    coverage = cover / n_sims
    assert 0.93 <= coverage <= 0.97, coverage
    e = np.array(est)
    assert abs(e.mean() - truth) < 3 * e.std(ddof=1) / math.sqrt(n_sims)
    bias_judge = float(np.mean(judge_only)) - truth
    assert 0.10 < bias_judge < 0.13
    # the judge is informative: PPI++ acts like many more human labels
    assert np.mean(gains) > 3.0


@pytest.mark.slow
def test_stratified_ppi_fixes_unequal_labelling_rates() -> None:
    """Two workflows; the experts graded 40% of stratum A but 5% of stratum B, and the
    judge errs differently in each. Stratified PPI stays unbiased (coverage 93–97%);
    plain PPI, which assumes a uniform sample, does not."""
    rng = np.random.default_rng(5)
    n_sims = 1000
    truth = 0.5 * 0.7 + 0.5 * 0.3  # equal strata of 2000 responses, means .7 and .3
    cover, plain_cover, est, plain = 0, 0, [], []
    for _ in range(n_sims):
        ys, yhs, lab, strata = [], [], [], []
        for name, mean, bias, rate in (("A", 0.7, 0.15, 0.4), ("B", 0.3, -0.05, 0.05)):
            y = np.clip(rng.normal(mean, 0.15, 2000), 0, 1)
            ys.append(y)
            yhs.append(np.clip(y + bias + rng.normal(0, 0.1, 2000), 0, 1))
            lab.append(rng.random(2000) < rate)
            strata += [name] * 2000
        y, yh, l_ = np.concatenate(ys), np.concatenate(yhs), np.concatenate(lab)
        s = np.array(strata, dtype=object)
        r = stratified_ppi_mean(y[l_], yh[l_], list(s[l_]), yh[~l_], list(s[~l_]))
        p = ppi_mean(y[l_], yh[l_], yh[~l_])
        assert r.ci_low is not None and r.ci_high is not None and r.estimate is not None
        assert p.ci_low is not None and p.ci_high is not None and p.estimate is not None
        cover += r.ci_low <= truth <= r.ci_high
        plain_cover += p.ci_low <= truth <= p.ci_high
        est.append(r.estimate)
        plain.append(p.estimate)
    assert 0.93 <= cover / n_sims <= 0.97, cover / n_sims
    assert abs(np.mean(est) - truth) < 0.003
    assert abs(np.mean(plain) - truth) > 0.05
    assert plain_cover / n_sims < 0.5
    assert set(r.strata or {}) == {"A", "B"}


def test_stratified_pools_small_strata() -> None:
    # below MIN_STRATUM_LABELS (10) labels a stratum is pooled (A 2 of 3 labelled, B 1 of
    # 1: rates within 2x); one group left → plain PPI++
    r = stratified_ppi_mean([0.1, 0.2, 0.9], [0.1, 0.3, 0.8], ["A", "A", "B"], [0.5], ["A"])
    plain = ppi_mean([0.1, 0.2, 0.9], [0.1, 0.3, 0.8], [0.5])
    assert r.estimate == pytest.approx(plain.estimate) and r.ci_low == pytest.approx(plain.ci_low)
    assert r.strata == {} and "stratification refused" in (r.note or "")
    # min_labels=2: C (one label) is pooled and, still short, absorbs the smallest
    # other stratum labelled at a similar rate (A and B, 2 of 3 each, tie at two labels
    # and are within 2x of C's 1 of 2; the first name wins)
    two = stratified_ppi_mean(
        [0.1, 0.2, 0.9, 0.7, 0.4],
        [0.1, 0.3, 0.8, 0.9, 0.5],
        ["A", "A", "B", "B", "C"],
        [0.5, 0.6, 0.7],
        ["A", "B", "C"],
        min_labels=2,
    )
    assert set(two.strata or {}) == {"B", "(pooled) A + C"}
    assert "fewer than 2 human-graded responses pooled: C" in (two.note or "")
    assert two.strata is not None and two.strata["(pooled) A + C"].n_labelled == 3


def test_rogan_gladen_hand_worked() -> None:
    # judge passes 50 of 100; on the labelled set: 10 human passes of which the judge
    # passes 9 (Se = .9), 20 human fails of which it fails 16 (Sp = .8).
    # π = (0.5 + 0.8 − 1)/(0.9 + 0.8 − 1) = 0.3/0.7
    judge_all = np.array([True] * 50 + [False] * 50)
    jl = np.array([True] * 9 + [False] + [False] * 16 + [True] * 4)
    hl = np.array([True] * 10 + [False] * 20)
    r = rogan_gladen(judge_all, jl, hl)
    assert r.sensitivity == pytest.approx(0.9) and r.specificity == pytest.approx(0.8)
    pi = 0.3 / 0.7
    assert r.estimate == pytest.approx(pi)
    # the raw-proportion (Wald) variance
    w = rogan_gladen(judge_all, jl, hl, interval="wald")
    var = (0.25 / 100 + pi**2 * 0.09 / 10 + (1 - pi) ** 2 * 0.16 / 20) / 0.7**2
    assert w.ci_low == pytest.approx(max(pi - Z95 * math.sqrt(var), 0.0))
    assert w.ci_high == pytest.approx(min(pi + Z95 * math.sqrt(var), 1.0))
    # the default: each binomial variance at the Agresti–Coull-adjusted proportion
    # (x + z²/2)/(m + z²) over m + z²; e.g. Se: (9 + 1.92)/(10 + 3.84)
    z2 = Z95**2

    def adj(x: float, m: int) -> float:
        q = (x + z2 / 2) / (m + z2)
        return q * (1 - q) / (m + z2)

    var_ac = (adj(50, 100) + pi**2 * adj(9, 10) + (1 - pi) ** 2 * adj(16, 20)) / 0.7**2
    assert r.ci_low == pytest.approx(max(pi - Z95 * math.sqrt(var_ac), 0.0))
    assert r.ci_high == pytest.approx(min(pi + Z95 * math.sqrt(var_ac), 1.0))
    assert var_ac > var and r.method is not None and "agresti-coull" in r.method
    # a judge no better than chance: undefined, with the reason
    bad = rogan_gladen(judge_all, np.array([True, False]), np.array([False, True]))
    assert bad.estimate is None and "no information" in (bad.note or "")
    # outside [0, 1]: clipped, the raw value kept
    out = rogan_gladen(
        np.zeros(10, bool), np.array([True, False, False]), np.array([True, False, False])
    )
    assert out.unclipped == pytest.approx((0 + 1 - 1) / 1) and out.estimate == 0.0


def test_rogan_gladen_coverage_roughly_nominal() -> None:
    """The delta-method interval, calibration-set uncertainty included, covers the true
    pass rate in about 95% of 1000 simulations (the ratio makes it slightly conservative
    or liberal; 92–98.5% accepted: the Agresti–Coull-adjusted variances add a few
    tenths of a point here, the raw-proportion interval covers 97.7%, the default
    98.1%; Monte-Carlo standard error ≈ 0.45 points)."""
    rng = np.random.default_rng(3)
    truth, se, sp = 0.35, 0.85, 0.9
    hits = 0
    for _ in range(1000):
        h = rng.random(3000) < truth
        j = np.where(h, rng.random(3000) < se, rng.random(3000) > sp)
        lab = np.zeros(3000, bool)
        lab[:300] = True
        r = rogan_gladen(j, j[lab], h[lab])
        assert r.ci_low is not None and r.ci_high is not None
        hits += r.ci_low <= truth <= r.ci_high
    assert 0.92 <= hits / 1000 <= 0.985, hits / 1000


@pytest.fixture(scope="module")
def partly_graded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Frames, Frames]:
    """A synthetic benchmark with every response graded by 3 experts and a biased judge,
    and the same benchmark with the experts' verdicts kept on 30% of the tasks only."""
    out: Path = tmp_path_factory.mktemp("ppi") / "bench"
    generate(
        out,
        SynthConfig(
            tasks=120,
            criteria_per_task=10,
            responses_per_task=2,
            artifacts_per_task=0,
            judge_sensitivity=0.97,
            judge_specificity=0.75,
            judge_leniency={"axis:completeness": 0.35, "axis:accuracy": 0.3},
            seed=4,
        ),
    )
    full = frames_from_data(read_path(out))
    rng = np.random.default_rng(0)
    tasks = full.tasks["task_id"].to_numpy(object)
    keep = set(tasks[rng.random(len(tasks)) < 0.3])
    task_of = dict(zip(full.responses["response_id"], full.responses["task_id"], strict=True))
    j = full.judgments
    human = j["grader_kind"] == "human"
    kept = j.loc[~human | j["response_id"].map(task_of).isin(keep)].reset_index(drop=True)
    part = Frames(
        full.pass_threshold, full.tasks, full.criteria, full.responses, kept, full.adjudications
    )
    return full, part


def test_report_on_a_partly_graded_benchmark(partly_graded: tuple[Frames, Frames]) -> None:
    full, part = partly_graded
    rep = estimate_report(part, "judge", stratify=None)
    cons = response_scores(full, "consensus").dropna(subset=["score"])
    judge = response_scores(full, "judge").set_index("response_id")["score"]
    assert [r["model"] for r in rep["models"]] == ["model-a", "model-b"]
    for row in rep["models"]:
        m = row["model"]
        target = float(cons.loc[cons["model"] == m, "score"].mean())  # the experts on everything
        ms = row["mean_score"]
        assert ms["n_labelled"] < 0.45 * row["n_responses"]
        assert ms["n_labelled"] + ms["n_unlabelled"] == row["n_responses"] == 120
        assert ms["ci"][0] <= target <= ms["ci"][1]
        assert ms["gain"] >= 1.0 - 1e-9
        assert row["pass_rate_rogan_gladen"]["n_all"] == row["n_responses"]
    # model-b (the weaker model) has many unmet criteria, so the lenient judge inflates
    # its mean score a lot; PPI++ removes most of that bias.
    b = rep["models"][1]["mean_score"]
    target_b = float(cons.loc[cons["model"] == "model-b", "score"].mean())
    raw_b = float(judge.loc[cons.loc[cons["model"] == "model-b", "response_id"]].mean())
    assert raw_b - target_b > 0.08
    assert abs(b["estimate"] - target_b) < abs(raw_b - target_b) / 4
    strat = estimate_report(part, "judge", stratify="workflow")
    assert strat["stratify"] == "workflow"
    refused: list[str] = []
    for row in strat["models"]:
        # strata with fewer than 10 labels are pooled ("(pooled) a + b"), every workflow
        # appears once; no two strata of 10 labels: plain PPI++ and an empty dict
        ms = row["mean_score"]
        names = [w for k in ms["strata"] for w in k.removeprefix("(pooled) ").split(" + ")]
        assert sorted(names) == sorted(set(names)) and set(names) <= set(full.tasks["workflow"])
        assert all(s["n_labelled"] >= 10 for s in ms["strata"].values())
        if not ms["strata"]:
            assert "stratification refused" in ms["note"]
        if ms["estimate"] is None:  # a short workflow labelled at no similar rate
            assert ms["note"].startswith("stratification refused: ") and ms["ci"] is None
            assert "within 2x" in ms["note"]
            refused.append(ms["note"])
            continue
        assert ms["ci"][0] <= ms["estimate"] <= ms["ci"][1]
    t = estimate_table(part, "judge")
    assert t["human_score"].notna().sum() == rep["n_human_graded"]
