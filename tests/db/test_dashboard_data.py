"""The one loader of the dashboard's data (issue #31): ``gradercal report``, the report
dialog and the window's worker read the same :class:`DashboardData`, and the worker's
partial refresh reads again only what changed — on SQLite and PostgreSQL."""

from __future__ import annotations

import dataclasses
from typing import Any

import pandas as pd

from gradercal.dashboard import DashboardData
from gradercal.db.acceptance import load_round_table
from gradercal.db.assignments import active_design
from gradercal.db.calibrations import load_task_reviews
from gradercal.db.dashboard_data import (
    DATA_LOADERS,
    load_dashboard_data,
    refresh_dashboard_data,
)
from gradercal.db.repo import Repository
from gradercal.db.session import open_database
from tests.conftest import DatabaseTemplates, import_demo


def _frames_equal(a: Any, b: Any) -> None:
    for name in ("tasks", "criteria", "responses", "judgments", "adjudications"):
        pd.testing.assert_frame_equal(getattr(a, name), getattr(b, name))


def test_the_loader_reads_every_field_as_the_engines_readers_do(
    db_url: str, db_templates: DatabaseTemplates
) -> None:
    db_templates.fill(db_url, "demo imported", import_demo)
    db = open_database(db_url)
    try:
        repo = Repository(db)
        data = load_dashboard_data(repo, None)
        _frames_equal(data.frames, repo.load_frames())
        assert data.reviews is not None and data.rounds is not None
        pd.testing.assert_frame_equal(data.reviews, load_task_reviews(repo))
        pd.testing.assert_frame_equal(data.rounds, load_round_table(db))
        assert data.design == active_design(db)
        assert data.versions is None  # nothing revised in the demo
        # every field of the data but the frames has its one loader, and nothing else does
        names = [loader.name for loader in DATA_LOADERS]
        fields = {f.name for f in dataclasses.fields(DashboardData)} - {"frames"}
        assert sorted(names) == sorted(fields)
        for name in names:
            assert name == "versions" or getattr(data, name) is not None
    finally:
        db.dispose()


def test_a_refresh_reads_the_adjudications_alone_or_asks_for_everything(
    db_url: str, db_templates: DatabaseTemplates
) -> None:
    db_templates.fill(db_url, "demo imported", import_demo)
    db = open_database(db_url)
    try:
        repo = Repository(db)
        data = load_dashboard_data(repo, None)
        keys = ["response_id", "criterion_id"]
        done = set(map(tuple, data.frames.adjudications.loc[:, keys].to_numpy().tolist()))
        units = data.frames.judgments.loc[:, keys].to_numpy().tolist()
        response, criterion = next(u for u in units if tuple(u) not in done)
        repo.adjudicate(None, str(response), str(criterion), met=True, adjudicator="lead")
        fresh = refresh_dashboard_data(data, repo, None, ["adjudications"])
        assert fresh is not None
        assert len(fresh.frames.adjudications) == len(data.frames.adjudications) + 1
        _frames_equal(fresh.frames, repo.load_frames())
        assert fresh.frames.judgments is data.frames.judgments  # not read again
        assert fresh.reviews is data.reviews and fresh.design is data.design
        # a change no loader reads alone: everything is read again
        assert refresh_dashboard_data(data, repo, None, ["judgments"]) is None
        assert refresh_dashboard_data(data, repo, None, ["reviews", "judgments"]) is None
        again = refresh_dashboard_data(data, repo, None, ["reviews"])
        assert again is not None and again.reviews is not data.reviews
        assert again.frames is data.frames
    finally:
        db.dispose()
