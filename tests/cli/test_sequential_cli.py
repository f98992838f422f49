"""``estimate --sequential`` and ``progress --judge``: confidence sequences beside the
fixed-sample intervals, the labels taken in consensus completion order (SQLite and
PostgreSQL)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from sqlalchemy import select, update

from gradercal.analysis.estimate import estimate_table
from gradercal.analysis.scoring import PASS_EPSILON
from gradercal.analysis.sequential import ppi_confidence_sequence
from gradercal.cli import main
from gradercal.db import models as m
from gradercal.db.repo import Repository
from gradercal.db.session import open_database
from gradercal.synth import SynthConfig, generate


@pytest.fixture
def graded(db_url: str, tmp_path: Path) -> tuple[str, list[str]]:
    """A small synthetic benchmark whose responses' expert verdicts were completed in a
    known order (not the order of their ids); returns the database and that order."""
    generate(
        tmp_path / "b", SynthConfig(tasks=25, criteria_per_task=6, artifacts_per_task=0, seed=5)
    )
    res = CliRunner().invoke(main, ["import", str(tmp_path / "b"), "--db", db_url])
    assert res.exit_code == 0, res.output
    db = open_database(db_url)
    base = datetime(2026, 1, 1, tzinfo=UTC)
    rng = np.random.default_rng(0)
    with db.write() as s:
        rows = s.execute(select(m.Response.id, m.Response.external_id)).all()
        perm = rng.permutation(len(rows))
        order = [""] * len(rows)
        humans = select(m.Grader.id).where(m.Grader.kind == "human").scalar_subquery()
        for (rid, ext), rank in zip(rows, perm, strict=True):
            order[int(rank)] = str(ext)
            s.execute(
                update(m.Judgment)
                .where(m.Judgment.response_id == rid, m.Judgment.grader_id.in_(humans))
                .values(updated_at=base + timedelta(minutes=int(rank)))
            )
    db.dispose()
    return db_url, order


def _expected(db_url: str, order: list[str]) -> dict[tuple[str, str], list[float]]:
    repo = Repository(open_database(db_url))
    frames = repo.load_frames()
    repo.db.dispose()
    t = estimate_table(frames, "judge")
    rank = {rid: i for i, rid in enumerate(order)}
    cut = frames.pass_threshold - PASS_EPSILON
    out = {}
    for model, sel in t.groupby("model"):
        lab = sel.loc[sel["human_score"].notna()].copy()
        lab = lab.iloc[np.argsort([rank[r] for r in lab["response_id"]], kind="stable")]
        for fig in ("mean_score", "pass_rate"):
            y, f, fa = lab["human_score"], lab["judge_score"], sel["judge_score"]
            if fig == "pass_rate":
                y, f, fa = y >= cut, f >= cut, fa >= cut
            cs = ppi_confidence_sequence(
                y.to_numpy(float), f.to_numpy(float), float(fa.to_numpy(float).mean())
            )
            out[(str(model), fig)] = list(cs.last())
    return out


def test_estimate_sequential_json(graded: tuple[str, list[str]]) -> None:
    db_url, order = graded
    res = CliRunner().invoke(
        main, ["estimate", "--db", db_url, "-j", "judge", "--sequential", "--json"]
    )
    assert res.exit_code == 0, res.output
    rep = json.loads(res.output)
    want = _expected(db_url, order)
    for row in rep["models"]:
        for fig in ("mean_score", "pass_rate"):
            part = row[fig]
            assert part["cs"] == pytest.approx(want[(row["model"], fig)], abs=1e-12)
            assert len(part["ci"]) == 2
            # anytime-valid costs width: the sequence is wider than the fixed interval
            assert part["cs"][1] - part["cs"][0] >= part["ci"][1] - part["ci"][0]
    seq = rep["sequential"]
    assert seq["order"] == "consensus completion time"
    assert seq["agreement"]["statistic"].startswith("percent agreement")
    assert (
        0 <= seq["agreement"]["cs"][0] <= seq["agreement"]["estimate"] <= seq["agreement"]["cs"][1]
    )
    for task in seq["tasks"]:
        low, high = task["cs"]
        assert task["decided"] == ("above" if low >= 0.9 else "below" if high < 0.9 else None)
    # without --sequential: no cs (today's output unchanged)
    plain = json.loads(
        CliRunner().invoke(main, ["estimate", "--db", db_url, "-j", "judge", "--json"]).output
    )
    assert "cs" not in plain["models"][0]["pass_rate"] and "sequential" not in plain
    text = CliRunner().invoke(main, ["estimate", "--db", db_url, "-j", "judge", "--sequential"])
    assert "model model-a's pass rate is known to ±" in text.output
    assert "(anytime-valid" in text.output


def test_progress_carries_the_sequences(graded: tuple[str, list[str]]) -> None:
    db_url, order = graded
    res = CliRunner().invoke(main, ["progress", "--db", db_url, "--judge", "judge", "--json"])
    assert res.exit_code == 0, res.output
    seq = json.loads(res.output)["sequential"]
    want = _expected(db_url, order)
    for model, figs in seq["models"].items():
        for fig in ("mean_score", "pass_rate"):
            assert figs[fig]["cs"] == pytest.approx(want[(model, fig)], abs=1e-12)
    text = CliRunner().invoke(main, ["progress", "--db", db_url, "--judge", "judge"])
    assert "pass rate is known to ±" in text.output
    bad = CliRunner().invoke(main, ["progress", "--db", db_url, "--judge", "nobody"])
    assert bad.exit_code == 1 and "no grader 'nobody'" in bad.output
