"""What the rubric panel shows for one response: verdicts, auto results, the live score.

Qt-free: the Qt model (:mod:`gradercal.ui.qt_rubric_model`) only adapts this state, and
its logic is tested without a window. Scoring goes through :mod:`gradercal.analysis.scoring`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gradercal.db.grading import GradingItem, JudgmentValue, QueueItem
from gradercal.model import AutoRule, Criterion, verdict_word
from gradercal.rubric import criterion_credit, evaluate_auto, lookup, passes
from gradercal.ui.inline_html import to_plain


def shorten(text: str, width: int) -> str:
    """``text`` on one line, cut at a word to at most ``width`` characters with "…"."""
    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat
    cut = flat[: max(width - 1, 1)]
    if " " in cut[width // 2 :]:
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip(" ,;:.") + "…"


def top_level(criterion: Criterion) -> int:
    return max(criterion.levels, 2) - 1


def verdict_value(criterion: Criterion, base: JudgmentValue, verdict: str | None) -> JudgmentValue:
    """``base`` with the verdict set: ``met``, ``partial``, ``not_met`` or None (cleared).

    Two-level criteria store ``met`` only; criteria with more levels store ``level``
    too (partial = the middle level, 1 on a 3-level scale).
    """
    top = top_level(criterion)
    met: bool | None
    level: int | None
    if verdict is None:
        met, level = None, None
    elif verdict == "met":
        met, level = True, (top if criterion.levels > 2 else None)
    elif verdict == "not_met":
        met, level = False, (0 if criterion.levels > 2 else None)
    elif verdict == "partial":
        if criterion.levels <= 2:
            raise ValueError("this criterion has no partial level")
        met, level = False, top // 2 if top > 1 else 1
    else:
        raise ValueError(f"unknown verdict {verdict!r}")
    return JudgmentValue(met, level, base.rationale, base.unclear, base.unclear_note)


def verdict_of(criterion: Criterion, value: JudgmentValue) -> str | None:
    """``met``, ``partial``, ``not_met`` or None for an unanswered criterion."""
    top = top_level(criterion)
    if value.level is not None:
        k = min(max(value.level, 0), top)
        return "met" if k == top else ("not_met" if k == 0 else "partial")
    if value.met is None:
        return None
    return "met" if value.met else "not_met"


#: How a queue item's state is written, in the header and in the queue dock.
STATUS_WORDS = {
    "pending": "not started",
    "in_progress": "in progress",
    "submitted": "submitted",
    "skipped": "skipped",
    "stale": "changed elsewhere",
}


def shown_status(item: QueueItem, stale: bool = False) -> str:
    """The state a grader sees: ``stale`` when a save found the verdicts changed elsewhere
    (until the item is reloaded), ``in_progress`` once something is answered, else the
    stored status."""
    if stale:
        return "stale"
    if item.status == "pending" and item.n_answered:
        return "in_progress"
    return item.status


def queue_matches(
    items: Sequence[QueueItem], query: str, texts: Mapping[str, str] | None = None
) -> list[int]:
    """The positions (0-based, in queue order) of the items the queue search finds.

    A number alone is a position in the queue ("12"). Otherwise every word must match:
    a single letter is a response ("T07 B"), a longer word is looked for in the task id,
    the response code, the status, and the task's prompt and criteria (``texts``, by task
    id), ignoring case.
    """
    q = query.strip()
    if not q:
        return list(range(len(items)))
    if q.isdigit():
        n = int(q)
        return [n - 1] if 1 <= n <= len(items) else []
    terms = q.lower().split()
    found = []
    for i, item in enumerate(items):
        letter = item.code.rsplit(" ", 1)[-1].lower()
        own = f"{item.task_id} {item.code} {STATUS_WORDS.get(item.status, item.status)}".lower()
        text = (texts or {}).get(item.task_id, "").lower()
        if all(t == letter if len(t) == 1 else (t in own or t in text) for t in terms):
            found.append(i)
    return found


def read_only_reason(item: QueueItem, reopen_keys: str = "Ctrl+O") -> str | None:
    """Why the grader cannot change ``item`` now, in words; None when it is open to changes.

    A submitted or skipped response is done: its verdicts, rationales and notes stay as
    they were until the grader reopens it (which the store records), so nothing changes
    silently under a "submitted" label.
    """
    if item.status == "submitted":
        return f"Submitted, so read-only: reopen it ({reopen_keys}) to change a verdict."
    if item.status == "skipped":
        return f"Skipped, so read-only: reopen it ({reopen_keys}) to grade it."
    return None


VERDICT_LABELS = {"met": "Met", "partial": "Partial", "not_met": "Not met", None: "—"}


def _fmt(x: Any) -> str:
    if isinstance(x, float):
        return f"{x:.6g}"
    return repr(x) if isinstance(x, str) else str(x)


def describe_auto(rule: AutoRule, answer: Any) -> tuple[bool, str]:
    """The auto criterion's verdict and how it was computed, in words."""
    met = evaluate_auto(rule, answer)
    found, value = lookup(answer, str(rule.key))
    got = _fmt(value) if found else "missing"
    target = _fmt(rule.target)
    tol = []
    if rule.abs_tol is not None and not math.isnan(rule.abs_tol):
        tol.append(f"± {_fmt(rule.abs_tol)}")
    if rule.rel_tol is not None and not math.isnan(rule.rel_tol):
        tol.append(f"± {rule.rel_tol * 100:g}%")
    where = f"answer {rule.key} = {got}"
    want = f"target {target}" + (f" {' or '.join(tol)}" if tol else " (exact)")
    return met, f"{where}; {want} → {verdict_word(met)}"


@dataclass
class RubricRow:
    criterion: Criterion
    value: JudgmentValue
    auto_met: bool | None = None
    auto_note: str = ""
    #: Its number in the rubric (1, 2, …): how the grader and every message name it.
    number: int = 0
    #: The task version the grader's verdict was given under, when the criterion has
    #: been revised since in a way that can change it (None: the verdict is current).
    #: Such a verdict is shown but counts as unanswered until given again.
    given_under: int | None = None

    @property
    def is_auto(self) -> bool:
        return self.criterion.auto is not None

    @property
    def changed(self) -> bool:
        """The criterion changed since the grader's verdict: it must be confirmed or
        changed (automatic criteria are computed, never confirmed)."""
        return self.given_under is not None and not self.is_auto

    @property
    def verdict(self) -> str | None:
        if self.auto_met is not None:
            return "met" if self.auto_met else "not_met"
        return verdict_of(self.criterion, self.value)

    @property
    def answered(self) -> bool:
        return self.is_auto or (self.value.answered and not self.changed)


@dataclass(frozen=True)
class ScoreSummary:
    earned: float
    possible: float  # sum of positive points
    answered: int  # judgment criteria answered
    total: int  # judgment criteria
    threshold: float

    @property
    def complete(self) -> bool:
        return self.answered == self.total

    @property
    def score(self) -> float:
        """The rubric score (NaN while incomplete or with no positive points)."""
        if not self.complete or self.possible <= 0:
            return math.nan
        return min(max(self.earned / self.possible, 0.0), 1.0)

    @property
    def provisional(self) -> float:
        """Score counting unanswered criteria as earning nothing (for a live display)."""
        if self.possible <= 0:
            return math.nan
        return min(max(self.earned / self.possible, 0.0), 1.0)

    @property
    def passed(self) -> bool | None:
        s = self.score
        return None if math.isnan(s) else passes(s, self.threshold)

    def text(self) -> str:
        if self.possible <= 0:
            return "No positive points: score undefined"
        if self.complete:
            verdict = "PASS" if self.passed else "FAIL"
            return (
                f"Score {self.score:.2f} · {verdict} (pass ≥ {self.threshold:.2f}) · "
                f"{self.earned:g} / {self.possible:g} points"
            )
        return (
            f"So far {self.provisional:.2f} · {self.answered} / {self.total} answered · "
            f"pass ≥ {self.threshold:.2f}"
        )


class RubricState:
    """The rubric of one queue item with the grader's current values."""

    def __init__(self, item: GradingItem) -> None:
        self.item = item
        self.threshold = item.pass_threshold
        self.rows: list[RubricRow] = []
        for k, c in enumerate(item.task.criteria, start=1):
            row = RubricRow(
                c,
                item.judgments.get(c.id, JudgmentValue()),
                number=k,
                given_under=item.stale.get(c.id),
            )
            if c.auto is not None:
                row.auto_met, row.auto_note = describe_auto(c.auto, item.answer)
            self.rows.append(row)
        self._index = {r.criterion.id: i for i, r in enumerate(self.rows)}

    def __len__(self) -> int:
        return len(self.rows)

    def index_of(self, criterion_id: str) -> int:
        return self._index[criterion_id]

    def row(self, criterion_id: str) -> RubricRow:
        return self.rows[self._index[criterion_id]]

    def value(self, criterion_id: str) -> JudgmentValue:
        return self.row(criterion_id).value

    def set_value(self, criterion_id: str, value: JudgmentValue) -> int:
        """Store a value (as saved); returns the row index."""
        i = self._index[criterion_id]
        self.rows[i].value = value
        return i

    def mark_current(self, criterion_id: str) -> int:
        """The grader's verdict on the criterion is now given under its current version
        (saved again); returns the row index."""
        i = self._index[criterion_id]
        self.rows[i].given_under = None
        return i

    def __contains__(self, criterion_id: object) -> bool:
        return criterion_id in self._index

    def mark_revised(self, criterion_ids: Sequence[str], since: int) -> list[int]:
        """Mark criteria revised since task version ``since`` (the version a window
        showed when a save was refused) that hold no verdict of the grader's to be
        stale, so that they show what changed too; returns the rows marked."""
        out = []
        for cid in criterion_ids:
            i = self._index.get(cid)
            if i is None:
                continue
            r = self.rows[i]
            if r.given_under is None and not r.is_auto and not r.value.answered:
                r.given_under = since
                out.append(i)
        return out

    def changed_rows(self) -> list[int]:
        """The rows whose criterion changed since the grader's verdict, in rubric order."""
        return [i for i, r in enumerate(self.rows) if r.changed]

    def number(self, criterion_id: str) -> int:
        """The criterion's number as the rubric shows it (1, 2, …)."""
        return self._index[criterion_id] + 1

    def label(self, criterion_id: str, width: int = 48) -> str:
        """How messages name a criterion: its number and text as the rubric shows them,
        the text cut to about ``width`` characters ("2. Notes the missing viability dye")
        — never its internal id. An id not in this rubric is given as it is."""
        if criterion_id not in self._index:
            return criterion_id
        return (
            f"{self.number(criterion_id)}. "
            f"{shorten(to_plain(self.row(criterion_id).criterion.text), width)}"
        )

    def labels(self, criterion_ids: list[str], width: int = 48) -> str:
        """Several labels, in rubric order, separated by semicolons."""
        ordered = sorted(criterion_ids, key=lambda c: self._index.get(c, len(self._index)))
        return "; ".join(self.label(c, width) for c in ordered)

    def missing(self) -> list[str]:
        return [r.criterion.id for r in self.rows if not r.answered]

    def next_unanswered(self, after: int) -> int | None:
        """The first unanswered judgment criterion after row ``after`` (wrapping), else None."""
        n = len(self.rows)
        for k in range(1, n + 1):
            i = (after + k) % n
            if not self.rows[i].answered:
                return i
        return None

    def score(self) -> ScoreSummary:
        earned = 0.0
        possible = float(sum(r.criterion.points for r in self.rows if r.criterion.points > 0))
        answered = total = 0
        for r in self.rows:
            c = r.criterion
            if r.is_auto:
                earned += c.points if r.auto_met else 0
                continue
            total += 1
            if r.changed:  # a verdict given before the criterion changed: not counted
                continue
            credit = criterion_credit(c.points, c.levels, met=r.value.met, level=r.value.level)
            if credit is not None:
                answered += 1
                earned += credit
        return ScoreSummary(earned, possible, answered, total, self.threshold)


#: Seconds without a key press, click or wheel turn after which the clock stops (the
#: active time that ``gradercal progress`` and the pace figures are built on).
IDLE_LIMIT_S = 60.0


class TimeTracker:
    """Time on task: wall time while the grader is active, idle stretches left out.

    Time counts from the last :meth:`take` until now, but not beyond ``idle_limit``
    seconds after the last input (:meth:`touch`), so a machine left alone over lunch
    does not add an hour to a response, nor a minute's reading pause more than a minute.
    """

    def __init__(self, idle_limit: float = IDLE_LIMIT_S, clock: Callable[[], float] | None = None):
        import time

        self.idle_limit = idle_limit
        self.clock = clock or time.monotonic
        self.reset()

    def reset(self) -> None:
        now = self.clock()
        self._since = now
        self._last_input = now
        self._banked = 0.0

    def touch(self) -> None:
        now = self.clock()
        if now - self._last_input > self.idle_limit:  # back from a break: close that stretch
            self._banked += max(0.0, self._last_input + self.idle_limit - self._since)
            self._since = now
        self._last_input = now

    def take(self) -> float:
        """Active seconds since the last call (or reset)."""
        now = self.clock()
        active_until = min(now, self._last_input + self.idle_limit)
        total = self._banked + max(0.0, active_until - self._since)
        self._since, self._banked = now, 0.0
        return total
