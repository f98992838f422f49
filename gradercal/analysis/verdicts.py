"""Verdicts and the human consensus: the tables every analysis engine pairs and counts.

* **Verdict** of a grader on a unit (one judgment criterion of one response): its ordinal
  level when given (clipped to ``0 … levels−1``), else its ``met``; the unit counts as
  *met* when the level is the top level — the rule of :mod:`gradercal.analysis.scoring`,
  so a "partial" verdict on a 3-level criterion is *not met*. A verdict with neither
  level nor met is a missing rating. A grader's duplicate verdicts on one unit keep the
  last. Auto criteria are graded from the answer and never judged, so they are left out.
* **Human consensus** (the reference): :func:`consensus_verdicts`, the met / not met of
  :func:`gradercal.analysis.scoring.consensus` — the adjudication when there is one, else
  the strict majority of the human met / not-met verdicts. Units where exactly half the
  humans say met, or with no human verdict, are *undecided* and left out.
* **Unit positions**: within one :class:`~gradercal.analysis.context.AnalysisContext`, every verdict and consensus table handed
  out may carry the position of each of its rows among the judgment units, so that
  pairing two tables is an array lookup instead of a merge (:func:`unit_positions`).
* **Pairing** (:func:`pair`): the one join of two such tables on
  ``(response_id, criterion_id)`` — a grader's verdicts with the consensus, or one
  grader's verdicts with another's — that every engine uses: by unit positions when the
  context knows them, else by a merge, with the same pairs in the same order either way.

This module imports pandas, numpy and gradercal's core only (no SQL, no Qt).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from gradercal.analysis.context import AnalysisContext, UnitIndex
from gradercal.analysis.scoring import (
    consensus,
    effective_level,
    human_levels,
    judgment_keys,
    latest_verdicts,
    unit_of_judgments,
)
from gradercal.frames import Frames, object_frame

__all__ = [
    "consensus_verdicts",
    "grader_rows",
    "human_graders",
    "judge_graders",
    "pair",
    "unit_positions",
    "verdicts",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]

#: The columns that identify a unit.
_UNIT_KEYS = ("response_id", "criterion_id")


def _judgment_grid(frames: Frames) -> pd.DataFrame:
    """Every (response, judgment criterion of its task) with its task attributes."""
    crit = frames.criteria.loc[
        frames.criteria["kind"] != "auto",
        ["task_id", "criterion_id", "points", "tags", "levels", "text"],
    ].drop_duplicates(["task_id", "criterion_id"], keep="last")
    resp = frames.responses.loc[:, ["response_id", "task_id", "model"]].drop_duplicates(
        "response_id"
    )
    grid = resp.merge(crit, on="task_id", how="inner")
    tasks = frames.tasks.loc[:, ["task_id", "workflow", "domain"]].drop_duplicates("task_id")
    return grid.merge(tasks, on="task_id", how="left")


def verdicts(
    frames: Frames, graders: Sequence[str] | None = None, *, context: AnalysisContext | None = None
) -> pd.DataFrame:
    """Binary verdicts of graders on judgment criteria, one row per (unit, grader).

    Args:
        frames: The benchmark frames.
        graders: Keep only these graders (default: all).
        context: An ``AnalysisContext`` shared by calls on the same frames (e.g. within one
            report): every grader's verdicts are built once and filtered; None: compute
            afresh.

    Returns:
        Columns ``response_id``, ``task_id``, ``model``, ``criterion_id``, ``grader``,
        ``grader_kind``, ``met`` (bool; the level rule of the module docstring),
        ``confidence`` (float, NaN when absent), ``rationale``, ``unclear`` (bool),
        ``points`` (int), ``tags`` (tuple), ``levels`` (int), ``text``, ``workflow``,
        ``domain``. Verdicts on auto criteria, on unknown responses or criteria, and
        without a level or met are dropped; a grader's duplicates keep the last.
        Order: the judgments' order.
    """
    if context is not None:
        return _verdicts(frames, graders, context)
    return _verdict_table(frames, graders)[0]


#: The columns of a verdict table (:func:`verdicts`), in order.
_COLUMNS = [
    "response_id",
    "task_id",
    "model",
    "criterion_id",
    "grader",
    "grader_kind",
    "met",
    "confidence",
    "rationale",
    "unclear",
    "points",
    "tags",
    "levels",
    "text",
    "workflow",
    "domain",
]

#: The columns of :data:`_COLUMNS` that come from the judgments (the rest: the grid).
_FROM_JUDGMENTS = frozenset(
    ("response_id", "criterion_id", "grader", "grader_kind", "confidence", "rationale", "unclear")
)


def _verdict_table(
    frames: Frames, graders: Sequence[str] | None, context: AnalysisContext | None = None
) -> tuple[pd.DataFrame, IntArray | None]:
    """:func:`verdicts`, and the judgment row of each of its rows (None: merged).

    The judgments' keys are integer codes (:func:`~gradercal.analysis.scoring.judgment_keys`):
    each grader's last verdict per unit and its row of the grid are found by array
    lookups, and every column is taken once — the rows and order of the merge
    (:func:`_merged_verdicts`), which remains for a grid whose keys a lookup cannot
    place."""
    j = frames.judgments
    grid = _judgment_grid(frames)
    keys = judgment_keys(frames, context)
    unit = unit_of_judgments(keys, grid)
    if unit is None:
        return _merged_verdicts(frames, graders, grid), None
    rows = None
    if graders is not None:
        rows = np.flatnonzero(j["grader"].isin(list(graders)).to_numpy(bool))
    latest = latest_verdicts(keys, unit, rows)
    at = unit[latest]
    top = np.clip(grid["levels"].to_numpy(dtype=np.float64)[at], 2.0, None) - 1.0
    eff = effective_level(
        j["met"].take(latest), j["level"].take(latest), pd.Series(top, copy=False)
    )
    keep = ~np.isnan(eff)
    latest, at = latest[keep], at[keep]
    data: dict[str, Any] = {}
    for c in _COLUMNS:
        if c == "met":
            data[c] = eff[keep] == top[keep]
        else:
            data[c] = _taken(j[c], latest) if c in _FROM_JUDGMENTS else _taken(grid[c], at)
    return object_frame(data), latest


def _taken(column: pd.Series, rows: IntArray) -> Any:
    """The values of ``column`` at ``rows``, in its dtype (an object column stays
    object: :func:`~gradercal.frames.object_frame`)."""
    if isinstance(column.dtype, np.dtype):
        return column.to_numpy().take(rows)
    return column.array.take(rows)


def _merged_verdicts(
    frames: Frames, graders: Sequence[str] | None, grid: pd.DataFrame
) -> pd.DataFrame:
    """:func:`verdicts` by a merge with the grid (keys the lookup cannot place)."""
    j = frames.judgments
    if graders is not None:
        j = j.loc[j["grader"].isin(list(graders))]
    j = j.drop_duplicates(["response_id", "criterion_id", "grader"], keep="last")
    out = j.merge(grid, on=["response_id", "criterion_id"], how="inner")
    top = np.clip(out["levels"].to_numpy(dtype=np.float64), 2.0, None) - 1.0
    eff = effective_level(out["met"], out["level"], pd.Series(top, copy=False))
    keep = ~np.isnan(eff)
    out = out.loc[keep].copy()
    out["met"] = (eff[keep] == top[keep]).astype(bool)
    return out.loc[:, _COLUMNS].reset_index(drop=True)


def human_graders(frames: Frames) -> list[str]:
    """Names of the graders whose ``grader_kind`` is ``"human"``, sorted."""
    j = frames.judgments
    return sorted({str(g) for g in j.loc[j["grader_kind"] == "human", "grader"].dropna().unique()})


def judge_graders(frames: Frames) -> list[str]:
    """Names of the graders whose ``grader_kind`` is not ``"human"``, sorted."""
    j = frames.judgments
    return sorted({str(g) for g in j.loc[j["grader_kind"] != "human", "grader"].dropna().unique()})


def consensus_verdicts(
    frames: Frames, humans: Sequence[str] | None = None, *, context: AnalysisContext | None = None
) -> pd.DataFrame:
    """The decided human consensus on every judgment unit.

    Args:
        frames: The benchmark frames.
        humans: The graders forming the consensus (default: every human grader).
        context: An ``AnalysisContext`` shared by calls on the same frames (e.g. within one
            report) to build each consensus once (read-only tables); None: compute afresh.

    The one rule every engine uses (agreement, calibration, health, dashboard, prompt
    package): a unit is decided when :func:`gradercal.analysis.scoring.consensus` gives it a
    ``met`` — an adjudication, or a strict majority of met / not-met verdicts (also when
    the median *level* is tied between two levels below the top).

    Returns:
        ``response_id``, ``criterion_id``, ``met`` (bool), ``source``
        (``"adjudication"`` | ``"majority"``), ``n_raters``; only decided units (units
        where exactly half the verdicts say met, and units without a human verdict, are
        left out).
    """
    if context is not None:
        key = None if humans is None else tuple(humans)
        if key not in context.consensus:
            c = consensus(frames, humans, context=context)
            table = context.consensus[key] = _consensus_verdicts(c)
            base = human_levels(frames, context)
            if base is not None and len(c) == len(base.units):
                # The consensus rows are the judgment units in order: keep the positions.
                context.register(table, np.flatnonzero(_decided(c)), len(c))
        return context.consensus[key]
    return _consensus_verdicts(consensus(frames, humans))


def _decided(c: pd.DataFrame) -> npt.NDArray[np.bool_]:
    """Consensus rows with a met / not met: adjudicated or a strict majority."""
    return c["met"].notna().to_numpy(dtype=np.bool_)


def _consensus_verdicts(c: pd.DataFrame) -> pd.DataFrame:
    decided = c.loc[_decided(c)]
    source = decided["source"].to_numpy(object)
    return pd.DataFrame(
        {
            "response_id": decided["response_id"].astype(object),
            "criterion_id": decided["criterion_id"].astype(object),
            "met": decided["met"].astype(bool),
            # a level tie with a decided met / not met is a majority of those votes
            "source": pd.Series(
                np.where(source == "adjudication", "adjudication", "majority"),
                index=decided.index,
                dtype=object,
            ),
            "n_raters": decided["n_raters"].astype("int64"),
        }
    ).reset_index(drop=True)


def _verdicts(
    frames: Frames, graders: Sequence[str] | None, context: AnalysisContext | None
) -> pd.DataFrame:
    if context is None:
        return verdicts(frames, graders)
    rows = None
    if context.verdicts is None:
        context.verdicts, rows = _verdict_table(frames, None, context)
    v = context.verdicts
    entry = context.index_of(v)
    if entry is None:
        entry = context.register(v, *_verdict_units(frames, v, context, rows))
    if graders is None:
        return v
    key = tuple(graders)
    if key not in context.grader_verdicts:
        mask = v["grader"].isin(list(graders)).to_numpy(bool)
        table = context.grader_verdicts[key] = v.loc[mask].reset_index(drop=True)
        units = entry.units
        context.register(table, None if units is None else units[mask], entry.n_units)
    return context.grader_verdicts[key]


# Within one context, every verdict and consensus table it holds may carry the position
# of each of its rows among the judgment units (the rows of the scoring grid's judgment
# criteria, when those are unique): then pairing two tables is an array lookup instead
# of a merge on (response_id, criterion_id).


def _entry(context: AnalysisContext | None, df: pd.DataFrame | None) -> UnitIndex | None:
    return None if context is None else context.index_of(df)


def unit_positions(
    context: AnalysisContext | None, df: pd.DataFrame
) -> tuple[npt.NDArray[np.intp], int] | None:
    """Position of every row of ``df`` among the judgment units, and their number.

    Only for a verdict or consensus table handed out by this module with ``context`` (the
    same object) whose positions are known; None otherwise.
    """
    entry = _entry(context, df)
    if entry is None or entry.units is None:
        return None
    return entry.units, entry.n_units


def _verdict_units(
    frames: Frames, v: pd.DataFrame, context: AnalysisContext, rows: IntArray | None = None
) -> tuple[npt.NDArray[np.intp] | None, int]:
    """Unit position of every row of the verdict table ``v`` (None: not available);
    ``rows``: the judgment row of each row of ``v``, when known."""
    base = human_levels(frames, context)
    if base is None:
        return None, 0
    units = base.units
    n = len(units)
    if rows is not None and base.judgment_unit is not None:
        at = base.judgment_unit[rows]
        return (None, 0) if (at < 0).any() else (at, n)
    # Integer pair codes over the units followed by the verdict rows (one factorization
    # per key column instead of a merge on the two string columns).
    pair = []
    for col in ("response_id", "criterion_id"):
        both = np.concatenate([units[col].to_numpy(object), v[col].to_numpy(object)])
        codes, uniq = pd.factorize(both, sort=False)
        pair.append((np.asarray(codes, np.int64), len(uniq)))
    (rc, _), (cc, n_c) = pair
    if (rc < 0).any() or (cc < 0).any():  # a missing key: no position (as no merge match)
        return None, 0
    key = rc * max(n_c, 1) + cc
    unit_key, row_key = key[:n], key[n:]
    order = np.argsort(unit_key, kind="stable")
    sorted_keys = unit_key[order]
    if n and (np.diff(sorted_keys) == 0).any():  # duplicate units: a merge would add rows
        return None, 0
    at = np.searchsorted(sorted_keys, row_key)
    found = at < n
    found[found] = sorted_keys[at[found]] == row_key[found]
    if not found.all():
        return None, 0
    return np.asarray(order[at], dtype=np.intp), n


def grader_rows(context: AnalysisContext | None, v: pd.DataFrame, grader: str) -> IntArray:
    """Rows of the verdict table ``v`` whose grader is ``grader``, in order.

    From the context's index of ``v`` when it has one (grouped once per table), else by
    comparing the column.
    """
    entry = _entry(context, v)
    if entry is not None:
        return entry.grader_rows(grader)
    return np.flatnonzero(v["grader"].to_numpy(object) == grader).astype(np.intp)


def pair(
    context: AnalysisContext | None,
    left: pd.DataFrame,
    right: pd.DataFrame,
    *,
    left_rows: IntArray | None = None,
    right_rows: IntArray | None = None,
    keep_unmatched: bool = False,
) -> tuple[IntArray, IntArray]:
    """The rows of two verdict / consensus tables on the same unit.

    Pairs the rows ``left_rows`` of ``left`` (default: every row, in order; a row may
    repeat) with the rows ``right_rows`` of ``right`` (default: every row) on
    ``(response_id, criterion_id)``.

    Args:
        context: The context that handed out the tables (None: pair by a merge).
        left: A table with the unit columns (verdicts, consensus, …).
        right: Another one (or the same).
        left_rows: The rows of ``left`` to pair (positions), None: all.
        right_rows: The rows of ``right`` to pair (positions), None: all.
        keep_unmatched: Keep the left rows without a match (their ``j`` is −1), as a
            left merge does; otherwise only matched pairs, as an inner merge.

    Returns:
        ``(i, j)``: pair ``k`` is row ``i[k]`` of the left selection with row ``j[k]`` of
        the right selection (indices into ``left_rows`` / ``right_rows``, or table
        positions when the selection is None), in the row order of
        ``left.iloc[left_rows].merge(right.iloc[right_rows], on=[…], how="inner")``
        (``how="left"`` with ``keep_unmatched``).

    When ``context`` knows the unit positions of both tables (the same units) and the
    selected right rows are on distinct units, the pairs come from an array lookup;
    otherwise from a merge of the unit columns — the same pairs, in the same order.
    """
    el, er = _entry(context, left), _entry(context, right)
    if (
        el is not None
        and er is not None
        and el.units is not None
        and er.units is not None
        and el.n_units == er.n_units
    ):
        lu = el.units if left_rows is None else el.units[left_rows]
        ru = er.units if right_rows is None else er.units[right_rows]
        lut = np.full(er.n_units, -1, dtype=np.intp)
        lut[ru] = np.arange(len(ru), dtype=np.intp)
        if np.count_nonzero(lut >= 0) == len(ru):  # at most one match per left row
            j = lut[lu]
            i = np.arange(len(lu), dtype=np.intp)
            if keep_unmatched:
                return i, j
            found = j >= 0
            return i[found], j[found]
    keys = list(_UNIT_KEYS)
    lk = _selected_keys(left, left_rows).assign(_i=np.arange(_count(left, left_rows)))
    rk = _selected_keys(right, right_rows).assign(_j=np.arange(_count(right, right_rows)))
    merged = lk.merge(rk, on=keys, how="left" if keep_unmatched else "inner")
    j_float = merged["_j"].to_numpy(dtype=np.float64, na_value=np.nan)
    return (
        merged["_i"].to_numpy(dtype=np.intp),
        np.where(np.isnan(j_float), -1, j_float).astype(np.intp),
    )


def _count(df: pd.DataFrame, rows: IntArray | None) -> int:
    return len(df) if rows is None else len(rows)


def _selected_keys(df: pd.DataFrame, rows: IntArray | None) -> pd.DataFrame:
    """The unit columns of the rows ``rows`` of ``df`` (all: None), on a fresh index."""
    keys = df.loc[:, list(_UNIT_KEYS)]
    if rows is not None:
        keys = keys.iloc[rows]
    return keys.reset_index(drop=True)


def _consensus(
    frames: Frames, humans: Sequence[str], context: AnalysisContext | None
) -> pd.DataFrame:
    return consensus_verdicts(frames, humans, context=context)
