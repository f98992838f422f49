"""Applying an assignment design (:mod:`gradercal.ops.assign`) to a database.

:func:`assign` reads the benchmark's responses, designs, and writes in one transaction:
graders named for the first time are created (human graders), and every planned
(grader, response) pair becomes an ``assignment`` row with its queue position and
calibration flag.

Applying is idempotent and never takes work away: an assignment that already exists is
left exactly as it is (status, position, time spent, calibration flag), whatever the
design says; only missing ones are added. A grader who already has a queue in the
benchmark gets the new assignments appended after it, in the design's order. So
applying the same design twice changes nothing, and applying a different one later
only adds.

The design's parameters are recorded in ``database_info`` under
``assignment_design:<benchmark id>`` (a JSON list, newest last), for the dashboard and
for anyone who wants to reproduce it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from sqlalchemy import func, insert, select
from sqlalchemy.exc import IntegrityError

from gradercal.db import models as m
from gradercal.db.repo import Repository, judgments_with_names
from gradercal.db.session import Database
from gradercal.errors import ConflictError, Problem, ValidationError
from gradercal.model import AssignmentStatus, GraderKind
from gradercal.ops.active import Pilot
from gradercal.ops.assign import Design, ResponseUnit, Unit, design_assignments

__all__ = [
    "ApplyReport",
    "active_design",
    "apply_design",
    "assign",
    "assign_active",
    "assignment_records",
    "design_key",
    "inclusion_probabilities",
    "load_units",
    "recorded_designs",
]


def design_key(benchmark_id: int) -> str:
    """The ``database_info`` key holding the designs applied to a benchmark."""
    return f"assignment_design:{benchmark_id}"


@dataclass
class ApplyReport:
    """What applying a design did. ``changed`` is False when the database was left as it was."""

    benchmark: str
    graders_created: list[str] = field(default_factory=list)
    assignments_created: int = 0
    assignments_existing: int = 0
    assignments_differing: int = 0
    """Existing assignments whose position or calibration flag differ from the design
    (kept as they are)."""
    outside_design: dict[str, int] = field(default_factory=dict)
    """Graders who already had assignments the design does not give them (kept), by count:
    e.g. someone who opened the app before the design was applied got every response."""
    design: dict[str, Any] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        return bool(self.graders_created or self.assignments_created)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["changed"] = self.changed
        return out


def load_units(db: Database, benchmark: str | None = None) -> list[ResponseUnit]:
    """Every response of the benchmark with the attributes a design can stratify on."""
    bench = Repository(db).benchmark(benchmark)
    with db.read() as s:
        rows = s.execute(
            select(
                m.Response.external_id,
                m.Task.external_id,
                m.Task.workflow,
                m.Task.domain,
                m.Task.answer_format,
                m.Response.model,
            )
            .join(m.Task, m.Task.id == m.Response.task_id)
            .where(m.Response.benchmark_id == bench.id)
        ).all()
    return [
        ResponseUnit(
            response_id=rid,
            task_id=tid,
            strata={"workflow": wf, "domain": dom, "answer_format": fmt, "model": model},
        )
        for rid, tid, wf, dom, fmt, model in rows
    ]


def assign(
    db: Database,
    graders: Sequence[str],
    overlap: int,
    *,
    calibration_fraction: float = 0.0,
    stratify: Sequence[str] = (),
    seed: str | int = 0,
    benchmark: str | None = None,
    unit: Unit = "response",
) -> ApplyReport:
    """Design assignments for the benchmark's responses and apply them (see the module doc).

    Raises:
        ValidationError: bad parameters; nothing is written.
        ConflictError: a grader name belongs to a judge; nothing is written.
    """
    clean = [_clean_name(g) for g in graders]
    units = load_units(db, benchmark)
    design = design_assignments(
        units,
        clean,
        overlap,
        calibration_fraction=calibration_fraction,
        stratify=stratify,
        seed=seed,
        unit=unit,
    )
    report = apply_design(db, design, benchmark)
    report.design = design.summary(units)
    return report


def _clean_name(name: str) -> str:
    clean = " ".join(str(name).split())
    if not clean:
        raise ValidationError([Problem("assign", None, "graders", "empty grader name")])
    if len(clean) > 200:
        raise ValidationError(
            [Problem("assign", None, "graders", f"{clean[:40]!r}…: at most 200 characters")]
        )
    return clean


def apply_design(
    db: Database,
    design: Design,
    benchmark: str | None = None,
    probabilities: Mapping[str, float] | None = None,
    sampling_round: int | None = None,
) -> ApplyReport:
    """Write a design: create new graders and the missing assignments, in one transaction.

    Retried once when another client created the same rows at the same moment.
    """
    bench = Repository(db).benchmark(benchmark)
    for attempt in (1, 2):
        try:
            return _apply(db, design, bench.id, bench.name, probabilities or {}, sampling_round)
        except IntegrityError:
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


def _apply(
    db: Database,
    design: Design,
    bench_id: int,
    bench_name: str,
    probabilities: Mapping[str, float],
    sampling_round: int | None = None,
) -> ApplyReport:
    report = ApplyReport(benchmark=bench_name, design=design.parameters())
    with db.write() as s:
        responses = dict(
            s.execute(
                select(m.Response.external_id, m.Response.id).where(
                    m.Response.benchmark_id == bench_id
                )
            ).all()
        )
        missing = sorted({a.response_id for a in design.assignments} - set(responses))
        if missing:
            raise ValidationError(
                [Problem("assign", None, "responses", f"unknown response {r!r}") for r in missing]
            )
        known = {
            name: (gid, kind)
            for gid, name, kind in s.execute(
                select(m.Grader.id, m.Grader.name, m.Grader.kind).where(
                    m.Grader.name.in_(design.graders)
                )
            )
        }
        judges = sorted(n for n, (_gid, kind) in known.items() if kind != GraderKind.HUMAN.value)
        if judges:
            raise ConflictError(
                f"{', '.join(repr(j) for j in judges)} "
                f"{'is a judge' if len(judges) == 1 else 'are judges'}, not human graders; "
                "choose other names"
            )
        now = m.utcnow()
        gids: dict[str, int] = {name: gid for name, (gid, _kind) in known.items()}
        for name in design.graders:
            if name not in gids:
                gids[name] = s.execute(
                    insert(m.Grader)
                    .values(name=name, kind=GraderKind.HUMAN.value, parameters={}, created_at=now)
                    .returning(m.Grader.id)
                ).scalar_one()
                report.graders_created.append(name)
        rows: list[dict[str, Any]] = []
        for name in design.graders:
            gid = gids[name]
            existing = {
                rid: (pos, bool(cal))
                for rid, pos, cal in s.execute(
                    select(
                        m.Assignment.response_id, m.Assignment.position, m.Assignment.calibration
                    )
                    .join(m.Response, m.Response.id == m.Assignment.response_id)
                    .where(m.Assignment.grader_id == gid, m.Response.benchmark_id == bench_id)
                )
            }
            start = 0
            if existing:
                top = s.scalar(
                    select(func.max(m.Assignment.position))
                    .join(m.Response, m.Response.id == m.Assignment.response_id)
                    .where(m.Assignment.grader_id == gid, m.Response.benchmark_id == bench_id)
                )
                start = int(top if top is not None else -1) + 1
            offset = 0
            mine = design.queue(name)
            planned_ids = {responses[p.response_id] for p in mine}
            extra = sum(1 for rid in existing if rid not in planned_ids)
            if extra:
                report.outside_design[name] = extra
            for planned in mine:
                rid = responses[planned.response_id]
                have = existing.get(rid)
                if have is not None:
                    report.assignments_existing += 1
                    if have != (planned.position, planned.calibration):
                        report.assignments_differing += 1
                    continue
                position = planned.position if not existing else start + offset
                offset += 1
                rows.append(
                    {
                        "grader_id": gid,
                        "response_id": rid,
                        "status": AssignmentStatus.PENDING.value,
                        "position": position,
                        "time_spent_s": 0.0,
                        "calibration": planned.calibration,
                        "inclusion_probability": probabilities.get(planned.response_id),
                        "sampling_round": sampling_round
                        if planned.response_id in probabilities
                        else None,
                        "created_at": now,
                        "updated_at": now,
                    }
                )
        if rows:
            s.execute(insert(m.Assignment), rows)
        report.assignments_created = len(rows)
        _record_design(s, bench_id, design, now.isoformat())
    return report


def _record_design(s: Any, bench_id: int, design: Design, when: str) -> None:
    """Append the design's parameters to ``database_info`` unless it is recorded already."""
    key = design_key(bench_id)
    row = s.get(m.DatabaseInfo, key)
    digest = design.digest()
    history: list[dict[str, Any]] = []
    if row is not None:
        try:
            loaded = json.loads(row.value)
            history = [d for d in loaded if isinstance(d, dict)] if isinstance(loaded, list) else []
        except ValueError:
            history = []
        if any(d.get("digest") == digest for d in history):
            return
    entry = {**design.parameters(), "digest": digest, "applied_at": when}
    value = json.dumps([*history, entry], ensure_ascii=False)
    if row is None:
        s.add(m.DatabaseInfo(key=key, value=value))
    else:
        row.value = value


def recorded_designs(db: Database, benchmark: str | None = None) -> list[dict[str, Any]]:
    """The designs applied to a benchmark (parameters, digest, time), oldest first."""
    bench = Repository(db).benchmark(benchmark)
    with db.read() as s:
        row = s.get(m.DatabaseInfo, design_key(bench.id))
        if row is None:
            return []
        try:
            loaded = json.loads(row.value)
        except ValueError:
            return []
    return [d for d in loaded if isinstance(d, dict)] if isinstance(loaded, list) else []


# -- active assignment -------------------------------------------------------------------------
def _judge_uncertainty(db: Database, bench_id: int) -> dict[str, float | None]:
    """Response id → the judges' uncertainty ``U`` (:func:`gradercal.ops.active.response_uncertainty`).

    Every non-human grader's verdicts count: a criterion's confidence is the mean of the
    judges' stated confidences; where none is stated, the share of judges (runs) saying met.
    """
    from gradercal.ops.active import response_uncertainty

    with db.read() as s:
        rows = s.execute(
            judgments_with_names(
                m.Response.external_id,
                m.Judgment.criterion_id,
                m.Judgment.met,
                m.Judgment.confidence,
            ).where(
                m.Response.benchmark_id == bench_id,
                m.Grader.kind != GraderKind.HUMAN.value,
                m.Judgment.met.is_not(None),
            )
        ).all()
    per: dict[str, dict[int, list[tuple[bool, float | None]]]] = {}
    for rid, cid, met, conf in rows:
        per.setdefault(rid, {}).setdefault(cid, []).append((bool(met), conf))
    out: dict[str, float | None] = {}
    for rid, crits in per.items():
        confs: list[float | None] = []
        shares: list[float | None] = []
        for verdicts in crits.values():
            stated = [c for _m, c in verdicts if c is not None]
            # the confidence is the probability of the verdict: p(1-p) is the same either way
            confs.append(sum(stated) / len(stated) if stated else None)
            shares.append(
                sum(1.0 for mt, _c in verdicts if mt) / len(verdicts) if len(verdicts) > 1 else None
            )
        out[rid] = response_uncertainty(confs, shares)
    return out


def _pilot(db: Database, bench_name: str, unc: dict[str, float | None]) -> Pilot | None:
    """The expert-graded responses so far as a pilot: the judge's uncertainty and its
    squared error on the score plus on the pass (the judge with most verdicts; None
    without a judge or human consensus)."""
    from gradercal.analysis.estimate import estimate_table
    from gradercal.analysis.scoring import PASS_EPSILON
    from gradercal.analysis.verdicts import human_graders, judge_graders
    from gradercal.ops.active import MIN_PILOT

    frames = Repository(db).load_frames(bench_name)
    judges = judge_graders(frames)
    if not judges or not human_graders(frames):
        return None
    counts = frames.judgments["grader"].value_counts()
    judge = max(judges, key=lambda j: (int(counts.get(j, 0)), j))
    t = estimate_table(frames, judge)
    t = t.loc[t["human_score"].notna()]
    t = t.loc[[unc.get(str(r)) is not None for r in t["response_id"]]]
    if len(t) < MIN_PILOT:
        return None
    cut = float(frames.pass_threshold) - PASS_EPSILON
    hs = t["human_score"].to_numpy(np.float64)
    js = t["judge_score"].to_numpy(np.float64)
    err = (hs - js) ** 2 + ((hs >= cut).astype(np.float64) - (js >= cut)) ** 2
    u = np.array([unc[str(r)] for r in t["response_id"]], np.float64)
    return Pilot(u, err)


def assign_active(
    db: Database,
    graders: Sequence[str],
    overlap: int,
    budget: int,
    *,
    floor: float | None = None,
    seed: str | int = 0,
    benchmark: str | None = None,
    uniform: bool = False,
) -> tuple[ApplyReport, dict[str, Any]]:
    """Draw responses for experts where the judge is least sure, and assign them.

    ``uniform=True`` draws a uniform batch of ``budget`` instead (the window's "Where to
    grade next"): the same Poisson draw and stored probabilities, every candidate with the
    same probability ``budget / n`` (no judge needed; the estimate's weights are then
    equal, its design "active" with one round per batch).

    The candidates are the responses without any assignment yet; their probabilities
    and the Poisson draw come from :func:`gradercal.ops.active.draw_active`, with the
    error model fitted on the expert-graded responses so far (:func:`_pilot`; at least
    :data:`gradercal.ops.active.MIN_PILOT` of them, else the confidences are taken at
    face value), the drawn responses are assigned to ``overlap`` of the graders
    each (:func:`gradercal.ops.assign.design_assignments`, load-balanced) and every new
    assignment stores its response's probability. Returns the apply report and the
    draw's summary (``assigned``: each drawn response with its probability).
    """
    from gradercal.ops.active import draw_active

    clean = [_clean_name(g) for g in graders]
    bench = Repository(db).benchmark(benchmark)
    units = load_units(db, benchmark)
    with db.read() as s:
        last_round = s.scalar(
            select(func.max(m.Assignment.sampling_round))
            .join(m.Response, m.Response.id == m.Assignment.response_id)
            .where(m.Response.benchmark_id == bench.id)
        )
        taken = set(
            s.scalars(
                select(m.Response.external_id)
                .join(m.Assignment, m.Assignment.response_id == m.Response.id)
                .where(m.Response.benchmark_id == bench.id)
            )
        )
    candidates = [u for u in units if u.response_id not in taken]
    if uniform:
        unc: dict[str, float | None] = {u.response_id: 1.0 for u in candidates}
        pilot = None
    else:
        unc = _judge_uncertainty(db, bench.id)
        pilot = _pilot(db, bench.name, unc) if taken else None
    draw = draw_active(
        {u.response_id: unc.get(u.response_id) for u in candidates},
        budget,
        floor=floor,
        seed=seed,
        pilot=pilot,
    )
    chosen = draw.chosen()
    picked = [u for u in candidates if u.response_id in chosen]
    if not picked:
        raise ValidationError(
            [Problem("assign", None, "budget", "the draw selected no response; raise the budget")]
        )
    design = design_assignments(picked, clean, overlap, seed=f"{seed}:active")
    this_round = int(last_round or 0) + 1
    report = apply_design(db, design, benchmark, chosen, this_round)
    report.design = design.summary(picked)
    by_task = {u.response_id: u.task_id for u in picked}
    summary: dict[str, Any] = {
        "strategy": "uniform" if uniform else "active",
        "sampling": "poisson",
        "round": this_round,
        "budget": budget,
        "floor": draw.floor,
        "seed": str(seed),
        "n_candidates": len(candidates),
        "n_assigned": len(chosen),
        "expected_assigned": float(draw.probabilities.sum()),
        "assigned_sd": draw.expected_size_sd,
        "error_model": {"a": draw.error_model[0], "b": draw.error_model[1]},
        "error_model_source": draw.error_model_source,
        "n_without_judge_uncertainty": sum(1 for u in candidates if unc.get(u.response_id) is None),
        "assigned": [
            {
                "response_id": rid,
                "task_id": by_task[rid],
                "probability": p,
                "graders": sorted(a.grader for a in design.assignments if a.response_id == rid),
            }
            for rid, p in sorted(chosen.items())
        ],
    }
    return report, summary


def inclusion_probabilities(db: Database, benchmark: str | None = None) -> dict[str, float]:
    """Response id → the probability it was drawn with, for actively assigned responses.

    Empty when the benchmark was assigned uniformly only (the estimates then use the
    uniform formulas). A response assigned several times keeps its first probability.
    """
    return active_design(db, benchmark)[0]


def active_design(
    db: Database, benchmark: str | None = None
) -> tuple[dict[str, float], dict[str, int]]:
    """The active draws: response id → its probability, and → the draw (round) that took it."""
    bench = Repository(db).benchmark(benchmark)
    with db.read() as s:
        rows = s.execute(
            select(
                m.Response.external_id,
                m.Assignment.inclusion_probability,
                m.Assignment.sampling_round,
            )
            .join(m.Response, m.Response.id == m.Assignment.response_id)
            .where(
                m.Response.benchmark_id == bench.id,
                m.Assignment.inclusion_probability.is_not(None),
            )
            .order_by(m.Assignment.id)
        ).all()
    out: dict[str, float] = {}
    rounds: dict[str, int] = {}
    for rid, p, r in rows:
        if p is not None and rid not in out:
            out[rid] = float(p)
            rounds[rid] = int(r) if r is not None else 1
    return out, rounds


def assignment_records(db: Database, benchmark: str | None = None) -> list[dict[str, Any]]:
    """Every assignment of the benchmark, for the coordinator's ``export assignments``:
    ``response_id``, ``task_id``, ``model``, ``grader``, ``status``, ``position``,
    ``time_spent_s``, ``submitted_at`` and the active design's ``inclusion_probability``
    and ``sampling_round`` (None: assigned uniformly). Graders never get these two
    (their packets carry NULL; their database role cannot read them). In assignment order.
    """
    bench = Repository(db).benchmark(benchmark)
    with db.read() as s:
        rows = s.execute(
            select(
                m.Response.external_id,
                m.Task.external_id,
                m.Response.model,
                m.Grader.name,
                m.Assignment.status,
                m.Assignment.position,
                m.Assignment.time_spent_s,
                m.Assignment.submitted_at,
                m.Assignment.inclusion_probability,
                m.Assignment.sampling_round,
            )
            .join(m.Response, m.Response.id == m.Assignment.response_id)
            .join(m.Task, m.Task.id == m.Response.task_id)
            .join(m.Grader, m.Grader.id == m.Assignment.grader_id)
            .where(m.Response.benchmark_id == bench.id)
            .order_by(m.Assignment.id)
        ).all()
    keys = (
        "response_id", "task_id", "model", "grader", "status", "position", "time_spent_s",
        "submitted_at", "inclusion_probability", "sampling_round",
    )  # fmt: skip
    out = []
    for row in rows:
        rec = dict(zip(keys, row, strict=True))
        if rec["submitted_at"] is not None:
            rec["submitted_at"] = rec["submitted_at"].isoformat()
        out.append(rec)
    return out
