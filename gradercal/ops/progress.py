"""Coordinator progress: who has graded what, at what pace, and when the rest is due.

A pure function on plain facts (no database, no Qt): :func:`summarise` takes one
:class:`ItemFact` per queue item (grader × response), one :class:`PacketFact` per
exported offline packet and one :class:`TaskFact` per task, and returns a
:class:`Progress` with three tables — per grader, per packet, per task — and totals.

Definitions (docs/review-process.md states them for users):

* **Done** = submitted or skipped. **Open** = pending or in progress.
* **Active time** is the time on task the app recorded: it counts only while the grader
  gives input (the clock stops after a minute without a key, click or wheel), so a
  window left open over lunch adds nothing.
* **Pace** (responses per active hour) = submitted ÷ active time spent on the submitted
  items. Undefined (None) before the first submission with recorded time.
* **Active time left** = open items × mean active time per submitted item: the grading
  time still needed, not a calendar date.
* **Calendar forecast**: the submissions of the last ``window_days`` days (default 7)
  give a rate per day; open ÷ that rate, counted from ``now``, is the expected finish.
  None when nothing was submitted in the window (no pace to extrapolate).
* A packet is **returned** when every queue item it carried is done in the database,
  **overdue** when its due date has passed and some item is still open, else **out**.
* A task is **not assigned** (no queue item), **not started** (none done), **grading**
  (some done) or **graded** (every queue item done).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from typing import Any

DONE = frozenset({"submitted", "skipped"})


@dataclass(frozen=True)
class ItemFact:
    """One queue item (a grader's assignment of one response)."""

    grader: str
    task: str
    status: str  # pending | in_progress | submitted | skipped
    time_spent_s: float = 0.0
    updated_at: datetime | None = None
    submitted_at: datetime | None = None


@dataclass(frozen=True)
class TaskFact:
    task: str
    workflow: str | None = None
    domain: str | None = None
    responses: int = 0


@dataclass(frozen=True)
class PacketFact:
    """An exported packet as the database remembers it, with its items' current state."""

    packet_id: str
    grader: str
    exported_at: datetime
    due_at: datetime | None
    items: int
    open_items: int
    merges: int = 0
    last_merged_at: datetime | None = None


@dataclass(frozen=True)
class GraderProgress:
    grader: str
    assigned: int
    submitted: int
    skipped: int
    in_progress: int
    pending: int
    active_s: float
    per_item_s: float | None
    per_hour: float | None
    active_left_s: float | None
    recent_per_day: float | None
    forecast: datetime | None
    last_activity: datetime | None

    @property
    def done(self) -> int:
        return self.submitted + self.skipped

    @property
    def open(self) -> int:
        return self.pending + self.in_progress


@dataclass(frozen=True)
class PacketProgress:
    packet_id: str
    grader: str
    status: str  # out | overdue | returned
    exported_at: datetime
    due_at: datetime | None
    items: int
    open_items: int
    merges: int
    last_merged_at: datetime | None


@dataclass(frozen=True)
class TaskProgress:
    task: str
    workflow: str | None
    domain: str | None
    responses: int
    assigned: int
    done: int
    graders: int
    status: str  # not assigned | not started | grading | graded


@dataclass(frozen=True)
class Progress:
    now: datetime
    window_days: int
    graders: list[GraderProgress] = field(default_factory=list)
    packets: list[PacketProgress] = field(default_factory=list)
    tasks: list[TaskProgress] = field(default_factory=list)

    @property
    def total(self) -> GraderProgress:
        """Every grader together (forecast from the team's combined recent pace)."""
        return _grader_row("all graders", self._all_items, self.now, self.window_days)

    # the flattened facts, kept for :attr:`total`
    _all_items: Sequence[ItemFact] = field(default_factory=tuple, repr=False)

    def to_dict(self) -> dict[str, Any]:
        def clean(row: Any) -> dict[str, Any]:
            out = asdict(row)
            for k, v in out.items():
                if isinstance(v, datetime):
                    out[k] = v.isoformat()
            return out

        return {
            "now": self.now.isoformat(),
            "window_days": self.window_days,
            "total": clean(self.total),
            "graders": [clean(g) for g in self.graders],
            "packets": [clean(p) for p in self.packets],
            "tasks": [clean(t) for t in self.tasks],
        }


def _grader_row(
    grader: str, items: Sequence[ItemFact], now: datetime, window_days: int
) -> GraderProgress:
    counts: dict[str, int] = defaultdict(int)
    active = submitted_time = 0.0
    timed_submissions = recent = 0
    last: datetime | None = None
    since = now - timedelta(days=window_days)
    for it in items:
        counts[it.status] += 1
        spent = max(0.0, float(it.time_spent_s or 0.0))
        active += spent
        if it.status == "submitted" and spent > 0:
            submitted_time += spent
            timed_submissions += 1
        if it.status == "submitted" and it.submitted_at is not None and it.submitted_at >= since:
            recent += 1
        # a queue item untouched since it was assigned is no activity
        touched = it.status != "pending" or spent > 0
        for when in (it.updated_at if touched else None, it.submitted_at):
            if when is not None and (last is None or when > last):
                last = when
    open_n = counts["pending"] + counts["in_progress"]
    per_item = submitted_time / timed_submissions if timed_submissions else None
    per_day = recent / window_days if recent else None
    forecast = now + timedelta(days=open_n / per_day) if open_n and per_day else None
    return GraderProgress(
        grader=grader,
        assigned=len(items),
        submitted=counts["submitted"],
        skipped=counts["skipped"],
        in_progress=counts["in_progress"],
        pending=counts["pending"],
        active_s=active,
        per_item_s=per_item,
        per_hour=3600.0 / per_item if per_item else None,
        active_left_s=open_n * per_item if per_item is not None else (0.0 if not open_n else None),
        recent_per_day=per_day,
        forecast=forecast,
        last_activity=last,
    )


def _packet_row(p: PacketFact, now: datetime) -> PacketProgress:
    if p.open_items == 0:
        status = "returned"
    elif p.due_at is not None and p.due_at < now:
        status = "overdue"
    else:
        status = "out"
    return PacketProgress(
        packet_id=p.packet_id,
        grader=p.grader,
        status=status,
        exported_at=p.exported_at,
        due_at=p.due_at,
        items=p.items,
        open_items=p.open_items,
        merges=p.merges,
        last_merged_at=p.last_merged_at,
    )


def _task_rows(tasks: Sequence[TaskFact], items: Sequence[ItemFact]) -> list[TaskProgress]:
    by_task: dict[str, list[ItemFact]] = defaultdict(list)
    for it in items:
        by_task[it.task].append(it)
    rows = []
    for t in tasks:
        mine = by_task.get(t.task, [])
        done = sum(1 for it in mine if it.status in DONE)
        if not mine:
            status = "not assigned"
        elif done == len(mine):
            status = "graded"
        elif done == 0:
            status = "not started"
        else:
            status = "grading"
        rows.append(
            TaskProgress(
                task=t.task,
                workflow=t.workflow,
                domain=t.domain,
                responses=t.responses,
                assigned=len(mine),
                done=done,
                graders=len({it.grader for it in mine}),
                status=status,
            )
        )
    return rows


def summarise(
    items: Iterable[ItemFact],
    tasks: Sequence[TaskFact] = (),
    packets: Sequence[PacketFact] = (),
    *,
    now: datetime,
    window_days: int = 7,
    graders: Sequence[str] = (),
) -> Progress:
    """Progress tables from plain facts (see the module docstring for every definition).

    ``graders`` lists graders to show even without any queue item (in this order, the
    rest follow by name); ``now`` must be timezone-aware like the facts' timestamps.
    """
    if window_days < 1:
        raise ValueError("window_days must be at least 1")
    all_items = list(items)
    per: dict[str, list[ItemFact]] = defaultdict(list)
    for it in all_items:
        per[it.grader].append(it)
    order = list(dict.fromkeys([*graders, *sorted(per)]))
    return Progress(
        now=now,
        window_days=window_days,
        graders=[_grader_row(g, per.get(g, []), now, window_days) for g in order],
        packets=sorted(
            (_packet_row(p, now) for p in packets), key=lambda p: (p.exported_at, p.packet_id)
        ),
        tasks=_task_rows(tasks, all_items),
        _all_items=tuple(all_items),
    )


#: The columns of each progress table, in order: (key, heading).
COLUMNS: dict[str, tuple[tuple[str, str], ...]] = {
    "graders": (
        ("grader", "grader"),
        ("assigned", "assigned"),
        ("submitted", "submitted"),
        ("skipped", "skipped"),
        ("in_progress", "in progress"),
        ("pending", "pending"),
        ("active_s", "active time"),
        ("per_hour", "per active hour"),
        ("active_left_s", "active time left"),
        ("recent_per_day", "per day (recent)"),
        ("forecast", "forecast"),
        ("last_activity", "last activity"),
    ),
    "packets": (
        ("packet_id", "packet"),
        ("grader", "grader"),
        ("status", "status"),
        ("exported_at", "exported"),
        ("due_at", "due"),
        ("items", "items"),
        ("open_items", "open"),
        ("merges", "merges"),
        ("last_merged_at", "last merged"),
    ),
    "tasks": (
        ("task", "task"),
        ("workflow", "workflow"),
        ("domain", "domain"),
        ("responses", "responses"),
        ("assigned", "assigned"),
        ("done", "done"),
        ("graders", "graders"),
        ("status", "status"),
    ),
}


def records(progress: Progress) -> dict[str, list[dict[str, Any]]]:
    """The three tables as plain rows (COLUMNS order; seconds, ISO dates), for CSV and JSON."""
    rows: dict[str, list[Any]] = {
        "graders": [*progress.graders, progress.total] if progress.graders else [],
        "packets": list(progress.packets),
        "tasks": list(progress.tasks),
    }
    out: dict[str, list[dict[str, Any]]] = {}
    for name, items in rows.items():
        keys = [k for k, _h in COLUMNS[name]]
        out[name] = [
            {k: (v.isoformat() if isinstance(v := getattr(r, k), datetime) else v) for k in keys}
            for r in items
        ]
    return out


def format_duration(seconds: float | None) -> str:
    """``1 h 05 min`` / ``12 min`` / ``40 s``; an en dash when unknown."""
    if seconds is None:
        return "–"
    s = round(max(0.0, seconds))
    if s < 60:
        return f"{s} s"
    h, rest = divmod(s, 3600)
    minutes = rest // 60
    return f"{h} h {minutes:02d} min" if h else f"{minutes} min"


def display(key: str, value: Any) -> str:
    """One cell as people read it (durations, rates, dates to the minute)."""
    if value is None:
        return "–"
    if key.endswith("_s"):
        return format_duration(float(value))
    if key in ("per_hour", "recent_per_day"):
        return f"{float(value):.1f}"
    if isinstance(value, str) and key.endswith(("_at", "forecast", "last_activity")):
        return value[:16].replace("T", " ")
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M")
    return str(value)


__all__ = [
    "COLUMNS",
    "GraderProgress",
    "ItemFact",
    "PacketFact",
    "PacketProgress",
    "Progress",
    "TaskFact",
    "TaskProgress",
    "display",
    "format_duration",
    "records",
    "summarise",
]
