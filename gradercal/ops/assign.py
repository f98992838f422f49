"""Assignment design: who grades which response, reproducibly.

A pure function on plain inputs (no database, no Qt): :func:`design_assignments` takes
the responses of a benchmark with the attributes to stratify on, the graders, the
overlap ``K`` and a seed, and returns every (grader, response) pair with its queue
position and calibration flag.

The design:

* **Calibration subset.** A share ``calibration_fraction`` of the units (responses, or
  whole tasks with ``unit="task"``) is graded by *every* grader. It is drawn stratified
  (proportional allocation by largest remainder over the strata), and it comes first in
  every queue, so agreement can be measured early.
* **Overlap.** Every other unit is graded by exactly ``K`` distinct graders.
* **Stratified load balance.** Within each stratum (a combination of the values of the
  ``stratify`` keys, e.g. workflow × model) the ``n × K`` grading slots are split as
  evenly as possible: every grader gets ⌊n·K/G⌋ or ⌈n·K/G⌉ of them. Who gets the extra
  slot goes to the graders with the least work so far, so totals stay within one unit
  of each other as well (in units; task units of unequal size may differ by a response
  or two more).
* **Pair balance.** Among the graders still owed slots, each unit prefers graders who
  have graded least often *together* with the ones already picked, so that every pair
  of graders shares items for agreement statistics.
* **Queue order.** Per grader: calibration units first, then the rest; within each
  block tasks in a per-grader pseudo-random order with the responses of one task one
  after another (again per-grader order).

Every random choice is a keyed sha256 of ``(seed, purpose, ids…)``: the same inputs give
the same design on every machine and every Python version, whatever the order in which
the responses and graders are given.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from gradercal.errors import Problem, ValidationError

__all__ = [
    "STRATA_KEYS",
    "Design",
    "PlannedAssignment",
    "ResponseUnit",
    "design_assignments",
]

#: Attributes a design can be stratified on (the values come with each :class:`ResponseUnit`).
STRATA_KEYS = ("workflow", "domain", "answer_format", "model")

Unit = Literal["response", "task"]


@dataclass(frozen=True)
class ResponseUnit:
    """One response to assign: its id, its task and the attributes to stratify on.

    ``strata`` maps attribute names (``workflow``, ``model`` …) to values; a missing
    value (None) is a stratum of its own.
    """

    response_id: str
    task_id: str
    strata: Mapping[str, str | None] = field(default_factory=dict)


@dataclass(frozen=True)
class PlannedAssignment:
    """One response in one grader's queue."""

    grader: str
    response_id: str
    task_id: str
    position: int
    calibration: bool


@dataclass(frozen=True)
class Design:
    """A complete assignment design and the parameters that produced it."""

    graders: tuple[str, ...]
    overlap: int
    calibration_fraction: float
    stratify: tuple[str, ...]
    seed: str
    unit: Unit
    assignments: tuple[PlannedAssignment, ...]
    calibration: tuple[str, ...]
    """Response ids graded by everyone, sorted."""

    def parameters(self) -> dict[str, Any]:
        """The inputs other than the responses, as JSON-ready values."""
        return {
            "graders": list(self.graders),
            "overlap": self.overlap,
            "calibration_fraction": self.calibration_fraction,
            "stratify": list(self.stratify),
            "seed": self.seed,
            "unit": self.unit,
        }

    def digest(self) -> str:
        """sha256 of the parameters and every assignment: equal digests, equal designs."""
        body = {
            **self.parameters(),
            "assignments": [
                [a.grader, a.response_id, a.position, a.calibration] for a in self.assignments
            ],
        }
        text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def queue(self, grader: str) -> list[PlannedAssignment]:
        """One grader's assignments in queue order."""
        return sorted((a for a in self.assignments if a.grader == grader), key=lambda a: a.position)

    def load(self) -> dict[str, int]:
        """Responses per grader."""
        out = dict.fromkeys(self.graders, 0)
        for a in self.assignments:
            out[a.grader] += 1
        return out

    def coverage(self) -> dict[str, int]:
        """Graders per response."""
        return dict(Counter(a.response_id for a in self.assignments))

    def summary(self, units: Iterable[ResponseUnit] = ()) -> dict[str, Any]:
        """JSON-ready overview: loads, calibration, and (given the units) loads per stratum."""
        load = self.load()
        cal = Counter(a.grader for a in self.assignments if a.calibration)
        out: dict[str, Any] = {
            **self.parameters(),
            "digest": self.digest(),
            "n_responses": len(self.coverage()),
            "n_assignments": len(self.assignments),
            "n_calibration_responses": len(self.calibration),
            "graders_detail": [
                {"grader": g, "responses": load[g], "calibration": cal.get(g, 0)}
                for g in self.graders
            ],
            "load_min": min(load.values()) if load else 0,
            "load_max": max(load.values()) if load else 0,
        }
        by_id = {u.response_id: u for u in units}
        if by_id and self.stratify:
            cells: dict[str, Counter[str]] = defaultdict(Counter)
            for a in self.assignments:
                u = by_id.get(a.response_id)
                if u is not None and not a.calibration:
                    cells[_stratum_label(self.stratify, u)][a.grader] += 1
            out["strata"] = [
                {
                    "stratum": label,
                    "per_grader": {g: counts.get(g, 0) for g in self.graders},
                }
                for label, counts in sorted(cells.items())
            ]
        return out


def design_assignments(
    responses: Iterable[ResponseUnit],
    graders: Sequence[str],
    overlap: int,
    *,
    calibration_fraction: float = 0.0,
    stratify: Sequence[str] = (),
    seed: str | int = 0,
    unit: Unit = "response",
) -> Design:
    """Design who grades what (see the module docstring for the rules).

    Args:
        responses: every response to grade, with the attributes named in ``stratify``.
        graders: the graders' names (distinct; their order does not matter).
        overlap: graders per response outside the calibration subset, 1 ≤ K ≤ len(graders).
        calibration_fraction: share of units graded by everyone (0 … 1). When positive,
            at least one unit is drawn.
        stratify: attribute names to balance each grader's load over.
        seed: any string or integer; the same seed gives the same design.
        unit: ``"response"`` assigns responses independently; ``"task"`` keeps all the
            responses of a task together (one reading of the task and its artifacts
            per grader; attributes that vary within a task cannot be stratified on).

    Raises:
        ValidationError: bad parameters (every problem listed); nothing is returned.
    """
    names = [str(g) for g in graders]
    units = sorted({u.response_id: u for u in responses}.values(), key=lambda u: u.response_id)
    _validate(units, names, overlap, calibration_fraction, stratify, unit)
    seed_text = str(seed)
    keys = tuple(stratify)
    people = tuple(sorted(names))
    rng = _Keys(seed_text)

    items = _items(units, unit, keys)
    n_cal = _calibration_count(len(items), calibration_fraction)
    cal_items = _draw_calibration(items, n_cal, rng)
    cal_ids = {it.key for it in cal_items}

    chosen: dict[str, list[str]] = {}  # item key → graders
    total = dict.fromkeys(people, 0)  # responses per grader
    for it in cal_items:
        chosen[it.key] = list(people)
        for g in people:
            total[g] += it.weight
    pairs: Counter[tuple[str, str]] = Counter()
    rest = [it for it in items if it.key not in cal_ids]
    for stratum, members in _by_stratum(rest):
        _fill_stratum(stratum, members, people, overlap, rng, total, pairs, chosen)

    assignments: list[PlannedAssignment] = []
    for g in people:
        mine = [it for it in items if g in chosen[it.key]]
        cal_block = [it for it in mine if it.key in cal_ids]
        rest_block = [it for it in mine if it.key not in cal_ids]
        position = 0
        for block, is_cal in ((cal_block, True), (rest_block, False)):
            for resp in _queue_order(block, g, rng):
                assignments.append(
                    PlannedAssignment(g, resp.response_id, resp.task_id, position, is_cal)
                )
                position += 1
    cal_responses = sorted(r.response_id for it in cal_items for r in it.members)
    return Design(
        graders=people,
        overlap=overlap,
        calibration_fraction=float(calibration_fraction),
        stratify=keys,
        seed=seed_text,
        unit=unit,
        assignments=tuple(assignments),
        calibration=tuple(cal_responses),
    )


# -- internals -----------------------------------------------------------------------------
@dataclass(frozen=True)
class _Item:
    """What is assigned as a whole: one response, or every response of one task."""

    key: str
    task_id: str
    members: tuple[ResponseUnit, ...]
    stratum: tuple[str, ...]

    @property
    def weight(self) -> int:
        return len(self.members)


class _Keys:
    """Keyed sha256 hashes: reproducible pseudo-random sort keys."""

    def __init__(self, seed: str) -> None:
        self.seed = seed

    def __call__(self, *parts: str) -> str:
        text = "\x00".join((self.seed, *parts))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _validate(
    units: list[ResponseUnit],
    graders: list[str],
    overlap: int,
    fraction: float,
    stratify: Sequence[str],
    unit: str,
) -> None:
    problems: list[Problem] = []

    def bad(field_name: str, message: str) -> None:
        problems.append(Problem("assign", None, field_name, message))

    if not graders:
        bad("graders", "name at least one grader")
    if any(not g.strip() for g in graders):
        bad("graders", "grader names must not be empty")
    dupes = sorted(g for g, n in Counter(graders).items() if n > 1)
    if dupes:
        bad("graders", f"named more than once: {', '.join(dupes)}")
    if isinstance(overlap, bool) or not isinstance(overlap, int) or overlap < 1:
        bad("overlap", f"must be a whole number ≥ 1, not {overlap!r}")
    elif graders and overlap > len(set(graders)):
        bad("overlap", f"{overlap} graders per response, but only {len(set(graders))} named")
    if not isinstance(fraction, int | float) or not (0.0 <= float(fraction) <= 1.0):
        bad("calibration_fraction", f"must be between 0 and 1, not {fraction!r}")
    elif not math.isfinite(float(fraction)):
        bad("calibration_fraction", "must be a finite number")
    unknown = [k for k in stratify if k not in STRATA_KEYS]
    if unknown:
        bad("stratify", f"unknown attribute {unknown[0]!r}; use {', '.join(STRATA_KEYS)}")
    dup_keys = sorted(k for k, n in Counter(stratify).items() if n > 1)
    if dup_keys:
        bad("stratify", f"named more than once: {', '.join(dup_keys)}")
    if unit not in ("response", "task"):
        bad("unit", f"must be 'response' or 'task', not {unit!r}")
    if not units:
        bad("responses", "there are no responses to assign")
    if unit == "task" and not unknown:
        for key in stratify:
            by_task: dict[str, set[str | None]] = defaultdict(set)
            for u in units:
                by_task[u.task_id].add(u.strata.get(key))
            varying = sorted(t for t, values in by_task.items() if len(values) > 1)
            if varying:
                bad(
                    "stratify",
                    f"{key!r} varies within task {varying[0]!r}; whole tasks cannot be "
                    f"stratified on it (assign by response, or drop {key!r})",
                )
    if problems:
        raise ValidationError(problems)


def _stratum_of(keys: Sequence[str], u: ResponseUnit) -> tuple[str, ...]:
    return tuple("\x00" if u.strata.get(k) is None else str(u.strata.get(k)) for k in keys)


def _stratum_label(keys: Sequence[str], u: ResponseUnit) -> str:
    return " · ".join(f"{k}={'—' if u.strata.get(k) is None else u.strata.get(k)}" for k in keys)


def _items(units: list[ResponseUnit], unit: Unit, keys: tuple[str, ...]) -> list[_Item]:
    if unit == "response":
        return [_Item(u.response_id, u.task_id, (u,), _stratum_of(keys, u)) for u in units]
    by_task: dict[str, list[ResponseUnit]] = defaultdict(list)
    for u in units:
        by_task[u.task_id].append(u)
    return [
        _Item(task, task, tuple(members), _stratum_of(keys, members[0]))
        for task, members in sorted(by_task.items())
    ]


def _calibration_count(n_items: int, fraction: float) -> int:
    if fraction <= 0 or n_items == 0:
        return 0
    return min(n_items, max(1, math.floor(n_items * float(fraction) + 0.5)))


def _by_stratum(items: Iterable[_Item]) -> list[tuple[tuple[str, ...], list[_Item]]]:
    groups: dict[tuple[str, ...], list[_Item]] = defaultdict(list)
    for it in items:
        groups[it.stratum].append(it)
    return sorted(groups.items())


def _draw_calibration(items: list[_Item], n_cal: int, rng: _Keys) -> list[_Item]:
    """Draw ``n_cal`` items, allocated over the strata in proportion (largest remainder)."""
    if n_cal == 0:
        return []
    groups = _by_stratum(items)
    n = len(items)
    exact = [n_cal * len(members) / n for _s, members in groups]
    quota = [math.floor(x) for x in exact]
    order = sorted(
        range(len(groups)),
        key=lambda i: (-(exact[i] - quota[i]), rng("cal-stratum", *groups[i][0])),
    )
    for i in order[: n_cal - sum(quota)]:
        quota[i] += 1
    out: list[_Item] = []
    for (_stratum, members), q in zip(groups, quota, strict=True):
        ranked = sorted(members, key=lambda it: rng("cal", it.key))
        out.extend(ranked[:q])
    return out


def _fill_stratum(
    stratum: tuple[str, ...],
    members: list[_Item],
    people: tuple[str, ...],
    overlap: int,
    rng: _Keys,
    total: dict[str, int],
    pairs: Counter[tuple[str, str]],
    chosen: dict[str, list[str]],
) -> None:
    """Give every item of one stratum ``overlap`` graders, splitting the slots evenly.

    Each grader's quota is ⌊n·K/G⌋ or ⌈n·K/G⌉ (the extra slots go to the graders with
    the least work so far). Items are then filled one by one: a grader whose remaining
    quota equals the number of remaining items must be picked (otherwise the quota
    could not be met); the other places go to graders still owed slots, preferring
    those who have graded least often with the ones already picked. This always
    succeeds: the largest quota never exceeds the number of items left.
    """
    n_g = len(people)
    slots = len(members) * overlap
    base, extra = divmod(slots, n_g)
    quota = dict.fromkeys(people, base)
    by_need = sorted(people, key=lambda g: (total[g], rng("extra", *stratum, g)))
    for g in by_need[:extra]:
        quota[g] += 1
    ordered = sorted(members, key=lambda it: rng("item", it.key))
    for left, it in zip(range(len(ordered), 0, -1), ordered, strict=True):
        picked = [g for g in people if quota[g] == left]
        while len(picked) < overlap:
            candidates = [g for g in people if quota[g] > 0 and g not in picked]
            best = min(
                candidates,
                key=lambda g: (
                    sum(pairs[_pair(g, p)] for p in picked),
                    -quota[g],
                    total[g],
                    rng("pick", it.key, g),
                ),
            )
            picked.append(best)
        for g in picked:
            quota[g] -= 1
            total[g] += it.weight
        for i, a in enumerate(picked):
            for b in picked[i + 1 :]:
                pairs[_pair(a, b)] += 1
        chosen[it.key] = sorted(picked)
    assert all(q == 0 for q in quota.values()), "quota left over"


def _pair(a: str, b: str) -> tuple[str, str]:
    return (a, b) if a < b else (b, a)


def _queue_order(block: list[_Item], grader: str, rng: _Keys) -> list[ResponseUnit]:
    """Tasks in a per-grader order, the responses of a task together (per-grader order)."""
    by_task: dict[str, list[ResponseUnit]] = defaultdict(list)
    for it in block:
        by_task[it.task_id].extend(it.members)
    out: list[ResponseUnit] = []
    for task in sorted(by_task, key=lambda t: rng("task-order", grader, t)):
        out.extend(sorted(by_task[task], key=lambda r: rng("resp-order", grader, r.response_id)))
    return out
