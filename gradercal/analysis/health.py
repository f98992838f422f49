"""Criterion health: the rubric items to fix first.

For every judgment criterion of every task (criterion ids are unique within a task):

* ``human_agreement`` — Gwet's percent agreement of the human verdicts on the
  criterion's units (its responses): per response rated by ``r ≥ 2`` humans, of whom
  ``r₁`` say met and ``r₀`` not met, the share of agreeing ordered pairs
  ``(r₁(r₁ − 1) + r₀(r₀ − 1)) / (r(r − 1))``, averaged over those responses
  (:func:`gradercal.stats.percent_agreement` on this criterion alone). None when no
  response has two human verdicts.
* ``judge_disagreement`` — the share of the criterion's responses with a judge verdict
  and a decided human consensus (:func:`gradercal.analysis.agreement.consensus_verdicts`) on
  which the judge differs from the consensus. None without such responses.
* ``disagreement = max(1 − human_agreement, judge_disagreement)`` over the defined
  ones, and **impact** ``= |points| × disagreement`` — the expected rubric points at
  stake on a response.
* A criterion is **flagged** when the experts agree less than ``bar`` (default 0.9, the
  acceptance bar expert-written benchmarks use for their reviewers) or the judge agrees
  with the consensus less than ``bar`` (``1 − judge_disagreement < bar``).

Criteria are ranked by impact (then by |points|, then task and rubric order). Each
flagged criterion lists its disagreeing responses — those where the humans split, or
where the judge departs from the consensus — with every grader's verdict and
rationale. Per-criterion figures rest on few responses (``n_responses``): read them as
pointers, not estimates.

This module imports pandas, numpy and gradercal's core only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from gradercal.analysis.context import AnalysisContext
from gradercal.analysis.verdicts import (
    consensus_verdicts,
    grader_rows,
    human_graders,
    pair,
    unit_positions,
    verdicts,
)
from gradercal.frames import Frames, object_frame

__all__ = [
    "DEFAULT_BAR",
    "CriterionHealth",
    "criterion_health",
    "health_report",
    "health_table",
]

#: Agreement below this flags a criterion.
DEFAULT_BAR = 0.9


@dataclass(frozen=True)
class CriterionHealth:
    """Health figures of one criterion of one task (see the module docstring).

    Attributes:
        task_id, criterion_id, text, points, tags: The criterion.
        n_responses: Responses with a human or judge verdict on it.
        n_paired: Responses with two or more human verdicts.
        human_agreement: Gwet's percent agreement of the humans (None: undefined).
        n_judged: Responses with a judge verdict and a decided consensus.
        judge_disagreement: Share of those where the judge differs (None: undefined).
        disagreement: The larger of ``1 − human_agreement`` and ``judge_disagreement``.
        impact: ``|points| × disagreement``.
        flags: ``"experts below bar"`` and/or ``"judge departs from consensus"``.
        disagreements: The disagreeing responses with every grader's verdict.
    """

    task_id: str
    criterion_id: str
    text: str
    points: int
    tags: tuple[str, ...]
    n_responses: int
    n_paired: int
    human_agreement: float | None
    n_judged: int
    judge_disagreement: float | None
    disagreement: float | None
    impact: float | None
    flags: list[str] = field(default_factory=list)
    disagreements: list[dict[str, Any]] = field(default_factory=list)

    @property
    def flagged(self) -> bool:
        return bool(self.flags)

    def to_dict(self, details: bool = True) -> dict[str, Any]:
        """JSON-able form."""
        out: dict[str, Any] = {
            "task_id": self.task_id,
            "criterion_id": self.criterion_id,
            "text": self.text,
            "points": self.points,
            "tags": list(self.tags),
            "n_responses": self.n_responses,
            "n_paired": self.n_paired,
            "human_agreement": self.human_agreement,
            "n_judged": self.n_judged,
            "judge_disagreement": self.judge_disagreement,
            "disagreement": self.disagreement,
            "impact": self.impact,
            "flags": list(self.flags),
        }
        if details:
            out["disagreements"] = self.disagreements
        return out


def _text(x: Any) -> str | None:
    return None if x is None or (isinstance(x, float) and np.isnan(x)) else str(x)


def criterion_health(
    frames: Frames,
    judge: str | None = None,
    humans: Sequence[str] | None = None,
    *,
    bar: float = DEFAULT_BAR,
    details: bool | int = True,
    context: AnalysisContext | None = None,
) -> list[CriterionHealth]:
    """Health of every judgment criterion, ranked by impact.

    Args:
        frames: The benchmark frames.
        judge: The judge to compare with the consensus (None: humans only).
        humans: The human graders (default: every grader of kind ``"human"``).
        bar: The agreement bar (0 < bar ≤ 1).
        details: List the disagreeing verdicts of every flagged criterion (True), of
            the first N flagged ones in rank order (an int), or of none (False).
        context: An ``AnalysisContext`` shared by calls on the same frames (e.g. within one
            report) to reuse the verdict and consensus tables; None: compute afresh.

    Returns:
        Every judgment criterion with at least one verdict, most impactful first
        (criteria with undefined impact last).
    """
    ranked, v, names, cons = _health_parts(frames, judge, humans, bar, context)
    if ranked is None:
        return []
    out = [
        CriterionHealth(
            task_id=task,
            criterion_id=cid,
            text=text,
            points=points,
            tags=tags,
            n_responses=n_resp,
            n_paired=npaired,
            human_agreement=None if np.isnan(ha) else ha,
            n_judged=nj,
            judge_disagreement=None if np.isnan(jd) else jd,
            disagreement=None if np.isnan(dis) else dis,
            impact=None if np.isnan(imp) else imp,
            flags=list(flags),
        )
        for task, cid, text, points, tags, n_resp, npaired, ha, nj, jd, dis, imp, flags in zip(
            *(ranked[c].tolist() for c in HEALTH_TABLE_COLUMNS[:-1]), strict=True
        )
    ]
    flagged = [h for h in out if h.flagged]
    if details is not True:
        flagged = flagged[: int(details)]
    if flagged:
        cons_map = {
            (a, b): bool(m)
            for a, b, m in zip(cons["response_id"], cons["criterion_id"], cons["met"], strict=True)
        }
        _add_details(flagged, v, names, judge, cons_map)
    return out


#: The columns of :func:`health_table`, in order (``flagged`` last).
HEALTH_TABLE_COLUMNS = (
    "task_id",
    "criterion_id",
    "text",
    "points",
    "tags",
    "n_responses",
    "n_paired",
    "human_agreement",
    "n_judged",
    "judge_disagreement",
    "disagreement",
    "impact",
    "flags",
    "flagged",
)


def health_table(
    frames: Frames,
    judge: str | None = None,
    humans: Sequence[str] | None = None,
    *,
    bar: float = DEFAULT_BAR,
    context: AnalysisContext | None = None,
) -> pd.DataFrame:
    """:func:`criterion_health` without details as one table, in the same rank order.

    One row per criterion with the columns of :class:`CriterionHealth` (missing figures
    NaN, ``flags`` a tuple) and ``flagged``; built column-wise, for large benchmarks.
    """
    ranked, _, _, _ = _health_parts(frames, judge, humans, bar, context)
    if ranked is None:
        return pd.DataFrame({c: pd.Series([], dtype=object) for c in HEALTH_TABLE_COLUMNS})
    return ranked


def _health_parts(
    frames: Frames,
    judge: str | None,
    humans: Sequence[str] | None,
    bar: float,
    context: AnalysisContext | None,
) -> tuple[pd.DataFrame | None, pd.DataFrame, list[str], pd.DataFrame]:
    """The ranked table (None: no verdicts), the verdicts, the humans and the consensus."""
    if not 0.0 < bar <= 1.0:
        raise ValueError("bar must be in (0, 1]")
    names = [
        h for h in (list(humans) if humans is not None else human_graders(frames)) if h != judge
    ]
    graders = [*names, *([judge] if judge is not None else [])]
    v = verdicts(frames, graders, context=context)
    if v.empty:
        return None, v, names, pd.DataFrame(columns=["response_id", "criterion_id", "met"])
    keys = ["response_id", "criterion_id"]
    pos = unit_positions(context, v)
    hmask = v["grader"].isin(names).to_numpy(bool)
    hv = v.loc[hmask, [*keys, "task_id", "met"]]  # the columns used below (no full copy)
    # Human agreement per unit.
    if pos is not None and not hv["task_id"].isna().any():
        per_unit = _per_unit_counts(hv, pos[0][hmask], [*keys, "task_id"])
    else:
        per_unit = (
            hv.groupby([*keys, "task_id"], sort=False)["met"].agg(["size", "sum"]).reset_index()
        )
    r = per_unit["size"].to_numpy(np.float64)
    r1 = per_unit["sum"].to_numpy(np.float64)
    r0 = r - r1
    two = r >= 2
    share = np.full(len(r), np.nan)
    share[two] = (r1[two] * (r1[two] - 1) + r0[two] * (r0[two] - 1)) / (r[two] * (r[two] - 1))
    per_unit = per_unit.assign(share=share, paired=two)
    hagg = per_unit.groupby(["task_id", "criterion_id"]).agg(
        n_paired=("paired", "sum"), human_agreement=("share", "mean")
    )
    # Judge vs consensus per unit.
    jagg = None
    cons = (
        consensus_verdicts(frames, names, context=context)
        if names
        else pd.DataFrame(columns=[*keys, "met"])
    )
    if judge is not None:
        # The judge's rows with a consensus, in the judge's order.
        jrows = grader_rows(context, v, judge)
        i, c = pair(context, v, cons, left_rows=jrows)
        jc = v.iloc[jrows[i]].loc[:, [*keys, "task_id", "met"]].reset_index(drop=True)
        jc = jc.assign(differs=jc["met"].to_numpy(bool) != cons["met"].to_numpy(bool)[c])
        jagg = jc.groupby(["task_id", "criterion_id"]).agg(
            n_judged=("differs", "size"), judge_disagreement=("differs", "mean")
        )
    units = v.groupby(["task_id", "criterion_id"])["response_id"].nunique().rename("n_responses")
    table = units.reset_index()
    if len(hagg):
        table = table.merge(hagg.reset_index(), on=["task_id", "criterion_id"], how="left")
    else:
        table = table.assign(n_paired=0, human_agreement=np.nan)
    if jagg is not None and len(jagg):
        table = table.merge(jagg.reset_index(), on=["task_id", "criterion_id"], how="left")
    else:
        table = table.assign(n_judged=0, judge_disagreement=np.nan)
    crit = frames.criteria.loc[frames.criteria["kind"] != "auto"].drop_duplicates(
        ["task_id", "criterion_id"], keep="last"
    )
    table = table.merge(
        crit.loc[:, ["task_id", "criterion_id", "text", "points", "tags"]],
        on=["task_id", "criterion_id"],
        how="inner",
    )
    return _ranked(frames, table, bar), v, names, cons


def _per_unit_counts(hv: pd.DataFrame, units: Any, cols: list[str]) -> pd.DataFrame:
    """``hv.groupby(cols, sort=False)["met"].agg(["size", "sum"]).reset_index()`` by positions.

    ``units`` is the unit position of every row; ``cols`` are one-to-one with the unit
    and never missing, so the groups, their order (first appearance) and counts are the
    same as grouping by the strings.
    """
    codes, _ = pd.factorize(np.asarray(units, dtype=np.int64), sort=False)
    codes = np.asarray(codes, dtype=np.int64)
    _, first = np.unique(codes, return_index=True)
    size = np.bincount(codes, minlength=len(first)).astype(np.int64)
    met = np.bincount(codes, weights=hv["met"].to_numpy(np.float64), minlength=len(first))
    out = {c: hv[c].to_numpy(object)[first] for c in cols}
    return object_frame({**out, "size": size, "sum": met.astype(np.int64)})


def _ranked(frames: Frames, table: pd.DataFrame, bar: float) -> pd.DataFrame:
    """The per-criterion figures, flags and rank order (vectorised)."""
    n = len(table)
    ha = table["human_agreement"].to_numpy(np.float64)
    jd = table["judge_disagreement"].to_numpy(np.float64)
    npaired = table["n_paired"].to_numpy(np.float64)
    nj = table["n_judged"].to_numpy(np.float64)
    points = np.asarray([int(p) for p in table["points"].tolist()], dtype=np.int64)
    # The larger of the expert disagreement (1 - agreement) and the judge's, ignoring
    # whichever is undefined.
    h_dis = 1.0 - ha
    dis = np.where(np.isnan(h_dis), jd, np.where(np.isnan(jd), h_dis, np.maximum(h_dis, jd)))
    impact = np.abs(points) * dis
    below = ~np.isnan(ha) & (ha < bar)
    departs = ~np.isnan(jd) & (1.0 - jd < bar)
    flag_sets = {
        (False, False): (),
        (True, False): ("experts below bar",),
        (False, True): ("judge departs from consensus",),
        (True, True): ("experts below bar", "judge departs from consensus"),
    }
    flags = [flag_sets[(b, d)] for b, d in zip(below.tolist(), departs.tolist(), strict=True)]
    order = {
        key: i
        for i, key in enumerate(
            zip(frames.criteria["task_id"], frames.criteria["criterion_id"], strict=True)
        )
    }
    tasks = [str(t) for t in table["task_id"].tolist()]
    cids = [str(c) for c in table["criterion_id"].tolist()]
    rubric = np.asarray([order.get(k, 0) for k in zip(tasks, cids, strict=True)], dtype=np.int64)
    undefined = np.isnan(impact)
    # Sorted by: defined impact first, impact descending, |points| descending, rubric order.
    rank = np.lexsort((rubric, -np.abs(points), -np.where(undefined, 0.0, impact), undefined))
    out = pd.DataFrame(
        {
            "task_id": pd.Series(tasks, dtype=object),
            "criterion_id": pd.Series(cids, dtype=object),
            "text": pd.Series([str(x) for x in table["text"].tolist()], dtype=object),
            "points": points,
            "tags": pd.Series(
                [tuple(str(t) for t in (x or ())) for x in table["tags"].tolist()], dtype=object
            ),
            "n_responses": np.asarray([int(x) for x in table["n_responses"].tolist()], np.int64),
            "n_paired": np.where(np.isnan(npaired), 0, npaired).astype(np.int64),
            "human_agreement": ha,
            "n_judged": np.where(np.isnan(nj), 0, nj).astype(np.int64),
            "judge_disagreement": jd,
            "disagreement": dis,
            "impact": impact,
            "flags": pd.Series(flags, dtype=object),
            "flagged": below | departs,
        }
    )
    return out.take(rank).reset_index(drop=True) if n else out


def _add_details(
    rows: list[CriterionHealth],
    v: pd.DataFrame,
    names: Sequence[str],
    judge: str | None,
    cons_map: dict[tuple[Any, Any], bool],
) -> None:
    """Fill ``disagreements`` of ``rows`` from the verdicts (one pass over them)."""
    wanted = pd.DataFrame(
        {"task_id": [r.task_id for r in rows], "criterion_id": [r.criterion_id for r in rows]}
    )
    sub = v.merge(wanted, on=["task_id", "criterion_id"], how="inner")
    cols = ["task_id", "criterion_id", "response_id", "model", "grader", "grader_kind", "met"]
    arr = {c: sub[c].to_numpy(object) for c in cols}
    rationale = sub["rationale"].to_numpy(object)
    unclear = sub["unclear"].to_numpy(bool)
    key = pd.MultiIndex.from_arrays([arr["task_id"], arr["criterion_id"], arr["response_id"]])
    codes, _ = pd.factorize(key, sort=False)
    order = np.argsort(np.asarray(codes), kind="stable")
    bounds = np.flatnonzero(np.diff(np.asarray(codes)[order])) + 1
    human = set(names)
    found: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for idx in np.split(order, bounds) if len(order) else []:
        graders = [str(g) for g in arr["grader"][idx]]
        met = [bool(m) for m in arr["met"][idx]]
        hm = [m for g, m in zip(graders, met, strict=True) if g in human]
        jm = [m for g, m in zip(graders, met, strict=True) if g == judge]
        task, cid, rid = (
            arr["task_id"][idx[0]],
            arr["criterion_id"][idx[0]],
            arr["response_id"][idx[0]],
        )
        cm = cons_map.get((rid, cid))
        split = len(hm) >= 2 and 0 < sum(hm) < len(hm)
        departs = cm is not None and len(jm) == 1 and jm[0] != cm
        if not (split or departs):
            continue
        found.setdefault((str(task), str(cid)), []).append(
            {
                "response_id": str(rid),
                "model": str(arr["model"][idx[0]]),
                "consensus": cm,
                "humans_split": bool(split),
                "judge_departs": bool(departs),
                "verdicts": [
                    {
                        "grader": graders[k],
                        "grader_kind": str(arr["grader_kind"][i]),
                        "met": met[k],
                        "rationale": _text(rationale[i]),
                        "unclear": bool(unclear[i]),
                    }
                    for k, i in enumerate(idx)
                ],
            }
        )
    for r in rows:
        r.disagreements.extend(found.get((r.task_id, r.criterion_id), []))


def health_report(
    frames: Frames,
    judge: str | None = None,
    humans: Sequence[str] | None = None,
    *,
    bar: float = DEFAULT_BAR,
    include_all: bool = False,
    limit: int | None = None,
    benchmark: str | None = None,
) -> dict[str, Any]:
    """Everything ``gradercal health --json`` prints (shape in ``docs/agreement.md``).

    Args:
        frames: The benchmark frames.
        judge: The judge to compare (None: humans only).
        humans: The human graders.
        bar: The agreement bar.
        include_all: List every criterion (unflagged ones without details), not only
            the flagged ones.
        limit: At most this many criteria in the list (None: all).
        benchmark: The benchmark's name, echoed in the report.
    """
    rows = criterion_health(
        frames, judge, humans, bar=bar, details=True if limit is None else limit
    )
    listed = rows if include_all else [r for r in rows if r.flagged]
    if limit is not None:
        listed = listed[:limit]
    return {
        "benchmark": benchmark,
        "judge": judge,
        "bar": bar,
        "n_criteria": len(rows),
        "n_flagged": sum(1 for r in rows if r.flagged),
        "n_experts_below_bar": sum(1 for r in rows if "experts below bar" in r.flags),
        "n_judge_departs": sum(1 for r in rows if "judge departs from consensus" in r.flags),
        "criteria": [r.to_dict(details=r.flagged) for r in listed],
    }
