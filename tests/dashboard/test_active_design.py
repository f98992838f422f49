"""The dashboard and ``gradercal report`` under an active design (``assign --strategy
active``): the estimates weighted exactly as ``gradercal estimate`` weights them, the
judge–consensus agreement design-weighted, the other figures marked as not weighted, the
design stated; a uniform design unchanged. Simulations with known truth (gradercal.synth)."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from gradercal.analysis.estimate import estimate_report
from gradercal.cli import main
from gradercal.dashboard import compute_dashboard
from gradercal.dashboard.sections import ACTIVE_DESIGN, design_weighted_agreement
from gradercal.formats.v1 import read_folder
from gradercal.frames import Frames, frames_from_data
from gradercal.ops.active import draw_active, response_uncertainty
from gradercal.synth import SynthConfig, generate


def _run(args: list[str]) -> str:
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    return res.stdout


def _informative(frames: Frames) -> Frames:
    """The synth's single expert is the truth (sensitivity = specificity = 1); the judge's
    confidence is made informative: 0.97 on a right verdict, 0.6 on a wrong one."""
    j = frames.judgments
    truth = j.loc[j["grader"] != "judge"].set_index(["response_id", "criterion_id"])["met"]
    key = pd.MultiIndex.from_frame(j[["response_id", "criterion_id"]])
    right = j["met"].to_numpy() == truth.reindex(key).to_numpy()
    is_judge = (j["grader"] == "judge").to_numpy()
    conf = np.where(is_judge, np.where(right, 0.97, 0.6), j["confidence"].to_numpy(np.float64))
    return replace(frames, judgments=j.assign(confidence=conf))


def _benchmark(tmp: Path, seed: int, tasks: int = 200) -> Frames:
    out = tmp / f"b{seed}-{tasks}"
    generate(
        out,
        overwrite=True,
        config=SynthConfig(
            tasks=tasks, criteria_per_task=8, responses_per_task=1, human_graders=1,
            human_sensitivity=1.0, human_specificity=1.0, artifacts_per_task=0,
            numeric_task_share=0.0, seed=seed,
        ),
    )  # fmt: skip
    return _informative(frames_from_data(read_folder(out)))


def _active(frames: Frames, budget: int, seed: int) -> tuple[Frames, dict[str, float]]:
    """Keep the expert's verdicts on an active draw (by the judge's confidence) only."""
    j = frames.judgments
    jj = j.loc[j["grader"] == "judge"]
    unc = {
        str(r): response_uncertainty(g["confidence"].astype(float).tolist())
        for r, g in jj.groupby("response_id")
    }
    d = draw_active(unc, budget, seed=seed)
    chosen = {
        r: float(p)
        for r, p, s in zip(d.response_ids, d.probabilities, d.selected, strict=True)
        if s
    }
    keep = (j["grader"] == "judge") | j["response_id"].isin(list(chosen))
    return replace(frames, judgments=j.loc[keep].reset_index(drop=True)), chosen


def _true_agreement(frames: Frames) -> float:
    j = frames.judgments
    h = j.loc[j["grader"] != "judge"].set_index(["response_id", "criterion_id"])["met"]
    jm = j.loc[j["grader"] == "judge"].set_index(["response_id", "criterion_id"])["met"]
    both = jm.index.intersection(h.index)
    return float(np.mean(jm.loc[both].to_numpy() == h.loc[both].to_numpy()))


@pytest.mark.slow
def test_weighted_agreement_recovers_the_truth_where_the_sampled_items_are_biased(
    tmp_path: Path,
) -> None:
    """Known truth: the judge's agreement with the truth over every unit. An active draw
    over-represents the judge's wrong verdicts, so the agreement over the sampled items
    (what the dashboard showed before) is far too low; the design-weighted one is not."""
    weighted, sampled, truth = [], [], []
    for seed in range(6):
        full = _benchmark(tmp_path, seed, tasks=150)
        f, chosen = _active(full, 45, seed)
        w = design_weighted_agreement(f, "judge", ["expert-01"], (chosen, {}), 0.95)
        # without probabilities: the dashboard's unit-level figure (checked below)
        s = design_weighted_agreement(f, "judge", ["expert-01"], ({}, {}), 0.95)
        sampled.append(s["percent_agreement"][0])
        weighted.append(w["percent_agreement"][0])
        truth.append(_true_agreement(full))
    bias_w = np.mean(np.subtract(weighted, truth))
    bias_s = np.mean(np.subtract(sampled, truth))
    print(f"percent agreement bias: weighted {bias_w:+.4f}, sampled items {bias_s:+.4f}")
    assert bias_s < -0.012  # the unweighted figure is measurably biased
    assert abs(bias_w) < 0.008
    # under a uniform design (no probability) the weighted figure is the unit-level one
    f, _ = _active(_benchmark(tmp_path, 0, tasks=150), 45, 0)
    w0 = design_weighted_agreement(f, "judge", ["expert-01"], ({}, {}), 0.95)
    d0 = compute_dashboard(f, judge="judge", n_boot=0, calibration={"method": "none"})
    row = d0.judges.loc[d0.judges["judge"] == "judge"].iloc[0].to_dict()
    pa, kappa = float(row["percent_agreement"]), float(row["cohen_kappa"])
    assert w0["percent_agreement"][0] == pytest.approx(pa, abs=1e-12)
    assert w0["cohen_kappa"][0] == pytest.approx(kappa, abs=1e-12)


def test_dashboard_under_an_active_design_weights_and_says_so(tmp_path: Path) -> None:
    full = _benchmark(tmp_path, 3, tasks=120)
    f, chosen = _active(full, 40, 3)
    design = (chosen, dict.fromkeys(chosen, 1))
    heads: list[dict[str, Any]] = []
    d = compute_dashboard(f, judge="judge", n_boot=20, design=design, headline=heads.append)
    u = compute_dashboard(f, judge="judge", n_boot=20)
    # the window's first numbers (the headline, sent before the rest) are the weighted ones
    (h,) = heads
    overall = d.agreement.loc[d.agreement["by"] == "overall"].reset_index(drop=True)
    pd.testing.assert_frame_equal(h["agreement"].reset_index(drop=True), overall)
    assert list(h["judges"]["cohen_kappa"]) == list(d.judges["cohen_kappa"])
    assert h["overview"]["design"] == "active" and h["notes"][0].startswith(ACTIVE_DESIGN)
    est = estimate_report(f, "judge", inclusion=chosen, rounds=design[1])
    m = d.models.loc[d.models["source"] == "estimate"].set_index(["model", "metric"])
    for r in est["models"]:
        for fig in ("mean_score", "pass_rate"):
            got = m.loc[(r["model"], fig)]
            assert got["value"] == r[fig]["estimate"]
            assert [got["ci_low"], got["ci_high"]] == r[fig]["ci"]
            assert ACTIVE_DESIGN in got["note"]
    assert d.overview["design"] == "active" and "design" not in u.overview
    assert any(n.startswith(ACTIVE_DESIGN) for n in d.notes)
    assert not any(ACTIVE_DESIGN in n for n in u.notes)
    others = d.models.loc[d.models["source"] != "estimate", "note"]
    assert others.str.contains("not design-weighted").all()
    assert d.alt_test is None or "not design-weighted" in d.alt_test["design_note"]
    ag = d.agreement
    jrow = ag.loc[(ag["by"] == "overall") & (ag["comparison"] == "judge")]
    kap = jrow.set_index("statistic").loc["cohen_kappa"]
    assert "weighted by inclusion probability" in kap["note"]
    assert kap["ci_low"] < kap["value"] < kap["ci_high"]
    assert ag.loc[ag["comparison"] != "judge", "note"].str.contains("not design-weighted").all()
    # an empty design is the uniform dashboard, number for number
    e = compute_dashboard(f, judge="judge", n_boot=20, design=({}, {}))
    pd.testing.assert_frame_equal(e.models, u.models)
    pd.testing.assert_frame_equal(e.agreement, u.agreement)
    pd.testing.assert_frame_equal(e.judges, u.judges)
    assert e.notes == u.notes


@pytest.mark.slow
def test_report_loads_the_design_and_shows_the_weighted_estimate(
    db_url: str, tmp_path: Path
) -> None:
    """Through the database on both backends: ``assign --strategy active``, the experts
    grade what they were sent (the truth), then ``gradercal report --json`` shows the
    estimate of ``gradercal estimate --json`` (weighted), not the unweighted one."""
    bench = tmp_path / "bench"
    _run(
        [
            "samples", "generate", "-o", str(bench), "--tasks", "80", "--criteria-per-task", "6",
            "--responses-per-task", "2", "--human-graders", "0", "--artifacts-per-task", "0",
            "--seed", "5",
        ]
    )  # fmt: skip
    _run(["import", str(bench), "--db", db_url])
    args = [
        "assign", "--db", db_url, "--strategy", "active", "--budget", "50",
        "--graders", "ana,ben", "--overlap", "1", "--seed", "11", "--json",
    ]  # fmt: skip
    assigned = {a["response_id"]: a for a in json.loads(_run(args))["assigned"]}
    judged = {
        (j["response_id"], j["criterion_id"])
        for j in map(json.loads, (bench / "judgments.jsonl").read_text("utf-8").splitlines())
    }
    rows = []
    for line in (bench / "truth.jsonl").read_text("utf-8").splitlines():
        t = json.loads(line)
        if t["response_id"] in assigned and (t["response_id"], t["criterion_id"]) in judged:
            rows.append(
                json.dumps(
                    {
                        "response_id": t["response_id"],
                        "criterion_id": t["criterion_id"],
                        "grader": assigned[t["response_id"]]["graders"][0],
                        "grader_kind": "human",
                        "met": t["met"],
                    }
                )
            )
    (tmp_path / "human.jsonl").write_text("\n".join(rows) + "\n", "utf-8")
    _run(["import", str(tmp_path / "human.jsonl"), "--db", db_url])
    est = json.loads(_run(["estimate", "--db", db_url, "--judge", "judge", "--json"]))
    assert est["design"] == "active"
    html = tmp_path / "r.html"
    rep = json.loads(
        _run(["report", "--db", db_url, "--judge", "judge", "-o", str(html), "--json"])
    )
    dash = rep["dashboard"]
    assert dash["overview"]["design"] == "active"
    text = html.read_text("utf-8")
    assert ACTIVE_DESIGN in text and "not design-weighted" in text
    shown = {(r["model"], r["metric"]): r for r in dash["models"] if r["source"] == "estimate"}
    from gradercal.db.repo import Repository
    from gradercal.db.session import open_database

    db = open_database(db_url)
    try:
        frames = Repository(db).load_frames()
    finally:
        db.dispose()
    unweighted = {r["model"]: r for r in estimate_report(frames, "judge")["models"]}
    differs = 0
    for r in est["models"]:
        for fig in ("mean_score", "pass_rate"):
            s = shown[(r["model"], fig)]
            assert s["value"] == pytest.approx(r[fig]["estimate"], abs=1e-12)
            assert [s["ci_low"], s["ci_high"]] == pytest.approx(r[fig]["ci"], abs=1e-12)
            old = unweighted[r["model"]][fig]["estimate"]
            differs += not math.isclose(old, r[fig]["estimate"], abs_tol=1e-9)
    assert differs  # the unweighted figure the dashboard showed before is another number


@pytest.mark.slow
def test_the_unweighted_estimate_the_dashboard_showed_is_biased_under_an_active_design() -> None:
    """Known truth, 150 runs: ``N = 4000`` responses of 6 criteria (quality
    ``q ~ Beta(2, 2)``, truth ``Bernoulli(q)``); a lenient judge (says met on an unmet
    criterion with a per-response rate ``e``: 10% of responses hard, ``e ~ U(0.2, 0.45)``,
    the rest ``e ~ U(0, 0.01)``) with an informative uncertainty ``e(1 − e)``; an active
    draw of 100. The dashboard's estimate before (``ppi_mean`` on the drawn responses as
    if uniform) against the weighted one it shows now (``active_ppi_mean``, as
    ``gradercal estimate``)."""
    from gradercal.analysis.estimate import active_ppi_mean, ppi_mean
    from gradercal.ops.active import active_probabilities

    n, crit, budget = 4000, 6, 100
    rng = np.random.default_rng(11)
    err: dict[str, list[float]] = {"w_s": [], "u_s": [], "w_p": [], "u_p": []}
    for _ in range(150):
        hard = rng.random(n) < 0.1
        e = np.where(hard, rng.uniform(0.2, 0.45, n), rng.uniform(0.0, 0.01, n))
        q = rng.beta(2, 2, n)
        truth = rng.random((n, crit)) < q[:, None]
        judge = truth | (rng.random((n, crit)) < e[:, None])
        ys, fs = truth.mean(1), judge.mean(1)
        yp, fp = (ys >= 0.5).astype(np.float64), (fs >= 0.5).astype(np.float64)
        p, _floor = active_probabilities(np.sqrt(e * (1 - e)), budget)
        take = rng.random(n) < p
        for fig, y, f in (("s", ys, fs), ("p", yp, fp)):
            binary = True if fig == "p" else None
            w = active_ppi_mean(y[take], f[take], p[take], f, binary=binary)
            u = ppi_mean(y[take], f[take], f[~take], binary=binary)
            assert w.estimate is not None and u.estimate is not None
            err["w_" + fig].append(w.estimate - float(y.mean()))
            err["u_" + fig].append(u.estimate - float(y.mean()))
    bias = {k: float(np.mean(v)) for k, v in err.items()}
    se = {k: float(np.std(v) / np.sqrt(len(v))) for k, v in err.items()}
    print({k: (round(bias[k], 4), round(se[k], 4)) for k in bias})
    for fig in ("s", "p"):
        assert bias["u_" + fig] < -0.03 and bias["u_" + fig] < -10 * se["u_" + fig]
        assert abs(bias["w_" + fig]) < 3 * se["w_" + fig] + 0.002
