"""Task acceptance rounds in the database, on both backends: facts read from judgments,
queue items and surveys; rounds opened, closed, decided, with their history; settings;
the upgrade of a 0003 database that holds data."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, inspect, select, text

from gradercal.db import models as m
from gradercal.db.acceptance import (
    AcceptanceError,
    accepted_tasks,
    act,
    load_acceptance,
    load_settings,
    save_settings,
)
from gradercal.db.repo import Repository
from gradercal.db.session import Database, open_database
from gradercal.errors import GradercalError
from gradercal.formats import read_path
from tests.support.acceptance import AGREE, BENCH, survey, write_acceptance_benchmark


@pytest.fixture
def acc_db(db_url: str, tmp_path: Path) -> Any:
    db = open_database(db_url, create=True)
    Repository(db).import_data(read_path(write_acceptance_benchmark(tmp_path / "bench")))
    save_settings(db, BENCH, n_boot=0)  # the point values; intervals are tested apart
    try:
        yield db
    finally:
        db.dispose()


def test_facts_and_hand_worked_agreement(acc_db: Database) -> None:
    db = acc_db
    survey(db, "T1", ("ana", "ben", "cleo"), AGREE)
    acc = load_acceptance(db, BENCH)
    by = {t.task: t for t in acc.tasks}
    t1 = by["T1"]
    # Percent agreement (pairs of raters agreeing, averaged over units): on c1…c9 all three
    # pairs agree (1 each); on c10 only ana–ben of the 3 pairs agree (1/3).
    # (9 × 1 + 1/3) / 10 = 28/30 = 0.9333…; the judge's verdict is not a reviewer's.
    assert t1.measure.value == pytest.approx(28 / 30)
    assert t1.measure.n_units == 10
    assert t1.reviewers == ("ana", "ben", "cleo")
    assert t1.status == "draft" and t1.round is None
    assert not t1.proposed and t1.reasons[0].startswith("no review round yet")
    assert t1.survey["real_research"] == 5.0 and t1.survey["grounded"] == 4.0
    # T2: two raters agree on 8 of 10 units: 0.8, below the bar 0.9
    assert by["T2"].measure.value == pytest.approx(0.8)
    assert by["T3"].measure.value is None and by["T3"].reviewers == ()
    assert acc.counts() == {
        "draft": 3,
        "in review": 0,
        "needs revision": 0,
        "accepted": 0,
        "rejected": 0,
    }


def test_a_ready_round_is_proposed_accepted_and_keeps_its_numbers(acc_db: Database) -> None:
    db = acc_db
    opened = act(db, BENCH, "T1", "open", actor="dana")
    assert opened.status == "in review" and opened.round == 1 and opened.state == "open"
    # not ready: nobody answered the survey
    assert not opened.ready and not opened.proposed
    with pytest.raises(AcceptanceError, match="T1: round 1 is still open"):
        act(db, BENCH, "T1", "accept", actor="dana")
    survey(db, "T1", ("ana", "ben", "cleo"), AGREE)
    live = {t.task: t for t in load_acceptance(db, BENCH).tasks}["T1"]
    assert live.ready and live.proposed and live.reasons == ()
    after = act(db, BENCH, "T1", "accept", note="clear", actor="dana")
    assert after.status == "accepted" and after.state == "accepted"
    (rnd,) = after.rounds
    assert rnd.closed_at is not None and rnd.decided_at is not None
    assert rnd.measure is not None and rnd.measure.value == pytest.approx(28 / 30)
    assert (rnd.measure.n_units, rnd.measure.n_criteria) == (10, 10)
    assert rnd.measure.note is None  # n_boot 0: no interval, no warning about it
    assert rnd.passed and rnd.proposed and rnd.note == "clear" and rnd.actor == "dana"
    # a later change of a judgment leaves the decided round's numbers as they were
    with db.write() as s:
        j = s.scalars(
            select(m.Judgment)
            .join(m.Grader, m.Grader.id == m.Judgment.grader_id)
            .where(m.Grader.name == "ana")
            .limit(1)
        ).one()
        j.met = False
    again = {t.task: t for t in load_acceptance(db, BENCH).tasks}["T1"]
    assert again.measure.value == pytest.approx(28 / 30)
    assert accepted_tasks(db, BENCH) == {"T1"}
    # history: open, close, accept — each with the previous value of the round
    with db.read() as s:
        hist = s.execute(
            select(m.Revision.revision, m.Revision.data, m.Revision.actor)
            .where(m.Revision.entity == "task_round")
            .order_by(m.Revision.id)
        ).all()
    assert [h.data["action"] for h in hist] == ["open", "close", "accept"]
    assert [h.revision for h in hist] == [0, 1, 2]
    assert hist[0].data["before"] is None
    assert hist[2].data["before"]["state"] == "closed" and hist[2].data["note"] == "clear"
    assert {h.actor for h in hist} == {"dana"}
    assert load_acceptance(db, BENCH, status="accepted").tasks[0].task == "T1"


def test_below_the_bar_send_back_and_next_round(acc_db: Database) -> None:
    db = acc_db
    act(db, BENCH, "T2", "open", actor="dana")
    survey(db, "T2", ("ana", "ben"), AGREE)
    t2 = {t.task: t for t in load_acceptance(db, BENCH).tasks}["T2"]
    assert t2.ready and not t2.proposed
    assert t2.reasons == ("percent agreement 0.8 below the bar 0.9",)
    with pytest.raises(AcceptanceError, match="not proposed"):
        act(db, BENCH, "T2", "accept", actor="dana")
    with pytest.raises(AcceptanceError, match="needs a note"):
        act(db, BENCH, "T2", "reopen", actor="dana")
    back = act(db, BENCH, "T2", "reopen", note="c9 and c10 are ambiguous", actor="dana")
    assert back.status == "needs revision" and back.note == "c9 and c10 are ambiguous"
    assert back.rounds[0].measure is not None
    assert back.rounds[0].measure.value == pytest.approx(0.8)
    assert back.rounds[0].passed is False
    with pytest.raises(AcceptanceError, match="was sent back"):
        act(db, BENCH, "T2", "accept", actor="dana")
    later = datetime.now(UTC) + timedelta(seconds=1)
    nxt = act(db, BENCH, "T2", "open", actor="dana", now=later)
    assert nxt.status == "in review" and nxt.round == 2
    # the earlier survey predates the revision: round 2 waits for a new one
    assert any("survey not answered" in w for w in nxt.waiting)


def test_close_reject_force_and_refusals(acc_db: Database) -> None:
    db = acc_db
    with pytest.raises(AcceptanceError, match="no closed review round"):
        act(db, BENCH, "T3", "accept", actor="dana")
    with pytest.raises(AcceptanceError, match="draft: nothing to send back"):
        act(db, BENCH, "T3", "reopen", note="x", actor="dana")
    forced = act(db, BENCH, "T3", "reject", note="not answerable", actor="dana", force=True)
    assert forced.status == "rejected" and forced.round == 1
    with pytest.raises(AcceptanceError, match="already rejected"):
        act(db, BENCH, "T3", "accept", actor="dana", force=True)
    act(db, BENCH, "T1", "open", actor="dana")
    with pytest.raises(AcceptanceError, match="not ready to close"):
        act(db, BENCH, "T1", "close", actor="dana")
    closed = act(db, BENCH, "T1", "close", actor="dana", force=True)
    assert closed.state == "closed" and closed.status == "in review"
    assert closed.measure.value == pytest.approx(28 / 30)
    assert "round not ready to close" in closed.reasons
    # sending back while the reviewers are at work: refused, unless forced
    act(db, BENCH, "T2", "open", actor="dana")
    with pytest.raises(AcceptanceError, match=r"T2: round 1 is still open.*waiting: ana: survey"):
        act(db, BENCH, "T2", "reopen", note="rewrite c9", actor="dana")
    back = act(db, BENCH, "T2", "reopen", note="rewrite c9", actor="dana", force=True)
    assert back.status == "needs revision" and back.rounds[0].closed_at is not None
    assert back.rounds[0].reasons[0] == "round not ready to close"
    with pytest.raises(GradercalError, match="no task 'T9'"):
        act(db, BENCH, "T9", "open", actor="dana")


def test_settings_are_kept_per_benchmark(acc_db: Database) -> None:
    db = acc_db
    s = save_settings(db, BENCH, bar=0.8, statistic="gwet_ac1", survey_min={"grounded": 4.5})
    assert s.bar == 0.8 and s.n_boot == 0
    back = load_settings(db, BENCH)
    assert (
        back == s and back.survey_min["grounded"] == 4.5 and back.survey_min["real_research"] == 4
    )
    with pytest.raises(GradercalError, match="bar"):
        save_settings(db, BENCH, bar=2)
    save_settings(db, BENCH, statistic="percent_agreement")
    survey(db, "T2", ("ana", "ben"), AGREE)
    act(db, BENCH, "T2", "open", actor="dana")
    t2 = {t.task: t for t in load_acceptance(db, BENCH).tasks}["T2"]
    assert t2.proposed is False  # grounded 4 < 4.5, though 0.8 reaches the bar
    assert t2.reasons == ("survey grounded: mean 4 below 4.5",)


def test_interval_is_the_clustered_wilson_interval_over_criteria(acc_db: Database) -> None:
    db = acc_db
    save_settings(db, BENCH, n_boot=400, seed=3)
    draft = {t.task: t for t in load_acceptance(db, BENCH).tasks}["T2"]
    assert draft.measure.value == pytest.approx(0.8) and draft.measure.low is None  # a preview
    assert draft.at_bar is None
    act(db, BENCH, "T2", "open", actor="dana")
    t2 = {t.task: t for t in load_acceptance(db, BENCH).tasks}["T2"]
    assert t2.measure.value == pytest.approx(0.8)
    # by hand: 10 criteria of one unit each, 8 agreed: v0 = (8·0.2² + 2·0.8²)/10² = 0.016,
    # n_eff = 0.8·0.2/v0 = 10, Wilson with n_w = 10·9/10 = 9 and q = t_9(0.975)
    q, n = 2.2621571628540993, 9.0
    a = q * q / n
    centre = (0.8 + a / 2) / (1 + a)
    half = q * math.sqrt(0.16 / n + a / (4 * n)) / (1 + a)
    assert t2.measure.low == pytest.approx(centre - half)
    assert t2.measure.high == pytest.approx(centre + half)
    assert t2.measure.method == "clustered_wilson" and t2.measure.n_effective == pytest.approx(10)
    assert t2.at_bar is not None and not t2.at_bar.passed and t2.at_bar.rule == "point"
    # a task at 0.9 passes X/10 ≥ 0.9 with P(X ≥ 9) = 0.736: failing, 0.264 (MC se 0.007)
    assert t2.at_bar.probability == pytest.approx(0.264, abs=0.025)


def test_the_rule_is_a_setting_and_a_closed_round_keeps_its_basis(acc_db: Database) -> None:
    db = acc_db
    assert load_settings(db, BENCH).rule == "point"
    s = save_settings(db, BENCH, n_boot=400, rule="interval", bar=0.5)
    assert s.rule == "interval" and load_settings(db, BENCH).rule == "interval"
    with pytest.raises(GradercalError, match="rule"):
        save_settings(db, BENCH, rule="lower")
    survey(db, "T1", ("ana", "ben", "cleo"), AGREE)
    act(db, BENCH, "T1", "open", actor="dana")
    closed = act(db, BENCH, "T1", "close", actor="dana")
    (rnd,) = closed.rounds
    assert rnd.measure is not None and rnd.measure.method == "clustered_wilson"
    assert rnd.measure.low is not None and rnd.measure.low >= 0.5 and rnd.proposed
    assert rnd.at_bar is not None and rnd.at_bar.rule == "interval" and rnd.at_bar.passed
    kept = rnd.at_bar
    # the settings change; the closed round keeps what it was decided on
    save_settings(db, BENCH, rule="point", bar=0.95)
    t1 = {t.task: t for t in load_acceptance(db, BENCH).tasks}["T1"]
    assert t1.at_bar == kept and t1.rounds[0].at_bar == kept
    assert t1.to_dict()["rounds"][0]["at_bar"]["rule"] == "interval"
    assert t1.to_dict()["agreement"]["method"] == "clustered_wilson"
    with db.read() as sess:
        basis = sess.scalar(select(m.TaskRound.decision_basis))
    assert basis is not None and basis["at_bar"]["rule"] == "interval"
    assert basis["n_effective"] == pytest.approx(rnd.measure.n_effective)


def test_upgrade_from_0003_keeps_the_data(db_url: str, tmp_path: Path) -> None:
    from alembic import command

    from gradercal.db.session import alembic_config, make_engine, resolve_url

    engine = make_engine(resolve_url(db_url))
    try:
        cfg = alembic_config(engine)
        with engine.begin() as conn:
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, "0003")
        assert "task_round" not in inspect(engine).get_table_names()
        with engine.begin() as conn:
            conn.execute(
                text(
                    "INSERT INTO benchmark (name, pass_threshold, format_version, created_at) "
                    "VALUES ('old', 0.7, 1, CURRENT_TIMESTAMP)"
                )
            )
            conn.execute(
                text(
                    "INSERT INTO task (benchmark_id, external_id, position, prompt, tags, "
                    "metadata, content_hash, created_at) SELECT id, 'OLD1', 0, 'p', '[]', "
                    "'{}', 'h', CURRENT_TIMESTAMP FROM benchmark"
                )
            )
    finally:
        engine.dispose()
    db = open_database(db_url)
    try:
        assert "task_round" in inspect(db.engine).get_table_names()
        with db.read() as s:
            assert s.scalar(select(func.count()).select_from(m.Task)) == 1
        acc = load_acceptance(db, "old")
        assert [(t.task, t.status) for t in acc.tasks] == [("OLD1", "draft")]
        act(db, "old", "OLD1", "open", actor="dana")
        with db.read() as s:
            assert s.scalar(select(m.TaskRound.number)) == 1
    finally:
        db.dispose()
