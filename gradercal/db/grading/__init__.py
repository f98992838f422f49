"""Persistence for expert grading: graders, queues, judgments as they are entered, task reviews.

The desktop app (``gradercal.ui``) reads and writes everything through
:class:`GradingStore`; nothing above ``gradercal.db`` writes SQL.

Addressing, chosen for blinding:

* graders by **name**, tasks and criteria by their **external ids** (as in the benchmark
  files), as everywhere else in gradercal;
* responses only through their **assignment id** — an opaque handle into one grader's
  queue. A response's external id and model are never handed out by this module
  (external ids often carry the model's name, e.g. ``T01-atlas``). A grader sees a
  response as a per-grader code, ``Response A``, ``Response B``, … within its task.

Queue order: when a grader has no assignment in a benchmark yet, :meth:`GradingStore.ensure_queue`
creates one for every response (a grader with assignments, e.g. from an assignment
design, keeps exactly those). Tasks come in a per-grader random order, and the
responses of a task one after another, again in a per-grader random order; both orders
come from keyed sha256 hashes of (benchmark, grader, seed, id), so they are the same
on every machine and every Python version and never change once made. The codes are
the rank of a response's assignment (by queue position) within its task, so they are
stable too: assignments added later get later letters.

A verdict flagged unclear with a new or changed note also asks a question on the
criterion in the same transaction (:mod:`gradercal.db.clarifications`).

Every write commits at once. Changing a judgment or a task review first copies the
old value into ``revision`` (``source="ui"``, ``actor`` = the grader), so nothing a
grader entered is ever lost. Judges' verdicts and other graders' judgments are never
read by this module.

The store is one class built from parts, each a module of this package: ``values``
(what it hands out), ``base`` (shared state and look-ups), ``judgments`` (saving a
verdict), ``reviews`` (task reviews) and ``store`` (queues, items, assignment state).
"""

from __future__ import annotations

# re-exported: the ``revision.entity`` of the rows GradingStore.reopen keeps
from gradercal.db.clarifications import REOPEN_ENTITY as REOPEN_ENTITY
from gradercal.db.grading.store import GradingStore
from gradercal.db.grading.values import (
    FINAL_STATUSES,
    GraderInfo,
    GradingItem,
    Guidelines,
    JudgmentValue,
    JudgmentVersion,
    QueueItem,
    QueueProgress,
    ReviewItem,
    ReviewTask,
    RevisedSinceError,
    SavedJudgment,
    StaleJudgmentError,
    TaskReviewValue,
    blinding_code,
)
from gradercal.model import LIKERT, REVIEW_DIMENSIONS, ReviewDimension

__all__ = [
    "FINAL_STATUSES",
    "LIKERT",
    "REOPEN_ENTITY",
    "REVIEW_DIMENSIONS",
    "GraderInfo",
    "GradingItem",
    "GradingStore",
    "Guidelines",
    "JudgmentValue",
    "JudgmentVersion",
    "QueueItem",
    "QueueProgress",
    "ReviewDimension",
    "ReviewItem",
    "ReviewTask",
    "RevisedSinceError",
    "SavedJudgment",
    "StaleJudgmentError",
    "TaskReviewValue",
    "blinding_code",
]
