"""Saving a grader's verdict on one criterion, the grader's hot path, and its history.

:class:`JudgmentWrites` is the part of :class:`~gradercal.db.grading.GradingStore` that
writes judgments: prepared Core statements on one connection, the optimistic version
check, the revision row in the same transaction, the clarification a flag asks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from sqlalchemy import Table, bindparam, case, insert, literal, select, update
from sqlalchemy.exc import IntegrityError

from gradercal.db import models as m
from gradercal.db.clarifications import open_from_flag
from gradercal.db.grading.base import LOCK_ASSIGNMENT, StoreBase
from gradercal.db.grading.values import (
    JudgmentValue,
    JudgmentVersion,
    RevisedSinceError,
    SavedJudgment,
    StaleJudgmentError,
)
from gradercal.db.snapshots import judgment_snapshot
from gradercal.db.versions import verdict_write
from gradercal.errors import NotFoundError, Problem, ValidationError
from gradercal.model import CriterionKind
from gradercal.ops.assignment_status import status_after_save

_ASSIGNMENT_TABLE = cast(Table, m.Assignment.__table__)
_JUDGMENT_COLUMNS = ("met", "level", "rationale", "unclear", "unclear_note")


#: Everything :meth:`GradingStore.save_judgment` needs, in one query: the assignment,
#: the criterion (by external id, within the response's task) and the current judgment.
_SAVE_CONTEXT = (
    select(
        m.Assignment.grader_id,
        m.Assignment.response_id,
        m.Assignment.status,
        m.Response.benchmark_id,
        m.Response.task_id,
        m.Grader.name,
        m.Criterion.id.label("criterion_pk"),
        m.Criterion.kind,
        m.Criterion.levels,
        m.Criterion.verdict_version,
        m.Task.version.label("current_version"),
        m.Judgment.task_version,
        m.Judgment.id,
        m.Judgment.revision,
        m.Judgment.source,
        m.Judgment.updated_at,
        m.Judgment.confidence,
        *[getattr(m.Judgment, c) for c in _JUDGMENT_COLUMNS],
    )
    .join(m.Grader, m.Grader.id == m.Assignment.grader_id)
    .join(m.Response, m.Response.id == m.Assignment.response_id)
    .join(m.Task, m.Task.id == m.Response.task_id)
    .join(
        m.Criterion,
        (m.Criterion.task_id == m.Response.task_id) & (m.Criterion.external_id == bindparam("cid")),
    )
    .outerjoin(
        m.Judgment,
        (m.Judgment.grader_id == m.Assignment.grader_id)
        & (m.Judgment.response_id == m.Assignment.response_id)
        & (m.Judgment.criterion_id == m.Criterion.id),
    )
    .where(m.Assignment.id == bindparam("aid"))
)


_JUDGMENT_TABLE = cast(Table, m.Judgment.__table__)


_INSERT_JUDGMENT = insert(_JUDGMENT_TABLE).returning(_JUDGMENT_TABLE.c.id)


_UPDATE_JUDGMENT = (
    update(_JUDGMENT_TABLE)
    .where(_JUDGMENT_TABLE.c.id == bindparam("jid"))
    .values(
        {
            _JUDGMENT_TABLE.c[c]: bindparam(c)
            for c in (
                *_JUDGMENT_COLUMNS,
                "confidence",
                "revision",
                "source",
                "updated_at",
                "task_version",
            )
        }
    )
)


_INSERT_REVISION = insert(cast(Table, m.Revision.__table__))


_ADJUDICATION_REVISION = select(m.Adjudication.revision).where(
    m.Adjudication.response_id == bindparam("rid"),
    m.Adjudication.criterion_id == bindparam("cpk"),
)


_TOUCH_ASSIGNMENT = (
    update(_ASSIGNMENT_TABLE)
    .where(_ASSIGNMENT_TABLE.c.id == bindparam("aid"))
    .values(
        {
            _ASSIGNMENT_TABLE.c.status: bindparam("status"),
            _ASSIGNMENT_TABLE.c.updated_at: bindparam("updated_at"),
            _ASSIGNMENT_TABLE.c.submitted_at: case(
                (bindparam("keep"), _ASSIGNMENT_TABLE.c.submitted_at), else_=literal(None)
            ),
        }
    )
)


def _check_version(
    conn: Any,
    ctx: Any,
    assignment_id: int,
    criterion_id: str,
    values: Mapping[str, Any],
    expected: JudgmentVersion,
    *,
    adjudications: bool = True,
) -> None:
    """Raise :class:`StaleJudgmentError` when ``expected`` is older than the locked row."""
    if ctx.id is not None and all(getattr(ctx, c) == values[c] for c in _JUDGMENT_COLUMNS):
        return  # the database already holds this value: nothing to overwrite
    adjudication = (
        conn.execute(
            _ADJUDICATION_REVISION, {"rid": ctx.response_id, "cpk": ctx.criterion_pk}
        ).scalar()
        if adjudications
        else 0
    )
    current = JudgmentVersion(0 if ctx.id is None else int(ctx.revision), int(adjudication or 0))
    if current == expected:
        return
    value = (
        None
        if ctx.id is None
        else JudgmentValue(ctx.met, ctx.level, ctx.rationale, bool(ctx.unclear), ctx.unclear_note)
    )
    raise StaleJudgmentError(
        assignment_id,
        criterion_id,
        expected,
        current,
        value,
        None if ctx.id is None else str(ctx.source),
    )


def _checked(value: JudgmentValue, criterion_id: str, kind: str, levels: int) -> JudgmentValue:
    if kind != CriterionKind.JUDGMENT.value:
        raise ValidationError(
            [Problem("rubric", None, criterion_id, "is graded automatically from the answer")]
        )
    top = max(levels, 2) - 1
    if value.level is not None:
        if not 0 <= value.level <= top:
            raise ValidationError(
                [Problem("rubric", None, criterion_id, f"level must be 0…{top}, not {value.level}")]
            )
        met = value.level == top
        if value.met is not None and value.met != met:
            raise ValidationError(
                [Problem("rubric", None, criterion_id, f"met disagrees with level {value.level}")]
            )
        level: int | None = value.level if levels > 2 else None
        return JudgmentValue(met, level, value.rationale, value.unclear, value.unclear_note)
    if value.met is not None and levels > 2:
        return JudgmentValue(
            value.met, top if value.met else 0, value.rationale, value.unclear, value.unclear_note
        )
    return value


class JudgmentWrites(StoreBase):
    """Writes one judgment per call, each with its revision row (part of ``GradingStore``)."""

    def save_judgment(
        self,
        assignment_id: int,
        criterion_id: str,
        value: JudgmentValue,
        *,
        expected: JudgmentVersion | None = None,
        seen_version: int | None = None,
    ) -> SavedJudgment:
        """Store the grader's verdict on one criterion now (one committed transaction).

        A changed value first copies the old one into ``revision`` and increments the
        judgment's ``revision``; an unchanged value writes nothing — except that the
        same answered value given again on a stale verdict confirms it (written like a
        change, under the current version: :func:`gradercal.db.versions.verdict_write`).
        The assignment moves from pending to in progress, and a submitted one back to in
        progress when a verdict is cleared.

        ``seen_version`` is the task version the grader's window shows
        (:attr:`GradingItem.task_version`). When the criterion was revised since in a
        way that can change a verdict (its ``verdict_version`` is newer), the verdict
        was given under a wording the grader did not see: nothing is written and
        :class:`RevisedSinceError` says so. Checked under the row lock, so a revision
        committed between the load and the save cannot slip through. Without it (None)
        the verdict is taken as given under the current version.

        With ``expected`` (the version the view loaded, :attr:`GradingItem.versions`) the
        write is optimistic: when the judgment's revision or the criterion's adjudication
        changed in between (another window, a packet merge, a coordinator), nothing is
        written and :class:`StaleJudgmentError` says so — unless the database already
        holds exactly ``value``. The check runs under the row lock, so it cannot race.

        Raises:
            NotFoundError: unknown assignment, or a criterion not in the response's task.
            ValidationError: an auto criterion, or a level outside the criterion's scale.
            StaleJudgmentError: ``expected`` is older than the database.
            RevisedSinceError: the criterion was revised since ``seen_version``.
        """
        for attempt in (1, 2):
            try:
                return self._save_judgment(
                    assignment_id, criterion_id, value.normalized(), expected, seen_version
                )
            except IntegrityError:  # another client inserted the same row in between
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def _save_judgment(
        self,
        assignment_id: int,
        criterion_id: str,
        value: JudgmentValue,
        expected: JudgmentVersion | None = None,
        seen_version: int | None = None,
    ) -> SavedJudgment:
        # The grader's hot path (one call per key press): prepared Core statements on one
        # connection, no ORM unit of work, so the commit stays within a few milliseconds.
        with self._write_engine.begin() as conn:
            if not self.db.is_sqlite:
                # Serialize writers of one queue item before reading the current value (on
                # SQLite, BEGIN IMMEDIATE already did), so that two windows saving the same
                # judgment can never both write revision r+1 (a lost update).
                conn.execute(LOCK_ASSIGNMENT, {"aid": assignment_id})
            ctx = conn.execute(_SAVE_CONTEXT, {"aid": assignment_id, "cid": criterion_id}).first()
            if ctx is None:
                raise NotFoundError(f"no criterion {criterion_id!r} for assignment {assignment_id}")
            value = _checked(value, criterion_id, ctx.kind, int(ctx.levels))
            current_version = int(ctx.current_version)
            if seen_version is not None and seen_version < int(ctx.verdict_version):
                raise RevisedSinceError(
                    assignment_id, (criterion_id,), seen_version, current_version
                )
            now = m.utcnow()
            values = {c: getattr(value, c) for c in _JUDGMENT_COLUMNS}
            if expected is not None:
                _check_version(
                    conn,
                    ctx,
                    assignment_id,
                    criterion_id,
                    values,
                    expected,
                    adjudications=self.sees_adjudications(),
                )
            write = verdict_write(
                stored_version=None if ctx.id is None else int(ctx.task_version),
                same=all(getattr(ctx, c) == values[c] for c in _JUDGMENT_COLUMNS),
                given_under=current_version,
                verdict_version=int(ctx.verdict_version),
                answered=value.answered,
            )
            if write == "new":
                jid = conn.execute(
                    _INSERT_JUDGMENT,
                    {
                        "grader_id": ctx.grader_id,
                        "response_id": ctx.response_id,
                        "criterion_id": ctx.criterion_pk,
                        "confidence": None,
                        "source": "ui",
                        "revision": 1,
                        "created_at": now,
                        "updated_at": now,
                        "task_version": current_version,
                        **values,
                    },
                ).scalar_one()
                revision, changed = 1, True
            elif write == "unchanged":
                jid, revision, changed = int(ctx.id), int(ctx.revision), False
            else:
                # a new value, or the same one confirmed under a revised criterion (no
                # longer stale; the history keeps the version it was first given under)
                # The previous value goes to ``revision`` exactly as Repository keeps it.
                conn.execute(
                    _INSERT_REVISION,
                    {
                        "entity": "judgment",
                        "entity_id": ctx.id,
                        "revision": ctx.revision,
                        "data": judgment_snapshot(ctx),
                        "actor": ctx.name,
                        "source": "ui",
                        "changed_at": now,
                    },
                )
                conn.execute(
                    _UPDATE_JUDGMENT,
                    {
                        "jid": ctx.id,
                        "confidence": None,
                        "revision": int(ctx.revision) + 1,
                        "source": "ui",
                        "updated_at": now,
                        "task_version": current_version,
                        **values,
                    },
                )
                jid, revision, changed = int(ctx.id), int(ctx.revision) + 1, True
            asks = value.unclear and value.unclear_note is not None
            if asks and (
                ctx.id is None or not ctx.unclear or ctx.unclear_note != value.unclear_note
            ):
                # a new or changed note asks the coordinators (gradercal.db.clarifications)
                open_from_flag(
                    conn,
                    benchmark_id=int(ctx.benchmark_id),
                    task_id=int(ctx.task_id),
                    criterion_id=int(ctx.criterion_pk),
                    author=str(ctx.name),
                    text=str(value.unclear_note),
                    now=now,
                    judgment_id=jid,
                )
            if changed:
                status = status_after_save(str(ctx.status), answered=value.answered, changed=True)
                conn.execute(
                    _TOUCH_ASSIGNMENT,
                    {
                        "aid": assignment_id,
                        "status": status,
                        "keep": status == ctx.status,
                        "updated_at": now,
                    },
                )
        return SavedJudgment(jid, value, revision, changed, current_version)

    def judgment_history(self, assignment_id: int, criterion_id: str) -> list[dict[str, Any]]:
        """Every value this grader gave one criterion, oldest first, the current one last."""
        with self.db.read() as s:
            row = s.execute(
                select(m.Judgment)
                .join(
                    m.Assignment,
                    (m.Assignment.grader_id == m.Judgment.grader_id)
                    & (m.Assignment.response_id == m.Judgment.response_id),
                )
                .join(m.Criterion, m.Criterion.id == m.Judgment.criterion_id)
                .where(m.Assignment.id == assignment_id, m.Criterion.external_id == criterion_id)
            ).scalar_one_or_none()
            if row is None:
                return []
            old = s.scalars(
                select(m.Revision)
                .where(m.Revision.entity == "judgment", m.Revision.entity_id == row.id)
                .order_by(m.Revision.revision)
            ).all()
            out = [{"revision": r.revision, **r.data} for r in old]
            current = {c: getattr(row, c) for c in _JUDGMENT_COLUMNS}
            out.append({"revision": row.revision, **current, "source": row.source})
            return out
