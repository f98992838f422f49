"""Inter-rater coefficients: hand-worked examples, independent implementations, edge cases.

Reference implementations used here: scikit-learn (``cohen_kappa_score``, ``f1_score``),
statsmodels (``fleiss_kappa``), the ``krippendorff`` package, pingouin
(``intraclass_corr``) and scipy. The irrCAC family (every weight family, Conger's and
Light's kappas, irrCAC's weighted alpha) is cross-checked against the ``irrCAC`` package
itself in tests/stats/test_stats_irrcac.py; the irrCAC 0.4.4 outputs pinned below
(``CAC(data, weights=…, digits=15)``) keep a check of Gwet's formulas, next to a direct
transcription of them, where that package is not installed.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction
from typing import Any

import krippendorff
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps
from sklearn.metrics import cohen_kappa_score, f1_score

from gradercal.stats import (
    LEVELS,
    WEIGHTED_KEYS,
    RatingTable,
    Stat,
    balanced_f1,
    bennett_s,
    cohen_kappa,
    conger_kappa,
    fleiss_kappa,
    gwet_ac1,
    gwet_ac2,
    icc,
    intraclass_correlations,
    kendall_tau,
    krippendorff_alpha,
    light_kappa,
    pearson_r,
    percent_agreement,
    rating_statistics,
    scott_pi,
    spearman_rho,
    statistic_keys,
    weight_matrix,
    weighted_krippendorff_alpha,
)
from gradercal.stats import coefficients as co
from gradercal.stats.coefficients import alpha as alpha_module
from gradercal.stats.coefficients import correlations


def statsmodels_irr() -> Any:
    """statsmodels' inter-rater module (a dev reference; the test skips without it)."""
    return pytest.importorskip("statsmodels.stats.inter_rater")


# ---------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------


def long_from_matrix(matrix: Any, raters: Any = None) -> pd.DataFrame:
    """Units × raters matrix (NaN = missing) → long format."""
    m = np.asarray(matrix, dtype=float)
    names = list(raters) if raters is not None else [f"r{j}" for j in range(m.shape[1])]
    rows = [
        (f"u{i}", names[j], m[i, j])
        for i in range(m.shape[0])
        for j in range(m.shape[1])
        if not np.isnan(m[i, j])
    ]
    return pd.DataFrame(rows, columns=["unit", "rater", "value"])


def long_from_rows(rows: list[str]) -> pd.DataFrame:
    """Compact rows like ``"21..0"``: one character per rater, ``.`` = missing."""
    return long_from_matrix([[np.nan if ch == "." else float(ch) for ch in row] for row in rows])


def long_from_table(table: list[list[int]], labels: tuple[Any, Any] = (1, 0)) -> pd.DataFrame:
    """Two raters from a contingency table (rows rater A, columns rater B)."""
    rows = []
    u = 0
    for i, row in enumerate(table):
        for j, count in enumerate(row):
            for _ in range(count):
                rows += [(u, "A", labels[i]), (u, "B", labels[j])]
                u += 1
    return pd.DataFrame(rows, columns=["unit", "rater", "value"])


def value(stat: Stat) -> float:
    assert stat.value is not None, stat.note
    return stat.value


# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", example C:
# 4 observers (rows) × 12 units (columns), "." = missing.
KRIPP = np.array(
    [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, np.nan, np.nan, np.nan],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, np.nan, 3],
        [np.nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, np.nan],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, np.nan],
    ]
)
KRIPP_LONG = long_from_matrix(KRIPP.T, raters="ABCD")

# 24 units × 5 raters, integer categories 0..3, ~25 % missing, unit 3 rated once.
RANDOM_ROWS = [
    "21..0", "3330.", "00.00", ".2...", "11101", ".1031", ".0000", "3233.",
    "00000", "0.002", "3.320", ".31.2", "0.3.0", "02222", "1101.", ".2222",
    "021.2", ".33..", "23.21", "02122", ".1102", "11111", "22222", ".0.0.",
]  # fmt: skip
RANDOM_LONG = long_from_rows(RANDOM_ROWS)

# irrCAC 0.4.4 on the two data sets above: CAC(data, weights=w, digits=15).
IRRCAC = {
    ("kripp", "identity"): {
        "gwet": 0.775444068126995,
        "fleiss": 0.761169275422411,
        "bp": 0.772727272727273,
        "pa": 0.818181818181818,
    },
    ("kripp", "linear"): {"gwet": 0.858739136432611, "pa": 0.939393939393939},
    ("kripp", "quadratic"): {"gwet": 0.914000723551605, "pa": 0.975378787878788},
    ("random", "identity"): {
        "gwet": 0.405140755204061,
        "fleiss": 0.388083355137319,
        "bp": 0.400966183574879,
        "pa": 0.550724637681159,
    },
    ("random", "linear"): {"gwet": 0.435761114704973, "pa": 0.757971014492754},
    ("random", "quadratic"): {"gwet": 0.459719055970197, "pa": 0.84170692431562},
}
DATASETS = {"kripp": KRIPP_LONG, "random": RANDOM_LONG}


# ---------------------------------------------------------------------------------------
# hand-worked examples
# ---------------------------------------------------------------------------------------


class TestTwoByTwo:
    """Two raters, 50 units, the classic table (rows A, columns B):

    ::

                B=yes  B=no
        A=yes     20      5    | 25
        A=no      10     15    | 25
                  30     20      50
    """

    df = long_from_table([[20, 5], [10, 15]])

    def test_percent_agreement(self) -> None:
        # (20 + 15) / 50
        assert value(percent_agreement(self.df)) == pytest.approx(0.7, abs=1e-15)

    def test_cohen_kappa(self) -> None:
        # pa = 0.70; p_A = (.5, .5), p_B = (.6, .4); pe = .5*.6 + .5*.4 = .50
        # kappa = (.70 - .50) / (1 - .50) = 0.4
        assert value(cohen_kappa(self.df)) == pytest.approx(0.4, abs=1e-15)

    def test_scott_pi_and_fleiss(self) -> None:
        # pi = ((.5+.6)/2, (.5+.4)/2) = (.55, .45); pe = .3025 + .2025 = .505
        # pi = (.70 - .505) / .495 = 13/33; Fleiss with two complete raters is the same
        assert value(scott_pi(self.df)) == pytest.approx(13 / 33, abs=1e-15)
        assert value(fleiss_kappa(self.df)) == pytest.approx(13 / 33, abs=1e-15)

    def test_bennett_s(self) -> None:
        # q = 2: S = (.70 - 1/2) / (1 - 1/2) = 0.4
        assert value(bennett_s(self.df)) == pytest.approx(0.4, abs=1e-15)

    def test_gwet_ac1(self) -> None:
        # pe = Σ π_k(1 - π_k) / (q - 1) = 2 * .55 * .45 / 1 = .495
        # AC1 = (.70 - .495) / (1 - .495) = .205 / .505 = 41/101
        assert value(gwet_ac1(self.df)) == pytest.approx(41 / 101, abs=1e-15)

    def test_krippendorff_alpha(self) -> None:
        # coincidences: o_yy = 2*20 = 40, o_nn = 2*15 = 30, o_yn = o_ny = 5 + 10 = 15;
        # n_y = 55, n_n = 45, n = 100.  alpha = 1 - (n-1) * (o_yn + o_ny) / (2 n_y n_n)
        # = 1 - 99 * 30 / 4950 = 0.4
        assert value(krippendorff_alpha(self.df)) == pytest.approx(0.4, abs=1e-15)

    def test_balanced_f1(self) -> None:
        # judge A, reference B, positive = yes: TP 20, FP 5, FN 10, TN 15
        # F1+ = 40 / (40 + 15) = 8/11; F1- = 30 / (30 + 15) = 2/3; mean = 23/33
        got = balanced_f1(self.df, judge="A", reference="B", positive=1)
        assert value(got) == pytest.approx((8 / 11 + 2 / 3) / 2, abs=1e-15)


def test_cohen_kappa_with_missing_ratings_uses_each_raters_own_marginals() -> None:
    # A rated u0..u5, B rated u2..u7 (values "y"/"n"). Units rated by both: u2..u5.
    #   A: u0 y, u1 y, u2 y, u3 n, u4 y, u5 n      -> p_A(y) = 4/6
    #   B: u2 y, u3 n, u4 n, u5 n, u6 n, u7 y      -> p_B(y) = 2/6
    # pa over u2..u5: agree on u2, u3, u5 -> 3/4
    # pe = (4/6)(2/6) + (2/6)(4/6) = 16/36
    # kappa = (3/4 - 16/36) / (1 - 16/36) = (11/36) / (20/36) = 11/20
    a = {0: "y", 1: "y", 2: "y", 3: "n", 4: "y", 5: "n"}
    b = {2: "y", 3: "n", 4: "n", 5: "n", 6: "n", 7: "y"}
    rows = [(f"u{u}", "A", v) for u, v in a.items()] + [(f"u{u}", "B", v) for u, v in b.items()]
    df = pd.DataFrame(rows, columns=["unit", "rater", "value"])
    assert value(cohen_kappa(df)) == pytest.approx(11 / 20, abs=1e-15)
    # Scott: π(y) = (4/6 + 2/6)/2 = 1/2 -> pe = 1/2; pi = (3/4 - 1/2)/(1/2) = 1/2
    assert value(scott_pi(df)) == pytest.approx(0.5, abs=1e-15)


def test_fleiss_wikipedia_example() -> None:
    # Fleiss (1971)-style example (10 subjects, 14 raters, 5 categories), as on Wikipedia.
    counts = np.array(
        [
            [0, 0, 0, 0, 14],
            [0, 2, 6, 4, 2],
            [0, 0, 3, 5, 6],
            [0, 3, 9, 2, 0],
            [2, 2, 8, 1, 1],
            [7, 7, 0, 0, 0],
            [3, 2, 6, 3, 0],
            [2, 5, 3, 2, 2],
            [6, 5, 2, 1, 0],
            [0, 2, 2, 3, 7],
        ]
    )
    # P_i = (Σ_j n_ij² - 14) / (14 * 13): numerators 182, 46, 56, 80, 60, 84, 44, 32, 52, 52
    # -> P̄ = 688 / 1820.  p_j = (20, 28, 39, 21, 32) / 140 -> P̄e = 4170 / 19600.
    p_bar = Fraction(688, 1820)
    p_e = Fraction(4170, 19600)
    expected = float((p_bar - p_e) / (1 - p_e))
    assert expected == pytest.approx(0.20993, abs=5e-6)
    rows = []
    for i, row in enumerate(counts):
        labels = np.repeat(np.arange(1, 6), row)
        rows += [(f"s{i}", f"r{j}", int(v)) for j, v in enumerate(labels)]
    df = pd.DataFrame(rows, columns=["unit", "rater", "value"])
    assert value(fleiss_kappa(df)) == pytest.approx(expected, abs=1e-15)
    assert value(fleiss_kappa(df)) == pytest.approx(
        statsmodels_irr().fleiss_kappa(counts, method="fleiss"), abs=1e-14
    )


class TestKrippendorffCanonical:
    """Krippendorff (2011), example C: alpha = .743 nominal, .815 ordinal, .849 interval,
    .797 ratio. Coincidence matrix (values 1..5), n = 40 pairable values::

            1    2    3    4    5  | n_c
        1   7   4/3  1/3  1/3   0  |  9
        2  4/3  10   4/3  1/3   0  | 13
        3  1/3  4/3   8   1/3   0  | 10
        4  1/3  1/3  1/3   4    0  |  5
        5   0    0    0    0    3  |  3
    """

    def test_coincidence_matrix(self) -> None:
        o = co.coincidence_matrix(RatingTable.from_frame(KRIPP_LONG))
        third = 1 / 3
        expected = np.array(
            [
                [7, 4 * third, third, third, 0],
                [4 * third, 10, 4 * third, third, 0],
                [third, 4 * third, 8, third, 0],
                [third, third, third, 4, 0],
                [0, 0, 0, 0, 3],
            ]
        )
        np.testing.assert_allclose(o, expected, rtol=0, atol=1e-14)

    def test_nominal(self) -> None:
        # Σ o_cc = 32, so Σ_{c≠k} o_ck = 8; Σ n_c² = 81+169+100+25+9 = 384
        # alpha = 1 - (n-1) * 8 / (n² - Σ n_c²) = 1 - 39*8/1216 = 113/152 = 0.7434…
        assert value(krippendorff_alpha(KRIPP_LONG)) == pytest.approx(113 / 152, abs=1e-15)

    def test_interval(self) -> None:
        # Σ o_ck (c-k)² = 52/3; Σ n_c n_k (c-k)² = 4480
        # alpha = 1 - 39 * (52/3) / 4480 = 951/1120 = 0.8491…
        got = krippendorff_alpha(KRIPP_LONG, level="interval")
        assert value(got) == pytest.approx(951 / 1120, abs=1e-15)

    def test_ordinal(self) -> None:
        # ordinal positions M_c = Σ_{g<c} n_g + n_c/2 = 9/2, 31/2, 27, 69/2, 77/2;
        # δ² = (M_c - M_k)²: Σ o δ² = 1891, Σ n_c n_k δ² = 399480
        # alpha = 1 - 39 * 1891 / 399480 = 108577/133160 = 0.8154…
        got = krippendorff_alpha(KRIPP_LONG, level="ordinal")
        assert value(got) == pytest.approx(108577 / 133160, abs=1e-15)

    def test_ratio(self) -> None:
        # δ² = ((c-k)/(c+k))²: Σ o δ² = 59357/66150, Σ n_c n_k δ² = 4570493/26460
        # alpha = 18222619/22852465 = 0.7974…
        got = krippendorff_alpha(KRIPP_LONG, level="ratio")
        assert value(got) == pytest.approx(18222619 / 22852465, abs=1e-15)

    def test_published_three_decimals(self) -> None:
        published = {"nominal": 0.743, "ordinal": 0.815, "interval": 0.849, "ratio": 0.797}
        for level, alpha in published.items():
            assert round(value(krippendorff_alpha(KRIPP_LONG, level=level)), 3) == alpha


def test_shrout_fleiss_table_4() -> None:
    # Shrout & Fleiss (1979), Table 2 data (6 targets × 4 judges) and their Table 4 values.
    x = np.array(
        [[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]],
        dtype=float,
    )
    # ANOVA by hand: grand mean 5.2917; BMS = 11.24, WMS = 6.26, JMS = 32.49, EMS = 1.02
    a = correlations._anova(x)
    assert (a.bms, a.wms, a.jms, a.ems) == pytest.approx(
        (11.2417, 6.2639, 32.4861, 1.0194), abs=1e-4
    )
    got = intraclass_correlations(long_from_matrix(x))
    published = {
        "icc1": 0.17,
        "icc2": 0.29,
        "icc3": 0.71,
        "icc1k": 0.44,
        "icc2k": 0.62,
        "icc3k": 0.91,
    }
    for kind, expected in published.items():
        assert round(value(got[kind]), 2) == expected
    # exact: ICC(3,1) = (BMS - EMS) / (BMS + 3 EMS)
    assert value(got["icc3"]) == pytest.approx((a.bms - a.ems) / (a.bms + 3 * a.ems), abs=1e-15)


# ---------------------------------------------------------------------------------------
# Gwet's formulas with missing ratings (irrCAC)
# ---------------------------------------------------------------------------------------


def gwet_transcription(matrix: np.ndarray, w: np.ndarray, q_cats: np.ndarray) -> dict[str, float]:
    """Literal transcription of irrCAC's pa / Fleiss / AC1-AC2 / BP formulas, loops only."""
    n = matrix.shape[0]
    q = len(q_cats)
    r = np.array([[np.sum(matrix[i] == c) for c in q_cats] for i in range(n)], dtype=float)
    ri = r.sum(axis=1)
    keep = ri > 0
    r, ri = r[keep], ri[keep]
    n = len(ri)
    n2 = 0
    pa = 0.0
    for i in range(n):
        if ri[i] >= 2:
            n2 += 1
            rstar = [sum(w[k, j] * r[i, j] for j in range(q)) for k in range(q)]
            pa += sum(r[i, k] * (rstar[k] - 1) for k in range(q)) / (ri[i] * (ri[i] - 1))
    pa /= n2
    pi = [sum(r[i, k] / ri[i] for i in range(n)) / n for k in range(q)]
    pe_f = sum(pi[k] ** 2 for k in range(q))
    pe_g = w.sum() * sum(p * (1 - p) for p in pi) / (q * (q - 1))
    pe_bp = w.sum() / q**2
    return {
        "pa": pa,
        "fleiss": (pa - pe_f) / (1 - pe_f),
        "gwet": (pa - pe_g) / (1 - pe_g),
        "bp": (pa - pe_bp) / (1 - pe_bp),
    }


@pytest.mark.parametrize(("dataset", "scheme"), sorted(IRRCAC))
def test_gwet_family_matches_irrcac(dataset: str, scheme: str) -> None:
    df = DATASETS[dataset]
    expected = IRRCAC[(dataset, scheme)]
    weights = None if scheme == "identity" else scheme
    t = RatingTable.from_frame(df)
    got = {
        "pa": value(percent_agreement(t, weights=weights)),
        "gwet": value(gwet_ac2(t, weights=weights) if weights else gwet_ac1(t)),
    }
    if scheme == "identity":
        got["fleiss"] = value(fleiss_kappa(t))
        got["bp"] = value(bennett_s(t))
    for key, ref in got.items():
        # irrCAC rounds to 15 decimals
        assert ref == pytest.approx(expected[key], abs=2e-15), key
    # and a loop-by-loop transcription of the same formulas
    wide = t.wide_values()
    trans = gwet_transcription(wide, weight_matrix(weights, t.categories), t.category_values)
    for key, ref in got.items():
        assert ref == pytest.approx(trans[key], abs=1e-14), key


def test_units_rated_once_count_in_pi_not_in_pa() -> None:
    # Unit u2 is rated once: it changes π (chance agreement) but not pa.
    base = long_from_rows(["00", "11", "0."])
    pa = value(percent_agreement(base))
    assert pa == 1.0  # u0 and u1 agree; u2 is not pairable
    # π = (1/3)(r_i0/r_i summed): u0 (1, 0), u1 (0, 1), u2 (1, 0) -> π = (2/3, 1/3)
    # Fleiss pe = 4/9 + 1/9 = 5/9 -> kappa = (1 - 5/9) / (4/9) = 1
    assert value(fleiss_kappa(base)) == pytest.approx(1.0, abs=1e-15)
    # AC1 pe = 2 * (2/3)(1/3) / 1 = 4/9 -> (1 - 4/9)/(5/9) = 1
    assert value(gwet_ac1(base)) == pytest.approx(1.0, abs=1e-15)
    disagree = long_from_rows(["01", "11", "0."])
    # pa = (0 + 1)/2 = 1/2; π_0 = (1/2 + 0 + 1)/3 = 1/2 -> Fleiss pe = 1/2 -> kappa 0
    assert value(fleiss_kappa(disagree)) == pytest.approx(0.0, abs=1e-15)


# ---------------------------------------------------------------------------------------
# independent implementations on random data
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
def test_cohen_kappa_matches_sklearn(seed: int, weights: str | None) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 60))
    a = rng.integers(0, 5, n)
    b = np.where(rng.random(n) < 0.6, a, rng.integers(0, 5, n))
    df = long_from_matrix(np.column_stack([a, b]), raters="AB")
    cats = list(range(5))  # equally spaced, so Gwet's value weights = sklearn's rank weights
    expected = cohen_kappa_score(a, b, labels=cats, weights=weights)
    got = cohen_kappa(df, weights=weights, categories=cats)  # type: ignore[arg-type]
    if math.isnan(expected):
        assert got.value is None
    else:
        assert value(got) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_fleiss_kappa_matches_statsmodels(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    n, k = int(rng.integers(5, 40)), int(rng.integers(2, 7))
    truth = rng.integers(0, 4, n)
    x = np.where(rng.random((n, k)) < 0.6, truth[:, None], rng.integers(0, 4, (n, k)))
    table, _ = statsmodels_irr().aggregate_raters(x)
    expected = statsmodels_irr().fleiss_kappa(table, method="fleiss")
    assert value(fleiss_kappa(long_from_matrix(x))) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("seed", range(5))
def test_krippendorff_matches_package_and_direct_path(level: str, seed: int) -> None:
    rng = np.random.default_rng(200 + seed)
    n, k = int(rng.integers(8, 50)), int(rng.integers(2, 6))
    truth = rng.integers(0, 6, n)
    x = np.where(rng.random((n, k)) < 0.6, truth[:, None], rng.integers(0, 6, (n, k))).astype(float)
    x[rng.random((n, k)) < 0.3] = np.nan
    if level == "ratio":
        x = x + 1.0
    expected = krippendorff.alpha(reliability_data=x.T, level_of_measurement=level)
    t = RatingTable.from_frame(long_from_matrix(x))
    assert value(krippendorff_alpha(t, level=level)) == pytest.approx(expected, abs=1e-12)  # type: ignore[arg-type]
    # the pair-based path used for large inputs agrees too
    direct = alpha_module._alpha_direct(t, level)  # type: ignore[arg-type]
    assert direct == pytest.approx(expected, abs=1e-12)


def test_krippendorff_large_input_uses_direct_path(monkeypatch: pytest.MonkeyPatch) -> None:
    # Above n_units·q² = 4e6 the package would materialise huge arrays, so the pair-based
    # path is used. Lower the threshold to force it on small continuous data.
    rng = np.random.default_rng(5)
    truth = rng.normal(size=40)
    x = truth[:, None] + rng.normal(scale=0.5, size=(40, 3))
    x[rng.random(x.shape) < 0.2] = np.nan
    monkeypatch.setattr(alpha_module, "_KRIPPENDORFF_PACKAGE_MAX_CELLS", 0)
    called = []
    original = alpha_module._alpha_direct
    monkeypatch.setattr(
        alpha_module, "_alpha_direct", lambda t, lv: called.append(lv) or original(t, lv)
    )
    for level in LEVELS:
        data = x - x[~np.isnan(x)].min() if level == "ratio" else x
        expected = krippendorff.alpha(reliability_data=data.T, level_of_measurement=level)
        got = krippendorff_alpha(long_from_matrix(data), level=level)
        assert value(got) == pytest.approx(expected, abs=1e-12), level
    assert called == list(LEVELS)


@pytest.mark.filterwarnings("ignore:The inplace keyword")
@pytest.mark.parametrize("seed", range(4))
def test_icc_matches_pingouin_and_hand_anova(seed: int) -> None:
    rng = np.random.default_rng(300 + seed)
    n, k = int(rng.integers(3, 30)), int(rng.integers(2, 6))
    x = rng.normal(size=(n, 1)) * 2 + rng.normal(size=(1, k)) + rng.normal(size=(n, k))
    df = long_from_matrix(x)
    got = intraclass_correlations(df)
    pingouin = pytest.importorskip("pingouin")
    ref = pingouin.intraclass_corr(df, targets="unit", raters="rater", ratings="value")
    # pingouin < 0.7 names them ICC1…ICC3k, 0.7 uses McGraw & Wong's ICC(1,1), ICC(A,1)…
    names = {
        "icc1": ("ICC1", "ICC(1,1)"),
        "icc2": ("ICC2", "ICC(A,1)"),
        "icc3": ("ICC3", "ICC(C,1)"),
        "icc1k": ("ICC1k", "ICC(1,k)"),
        "icc2k": ("ICC2k", "ICC(A,k)"),
        "icc3k": ("ICC3k", "ICC(C,k)"),
    }
    for key, aliases in names.items():
        expected = float(ref.loc[ref["Type"].isin(aliases), "ICC"].iloc[0])
        assert value(got[key]) == pytest.approx(expected, abs=1e-10), key
    # hand two-way ANOVA (two-pass sums of squares)
    gm = x.mean()
    ssr = k * np.sum((x.mean(axis=1) - gm) ** 2)
    ssc = n * np.sum((x.mean(axis=0) - gm) ** 2)
    sst = np.sum((x - gm) ** 2)
    bms, jms = ssr / (n - 1), ssc / (k - 1)
    ems = (sst - ssr - ssc) / ((n - 1) * (k - 1))
    wms = (sst - ssr) / (n * (k - 1))
    hand = {
        "icc1": (bms - wms) / (bms + (k - 1) * wms),
        "icc2": (bms - ems) / (bms + (k - 1) * ems + k * (jms - ems) / n),
        "icc3": (bms - ems) / (bms + (k - 1) * ems),
        "icc1k": (bms - wms) / bms,
        "icc2k": (bms - ems) / (bms + (jms - ems) / n),
        "icc3k": (bms - ems) / bms,
    }
    for key, expected in hand.items():
        assert value(got[key]) == pytest.approx(expected, abs=1e-12), key
    assert value(icc(df, "icc2k")) == value(got["icc2k"])


def test_correlations_match_scipy_on_paired_units() -> None:
    rng = np.random.default_rng(9)
    a = rng.integers(0, 7, 40).astype(float)
    b = a + rng.integers(-2, 3, 40)
    x = np.column_stack([a, b])
    x[[1, 5, 9], 0] = np.nan
    x[[2, 5, 30], 1] = np.nan
    df = long_from_matrix(x, raters=["judge", "ref"]).sample(frac=1.0, random_state=1)
    both = ~np.isnan(x).any(axis=1)
    xa, xb = x[both, 0], x[both, 1]
    assert value(pearson_r(df)) == pytest.approx(sps.pearsonr(xa, xb).statistic, abs=1e-14)
    assert value(spearman_rho(df)) == pytest.approx(sps.spearmanr(xa, xb).statistic, abs=1e-14)
    assert value(kendall_tau(df)) == pytest.approx(sps.kendalltau(xa, xb).statistic, abs=1e-14)
    # explicit rater order does not matter for these symmetric statistics
    assert value(pearson_r(df, raters=("ref", "judge"))) == pytest.approx(value(pearson_r(df)))


@pytest.mark.parametrize("seed", range(5))
def test_balanced_f1_matches_sklearn_macro_f1(seed: int) -> None:
    rng = np.random.default_rng(400 + seed)
    ref = rng.random(50) < 0.6
    judge = np.where(rng.random(50) < 0.8, ref, ~ref)
    df = long_from_matrix(np.column_stack([judge, ref]).astype(float), raters=["j", "r"])
    expected = f1_score(ref, judge, average="macro")
    got = balanced_f1(df, judge="j", reference="r", positive=1)
    assert value(got) == pytest.approx(expected, abs=1e-14)


# ---------------------------------------------------------------------------------------
# edge cases: null with a note, never an invented number
# ---------------------------------------------------------------------------------------


def test_one_rater_everything_undefined() -> None:
    df = pd.DataFrame({"unit": [1, 2, 3], "rater": "a", "value": [0, 1, 1]})
    for weights in (None, "quadratic", "bipolar"):
        res = rating_statistics(df, "interval", weights)
        for key, stat in res.items():
            assert stat.value is None, key
            assert stat.note
    assert percent_agreement(df).note == "only one rater"
    assert conger_kappa(df).note == "only one rater"
    assert light_kappa(df).note == "only one rater"
    assert weighted_krippendorff_alpha(df, weights="linear").note == "only one rater"


def test_no_unit_rated_twice() -> None:
    df = pd.DataFrame({"unit": [1, 2, 3], "rater": ["a", "b", "a"], "value": [0, 1, 1]})
    for fn in (
        percent_agreement,
        fleiss_kappa,
        gwet_ac1,
        bennett_s,
        krippendorff_alpha,
        conger_kappa,
    ):
        stat = fn(df)
        assert stat.value is None
        assert stat.note == "no unit was rated by two or more raters"
    for scheme in ("linear", "ordinal"):
        for weighted in (
            fleiss_kappa(df, weights=scheme),
            bennett_s(df, weights=scheme),
            conger_kappa(df, weights=scheme),
            weighted_krippendorff_alpha(df, weights=scheme),
        ):
            assert weighted.note == "no unit was rated by two or more raters"
    assert cohen_kappa(df).note == "no unit was rated by both raters"
    assert scott_pi(df, weights="radical").note == "no unit was rated by both raters"
    assert light_kappa(df).note == "no unit was rated by both raters"
    three = pd.concat([df, pd.DataFrame({"unit": [1], "rater": ["c"], "value": [0]})])
    assert light_kappa(three).note == (
        "Cohen's kappa of raters 'a' and 'b' is undefined: no unit was rated by both raters"
    )


def test_single_identical_category() -> None:
    # Both raters say "met" everywhere.
    df = long_from_matrix(np.ones((5, 2)), raters="AB")
    assert value(percent_agreement(df)) == 1.0
    k = cohen_kappa(df)
    assert k.value is None
    assert k.note is not None
    assert k.note.startswith("no variation")
    assert fleiss_kappa(df).value is None
    assert scott_pi(df).value is None
    a = krippendorff_alpha(df)
    assert a.value is None
    assert a.note == "no variation: all pairable values are identical"
    # AC1 and S need the number of *possible* categories
    assert gwet_ac1(df).value is None
    assert "categories" in (gwet_ac1(df).note or "")
    assert bennett_s(df).value is None
    # with the binary scale stated, pe(AC1) = 0 and pe(S) = 1/2: both are 1
    assert value(gwet_ac1(df, categories=[0, 1])) == 1.0
    assert value(bennett_s(df, categories=[0, 1])) == 1.0
    # kappa/alpha stay undefined: their chance agreement is 1 whatever the scale
    assert cohen_kappa(df, categories=[0, 1]).value is None
    assert krippendorff_alpha(df, categories=[0, 1]).value is None
    # …and so do the weighted kappas and alpha, whatever the weights
    for scheme in ("quadratic", "circular", "bipolar"):
        for stat in (
            cohen_kappa(df, weights=scheme, categories=[0, 1]),
            scott_pi(df, weights=scheme, categories=[0, 1]),
            fleiss_kappa(df, weights=scheme, categories=[0, 1]),
            conger_kappa(df, weights=scheme, categories=[0, 1]),
            weighted_krippendorff_alpha(df, weights=scheme, categories=[0, 1]),
        ):
            assert stat.value is None
            assert (stat.note or "").startswith("no variation")
        # weighted S: pe = T_w / q² = 1/2 with these weights (w_01 = 0)
        assert value(bennett_s(df, weights=scheme, categories=[0, 1])) == 1.0
    assert conger_kappa(df).value is None
    assert light_kappa(df) == cohen_kappa(df)
    three = long_from_matrix(np.ones((5, 3)), raters="ABC")
    assert light_kappa(three).note == (
        "Cohen's kappa of raters 'A' and 'B' is undefined: "
        "no variation: chance agreement is 1 (a single category used)"
    )
    assert bennett_s(df, weights="linear").value is None  # q = 1 without categories


def test_perfect_agreement_with_variation_is_one() -> None:
    df = long_from_matrix([[0, 0], [1, 1], [1, 1]], raters="AB")
    for fn in (
        cohen_kappa,
        scott_pi,
        fleiss_kappa,
        gwet_ac1,
        bennett_s,
        krippendorff_alpha,
        conger_kappa,
        light_kappa,
    ):
        assert value(fn(df)) == pytest.approx(1.0, abs=1e-15)
    three = long_from_matrix([[1, 1, 1], [2, 2, 2], [4, 4, 4], [2, 2, 2]])
    res = rating_statistics(three, weights="ratio")
    for key in WEIGHTED_KEYS:
        if key in ("weighted_cohen_kappa", "weighted_scott_pi"):
            assert res[key].note == "needs exactly two raters (found 3)"
        else:
            assert value(res[key]) == pytest.approx(1.0, abs=1e-15), key


def test_light_kappa_is_the_mean_of_sklearn_pairwise_kappas() -> None:
    rng = np.random.default_rng(5)
    x = rng.integers(0, 4, (30, 1)) + rng.integers(0, 2, (30, 4))
    kappas = [cohen_kappa_score(x[:, g], x[:, h]) for g, h in itertools.combinations(range(4), 2)]
    assert value(light_kappa(long_from_matrix(x))) == pytest.approx(np.mean(kappas), abs=1e-14)


def test_conger_kappa_by_hand() -> None:
    # Three raters, complete data, categories 0/1:
    #   u0: 0 0 0   u1: 1 1 1   u2: 0 1 1   u3: 0 0 1
    # pa = (1 + 1 + 1/3 + 1/3)/4 = 2/3. Rater shares p_g(1): r0 1/4, r1 2/4, r2 3/4.
    # Conger pe = mean over ordered pairs g≠h of Σ_k p_gk p_hk:
    #   (r0,r1) 3/4·2/4 + 1/4·2/4 = 1/2; (r0,r2) 3/4·1/4 + 1/4·3/4 = 3/8;
    #   (r1,r2) 2/4·1/4 + 2/4·3/4 = 1/2 -> pe = (1/2 + 3/8 + 1/2)/3 = 11/24
    # kappa = (2/3 − 11/24)/(13/24) = 5/13. Fleiss: π = (1/2, 1/2), pe = 1/2 -> 1/3.
    df = long_from_matrix([[0, 0, 0], [1, 1, 1], [0, 1, 1], [0, 0, 1]])
    assert value(conger_kappa(df)) == pytest.approx(5 / 13, abs=1e-15)
    assert value(fleiss_kappa(df)) == pytest.approx(1 / 3, abs=1e-15)
    # Light: Cohen (r0,r1): pa 3/4, pe 1/2 -> 1/2; (r0,r2): pa 1/2, pe 3/8 -> 1/5;
    # (r1,r2): pa 3/4, pe 1/2 -> 1/2 -> mean 2/5
    assert value(light_kappa(df)) == pytest.approx(2 / 5, abs=1e-15)


def test_cohen_needs_exactly_two_raters() -> None:
    assert cohen_kappa(KRIPP_LONG).note == "needs exactly two raters (found 4)"
    # …unless the pair is named
    assert cohen_kappa(KRIPP_LONG, raters=("A", "B")).value is not None
    with pytest.raises(ValueError, match="no rater named"):
        cohen_kappa(KRIPP_LONG, raters=("A", "Z"))


def test_icc_edge_cases() -> None:
    got = intraclass_correlations(KRIPP_LONG)
    assert all(s.value is None and "incomplete data" in (s.note or "") for s in got.values())
    constant = long_from_matrix(np.full((4, 3), 2.5))
    assert all(
        s.value is None and "no variation" in (s.note or "")
        for s in intraclass_correlations(constant).values()
    )
    one_unit = long_from_matrix([[1.0, 2.0]])
    assert intraclass_correlations(one_unit)["icc1"].note == "needs at least two units"
    # rater offset only: between-unit and residual variance are zero
    offset = long_from_matrix([[1.0, 2.0], [1.0, 2.0], [1.0, 2.0]])
    assert intraclass_correlations(offset)["icc3"].value is None
    with pytest.raises(ValueError, match="numeric"):
        intraclass_correlations(
            pd.DataFrame({"unit": [1, 1], "rater": ["a", "b"], "value": ["x", "y"]})
        )


def test_correlation_edge_cases() -> None:
    two = long_from_matrix([[1, 2], [2, 3]], raters="AB")
    assert pearson_r(two).note == "needs at least 3 units rated by both raters (found 2)"
    const = long_from_matrix([[1, 2], [1, 3], [1, 4]], raters="AB")
    assert spearman_rho(const).value is None
    assert kendall_tau(const).note == "no variation: a rater gave every unit the same value"


def test_balanced_f1_edge_cases() -> None:
    only_pos = long_from_matrix(np.ones((4, 2)), raters="jr")
    got = balanced_f1(only_pos, judge="j", reference="r", positive=1)
    assert got.value is None
    assert got.note == "a class occurs in neither the judge's nor the reference's ratings"
    three = long_from_matrix([[0, 1], [2, 2]], raters="jr")
    with pytest.raises(ValueError, match="binary"):
        balanced_f1(three, judge="j", reference="r", positive=1)
    # never agreeing is 0, not undefined
    opposite = long_from_matrix([[0, 1], [1, 0]], raters="jr")
    assert value(balanced_f1(opposite, judge="j", reference="r", positive=1)) == 0.0


def test_input_validation() -> None:
    with pytest.raises(ValueError, match="lack columns: value"):
        percent_agreement(pd.DataFrame({"unit": [1], "rater": ["a"]}))
    dup = pd.DataFrame({"unit": [1, 1], "rater": ["a", "a"], "value": [0, 1]})
    with pytest.raises(ValueError, match="more than once"):
        percent_agreement(dup)
    mixed = pd.DataFrame({"unit": [1, 1], "rater": ["a", "b"], "value": [0, "x"]}, dtype=object)
    with pytest.raises(ValueError, match="mix numbers and text"):
        percent_agreement(mixed)
    text = pd.DataFrame({"unit": [1, 1], "rater": ["a", "b"], "value": ["x", "y"]})
    with pytest.raises(ValueError, match="ordinal level needs numeric"):
        krippendorff_alpha(text, level="ordinal")
    with pytest.raises(ValueError, match="linear weights need numeric"):
        cohen_kappa(text, weights="linear")
    for scheme in ("ordinal", "ratio", "circular", "bipolar", "radical"):
        with pytest.raises(ValueError, match=f"{scheme} weights need numeric categories"):
            rating_statistics(text, weights=scheme)
    zero = pd.DataFrame({"unit": [1, 1], "rater": ["a", "b"], "value": [0, 2]})
    with pytest.raises(ValueError, match="ratio weights need positive category values"):
        rating_statistics(zero, weights="ratio")
    with pytest.raises(ValueError, match="ratio weights need positive"):
        fleiss_kappa(zero.assign(value=[1, 2]), weights="ratio", categories=[0, 1, 2])
    neg = pd.DataFrame({"unit": [1, 1], "rater": ["a", "b"], "value": [-1, 2]})
    with pytest.raises(ValueError, match="non-negative"):
        krippendorff_alpha(neg, level="ratio")
    with pytest.raises(ValueError, match="not in the categories"):
        percent_agreement(neg, categories=[0, 2])
    with pytest.raises(ValueError, match="unknown level"):
        rating_statistics(neg, "cardinal")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown weights"):
        rating_statistics(neg, weights="cubic")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="finite"):
        Stat(float("nan"))
    with pytest.raises(ValueError, match="note"):
        Stat(None)


def test_missing_values_are_dropped_and_types_normalised() -> None:
    df = pd.DataFrame(
        {
            "unit": [1, 1, 2, 2, 3, 3],
            "rater": ["a", "b"] * 3,
            "value": pd.array([True, True, False, None, False, True], dtype="boolean"),
        }
    )
    t = RatingTable.from_frame(df)
    assert (t.n_units, t.n_raters, t.n_ratings) == (3, 2, 5)
    np.testing.assert_array_equal(t.category_values, [0.0, 1.0])
    # 1 and 1.0 are one category
    ints = pd.DataFrame({"unit": [1, 1], "rater": ["a", "b"], "value": [1, 1.0]})
    assert RatingTable.from_frame(ints).q == 1
    text = pd.DataFrame(
        {"unit": [1, 1, 2, 2], "rater": ["a", "b"] * 2, "value": ["met", "met", "no", "met"]}
    )
    # pa = 1/2; p_A = (met 1/2, no 1/2), p_B = (met 1, no 0) -> pe = 1/2 -> kappa = 0
    assert value(cohen_kappa(text)) == pytest.approx(0.0, abs=1e-15)


def test_weight_matrix() -> None:
    w = weight_matrix("linear", [0, 1, 3])
    np.testing.assert_allclose(w, [[1, 2 / 3, 0], [2 / 3, 1, 1 / 3], [0, 1 / 3, 1]])
    q = weight_matrix("quadratic", [0, 1, 3])
    np.testing.assert_allclose(q, [[1, 8 / 9, 0], [8 / 9, 1, 5 / 9], [0, 5 / 9, 1]])
    np.testing.assert_array_equal(weight_matrix(None, ["a", "b"]), np.eye(2))
    five = [1, 2, 3, 4, 5]
    # ordinal: 1 − C(|k−l|+1, 2)/C(5, 2) on the ranks: gaps 0..4 -> 0, 1, 3, 6, 10 pairs
    np.testing.assert_allclose(weight_matrix("ordinal", five)[0], [1, 0.9, 0.7, 0.4, 0])
    np.testing.assert_array_equal(
        weight_matrix("ordinal", [0, 10, 11]), weight_matrix("ordinal", five[:3])
    )
    # radical: 1 − sqrt(|x_k − x_l| / 4)
    np.testing.assert_allclose(
        weight_matrix("radical", five)[0], [1, 0.5, 1 - 0.5**0.5, 1 - 0.75**0.5, 0]
    )
    # bipolar (irrCAC's documented matrix): d(1,l) = (1−l)²/((l−1)(9−l)) = 1/7, 1/3, 3/5, 1
    np.testing.assert_allclose(weight_matrix("bipolar", five)[0], [1, 6 / 7, 2 / 3, 2 / 5, 0])
    np.testing.assert_allclose(weight_matrix("bipolar", five)[1, 2], 14 / 15)
    # circular: sin²(π gap / 5) = s1, s2, s2, s1 with s2 the largest
    s1, s2 = math.sin(math.pi / 5) ** 2, math.sin(2 * math.pi / 5) ** 2
    np.testing.assert_allclose(
        weight_matrix("circular", five)[0], [1, 1 - s1 / s2, 0, 0, 1 - s1 / s2], atol=1e-15
    )
    # ratio on 1, 2, 4: ((1−2)/3)² = 1/9 against the extremes' (3/5)² = 9/25 -> 56/81
    np.testing.assert_allclose(
        weight_matrix("ratio", [1, 2, 4]), [[1, 56 / 81, 0], [56 / 81, 1, 56 / 81], [0, 56 / 81, 1]]
    )
    # every family: symmetric, ones on the diagonal, 0 for the most distant pair,
    # rows and columns in the order of the categories given
    for scheme in co.WEIGHT_SCHEMES:
        m = weight_matrix(scheme, [3, 1, 8, 2])
        np.testing.assert_allclose(m, m.T, atol=1e-15)
        np.testing.assert_array_equal(np.diag(m), 1.0)
        assert m.min() >= -1e-15
        if scheme not in ("identity", "circular"):  # circular: the scale wraps around
            assert m[1, 2] == pytest.approx(0.0, abs=1e-15)  # the extremes 1 and 8
        assert scheme == "identity" or m.min() == pytest.approx(0.0, abs=1e-15)
        sorted_m = weight_matrix(scheme, [1, 2, 3, 8])
        np.testing.assert_allclose(m[np.ix_([1, 3, 0, 2], [1, 3, 0, 2])], sorted_m, atol=1e-15)
        np.testing.assert_array_equal(weight_matrix(scheme, [4]), np.eye(1))


def test_rating_statistics_keys() -> None:
    unweighted = [
        "percent_agreement",
        "cohen_kappa",
        "scott_pi",
        "conger_kappa",
        "light_kappa",
        "bennett_s",
        "fleiss_kappa",
        "krippendorff_alpha",
        "gwet_ac1",
    ]
    assert list(rating_statistics(KRIPP_LONG)) == unweighted
    assert statistic_keys("nominal", "identity") == tuple(unweighted)
    weighted = [
        "weighted_percent_agreement",
        "weighted_cohen_kappa",
        "weighted_scott_pi",
        "weighted_conger_kappa",
        "weighted_fleiss_kappa",
        "weighted_bennett_s",
        "gwet_ac2",
        "weighted_krippendorff_alpha",
    ]
    assert list(WEIGHTED_KEYS) == weighted
    for scheme in co.WEIGHT_SCHEMES[1:]:
        assert statistic_keys("nominal", scheme) == (*unweighted, *weighted)
    keys = statistic_keys("interval", "linear")
    assert {"icc1", "icc2", "icc3", "icc1k", "icc2k", "icc3k", "pearson_r"} <= set(keys)
    assert set(statistic_keys("ordinal")) >= {"spearman_rho", "kendall_tau"}
    assert "pearson_r" not in statistic_keys("ordinal")
    res = rating_statistics(KRIPP_LONG, "ratio", "quadratic")
    assert list(res) == list(statistic_keys("ratio", "quadratic"))
    assert res["krippendorff_alpha"].value == pytest.approx(18222619 / 22852465, abs=1e-15)
    assert res["gwet_ac2"].value == pytest.approx(0.914000723551605, abs=2e-15)


# ---------------------------------------------------------------------------------------
# properties
# ---------------------------------------------------------------------------------------


@st.composite
def ratings_frames(
    draw: st.DrawFn, max_units: int = 12, max_raters: int = 4, complete: bool = False
) -> pd.DataFrame:
    n = draw(st.integers(1, max_units))
    k = draw(st.integers(2, max_raters))
    q = draw(st.integers(2, 4))
    cell = st.integers(0, q - 1) if complete else st.one_of(st.none(), st.integers(0, q - 1))
    cells = draw(st.lists(cell, min_size=n * k, max_size=n * k))
    rows = [
        (f"u{i}", f"r{j}", float(cells[i * k + j]))
        for i, j in itertools.product(range(n), range(k))
        if cells[i * k + j] is not None
    ]
    return pd.DataFrame(rows, columns=["unit", "rater", "value"])


@settings(max_examples=150, deadline=None)
@given(ratings_frames(max_raters=2, complete=True))
def test_two_rater_coefficients_bounded_on_complete_data(df: pd.DataFrame) -> None:
    for weights in (None, "linear", "quadratic"):
        for stat in (
            cohen_kappa(df, weights=weights),
            scott_pi(df, weights=weights),
            light_kappa(df),
        ):
            if stat.value is not None:
                assert -1.0 - 1e-12 <= stat.value <= 1.0 + 1e-12
    # every family: at most 1 (the lower bound −1 is not claimed for every weighting)
    positive = df.assign(value=df["value"] + 1.0)  # ratio weights need positive values
    for family in co.WEIGHT_SCHEMES:
        w: Any = family
        for stat in (cohen_kappa(positive, weights=w), scott_pi(positive, weights=w)):
            assert stat.value is None or stat.value <= 1.0 + 1e-12


def test_missing_ratings_can_push_kappa_below_minus_one() -> None:
    # Documented consequence of Gwet's missing-data rule (marginals from all ratings):
    # u0 is rated by B only (0); on u1, A says 0 and B says 1.  pa = 0 on the one shared
    # unit; p_A = (1, 0), p_B = (1/2, 1/2).
    df = pd.DataFrame({"unit": ["u0", "u1", "u1"], "rater": ["B", "A", "B"], "value": [0, 0, 1]})
    # Cohen: pe = 1 * 1/2 = 1/2 -> (0 - 1/2)/(1/2) = -1
    assert value(cohen_kappa(df)) == pytest.approx(-1.0, abs=1e-15)
    # Scott: π = (3/4, 1/4), pe = 10/16 -> (0 - 5/8)/(3/8) = -5/3
    assert value(scott_pi(df)) == pytest.approx(-5 / 3, abs=1e-15)
    assert value(fleiss_kappa(df)) == pytest.approx(-5 / 3, abs=1e-15)


@settings(max_examples=150, deadline=None)
@given(ratings_frames())
def test_multi_rater_coefficients_bounded(df: pd.DataFrame) -> None:
    if df.empty:
        return
    res = rating_statistics(df, "interval", "quadratic", categories=[0, 1, 2, 3])
    for key in ("percent_agreement", "weighted_percent_agreement"):
        v = res[key].value
        assert v is None or 0.0 <= v <= 1.0 + 1e-12
    for key in (
        "cohen_kappa",
        "scott_pi",
        "fleiss_kappa",
        "gwet_ac1",
        "gwet_ac2",
        "bennett_s",
        "krippendorff_alpha",
        "conger_kappa",
        "weighted_cohen_kappa",
        "weighted_scott_pi",
        "weighted_conger_kappa",
        "weighted_fleiss_kappa",
        "weighted_bennett_s",
        "weighted_krippendorff_alpha",
    ):
        v = res[key].value
        assert v is None or v <= 1.0 + 1e-12
    # Light's kappa is a mean of two-rater kappas; with two raters it is Cohen's
    if df["rater"].nunique() == 2:
        assert res["light_kappa"] == res["cohen_kappa"]
    # AC1's chance agreement is at most 1/q, so AC1 >= -1/(q-1) even with missing data
    v = res["gwet_ac1"].value
    assert v is None or v >= -1.0 / 3.0 - 1e-12


@settings(max_examples=100, deadline=None)
@given(ratings_frames(), st.randoms(use_true_random=False))
def test_invariant_to_order_and_names(df: pd.DataFrame, rnd: Any) -> None:
    if df.empty:
        return
    before = rating_statistics(df, "interval", "linear")
    unit_names = df["unit"].unique()
    rater_names = df["rater"].unique()
    units = dict(zip(unit_names, rnd.sample(range(100), len(unit_names)), strict=True))
    raters = dict(zip(rater_names, rnd.sample(range(100), len(rater_names)), strict=True))
    shuffled = df.assign(unit=df["unit"].map(units), rater=df["rater"].map(raters))
    shuffled = shuffled.sample(frac=1.0, random_state=rnd.randint(0, 2**31))
    after = rating_statistics(shuffled, "interval", "linear")
    for key, stat in before.items():
        other = after[key]
        if stat.value is None:
            assert other.value is None, key
        else:
            assert other.value == pytest.approx(stat.value, abs=1e-12), key


def test_a_rater_without_ratings_takes_no_part_in_conger_and_light() -> None:
    """A bootstrap resample can keep a rater label none of whose units were drawn."""
    t = co.RatingTable.from_frame(KRIPP_LONG)
    extra = co.RatingTable(
        unit=t.unit,
        rater=t.rater,
        cat=t.cat,
        unit_labels=t.unit_labels,
        rater_labels=np.array([*t.rater_labels, "nobody"], dtype=object),
        categories=t.categories,
        numeric=t.numeric,
    )
    for fn in (co.conger_kappa, co.light_kappa):
        assert fn(extra).value == fn(t).value
    assert (
        co.conger_kappa(extra, weights="quadratic").value
        == co.conger_kappa(t, weights="quadratic").value
    )
    # one rater with ratings left: undefined, with the reason
    only_a = co.RatingTable.from_frame(KRIPP_LONG[KRIPP_LONG["rater"] == "A"])
    assert co.conger_kappa(only_a).value is None
