"""The values the grading store hands out and takes: graders, judgments, queue items, reviews.

Frozen dataclasses and the two conflict errors of :class:`~gradercal.db.grading.GradingStore`
(no SQL here); :func:`blinding_code` names a response within its task.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gradercal.errors import ConflictError
from gradercal.model import AssignmentStatus, Task

#: Assignment states in which the grader is done with a response.
FINAL_STATUSES = frozenset({AssignmentStatus.SUBMITTED.value, AssignmentStatus.SKIPPED.value})


def blinding_code(rank: int) -> str:
    """``Response A`` for rank 0, … ``Response Z``, ``Response AA``, ``Response AB`` …"""
    letters = string.ascii_uppercase
    n = rank + 1
    out = ""
    while n > 0:
        n, rem = divmod(n - 1, 26)
        out = letters[rem] + out
    return f"Response {out}"


@dataclass(frozen=True)
class GraderInfo:
    id: int
    name: str
    kind: str


@dataclass(frozen=True)
class JudgmentValue:
    """What a grader entered for one criterion. ``met`` None and ``level`` None = not answered.

    For criteria with more than two levels, ``level`` is the answer (0 = not met,
    ``levels - 1`` = met, in between = partial) and ``met`` is ``level == levels - 1``.
    """

    met: bool | None = None
    level: int | None = None
    rationale: str | None = None
    unclear: bool = False
    unclear_note: str | None = None

    @property
    def answered(self) -> bool:
        return self.met is not None or self.level is not None

    def normalized(self) -> JudgmentValue:
        """Blank texts as None."""
        return JudgmentValue(
            met=self.met,
            level=self.level,
            rationale=text_or_none(self.rationale),
            unclear=bool(self.unclear),
            unclear_note=text_or_none(self.unclear_note),
        )


@dataclass(frozen=True)
class JudgmentVersion:
    """What a view last saw of one judgment: its ``revision`` (0 = none yet) and the
    ``adjudication`` revision of the same criterion of the same response (0 = none).

    Passed back to :meth:`GradingStore.save_judgment` as ``expected`` for an optimistic
    check: a write over a value someone else changed in between is refused.
    """

    revision: int = 0
    adjudication: int = 0


class StaleJudgmentError(ConflictError):
    """The judgment (or its adjudication) changed elsewhere since the view loaded it.

    Nothing was written. ``current`` is the version now in the database and
    ``current_value`` the judgment's value there (None when it has none); save again
    with ``expected=current`` to overwrite on purpose.
    """

    def __init__(
        self,
        assignment_id: int,
        criterion_id: str,
        expected: JudgmentVersion,
        current: JudgmentVersion,
        current_value: JudgmentValue | None,
        changed_by: str | None,
    ) -> None:
        self.assignment_id = assignment_id
        self.criterion_id = criterion_id
        self.expected = expected
        self.current = current
        self.current_value = current_value
        self.changed_by = changed_by
        if current.adjudication != expected.adjudication:
            what = f"criterion {criterion_id} was adjudicated since you opened this response"
        else:
            via = {"packet": "a merged packet", "resolve": "a conflict resolution"}.get(
                changed_by or "", "another window or person"
            )
            what = (
                f"your verdict on criterion {criterion_id} was changed elsewhere ({via}) "
                "since you opened this response"
            )
        super().__init__(f"{what}: reload to see the current value, or overwrite it")

    @property
    def adjudicated(self) -> bool:
        return self.current.adjudication != self.expected.adjudication


class RevisedSinceError(ConflictError):
    """The criteria were revised (a change that can change a verdict) since the task
    version the grader's window shows: a verdict given there would be given under a
    wording the grader did not see, so nothing was written.

    ``criterion_ids`` are the criteria changed since ``seen_version`` (for a save, the
    one saved); ``task_version`` is the task's version now. Reload the item: the
    criteria then show what changed, and a verdict given again is current.
    """

    def __init__(
        self,
        assignment_id: int,
        criterion_ids: tuple[str, ...],
        seen_version: int,
        task_version: int,
        *,
        saving: bool = True,
    ) -> None:
        self.assignment_id = assignment_id
        self.criterion_ids = criterion_ids
        self.seen_version = seen_version
        self.task_version = task_version
        names = ", ".join(criterion_ids)
        what = (
            f"criterion {names} was revised"
            if len(criterion_ids) == 1
            else f"criteria {names} were revised"
        )
        done = "nothing was saved" if saving else "the response was not submitted"
        super().__init__(
            f"{what} since you opened this response (version {seen_version} → "
            f"{task_version}): {done}; read {'it' if len(criterion_ids) == 1 else 'them'} "
            "as it reads now and give your verdict again"
        )

    @property
    def criterion_id(self) -> str:
        """The first criterion changed (the one saved, for a refused save)."""
        return self.criterion_ids[0]


@dataclass(frozen=True)
class SavedJudgment:
    """The stored state of a judgment after :meth:`GradingStore.save_judgment`."""

    judgment_id: int
    value: JudgmentValue
    revision: int
    changed: bool
    task_version: int = 1
    """The task's version now (what the verdict is given under when it was written): a
    window showing an older version should reload the item."""


@dataclass(frozen=True)
class QueueItem:
    """One response in a grader's queue, as the grader may see it (blinded)."""

    assignment_id: int
    position: int
    task_id: str
    code: str
    status: str
    time_spent_s: float
    skip_reason: str | None
    n_artifacts: int
    n_criteria: int
    n_answered: int

    @property
    def done(self) -> bool:
        return self.status in FINAL_STATUSES

    @property
    def label(self) -> str:
        return f"{self.task_id} · {self.code}"


@dataclass(frozen=True)
class QueueProgress:
    total: int
    submitted: int
    skipped: int
    in_progress: int
    pending: int
    time_spent_s: float

    @property
    def done(self) -> int:
        return self.submitted + self.skipped


@dataclass(frozen=True)
class GradingItem:
    """Everything the grading view shows for one queue item — and nothing that unblinds it.

    ``judgments`` holds only this grader's own judgments, by criterion id.
    """

    item: QueueItem
    task: Task
    response_text: str
    answer: Any
    judgments: Mapping[str, JudgmentValue]
    pass_threshold: float
    versions: Mapping[str, JudgmentVersion] = field(default_factory=dict)
    """By criterion id, the version of what was loaded (for ``save_judgment(expected=…)``);
    criteria without a judgment or adjudication are absent (version 0, 0)."""
    task_version: int = 1
    """The version of :attr:`task` (1 until the task is first revised)."""
    stale: Mapping[str, int] = field(default_factory=dict)
    """By criterion id, the task version of this grader's verdicts that a revision made
    stale (given before the criterion last changed in a way that can change a verdict):
    shown with what changed, they count as unanswered until given again."""


@dataclass(frozen=True)
class Guidelines:
    """What the Guidelines panel shows beside one criterion: the benchmark's grading
    instructions and the answered clarifications of the criterion, oldest first."""

    instructions: str | None
    answers: tuple[str, ...]


@dataclass(frozen=True)
class TaskReviewValue:
    """A reviewer's survey answers on one task: ``answers`` maps dimension key → 1…5."""

    answers: Mapping[str, int] = field(default_factory=dict)
    comment: str | None = None
    revision: int = 0

    @property
    def n_answered(self) -> int:
        return len(self.answers)


@dataclass(frozen=True)
class ReviewTask:
    task_id: str
    position: int
    n_answered: int
    has_comment: bool


@dataclass(frozen=True)
class ReviewItem:
    task: Task
    review: TaskReviewValue
    position: int
    total: int


def text_or_none(text: str | None) -> str | None:
    """``text`` without NUL characters (PostgreSQL text cannot hold them), blank → None."""
    if text is None:
        return None
    text = text.replace("\x00", "")
    return text if text.strip() else None
