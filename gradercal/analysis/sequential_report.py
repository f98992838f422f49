"""Confidence sequences for the headline figures (``estimate --sequential``, ``progress``).

Applies :mod:`gradercal.analysis.sequential` to a benchmark:

* **per model, mean score and pass rate**: the prediction-powered confidence sequence
  (:func:`~gradercal.analysis.sequential.ppi_confidence_sequence`) of the experts'
  consensus (the same per-response values as :func:`gradercal.analysis.estimate.estimate_table`),
  the labelled responses taken in the order their consensus was completed (the time of
  the last expert verdict on the response; responses without a time come last, by id),
  the judge's mean over every response of the model as ``m_f``. The sequence's bounds
  after the last label are ``cs``; ``half_width`` is half their distance;
* **judge–expert agreement**: percent agreement of the judge with the consensus verdict
  on each (response, criterion) unit with a decided consensus, as a bounded mean (the
  empirical-Bernstein sequence on 0/1 values) in the same order. It is the headline
  agreement's anytime-valid companion for a *percent agreement*, not for κ (a ratio of
  means, for which no sequence is computed);
* **per task, the acceptance decision at the bar**: the reviewers' percent agreement on
  the task (per unit rated at least twice: the share of agreeing pairs of verdicts, in
  [0, 1]) as a bounded mean in completion order; ``decided`` is ``"above"`` when the
  sequence's lower bound is at least the bar, ``"below"`` when its upper bound is under
  it — more grading will not change the task's decision at the bar — else None.

The sequences assume the labels arrive in an order unrelated to their values (a uniform
random assignment, as ``gradercal assign`` makes); the units of one task are correlated,
so a task-level sequence is anytime-valid for the mean of the units as sampled.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from gradercal.analysis.estimate import estimate_table
from gradercal.analysis.scoring import PASS_EPSILON
from gradercal.analysis.sequential import eb_confidence_sequence, ppi_confidence_sequence
from gradercal.analysis.verdicts import human_graders
from gradercal.frames import Frames

__all__ = ["ORDER", "sequential_report"]

ORDER = "consensus completion time"


def _order(ids: Sequence[str], times: Mapping[str, Any]) -> list[int]:
    """Positions of ``ids`` sorted by completion time (missing last), then id."""
    far = pd.Timestamp.max.tz_localize("UTC")

    def key(i: int) -> tuple[Any, str]:
        t = times.get(ids[i])
        ts = far if t is None else pd.Timestamp(t)
        if ts.tzinfo is None:
            ts = ts.tz_localize("UTC")
        return ts, ids[i]

    return sorted(range(len(ids)), key=key)


def _cs_dict(low: float, high: float, n: int) -> dict[str, Any]:
    return {"cs": [low, high], "half_width": (high - low) / 2.0, "n": n}


def sequential_report(
    frames: Frames,
    judge: str,
    humans: Sequence[str] | None = None,
    *,
    times: Mapping[str, Any] | None = None,
    alpha: float = 0.05,
    bar: float = 0.90,
) -> dict[str, Any]:
    """The confidence sequences of the headline figures (see the module docstring).

    ``times``: each response id's consensus completion time (None: the order of the
    response ids). Returns ``{"order", "alpha", "models": {model: {"mean_score": {"cs",
    "half_width", "n"}, "pass_rate": …}}, "agreement": {"statistic", "estimate", "cs",
    "half_width", "n"}, "tasks": [{"task_id", "agreement", "cs", "n", "decided"}], "bar"}``.
    """
    times = times or {}
    names = [
        h for h in (list(humans) if humans is not None else human_graders(frames)) if h != judge
    ]
    t = estimate_table(frames, judge, names)
    cut = float(frames.pass_threshold) - PASS_EPSILON
    models: dict[str, Any] = {}
    for model in sorted({str(m) for m in t["model"]}):
        sel = t.loc[t["model"] == model]
        lab = sel.loc[sel["human_score"].notna()]
        ids = [str(x) for x in lab["response_id"]]
        pos = _order(ids, times)
        row: dict[str, Any] = {}
        for fig in ("mean_score", "pass_rate"):
            if fig == "mean_score":
                y = lab["human_score"].to_numpy(np.float64)
                f = lab["judge_score"].to_numpy(np.float64)
                f_all = sel["judge_score"].to_numpy(np.float64)
            else:
                y = (lab["human_score"].to_numpy(np.float64) >= cut).astype(np.float64)
                f = (lab["judge_score"].to_numpy(np.float64) >= cut).astype(np.float64)
                f_all = (sel["judge_score"].to_numpy(np.float64) >= cut).astype(np.float64)
            if len(y) == 0:
                row[fig] = {"cs": None, "half_width": None, "n": 0}
                continue
            cs = ppi_confidence_sequence(
                np.clip(y[pos], 0, 1), np.clip(f[pos], 0, 1), float(np.mean(f_all)), alpha=alpha
            )
            row[fig] = _cs_dict(*cs.last(), len(y))
        models[model] = row
    agreement, tasks = _agreement(frames, judge, names, times, alpha, bar)
    return {
        "order": ORDER,
        "alpha": alpha,
        "bar": bar,
        "models": models,
        "agreement": agreement,
        "tasks": tasks,
    }


def _agreement(
    frames: Frames,
    judge: str,
    names: Sequence[str],
    times: Mapping[str, Any],
    alpha: float,
    bar: float,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    crit = frames.criteria.loc[frames.criteria["kind"] == "judgment", ["task_id", "criterion_id"]]
    j = frames.judgments
    j = j.loc[j["met"].notna(), ["response_id", "criterion_id", "grader", "met"]]
    j = j.merge(frames.responses[["response_id", "task_id"]], on="response_id").merge(
        crit, on=["task_id", "criterion_id"]
    )
    j["met"] = j["met"].astype(bool)
    key = ["response_id", "criterion_id"]
    hum = j.loc[j["grader"].isin(list(names))]
    agg = (
        hum.groupby(key, sort=False)
        .agg(k=("met", "size"), c=("met", "sum"), task_id=("task_id", "first"))
        .reset_index()
    )
    agg["rank"] = 0
    rids = [str(x) for x in agg["response_id"]]
    order = _order(rids, times)
    agg.loc[agg.index[order], "rank"] = np.arange(len(order))
    agg = agg.sort_values("rank", kind="stable")
    # judge against the decided consensus
    dec = agg.loc[agg["c"] * 2 != agg["k"]].assign(cons=lambda x: x["c"] * 2 > x["k"])
    both = dec.merge(
        j.loc[j["grader"] == judge, [*key, "met"]], on=key, how="inner", sort=False
    ).sort_values("rank", kind="stable")
    agreement: dict[str, Any] = {"statistic": "percent agreement (judge vs consensus)"}
    if len(both):
        vals = (both["met"].to_numpy(bool) == both["cons"].to_numpy(bool)).astype(np.float64)
        cs = eb_confidence_sequence(vals, alpha=alpha)
        agreement.update(estimate=float(vals.mean()), **_cs_dict(*cs.last(), len(vals)))
    else:
        agreement.update(estimate=None, cs=None, half_width=None, n=0)
    tasks: list[dict[str, Any]] = []
    multi = agg.loc[agg["k"] >= 2]
    k, c = multi["k"].to_numpy(float), multi["c"].to_numpy(float)
    share = (c * (c - 1) / 2 + (k - c) * (k - c - 1) / 2) / (k * (k - 1) / 2)
    multi = multi.assign(share=share)
    for task_id, g in multi.groupby("task_id", sort=True):
        v = g.sort_values("rank", kind="stable")["share"].to_numpy(np.float64)
        cs = eb_confidence_sequence(np.clip(v, 0, 1), alpha=alpha)
        low, high = cs.last()
        decided = "above" if low >= bar else ("below" if high < bar else None)
        tasks.append(
            {
                "task_id": str(task_id),
                "agreement": float(v.mean()),
                "cs": [low, high],
                "n": len(v),
                "decided": decided,
            }
        )
    return agreement, tasks
