"""What a revision of a task or its rubric means for the verdicts already given (issue #16).

Pure rules, no SQL and no Qt: the database layer stores versions and asks here what a
change does; the grading view asks here how to show it.

A revision compares the stored version of a task with a new one and sorts every change by
what it can do to a verdict given under the old version:

* **verdict** — a grader could now decide otherwise: a criterion's text, its scale
  (``levels``) or its automatic rule changed, or the task itself (prompt, artifacts,
  answer format), which every criterion is judged against. The verdicts given before are
  *stale*: kept, never deleted, but their items go back to the graders' queues (and the
  judge's ``--scope stale``) and the grading view shows what changed.
* **score** — only the points changed: every verdict stands, scores are recomputed with
  the new weights, nobody grades again.
* **note** — nothing a verdict depends on (tags, order, workflow, domain, metadata,
  an artifact's title): recorded in the history, nothing else.

A criterion added by a revision needs verdicts (it counts as a verdict change for the
queues); a removed one keeps its verdicts in the history but leaves the rubric.

Staleness is computed, not stored: a verdict given under criterion version ``g`` is stale
when the criterion's last verdict-changing version ``v`` is newer (``g < v``). A points-only
revision raises the version but not ``v``, so nothing goes stale; saving a verdict again
under the current version clears it.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from gradercal.model import Artifact, Criterion, Task

__all__ = [
    "ChangeKind",
    "CriterionChange",
    "FieldChange",
    "TaskRevision",
    "diff_criterion",
    "diff_task",
    "is_stale",
    "word_diff",
]


class ChangeKind(IntEnum):
    """How far a change reaches, weakest first (so ``max`` gives a revision's kind)."""

    NOTE = 1
    SCORE = 2
    VERDICT = 3

    @property
    def label(self) -> str:
        return self.name.lower()


@dataclass(frozen=True)
class FieldChange:
    """One field's value before and after."""

    field: str
    before: Any
    after: Any
    kind: ChangeKind


@dataclass(frozen=True)
class CriterionChange:
    """What happened to one criterion: changed fields, or added / removed whole."""

    criterion_id: str
    fields: tuple[FieldChange, ...] = ()
    added: bool = False
    removed: bool = False

    @property
    def kind(self) -> ChangeKind:
        if self.added or self.removed:
            return ChangeKind.VERDICT
        return max(f.kind for f in self.fields)


@dataclass(frozen=True)
class TaskRevision:
    """Every difference between two versions of a task, sorted by what it does."""

    task_id: str
    task_fields: tuple[FieldChange, ...]
    criteria: tuple[CriterionChange, ...]

    @property
    def changed(self) -> bool:
        return bool(self.task_fields or self.criteria)

    @property
    def kind(self) -> ChangeKind | None:
        """The strongest change, or None when the versions are the same."""
        kinds = [f.kind for f in self.task_fields] + [c.kind for c in self.criteria]
        return max(kinds) if kinds else None

    @property
    def task_verdict_change(self) -> bool:
        """The task itself changed in a way every criterion is judged against."""
        return any(f.kind is ChangeKind.VERDICT for f in self.task_fields)

    def stale_criteria(self, criterion_ids: Iterable[str]) -> set[str]:
        """Of the new version's criteria (``criterion_ids``), those whose verdicts given
        before this revision must be given again."""
        ids = set(criterion_ids)
        if self.task_verdict_change:
            return ids
        return {
            c.criterion_id
            for c in self.criteria
            if not c.removed and c.kind is ChangeKind.VERDICT and c.criterion_id in ids
        }

    def rescored_criteria(self) -> set[str]:
        """Criteria whose points changed (scores recomputed, no regrading)."""
        return {c.criterion_id for c in self.criteria for f in c.fields if f.field == "points"}


#: Which field of a criterion changes what (a field not listed here is a note).
_CRITERION_KINDS = {
    "text": ChangeKind.VERDICT,
    "levels": ChangeKind.VERDICT,
    "auto": ChangeKind.VERDICT,
    "points": ChangeKind.SCORE,
    "tags": ChangeKind.NOTE,
    "position": ChangeKind.NOTE,
}
#: Which field of a task changes what.
_TASK_KINDS = {
    "prompt": ChangeKind.VERDICT,
    "answer_format": ChangeKind.VERDICT,
    "artifacts": ChangeKind.VERDICT,
    "artifact_titles": ChangeKind.NOTE,
    "workflow": ChangeKind.NOTE,
    "domain": ChangeKind.NOTE,
    "tags": ChangeKind.NOTE,
    "metadata": ChangeKind.NOTE,
}


def _auto(c: Criterion) -> Any:
    if c.auto is None:
        return None
    return {
        "key": c.auto.key,
        "target": c.auto.target,
        "abs_tol": c.auto.abs_tol,
        "rel_tol": c.auto.rel_tol,
    }


def diff_criterion(old: Criterion, new: Criterion) -> CriterionChange | None:
    """The changes from ``old`` to ``new`` (the same criterion id); None when equal."""
    pairs = {
        "text": (old.text, new.text),
        "levels": (old.levels, new.levels),
        "auto": (_auto(old), _auto(new)),
        "points": (old.points, new.points),
        "tags": (list(old.tags), list(new.tags)),
        "position": (old.position, new.position),
    }
    fields = tuple(
        FieldChange(name, before, after, _CRITERION_KINDS[name])
        for name, (before, after) in pairs.items()
        if before != after
    )
    return CriterionChange(old.id, fields) if fields else None


def _content(a: Artifact) -> tuple[Any, ...]:
    """What a grader reads of an artifact: its bytes (by hash) or its address."""
    return (a.kind.value, a.sha256, a.url, a.path if a.sha256 is None else None)


def diff_task(old: Task, new: Task) -> TaskRevision:
    """Every difference between two versions of a task (``old.id == new.id``).

    Criteria are matched by id; artifacts by content in order (a retitled artifact is a
    note, a replaced file or address a verdict change).
    """
    if old.id != new.id:
        raise ValueError(f"different tasks: {old.id!r} and {new.id!r}")
    pairs: dict[str, tuple[Any, Any]] = {
        "prompt": (old.prompt, new.prompt),
        "answer_format": (old.answer_format, new.answer_format),
        "artifacts": (
            [_content(a) for a in old.artifacts],
            [_content(a) for a in new.artifacts],
        ),
        "artifact_titles": ([a.title for a in old.artifacts], [a.title for a in new.artifacts]),
        "workflow": (old.workflow, new.workflow),
        "domain": (old.domain, new.domain),
        "tags": (list(old.tags), list(new.tags)),
        "metadata": (old.metadata, new.metadata),
    }
    task_fields = tuple(
        FieldChange(name, before, after, _TASK_KINDS[name])
        for name, (before, after) in pairs.items()
        if before != after
    )
    before = {c.id: c for c in old.criteria}
    after = {c.id: c for c in new.criteria}
    changes: list[CriterionChange] = []
    for c in new.criteria:  # in the new rubric's order, then the removed ones
        if c.id not in before:
            changes.append(CriterionChange(c.id, added=True))
            continue
        change = diff_criterion(before[c.id], c)
        if change is not None:
            changes.append(change)
    changes += [CriterionChange(c.id, removed=True) for c in old.criteria if c.id not in after]
    return TaskRevision(old.id, task_fields, tuple(changes))


def is_stale(given_under: int, verdict_version: int) -> bool:
    """Whether a verdict given under criterion version ``given_under`` must be given
    again: the criterion has changed in a verdict-changing way since (``verdict_version``
    is the last such version)."""
    return given_under < verdict_version


_WORDS = re.compile(r"\s+|[^\s]+")


def word_diff(before: str, after: str) -> list[tuple[str, str]]:
    """``before`` → ``after`` as runs of ``("same" | "removed" | "added", text)``, word by
    word (whitespace kept), for showing a grader what changed in a criterion or prompt.
    Joining the "same" and "removed" runs gives ``before``; "same" and "added", ``after``.
    """
    a = _WORDS.findall(before)
    b = _WORDS.findall(after)
    out: list[tuple[str, str]] = []

    def emit(kind: str, words: list[str]) -> None:
        if not words:
            return
        text = "".join(words)
        if out and out[-1][0] == kind:
            out[-1] = (kind, out[-1][1] + text)
        else:
            out.append((kind, text))

    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            emit("same", a[i1:i2])
            continue
        emit("removed", a[i1:i2])
        emit("added", b[j1:j2])
    return out
