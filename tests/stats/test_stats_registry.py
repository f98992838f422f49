"""Every statistic of the registry, checked generically (scikit-learn's test_common idea).

For every entry of :data:`gradercal.stats.registry.STATISTICS`, on a few small random
rating tables (missing ratings, two or three raters, a complete table, binary verdicts)
at every level and several weight families: the direct computation equals what the
bootstrap gives on the resample of all-ones weights (the original data), and both refuse
the same inputs; ``rating_statistics`` reports exactly the entry's direct computation;
values lie within the entry's bounds; symmetric statistics do not change when the raters
are relabelled; every entry has its names, a reference implementation and a row in the
table of its documentation page. The tables derived from the registry (weighted keys,
bootstrap statistics, the labels of the command line, the report and the dashboard) are
checked against it, and the rendered labels against their pinned strings.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest

from gradercal.stats import (
    BOOTSTRAP_STATISTICS,
    LEVELS,
    STATISTICS,
    WEIGHTED_KEYS,
    RatingTable,
    Stat,
    Statistic,
    bootstrap_replicates,
    cluster_labels,
    rating_statistics,
    statistic_keys,
)
from gradercal.stats.registry import Options
from tests.conftest import ROOT

COMPUTED = [s for s in STATISTICS.values() if s.compute is not None]
RESAMPLED = [s for s in COMPUTED if s.resample is not None]


def _ids(entries: list[Statistic]) -> list[str]:
    return [s.key for s in entries]


# ---------------------------------------------------------------------------------------
# small random rating tables
# ---------------------------------------------------------------------------------------


def random_ratings(
    seed: int,
    n_raters: int,
    categories: list[float],
    *,
    missing: float = 0.15,
) -> pd.DataFrame:
    """Correlated ratings (a latent category per unit plus noise), some missing, in
    clusters of units (``task``)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(14, 24))
    q = len(categories)
    latent = rng.integers(0, q, n)
    codes = np.clip(latent[:, None] + rng.integers(-1, 2, (n, n_raters)), 0, q - 1)
    codes = np.where(rng.random((n, n_raters)) < 0.2, rng.integers(0, q, (n, n_raters)), codes)
    present = rng.random((n, n_raters)) >= missing
    present[:, 0] |= ~present.any(axis=1)  # every unit keeps a rating
    rows = [
        (f"u{i}", f"r{j}", float(categories[codes[i, j]]), f"t{i % 6}")
        for i in range(n)
        for j in range(n_raters)
        if present[i, j]
    ]
    return pd.DataFrame(rows, columns=["unit", "rater", "value", "task"])


@dataclass(frozen=True)
class Case:
    name: str
    frame: pd.DataFrame
    categories: list[float]
    level: str
    weights: str | None
    judge: str | None = None
    reference: str | None = None
    positive: float = 2.0

    def options(self, weights: str | None) -> Options:
        return Options(
            level=self.level,  # type: ignore[arg-type]
            weights=weights or "identity",  # type: ignore[arg-type]
            judge=self.judge,
            reference=self.reference,
            positive=self.positive,
        )

    @functools.cached_property
    def _table(self) -> RatingTable:
        return RatingTable.from_frame(self.frame, self.categories)

    def table(self) -> RatingTable:
        return self._table


SPACED = [1.0, 2.0, 3.0, 5.0]
BINARY = [1.0, 2.0]
TWO = random_ratings(1, 2, SPACED)
THREE = random_ratings(2, 3, SPACED)
COMPLETE = random_ratings(3, 3, SPACED, missing=0.0)
VERDICTS = random_ratings(4, 3, BINARY, missing=0.1)

CASES = [
    Case("two-nominal", TWO, SPACED, "nominal", None),
    Case("two-ordinal-linear", TWO, SPACED, "ordinal", "linear"),
    Case("two-interval-quadratic", TWO, SPACED, "interval", "quadratic"),
    Case("two-ratio-ratio", TWO, SPACED, "ratio", "ratio"),
    Case("three-nominal", THREE, SPACED, "nominal", "ordinal"),
    Case("three-ordinal-pair", THREE, SPACED, "ordinal", "circular", "r0", "r1"),
    Case("complete-interval", COMPLETE, SPACED, "interval", "quadratic"),
    Case("complete-ratio-pair", COMPLETE, SPACED, "ratio", "bipolar", "r2", "r0"),
    Case("verdicts-nominal", VERDICTS, BINARY, "nominal", None),
    Case("verdicts-pair", VERDICTS, BINARY, "interval", "linear", "r1", "r0"),
]


def _weights_of(s: Statistic, case: Case) -> str | None:
    """The weights the bootstrap applies to ``s`` (its recipe says), else identity."""
    assert s.resample is not None
    return case.weights if s.resample.weighted else None


def _direct(s: Statistic, case: Case, weights: str | None) -> Stat | type[ValueError]:
    assert s.compute is not None
    try:
        return s.compute(case.table(), case.options(weights))
    except ValueError:
        return ValueError


def _boot(name: str, case: Case) -> float | type[ValueError]:
    ones = np.ones((1, len(cluster_labels(case.frame, "task"))))
    try:
        got = bootstrap_replicates(
            case.frame,
            [name],
            ones,
            cluster_col="task",
            level=case.level,  # type: ignore[arg-type]
            agreement_weights=case.weights,  # type: ignore[arg-type]
            categories=case.categories,
            judge=case.judge,
            reference=case.reference,
            positive=case.positive,
        )
    except ValueError:
        return ValueError
    return float(got[name][0])


def _same(direct: Stat | type[ValueError], boot: float | type[ValueError], label: str) -> None:
    if direct is ValueError or boot is ValueError:
        assert direct is boot, label
        return
    assert isinstance(direct, Stat) and isinstance(boot, float)
    if direct.value is None:
        assert math.isnan(boot), label
    else:
        assert boot == pytest.approx(direct.value, rel=1e-9, abs=1e-12), label


# ---------------------------------------------------------------------------------------
# direct computation = the bootstrap on the original data
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("entry", RESAMPLED, ids=_ids(RESAMPLED))
def test_direct_computation_equals_the_bootstrap_on_the_original_data(entry: Statistic) -> None:
    defined = 0
    for case in CASES:
        direct = _direct(entry, case, _weights_of(entry, case))
        _same(direct, _boot(entry.key, case), f"{entry.key} on {case.name}")
        defined += isinstance(direct, Stat) and direct.value is not None
    assert defined, f"{entry.key} is undefined on every case: the test shows nothing"


@pytest.mark.parametrize("entry", [s for s in COMPUTED if s.resample is None], ids=lambda s: s.key)
def test_a_key_the_bootstrap_does_not_know_is_resampled_as_its_twin(entry: Statistic) -> None:
    # weighted_cohen_kappa: the bootstrap's cohen_kappa under the same weights
    assert entry.resampled_as is not None, entry.key
    twin = STATISTICS[entry.resampled_as]
    assert twin.resample is not None and twin.resample.weighted == entry.weighted
    for case in CASES:
        direct = _direct(entry, case, case.weights if entry.weighted else None)
        _same(direct, _boot(twin.key, case), f"{entry.key} as {twin.key} on {case.name}")
    with pytest.raises(ValueError, match="unknown statistic"):
        _boot_or_raise(entry.key)


def _boot_or_raise(name: str) -> None:
    bootstrap_replicates(TWO, [name], np.ones((1, TWO["unit"].nunique())))


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_rating_statistics_is_each_entrys_direct_computation(case: Case) -> None:
    if case.judge is not None:
        return  # rating_statistics takes no pair of raters
    got = rating_statistics(case.frame, case.level, case.weights, categories=case.categories)  # type: ignore[arg-type]
    assert list(got) == list(statistic_keys(case.level, case.weights))  # type: ignore[arg-type]
    for key, stat in got.items():
        s = STATISTICS[key]
        assert s.compute is not None
        expected = s.compute(case.table(), case.options(case.weights if s.weighted else None))
        assert stat == expected, (key, case.name)
        if s.batch is not None:
            assert s.batch(case.table())[key] == expected, key


# ---------------------------------------------------------------------------------------
# bounds and symmetry
# ---------------------------------------------------------------------------------------


BOUNDS_CASES = [
    Case(f"bounds-{seed}-{n_raters}", df, cats, LEVELS[seed % 4], "quadratic", "r0", "r1")
    for seed in range(10, 22)
    for n_raters, cats in ((2, SPACED), (3, SPACED), (4, BINARY))
    for df in [random_ratings(seed, n_raters, cats, missing=0.3)]
]


@pytest.mark.parametrize("entry", COMPUTED, ids=_ids(COMPUTED))
def test_values_lie_within_the_bounds(entry: Statistic) -> None:
    low, high = entry.bounds
    assert low < high
    for case in BOUNDS_CASES:
        for weights in (None, case.weights):
            direct = _direct(entry, case, weights)
            if isinstance(direct, Stat) and direct.value is not None:
                assert low - 1e-12 <= direct.value <= high + 1e-12, (entry.key, case.name)


def _relabelled(case: Case) -> Case:
    """The same ratings with the raters renamed in reverse order (their codes reversed;
    two raters swap places), and judge and reference swapped."""
    names = sorted(case.frame["rater"].unique())
    new = dict(zip(names, [f"x{i}" for i in reversed(range(len(names)))], strict=True))
    frame = case.frame.assign(rater=case.frame["rater"].map(new))
    judge = new[case.reference] if case.reference is not None else None
    reference = new[case.judge] if case.judge is not None else None
    return Case(case.name, frame, case.categories, case.level, case.weights, judge, reference)


@pytest.mark.parametrize("entry", [s for s in COMPUTED if s.symmetric], ids=lambda s: s.key)
def test_symmetric_statistics_ignore_how_the_raters_are_labelled(entry: Statistic) -> None:
    for case in CASES:
        weights = case.weights if entry.weighted else None
        before, after = _direct(entry, case, weights), _direct(entry, _relabelled(case), weights)
        if not isinstance(before, Stat) or before.value is None:
            assert after == before, (entry.key, case.name)
        else:
            assert isinstance(after, Stat) and after.value is not None, (entry.key, case.name)
            assert after.value == pytest.approx(before.value, rel=1e-12, abs=1e-14), entry.key


# ---------------------------------------------------------------------------------------
# the registry itself and the tables derived from it
# ---------------------------------------------------------------------------------------


def test_every_entry_is_complete() -> None:
    for key, s in STATISTICS.items():
        assert s.key == key
        assert s.label and s.phrase, key
        assert s.short is None or len(s.short) <= 10, key
        assert s.reference, key
        assert (ROOT / s.checked_in).is_file(), (key, s.checked_in)
        assert set(s.levels) <= set(LEVELS), key
        if s.levels:  # reported by rating_statistics: computed here, known to the bootstrap
            assert s.compute is not None and s.bootstrap_name is not None, key
        if s.resampled_as is not None:
            assert s.resample is None and STATISTICS[s.resampled_as].resample is not None, key
        assert STATISTICS[key] is s


def test_derived_tables() -> None:
    assert tuple(k for k, s in STATISTICS.items() if s.weighted) == WEIGHTED_KEYS
    assert tuple(k for k, s in STATISTICS.items() if s.resample) == BOOTSTRAP_STATISTICS
    every = statistic_keys("ratio", "quadratic")
    assert every == tuple(k for k, s in STATISTICS.items() if s.levels)
    for level in LEVELS:
        plain = statistic_keys(level)
        assert not set(plain) & set(WEIGHTED_KEYS)
        assert set(statistic_keys(level, "linear")) == set(plain) | set(WEIGHTED_KEYS)
        assert plain == tuple(k for k in every if level in STATISTICS[k].levels and k in plain)


def _doc_table_keys(page: str) -> set[str]:
    """The names in the first column of every ``| key | …`` table of a docs page."""
    keys: set[str] = set()
    in_key_table = False
    for line in (ROOT / page).read_text("utf-8").splitlines():
        if not line.startswith("|"):
            in_key_table = False
            continue
        first = line.split("|")[1].strip()
        if first == "key":
            in_key_table = True
        elif in_key_table:
            keys |= set(re.findall(r"`([a-z0-9_]+)`", first))
    return keys


def test_every_entry_is_in_the_table_of_its_docs_page() -> None:
    for key, s in STATISTICS.items():
        assert key in _doc_table_keys(s.doc), (key, s.doc)
    # and docs/statistics.md defines nothing the registry lacks
    assert _doc_table_keys("docs/statistics.md") <= set(STATISTICS)


def test_rendered_labels_are_unchanged() -> None:
    from gradercal.cli import stats as cli_stats
    from gradercal.dashboard import report
    from gradercal.ui.dashboard import data

    assert {k: STATISTICS[k].label for k in statistic_keys("ratio", "linear")} == cli_stats.LABELS
    assert cli_stats.LABELS["gwet_ac1"] == "Gwet's AC1"
    assert cli_stats.LABELS["bennett_s"] == "Bennett's S (Brennan–Prediger)"
    assert (
        cli_stats.LABELS["weighted_krippendorff_alpha"] == "Weighted Krippendorff's alpha (irrCAC)"
    )
    assert cli_stats._BOOT_WEIGHTED == {
        "weighted_percent_agreement": "weighted_percent_agreement",
        "weighted_cohen_kappa": "cohen_kappa",
        "weighted_scott_pi": "weighted_scott_pi",
        "weighted_conger_kappa": "weighted_conger_kappa",
        "weighted_fleiss_kappa": "weighted_fleiss_kappa",
        "weighted_bennett_s": "weighted_bennett_s",
        "gwet_ac2": "gwet_ac2",
        "weighted_krippendorff_alpha": "weighted_krippendorff_alpha",
    }
    phrases = {
        "percent_agreement": "percent agreement",
        "fleiss_kappa": "Fleiss' kappa",
        "gwet_ac1": "Gwet's AC1",
        "krippendorff_alpha": "Krippendorff's alpha",
        "cohen_kappa": "Cohen's kappa",
        "balanced_f1": "balanced F1",
        "leniency_bias": "leniency bias",
    }
    labels = report._stat_labels()
    assert {k: labels[k] for k in phrases} == phrases
    # every figure has its phrase: a statistic the agreement table shows never misses one
    assert labels == {k: s.phrase for k, s in STATISTICS.items()}
    shorts = {
        "krippendorff_alpha": "α",
        "percent_agreement": "% agree",
        "fleiss_kappa": "Fleiss κ",
        "gwet_ac1": "AC1",
        "cohen_kappa": "κ",
        "balanced_f1": "bal. F1",
        "leniency_bias": "leniency",
    }
    assert {k: data.STAT_LABELS[k] for k in shorts} == shorts
    # and every figure with a short header has its column label (a new one included)
    assert {k: s.short for k, s in STATISTICS.items() if s.short} == data.STAT_LABELS


def test_the_bootstrap_refuses_what_it_does_not_know() -> None:
    for name in ("leniency_bias", "weighted_cohen_kappa", "no_such_statistic"):
        with pytest.raises(ValueError, match="unknown statistic"):
            _boot_or_raise(name)
