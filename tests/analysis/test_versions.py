"""gradercal.analysis.versions: agreement per criterion version (issue #16), by hand on a
tiny benchmark and against independent computations — the ``krippendorff`` package on the
raters × units reliability matrix, ``irrCAC``'s percent agreement, and the bootstrap
interval redone resample by resample."""

from __future__ import annotations

import math

import krippendorff
import numpy as np
import pandas as pd
import pytest

from gradercal.analysis.versions import VerdictEras, agreement_by_version, versions_report
from gradercal.frames import Frames, frames_from_data
from gradercal.model import (
    Benchmark,
    BenchmarkData,
    Criterion,
    GraderKind,
    Judgment,
    Response,
    Task,
)
from gradercal.stats.bootstrap import interval_levels, resampling_weights

HUMAN, JUDGE = GraderKind.HUMAN, GraderKind.JUDGE


def _frames(n: int, judgments: list[Judgment]) -> Frames:
    task = Task(
        id="T",
        prompt="p",
        criteria=(Criterion("c", "revised one", 3), Criterion("d", "untouched", 2, position=1)),
    )
    responses = [Response(f"r{i}", "T", "m", "answer") for i in range(n)]
    data = BenchmarkData(Benchmark("b"), [task], responses, judgments)
    return frames_from_data(data)


def _eras(rows: list[tuple[str, str, str, int]], marks: tuple[int, ...] = (1, 2)) -> VerdictEras:
    j = pd.DataFrame(rows, columns=["response_id", "criterion_id", "grader", "era"])
    j = j.astype({"response_id": object, "criterion_id": object, "grader": object})
    return VerdictEras({("T", "c"): marks}, j, VerdictEras.empty().adjudications)


def _tiny() -> tuple[Frames, VerdictEras]:
    """Criterion c before (ana, ben) and after (cy, dee) its fix; the judge in both."""
    before = {"r0": (True, True), "r1": (True, False), "r2": (False, False), "r3": (False, True)}
    after = {"r0": (True, True), "r1": (False, False), "r2": (False, False), "r3": (True, True)}
    js: list[Judgment] = []
    eras: list[tuple[str, str, str, int]] = []
    for r, (a, b) in before.items():
        js += [Judgment(r, "c", "ana", HUMAN, met=a), Judgment(r, "c", "ben", HUMAN, met=b)]
        eras += [(r, "c", "ana", 1), (r, "c", "ben", 1)]
    for r, (a, b) in after.items():
        js += [Judgment(r, "c", "cy", HUMAN, met=a), Judgment(r, "c", "dee", HUMAN, met=b)]
        eras += [(r, "c", "cy", 2), (r, "c", "dee", 2)]
    # the judge: r0-r2 still under version 1, r3 given again under version 2
    for r, met, era in (("r0", True, 1), ("r1", True, 1), ("r2", True, 1), ("r3", True, 2)):
        js.append(Judgment(r, "c", "judge", JUDGE, met=met))
        eras.append((r, "c", "judge", era))
    # an unrevised criterion is never listed
    js += [
        Judgment("r0", "d", "ana", HUMAN, met=True),
        Judgment("r0", "d", "ben", HUMAN, met=False),
    ]
    return _frames(4, js), _eras(eras)


def test_tiny_example_by_hand() -> None:
    """Version 1, ana / ben: r0 TT, r1 TF, r2 FF, r3 FT.

    Percent agreement: (1 + 0 + 1 + 0)/4 = 0.5. Krippendorff's alpha (nominal): the
    coincidences o₁₁ = 2, o₀₀ = 2, o₀₁ = o₁₀ = 2, so n₀ = n₁ = 4, n = 8;
    D_o = 4/8 = 1/2, D_e = 2·4·4/(8·7) = 4/7, α = 1 − (1/2)/(4/7) = 1/8.
    Judge (version 1 on r0-r2): consensus r0 met, r1 tie (left out), r2 not met; the
    judge says met on both → agreement 1/2 on 2 responses.

    Version 2, cy / dee: r0 TT, r1 FF, r2 FF, r3 TT → agreement 1, α = 1 (D_o = 0).
    Judge (version 2 on r3 only): met, consensus met → 1/1.
    """
    frames, eras = _tiny()
    rows = agreement_by_version(frames, eras, judge="judge", n_boot=0)
    assert [(r.task_id, r.criterion_id, r.version, r.current) for r in rows] == [
        ("T", "c", 1, False),
        ("T", "c", 2, True),
    ]
    v1, v2 = rows
    assert (v1.raters, v1.n_units, v1.n_units_paired, v1.n_ratings) == (["ana", "ben"], 4, 4, 8)
    assert v1.statistics["percent_agreement"].value == pytest.approx(0.5)
    assert v1.statistics["krippendorff_alpha"].value == pytest.approx(1 / 8)
    assert v1.judge == "judge" and v1.judge_n_units == 2
    assert v1.judge_metrics["percent_agreement"].value == pytest.approx(0.5)
    assert (v2.raters, v2.n_units_paired) == (["cy", "dee"], 4)
    assert v2.statistics["percent_agreement"].value == pytest.approx(1.0)
    assert v2.statistics["krippendorff_alpha"].value == pytest.approx(1.0)
    assert v2.judge_n_units == 1
    assert v2.judge_metrics["percent_agreement"].value == pytest.approx(1.0)
    # no bootstrap: no interval
    assert v1.statistics["percent_agreement"].ci_low is None


def test_only_named_humans_count_and_the_judge_is_never_one() -> None:
    frames, eras = _tiny()
    (v1, v2) = agreement_by_version(
        frames, eras, humans=["ana", "cy", "judge"], judge="judge", n_boot=0
    )
    assert v1.raters == ["ana"] and v1.n_units_paired == 0
    assert v1.statistics["percent_agreement"].value is None  # one rater: undefined
    assert v2.raters == ["cy"] and v1.judge == "judge"
    # the consensus of one human: every unit decided
    assert v1.judge_n_units == 3


def test_earlier_versions_without_verdicts_are_left_out_the_current_one_kept() -> None:
    frames, eras = _tiny()
    # a third era nobody graded under yet (the current one), and no verdict in era 1
    only_two = eras.judgments.loc[eras.judgments["era"] == 2]
    rows = agreement_by_version(
        frames, VerdictEras({("T", "c"): (1, 2, 3)}, only_two, eras.adjudications), n_boot=0
    )
    assert [(r.version, r.current, r.n_units) for r in rows] == [(2, False, 4), (3, True, 0)]
    assert rows[1].statistics["krippendorff_alpha"].note == "no ratings"


def test_nothing_revised_gives_nothing() -> None:
    frames, _eras = _tiny()
    assert agreement_by_version(frames, VerdictEras.empty()) == []
    rep = versions_report(frames, VerdictEras.empty(), benchmark="b")
    assert rep["criteria"] == [] and rep["n_revised"] == 0 and rep["notes"] == []


def test_adjudications_decide_the_consensus_of_their_version() -> None:
    from gradercal.model import Adjudication

    frames, eras = _tiny()
    # r1 is tied under version 1; an adjudication given under version 1 decides it (met)
    adj = frames_from_data(
        BenchmarkData(Benchmark("b"), [], [], []),
        [Adjudication("r1", "c", met=True, adjudicator="coord")],
    ).adjudications
    frames = Frames(
        frames.pass_threshold,
        frames.tasks,
        frames.criteria,
        frames.responses,
        frames.judgments,
        adj,
    )
    a_eras = pd.DataFrame({"response_id": ["r1"], "criterion_id": ["c"], "era": [1]}).astype(
        {"response_id": object, "criterion_id": object}
    )
    (v1, v2) = agreement_by_version(
        frames,
        VerdictEras(eras.revised, eras.judgments, a_eras),
        judge="judge",
        n_boot=0,
    )
    assert v1.judge_n_units == 3  # r0, r1 (adjudicated met), r2
    assert v1.judge_metrics["percent_agreement"].value == pytest.approx(2 / 3)
    assert v2.judge_n_units == 1  # the adjudication is of version 1: not used in version 2


# -- against independent computations ----------------------------------------------------------
N = 30
RATERS = ("ana", "ben", "cy", "dee")


def _random() -> tuple[Frames, VerdictEras, list[tuple[str, str, bool, int]]]:
    """30 responses; each human rates each with probability 0.8, under version 1 or 2
    (about half given again under 2); version 2 agrees more (the fix worked)."""
    rng = np.random.default_rng(7)
    truth = rng.random(N) < 0.5
    verdicts: list[tuple[str, str, bool, int]] = []
    for i in range(N):
        for g in RATERS:
            if rng.random() > 0.8:
                continue
            era = 2 if rng.random() < 0.5 else 1
            flip = rng.random() < (0.35 if era == 1 else 0.1)
            verdicts.append((f"r{i}", g, bool(truth[i] ^ flip), era))
    js = [Judgment(r, "c", g, HUMAN, met=met) for r, g, met, _e in verdicts]
    eras = _eras([(r, "c", g, e) for r, g, _m, e in verdicts])
    return _frames(N, js), eras, verdicts


def _matrix(verdicts: list[tuple[str, str, bool, int]], era: int) -> tuple[list[str], np.ndarray]:
    """Raters × units (units in order of first appearance), NaN where not rated."""
    units = list(dict.fromkeys(r for r, _g, _m, e in verdicts if e == era))
    mat = np.full((len(RATERS), len(units)), np.nan)
    for r, g, met, e in verdicts:
        if e == era:
            mat[RATERS.index(g), units.index(r)] = float(met)
    return units, mat


def _percent_agreement(mat: np.ndarray) -> float:
    """Gwet's multi-rater percent agreement, from its definition (units rated ≥ 2 times)."""
    shares = []
    for col in mat.T:
        x = col[~np.isnan(col)]
        r = len(x)
        if r >= 2:
            r1 = float(x.sum())
            r0 = r - r1
            shares.append((r1 * (r1 - 1) + r0 * (r0 - 1)) / (r * (r - 1)))
    return float(np.mean(shares)) if shares else math.nan


def test_point_estimates_match_krippendorff_and_irrcac() -> None:
    import irrCAC.raw

    frames, eras, verdicts = _random()
    rows = {r.version: r for r in agreement_by_version(frames, eras, n_boot=0)}
    for era in (1, 2):
        _units, mat = _matrix(verdicts, era)
        alpha = krippendorff.alpha(reliability_data=mat, level_of_measurement="nominal")
        assert rows[era].statistics["krippendorff_alpha"].value == pytest.approx(alpha, abs=1e-12)
        wide = pd.DataFrame(mat.T, columns=list(RATERS))
        pa = irrCAC.raw.CAC(wide, categories=[0.0, 1.0], digits=12).fleiss()["est"]["pa"]
        assert rows[era].statistics["percent_agreement"].value == pytest.approx(float(pa), abs=1e-9)
        assert rows[era].statistics["percent_agreement"].value == pytest.approx(
            _percent_agreement(mat), abs=1e-12
        )
        assert rows[era].n_units_paired == int(((~np.isnan(mat)).sum(axis=0) >= 2).sum())
    # the fix worked in this simulation: alpha rose
    assert (
        rows[2].statistics["krippendorff_alpha"].value
        > rows[1].statistics["krippendorff_alpha"].value
    )


def test_intervals_resample_responses() -> None:
    """The interval redone by hand: the same resamples of the responses (multiplicities
    from resampling_weights, responses in order of first appearance), each resample's
    alpha from the krippendorff package on the replicated reliability matrix and its
    percent agreement from the definition, then the expanded percentile interval."""
    n_boot, seed, ci = 200, 3, 0.9
    frames, eras, verdicts = _random()
    rows = {
        r.version: r for r in agreement_by_version(frames, eras, n_boot=n_boot, seed=seed, ci=ci)
    }
    for era in (1, 2):
        units, mat = _matrix(verdicts, era)
        w = resampling_weights(len(units), n_boot, seed)
        alphas, pas = [], []
        for counts in w:
            rep = np.repeat(mat, counts, axis=1)
            pairable = ((~np.isnan(rep)).sum(axis=0) >= 2).sum()
            values = rep[~np.isnan(rep)]
            if pairable and len(np.unique(values)) > 1:
                alphas.append(
                    krippendorff.alpha(reliability_data=rep, level_of_measurement="nominal")
                )
            pas.append(_percent_agreement(rep))
        levels = interval_levels(len(units), ci, "expanded_percentile")
        for name, reps in (("krippendorff_alpha", alphas), ("percent_agreement", pas)):
            finite = np.asarray([x for x in reps if math.isfinite(x)])
            lo, hi = np.quantile(finite, levels)
            got = rows[era].statistics[name]
            assert got.n_clusters == len(units) and got.n_boot == n_boot
            assert (got.ci_low, got.ci_high) == pytest.approx((lo, hi), abs=1e-9), (era, name)
            assert got.ci_low <= got.value <= got.ci_high


def test_report_shape() -> None:
    frames, eras = _tiny()
    rep = versions_report(frames, eras, judge="judge", n_boot=50, benchmark="b")
    assert rep["humans"] == ["ana", "ben", "cy", "dee"] and rep["n_revised"] == 1
    assert rep["bootstrap"]["cluster"] == "response"
    first = rep["criteria"][0]
    assert list(first)[:8] == [
        "task_id",
        "criterion_id",
        "version",
        "current",
        "raters",
        "n_units",
        "n_units_paired",
        "n_ratings",
    ]
    assert set(first["percent_agreement"]) == {"value", "ci", "note"}
    assert first["human_judge"]["judge"] == "judge"
