"""What every part of :class:`~gradercal.db.grading.GradingStore` shares.

:class:`StoreBase` holds the database, the repository and the per-store caches (tasks as
domain objects, the team identity, whether adjudications may be read), and answers the
questions every part asks: benchmarks, graders (by name), a task by its primary key.
"""

from __future__ import annotations

from typing import cast

from sqlalchemy import Table, bindparam, insert, select, text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from gradercal.db import models as m
from gradercal.db.grading.values import GraderInfo
from gradercal.db.repo import Repository, task_from_row
from gradercal.db.session import Database
from gradercal.errors import ConflictError, NotFoundError, Problem, ValidationError
from gradercal.model import GraderKind, Task

#: Tasks kept as domain objects by one store (an import never changes a stored task).
TASK_CACHE_SIZE = 256


_ASSIGNMENT_TABLE = cast(Table, m.Assignment.__table__)


#: Locks one assignment row (bind: aid) so writers of one queue item take turns.
LOCK_ASSIGNMENT = (
    select(_ASSIGNMENT_TABLE.c.id)
    .where(_ASSIGNMENT_TABLE.c.id == bindparam("aid"))
    .with_for_update()
)


class StoreBase:
    """The grading store's state and shared look-ups (the parts add the reads and writes)."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.repo = Repository(db)
        # Writers take SQLite's write lock when they begin (see Database.write).
        self._write_engine = db.engine.execution_options(sqlite_begin="IMMEDIATE")
        self._tasks: dict[tuple[int, int], Task] = {}
        self._sees_adjudications: bool | None = None
        self._team_user: tuple[str | None] | None = None
        #: benchmark name → (id, grading instructions); imports do not change them often
        self._instructions: dict[str, tuple[int, str | None]] = {}

    def team_user(self) -> str | None:
        """The login role this session grades as in team mode (PostgreSQL roles, see
        :mod:`gradercal.db.team`); None outside team mode, where anyone may be chosen."""
        if self._team_user is None:
            from gradercal.db.team import identity

            who = identity(self.db)
            self._team_user = (None if who is None else who.user,)
        return self._team_user[0]

    def sees_adjudications(self) -> bool:
        """Whether this session may read adjudications. Not so for a grader in team mode
        (:mod:`gradercal.db.team`): their views then carry adjudication version 0 and
        their queue is the one the coordinator assigned."""
        if self._sees_adjudications is None:
            if self.db.is_sqlite:
                self._sees_adjudications = True
            else:
                with self.db.engine.connect() as conn:
                    self._sees_adjudications = bool(
                        conn.execute(
                            text("SELECT has_table_privilege('adjudication', 'SELECT')")
                        ).scalar()
                    )
        return self._sees_adjudications

    def benchmark_names(self) -> list[str]:
        with self.db.read() as s:
            return list(s.scalars(select(m.Benchmark.name).order_by(m.Benchmark.name)))

    def benchmark_name(self, benchmark: str | None = None) -> str:
        """The benchmark's name (the only one when ``benchmark`` is None)."""
        return self.repo.benchmark(benchmark).name

    def graders(self) -> list[GraderInfo]:
        """Human graders, by name. Judges are never listed here."""
        with self.db.read() as s:
            rows = s.execute(
                select(m.Grader.id, m.Grader.name, m.Grader.kind)
                .where(m.Grader.kind == GraderKind.HUMAN.value)
                .order_by(m.Grader.name)
            ).all()
        return [GraderInfo(gid, name, kind) for gid, name, kind in rows]

    def grader(self, name: str) -> GraderInfo:
        with self.db.read() as s:
            row = s.execute(
                select(m.Grader.id, m.Grader.name, m.Grader.kind).where(m.Grader.name == name)
            ).first()
        if row is None or row.kind != GraderKind.HUMAN.value:
            raise NotFoundError(f"no human grader named {name!r}")
        return GraderInfo(row.id, row.name, row.kind)

    def create_grader(self, name: str) -> GraderInfo:
        """The human grader called ``name``, created when new. A judge's name is refused."""
        clean = " ".join(name.replace("\x00", " ").split())
        if not clean:
            raise ValidationError([Problem("grader", None, "name", "must not be empty")])
        if len(clean) > 200:
            raise ValidationError([Problem("grader", None, "name", "at most 200 characters")])
        for attempt in (1, 2):
            try:
                with self.db.write() as s:
                    row = s.execute(
                        select(m.Grader.id, m.Grader.kind).where(m.Grader.name == clean)
                    ).first()
                    if row is not None:
                        if row.kind != GraderKind.HUMAN.value:
                            raise ConflictError(
                                f"{clean!r} is the name of a {row.kind}; choose another name"
                            )
                        return GraderInfo(row.id, clean, row.kind)
                    gid = s.execute(
                        insert(m.Grader)
                        .values(name=clean, kind=GraderKind.HUMAN.value, parameters={})
                        .returning(m.Grader.id)
                    ).scalar_one()
                    return GraderInfo(gid, clean, GraderKind.HUMAN.value)
            except IntegrityError:  # created by someone else in between
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def _grader_id(self, s: Session, name: str) -> int:
        row = s.execute(select(m.Grader.id, m.Grader.kind).where(m.Grader.name == name)).first()
        if row is None or row.kind != GraderKind.HUMAN.value:
            raise NotFoundError(f"no human grader named {name!r}")
        return int(row.id)

    def _cached_task(self, s: Session, task_pk: int, version: int) -> Task:
        """A task as a domain object, cached by its version (a revision makes a new one)."""
        task = self._tasks.get((task_pk, version))
        if task is None:
            task = self._task(s, task_pk)
            if len(self._tasks) >= TASK_CACHE_SIZE:
                self._tasks.pop(next(iter(self._tasks)))
            self._tasks[(task_pk, version)] = task
        return task

    @staticmethod
    def _task(s: Session, task_pk: int) -> Task:
        t = s.get(m.Task, task_pk)
        if t is None:
            raise NotFoundError(f"no task {task_pk}")
        crits = list(
            s.scalars(
                select(m.Criterion)
                .where(m.Criterion.task_id == task_pk)
                .order_by(m.Criterion.position, m.Criterion.id)
            )
        )
        arts = list(
            s.scalars(
                select(m.Artifact)
                .where(m.Artifact.task_id == task_pk)
                .order_by(m.Artifact.position, m.Artifact.id)
            )
        )
        return task_from_row(t, crits, arts)

    def read_blob(self, sha256: str) -> bytes:
        """An artifact's bytes (safe to call from a worker thread)."""
        return self.repo.read_blob(sha256)
