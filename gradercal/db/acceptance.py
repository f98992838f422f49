"""Task acceptance rounds in the database: the facts :mod:`gradercal.ops.acceptance` judges,
the rounds it keeps, and the coordinator's decisions.

**Facts of a round** (read by :func:`load_acceptance`): the *reviewers* are the human
graders with a queue item or a judgment on one of the task's responses; a reviewer's
*open items* are their queue items on the task not yet submitted or skipped; their
*survey* is their ``task_review`` of the task (from round 2 on, only answers saved
after the round opened count: the task changed since); the *ratings* are their current
judgments on the task's judgment criteria (level for a criterion with more than two
levels, else met = 1 / not met = 0; a judgment without a verdict is left out).

**Rounds** are ``task_round`` rows. An open round is assessed live; closing it writes
the measured agreement (statistic, value, interval, units), the survey means,
``passed``, ``proposed`` and the reasons into the row, with (0007) the interval's method,
the effective number of units and the agreement test's operating characteristic
(``decision_basis``: rule, outcome, probability at the bar), so a decided round keeps the
numbers it was decided on even if judgments or settings change later.

**Actions** (:func:`act`), each one transaction that writes the round row and a
``revision`` row (entity ``task_round``, the round's previous value in ``data`` with
the action, its note and actor):

* ``open``: round 1 of a draft, or the next round of a task sent back (its reviewers'
  queue items on the task go back to *pending*: they grade the revised task again);
* ``close``: measure and freeze the open round (``force`` closes one not ready);
* ``accept`` / ``reject``: decide the closed round. An open round that is ready is
  closed first, in the same transaction (a round closes when its reviewers have graded
  and surveyed the task); ``force`` decides without a proposal or a closed round;
* ``reopen``: send the task back with a note (the round's decision becomes
  ``needs_revision``; ``open`` starts the next round once the task is revised). An
  accepted or rejected task can be reopened the same way; its history keeps the
  earlier decision.

**Settings** of a benchmark live in ``database_info`` under
``acceptance_settings:<benchmark id>`` as the JSON of
:meth:`gradercal.ops.acceptance.Settings.to_dict` (no row: the defaults). Not a column
of ``benchmark``: graders in team mode read the whole ``benchmark`` row, and should
not see the bar their work is measured against; ``database_info`` shows them only the
database id. It also leaves the ``benchmark`` table, which every reader loads, as it
was.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import pandas as pd
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from gradercal.db import models as m
from gradercal.db.dashboard_data import round_state
from gradercal.db.repo import Repository, judgments_with_names
from gradercal.db.session import Database
from gradercal.db.times import stored_iso as _iso
from gradercal.db.times import stored_utc as _aware
from gradercal.errors import GradercalError, NotFoundError
from gradercal.ops.acceptance import (
    ROUND_COLUMNS,
    TASK_STATUSES,
    Assessment,
    AtBar,
    Measure,
    Rating,
    ReviewerFact,
    RoundFact,
    Settings,
    assess,
    check_action,
    round_table,
    task_status,
)

__all__ = [
    "ROUND_COLUMNS",
    "SETTINGS_PREFIX",
    "Acceptance",
    "AcceptanceError",
    "RoundRecord",
    "TaskAcceptance",
    "accepted_tasks",
    "act",
    "load_acceptance",
    "load_round_table",
    "load_settings",
    "save_settings",
]

SETTINGS_PREFIX = "acceptance_settings:"
_DONE = ("submitted", "skipped")
MAX_NOTE = 4000


class AcceptanceError(GradercalError):
    """An acceptance action is refused; the message says why."""


@dataclass(frozen=True)
class RoundRecord:
    """One stored round, as read back."""

    number: int
    state: str
    opened_at: datetime | None
    closed_at: datetime | None
    decided_at: datetime | None
    note: str | None
    actor: str | None
    measure: Measure | None
    survey: Mapping[str, float | None] | None
    passed: bool | None
    proposed: bool | None
    reasons: tuple[str, ...]
    at_bar: AtBar | None = None

    @property
    def fact(self) -> RoundFact:
        return RoundFact(self.number, self.state, self.passed)

    def to_dict(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "state": self.state,
            "opened_at": _iso(self.opened_at),
            "closed_at": _iso(self.closed_at),
            "decided_at": _iso(self.decided_at),
            "note": self.note,
            "actor": self.actor,
            "agreement": None if self.measure is None else self.measure.to_dict(),
            "survey": None if self.survey is None else dict(self.survey),
            "passed": self.passed,
            "proposed": self.proposed,
            "reasons": list(self.reasons),
            "at_bar": None if self.at_bar is None else self.at_bar.to_dict(),
        }


@dataclass(frozen=True)
class TaskAcceptance:
    """Where one task stands: status, current round and what its figures say."""

    task: str
    workflow: str | None
    domain: str | None
    status: str
    round: int | None
    state: str | None
    reviewers: tuple[str, ...]
    measure: Measure
    survey: Mapping[str, float | None]
    ready: bool
    proposed: bool
    reasons: tuple[str, ...]
    waiting: tuple[str, ...]
    rounds: tuple[RoundRecord, ...]
    at_bar: AtBar | None = None

    @property
    def note(self) -> str | None:
        return self.rounds[-1].note if self.rounds else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "workflow": self.workflow,
            "domain": self.domain,
            "status": self.status,
            "round": self.round,
            "round_state": self.state,
            "reviewers": list(self.reviewers),
            "agreement": self.measure.to_dict(),
            "survey": dict(self.survey),
            "ready": self.ready,
            "proposed": self.proposed,
            "reasons": list(self.reasons),
            "waiting": list(self.waiting),
            "note": self.note,
            "rounds": [r.to_dict() for r in self.rounds],
            "at_bar": None if self.at_bar is None else self.at_bar.to_dict(),
        }


@dataclass(frozen=True)
class Acceptance:
    """Every task of a benchmark with its acceptance status, and the settings used."""

    benchmark: str
    settings: Settings
    tasks: tuple[TaskAcceptance, ...]

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(TASK_STATUSES, 0)
        for t in self.tasks:
            out[t.status] += 1
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "benchmark": self.benchmark,
            "settings": self.settings.to_dict(),
            "counts": self.counts(),
            "tasks": [t.to_dict() for t in self.tasks],
        }


# -- settings -------------------------------------------------------------------------------
def _settings(s: Session, benchmark_id: int) -> Settings:
    row = s.get(m.DatabaseInfo, f"{SETTINGS_PREFIX}{benchmark_id}")
    if row is None:
        return Settings()
    try:
        data = json.loads(row.value)
        if not isinstance(data, dict):
            raise ValueError("not an object")
        return Settings.from_dict(data)
    except (ValueError, TypeError) as exc:
        raise GradercalError(f"the stored acceptance settings are unreadable: {exc}") from None


def load_settings(db: Database, benchmark: str | None = None) -> Settings:
    """The benchmark's acceptance settings (the defaults until some are saved)."""
    bench = Repository(db).benchmark(benchmark)
    with db.read() as s:
        return _settings(s, bench.id)


def save_settings(db: Database, benchmark: str | None = None, **changes: Any) -> Settings:
    """Change some acceptance settings of a benchmark (the others stay); returns them all.

    Raises:
        ValidationError-like GradercalError: a value the rules refuse (one line).
    """
    bench = Repository(db).benchmark(benchmark)
    with db.write() as s:
        current = _settings(s, bench.id)
        data = current.to_dict()
        for key, value in changes.items():
            if value is None:
                continue
            if key == "survey_min":
                data["survey_min"] = {**data["survey_min"], **dict(value)}
            else:
                data[key] = value
        try:
            new = Settings.from_dict(data)
        except (ValueError, TypeError) as exc:
            raise GradercalError(str(exc)) from None
        s.merge(m.DatabaseInfo(key=f"{SETTINGS_PREFIX}{bench.id}", value=json.dumps(new.to_dict())))
    return new


# -- facts ----------------------------------------------------------------------------------
@dataclass
class _TaskFacts:
    pk: int
    external_id: str
    workflow: str | None
    domain: str | None
    reviewers: set[str]
    open_items: dict[str, int]
    ratings: list[Rating]
    surveys: dict[str, tuple[Mapping[str, Any], datetime | None]]
    rounds: list[m.TaskRound]


def _state(row: m.TaskRound) -> str:
    return round_state(row.decision, row.closed_at)


def _record(row: m.TaskRound) -> RoundRecord:
    measure = None
    basis = row.decision_basis if isinstance(row.decision_basis, dict) else {}
    if row.closed_at is not None and row.statistic:
        n_eff = basis.get("n_effective")
        measure = Measure(
            row.statistic,
            row.agreement,
            row.agreement_low,
            row.agreement_high,
            int(row.n_units or 0),
            int(row.n_criteria or 0),
            row.agreement_note,
            basis.get("method"),
            None if n_eff is None else float(n_eff),
        )
    stored = basis.get("at_bar")
    return RoundRecord(
        number=row.number,
        state=_state(row),
        opened_at=_aware(row.opened_at),
        closed_at=_aware(row.closed_at),
        decided_at=_aware(row.decided_at),
        note=row.note,
        actor=row.actor,
        measure=measure,
        survey=None if row.survey is None else dict(row.survey),
        passed=row.passed,
        proposed=row.proposed,
        reasons=tuple(str(x) for x in (row.reasons or [])),
        at_bar=AtBar.from_dict(stored) if isinstance(stored, dict) else None,
    )


def _facts(s: Session, benchmark_id: int, task: str | None = None) -> list[_TaskFacts]:
    q = select(m.Task.id, m.Task.external_id, m.Task.workflow, m.Task.domain).where(
        m.Task.benchmark_id == benchmark_id
    )
    if task is not None:
        q = q.where(m.Task.external_id == task)
    tasks = s.execute(q.order_by(m.Task.position, m.Task.id)).all()
    facts = {
        int(t[0]): _TaskFacts(int(t[0]), str(t[1]), t[2], t[3], set(), {}, [], {}, [])
        for t in tasks
    }
    if not facts:
        return []
    pks = list(facts)
    for gname, task_pk, status in s.execute(
        select(m.Grader.name, m.Response.task_id, m.Assignment.status)
        .join(m.Grader, m.Grader.id == m.Assignment.grader_id)
        .join(m.Response, m.Response.id == m.Assignment.response_id)
        .where(m.Response.task_id.in_(pks), m.Grader.kind == "human")
    ):
        f = facts[int(task_pk)]
        f.reviewers.add(str(gname))
        if status not in _DONE:
            f.open_items[str(gname)] = f.open_items.get(str(gname), 0) + 1
    for gname, task_pk, resp, crit, levels, met, level in s.execute(
        judgments_with_names(
            m.Grader.name,
            m.Response.task_id,
            m.Response.external_id,
            m.Criterion.external_id,
            m.Criterion.levels,
            m.Judgment.met,
            m.Judgment.level,
        )
        .where(
            m.Response.task_id.in_(pks),
            m.Grader.kind == "human",
            m.Criterion.kind == "judgment",
            m.Judgment.task_version >= m.Criterion.verdict_version,  # stale ones: not
        )
        .order_by(m.Judgment.id)
    ):
        f = facts[int(task_pk)]
        f.reviewers.add(str(gname))
        if int(levels or 2) > 2 and level is not None:
            value = float(level)
        elif met is not None:
            value = 1.0 if met else 0.0
        else:
            continue
        f.ratings.append(Rating(str(gname), str(resp), str(crit), value))
    for gname, task_pk, answers, updated in s.execute(
        select(m.Grader.name, m.TaskReview.task_id, m.TaskReview.answers, m.TaskReview.updated_at)
        .join(m.Grader, m.Grader.id == m.TaskReview.grader_id)
        .where(m.TaskReview.task_id.in_(pks), m.Grader.kind == "human")
    ):
        facts[int(task_pk)].surveys[str(gname)] = (dict(answers or {}), _aware(updated))
    for row in s.scalars(
        select(m.TaskRound).where(m.TaskRound.task_id.in_(pks)).order_by(m.TaskRound.number)
    ):
        facts[int(row.task_id)].rounds.append(row)
    return list(facts.values())


def _reviewer_facts(f: _TaskFacts, opened: datetime | None, number: int) -> list[ReviewerFact]:
    out = []
    for name in sorted(f.reviewers):
        answers, updated = f.surveys.get(name, ({}, None))
        if number > 1 and opened is not None and (updated is None or updated < opened):
            answers = {}  # a survey of the task before its revision does not count
        survey = {k: (int(v) if isinstance(v, int | float) else None) for k, v in answers.items()}
        out.append(ReviewerFact(name, f.open_items.get(name, 0), survey))
    return out


def _assess_open(f: _TaskFacts, settings: Settings) -> Assessment:
    """The live assessment of the task's open round (or of round 1 for a draft)."""
    last = f.rounds[-1] if f.rounds else None
    number = 1 if last is None else last.number
    opened = None if last is None else _aware(last.opened_at)
    return assess(
        _reviewer_facts(f, opened, number),
        f.ratings,
        settings,
        number=number,
        earlier=[_record(r).fact for r in f.rounds[:-1]],
    )


def _summary(f: _TaskFacts, settings: Settings) -> TaskAcceptance:
    records = tuple(_record(r) for r in f.rounds)
    status = task_status([r.fact for r in records])
    last = records[-1] if records else None
    if last is None or last.state == "open":
        # a draft's figures are a preview: the point value, no bootstrap (a benchmark of
        # hundreds of drafts lists at once)
        a = _assess_open(f, settings if last is not None else replace(settings, n_boot=0))
        reasons = a.reasons
        proposed = a.proposed
        if last is None:
            reasons = ("no review round yet (tasks open ID starts round 1)", *a.reasons)
            proposed = False
        return TaskAcceptance(
            f.external_id,
            f.workflow,
            f.domain,
            status,
            None if last is None else last.number,
            None if last is None else last.state,
            tuple(sorted(f.reviewers)),
            a.measure,
            dict(a.survey),
            a.ready,
            proposed,
            tuple(reasons),
            a.waiting,
            records,
            None if last is None else a.at_bar,  # a draft's preview: no operating figure
        )
    measure = last.measure or Measure(settings.statistic, None, None, None, 0, 0, "not measured")
    return TaskAcceptance(
        f.external_id,
        f.workflow,
        f.domain,
        status,
        last.number,
        last.state,
        tuple(sorted(f.reviewers)),
        measure,
        dict(last.survey or {}),
        True,
        bool(last.proposed),
        last.reasons,
        (),
        records,
        last.at_bar,
    )


def load_acceptance(
    db: Database, benchmark: str | None = None, *, status: str | None = None
) -> Acceptance:
    """Every task of the benchmark (or those with ``status``), in the benchmark's order."""
    if status is not None and status not in TASK_STATUSES:
        raise GradercalError(f"unknown status {status!r}: one of {', '.join(TASK_STATUSES)}")
    bench = Repository(db).benchmark(benchmark)
    with db.read() as s:
        settings = _settings(s, bench.id)
        facts = _facts(s, bench.id)
    if status is not None:  # the status needs the rounds only: measure just those tasks
        facts = [f for f in facts if task_status([_record(r).fact for r in f.rounds]) == status]
    return Acceptance(bench.name, settings, tuple(_summary(f, settings) for f in facts))


# -- actions --------------------------------------------------------------------------------
def _snapshot(row: m.TaskRound) -> dict[str, Any]:
    return {
        "number": row.number,
        "state": _state(row),
        "opened_at": _iso(row.opened_at),
        "closed_at": _iso(row.closed_at),
        "decided_at": _iso(row.decided_at),
        "note": row.note,
        "actor": row.actor,
        "statistic": row.statistic,
        "agreement": row.agreement,
        "agreement_low": row.agreement_low,
        "agreement_high": row.agreement_high,
        "n_units": row.n_units,
        "n_criteria": row.n_criteria,
        "agreement_note": row.agreement_note,
        "survey": row.survey,
        "passed": row.passed,
        "proposed": row.proposed,
        "reasons": row.reasons,
        "decision_basis": row.decision_basis,
    }


@dataclass(frozen=True)
class _Who:
    """Who acts, and through what (recorded in the history)."""

    name: str
    source: str


def _history(
    s: Session,
    row: m.TaskRound,
    action: str,
    before: dict[str, Any] | None,
    note: str | None,
    by: _Who,
    now: datetime,
) -> None:
    s.add(
        m.Revision(
            entity="task_round",
            entity_id=row.id,
            revision=0 if before is None else row.revision - 1,
            data={"action": action, "note": note, "before": before},
            actor=by.name,
            source=by.source,
            changed_at=now,
        )
    )


def _close(row: m.TaskRound, a: Assessment, now: datetime) -> None:
    row.closed_at = now
    row.statistic = a.measure.statistic
    row.agreement = a.measure.value
    row.agreement_low = a.measure.low
    row.agreement_high = a.measure.high
    row.n_units = a.measure.n_units
    row.n_criteria = a.measure.n_criteria
    row.agreement_note = a.measure.note
    row.survey = dict(a.survey)
    row.passed = a.passed
    row.proposed = a.proposed
    row.reasons = list(a.reasons)
    row.decision_basis = {
        "method": a.measure.method,
        "n_effective": a.measure.n_effective,
        "at_bar": None if a.at_bar is None else a.at_bar.to_dict(),
    }


def _actor(db: Database, actor: str) -> str:
    from gradercal.db.team import identity

    who = identity(db)
    name = who.user if who is not None else (actor or "").strip()
    if not name:
        raise AcceptanceError("say who decides (--actor NAME)")
    return name[:200]


def act(
    db: Database,
    benchmark: str | None,
    task: str,
    action: str,
    *,
    note: str | None = None,
    actor: str,
    force: bool = False,
    now: datetime | None = None,
    source: str = "cli",
) -> TaskAcceptance:
    """Apply ``action`` (open, close, accept, reject, reopen) to ``task``; returns where the
    task stands afterwards. See the module docstring. ``source`` is recorded in the
    history rows (``cli``, ``ui``).

    Raises:
        AcceptanceError: the rules refuse the action (one line: why, and what would do).
        NotFoundError: no such task.
    """
    text = (note or "").strip() or None
    if action in ("reject", "reopen") and not text:
        raise AcceptanceError(f"{action} needs a note: say what must change (--note TEXT)")
    if text is not None and (len(text) > MAX_NOTE or "\x00" in text):
        raise AcceptanceError(f"the note must be at most {MAX_NOTE} characters, without NUL")
    if action not in ("open", "close", "accept", "reject", "reopen"):
        raise AcceptanceError(f"unknown action {action!r}")
    who = _actor(db, actor)
    bench = Repository(db).benchmark(benchmark)
    when = now or datetime.now(UTC)
    with db.write() as s:
        settings = _settings(s, bench.id)
        found = _facts(s, bench.id, task)
        if not found:
            raise NotFoundError(f"no task {task!r} in {bench.name!r}")
        _apply(s, found[0], action, settings, text, _Who(who, source), force, when)
    return _done(db, bench.name, task)


def _apply(
    s: Session,
    f: _TaskFacts,
    action: str,
    settings: Settings,
    text: str | None,
    by: _Who,
    force: bool,
    when: datetime,
) -> None:
    """The writes of one action, inside the caller's transaction."""
    who = by.name
    task = f.external_id
    row = f.rounds[-1] if f.rounds else None
    last = None if row is None else _record(row).fact
    if action == "open":
        refused = check_action("open", last, ready=False, force=force)
        if refused:
            raise AcceptanceError(f"{task}: {refused}")
        new = m.TaskRound(
            task_id=f.pk,
            number=1 if row is None else row.number + 1,
            opened_at=when,
            note=text,
            actor=who,
            revision=1,
        )
        s.add(new)
        s.flush()
        _history(s, new, "open", None, text, by, when)
        if row is not None:  # the reviewers grade the revised task again
            responses = select(m.Response.id).where(m.Response.task_id == f.pk)
            humans = select(m.Grader.id).where(m.Grader.kind == "human")
            s.execute(
                update(m.Assignment)
                .where(m.Assignment.response_id.in_(responses), m.Assignment.grader_id.in_(humans))
                .values(status="pending", updated_at=when),
                execution_options={"synchronize_session": False},
            )
        return
    if action == "close" and (last is None or last.state != "open"):
        refused = check_action("close", last, ready=False, force=force)
        raise AcceptanceError(f"{task}: {refused}")
    if row is not None and last is not None and last.state == "open":
        a = _assess_open(f, settings)
        if action == "close":
            refused = check_action("close", last, ready=a.ready, force=force)
            if refused:
                waiting = f" ({a.waiting[0]})" if a.waiting else ""
                raise AcceptanceError(f"{task}: {refused}{waiting}")
        elif not (a.ready or force):
            refused = check_action(action, last, ready=False, force=False) or ""
            waiting = f"; waiting: {a.waiting[0]}" if a.waiting else ""
            raise AcceptanceError(f"{task}: {refused}{waiting}")
        before = _snapshot(row)
        _close(row, a, when)
        row.revision += 1
        row.actor = who
        if action == "close":
            row.note = text
        s.flush()
        _history(s, row, "close", before, text if action == "close" else None, by, when)
        if action == "close":
            return
        last = replace(last, state="closed", passed=a.passed)
    ready = bool(row.proposed) if row is not None else False
    refused = check_action(action, last, ready=ready, force=force)
    if refused:
        raise AcceptanceError(f"{task}: {refused}")
    decision = {"accept": "accepted", "reject": "rejected", "reopen": "needs_revision"}[action]
    if row is None:  # --force on a draft: a round 1 decided without a review
        row = m.TaskRound(task_id=f.pk, number=1, opened_at=when, closed_at=when, revision=1)
        s.add(row)
        s.flush()
        _history(s, row, "open", None, None, by, when)
    before = _snapshot(row)
    row.decision = decision
    row.decided_at = when
    row.note = text
    row.actor = who
    row.revision += 1
    s.flush()
    _history(s, row, action, before, text, by, when)


def _done(db: Database, benchmark: str, task: str) -> TaskAcceptance:
    with db.read() as s:
        bench_id = s.scalar(select(m.Benchmark.id).where(m.Benchmark.name == benchmark))
        assert bench_id is not None
        settings = _settings(s, bench_id)
        (f,) = _facts(s, bench_id, task)
    return _summary(f, settings)


def accepted_tasks(db: Database, benchmark: str | None = None) -> set[str]:
    """The external ids of the benchmark's accepted tasks (no measuring: rounds only)."""
    bench = Repository(db).benchmark(benchmark)
    with db.read() as s:
        rows = s.execute(
            select(m.Task.external_id, m.TaskRound.number, m.TaskRound.decision)
            .join(m.TaskRound, m.TaskRound.task_id == m.Task.id)
            .where(m.Task.benchmark_id == bench.id)
        ).all()
    last: dict[str, tuple[int, str | None]] = {}
    for task, number, decision in rows:
        if task not in last or number > last[task][0]:
            last[task] = (int(number), decision)
    return {t for t, (_n, d) in last.items() if d == "accepted"}


def load_round_table(db: Database, benchmark: str | None = None) -> pd.DataFrame:
    """Every task's rounds as a long frame for the report's acceptance section
    (:func:`gradercal.ops.acceptance.round_table` of
    :func:`gradercal.db.dashboard_data.round_rows`).

    One row per (task, round), a draft task one row with ``round`` None; ``status`` is
    the task's status (:func:`~gradercal.ops.acceptance.task_status`), ``round_state``
    the round's; the agreement columns are the numbers kept when the round closed (None
    while it is open). Reads the rounds only: nothing is measured here.
    """
    from gradercal.db.dashboard_data import round_rows

    return round_table(*round_rows(db, benchmark))
