"""Tests for gradercal.frames: columns, dtypes, construction from BenchmarkData."""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping

import numpy as np
import pandas as pd
import pytest

from gradercal.frames import (
    ADJUDICATION_COLUMNS,
    ADJUDICATION_DTYPES,
    CRITERION_COLUMNS,
    CRITERION_DTYPES,
    INTERNED_COLUMNS,
    JUDGMENT_COLUMNS,
    JUDGMENT_DTYPES,
    RESPONSE_COLUMNS,
    RESPONSE_DTYPES,
    TASK_COLUMNS,
    TASK_DTYPES,
    DtypeSpec,
    Frames,
    conform_frame,
    empty_frames,
    frame_from_rows,
    frames_from_data,
    make_frame,
    object_frame,
)
from gradercal.model import (
    Adjudication,
    Artifact,
    ArtifactKind,
    AutoRule,
    Benchmark,
    BenchmarkData,
    Criterion,
    GraderKind,
    Judgment,
    Response,
    Task,
)

ALL = {
    "tasks": (TASK_COLUMNS, TASK_DTYPES),
    "criteria": (CRITERION_COLUMNS, CRITERION_DTYPES),
    "responses": (RESPONSE_COLUMNS, RESPONSE_DTYPES),
    "judgments": (JUDGMENT_COLUMNS, JUDGMENT_DTYPES),
    "adjudications": (ADJUDICATION_COLUMNS, ADJUDICATION_DTYPES),
}


def _dtype_names(df: pd.DataFrame) -> list[str]:
    return [str(d) for d in df.dtypes]


def _expected_dtype_names(dtypes: Mapping[str, DtypeSpec]) -> list[str]:
    return [str(pd.Series([], dtype=d).dtype) for d in dtypes.values()]


def sample_data() -> BenchmarkData:
    t1 = Task(
        id="T1",
        prompt="p1",
        workflow="evidence handling",
        domain="immunology",
        answer_format="json",
        artifacts=(
            Artifact(kind=ArtifactKind.PDF, title="blot", path="artifacts/T1/blot.pdf"),
            Artifact(kind=ArtifactKind.URL, title="ref", url="https://example.org", position=1),
        ),
        criteria=(
            Criterion("c1", "Identifies the band", 24, position=0, tags=("axis:accuracy",)),
            Criterion("c2", "Bad antibody", -8, position=1),
            Criterion(
                "c3",
                "Kd within 10%",
                5,
                position=2,
                auto=AutoRule(key="answer.kd_nM", target=42, rel_tol=0.1),
            ),
            Criterion("c4", "Explains", 10, position=3, levels=3),
        ),
    )
    # Same criterion id "c1" as T1: ids are unique only within a task.
    t2 = Task(id="T2", prompt="p2", criteria=(Criterion("c1", "Other", 3),))
    return BenchmarkData(
        benchmark=Benchmark(name="demo", pass_threshold=0.75),
        tasks=[t1, t2],
        responses=[
            Response("r1", "T1", "model-a", "text", answer={"kd_nM": 40.5, "list": [1, 2]}),
            Response("r2", "T2", "model-b", "text"),
        ],
        judgments=[
            Judgment("r1", "c1", "expert-1", met=True, confidence=0.9, rationale="ok"),
            Judgment("r1", "c4", "expert-1", met=None, level=1, unclear=True, unclear_note="?"),
            Judgment("r2", "c1", "judge-x", grader_kind=GraderKind.JUDGE, met=False),
            Judgment("r1", "c2", "expert-1"),  # not answered yet
        ],
    )


def test_empty_frames_columns_dtypes_and_threshold() -> None:
    frames = empty_frames(0.5)
    assert frames.pass_threshold == 0.5
    assert empty_frames().pass_threshold == 0.7
    for name, (columns, dtypes) in ALL.items():
        df = getattr(frames, name)
        assert tuple(df.columns) == columns, name
        assert len(df) == 0
        assert _dtype_names(df) == _expected_dtype_names(dtypes), name
    assert str(frames.judgments["met"].dtype) == "boolean"
    assert str(frames.judgments["level"].dtype) == "Int64"
    assert str(frames.adjudications["met"].dtype) == "bool"
    frames.validate()


def test_column_constants_follow_dtypes() -> None:
    assert TASK_COLUMNS == (
        "task_id",
        "workflow",
        "domain",
        "answer_format",
        "n_artifacts",
        "has_artifacts",
    )
    assert JUDGMENT_COLUMNS == (
        "response_id",
        "criterion_id",
        "grader",
        "grader_kind",
        "met",
        "level",
        "confidence",
        "rationale",
        "unclear",
    )
    assert ADJUDICATION_COLUMNS == (
        "response_id",
        "criterion_id",
        "met",
        "level",
        "adjudicator",
        "note",
    )
    assert RESPONSE_COLUMNS == ("response_id", "task_id", "model", "answer")
    assert CRITERION_COLUMNS[:2] == ("task_id", "criterion_id")


def test_frames_from_data_values() -> None:
    adj = [Adjudication("r1", "c1", met=False, adjudicator="lead", note="no", level=None)]
    frames = frames_from_data(sample_data(), adj)
    assert frames.pass_threshold == 0.75
    for name, (columns, dtypes) in ALL.items():
        df = getattr(frames, name)
        assert tuple(df.columns) == columns
        assert _dtype_names(df) == _expected_dtype_names(dtypes), name

    tasks = frames.tasks.set_index("task_id")
    assert tasks.loc["T1", "n_artifacts"] == 2
    assert bool(tasks.loc["T1", "has_artifacts"]) is True
    assert tasks.loc["T1", "workflow"] == "evidence handling"
    assert tasks.loc["T2", "n_artifacts"] == 0
    assert bool(tasks.loc["T2", "has_artifacts"]) is False
    assert tasks.loc["T2", "workflow"] is None
    assert tasks.loc["T2", "answer_format"] is None

    crit = frames.criteria
    assert list(zip(crit["task_id"], crit["criterion_id"], strict=True)) == [
        ("T1", "c1"),
        ("T1", "c2"),
        ("T1", "c3"),
        ("T1", "c4"),
        ("T2", "c1"),
    ]
    assert crit["points"].tolist() == [24, -8, 5, 10, 3]
    assert crit["position"].tolist() == [0, 1, 2, 3, 0]
    assert crit["levels"].tolist() == [2, 2, 2, 3, 2]
    assert crit["kind"].tolist() == ["judgment", "judgment", "auto", "judgment", "judgment"]
    assert crit["tags"].iloc[0] == ("axis:accuracy",)
    assert crit["tags"].iloc[1] == ()
    auto = crit.iloc[2]
    assert auto["auto_key"] == "answer.kd_nM"
    assert auto["auto_target"] == 42
    assert math.isnan(auto["auto_abs_tol"])
    assert auto["auto_rel_tol"] == pytest.approx(0.1)
    assert crit["auto_key"].iloc[0] is None
    assert crit["auto_target"].iloc[0] is None

    resp = frames.responses
    assert resp["answer"].iloc[0] == {"kd_nM": 40.5, "list": [1, 2]}
    assert resp["answer"].iloc[1] is None
    assert resp["model"].tolist() == ["model-a", "model-b"]

    j = frames.judgments
    assert j["grader_kind"].tolist() == ["human", "human", "judge", "human"]
    assert bool(j["met"].iloc[0]) is True
    assert pd.isna(j["met"].iloc[1])
    assert j["level"].iloc[1] == 1
    assert pd.isna(j["level"].iloc[0])
    assert bool(j["met"].iloc[2]) is False
    assert pd.isna(j["met"].iloc[3])
    assert j["confidence"].iloc[0] == pytest.approx(0.9)
    assert math.isnan(j["confidence"].iloc[1])
    assert j["unclear"].tolist() == [False, True, False, False]
    assert j["rationale"].iloc[0] == "ok"
    assert j["rationale"].iloc[1] is None

    a = frames.adjudications
    assert len(a) == 1
    assert a.iloc[0]["adjudicator"] == "lead"
    assert bool(a.iloc[0]["met"]) is False
    assert pd.isna(a.iloc[0]["level"])
    assert a.iloc[0]["note"] == "no"


def test_make_frame_from_mappings_and_sequences() -> None:
    by_name = make_frame(
        RESPONSE_DTYPES,
        [{"response_id": "r1", "task_id": "T1", "model": "m", "answer": [1, 2]}],
    )
    by_position = make_frame(RESPONSE_DTYPES, [("r1", "T1", "m", [1, 2])])
    pd.testing.assert_frame_equal(by_name, by_position)
    # A list answer stays one cell.
    assert by_name["answer"].iloc[0] == [1, 2]
    # Absent mapping keys are missing values.
    partial = make_frame(
        JUDGMENT_DTYPES,
        [
            {
                "response_id": "r",
                "criterion_id": "c",
                "grader": "g",
                "grader_kind": "human",
                "unclear": False,
            }
        ],
    )
    assert pd.isna(partial["met"].iloc[0])
    assert pd.isna(partial["level"].iloc[0])
    assert math.isnan(partial["confidence"].iloc[0])


def test_make_frame_rejects_bad_rows() -> None:
    with pytest.raises(ValueError, match="expected 4"):
        make_frame(RESPONSE_DTYPES, [("r1", "T1", "m")])
    with pytest.raises(ValueError, match=r"'position' \(int64\) cannot hold missing"):
        make_frame(CRITERION_DTYPES, [{"task_id": "T", "criterion_id": "c"}])


def test_conform_frame_round_trip_and_reorder() -> None:
    frames = frames_from_data(sample_data())
    for name, (_, dtypes) in ALL.items():
        df = getattr(frames, name)
        pd.testing.assert_frame_equal(conform_frame(df, dtypes), df)
    # Like a pd.read_sql result: other order, plain object/float columns, an extra column.
    raw = pd.DataFrame(
        {
            "extra": [1, 2],
            "unclear": [0, 1],
            "level": [None, 2.0],
            "met": [True, None],
            "grader_kind": ["human", "judge"],
            "grader": ["e", "j"],
            "criterion_id": ["c1", "c1"],
            "response_id": ["r1", "r1"],
            "confidence": [None, 0.5],
            "rationale": [None, "why"],
        }
    )
    out = conform_frame(raw, JUDGMENT_DTYPES)
    assert tuple(out.columns) == JUDGMENT_COLUMNS
    assert _dtype_names(out) == _expected_dtype_names(JUDGMENT_DTYPES)
    assert out["level"].tolist()[1] == 2
    assert pd.isna(out["level"].iloc[0])
    assert out["unclear"].tolist() == [False, True]
    with pytest.raises(ValueError, match="lacks columns: grader, grader_kind"):
        conform_frame(raw.drop(columns=["grader", "grader_kind"]), JUDGMENT_DTYPES)


def test_validate_reports_missing_columns() -> None:
    frames = empty_frames()
    broken = Frames(
        pass_threshold=0.7,
        tasks=frames.tasks,
        criteria=frames.criteria.drop(columns=["points"]),
        responses=frames.responses,
        judgments=frames.judgments,
        adjudications=frames.adjudications,
    )
    with pytest.raises(ValueError, match=r"frames\.criteria lacks columns: points"):
        broken.validate()


def test_key_columns_share_one_object_per_identifier() -> None:
    """Ids are interned: equal ids in any frame are the same object (pandas matches them
    by identity first); free text is left alone; the values are unchanged."""
    rows = [("r" + str(i // 3), "c" + "1", "ann", "human", True, None, None, "ok", False)
            for i in range(9)]  # fmt: skip
    j = make_frame(JUDGMENT_DTYPES, rows)
    r = make_frame(RESPONSE_DTYPES, [("".join(["r", "0"]), "T1", "m", None)])
    assert {"response_id", "criterion_id", "grader", "task_id"} <= INTERNED_COLUMNS
    assert "rationale" not in INTERNED_COLUMNS and "text" not in INTERNED_COLUMNS
    assert j["response_id"][0] is j["response_id"][1] is r["response_id"][0]
    assert j["response_id"][0] is sys.intern("r0")
    assert list(j["response_id"]) == [f"r{i // 3}" for i in range(9)]
    assert j["response_id"].dtype == object


def test_object_frame_keeps_text_columns_as_object() -> None:
    ids = np.array(["a", "b", None], dtype=object)
    df = object_frame({"id": ids, "n": np.arange(3), "x": [0.5, 1.0, 2.0]})
    assert df["id"].dtype == object and list(df["id"]) == ["a", "b", None]
    assert df["n"].dtype == np.int64 and df["x"].dtype == np.float64
    assert pd.DataFrame({"id": ids})["id"].dtype != object  # what pandas 3 would do


def test_frame_from_rows_infers_like_pandas_except_text() -> None:
    rows = [
        ("a", 1, None, True, 1.5, ("x",), None),
        ("b", 2, 3, None, float("nan"), (), None),
    ]
    cols = ["s", "i", "f", "b", "g", "t", "n"]
    ours = frame_from_rows(rows, cols)
    theirs = pd.DataFrame(rows, columns=cols)
    assert ours["s"].dtype == object and list(ours["s"]) == ["a", "b"]
    theirs["s"] = theirs["s"].astype(object)
    pd.testing.assert_frame_equal(ours, theirs, check_exact=True)
