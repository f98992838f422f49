"""Assignment design (pure) and applying it to a database (both backends), plus the CLI."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from itertools import combinations
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select

from gradercal.errors import ConflictError, ValidationError
from gradercal.ops.assign import Design, ResponseUnit, design_assignments
from tests.conftest import DEMO, DatabaseTemplates, fingerprint, import_demo

LAZY = {
    "assign": ("gradercal.cli.ops:assign", "Decide who grades which response."),
    "packet": ("gradercal.cli.ops:packet", "Offline grading packets."),
    "backup": ("gradercal.cli.ops:backup", "Consistent backup of the database."),
    "check": ("gradercal.cli.ops:check", "Integrity, orphan rows and artifact hashes."),
}


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    """The real ``gradercal`` group with the ops commands registered lazily, as cli.py will."""
    from gradercal.cli import LazyGroup

    for name, entry in LAZY.items():
        monkeypatch.setitem(LazyGroup.lazy, name, entry)
    return CliRunner()


def units(n_tasks: int = 12, models: tuple[str, ...] = ("a", "b", "c")) -> list[ResponseUnit]:
    return [
        ResponseUnit(
            f"T{t:02d}-{mod}", f"T{t:02d}", {"workflow": f"w{t % 3}", "model": mod, "domain": None}
        )
        for t in range(n_tasks)
        for mod in models
    ]


def graders_of(design: Design) -> dict[str, list[str]]:
    out: dict[str, list[str]] = defaultdict(list)
    for a in design.assignments:
        out[a.response_id].append(a.grader)
    return out


def check_invariants(design: Design, us: list[ResponseUnit]) -> None:
    """Everything a design promises, whatever the inputs."""
    people = set(design.graders)
    cal = set(design.calibration)
    by_response = graders_of(design)
    assert set(by_response) == {u.response_id for u in us}  # every response is graded
    for rid, gs in by_response.items():
        assert len(gs) == len(set(gs))  # never twice by the same grader
        if rid in cal:
            assert set(gs) == people
        else:
            assert len(gs) == design.overlap
    # queues: positions 0..n-1, calibration first, the responses of a task together
    task_of = {u.response_id: u.task_id for u in us}
    for g in design.graders:
        q = design.queue(g)
        assert [a.position for a in q] == list(range(len(q)))
        flags = [a.calibration for a in q]
        assert flags == sorted(flags, reverse=True)
        for block in (True, False):
            tasks = [task_of[a.response_id] for a in q if a.calibration is block]
            runs = [t for i, t in enumerate(tasks) if i == 0 or tasks[i - 1] != t]
            assert len(runs) == len(set(runs)), "a task's responses are split"
    if design.unit == "response":
        load = design.load()
        assert max(load.values()) - min(load.values()) <= 1
        # within every stratum, per-grader counts differ by at most one
        if design.stratify:
            cells: dict[tuple[str | None, ...], Counter[str]] = defaultdict(Counter)
            strata = {u.response_id: tuple(u.strata.get(k) for k in design.stratify) for u in us}
            for a in design.assignments:
                if not a.calibration:
                    cells[strata[a.response_id]][a.grader] += 1
            for counts in cells.values():
                values = [counts.get(g, 0) for g in design.graders]
                assert max(values) - min(values) <= 1


def test_overlap_calibration_balance_and_queues() -> None:
    us = units(40)
    design = design_assignments(
        us,
        ["ana", "ben", "chloe", "dev", "eli"],
        2,
        calibration_fraction=0.1,
        stratify=["workflow", "model"],
        seed="s1",
    )
    check_invariants(design, us)
    assert len(design.calibration) == 12  # 10 % of 120, graded by all five
    assert len(design.assignments) == 12 * 5 + 108 * 2
    # the calibration subset is spread over the strata in proportion (4 per model)
    cal_models = Counter(r.split("-")[1] for r in design.calibration)
    assert cal_models == {"a": 4, "b": 4, "c": 4}
    # every pair of graders shares responses (for agreement statistics)
    pairs = Counter(
        frozenset(p) for gs in graders_of(design).values() if len(gs) == 2 for p in [gs]
    )
    assert all(pairs[frozenset(p)] >= 5 for p in combinations(design.graders, 2))
    summary = design.summary(us)
    assert summary["load_max"] - summary["load_min"] <= 1
    assert {s["stratum"] for s in summary["strata"]} >= {"workflow=w0 · model=a"}


def test_reproducible_from_the_seed_whatever_the_input_order() -> None:
    us = units(15)
    a = design_assignments(us, ["x", "y", "z"], 2, calibration_fraction=0.2, seed=7)
    b = design_assignments(list(reversed(us)), ["z", "x", "y"], 2, calibration_fraction=0.2, seed=7)
    assert a == b and a.digest() == b.digest()
    c = design_assignments(us, ["x", "y", "z"], 2, calibration_fraction=0.2, seed=8)
    assert c.digest() != a.digest()
    assert {(x.grader, x.response_id) for x in c.assignments} != {
        (x.grader, x.response_id) for x in a.assignments
    }
    # seeds are text: 7 and "7" are the same seed
    assert design_assignments(us, ["x", "y", "z"], 2, calibration_fraction=0.2, seed="7") == a


def test_whole_tasks_keep_their_responses_together() -> None:
    us = units(20)
    design = design_assignments(
        us,
        ["a", "b", "c", "d"],
        2,
        calibration_fraction=0.1,
        stratify=["workflow"],
        seed=1,
        unit="task",
    )
    check_invariants(design, us)
    by_task: dict[str, set[frozenset[str]]] = defaultdict(set)
    for rid, gs in graders_of(design).items():
        by_task[rid.split("-")[0]].add(frozenset(gs))
    assert all(len(v) == 1 for v in by_task.values())  # one set of graders per task
    assert len(design.calibration) == 2 * 3  # 10 % of 20 tasks, three responses each
    with pytest.raises(ValidationError, match="varies within task"):
        design_assignments(us, ["a", "b"], 1, stratify=["model"], seed=1, unit="task")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"graders": ["a", "b"], "overlap": 3}, "only 2 named"),
        ({"graders": ["a", "b"], "overlap": 0}, "≥ 1"),
        ({"graders": ["a", "a"], "overlap": 1}, "more than once"),
        ({"graders": [], "overlap": 1}, "at least one grader"),
        ({"graders": ["a"], "overlap": 1, "calibration_fraction": 1.5}, "between 0 and 1"),
        ({"graders": ["a"], "overlap": 1, "stratify": ["colour"]}, "unknown attribute 'colour'"),
    ],
)
def test_bad_parameters_are_refused_with_a_clear_message(
    kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        design_assignments(units(3), seed=0, **kwargs)  # type: ignore[arg-type]


def test_no_responses_is_an_error() -> None:
    with pytest.raises(ValidationError, match="no responses"):
        design_assignments([], ["a"], 1)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n_tasks=st.integers(1, 25),
    n_models=st.integers(1, 4),
    n_graders=st.integers(1, 7),
    data=st.data(),
)
def test_invariants_hold_for_any_design(
    n_tasks: int, n_models: int, n_graders: int, data: st.DataObject
) -> None:
    overlap = data.draw(st.integers(1, n_graders))
    fraction = data.draw(st.sampled_from([0.0, 0.05, 0.25, 1.0]))
    stratify = data.draw(st.sampled_from([(), ("workflow",), ("model",), ("workflow", "model")]))
    seed = data.draw(st.integers(0, 10**6))
    us = units(n_tasks, tuple("abcd"[:n_models]))
    design = design_assignments(
        us,
        [f"g{i}" for i in range(n_graders)],
        overlap,
        calibration_fraction=fraction,
        stratify=stratify,
        seed=seed,
    )
    check_invariants(design, us)
    expected_cal = 0 if fraction == 0 else max(1, int(len(us) * fraction + 0.5))
    assert len(design.calibration) == min(expected_cal, len(us))


# -- database --------------------------------------------------------------------------------
def _demo_db(db_url: str, db_templates: DatabaseTemplates) -> None:
    """The demo imported into ``db_url`` (a copy of one import per session and backend)."""
    db_templates.fill(db_url, "demo imported", import_demo)


def test_apply_creates_graders_and_assignments_idempotently(
    db_url: str, db_templates: DatabaseTemplates
) -> None:
    from gradercal.db import models as m
    from gradercal.db.assignments import assign, recorded_designs
    from gradercal.db.grading import GradingStore
    from gradercal.db.session import open_database

    _demo_db(db_url, db_templates)
    db = open_database(db_url)
    try:
        report = assign(
            db,
            ["expert-ana", "newcomer", "other"],
            2,
            calibration_fraction=0.2,
            stratify=["model"],
            seed="demo",
        )
        assert report.graders_created == ["newcomer", "other"]  # expert-ana exists already
        assert report.assignments_created == 6 * 3 + 24 * 2
        with db.read() as s:
            rows = s.execute(
                select(m.Grader.name, m.Assignment.position, m.Assignment.calibration)
                .join(m.Grader, m.Grader.id == m.Assignment.grader_id)
                .order_by(m.Grader.name, m.Assignment.position)
            ).all()
        per = defaultdict(list)
        for name, pos, cal in rows:
            per[name].append((pos, cal))
        for name in ("expert-ana", "newcomer", "other"):
            assert [p for p, _c in per[name]] == list(range(22))
            assert [c for _p, c in per[name]] == [True] * 6 + [False] * 16
        # the grading app sees exactly this queue, in this order, with codes
        queue = GradingStore(db).queue("newcomer")
        assert len(queue) == 22 and queue[0].code.startswith("Response ")
        designs = recorded_designs(db)
        assert len(designs) == 1 and designs[0]["seed"] == "demo"
    finally:
        db.dispose()
    before = fingerprint(db_url)
    db = open_database(db_url)
    try:
        again = assign(
            db,
            ["other", "expert-ana", "newcomer"],
            2,
            calibration_fraction=0.2,
            stratify=["model"],
            seed="demo",
        )
    finally:
        db.dispose()
    assert not again.changed and again.assignments_existing == 66
    assert fingerprint(db_url) == before


def test_a_new_design_only_adds_and_never_touches_existing_work(
    db_url: str, db_templates: DatabaseTemplates
) -> None:
    from gradercal.db import models as m
    from gradercal.db.assignments import assign
    from gradercal.db.grading import GradingStore, JudgmentValue
    from gradercal.db.session import open_database

    _demo_db(db_url, db_templates)
    db = open_database(db_url)
    try:
        assign(db, ["a1", "a2"], 1, seed=1)
        store = GradingStore(db)
        first = store.queue("a1")[0]
        crit = next(
            c.id
            for c in store.load_item("a1", first.assignment_id).task.criteria
            if c.kind.value == "judgment"
        )
        store.save_judgment(first.assignment_id, crit, JudgmentValue(met=True))
        report = assign(db, ["a1", "a2", "a3"], 2, seed=2)
        assert report.assignments_created + report.assignments_existing == 60
        assert report.assignments_existing > 0
        # the old assignments the new design does not give are kept, and reported
        assert sum(report.outside_design.values()) == 30 - report.assignments_existing
        with db.read() as s:
            total = s.scalar(select(func.count()).select_from(m.Assignment))
        assert total == 30 + report.assignments_created  # nothing removed
        kept = store.queue_item(first.assignment_id)
        assert kept.status == "in_progress" and kept.position == first.position
        positions = [q.position for q in store.queue("a1")]
        assert positions == sorted(positions) and len(set(positions)) == len(positions)
        with db.read() as s:
            dup = s.execute(
                select(m.Assignment.grader_id, m.Assignment.response_id, func.count())
                .group_by(m.Assignment.grader_id, m.Assignment.response_id)
                .having(func.count() > 1)
            ).all()
        assert dup == []
    finally:
        db.dispose()


def test_a_judges_name_is_refused_and_nothing_is_written(
    db_url: str, db_templates: DatabaseTemplates
) -> None:
    from gradercal.db.assignments import assign
    from gradercal.db.session import open_database

    _demo_db(db_url, db_templates)
    before = fingerprint(db_url)
    db = open_database(db_url)
    try:
        with pytest.raises(ConflictError, match="judge"):
            assign(db, ["judge-gpt", "fresh-name"], 1, seed=0)
    finally:
        db.dispose()
    assert fingerprint(db_url) == before


def test_cli_assign_json_and_help(cli: CliRunner, tmp_path: Path) -> None:
    from gradercal.cli import main

    db = str(tmp_path / "c.sqlite")
    assert cli.invoke(main, ["import", str(DEMO), "--db", db]).exit_code == 0
    args = ["assign", "--db", db, "--graders", "p,q,r", "--overlap", "2", "--seed", "9"]
    args += ["--calibration-fraction", "0.1", "--stratify", "workflow,model", "--json"]
    first = cli.invoke(main, args)
    assert first.exit_code == 0, first.output
    out = json.loads(first.output)
    assert out["changed"] and out["assignments_created"] == 3 * 3 + 27 * 2
    assert out["design"]["stratify"] == ["workflow", "model"]
    assert out["graders_created"] == ["p", "q", "r"]
    second = cli.invoke(main, args)
    assert json.loads(second.output)["changed"] is False
    human = cli.invoke(main, args[:-1])
    assert "already applied" in human.output
    bad = cli.invoke(
        main, ["assign", "--db", db, "--graders", "p", "--overlap", "2", "--seed", "1"]
    )
    assert bad.exit_code == 1 and "only 1 named" in bad.output
    for cmd in (["assign"], ["packet", "export"], ["packet", "merge"], ["backup"], ["check"]):
        res = cli.invoke(main, [*cmd, "--help"])
        assert res.exit_code == 0 and "--db" in res.output and "--json" in res.output
    group = cli.invoke(main, ["packet", "--help"])
    assert group.exit_code == 0 and "export" in group.output and "merge" in group.output
