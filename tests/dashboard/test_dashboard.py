"""gradercal.dashboard: every figure equals the engine (and the CLI) it comes from;
filters filter; progress and cancellation; no-judge and tiny benchmarks."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from sklearn.metrics import cohen_kappa_score

from gradercal.analysis import agreement as ag
from gradercal.analysis.alt_test import alt_test_frames
from gradercal.analysis.calibration import cross_fit
from gradercal.analysis.estimate import estimate_report
from gradercal.analysis.health import criterion_health
from gradercal.analysis.impact import impact_report
from gradercal.analysis.verdicts import consensus_verdicts, human_graders, verdicts
from gradercal.cli import main
from gradercal.dashboard import (
    AGREEMENT_COLUMNS,
    EXPERTS,
    Cancelled,
    Dashboard,
    DashboardFilters,
    compute_dashboard,
    filter_frames,
    filter_options,
    primary_judge,
)
from gradercal.errors import NotFoundError
from gradercal.formats import read_path
from gradercal.frames import Frames
from tests.conftest import DATA, DEMO

N_BOOT = 60
SEED = 3
JUDGE = "judge-gpt"


@pytest.fixture(scope="module")
def demo() -> Frames:
    from gradercal.frames import frames_from_data

    return frames_from_data(read_path(DEMO))


@pytest.fixture(scope="module")
def mini() -> Frames:
    from gradercal.frames import frames_from_data

    return frames_from_data(read_path(DATA / "mini"))


@pytest.fixture(scope="module")
def dash(demo: Frames) -> Dashboard:
    return compute_dashboard(demo, n_boot=N_BOOT, seed=SEED)


def _row(d: Dashboard, by: str, group: str, comparison: str, stat: str) -> pd.Series:
    a = d.agreement
    sel = a.loc[
        (a["by"] == by)
        & (a["group"] == group)
        & (a["comparison"] == comparison)
        & (a["statistic"] == stat)
    ]
    assert len(sel) == 1, (by, group, comparison, stat)
    return sel.iloc[0]


def _same(x: Any, y: Any) -> bool:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return y is None or (isinstance(y, float) and math.isnan(y))
    return y is not None and math.isclose(float(x), float(y), rel_tol=1e-12, abs_tol=1e-12)


def _check(row: pd.Series, fig: dict[str, Any]) -> None:
    """A dashboard row against the engine's ``{"value", "ci"}``."""
    assert _same(row["value"], fig["value"])
    ci = fig["ci"] or [None, None]
    assert _same(row["ci_low"], ci[0]) and _same(row["ci_high"], ci[1])


# ----------------------------------------------------------------------- equal engines


def test_overall_agreement_equals_the_agreement_report(demo: Frames, dash: Dashboard) -> None:
    rep = ag.agreement_report(demo, judge=JUDGE, n_boot=N_BOOT, seed=SEED)
    hh = rep["human_human"]["overall"]
    for stat in ag.HUMAN_STATISTICS:
        row = _row(dash, "overall", "all", EXPERTS, stat)
        _check(row, hh[stat])
        assert row["n_items"] == hh["n_units_paired"] and row["n_tasks"] == hh["n_tasks"]
    hj = rep["human_judge"]
    for stat in ("percent_agreement", "cohen_kappa", "balanced_f1", "leniency_bias"):
        _check(_row(dash, "overall", "all", JUDGE, stat), hj["metrics"][stat])
    c = hj["confusion"]
    assert dash.confusion[JUDGE].tolist() == [[c["tn"], c["fp"]], [c["fn"], c["tp"]]]
    j = dash.judges.set_index("judge").loc[JUDGE]
    assert _same(j["cohen_kappa"], hj["metrics"]["cohen_kappa"]["value"])
    assert _same(j["kappa_experts_min"], hj["human_range"]["cohen_kappa"][0])
    assert _same(j["kappa_experts_max"], hj["human_range"]["cohen_kappa"][1])
    assert j["n_items"] == hj["n_units"]


def test_pairwise_equals_the_engine(demo: Frames, dash: Dashboard) -> None:
    graders = [*human_graders(demo), JUDGE]
    pairs = ag.pairwise_agreement(demo, graders, n_boot=N_BOOT, seed=SEED)
    assert len(dash.pairwise) == 2 * len(pairs) == 2 * 6
    mat = dash.pairwise_matrix("cohen_kappa")
    assert list(mat.index) == graders
    for p in pairs:
        assert _same(mat.loc[p.a, p.b], p.cohen_kappa.value)
        assert _same(mat.loc[p.b, p.a], p.cohen_kappa.value)
    assert np.allclose(np.diag(mat.to_numpy()), 1.0)


def test_judge_kappa_against_scikit_learn(demo: Frames, dash: Dashboard) -> None:
    """Independent check: kappa of the judge's verdicts against the decided consensus."""
    v = verdicts(demo, [JUDGE])
    cons = consensus_verdicts(demo)
    p = v.merge(cons, on=["response_id", "criterion_id"], suffixes=("_j", "_c"))
    expected = cohen_kappa_score(p["met_c"].astype(int), p["met_j"].astype(int))
    assert math.isclose(dash.judges.set_index("judge").loc[JUDGE, "cohen_kappa"], expected)
    tn, fp, fn, tp = (
        int(((~p["met_c"]) & (~p["met_j"])).sum()),
        int(((~p["met_c"]) & p["met_j"]).sum()),
        int((p["met_c"] & ~p["met_j"]).sum()),
        int((p["met_c"] & p["met_j"]).sum()),
    )
    assert dash.confusion[JUDGE].tolist() == [[tn, fp], [fn, tp]]


@pytest.mark.parametrize("by", ["tag", "workflow", "domain"])
def test_group_rows_equal_group_agreement(demo: Frames, dash: Dashboard, by: str) -> None:
    groups = ag.group_agreement(demo, by, judge=JUDGE, n_boot=N_BOOT, seed=SEED)  # type: ignore[arg-type]
    sub = dash.agreement.loc[dash.agreement["by"] == by]
    assert sub["group"].nunique() == len(groups)
    for g in groups:
        label = g.group if g.group is not None else ("(untagged)" if by == "tag" else "(none)")
        d = g.to_dict()
        _check(_row(dash, by, label, EXPERTS, "fleiss_kappa"), d["human_human"]["fleiss_kappa"])
        _check(
            _row(dash, by, label, JUDGE, "balanced_f1"), d["human_judge"]["metrics"]["balanced_f1"]
        )


def test_criterion_rows_equal_agreement_by_criterion(demo: Frames, dash: Dashboard) -> None:
    rows = ag.group_agreement(demo, "criterion", judge=JUDGE, n_boot=0)
    crit = dash.agreement.loc[dash.agreement["by"] == "criterion"].set_index(
        ["task_id", "group", "comparison"]
    )
    checked = 0
    for r in rows:
        pa = r.humans.statistics["percent_agreement"].value
        if pa is not None:
            assert _same(crit.loc[(r.task_id, r.group, EXPERTS), "value"], pa)
            checked += 1
        jp = r.judge.metrics["percent_agreement"].value if r.judge else None
        if jp is not None:
            assert _same(crit.loc[(r.task_id, r.group, JUDGE), "value"], jp)
    assert checked == 128


def test_models_flips_alt_test_and_health_equal_the_engines(demo: Frames, dash: Dashboard) -> None:
    humans = human_graders(demo)
    cf = cross_fit(demo, JUDGE, "threshold", humans)
    cal = cf.responses.loc[:, ["response_id", "oof"]].rename(columns={"oof": "score"})
    rep = impact_report(
        demo, JUDGE, humans, calibrated=cal, breakdowns=(), n_boot=N_BOOT, seed=SEED
    )
    m = dash.models.set_index(["model", "source", "metric"])
    for row in rep["models"]:
        for g, source in (
            ("consensus", "experts"),
            ("judge", "judge_raw"),
            ("calibrated", "judge_calibrated"),
        ):
            for metric in ("mean_score", "pass_rate"):
                fig = row[g][metric]
                got = m.loc[(row["model"], source, metric)]
                assert _same(got["value"], fig["value"])
                assert _same(got["ci_low"], fig["ci"][0]) and _same(got["ci_high"], fig["ci"][1])
    est = estimate_report(demo, JUDGE, humans)
    for row in est["models"]:
        got = m.loc[(row["model"], "estimate", "mean_score")]
        assert _same(got["value"], row["mean_score"]["estimate"])
        assert _same(got["ci_low"], row["mean_score"]["ci"][0])
    assert len(dash.flips) == len(rep["flips"])
    assert set(zip(dash.flips["response_id"], dash.flips["source"], strict=True)) == {
        (f["response_id"], {"judge": "judge_raw", "calibrated": "judge_calibrated"}[f["grader"]])
        for f in rep["flips"]
    }
    alt = alt_test_frames(demo, JUDGE, humans).to_dict()
    assert dash.alt_test == alt
    assert dash.judges.set_index("judge").loc[JUDGE, "alt_test_passed"] == alt["passed"]
    hc = criterion_health(demo, JUDGE, humans, details=True)
    assert list(dash.health["criterion_id"]) == [h.criterion_id for h in hc]
    assert list(dash.health["flagged"]) == [h.flagged for h in hc]
    # Disagreements: exactly the disagreeing responses health lists for flagged criteria
    # (every criterion with a disagreement on the demo is flagged at the 0.9 bar).
    expected = {(d["response_id"], h.criterion_id, h.task_id) for h in hc for d in h.disagreements}
    got = set(
        zip(
            dash.disagreements["response_id"],
            dash.disagreements["criterion_id"],
            dash.disagreements["task_id"],
            strict=True,
        )
    )
    assert got == expected and len(got) == len(dash.disagreements) > 0
    one = next(d for h in hc for d in h.disagreements)
    row = dash.disagreements.loc[dash.disagreements["response_id"] == one["response_id"]]
    for v in one["verdicts"]:
        assert v["met"] in set(row[f"verdict:{v['grader']}"])


def test_reliability_equals_fit_calibration(demo: Frames, dash: Dashboard) -> None:
    from gradercal.analysis.calibration import fit_calibration

    res = fit_calibration(demo, JUDGE, "threshold", n_boot=0)
    rel = dash.reliability[JUDGE]
    before = pd.DataFrame(res.metrics["reliability"]["before"])
    after = pd.DataFrame(res.metrics["reliability"]["after"])
    assert rel["n_before"].tolist() == before["n"].tolist()
    assert rel["n_after"].tolist() == after["n"].tolist()
    assert np.allclose(
        rel["mean_observed_after"].to_numpy(float),
        after["mean_observed"].to_numpy(float, na_value=np.nan),
        equal_nan=True,
    )
    crit = res.metrics["criterion"]
    assert math.isclose(rel.attrs["ece_after"], crit["after"]["ece"]["value"])
    assert math.isclose(rel.attrs["brier_before"], crit["before"]["brier"]["value"])
    assert dash.calibration is not None and dash.calibration["out_of_fold"] is True


def test_cli_agreement_json_figures(tmp_path: Path, dash: Dashboard) -> None:
    db = tmp_path / "demo.sqlite"
    runner = CliRunner()
    assert runner.invoke(main, ["import", str(DEMO), "--db", str(db)]).exit_code == 0
    res = runner.invoke(
        main,
        [
            "agreement",
            "--db",
            str(db),
            "--judge",
            JUDGE,
            "--json",
            "--bootstrap",
            str(N_BOOT),
            "--seed",
            str(SEED),
            "--by",
            "workflow",
        ],
    )
    assert res.exit_code == 0, res.output
    rep = json.loads(res.output)
    _check(
        _row(dash, "overall", "all", EXPERTS, "krippendorff_alpha"),
        rep["human_human"]["overall"]["krippendorff_alpha"],
    )
    _check(
        _row(dash, "overall", "all", JUDGE, "cohen_kappa"),
        rep["human_judge"]["metrics"]["cohen_kappa"],
    )
    for g in rep["groups"]["rows"]:
        _check(
            _row(dash, "workflow", g["group"], JUDGE, "cohen_kappa"),
            g["human_judge"]["metrics"]["cohen_kappa"],
        )


def test_mini_benchmark(mini: Frames) -> None:
    d = compute_dashboard(mini, n_boot=20)
    rep = ag.agreement_report(mini, judge="judge-x", n_boot=20)
    _check(
        _row(d, "overall", "all", EXPERTS, "percent_agreement"),
        rep["human_human"]["overall"]["percent_agreement"],
    )
    _check(
        _row(d, "overall", "all", "judge-x", "cohen_kappa"),
        rep["human_judge"]["metrics"]["cohen_kappa"],
    )
    assert d.overview["n_tasks"] == 2 and d.overview["humans"] == ["ana", "ben"]
    assert d.primary_judge == "judge-x"
    json.dumps(d.to_json(), allow_nan=False)


# ---------------------------------------------------------------------------- filters


def test_filters_really_filter(demo: Frames) -> None:
    opts = filter_options(demo)
    assert opts["models"] == ["atlas-7b", "borealis-large", "cobalt-pro"]
    assert opts["graders"] == ["expert-ana", "expert-ben", "expert-chloe"]
    assert opts["judges"] == [JUDGE]
    f = filter_frames(demo, DashboardFilters(models=("atlas-7b",)))
    assert set(f.responses["model"]) == {"atlas-7b"} and len(f.responses) == 10
    assert set(f.judgments["response_id"]) <= set(f.responses["response_id"])
    wf = opts["workflows"][0]
    f2 = filter_frames(demo, DashboardFilters(workflows=(wf,)))
    n_wf = int((demo.tasks["workflow"] == wf).sum())
    assert len(f2.tasks) == n_wf and set(f2.criteria["task_id"]) <= set(f2.tasks["task_id"])
    assert f2.judgments["met"].dtype == demo.judgments["met"].dtype
    d = compute_dashboard(
        demo,
        filters=DashboardFilters(
            models=("atlas-7b", "cobalt-pro"), graders=("expert-ana", "expert-ben")
        ),
        n_boot=0,
    )
    assert d.overview["n_responses"] == 20
    assert d.overview["humans"] == ["expert-ana", "expert-ben"]
    assert set(d.models["model"]) == {"atlas-7b", "cobalt-pro"}
    sub = filter_frames(
        demo,
        DashboardFilters(models=("atlas-7b", "cobalt-pro"), graders=("expert-ana", "expert-ben")),
    )
    ha = ag.human_agreement(sub, n_boot=0)
    assert _same(
        _row(d, "overall", "all", EXPERTS, "fleiss_kappa")["value"],
        ha.statistics["fleiss_kappa"].value,
    )
    assert list(d.disagreements.columns[-3:]) == [
        "verdict:expert-ana",
        "verdict:expert-ben",
        f"verdict:{JUDGE}",
    ]
    empty = compute_dashboard(demo, filters=DashboardFilters(domains=("no such domain",)), n_boot=0)
    assert empty.overview["n_tasks"] == 0 and empty.agreement["by"].isin(["overall"]).all()


# ------------------------------------------------------------------ progress and cancel


def test_progress_reaches_total_and_cancel_raises(mini: Frames) -> None:
    seen: list[tuple[int, int, str]] = []
    compute_dashboard(mini, n_boot=0, progress=lambda a, b, label: seen.append((a, b, label)))
    assert seen[-1][0] == seen[-1][1] and [s[0] for s in seen] == sorted(s[0] for s in seen)
    total = seen[-1][1]
    for stop_after in (0, 3, total - 1):
        stopper = _Stopper(stop_after)
        with pytest.raises(Cancelled):
            compute_dashboard(
                mini, n_boot=0, cancelled=stopper.cancelled, progress=stopper.progress
            )
        assert stopper.steps == stop_after


def test_the_collector_is_paused_while_computing_and_restored(mini: Frames) -> None:
    import gc

    states: list[bool] = []
    # a Qt test earlier in this process may have left the app's way on (collections from a
    # timer, automatic ones off: ui.qt_workers): start from automatic collections
    was = gc.isenabled()
    gc.enable()
    try:
        compute_dashboard(
            mini, n_boot=0, progress=lambda a, b, label: states.append(gc.isenabled())
        )
        assert states and not any(states) and gc.isenabled()
        with pytest.raises(Cancelled):  # restored when the computation stops early too
            compute_dashboard(mini, n_boot=0, cancelled=lambda: True)
        assert gc.isenabled()
        gc.disable()  # the Qt app's way (collections from a timer): left as it was
        compute_dashboard(mini, n_boot=0)
        assert not gc.isenabled()
    finally:
        (gc.enable if was else gc.disable)()


class _Stopper:
    """Cancels once ``limit`` sections have reported progress."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.steps = 0

    def progress(self, done: int, total: int, label: str) -> None:
        self.steps += 1

    def cancelled(self) -> bool:
        return self.steps >= self.limit


def test_no_judge_gives_empty_judge_sections_with_a_note(demo: Frames) -> None:
    j = demo.judgments
    humans_only = Frames(
        demo.pass_threshold,
        demo.tasks,
        demo.criteria,
        demo.responses,
        j.loc[j["grader_kind"] == "human"].reset_index(drop=True),
        demo.adjudications,
    )
    d = compute_dashboard(humans_only, n_boot=0)
    assert d.primary_judge is None and d.judges.empty and not d.confusion and not d.reliability
    assert d.models.empty and d.flips.empty and d.alt_test is None
    assert any("no judge" in n for n in d.notes)
    assert set(d.agreement["comparison"]) == {EXPERTS}
    assert len(d.health) == 128
    json.dumps(d.to_json(), allow_nan=False)


def test_judge_choice_and_errors(demo: Frames) -> None:
    assert primary_judge(demo) == JUDGE
    with pytest.raises(NotFoundError, match="nobody"):
        compute_dashboard(demo, judge="nobody", n_boot=0)
    with pytest.raises(ValueError, match="method"):
        compute_dashboard(demo, calibration={"method": "magic"}, n_boot=0)
    d = compute_dashboard(demo, calibration={"method": "none"}, n_boot=0)
    assert d.calibration is None and d.reliability == {}
    assert set(d.models["source"]) == {"experts", "judge_raw", "estimate"}
    iso = compute_dashboard(demo, calibration={"params": {"method": "isotonic"}}, n_boot=0)
    assert iso.calibration is not None and iso.calibration["level"] == "response"


def test_to_json_is_strict_and_complete(dash: Dashboard) -> None:
    out = dash.to_json()
    text = json.dumps(out, allow_nan=False)
    back = json.loads(text)
    assert len(back["agreement"]) == len(dash.agreement)
    assert set(back["agreement"][0]) == set(AGREEMENT_COLUMNS)
    assert back["confusion"][JUDGE]["matrix"] == dash.confusion[JUDGE].tolist()
    assert len(back["reliability"][JUDGE]["bins"]) == 10
