"""The verdict table and every grader's levels by integer lookups (#33).

:func:`gradercal.analysis.verdicts.verdicts` and
:func:`gradercal.analysis.scoring.human_levels` find each grader's last verdict per unit and
its unit by array lookups on integer codes of the judgments' keys
(:func:`~gradercal.analysis.scoring.judgment_keys`) instead of ``drop_duplicates`` and a
merge on text columns. Here, on random benchmarks — repeated verdicts, unknown responses
and criteria, auto criteria, ordinal levels, missing verdicts and names, a criterion id
repeated in a task, a response listed twice — both equal what the merges give (written
out below as they were, from pandas' own ``drop_duplicates`` and ``merge``), frame for
frame, dtype for dtype.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gradercal.analysis.context import AnalysisContext
from gradercal.analysis.scoring import _grid, effective_level, human_levels
from gradercal.analysis.verdicts import _judgment_grid, unit_positions, verdicts
from gradercal.formats import read_path
from gradercal.frames import (
    ADJUDICATION_DTYPES,
    CRITERION_DTYPES,
    JUDGMENT_DTYPES,
    RESPONSE_DTYPES,
    TASK_DTYPES,
    Frames,
    frames_from_data,
    make_frame,
)
from tests.conftest import DATA, DEMO

KEYS = ["response_id", "criterion_id"]
COLUMNS = [
    "response_id", "task_id", "model", "criterion_id", "grader", "grader_kind", "met",
    "confidence", "rationale", "unclear", "points", "tags", "levels", "text", "workflow",
    "domain",
]  # fmt: skip


def merged_verdicts(frames: Frames, graders: list[str] | None) -> pd.DataFrame:
    """The verdict table by ``drop_duplicates`` and a merge with the judgment grid."""
    j = frames.judgments
    if graders is not None:
        j = j.loc[j["grader"].isin(graders)]
    j = j.drop_duplicates([*KEYS, "grader"], keep="last")
    out = j.merge(_judgment_grid(frames), on=KEYS, how="inner")
    top = np.clip(out["levels"].to_numpy(dtype=np.float64), 2.0, None) - 1.0
    eff = effective_level(out["met"], out["level"], pd.Series(top, copy=False))
    keep = ~np.isnan(eff)
    out = out.loc[keep].copy()
    out["met"] = (eff[keep] == top[keep]).astype(bool)
    return out.loc[:, COLUMNS].reset_index(drop=True)


def merged_levels(frames: Frames) -> dict[str, Any] | None:
    """Every grader's level per unit by ``drop_duplicates`` and a merge with the units."""
    grid = _grid(frames)
    units = grid.loc[~grid["is_auto"], [*KEYS, "top"]].reset_index(drop=True)
    if units.duplicated(KEYS).any():
        return None
    rows = units.assign(_row=np.arange(len(units), dtype=np.intp))
    j = frames.judgments.drop_duplicates([*KEYS, "grader"], keep="last")
    hj = rows.merge(j.loc[:, [*KEYS, "grader", "met", "level"]], on=KEYS, how="inner")
    eff = effective_level(hj["met"], hj["level"], hj["top"])
    keep = ~np.isnan(eff)
    codes, names = pd.factorize(hj["grader"].to_numpy(object)[keep], sort=False)
    return {
        "row": hj["_row"].to_numpy(np.intp)[keep],
        "grader": np.asarray(codes, np.intp),
        "names": {name: k for k, name in enumerate(names)},
        "eff": eff[keep],
        "is_met": eff[keep] == hj["top"].to_numpy(dtype="float64")[keep],
    }


def _check(frames: Frames, graders: list[str] | None = None) -> None:
    expected = merged_verdicts(frames, graders)
    pd.testing.assert_frame_equal(verdicts(frames, graders), expected)
    context = AnalysisContext()
    pd.testing.assert_frame_equal(verdicts(frames, graders, context=context), expected)
    levels = merged_levels(frames)
    base = human_levels(frames, context)
    assert (base is None) == (levels is None)
    if base is not None and levels is not None:
        for name, want in levels.items():
            got = getattr(base, name)
            if isinstance(want, dict):
                assert got == want, name
            else:
                np.testing.assert_array_equal(got, want, err_msg=name)
        # every verdict row's unit, as the merge with the units places it
        v = verdicts(frames, context=context)
        at = unit_positions(context, v)
        assert at is not None
        placed = v.loc[:, KEYS].merge(
            base.units.loc[:, KEYS].assign(_row=np.arange(len(base.units))), on=KEYS, how="left"
        )
        np.testing.assert_array_equal(at[0], placed["_row"].to_numpy(np.intp))


@st.composite
def benchmarks(draw: st.DrawFn) -> Frames:
    tasks = ["t0", "t1", "t2"]
    crit_rows: list[dict[str, Any]] = []
    for t in tasks:
        for k in range(draw(st.integers(1, 4))):
            cid = draw(st.sampled_from([f"c{k}", "c0", "shared"]))  # repeats in a task too
            auto = draw(st.booleans()) and draw(st.booleans())
            crit_rows.append(
                {
                    "task_id": t, "criterion_id": cid, "position": k, "text": f"{t}/{cid}",
                    "points": draw(st.integers(-2, 5)), "kind": "auto" if auto else "judgment",
                    "tags": tuple(draw(st.lists(st.sampled_from(["a", "b"]), max_size=2))),
                    "levels": draw(st.sampled_from([2, 3])),
                    "auto_key": "x" if auto else None, "auto_target": 1 if auto else None,
                }
            )  # fmt: skip
    resp_rows = [
        {"response_id": f"r{i}", "task_id": draw(st.sampled_from(tasks)), "model": f"m{i % 2}"}
        for i in range(draw(st.integers(1, 5)))
    ]
    if draw(st.booleans()) and draw(st.booleans()):  # a response listed twice
        resp_rows.append({**resp_rows[0], "task_id": draw(st.sampled_from(tasks))})
    names = ["r0", "r1", "r2", "r3", "r4", "unknown"]
    crits = ["c0", "c1", "c2", "c3", "shared", "nowhere"]
    graders = ["a", "b", "judge", None]
    j_rows = [
        {
            "response_id": draw(st.sampled_from(names)),
            "criterion_id": draw(st.sampled_from(crits)),
            "grader": (g := draw(st.sampled_from(graders))),
            "grader_kind": "judge" if g == "judge" else "human",
            "met": draw(st.sampled_from([True, False, None])),
            "level": draw(st.sampled_from([None, None, 0, 1, 2, 5])),
            "confidence": draw(st.sampled_from([0.2, 0.9, float("nan")])),
            "rationale": draw(st.sampled_from([None, "why", "<b>"])),
            "unclear": draw(st.booleans()),
        }
        for _ in range(draw(st.integers(0, 40)))
    ]
    a_rows = [
        {"response_id": r["response_id"], "criterion_id": r["criterion_id"], "met": True}
        for r in j_rows[: draw(st.integers(0, 3))]
        if r["met"] is not None
    ]
    return Frames(
        pass_threshold=0.7,
        tasks=make_frame(TASK_DTYPES, [{"task_id": t, "workflow": "w", "domain": None, "n_artifacts": 0, "has_artifacts": False} for t in tasks[:2]]),
        criteria=make_frame(CRITERION_DTYPES, crit_rows),
        responses=make_frame(RESPONSE_DTYPES, resp_rows),
        judgments=make_frame(JUDGMENT_DTYPES, j_rows),
        adjudications=make_frame(ADJUDICATION_DTYPES, a_rows),
    )  # fmt: skip


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(frames=benchmarks(), subset=st.sampled_from([None, ["a"], ["b", "judge"], ["zed"]]))
def test_lookups_equal_the_merges(frames: Frames, subset: list[str] | None) -> None:
    _check(frames, subset)


@pytest.mark.parametrize("path", [DEMO, DATA / "mini"])
def test_lookups_equal_the_merges_on_the_samples(path: Any) -> None:
    frames = frames_from_data(read_path(path))
    _check(frames)
    _check(frames, sorted(set(frames.judgments["grader"]))[:2])
