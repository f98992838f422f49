"""The column-wise read of ``load_frames`` gives the frames of the rows path, exactly.

``Repository.load_frames`` reads the judgments through the driver's cursor into arrays
(``gradercal.db.frames_read``); ``load_frames_by_rows`` is the plain joined-rows path it
replaced. On both backends, with two benchmarks in one database, ordinal levels,
unanswered verdicts, confidences, rationales, unclear flags, artifacts, adjudications and
auto criteria, the two must be equal frame by frame, dtype by dtype.
"""

from __future__ import annotations

import gc
from pathlib import Path

import pandas as pd
import pytest
from sqlalchemy import select, update

from gradercal.db import models as m
from gradercal.db.frames_read import collections_paused
from gradercal.db.repo import Repository
from gradercal.formats import read_folder, read_path
from gradercal.frames import Frames
from gradercal.synth import SynthConfig, generate

FRAMES = ("tasks", "criteria", "responses", "judgments", "adjudications")


def assert_same_frames(a: Frames, b: Frames) -> None:
    assert a.pass_threshold == b.pass_threshold
    for name in FRAMES:
        fa, fb = getattr(a, name), getattr(b, name)
        assert list(map(str, fa.dtypes)) == list(map(str, fb.dtypes)), name
        pd.testing.assert_frame_equal(fa, fb, obj=name)


@pytest.fixture
def two_benchmarks(repo: Repository, tmp_path: Path, mini: Path) -> Repository:
    generate(tmp_path / "synth", SynthConfig(tasks=12, criteria_per_task=8, seed=3))
    repo.import_data(read_folder(mini))
    repo.import_data(read_path(tmp_path / "synth"))
    return repo


def _synth_name(repo: Repository) -> str:
    with repo.db.read() as s:
        names = s.scalars(select(m.Benchmark.name)).all()
    return next(n for n in names if n != "mini")


def test_column_read_equals_the_rows_path(two_benchmarks: Repository) -> None:
    repo = two_benchmarks
    synth = _synth_name(repo)
    frames = repo.load_frames(synth)
    j = frames.judgments
    # the generated benchmark exercises what the conversions handle
    assert j["level"].notna().any() and j["level"].isna().any()
    assert j["confidence"].notna().any() and j["confidence"].isna().any()
    assert j["rationale"].notna().any() and j["unclear"].any()
    assert (frames.criteria["kind"] == "auto").any() and frames.tasks["has_artifacts"].any()
    first = j.iloc[0]
    repo.adjudicate(synth, first["response_id"], first["criterion_id"], met=True, adjudicator="x")
    with repo.db.write() as s:  # unanswered verdicts, and a level on an unanswered one
        s.execute(update(m.Judgment).where(m.Judgment.id % 17 == 0).values(met=None))
        s.execute(update(m.Judgment).where(m.Judgment.id % 34 == 0).values(level=1))
    for name in ("mini", synth):
        fast, rows = repo.load_frames(name), repo.load_frames_by_rows(name)
        assert_same_frames(fast, rows)
    after = repo.load_frames(synth)
    assert after.judgments["met"].isna().sum() > 0
    assert len(after.adjudications) == 1
    assert len(after.judgments) == len(j)  # the other benchmark's judgments stay out


def test_ids_are_shared_objects(two_benchmarks: Repository) -> None:
    j = two_benchmarks.load_frames(_synth_name(two_benchmarks)).judgments
    ids = j["response_id"].to_numpy()
    same = [x for x in ids if x == ids[0]]
    assert all(x is ids[0] for x in same)  # one object per id (frames.INTERNED_COLUMNS)


def test_a_criterion_outside_the_benchmark_takes_the_rows_path(
    two_benchmarks: Repository,
) -> None:
    repo = two_benchmarks
    synth = _synth_name(repo)
    with repo.db.write() as s:
        foreign = s.scalar(
            select(m.Criterion.id)
            .join(m.Task, m.Task.id == m.Criterion.task_id)
            .join(m.Benchmark, m.Benchmark.id == m.Task.benchmark_id)
            .where(m.Benchmark.name == "mini")
            .limit(1)
        )
        first = s.scalar(select(func_min_judgment(synth)))
        s.execute(update(m.Judgment).where(m.Judgment.id == first).values(criterion_id=foreign))
    fast, rows = repo.load_frames(synth), repo.load_frames_by_rows(synth)
    assert_same_frames(fast, rows)
    # the dashboard's pandas-free read (the report's child) hands it over to the rows path
    from gradercal.db.dashboard_data import fetch_dashboard_rows, load_dashboard_data

    assert fetch_dashboard_rows(repo, synth) is None
    assert_same_frames(load_dashboard_data(repo, synth).frames, rows)
    assert fast.judgments["criterion_id"].iloc[0] in set(
        repo.load_frames("mini").criteria["criterion_id"]
    )


def func_min_judgment(name: str) -> object:
    from sqlalchemy import func

    return (
        select(func.min(m.Judgment.id))
        .join(m.Response, m.Response.id == m.Judgment.response_id)
        .join(m.Benchmark, m.Benchmark.id == m.Response.benchmark_id)
        .where(m.Benchmark.name == name)
        .scalar_subquery()
    )


def test_an_empty_benchmark(repo: Repository, mini: Path) -> None:
    data = read_folder(mini)
    data.judgments = []
    data.adjudications = []
    repo.import_data(data)
    assert_same_frames(repo.load_frames(), repo.load_frames_by_rows())
    assert repo.load_frames().judgments.empty


def test_collections_are_paused_and_restored() -> None:
    assert gc.isenabled()
    with collections_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()  # the Qt app's way: collections from a timer; the read must not undo it
    try:
        with collections_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
