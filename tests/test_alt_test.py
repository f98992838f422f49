"""gradercal.alt_test: a hand-worked example, Benjamini–Yekutieli against statsmodels, an
independent loop implementation of the paper's procedure, scipy's tests, refusals."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from gradercal.alt_test import (
    MIN_T_TEST_ITEMS,
    AltTestRefused,
    alt_test,
    alt_test_frames,
    benjamini_yekutieli,
)
from gradercal.errors import GradercalError
from gradercal.formats import read_path
from gradercal.frames import frames_from_data
from tests.conftest import DATA, DEMO


def _long(annotations: dict[str, dict[str, object]]) -> pd.DataFrame:
    return pd.DataFrame(
        [(i, a, v) for a, items in annotations.items() for i, v in items.items()],
        columns=["item", "annotator", "value"],
    )


def test_hand_worked_example() -> None:
    """Three annotators, four items, binary labels.

    item  h1 h2 h3  judge
    i1     1  1  1    1
    i2     1  0  0    0
    i3     0  0  1    0
    i4     1  1  0    1

    Excluding h1: others (h2, h3).
      i1: S(h1) = 2/2, S(f) = 2/2 → W^f = W^h = 1
      i2: S(h1) = 0/2, S(f) = 2/2 → W^f = 1, W^h = 0
      i3: S(h1) = 1/2, S(f) = 1/2 → both 1
      i4: S(h1) = 1/2, S(f) = 1/2 → both 1
      ρ^f = 1, ρ^h = 3/4, d = W^h − W^f = [0, −1, 0, 0]
    Excluding h2: others (h1, h3).
      i1: 1 vs 1; i2: S(h2) = 1/2, S(f) = 1/2; i3: S(h2)=1/2, S(f)=1/2; i4: S(h2)=1/2, S(f)=1/2
      ρ^f = ρ^h = 1, d = [0, 0, 0, 0]
    Excluding h3: others (h1, h2).
      i1: both 1; i2: S(h3) = 1/2, S(f) = 1/2; i3: S(h3) = 0, S(f) = 1 → W^h = 0;
      i4: S(h3) = 0, S(f) = 1 → W^h = 0. ρ^f = 1, ρ^h = 1/2, d = [0, 0, −1, −1]
    ρ = mean(1, 1, 1) = 1. Four items < 30: Wilcoxon signed-rank on d − ε.
    """
    humans = _long(
        {
            "h1": {"i1": 1, "i2": 1, "i3": 0, "i4": 1},
            "h2": {"i1": 1, "i2": 0, "i3": 0, "i4": 1},
            "h3": {"i1": 1, "i2": 0, "i3": 1, "i4": 0},
        }
    )
    judge = {"i1": 1, "i2": 0, "i3": 0, "i4": 1}
    res = alt_test(humans, judge, epsilon=0.2, alpha=0.05)
    by = {a.human: a for a in res.annotators}
    assert by["h1"].rho_judge == 1.0 and by["h1"].rho_human == 0.75
    assert by["h2"].rho_judge == 1.0 and by["h2"].rho_human == 1.0
    assert by["h3"].rho_judge == 1.0 and by["h3"].rho_human == 0.5
    assert res.advantage_probability == 1.0
    for name, d in (("h1", [0, -1, 0, 0]), ("h2", [0, 0, 0, 0]), ("h3", [0, 0, -1, -1])):
        expected = stats.wilcoxon(np.array(d, float) - 0.2, alternative="less")
        assert by[name].test == "wilcoxon"
        assert by[name].p_value == pytest.approx(expected.pvalue, abs=1e-15)
        assert by[name].mean_difference == pytest.approx(np.mean(d))
    # With four items the smallest one-sided Wilcoxon p-value is 1/16 > α, so nothing is
    # rejected and the judge cannot pass, however good it is.
    assert res.winning_rate == 0.0
    assert res.passed is False
    assert any("Wilcoxon" in w for w in res.warnings)


@pytest.mark.parametrize("seed", range(5))
def test_benjamini_yekutieli_equals_statsmodels(seed: int) -> None:
    rng = np.random.default_rng(seed)
    m = int(rng.integers(1, 30))
    p = np.concatenate([rng.uniform(0, 0.004, m // 3), rng.uniform(0, 1, m - m // 3)])
    rng.shuffle(p)
    for alpha in (0.05, 0.1):
        rej, adj = benjamini_yekutieli(p, alpha)
        sm_rej, sm_adj, _, _ = multipletests(p, alpha=alpha, method="fdr_by")
        assert rej.tolist() == sm_rej.tolist()
        np.testing.assert_allclose(adj, sm_adj, rtol=1e-12, atol=0)


def test_benjamini_yekutieli_hand_worked() -> None:
    # m = 3, c(3) = 1 + 1/2 + 1/3 = 11/6; thresholds k·α/(m·c) = k·0.05/5.5
    # = 0.00909, 0.01818, 0.02727. Sorted p: 0.001 ≤ .00909 ✓, 0.02 > .01818,
    # 0.025 ≤ .02727 ✓ → step-up rejects all three.
    rej, adj = benjamini_yekutieli([0.02, 0.001, 0.025], 0.05)
    assert rej.tolist() == [True, True, True]
    # adjusted: m·c·p/k = 5.5·p/k: 0.0055, 0.055, 0.0458 → running min from the top
    assert adj.tolist() == pytest.approx([5.5 * 0.025 / 3, 5.5 * 0.001, 5.5 * 0.025 / 3])


def _reference_alt_test(
    humans: dict[str, dict[int, int]], judge: dict[int, int], epsilon: float, alpha: float
) -> tuple[float, float, list[float]]:
    """The paper's procedure written as plain loops (independent of the module)."""
    items_of: dict[int, list[str]] = {}
    for h, anns in humans.items():
        for i in anns:
            items_of.setdefault(i, []).append(h)
    keep = {i for i, hs in items_of.items() if len(hs) >= 2 and i in judge}
    p_values, rhos = [], []
    for h in sorted(humans):
        wf, wh = [], []
        for i in sorted(humans[h]):
            if i not in keep:
                continue
            others = [humans[o][i] for o in items_of[i] if o != h]
            s_h = sum(humans[h][i] == o for o in others) / len(others)
            s_f = sum(judge[i] == o for o in others) / len(others)
            wf.append(1 if s_f >= s_h else 0)
            wh.append(1 if s_h >= s_f else 0)
        d = np.array(wh, float) - np.array(wf, float)
        p_values.append(float(stats.ttest_1samp(d, epsilon, alternative="less").pvalue))
        rhos.append(float(np.mean(wf)))
    rejected = multipletests(p_values, alpha=alpha, method="fdr_by")[0]
    return float(np.mean(rejected)), float(np.mean(rhos)), p_values


@pytest.mark.parametrize("seed", range(4))
def test_equals_an_independent_implementation(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n_items, n_humans = 120, 4
    truth = rng.integers(0, 3, n_items)

    def noisy(rate: float) -> np.ndarray:
        return np.where(rng.random(n_items) < rate, rng.integers(0, 3, n_items), truth)

    humans = {}
    for h in range(n_humans):
        labels = noisy(0.3)
        seen = rng.random(n_items) < 0.85  # missing annotations
        humans[f"h{h}"] = {i: int(labels[i]) for i in range(n_items) if seen[i]}
    judge_labels = noisy(rng.uniform(0.1, 0.5))
    judge = {i: int(judge_labels[i]) for i in range(n_items)}
    res = alt_test(_long(humans), judge, epsilon=0.15, alpha=0.05)
    omega, rho, p = _reference_alt_test(humans, judge, 0.15, 0.05)
    assert all(a.test == "t" and a.n_items >= MIN_T_TEST_ITEMS for a in res.annotators)
    assert res.winning_rate == omega
    assert res.advantage_probability == pytest.approx(rho, abs=1e-14)
    assert [a.p_value for a in res.annotators] == pytest.approx(p, rel=1e-12)


def test_a_good_judge_passes_and_a_random_one_fails() -> None:
    rng = np.random.default_rng(7)
    n = 200
    truth = rng.integers(0, 2, n)
    humans = {
        f"h{k}": {i: int(v) for i, v in enumerate(np.where(rng.random(n) < 0.2, 1 - truth, truth))}
        for k in range(3)
    }
    good = alt_test(_long(humans), dict(enumerate(truth.tolist())))
    assert good.passed and good.winning_rate == 1.0
    random = alt_test(_long(humans), dict(enumerate(rng.integers(0, 2, n).tolist())))
    assert not random.passed and random.winning_rate == 0.0
    assert random.advantage_probability < good.advantage_probability


def test_refuses_below_two_humans_and_warns_below_three() -> None:
    one = _long({"h1": {"a": 1, "b": 0}})
    with pytest.raises(AltTestRefused, match="at least two human graders"):
        alt_test(one, {"a": 1, "b": 0})
    # two humans but no item shared with the judge
    two = _long({"h1": {"a": 1}, "h2": {"a": 1}})
    with pytest.raises(AltTestRefused):
        alt_test(two, {"b": 1})
    assert issubclass(AltTestRefused, GradercalError)
    ok = alt_test(
        _long({"h1": {i: i % 2 for i in range(40)}, "h2": dict.fromkeys(range(40), 1)}),
        dict.fromkeys(range(40), 1),
    )
    assert any("only two human graders" in w for w in ok.warnings)


def test_constant_differences_use_the_limit_p_value() -> None:
    # Every annotator identical and the judge too: d = 0 on 40 items, mean 0 < ε.
    humans = _long({f"h{k}": dict.fromkeys(range(40), 1) for k in range(3)})
    res = alt_test(humans, dict.fromkeys(range(40), 1))
    assert all(a.p_value == 0.0 and a.statistic is None for a in res.annotators)
    assert res.passed


def test_on_the_benchmarks() -> None:
    mini = frames_from_data(read_path(DATA / "mini"))
    res = alt_test_frames(mini, "judge-x")
    # every one of the 10 units has ana, ben and the judge
    assert res.n_items == 10
    assert [a.human for a in res.annotators] == ["ana", "ben"]
    assert any("only two human graders" in w for w in res.warnings)
    # Excluding ana, the reference is ben alone; (ana, ben, judge) per unit:
    # M1-a c1 TTT, c2 TFT, c3 FFF, c4 TTT; M1-b c1 FFT, c2 FFF, c3 TTF, c4 FFT;
    # M2-a c1 TTT; M2-b c1 FTT.  S(ana) = 1[ana = ben], S(f) = 1[judge = ben]:
    # W^f = 0 on M1-b c1, c3, c4 (judge ≠ ben = ana) → ρ^f = 7/10;
    # W^h = 0 only on M2-b c1 (ana ≠ ben = judge) → ρ^h = 9/10.
    ana = res.annotators[0]
    assert ana.rho_judge == pytest.approx(0.7)
    assert ana.rho_human == pytest.approx(0.9)
    assert ana.test == "wilcoxon"
    demo = frames_from_data(read_path(DEMO))
    d = alt_test_frames(demo, "judge-gpt", epsilon=0.2)
    assert d.n_items == 384 and len(d.annotators) == 3
    assert d.passed
    with pytest.raises(AltTestRefused):
        alt_test_frames(demo, "judge-gpt", humans=["expert-ana"])


def test_argument_checks_and_the_degenerate_wilcoxon() -> None:
    humans = _long({"h1": {"a": 1, "b": 0}, "h2": {"a": 1, "b": 0}})
    with pytest.raises(ValueError, match="epsilon"):
        alt_test(humans, {"a": 1, "b": 0}, epsilon=1.0)
    with pytest.raises(ValueError, match="alpha"):
        alt_test(humans, {"a": 1, "b": 0}, alpha=0.0)
    with pytest.raises(ValueError, match="more than once"):
        alt_test(pd.concat([humans, humans]), {"a": 1, "b": 0})
    # ε = 0 and every difference 0: d − ε is all zero, the Wilcoxon test is undefined
    res = alt_test(humans, {"a": 1, "b": 0}, epsilon=0.0)
    assert all(a.p_value is None and not a.rejected for a in res.annotators)
    assert "no test possible" in (res.annotators[0].note or "")
    assert res.winning_rate == 0.0 and not res.passed
