"""Rubric scoring: auto criteria, human consensus, per-response scores and summaries.

Definitions (one grader ``g`` — a named grader or the human consensus — on one
response ``r`` of task ``T``):

* **Credit** of a criterion with ``points`` p and ``levels`` L (≥ 2) at ordinal level
  ``k`` ∈ {0 … L−1} is ``p·k/(L−1)``; for the usual two-level scale that is p when
  met and 0 when not. A verdict's level is its ``level`` when given (clipped to
  0 … L−1) and otherwise ``L−1`` if ``met`` else 0. **The level wins over ``met``**
  when both are present.
* **Auto criteria** are always graded from the response's ``answer`` with
  :func:`evaluate_auto` (credit p or 0) — for every grader and for the consensus;
  human or judge verdicts on auto criteria are ignored by scoring.
* **Rubric score** = (Σ credits) / (Σ positive points of T), clipped to [0, 1].
  Penalties (negative points) lower the numerator but never enter the
  denominator.
* **Undefined**: a task whose positive points sum to 0 has no score (NaN,
  ``undefined=True``).
* **Incomplete**: when g has no verdict on some judgment criterion of T (``met``
  and ``level`` both missing), the score is NaN, ``complete=False`` and
  ``n_missing`` counts those criteria. Missing is never read as "not met".
* **Pass**: ``score >= pass_threshold - PASS_EPSILON``. Scores are ratios of small
  integers computed in floating point, so 7/10 ≥ 0.7 must hold even though
  ``7/10`` and ``0.7`` need not be the same double; ``PASS_EPSILON`` (1e-9) is far
  below the gap between any two distinct scores of a realistic rubric.
* **Consensus** (see :func:`consensus`): per judgment criterion, the adjudication
  when there is one, else the median level of the human verdicts (a "partial" is a level
  between not met and met); a level tie (an even number of verdicts whose two middle
  levels differ) is reported and, by default, makes the consensus score incomplete. The
  consensus is *met* when its level is the top level, which is exactly the majority of
  the met / not-met verdicts: on a level tie whose two middle levels are both below the
  top (e.g. "not met" and "partial") it is still decided, *not met*.

Everything here works on :class:`~gradercal.frames.Frames` and imports only
pandas, numpy and the standard library.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal, get_args

import numpy as np
import numpy.typing as npt
import pandas as pd

from gradercal._util.jsonsafe import json_safe
from gradercal.analysis.context import AnalysisContext, HumanLevels, JudgmentKeys
from gradercal.frames import Frames, object_frame
from gradercal.rubric import (
    PASS_EPSILON,
    auto_rule_from_row,
    criterion_credit,
    evaluate_auto,
    passes,
    rubric_score,
)

IntArray = npt.NDArray[np.intp]

__all__ = [
    "BREAKDOWNS",
    "CONSENSUS",
    "CONSENSUS_COLUMNS",
    "PASS_EPSILON",
    "SCORE_COLUMNS",
    "SUMMARY_COLUMNS",
    "TiePolicy",
    "all_grader_scores",
    "auto_verdicts",
    "consensus",
    "criterion_credit",
    "evaluate_auto",
    "judgment_keys",
    "latest_verdicts",
    "model_summary",
    "passes",
    "response_scores",
    "rubric_score",
    "score_report",
    "unit_of_judgments",
]

#: The pseudo-grader name that selects the human consensus.
CONSENSUS = "consensus"
#: How a consensus tie on a judgment criterion is scored.
TiePolicy = Literal["incomplete", "met", "not_met"]
#: Values accepted by ``model_summary(by=...)`` and the report's breakdowns.
BREAKDOWNS: tuple[str, ...] = ("workflow", "domain", "artifacts", "answer_format")
#: Group labels of the ``artifacts`` breakdown.
TEXT_ONLY = "text-only"
WITH_ARTIFACTS = "with artifacts"

SCORE_COLUMNS: tuple[str, ...] = (
    "response_id",
    "task_id",
    "model",
    "grader",
    "score",
    "passed",
    "complete",
    "n_missing",
    "n_ties",
    "undefined",
)
CONSENSUS_COLUMNS: tuple[str, ...] = (
    "response_id",
    "criterion_id",
    "met",
    "level",
    "source",
    "n_met",
    "n_raters",
)
SUMMARY_COLUMNS: tuple[str, ...] = (
    "n_responses",
    "n_scored",
    "mean_score",
    "pass_rate",
    "n_incomplete",
    "n_undefined",
)

_DECIDED_OR_TIED = ("adjudication", "majority", "tie")

# --------------------------------------------------------------------------- auto


def auto_verdicts(frames: Frames, *, context: AnalysisContext | None = None) -> pd.DataFrame:
    """Verdicts of every auto criterion on every response of its task.

    Args:
        frames: The benchmark frames.
        context: An ``AnalysisContext`` shared by calls on the same frames (the grid of
            responses × criteria, with every auto criterion evaluated, is built once); None:
            compute afresh.

    Returns:
        One row per (response, auto criterion of the response's task), in response
        order then criterion order: ``response_id``, ``criterion_id``, ``met``
        (bool, never missing). Responses whose task is unknown get no rows.
    """
    return _auto_frame(_grid(frames, context))


def _auto_frame(grid: pd.DataFrame) -> pd.DataFrame:
    autos = grid.loc[grid["is_auto"]]
    return pd.DataFrame(
        {
            "response_id": pd.Series(autos["response_id"].to_numpy(dtype=object), dtype=object),
            "criterion_id": pd.Series(autos["criterion_id"].to_numpy(dtype=object), dtype=object),
            "met": pd.Series(autos["auto_met"].to_numpy(dtype="float64") == 1.0, dtype="bool"),
        }
    )


# --------------------------------------------------------------- frame internals


def _grid(frames: Frames, context: AnalysisContext | None = None) -> pd.DataFrame:
    """Every (response, criterion of its task) pair with what scoring needs.

    Columns: ``response_id``, ``task_id``, ``model``, ``criterion_id``, ``points``,
    ``top`` (levels − 1, at least 1), ``is_auto`` and ``auto_met`` (1.0/0.0 for auto
    criteria, evaluated here once; NaN for judgment criteria). Order: responses,
    then rubric rows. Cached in ``context`` when given.
    """
    if context is not None:
        if context.grid is None:
            context.grid = _grid(frames)
        return context.grid
    crit = frames.criteria.loc[
        :,
        [
            "task_id",
            "criterion_id",
            "points",
            "levels",
            "kind",
            "auto_key",
            "auto_target",
            "auto_abs_tol",
            "auto_rel_tol",
        ],
    ]
    grid = frames.responses.loc[:, ["response_id", "task_id", "model", "answer"]].merge(
        crit, on="task_id", how="inner"
    )
    is_auto = (grid["kind"] == "auto").to_numpy(dtype=bool)
    auto_met = np.full(len(grid), np.nan)
    if is_auto.any():
        sub = grid.loc[is_auto]
        auto_met[is_auto] = [
            1.0 if evaluate_auto(auto_rule_from_row(key, target, atol, rtol), answer) else 0.0
            for answer, key, target, atol, rtol in zip(
                sub["answer"],
                sub["auto_key"],
                sub["auto_target"],
                sub["auto_abs_tol"],
                sub["auto_rel_tol"],
                strict=True,
            )
        ]
    return object_frame(
        {
            "response_id": grid["response_id"].to_numpy(dtype=object),
            "task_id": grid["task_id"].to_numpy(dtype=object),
            "model": grid["model"].to_numpy(dtype=object),
            "criterion_id": grid["criterion_id"].to_numpy(dtype=object),
            "points": grid["points"].to_numpy(dtype="int64"),
            "top": np.clip(grid["levels"].to_numpy(dtype="int64"), 2, None) - 1,
            "is_auto": is_auto,
            "auto_met": auto_met,
        }
    )


def _to_float(s: pd.Series) -> npt.NDArray[np.float64]:
    """A nullable/boolean/int series as float64 with NaN for missing."""
    return np.asarray(s.astype("Float64").to_numpy(dtype="float64", na_value=np.nan), np.float64)


def effective_level(met: pd.Series, level: pd.Series, top: pd.Series) -> npt.NDArray[np.float64]:
    """Level 0 … top of each verdict (NaN when neither level nor met is given)."""
    lvl = _to_float(level)
    m = _to_float(met)
    t = top.to_numpy(dtype="float64")
    from_level = np.clip(lvl, 0.0, t)
    from_met = m * t
    return np.asarray(np.where(~np.isnan(lvl), from_level, from_met), dtype=np.float64)


def _consensus_full(
    frames: Frames,
    humans: Sequence[str] | None,
    grid: pd.DataFrame | None = None,
    context: AnalysisContext | None = None,
) -> pd.DataFrame:
    """Consensus per (response, judgment criterion) plus the tie bounds lo/hi.

    Cached in ``context`` (when given) per set of ``humans``.
    """
    if context is not None:
        ctx = context
        key = None if humans is None else tuple(humans)

        def build() -> pd.DataFrame:
            base = human_levels(frames, ctx) if humans is not None else None
            if base is None:
                return _consensus_full(frames, humans, _grid(frames, ctx))
            return _consensus_from_levels(base, humans or ())

        return ctx.once(ctx.consensus_full, key, build)
    if grid is None:
        grid = _grid(frames)
    grid = grid.loc[~grid["is_auto"], ["response_id", "criterion_id", "top"]]
    grid = grid.reset_index(drop=True)

    j = frames.judgments
    if humans is None:
        j = j.loc[j["grader_kind"] == "human"]
    else:
        j = j.loc[j["grader"].isin(list(humans))]
    j = j.drop_duplicates(["response_id", "criterion_id", "grader"], keep="last")
    hj = grid.merge(
        j.loc[:, ["response_id", "criterion_id", "met", "level"]],
        on=["response_id", "criterion_id"],
        how="inner",
    )
    eff = effective_level(hj["met"], hj["level"], hj["top"])
    hj = hj.assign(eff=eff, is_met=eff == hj["top"].to_numpy(dtype="float64"))
    hj = hj.loc[~np.isnan(eff)]
    keys = ["response_id", "criterion_id"]
    g = hj.groupby(keys, sort=False)
    agg = pd.DataFrame(
        {
            "n_raters": g["eff"].count(),
            "n_met": g["is_met"].sum(),
            "lo": g["eff"].quantile(0.5, interpolation="lower"),
            "hi": g["eff"].quantile(0.5, interpolation="higher"),
        }
    ).reset_index()

    adj = frames.adjudications.drop_duplicates(keys, keep="last")
    adj = grid.merge(adj.loc[:, [*keys, "met", "level"]], on=keys, how="inner")
    adj = adj.assign(adj=effective_level(adj["met"], adj["level"], adj["top"]))

    out = grid.merge(agg, on=keys, how="left").merge(
        adj.loc[:, [*keys, "adj"]], on=keys, how="left"
    )
    return _consensus_table(
        out.loc[:, [*keys, "top"]],
        out["n_raters"].fillna(0).astype("int64"),
        out["n_met"].fillna(0).astype("int64"),
        out["lo"].to_numpy(dtype="float64", na_value=np.nan),
        out["hi"].to_numpy(dtype="float64", na_value=np.nan),
        out["adj"].to_numpy(dtype="float64", na_value=np.nan),
    )


def _consensus_table(
    out: pd.DataFrame,
    n_raters: pd.Series,
    n_met: pd.Series,
    lo: npt.NDArray[np.float64],
    hi: npt.NDArray[np.float64],
    adj_level: npt.NDArray[np.float64],
) -> pd.DataFrame:
    """The consensus frame from per-unit counts, medians and adjudicated levels.

    ``out`` holds ``response_id``, ``criterion_id``, ``top`` of each judgment unit (a
    RangeIndex); the other arguments are aligned with its rows.
    """
    has_adj = ~np.isnan(adj_level)
    has_raters = n_raters.to_numpy() > 0
    is_tie = ~has_adj & has_raters & (lo != hi)
    is_majority = ~has_adj & has_raters & (lo == hi)
    source = np.select(
        [has_adj, is_majority, is_tie], ["adjudication", "majority", "tie"], default="none"
    )
    level = np.where(has_adj, adj_level, np.where(is_majority, lo, np.nan))
    top = out["top"].to_numpy(dtype="float64")
    level_s = pd.Series(level).astype("Int64")
    # met / not met: the level is the top level; on a level tie, both middle levels below
    # the top still make a decided "not met" (exactly the majority of met / not-met votes).
    met_f = np.where(
        np.isnan(level), np.where(is_tie & (hi < top), 0.0, np.nan), (level == top).astype(float)
    )
    met = pd.Series(met_f).astype("boolean")
    return pd.DataFrame(
        {
            "response_id": out["response_id"].astype(object),
            "criterion_id": out["criterion_id"].astype(object),
            "met": met,
            "level": level_s,
            "source": pd.Series(source, dtype=object),
            "n_met": n_met,
            "n_raters": n_raters,
            "lo": np.where(is_tie, lo, np.nan),
            "hi": np.where(is_tie, hi, np.nan),
        }
    )


def judgment_keys(frames: Frames, context: AnalysisContext | None = None) -> JudgmentKeys:
    """The judgments' response, criterion and grader as integer codes (cached in
    ``context``): what :func:`unit_of_judgments` and :func:`latest_verdicts` pair and
    deduplicate with, instead of a merge and a ``drop_duplicates`` on text columns."""
    if context is not None and context.judgment_keys is not None:
        return context.judgment_keys
    j = frames.judgments
    response, responses = pd.factorize(j["response_id"].to_numpy(object), sort=False)
    criterion, criteria = pd.factorize(j["criterion_id"].to_numpy(object), sort=False)
    grader, graders = pd.factorize(j["grader"].to_numpy(object), sort=False)
    n_graders = len(graders)
    grader = np.asarray(grader, np.intp)
    grader[grader < 0] = n_graders  # a missing name: one more grader (as drop_duplicates)
    keys = JudgmentKeys(
        responses=pd.Index(responses, dtype=object),
        criteria=pd.Index(criteria, dtype=object),
        response=np.asarray(response, np.intp),
        criterion=np.asarray(criterion, np.intp),
        grader=grader,
        n_graders=n_graders + 1,
    )
    if context is not None:
        context.judgment_keys = keys
    return keys


def unit_of_judgments(keys: JudgmentKeys, units: pd.DataFrame) -> IntArray | None:
    """The position in ``units`` (``response_id``, ``criterion_id``) of every judgment
    row's unit, −1 for a row whose unit is not there: the pairs an inner merge of the
    judgments with ``units`` on the two keys makes. None when a unit's key is missing or
    repeated among the units some judgment names (a merge would match differently: the
    caller merges)."""
    if units["response_id"].isna().any() or units["criterion_id"].isna().any():
        return None
    ur = keys.responses.get_indexer(pd.Index(units["response_id"], dtype=object))
    uc = keys.criteria.get_indexer(pd.Index(units["criterion_id"], dtype=object))
    width = max(len(keys.criteria), 1)
    present = np.flatnonzero((ur >= 0) & (uc >= 0))  # units some judgment names
    ukey = ur[present].astype(np.int64) * width + uc[present]
    order = np.argsort(ukey, kind="stable")
    sorted_keys = ukey[order]
    if len(sorted_keys) and (np.diff(sorted_keys) == 0).any():
        return None
    out = np.full(len(keys.response), -1, dtype=np.intp)
    if not len(sorted_keys):
        return out
    valid = np.flatnonzero((keys.response >= 0) & (keys.criterion >= 0))
    jkey = keys.response[valid].astype(np.int64) * width + keys.criterion[valid]
    at = np.minimum(np.searchsorted(sorted_keys, jkey), len(sorted_keys) - 1)
    hit = sorted_keys[at] == jkey
    out[valid[hit]] = present[order[at[hit]]]
    return out


def latest_verdicts(keys: JudgmentKeys, unit: IntArray, rows: IntArray | None = None) -> IntArray:
    """Of the judgment ``rows`` (default: all) whose unit is known (``unit`` ≥ 0, from
    :func:`unit_of_judgments`), each grader's last on each unit, in judgment order: what
    ``drop_duplicates([response_id, criterion_id, grader], keep="last")`` keeps of them."""
    pos = np.arange(len(unit), dtype=np.intp) if rows is None else np.asarray(rows, np.intp)
    pos = pos[unit[pos] >= 0]
    key = unit[pos].astype(np.int64) * keys.n_graders + keys.grader[pos]
    # the first of each key in the reversed rows is its last
    _, first = np.unique(key[::-1], return_index=True)
    out: IntArray = pos[np.sort(len(pos) - 1 - first)]
    return out


def human_levels(frames: Frames, context: AnalysisContext) -> HumanLevels | None:
    """Every grader's effective level on every judgment unit, for the consensus (context).

    Built once per context: the judgment units of the grid (``units``: ``response_id``,
    ``criterion_id``, ``top``), and for every verdict with a level or met (a grader's
    duplicates keep the last), its unit's row, grader code, level and whether it is the
    top level; plus each unit's adjudicated level. None when the units are not unique
    (duplicate criterion ids in a task, duplicate responses) or one lacks an id: then the
    consensus is computed the general way.
    """

    def build() -> HumanLevels | None:
        keys = ["response_id", "criterion_id"]
        grid = _grid(frames, context)
        units = grid.loc[~grid["is_auto"], [*keys, "top"]].reset_index(drop=True)
        if units.duplicated(keys).any():
            return None
        rows = units.assign(_row=np.arange(len(units), dtype=np.intp))
        jkeys = judgment_keys(frames, context)
        unit = unit_of_judgments(jkeys, units)
        if unit is None:  # a unit without a response or criterion id
            return None
        # each grader's last verdict per unit, the units in order (as a merge with them)
        latest = latest_verdicts(jkeys, unit)
        latest = latest[np.argsort(unit[latest], kind="stable")]
        row = unit[latest]
        j = frames.judgments
        top = units["top"].take(row)
        eff = effective_level(j["met"].take(latest), j["level"].take(latest), top)
        keep = ~np.isnan(eff)
        codes, names = pd.factorize(j["grader"].to_numpy(object)[latest[keep]], sort=False)
        adj = frames.adjudications.drop_duplicates(keys, keep="last")
        adj = rows.merge(adj.loc[:, [*keys, "met", "level"]], on=keys, how="inner")
        adj_level = np.full(len(units), np.nan)
        adj_level[adj["_row"].to_numpy(np.intp)] = effective_level(
            adj["met"], adj["level"], adj["top"]
        )
        return HumanLevels(
            units=units,
            row=row[keep],
            grader=np.asarray(codes, np.intp),
            names={name: k for k, name in enumerate(names)},
            eff=eff[keep],
            is_met=eff[keep] == top.to_numpy(dtype="float64")[keep],
            adj_level=adj_level,
            judgment_unit=unit,
        )

    if context.human_levels is None:
        context.human_levels = (build(),)
    return context.human_levels[0]


def _consensus_from_levels(base: HumanLevels, humans: Sequence[str]) -> pd.DataFrame:
    """:func:`_consensus_full` of ``humans`` from :func:`human_levels` (no merge).

    The lower and upper medians of each unit's levels are the sorted levels at positions
    ``(r − 1) // 2`` and ``r // 2`` — what ``quantile(0.5, interpolation="lower" /
    "higher")`` returns.
    """
    units = base.units
    n = len(units)
    wanted = [base.names[h] for h in dict.fromkeys(humans) if h in base.names]
    sel = np.isin(base.grader, np.asarray(wanted, dtype=np.intp))
    row = base.row[sel]
    eff = base.eff[sel]
    n_raters = np.bincount(row, minlength=n).astype(np.int64)
    n_met = np.bincount(row, weights=base.is_met[sel], minlength=n).astype(np.int64)
    order = np.lexsort((eff, row))
    sorted_eff = eff[order]
    start = np.searchsorted(row[order], np.arange(n))
    has = n_raters > 0
    lo = np.full(n, np.nan)
    hi = np.full(n, np.nan)
    lo[has] = sorted_eff[start[has] + (n_raters[has] - 1) // 2]
    hi[has] = sorted_eff[start[has] + n_raters[has] // 2]
    return _consensus_table(
        units,
        pd.Series(n_raters, dtype="int64"),
        pd.Series(n_met, dtype="int64"),
        lo,
        hi,
        base.adj_level,
    )


def consensus(
    frames: Frames, humans: Sequence[str] | None = None, *, context: AnalysisContext | None = None
) -> pd.DataFrame:
    """Human consensus verdict on every (response, judgment criterion) pair.

    Rule per pair:

    1. an adjudication, when there is one (the last row if several), wins —
       ``source="adjudication"``;
    2. otherwise the human verdicts decide: each verdict's level (``level``, else
       ``met`` → levels−1 / 0; verdicts with neither are ignored) and the consensus
       is their median. With two levels that is exactly the majority vote. When the
       number of verdicts is even and the two middle levels differ it is a tie —
       ``source="tie"``, ``level`` <NA>; otherwise ``source="majority"``;
    3. no adjudication and no verdict — ``source="none"``, ``met``/``level`` <NA>.

    ``met`` is True when the consensus level is the top level (for two-level
    criteria: met), False below it. On a tie it is False when both middle levels are
    below the top (every reading of the tie is "not met") and <NA> when the upper middle
    level is the top: ``met`` is therefore always the strict majority of the met /
    not-met verdicts (met iff more than half are at the top level; <NA> iff exactly
    half). Example, a 3-level criterion (0 not met, 1 partial, 2 met): levels
    ``[0, 0, 1, 2]`` give a level tie between 0 and 1 (score incomplete by default) but
    ``met=False`` (3 of 4 not met); ``[0, 1, 2, 2]`` give a tie between 1 and 2 and
    ``met`` <NA> (2 of 4 met); ``[0, 1, 2]`` give level 1 and ``met=False``. Auto criteria are not included (they come from
    :func:`auto_verdicts`). A grader's duplicate verdicts on one pair keep the last.

    Args:
        frames: The benchmark frames.
        humans: Names of the graders whose verdicts count (any kind); None means
            every grader whose ``grader_kind`` is ``"human"``.
        context: An ``AnalysisContext`` shared by calls on the same frames (e.g. within one
            report) to build each consensus once; None: compute afresh.

    Returns:
        ``response_id``, ``criterion_id``, ``met`` ("boolean"), ``level`` ("Int64",
        the consensus level), ``source`` (``"adjudication"`` | ``"majority"`` |
        ``"tie"`` | ``"none"``), ``n_met`` (human verdicts at the top level),
        ``n_raters`` (human verdicts with a level or met), in response then rubric
        order. ``n_met``/``n_raters`` count the humans also for adjudicated pairs.
    """
    return _consensus_full(frames, humans, context=context).loc[:, list(CONSENSUS_COLUMNS)]


# ------------------------------------------------------------ per-response scores


def _empty_scores() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "response_id": pd.Series([], dtype=object),
            "task_id": pd.Series([], dtype=object),
            "model": pd.Series([], dtype=object),
            "grader": pd.Series([], dtype=object),
            "score": pd.Series([], dtype="float64"),
            "passed": pd.Series([], dtype="boolean"),
            "complete": pd.Series([], dtype="bool"),
            "n_missing": pd.Series([], dtype="int64"),
            "n_ties": pd.Series([], dtype="int64"),
            "undefined": pd.Series([], dtype="bool"),
        }
    )


def response_scores(
    frames: Frames,
    grader: str = CONSENSUS,
    *,
    tie_policy: TiePolicy = "incomplete",
    humans: Sequence[str] | None = None,
    include_ungraded: bool | None = None,
    context: AnalysisContext | None = None,
) -> pd.DataFrame:
    """Rubric score of one grader (or the human consensus) on each response.

    See the module docstring for the definitions of score, pass, incomplete and
    undefined.

    Args:
        frames: The benchmark frames.
        grader: A grader name, or ``"consensus"`` (:data:`CONSENSUS`) for the human
            consensus of :func:`consensus`. (A real grader named "consensus"
            cannot be selected.)
        tie_policy: Consensus only. ``"incomplete"`` (default): a tie on a judgment
            criterion makes the response incomplete. ``"met"`` / ``"not_met"``:
            score a tie at the upper / lower of the two middle levels (for
            two-level criteria: met / not met). Ties are counted in ``n_ties``
            whatever the policy.
        humans: Consensus only: the graders that form it (see :func:`consensus`).
        include_ungraded: Whether to list responses the grader never judged
            (they come out incomplete). Default: True for the consensus (every
            response), False for a named grader (only responses with at least one
            judgment row from that grader).
        context: An ``AnalysisContext`` shared by calls on the same frames (e.g. within one
            report): the grid, the consensus and each grader's scores are computed once;
            None: compute afresh.

    Returns:
        One row per response, in response order: ``response_id``, ``task_id``,
        ``model``, ``grader``, ``score`` (float, NaN when incomplete or undefined),
        ``passed`` ("boolean", <NA> when the score is NaN), ``complete`` (bool),
        ``n_missing`` (judgment criteria without a verdict, ties excluded),
        ``n_ties`` (consensus ties; 0 for named graders), ``undefined`` (bool:
        the task's positive points sum to 0). Responses whose task is unknown are
        left out.

    Raises:
        ValueError: Unknown ``tie_policy``.
    """
    _check_tie_policy(tie_policy)
    if context is None:
        return _scores(frames, _grid(frames), grader, tie_policy, humans, include_ungraded)
    is_consensus = grader == CONSENSUS
    key = (
        grader,
        tie_policy if is_consensus else None,
        None if humans is None or not is_consensus else tuple(humans),
        is_consensus if include_ungraded is None else bool(include_ungraded),
    )
    ctx = context
    out = ctx.once(
        ctx.response_scores,
        key,
        lambda: _scores(
            frames, _grid(frames, context), grader, tie_policy, humans, include_ungraded, context
        ),
    )
    return out.copy(deep=False)


def _check_tie_policy(tie_policy: str) -> None:
    if tie_policy not in get_args(TiePolicy):
        raise ValueError(f"tie_policy must be one of {get_args(TiePolicy)}, not {tie_policy!r}")


def _grader_levels(
    frames: Frames,
    grid: pd.DataFrame,
    grader: str,
    tie_policy: TiePolicy,
    humans: Sequence[str] | None,
    context: AnalysisContext | None,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.bool_], set[Any]]:
    """Level (0 … top) of every criterion of ``grid`` according to the grader (NaN where
    none; ties of the consensus resolved by ``tie_policy``), which rows are consensus ties,
    and the ids of the responses the grader graded."""
    keys = ["response_id", "criterion_id"]
    ties = np.zeros(len(grid), dtype=bool)
    if grader == CONSENSUS:
        cons = _consensus_full(frames, humans, grid, context)
        merged = grid.loc[:, keys].merge(cons, on=keys, how="left")
        eff = merged["level"].to_numpy(dtype="float64", na_value=np.nan)
        ties = (merged["source"] == "tie").to_numpy(dtype=bool)
        if tie_policy == "met":
            eff = np.where(ties, merged["hi"].to_numpy(dtype="float64"), eff)
        elif tie_policy == "not_met":
            eff = np.where(ties, merged["lo"].to_numpy(dtype="float64"), eff)
        graded_ids = set(merged.loc[merged["source"].isin(_DECIDED_OR_TIED), "response_id"])
    else:
        j = frames.judgments.loc[frames.judgments["grader"] == grader]
        graded_ids = set(j["response_id"])
        j = j.drop_duplicates(keys, keep="last").loc[:, [*keys, "met", "level"]]
        merged = grid.loc[:, [*keys, "top"]].merge(j, on=keys, how="left")
        eff = effective_level(merged["met"], merged["level"], merged["top"])
    return eff, ties, graded_ids


def _scores(
    frames: Frames,
    grid: pd.DataFrame,
    grader: str,
    tie_policy: TiePolicy,
    humans: Sequence[str] | None,
    include_ungraded: bool | None,
    context: AnalysisContext | None = None,
) -> pd.DataFrame:
    """:func:`response_scores` on a precomputed :func:`_grid`."""
    is_consensus = grader == CONSENSUS
    if include_ungraded is None:
        include_ungraded = is_consensus
    is_auto = grid["is_auto"].to_numpy(dtype=bool)

    eff, ties, graded_ids = _grader_levels(frames, grid, grader, tie_policy, humans, context)

    # Auto criteria always come from the answer.
    eff = np.where(is_auto, grid["auto_met"].to_numpy(dtype="float64"), eff)
    top = np.where(is_auto, 1.0, grid["top"].to_numpy(dtype="float64"))
    ties = ties & ~is_auto

    points = grid["points"].to_numpy(dtype="float64")
    rows = pd.DataFrame(
        {
            "response_id": grid["response_id"],
            "credit": np.where(np.isnan(eff), 0.0, points * eff / top),
            "missing": np.isnan(eff) & ~ties,
            "tie": ties,
            "positive": np.clip(points, 0.0, None),
        }
    )
    per = rows.groupby("response_id", sort=False).agg(
        earned=("credit", "sum"),
        n_missing=("missing", "sum"),
        n_ties=("tie", "sum"),
        positive=("positive", "sum"),
    )

    resp = frames.responses.loc[:, ["response_id", "task_id", "model"]]
    resp = resp.loc[resp["response_id"].isin(set(per.index))]
    if not include_ungraded:
        resp = resp.loc[resp["response_id"].isin(graded_ids)]
    resp = resp.drop_duplicates("response_id")
    if resp.empty:
        return _empty_scores()
    per = per.reindex(resp["response_id"].to_numpy())

    n_missing = per["n_missing"].to_numpy(dtype="int64")
    n_ties = per["n_ties"].to_numpy(dtype="int64")
    positive = per["positive"].to_numpy(dtype="float64")
    earned = per["earned"].to_numpy(dtype="float64")
    undefined = positive <= 0
    blocking_ties = n_ties if tie_policy == "incomplete" else np.zeros_like(n_ties)
    complete = (n_missing == 0) & (blocking_ties == 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        raw = earned / np.where(undefined, 1.0, positive)
    score = np.where(complete & ~undefined, np.clip(raw, 0.0, 1.0), np.nan)
    passed = pd.Series(
        np.where(np.isnan(score), np.nan, score >= frames.pass_threshold - PASS_EPSILON)
    ).astype("boolean")
    return pd.DataFrame(
        {
            "response_id": pd.Series(resp["response_id"].to_numpy(dtype=object), dtype=object),
            "task_id": pd.Series(resp["task_id"].to_numpy(dtype=object), dtype=object),
            "model": pd.Series(resp["model"].to_numpy(dtype=object), dtype=object),
            "grader": pd.Series([grader] * len(resp), dtype=object),
            "score": pd.Series(score, dtype="float64"),
            "passed": passed,
            "complete": pd.Series(complete, dtype="bool"),
            "n_missing": pd.Series(n_missing, dtype="int64"),
            "n_ties": pd.Series(n_ties, dtype="int64"),
            "undefined": pd.Series(undefined, dtype="bool"),
        }
    )


def all_grader_scores(
    frames: Frames,
    *,
    tie_policy: TiePolicy = "incomplete",
    humans: Sequence[str] | None = None,
) -> pd.DataFrame:
    """:func:`response_scores` for the consensus, then every grader, stacked.

    Graders come in name order, each with its default ``include_ungraded``
    (only responses it judged). A grader literally named ``"consensus"`` is
    skipped (the name selects the consensus).

    Returns:
        The columns of :func:`response_scores`; ``grader`` tells the rows apart.
    """
    _check_tie_policy(tie_policy)
    grid = _grid(frames)
    parts = [_scores(frames, grid, CONSENSUS, tie_policy, humans, None)]
    names = sorted({str(g) for g in frames.judgments["grader"].dropna()} - {CONSENSUS})
    parts.extend(_scores(frames, grid, name, tie_policy, None, None) for name in names)
    non_empty = [p for p in parts if not p.empty]
    if not non_empty:
        return _empty_scores()
    return pd.concat(non_empty, ignore_index=True)


# ---------------------------------------------------------------------- summaries


def _missing(value: Any) -> bool:
    if value is None or value is pd.NA:
        return True
    return isinstance(value, float | np.floating) and math.isnan(float(value))


def _group_labels(frames: Frames, task_ids: pd.Series, by: str) -> pd.Series:
    tasks = frames.tasks.drop_duplicates("task_id").set_index("task_id")
    if by == "artifacts":
        labels = tasks["has_artifacts"].map({True: WITH_ARTIFACTS, False: TEXT_ONLY})
    else:
        labels = tasks[by]
    mapping = {k: (None if _missing(v) else str(v)) for k, v in labels.items()}
    return pd.Series([mapping.get(t) for t in task_ids], index=task_ids.index, dtype=object)


def model_summary(scores: pd.DataFrame, frames: Frames, by: str | None = None) -> pd.DataFrame:
    """Aggregate response scores per grader and model, optionally per task group.

    Args:
        scores: Output of :func:`response_scores` or :func:`all_grader_scores`.
        frames: The frames the scores came from (for task attributes).
        by: None, or one of :data:`BREAKDOWNS`: ``"workflow"``, ``"domain"``,
            ``"answer_format"`` (the task's value; missing → None) or
            ``"artifacts"`` (``"text-only"`` / ``"with artifacts"``).

    Returns:
        One row per (grader, model[, group]) present in ``scores``, sorted by those
        keys (None groups last): ``grader``, ``model``, ``group`` (only with ``by``),
        ``n_responses``; ``n_scored`` (complete with a defined score);
        ``mean_score`` and ``pass_rate`` over the scored ones (NaN if none);
        ``n_incomplete`` (incomplete, task defined); ``n_undefined`` (task with no
        positive points). ``n_responses = n_scored + n_incomplete + n_undefined``.

    Raises:
        ValueError: Unknown ``by``.
    """
    if by is not None and by not in BREAKDOWNS:
        raise ValueError(f"by must be None or one of {BREAKDOWNS}, not {by!r}")
    keys = ["grader", "model"] + (["group"] if by is not None else [])
    df = pd.DataFrame(
        {
            "grader": scores["grader"].astype(object),
            "model": scores["model"].astype(object),
            "scored": scores["score"].notna(),
            "score": scores["score"].astype("float64"),
            "passed": _to_float(scores["passed"]),
            "incomplete": ~scores["complete"].astype(bool) & ~scores["undefined"].astype(bool),
            "undefined": scores["undefined"].astype(bool),
        }
    )
    sentinel = "\x00none"
    if by is not None:
        df["group"] = _group_labels(frames, scores["task_id"], by).fillna(sentinel)
    df.loc[~df["scored"], "passed"] = np.nan
    g = df.groupby(keys, sort=False)
    out = g.agg(
        n_responses=("scored", "size"),
        n_scored=("scored", "sum"),
        mean_score=("score", "mean"),
        pass_rate=("passed", "mean"),
        n_incomplete=("incomplete", "sum"),
        n_undefined=("undefined", "sum"),
    ).reset_index()
    for col in ("n_responses", "n_scored", "n_incomplete", "n_undefined"):
        out[col] = out[col].astype("int64")
    for col in ("mean_score", "pass_rate"):
        out[col] = out[col].astype("float64")
    sort_cols = ["grader", "model"]
    if by is not None:
        out["_none"] = out["group"] == sentinel
        out["group"] = out["group"].astype(object).where(out["group"] != sentinel, None)
        sort_cols = ["grader", "model", "_none", "group"]
        out = out.sort_values(sort_cols, kind="stable", na_position="last")
        out = out.drop(columns="_none")
    else:
        out = out.sort_values(sort_cols, kind="stable")
    return out.loc[:, [*keys, *SUMMARY_COLUMNS]].reset_index(drop=True)


def _records(df: pd.DataFrame, columns: Sequence[str]) -> list[dict[str, Any]]:
    return [
        {c: json_safe(v) for c, v in zip(columns, row, strict=True)}
        for row in df.loc[:, list(columns)].itertuples(index=False, name=None)
    ]


def score_report(
    frames: Frames,
    grader: str = CONSENSUS,
    *,
    tie_policy: TiePolicy = "incomplete",
    humans: Sequence[str] | None = None,
) -> dict[str, Any]:
    """A stable JSON-able summary of one grader's scores (``gradercal scores --json``).

    Shape (all numbers plain Python ``int``/``float``, NaN → ``None``)::

        {
          "grader": "consensus",
          "pass_threshold": 0.7,
          "tie_policy": "incomplete",
          "n_responses": 12,
          "models": [
            {"model": "m", "n_responses": 6, "n_scored": 5, "mean_score": 0.61,
             "pass_rate": 0.4, "n_incomplete": 1, "n_undefined": 0}, ...
          ],
          "breakdowns": {
            "workflow": [{"model": "m", "group": "evidence handling",
                          "n_responses": …, "n_scored": …, "mean_score": …,
                          "pass_rate": …, "n_incomplete": …, "n_undefined": …}, ...],
            "domain": [...],
            "artifacts": [...],       # group "text-only" | "with artifacts"
            "answer_format": [...]    # group None when the task has none
          },
          "incomplete": 1,   # responses without a score because of missing verdicts/ties
          "undefined": 0,    # responses of tasks without positive points
          "ties": 2          # tied consensus criterion verdicts (0 for a named grader)
        }

    Models are sorted by name, groups by name with None last. ``mean_score`` and
    ``pass_rate`` are None when a row has no scored response.

    Args:
        frames: The benchmark frames.
        grader: A grader name or ``"consensus"``.
        tie_policy: See :func:`response_scores`.
        humans: See :func:`consensus`.
    """
    scores = response_scores(frames, grader, tie_policy=tie_policy, humans=humans)
    models = model_summary(scores, frames)
    breakdowns = {
        by: _records(model_summary(scores, frames, by), ["model", "group", *SUMMARY_COLUMNS])
        for by in BREAKDOWNS
    }
    return {
        "grader": grader,
        "pass_threshold": float(frames.pass_threshold),
        "tie_policy": tie_policy,
        "n_responses": len(scores),
        "models": _records(models, ["model", *SUMMARY_COLUMNS]),
        "breakdowns": breakdowns,
        "incomplete": int(models["n_incomplete"].sum()),
        "undefined": int(models["n_undefined"].sum()),
        "ties": int(scores["n_ties"].sum()),
    }
