"""The data of a calibration: the judge's verdicts and the experts' consensus, per item
(criterion of a response) and per response.

**The judge's probability** ``s`` of "met" on one criterion: ``confidence`` when the judge
said met, ``1 − confidence`` when it said not met (judge confidences are confidences in
the verdict given); 1 or 0 when it gave no confidence. With several judge graders
(``judge=[…]``) ``s`` is the *vote share*, the fraction of them saying met, and the raw
verdict is the strict majority.

**Calibrated response scores** of the criterion-level methods: with ``p_c`` the
calibrated probability of criterion ``c`` (0/1 for ``threshold``), credit
``points_c · (p_c + (1 − p_c) f_c)`` where ``f_c`` is the judge's own partial credit when
its verdict is below the top level of a multi-level criterion (0 otherwise); auto
criteria keep their credit from the answer; score = clip(Σ credits / Σ positive points,
0, 1) — with ``p_c`` the judge's raw verdicts this is exactly
:func:`gradercal.analysis.scoring.response_scores` of the judge.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from gradercal._util.distinct import map_distinct
from gradercal.analysis.calibration._types import FloatArray
from gradercal.analysis.context import AnalysisContext
from gradercal.analysis.scoring import auto_verdicts, response_scores
from gradercal.analysis.verdicts import consensus_verdicts, human_graders, pair, verdicts
from gradercal.frames import Frames, object_frame

__all__ = ["UNTAGGED", "calibrated_response_scores", "item_table", "response_table"]

#: Items labelled "(untagged)" have no tag.
UNTAGGED = "(untagged)"


def _primary_tag(tags: Any, prefix: str | None) -> str:
    seq = list(tags) if tags else []
    if prefix is not None:
        seq = [t for t in seq if str(t).startswith(prefix)]
    return str(seq[0]) if seq else UNTAGGED


def item_table(
    frames: Frames,
    judge: str | Sequence[str],
    humans: Sequence[str] | None = None,
    *,
    tag_prefix: str | None = None,
    context: AnalysisContext | None = None,
) -> pd.DataFrame:
    """The judge's verdict on every judgment criterion of every response it graded.

    Args:
        frames: The benchmark frames.
        judge: A judge grader, or several (their vote share is the score).
        humans: The graders of the consensus (default: every human grader).
        tag_prefix: The *group* of an item is its criterion's first tag (with this
            prefix, e.g. ``"axis:"``, when given); ``"(untagged)"`` without one.
        context: An ``AnalysisContext`` shared by calls on the same frames (e.g. within one
            report) to reuse the verdict and consensus tables; None: compute afresh.

    Returns:
        One row per item the judge(s) rated: ``response_id``, ``task_id``, ``model``,
        ``criterion_id``, ``points``, ``group``, ``judge_met`` (bool), ``judge_score``
        (the probability ``s`` of the module docstring), ``judge_partial`` (the judge's
        partial credit ``f`` in [0, 1)), ``human_met`` (1.0/0.0, NaN when the human
        consensus is undecided or absent). With several judges, items need a verdict
        from every one of them.
    """
    judges = [judge] if isinstance(judge, str) else list(judge)
    names = [
        h
        for h in (list(humans) if humans is not None else human_graders(frames))
        if h not in judges
    ]
    judged = verdicts(frames, judges, context=context)
    v = _scored_verdicts(frames, judges, judged)
    if len(judges) == 1:
        out = v.rename(columns={"met": "judge_met"})
        items = judged  # the same rows: pair them by the context's unit positions
    else:
        out = items = _votes(v, len(judges))
    cons = consensus_verdicts(frames, names, context=context) if names else None
    if cons is not None and not cons.empty:
        i, c = pair(context, items, cons, keep_unmatched=True)
        if len(i) != len(out) or (i != np.arange(len(out))).any():
            out = out.iloc[i].reset_index(drop=True)
        human = np.where(c >= 0, cons["met"].to_numpy(np.float64)[c], np.nan)
    else:
        human = np.full(len(out), np.nan)
    return object_frame(
        {
            "response_id": out["response_id"].to_numpy(object),
            "task_id": out["task_id"].to_numpy(object),
            "model": out["model"].to_numpy(object),
            "criterion_id": out["criterion_id"].to_numpy(object),
            "points": out["points"].to_numpy(np.int64),
            "group": map_distinct(
                out["tags"].to_numpy(object), lambda t: _primary_tag(t, tag_prefix)
            ),
            "judge_met": out["judge_met"].to_numpy(bool),
            "judge_score": out["judge_score"].to_numpy(np.float64),
            "judge_partial": out["judge_partial"].to_numpy(np.float64),
            "human_met": human,
        }
    )


def _scored_verdicts(frames: Frames, judges: list[str], judged: pd.DataFrame) -> pd.DataFrame:
    """The judges' verdicts ``judged`` (same rows, in order) with ``judge_score`` (the
    probability ``s`` of the module docstring) and ``judge_partial`` (partial credit ``f``)."""
    keys = ["response_id", "criterion_id"]
    raw = frames.judgments.loc[frames.judgments["grader"].isin(judges)]
    raw = raw.drop_duplicates([*keys, "grader"], keep="last").loc[:, [*keys, "grader", "level"]]
    # one raw judgment per verdict at most: the rows of ``judged``, in order
    v = judged.merge(raw, on=[*keys, "grader"], how="left")
    top = np.clip(v["levels"].to_numpy(np.float64), 2.0, None) - 1.0
    level = np.asarray(v["level"].astype("Float64").to_numpy(np.float64, na_value=np.nan))
    partial = np.where(
        ~v["met"].to_numpy(bool) & ~np.isnan(level), np.clip(level, 0.0, top) / top, 0.0
    )
    conf = v["confidence"].to_numpy(np.float64)
    met = v["met"].to_numpy(bool)
    score = np.where(np.isnan(conf), met.astype(np.float64), np.where(met, conf, 1.0 - conf))
    return v.assign(judge_score=np.clip(score, 0.0, 1.0), judge_partial=partial)


def _votes(v: pd.DataFrame, n_judges: int) -> pd.DataFrame:
    """One row per item every one of ``n_judges`` judges rated: ``judge_met`` when most
    said met, ``judge_score`` their share saying met, ``judge_partial`` the mean credit."""
    keys = ["response_id", "criterion_id"]
    g = v.groupby(keys, sort=False)
    agg = g.agg(
        n=("grader", "size"),
        share=("met", "mean"),
        partial=("judge_partial", "mean"),
    ).reset_index()
    agg = agg.loc[agg["n"] == n_judges]
    first = v.drop_duplicates(keys).drop(columns=["met", "judge_score", "judge_partial"])
    out = first.merge(agg, on=keys, how="inner")
    return out.assign(
        judge_met=out["share"].to_numpy(np.float64) > 0.5,
        judge_score=out["share"].to_numpy(np.float64),
        judge_partial=out["partial"].to_numpy(np.float64),
    )


def response_table(
    frames: Frames,
    judge: str,
    humans: Sequence[str] | None = None,
    *,
    context: AnalysisContext | None = None,
) -> pd.DataFrame:
    """Rubric scores of every response under the judge and under the human consensus.

    ``context``: see :func:`item_table`.

    Returns:
        ``response_id``, ``task_id``, ``model``, ``judge_score``, ``human_score`` (NaN
        when the grader's score is undefined or incomplete), one row per response.
    """
    names = [
        h for h in (list(humans) if humans is not None else human_graders(frames)) if h != judge
    ]
    cons = response_scores(frames, "consensus", humans=names, context=context) if names else None
    js = response_scores(frames, judge, include_ungraded=True, context=context)
    out = js.loc[:, ["response_id", "task_id", "model", "score"]].rename(
        columns={"score": "judge_score"}
    )
    if cons is not None and not cons.empty:
        out = out.merge(
            cons.loc[:, ["response_id", "score"]].rename(columns={"score": "human_score"}),
            on="response_id",
            how="left",
        )
    else:
        out = out.assign(human_score=np.nan)
    return out.reset_index(drop=True)


def calibrated_response_scores(
    frames: Frames,
    items: pd.DataFrame,
    probability: npt.ArrayLike,
    *,
    context: AnalysisContext | None = None,
) -> pd.DataFrame:
    """Response scores when each judged criterion is met with a calibrated probability.

    Args:
        frames: The benchmark frames.
        items: An :func:`item_table` (its ``points`` and ``judge_partial`` are used).
        probability: ``p_c`` for each row of ``items``.
        context: See :func:`item_table`.

    Returns:
        ``response_id``, ``task_id``, ``model``, ``score`` for every response of the
        frames; ``score`` is NaN when the task has no positive points or when a
        judgment criterion of the response has no row in ``items`` (see the module
        docstring for the formula).
    """
    p = np.asarray(probability, dtype=np.float64)
    resp, auto_credit, need, pos = credit_parts(frames, context)
    credit = items["points"].to_numpy(np.float64) * (
        p + (1.0 - p) * items["judge_partial"].to_numpy(np.float64)
    )
    it = object_frame({"response_id": items["response_id"].to_numpy(object), "credit": credit})
    per = it.groupby("response_id").agg(credit=("credit", "sum"), n=("credit", "size"))
    rid = resp["response_id"]
    earned = rid.map(per["credit"]).fillna(0.0).to_numpy(np.float64) + auto_credit
    n_items = rid.map(per["n"]).fillna(0).to_numpy(np.float64)
    ok = (pos > 0) & (n_items == need)
    score = np.full(len(resp), np.nan)
    score[ok] = np.clip(earned[ok] / pos[ok], 0.0, 1.0)
    return pd.DataFrame(
        {
            "response_id": rid.to_numpy(object),
            "task_id": resp["task_id"].to_numpy(object),
            "model": resp["model"].to_numpy(object),
            "score": score,
        }
    )


def credit_parts(
    frames: Frames, context: AnalysisContext | None = None
) -> tuple[pd.DataFrame, FloatArray, FloatArray, FloatArray]:
    """The parts of a response score that do not depend on the judged criteria.

    Returns:
        The responses (``response_id``, ``task_id``, ``model``; one row each), and per
        response its auto credit, its number of judgment criteria and the positive
        points of its task.
    """
    crit = frames.criteria.drop_duplicates(["task_id", "criterion_id"], keep="last")
    resp = frames.responses.drop_duplicates("response_id").loc[
        :, ["response_id", "task_id", "model"]
    ]
    positive = (
        crit.assign(pos=np.clip(crit["points"].to_numpy(np.float64), 0, None))
        .groupby("task_id")["pos"]
        .sum()
    )
    n_judged = (crit["kind"] != "auto").groupby(crit["task_id"]).sum()
    auto = auto_verdicts(frames, context=context)
    auto = auto.merge(resp, on="response_id").merge(
        crit.loc[:, ["task_id", "criterion_id", "points"]], on=["task_id", "criterion_id"]
    )
    auto_credit = (
        (auto["points"] * auto["met"].astype(np.float64)).groupby(auto["response_id"]).sum()
    )
    rid = resp["response_id"]
    return (
        resp,
        np.asarray(rid.map(auto_credit).fillna(0.0).to_numpy(np.float64), np.float64),
        np.asarray(resp["task_id"].map(n_judged).fillna(0).to_numpy(np.float64), np.float64),
        np.asarray(resp["task_id"].map(positive).fillna(0.0).to_numpy(np.float64), np.float64),
    )
