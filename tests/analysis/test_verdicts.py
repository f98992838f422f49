"""gradercal.analysis.verdicts: the pairing function (:func:`pair`), by unit positions and by a
merge, against pandas' own merge; the level rule of :func:`verdicts`."""

from __future__ import annotations

import dataclasses

import numpy as np
import numpy.typing as npt
import pandas as pd
import pytest

from gradercal.analysis.context import AnalysisContext
from gradercal.analysis.verdicts import (
    consensus_verdicts,
    grader_rows,
    human_graders,
    judge_graders,
    pair,
    unit_positions,
    verdicts,
)
from gradercal.formats import read_path
from gradercal.frames import Frames, frames_from_data
from tests.conftest import DATA

KEYS = ["response_id", "criterion_id"]
IntArray = npt.NDArray[np.intp]


@pytest.fixture(scope="module")
def mini() -> Frames:
    return frames_from_data(read_path(DATA / "mini"))


def _expected(
    left: pd.DataFrame,
    right: pd.DataFrame,
    left_rows: IntArray | None,
    right_rows: IntArray | None,
    keep_unmatched: bool,
) -> tuple[list[int], list[int]]:
    """The pairs as pandas' merge of the selected rows gives them (row tags carried along)."""
    lsel = left if left_rows is None else left.iloc[left_rows]
    rsel = right if right_rows is None else right.iloc[right_rows]
    lsel = lsel.loc[:, KEYS].reset_index(drop=True).assign(tag_l=np.arange(len(lsel)))
    rsel = rsel.loc[:, KEYS].reset_index(drop=True).assign(tag_r=np.arange(len(rsel)))
    m = lsel.merge(rsel, on=KEYS, how="left" if keep_unmatched else "inner")
    return m["tag_l"].tolist(), [-1 if pd.isna(x) else int(x) for x in m["tag_r"]]


def _tables(
    rng: np.random.Generator, n_units: int, duplicates: bool
) -> tuple[pd.DataFrame, npt.NDArray[np.intp], pd.DataFrame, npt.NDArray[np.intp]]:
    """A verdict table (graders a, b, c; some units missing) and a consensus table over
    ``n_units`` units, with the unit position of every row of each."""
    units = pd.DataFrame(
        {
            "response_id": [f"r{k // 4}" for k in range(n_units)],
            "criterion_id": [f"c{k % 4}" for k in range(n_units)],
        }
    )
    parts, positions = [], []
    for g in ("a", "b", "c"):
        mine = np.flatnonzero(rng.random(n_units) < 0.7)
        rng.shuffle(mine)
        if duplicates and len(mine):  # a grader's second verdict on some units
            mine = np.concatenate([mine, rng.choice(mine, size=min(3, len(mine)))])
        parts.append(units.iloc[mine].assign(grader=g, met=rng.random(len(mine)) < 0.5))
        positions.append(mine)
    v = pd.concat(parts, ignore_index=True)
    v_units = np.concatenate(positions).astype(np.intp)
    decided = np.flatnonzero(rng.random(n_units) < 0.6)
    if duplicates and len(decided):
        decided = np.sort(np.concatenate([decided, decided[:2]]))
    cons = units.iloc[decided].assign(met=rng.random(len(decided)) < 0.5).reset_index(drop=True)
    return v, v_units, cons, decided.astype(np.intp)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("duplicates", [False, True])
@pytest.mark.parametrize("keep_unmatched", [False, True])
def test_pair_by_positions_and_by_merge_give_the_merge_pairs(
    seed: int, duplicates: bool, keep_unmatched: bool
) -> None:
    """Grader vs consensus, grader vs grader, repeated left rows, a grader without verdicts:
    the context's lookup, the merge without a context and pandas' merge agree pair for pair
    (the lookup gives way to the merge where the right rows repeat a unit)."""
    rng = np.random.default_rng(seed)
    n_units = int(rng.integers(1, 40))
    v, v_units, cons, c_units = _tables(rng, n_units, duplicates)
    context = AnalysisContext()
    context.register(v, v_units, n_units)
    context.register(cons, c_units, n_units)
    assert unit_positions(context, v) is not None
    rows = {g: grader_rows(context, v, g) for g in ("a", "b", "c", "nobody")}
    for g, r in rows.items():
        assert r.tolist() == grader_rows(None, v, g).tolist()
        assert r.tolist() == np.flatnonzero(v["grader"].to_numpy(object) == g).tolist()
    assert len(rows["nobody"]) == 0
    repeated = np.concatenate([rows["b"], rows["b"][:3]]) if len(rows["b"]) else rows["b"]
    cases: list[tuple[pd.DataFrame, IntArray | None, pd.DataFrame, IntArray | None]] = [
        (v, rows["a"], cons, None),
        (v, None, cons, None),
        (v, rows["a"], v, rows["b"]),
        (v, repeated, v, rows["c"]),
        (v, rows["nobody"], cons, None),
        (v, rows["a"], v, rows["nobody"]),
        (cons, None, v, rows["c"]),
        (cons, None, cons, None),
    ]
    for left, lrows, right, rrows in cases:
        want = _expected(left, right, lrows, rrows, keep_unmatched)
        for ctx in (context, None):
            i, j = pair(
                ctx, left, right, left_rows=lrows, right_rows=rrows, keep_unmatched=keep_unmatched
            )
            assert i.dtype == np.intp
            assert j.dtype == np.intp
            assert (i.tolist(), j.tolist()) == want


def test_pair_without_positions_merges() -> None:
    """Tables the context does not know, or knows without positions, or with other units:
    pairs by the merge."""
    rng = np.random.default_rng(3)
    v, _, cons, c_units = _tables(rng, 20, False)
    context = AnalysisContext()
    context.register(v, None, 20)
    context.register(cons, c_units[: len(cons)], 21)  # a different number of units
    for ctx in (context, AnalysisContext(), None):
        for keep in (False, True):
            i, j = pair(ctx, v, cons, keep_unmatched=keep)
            assert (i.tolist(), j.tolist()) == _expected(v, cons, None, None, keep)


def test_pair_on_a_benchmark_is_the_same_with_and_without_a_context(mini: Frames) -> None:
    """On real verdict and consensus tables (positions known): every grader against the
    consensus and against every other grader."""
    context = AnalysisContext()
    v = verdicts(mini, context=context)
    cons = consensus_verdicts(mini, human_graders(mini), context=context)
    assert unit_positions(context, v) is not None
    assert unit_positions(context, cons) is not None
    graders = [*human_graders(mini), *judge_graders(mini)]
    for a in graders:
        ra = grader_rows(context, v, a)
        for keep in (False, True):
            got = pair(context, v, cons, left_rows=ra, keep_unmatched=keep)
            plain = pair(None, v, cons, left_rows=ra, keep_unmatched=keep)
            assert [x.tolist() for x in got] == [x.tolist() for x in plain]
            assert (got[0].tolist(), got[1].tolist()) == _expected(v, cons, ra, None, keep)
        for b in graders:
            rb = grader_rows(context, v, b)
            got = pair(context, v, v, left_rows=ra, right_rows=rb)
            assert (got[0].tolist(), got[1].tolist()) == _expected(v, v, ra, rb, False)


def test_verdict_level_rule(mini: Frames) -> None:
    """A verdict is met when its effective level (level clipped to 0 … levels−1, else
    met × top) is the top level — a "partial" is not met; without level or met it is
    dropped."""
    j = mini.judgments.copy()
    j["level"] = j["level"].astype("Int64")
    j["met"] = j["met"].astype("boolean")
    levels = [0, 1, 2, 7, -3, 1, None, None]  # out of range levels are clipped
    j.loc[j.index[: len(levels)], "level"] = levels
    j.loc[j.index[6], "met"] = pd.NA  # neither level nor met: dropped
    crit = mini.criteria.assign(levels=3)  # every criterion with a "partial" level
    frames = dataclasses.replace(mini, judgments=j, criteria=crit)
    v = verdicts(frames)
    last = j.drop_duplicates(["response_id", "criterion_id", "grader"], keep="last")
    want = {}
    for rid, cid, g, level, met in zip(
        last["response_id"],
        last["criterion_id"],
        last["grader"],
        last["level"],
        last["met"],
        strict=True,
    ):
        if level is not pd.NA:
            eff = min(max(float(level), 0.0), 2.0)
        elif met is not pd.NA:
            eff = 2.0 * float(bool(met))
        else:
            continue
        want[(rid, cid, g)] = eff == 2.0
    got = {
        (a, b, g): bool(x)
        for a, b, g, x in zip(
            v["response_id"], v["criterion_id"], v["grader"], v["met"], strict=True
        )
    }
    assert got == want
    assert len(got) == len(last) - 1
