"""The irrCAC coefficient family, cross-checked against the ``irrCAC`` Python package.

``irrCAC`` (Fergadis; a port of Gwet's R package of the same name) is an independent
implementation of Gwet's (2014) formulas, used here as a test-only reference
(``pip install irrcac``; the module is ``irrCAC``). Every key of §6 of issue #12 is
compared with it on random ratings with missing values, for every weight family:

* ``irrCAC.raw.CAC`` (raw ratings, missing allowed): percent agreement (its ``pa``),
  Conger's kappa, Fleiss' kappa, Brennan–Prediger, Gwet's AC1/AC2, Krippendorff's alpha;
  Cohen's kappa of two raters is irrCAC's Conger's kappa on those two raters (irrCAC has
  no separate raw-data Cohen's kappa; R's ``irrCAC`` neither);
* Light's kappa: the mean of irrCAC's two-rater kappas over all pairs of raters;
* Scott's pi: irrCAC has it for contingency tables only (``scott2.table``); on complete
  data it is compared with that, and with missing ratings with Gwet's missing-data form
  assembled from irrCAC's pieces (irrCAC's raw percent agreement, and the chance
  agreement of ``scott2.table`` on the two raters' own marginals).

irrCAC rounds its results to ``digits`` decimals; ``digits=15`` is used, so differences
are of the order of 1e-15 and the tolerance is 1e-12.

The worked examples are Gwet's data sets shipped with irrCAC: ``raw_4raters`` (Gwet 2014;
the ratings of Krippendorff 2011's example C, 12 units × 4 raters, except that the single
rating of unit 12 is attributed to another rater, which matters for Conger's and Light's
kappas only) and ``raw_ben_gerry``, with the values published in irrCAC's documentation
and by Krippendorff (2011), and exact fractions worked by hand.
"""

from __future__ import annotations

import itertools
import math
import os
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
import pytest

from gradercal.stats import (
    WEIGHT_SCHEMES,
    WEIGHTED_KEYS,
    RatingTable,
    Stat,
    bennett_s,
    cohen_kappa,
    conger_kappa,
    fleiss_kappa,
    krippendorff_alpha,
    light_kappa,
    percent_agreement,
    rating_statistics,
    scott_pi,
    weight_matrix,
    weighted_krippendorff_alpha,
)

if os.environ.get("CI") or os.environ.get("GRADERCAL_REQUIRE_PG"):
    import irrCAC.raw  # noqa: F401  (scripts/test.sh installs it: CI must not skip these)
raw = pytest.importorskip("irrCAC.raw", reason="irrCAC is the reference implementation")
# irrCAC's own use of pandas (positional arguments deprecated in pandas 3) is not ours
pytestmark = pytest.mark.filterwarnings("ignore::Warning:irrCAC")
table_cac = pytest.importorskip("irrCAC.table")
datasets = pytest.importorskip("irrCAC.datasets")
irr_weights = pytest.importorskip("irrCAC.weights")

FAMILIES = [s for s in WEIGHT_SCHEMES if s != "identity"]
TOL = 1e-12
DIGITS = 15


def value(stat: Stat) -> float:
    assert stat.value is not None, stat.note
    return stat.value


def to_long(wide: pd.DataFrame) -> pd.DataFrame:
    """Units × raters (NaN = missing) → gradercal's long format."""
    present = wide.notna()
    rows = [
        (str(unit), str(rater), wide.at[unit, rater])
        for unit in wide.index
        for rater in wide.columns
        if present.at[unit, rater]
    ]
    return pd.DataFrame(rows, columns=["unit", "rater", "value"])


def random_wide(
    seed: int, n_raters: int, categories: list[float], missing: float = 0.3
) -> pd.DataFrame:
    """Correlated ratings (a latent category per unit plus rater noise), some missing.

    Some units end up rated once (they count in the chance agreement but not in ``pa``);
    rows without any rating are dropped (irrCAC drops them too), and every rater keeps at
    least one rating.
    """
    rng = np.random.default_rng(seed)
    n = int(rng.integers(25, 45))
    q = len(categories)
    latent = rng.integers(0, q, n)
    codes = np.clip(latent[:, None] + rng.integers(-1, 2, (n, n_raters)), 0, q - 1)
    noisy = rng.random((n, n_raters)) < 0.25
    codes = np.where(noisy, rng.integers(0, q, (n, n_raters)), codes)
    x = np.asarray(categories, dtype=float)[codes]
    x[rng.random((n, n_raters)) < missing] = np.nan
    x[0, 1:] = np.nan  # unit 0 rated once
    x[1, :] = x[1, 0]  # unit 1 rated by everyone, all agreeing
    wide = pd.DataFrame(
        x, index=[f"u{i}" for i in range(n)], columns=[f"R{j}" for j in range(n_raters)]
    )
    wide = wide.dropna(how="all")
    assert wide.notna().sum().min() >= 1
    return wide


def irr(wide: pd.DataFrame, scheme: str, categories: list[float], method: str) -> dict[str, Any]:
    cac = raw.CAC(wide, weights=scheme, categories=categories, digits=DIGITS)
    est: dict[str, Any] = getattr(cac, method)()["est"]
    return est


def irr_two_rater_kappa(wide: pd.DataFrame, scheme: str, categories: list[float]) -> float:
    """irrCAC's Cohen-type kappa of two raters from raw ratings (its Conger's kappa)."""
    assert wide.shape[1] == 2
    return float(irr(wide, scheme, categories, "conger")["coefficient_value"])


def irr_table(
    joint: npt.NDArray[np.float64], scheme: str, categories: list[float], method: str
) -> dict[str, Any]:
    """irrCAC's contingency-table coefficient, with the raw-data weights of ``categories``."""
    w = irr_weights.Weights(categories)[scheme]
    labels = [str(c) for c in categories]
    frame = pd.DataFrame(joint, index=labels, columns=labels)
    est: dict[str, Any] = getattr(table_cac.CAC(frame, weights=w, digits=DIGITS), method)()["est"]
    return est


def joint_and_marginals(
    wide: pd.DataFrame, categories: list[float]
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Two raters' joint table on shared units and each rater's own category shares."""
    q = len(categories)
    index = {c: k for k, c in enumerate(categories)}
    a, b = wide.iloc[:, 0], wide.iloc[:, 1]
    joint = np.zeros((q, q))
    for x, y in zip(a, b, strict=True):
        if not (pd.isna(x) or pd.isna(y)):
            joint[index[x], index[y]] += 1
    p_a = np.array([np.sum(a == c) for c in categories], dtype=float)
    p_b = np.array([np.sum(b == c) for c in categories], dtype=float)
    return joint, p_a / p_a.sum(), p_b / p_b.sum()


def irr_scott(wide: pd.DataFrame, scheme: str, categories: list[float]) -> float:
    """Scott's pi of two raters, missing ratings allowed, from irrCAC's pieces.

    ``pa``: irrCAC's raw percent agreement (over the units rated by both). ``pe``: the
    chance agreement of irrCAC's ``scott2.table`` on a table whose margins are the two
    raters' own category shares (their outer product), recovered from its coefficient
    ``v = (pa_t − pe)/(1 − pe)`` as ``pe = (pa_t − v)/(1 − v)``.
    """
    pa = float(irr(wide, scheme, categories, "fleiss")["pa"])
    _, p_a, p_b = joint_and_marginals(wide, categories)
    est = irr_table(np.outer(p_a, p_b) * 1000.0, scheme, categories, "scott")
    v, pa_t = float(est["coefficient_value"]), float(est["pa"])
    pe = (pa_t - v) / (1.0 - v)
    return (pa - pe) / (1.0 - pe)


def irr_light(wide: pd.DataFrame, categories: list[float]) -> float:
    pairs = itertools.combinations(wide.columns, 2)
    kappas = [
        irr_two_rater_kappa(wide[[g, h]].dropna(how="all"), "identity", categories)
        for g, h in pairs
    ]
    return math.fsum(kappas) / len(kappas)


# categories: unequally spaced and positive (ratio weights need > 0), and one set with a
# category nobody used (q, and the weights' span, come from the stated set)
CATEGORY_SETS = {
    "spaced": [1.0, 2.0, 3.0, 5.0, 8.0],
    "unused": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
    "binary": [1.0, 2.0],
}
CASES = [
    (seed, n_raters, cats)
    for seed, (n_raters, cats) in enumerate(
        [(2, "spaced"), (3, "spaced"), (5, "spaced"), (2, "unused"), (4, "unused"), (3, "binary")]
    )
]


def case_data(seed: int, n_raters: int, cats: str) -> tuple[pd.DataFrame, list[float]]:
    categories = CATEGORY_SETS[cats]
    wide = random_wide(seed, n_raters, categories)
    if cats == "unused":
        wide = wide.replace(6.0, 5.0)  # category 6 is possible but never used
    return wide, categories


# ---------------------------------------------------------------------------------------
# every key × every weight family, random data with missing ratings
# ---------------------------------------------------------------------------------------


def test_weight_families_equal_irrcac() -> None:
    for categories in ([1, 2, 3, 4, 5], [0.5, 1, 3, 7], [2, 3], [1, 2, 4, 8, 9, 10]):
        cats = [float(c) for c in categories]
        for scheme in WEIGHT_SCHEMES:
            expected = irr_weights.Weights(cats)[scheme]
            np.testing.assert_allclose(weight_matrix(scheme, cats), expected, rtol=0, atol=1e-15)


@pytest.mark.parametrize(("seed", "n_raters", "cats"), CASES)
@pytest.mark.parametrize("scheme", FAMILIES)
def test_every_weighted_key_matches_irrcac(
    seed: int, n_raters: int, cats: str, scheme: str
) -> None:
    wide, categories = case_data(seed, n_raters, cats)
    got = rating_statistics(to_long(wide), weights=scheme, categories=categories)  # type: ignore[arg-type]
    assert set(WEIGHTED_KEYS) <= set(got)
    expected = {
        "weighted_percent_agreement": irr(wide, scheme, categories, "gwet")["pa"],
        "gwet_ac2": irr(wide, scheme, categories, "gwet")["coefficient_value"],
        "weighted_fleiss_kappa": irr(wide, scheme, categories, "fleiss")["coefficient_value"],
        "weighted_conger_kappa": irr(wide, scheme, categories, "conger")["coefficient_value"],
        "weighted_bennett_s": irr(wide, scheme, categories, "bp")["coefficient_value"],
        "weighted_krippendorff_alpha": irr(wide, scheme, categories, "krippendorff")[
            "coefficient_value"
        ],
    }
    if n_raters == 2:
        expected["weighted_cohen_kappa"] = irr_two_rater_kappa(wide, scheme, categories)
        expected["weighted_scott_pi"] = irr_scott(wide, scheme, categories)
    else:
        for key in ("weighted_cohen_kappa", "weighted_scott_pi"):
            assert got[key].value is None
            assert got[key].note == f"needs exactly two raters (found {n_raters})"
    for key, ref in expected.items():
        assert value(got[key]) == pytest.approx(float(ref), abs=TOL), key


@pytest.mark.parametrize(("seed", "n_raters", "cats"), CASES)
def test_every_unweighted_key_matches_irrcac(seed: int, n_raters: int, cats: str) -> None:
    wide, categories = case_data(seed, n_raters, cats)
    got = rating_statistics(to_long(wide), categories=categories)
    assert not set(WEIGHTED_KEYS) & set(got)
    expected = {
        "percent_agreement": irr(wide, "identity", categories, "fleiss")["pa"],
        "gwet_ac1": irr(wide, "identity", categories, "gwet")["coefficient_value"],
        "fleiss_kappa": irr(wide, "identity", categories, "fleiss")["coefficient_value"],
        "conger_kappa": irr(wide, "identity", categories, "conger")["coefficient_value"],
        "bennett_s": irr(wide, "identity", categories, "bp")["coefficient_value"],
        "krippendorff_alpha": irr(wide, "identity", categories, "krippendorff")[
            "coefficient_value"
        ],
        "light_kappa": irr_light(wide, categories),
    }
    if n_raters == 2:
        expected["cohen_kappa"] = irr_two_rater_kappa(wide, "identity", categories)
        expected["scott_pi"] = irr_scott(wide, "identity", categories)
    for key, ref in expected.items():
        assert value(got[key]) == pytest.approx(float(ref), abs=TOL), key
    # the unweighted keys do not move when weights are asked for
    weighted = rating_statistics(to_long(wide), weights="quadratic", categories=categories)
    for key, stat in got.items():
        assert weighted[key] == stat, key


@pytest.mark.parametrize("scheme", WEIGHT_SCHEMES)
@pytest.mark.parametrize("seed", [11, 12])
def test_two_rater_coefficients_on_complete_data_match_irrcac_tables(
    seed: int, scheme: str
) -> None:
    # Categories 1..q: irrCAC's tables weight the ranks 1..q, here equal to the values.
    categories = [1.0, 2.0, 3.0, 4.0]
    wide = random_wide(seed, 2, categories, missing=0.0).iloc[1:]  # drop the once-rated unit
    assert wide.notna().all().all()
    joint, _, _ = joint_and_marginals(wide, categories)
    df = to_long(wide)
    w: Any = scheme
    assert value(cohen_kappa(df, weights=w, categories=categories)) == pytest.approx(
        float(irr_table(joint, scheme, categories, "cohen")["coefficient_value"]), abs=TOL
    )
    assert value(scott_pi(df, weights=w, categories=categories)) == pytest.approx(
        float(irr_table(joint, scheme, categories, "scott")["coefficient_value"]), abs=TOL
    )
    assert value(percent_agreement(df, weights=w, categories=categories)) == pytest.approx(
        float(irr_table(joint, scheme, categories, "pa2")["coefficient_value"]), abs=TOL
    )
    # with complete data Scott's pi is Fleiss' kappa of two raters
    assert value(scott_pi(df, weights=w, categories=categories)) == pytest.approx(
        value(fleiss_kappa(df, weights=w, categories=categories)), abs=TOL
    )


def test_conger_and_light_equal_cohen_for_two_raters() -> None:
    wide, categories = case_data(0, 2, "spaced")
    df = to_long(wide)
    for scheme in WEIGHT_SCHEMES:
        w: Any = scheme
        cohen = value(cohen_kappa(df, weights=w, categories=categories))
        assert value(conger_kappa(df, weights=w, categories=categories)) == pytest.approx(
            cohen, abs=1e-14
        )
    assert value(light_kappa(df)) == pytest.approx(value(cohen_kappa(df)), abs=1e-15)


def test_identity_weights_give_the_unweighted_coefficients() -> None:
    wide, categories = case_data(2, 5, "spaced")
    t = RatingTable.from_frame(to_long(wide), categories)
    for fn in (fleiss_kappa, bennett_s, conger_kappa):
        assert fn(t, weights="identity") == fn(t)
    assert value(weighted_krippendorff_alpha(t, weights="identity")) == pytest.approx(
        value(krippendorff_alpha(t)), abs=1e-14
    )


# ---------------------------------------------------------------------------------------
# worked examples: Gwet's data sets, published values
# ---------------------------------------------------------------------------------------


@pytest.fixture(name="four_raters")
def fixture_four_raters() -> pd.DataFrame:
    wide: pd.DataFrame = datasets.raw_4raters().astype(float)
    wide.index = wide.index.astype(str)
    return wide


def test_raw_4raters_published_values(four_raters: pd.DataFrame) -> None:
    # Gwet (2014) / irrCAC documentation, cac.raw4raters (12 units, 4 raters, values 1..5,
    # missing ratings): published to 5 decimals.
    df = to_long(four_raters)
    got = rating_statistics(df, weights="bipolar")
    published = {
        "percent_agreement": 0.81818,
        "gwet_ac1": 0.77544,
        "fleiss_kappa": 0.76117,
        "krippendorff_alpha": 0.74342,
        "conger_kappa": 0.76282,
        "bennett_s": 0.77273,
        "gwet_ac2": 0.90037,  # bipolar weights, pa 0.96836
        "weighted_percent_agreement": 0.96836,
    }
    for key, expected in published.items():
        assert round(value(got[key]), 5) == expected, key
    # and to full precision against irrCAC itself
    assert value(got["conger_kappa"]) == pytest.approx(
        float(
            irr(four_raters, "identity", [1.0, 2.0, 3.0, 4.0, 5.0], "conger")["coefficient_value"]
        ),
        abs=TOL,
    )


def test_weighted_alpha_is_krippendorffs_interval_and_ratio_alpha(
    four_raters: pd.DataFrame,
) -> None:
    # The same ratings per unit as Krippendorff's (2011) example C: alpha = .849 (interval) and
    # .797 (ratio), exactly 951/1120 and 18222619/22852465 (worked by hand in
    # tests/stats/test_stats_coefficients.py). Quadratic weights are 1 − δ²_interval/δ²_max and
    # ratio weights 1 − δ²_ratio/δ²_max, so irrCAC's weighted alpha equals them.
    df = to_long(four_raters)
    quad = value(weighted_krippendorff_alpha(df, weights="quadratic"))
    ratio = value(weighted_krippendorff_alpha(df, weights="ratio"))
    assert quad == pytest.approx(951 / 1120, abs=1e-14)
    assert ratio == pytest.approx(18222619 / 22852465, abs=1e-14)
    assert (round(quad, 3), round(ratio, 3)) == (0.849, 0.797)
    assert quad == pytest.approx(value(krippendorff_alpha(df, level="interval")), abs=1e-14)
    assert ratio == pytest.approx(value(krippendorff_alpha(df, level="ratio")), abs=1e-14)


def test_light_kappa_of_raw_4raters_by_hand(four_raters: pd.DataFrame) -> None:
    # The six pairwise Cohen's kappas (each on the units the pair shares, marginals over
    # each rater's own ratings), averaged.
    df = to_long(four_raters)
    pairs = list(itertools.combinations(four_raters.columns, 2))
    kappas = [value(cohen_kappa(df, raters=(g, h))) for g, h in pairs]
    assert len(kappas) == 6
    assert value(light_kappa(df)) == pytest.approx(sum(kappas) / 6, abs=1e-15)
    assert value(light_kappa(df)) == pytest.approx(
        irr_light(four_raters, [1.0, 2.0, 3.0, 4.0, 5.0]), abs=TOL
    )


def test_ben_gerry_by_hand() -> None:
    # cac.ben.gerry: 12 units, text categories a–e, Gerry did not rate unit 10.
    wide = datasets.raw_ben_gerry().reset_index(drop=True)
    wide.index = wide.index.astype(str)
    df = to_long(wide)
    # Shared units: 11, agreeing on 8 -> pa = 8/11. Ben's shares over his 12 ratings
    # (a 3, b 2, c 3, d 3, e 1), Gerry's over his 11 (a 1, b 4, c 3, d 2, e 1):
    # Cohen pe = (3·1 + 2·4 + 3·3 + 3·2 + 1·1)/132 = 9/44 -> kappa = 23/35.
    assert value(percent_agreement(df)) == pytest.approx(8 / 11, abs=1e-15)
    assert value(cohen_kappa(df)) == pytest.approx(23 / 35, abs=1e-15)
    assert value(conger_kappa(df)) == pytest.approx(23 / 35, abs=1e-15)
    assert value(light_kappa(df)) == pytest.approx(23 / 35, abs=1e-15)
    # irrCAC (text categories are fine unweighted)
    cats = ["a", "b", "c", "d", "e"]
    ref = raw.CAC(wide, categories=cats, digits=DIGITS).conger()["est"]["coefficient_value"]
    assert value(cohen_kappa(df)) == pytest.approx(float(ref), abs=TOL)
    # Scott: π = (a 45, b 70, c 69, d 57, e 23)/264, pe = 15464/69696 -> 4403/6779,
    # unlike Fleiss' kappa (π averaged over units: 50/77) because of the missing rating.
    assert value(scott_pi(df)) == pytest.approx(4403 / 6779, abs=1e-15)
    assert value(fleiss_kappa(df)) == pytest.approx(50 / 77, abs=1e-15)
    assert value(fleiss_kappa(df)) == pytest.approx(
        float(raw.CAC(wide, categories=cats, digits=DIGITS).fleiss()["est"]["coefficient_value"]),
        abs=TOL,
    )
