"""Repository: a benchmark into rows and back — the import (domain objects to rows), the
exports' records, and :meth:`Repository.load_frames` (rows to the analysis frames).

It is not the only module that writes rows or makes frames: each workflow of the team keeps
its own tables in its own module of :mod:`gradercal.db` — grading (``grading``),
adjudication, assignments, judge runs (``judging``, ``judge_batch``), calibrations,
clarifications, rubric revisions, packets — each save in one transaction, and
:mod:`gradercal.db.frames_read` reads the frames that ``load_frames`` returns (others,
such as ``calibrations`` and ``acceptance``, make their own small frames). What this
module holds for all of them: the :class:`Repository` they start from (benchmark lookup,
the catalog), the judgment-with-names join (:func:`judgments_with_names`) and the
snapshots a revision keeps (:func:`judgment_snapshot`, :func:`adjudication_snapshot`).

Everything above ``gradercal.db`` (CLI, UI) calls the methods of these modules and never
writes SQL (of SQLAlchemy the front ends import only its error classes, and the app
preloads the SQLite dialect).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import Select, func, select, tuple_
from sqlalchemy.exc import IntegrityError

from gradercal.db import models as m
from gradercal.db.importing import ImportMixin
from gradercal.db.session import Database
from gradercal.db.snapshots import JUDGMENT_FIELDS, response_task_version, revise_adjudication
from gradercal.db.times import stored_iso as _iso
from gradercal.errors import ConflictError, NotFoundError
from gradercal.model import (
    Adjudication,
    Artifact,
    ArtifactKind,
    AutoRule,
    Benchmark,
    BenchmarkData,
    Criterion,
    Response,
    Task,
    verdict_word,
)

if TYPE_CHECKING:  # pandas and the file formats load on first use (app start-up time)
    import pandas as pd

    from gradercal.db.frames_read import Version
    from gradercal.formats import Catalog
    from gradercal.frames import Frames


def judgments_with_names(*columns: Any, task: bool = False) -> Select[Any]:
    """``SELECT columns FROM judgment``, joined to what names a verdict: its response
    (``Response.external_id``), criterion (``Criterion.external_id``, its kind and version)
    and grader (``Grader.name``, kind, model) — with ``task``, also the response's task
    (``Task.external_id``, position, benchmark).

    The one join behind every list of verdicts by external ids and names (exports, frames,
    stale counts, acceptance, a judge's verdicts); callers add their WHERE and ORDER BY.
    Every join is inner along a non-null foreign key, so it keeps every judgment row.
    """
    q = (
        select(*columns)
        .select_from(m.Judgment)
        .join(m.Response, m.Response.id == m.Judgment.response_id)
        .join(m.Criterion, m.Criterion.id == m.Judgment.criterion_id)
        .join(m.Grader, m.Grader.id == m.Judgment.grader_id)
    )
    return q.join(m.Task, m.Task.id == m.Response.task_id) if task else q


@dataclass(frozen=True)
class BenchmarkInfo:
    id: int
    name: str
    pass_threshold: float
    n_tasks: int
    n_responses: int
    n_judgments: int


class StaleAdjudicationError(ConflictError):
    """Another decision on the unit was stored since this one was made; nothing was
    written. ``current`` is that decision (``revision``, ``adjudicator``, verdict, note);
    decide again on the current case to replace it on purpose."""

    def __init__(
        self, response_id: str, criterion_id: str, expected: int, current: m.Adjudication
    ) -> None:
        self.response_id = response_id
        self.criterion_id = criterion_id
        self.expected = expected
        self.current = {
            "revision": int(current.revision),
            "adjudicator": current.adjudicator,
            "met": current.met,
            "level": current.level,
            "note": current.note,
        }
        verdict = (
            f"level {current.level}"
            if current.level is not None
            else verdict_word(bool(current.met))
        )
        said = f" ({current.note})" if current.note else ""
        super().__init__(
            f"criterion {criterion_id} of response {response_id} was adjudicated by "
            f"{current.adjudicator} since you opened it: {verdict}{said}; reload to see "
            "it, or decide again to replace it"
        )


class Repository(ImportMixin):
    """Reads and writes one gradercal database."""

    def __init__(self, db: Database) -> None:
        self.db = db

    # -- benchmarks ----------------------------------------------------------------
    def benchmarks(self) -> list[BenchmarkInfo]:
        with self.db.read() as s:
            rows = s.execute(select(m.Benchmark).order_by(m.Benchmark.name)).scalars().all()
            out = []
            for b in rows:
                n_tasks = s.scalar(select(func.count()).where(m.Task.benchmark_id == b.id)) or 0
                n_resp = s.scalar(select(func.count()).where(m.Response.benchmark_id == b.id)) or 0
                n_judg = (
                    s.scalar(
                        select(func.count())
                        .select_from(m.Judgment)
                        .join(m.Response, m.Response.id == m.Judgment.response_id)
                        .where(m.Response.benchmark_id == b.id)
                    )
                    or 0
                )
                out.append(BenchmarkInfo(b.id, b.name, b.pass_threshold, n_tasks, n_resp, n_judg))
            return out

    def benchmark(self, name: str | None = None) -> m.Benchmark:
        """The benchmark called ``name``, or the only one when ``name`` is None."""
        with self.db.read() as s:
            if name is not None:
                found = s.scalar(select(m.Benchmark).where(m.Benchmark.name == name))
                if found is None:
                    known = s.scalars(select(m.Benchmark.name)).all()
                    hint = f"; known: {', '.join(known)}" if known else ""
                    raise NotFoundError(f"no benchmark named {name!r}{hint}")
                return found
            rows = s.scalars(select(m.Benchmark).order_by(m.Benchmark.name)).all()
            if not rows:
                raise NotFoundError(
                    f"database {self.db.display} holds no benchmark yet; "
                    "run `gradercal import PATH` first"
                )
            if len(rows) > 1:
                names = ", ".join(repr(b.name) for b in rows)
                raise NotFoundError(f"several benchmarks ({names}): choose one with --benchmark")
            return rows[0]

    def find_benchmark(self, name: str) -> m.Benchmark | None:
        with self.db.read() as s:
            return s.scalar(select(m.Benchmark).where(m.Benchmark.name == name))

    def catalog(self, name: str) -> Catalog:
        """Tasks, criteria, responses and graders already stored for ``name``."""
        from gradercal.formats import Catalog

        cat = Catalog()
        with self.db.read() as s:
            b = s.scalar(select(m.Benchmark).where(m.Benchmark.name == name))
            cat.grader_kinds = dict(s.execute(select(m.Grader.name, m.Grader.kind)).all())
            if b is None:
                return cat
            q = (
                select(
                    m.Task.external_id,
                    m.Criterion.external_id,
                    m.Criterion.kind,
                    m.Criterion.levels,
                )
                .join(m.Criterion, m.Criterion.task_id == m.Task.id)
                .where(m.Task.benchmark_id == b.id)
            )
            for task_ext, crit_ext, kind, levels in s.execute(q):
                cat.criteria.setdefault(task_ext, {})[crit_ext] = (kind, levels)
            q2 = (
                select(m.Response.external_id, m.Task.external_id)
                .join(m.Task, m.Task.id == m.Response.task_id)
                .where(m.Response.benchmark_id == b.id)
            )
            cat.responses = dict(s.execute(q2).all())
        return cat

    # -- reading -------------------------------------------------------------------
    def load_tasks(self, benchmark: str | None = None) -> list[Task]:
        """Every task of a benchmark as domain objects, in import order."""
        bench = self.benchmark(benchmark)
        with self.db.read() as s:
            tasks = s.scalars(
                select(m.Task).where(m.Task.benchmark_id == bench.id).order_by(m.Task.position)
            ).all()
            crits: dict[int, list[m.Criterion]] = {}
            arts: dict[int, list[m.Artifact]] = {}
            for c in s.scalars(
                select(m.Criterion)
                .join(m.Task, m.Task.id == m.Criterion.task_id)
                .where(m.Task.benchmark_id == bench.id)
                .order_by(m.Criterion.task_id, m.Criterion.position)
            ):
                crits.setdefault(c.task_id, []).append(c)
            for a in s.scalars(
                select(m.Artifact)
                .join(m.Task, m.Task.id == m.Artifact.task_id)
                .where(m.Task.benchmark_id == bench.id)
                .order_by(m.Artifact.task_id, m.Artifact.position)
            ):
                arts.setdefault(a.task_id, []).append(a)
            return [task_from_row(t, crits.get(t.id, []), arts.get(t.id, [])) for t in tasks]

    def load_responses(self, benchmark: str | None = None) -> list[Response]:
        bench = self.benchmark(benchmark)
        with self.db.read() as s:
            q = (
                select(
                    m.Response.external_id,
                    m.Task.external_id,
                    m.Response.model,
                    m.Response.text,
                    m.Response.answer,
                )
                .join(m.Task, m.Task.id == m.Response.task_id)
                .where(m.Response.benchmark_id == bench.id)
                .order_by(m.Task.position, m.Response.position, m.Response.id)
            )
            return [
                Response(id=a, task_id=b, model=c, text=d, answer=e)
                for a, b, c, d, e in s.execute(q)
            ]

    def judgment_records(self, benchmark: str | None = None) -> list[dict[str, Any]]:
        """Every current judgment as a judgments.jsonl record plus task_id, model, updated_at."""
        bench = self.benchmark(benchmark)
        with self.db.read() as s:
            q = (
                judgments_with_names(
                    m.Response.external_id.label("response_id"),
                    m.Criterion.external_id.label("criterion_id"),
                    m.Grader.name.label("grader"),
                    m.Grader.kind.label("grader_kind"),
                    *[getattr(m.Judgment, f) for f in JUDGMENT_FIELDS],
                    m.Task.external_id.label("task_id"),
                    m.Grader.model.label("judge_model"),
                    m.Judgment.created_at,
                    m.Judgment.updated_at,
                    m.Judgment.revision,
                    m.Judgment.task_version,
                    m.Task.version.label("current_version"),
                    task=True,
                )
                .where(m.Response.benchmark_id == bench.id)
                .order_by(
                    m.Task.position,
                    m.Response.position,
                    m.Response.id,
                    m.Criterion.position,
                    m.Grader.name,
                )
            )
            out: list[dict[str, Any]] = []
            for row in s.execute(q):
                rec: dict[str, Any] = {
                    "response_id": row.response_id,
                    "criterion_id": row.criterion_id,
                    "grader": row.grader,
                    "grader_kind": row.grader_kind,
                    "met": row.met,
                }
                for f in ("level", "confidence", "rationale", "unclear_note"):
                    if getattr(row, f) is not None:
                        rec[f] = getattr(row, f)
                if row.unclear:
                    rec["unclear"] = True
                rec["task_id"] = row.task_id
                if row.judge_model:
                    rec["model"] = row.judge_model
                rec["revision"] = row.revision
                rec["created_at"] = _iso(row.created_at)
                rec["updated_at"] = _iso(row.updated_at)
                if row.current_version != 1:  # on a revised task (issue #16): explicit,
                    rec["version"] = row.task_version  # since absent means "current"
                out.append(rec)
            return out

    def adjudication_records(self, benchmark: str | None = None) -> list[dict[str, Any]]:
        """Every final verdict as an adjudications.jsonl record plus task_id and revision."""
        bench = self.benchmark(benchmark)
        with self.db.read() as s:
            q = (
                select(
                    m.Response.external_id.label("response_id"),
                    m.Criterion.external_id.label("criterion_id"),
                    m.Adjudication.met,
                    m.Adjudication.level,
                    m.Adjudication.adjudicator,
                    m.Adjudication.note,
                    m.Task.external_id.label("task_id"),
                    m.Adjudication.revision,
                    m.Adjudication.created_at,
                    m.Adjudication.updated_at,
                )
                .join(m.Response, m.Response.id == m.Adjudication.response_id)
                .join(m.Criterion, m.Criterion.id == m.Adjudication.criterion_id)
                .join(m.Task, m.Task.id == m.Response.task_id)
                .where(m.Response.benchmark_id == bench.id)
                .order_by(m.Task.position, m.Response.position, m.Response.id, m.Criterion.position)
            )
            from gradercal.formats.v1 import adjudication_record

            out: list[dict[str, Any]] = []
            for row in s.execute(q):
                rec = adjudication_record(
                    Adjudication(
                        row.response_id,
                        row.criterion_id,
                        row.met,
                        row.adjudicator,
                        row.note,
                        row.level,
                    )
                )
                rec.update(
                    task_id=row.task_id,
                    revision=row.revision,
                    created_at=_iso(row.created_at),
                    updated_at=_iso(row.updated_at),
                )
                out.append(rec)
            return out

    def judgment_history(self, judgment_id: int) -> list[dict[str, Any]]:
        """Superseded values of one judgment, oldest first."""
        with self.db.read() as s:
            rows = s.scalars(
                select(m.Revision)
                .where(m.Revision.entity == "judgment", m.Revision.entity_id == judgment_id)
                .order_by(m.Revision.revision)
            ).all()
            return [{"revision": r.revision, **r.data, "changed_at": r.changed_at} for r in rows]

    def read_blob(self, sha256: str) -> bytes:
        with self.db.read() as s:
            data = s.scalar(select(m.Blob.data).where(m.Blob.sha256 == sha256))
            if data is None:
                raise NotFoundError(f"no artifact bytes stored for sha256 {sha256}")
            return data

    def load_frames(self, benchmark: str | None = None, version: Version = "current") -> Frames:
        """The benchmark's tables for scoring and statistics (see :mod:`gradercal.frames`).

        The judgments (the bulk: hundreds of thousands of rows) are read column-wise: one
        ``SELECT`` of their integer keys and values through the driver's cursor, no joins,
        turned into numpy arrays in C and into names by a lookup in the small tables read
        first (about 1.3× a bare ``sqlite3`` fetchall of the joined rows, instead of 4×:
        ``benchmarks/bench_load_frames.py``). The frames are identical to those of
        :meth:`load_frames_by_rows` (tested); should a judgment name a criterion outside
        the benchmark's tasks, the rows path is taken instead.

        ``version`` chooses the verdicts after rubric revisions: ``"current"`` leaves out
        the stale ones, ``"all"`` keeps every verdict, a number N those current when the
        task was at version N (:mod:`gradercal.db.revisions`).
        """
        from gradercal.db.frames_read import read_frames

        bench = self.benchmark(benchmark)
        with self.db.read() as s:
            frames = read_frames(s.connection(), bench.id, bench.pass_threshold, version)
        return frames if frames is not None else self.load_frames_by_rows(benchmark, version)

    def data_revision(
        self, benchmark: str | None = None, previous: Mapping[str, str] | None = None
    ) -> dict[str, str]:
        """A fingerprint of the benchmark's data per part (the database's identity,
        benchmark, tasks, responses, graders, judgments, adjudications, reviews, rounds): a
        part whose fingerprint is unchanged holds the same rows
        (:func:`gradercal.db.fingerprint.read_revision`; ``previous``: one read earlier in
        this process, whose judgments' digest is kept while their stamps are unchanged).
        Read it *before* the data it describes: a change in between then shows next time."""
        from gradercal.db.fingerprint import read_revision

        bench = self.benchmark(benchmark)
        with self.db.read() as s:
            return read_revision(s.connection(), bench.id, previous)

    def load_adjudications(self, benchmark: str | None = None) -> pd.DataFrame:
        """The ``adjudications`` frame of :meth:`load_frames` alone."""
        from gradercal.db.frames_read import read_adjudications

        bench = self.benchmark(benchmark)
        with self.db.read() as s:
            return read_adjudications(s.connection(), bench.id)

    def load_frames_by_rows(
        self, benchmark: str | None = None, version: Version = "current"
    ) -> Frames:
        """:meth:`load_frames` the plain way: joined rows through SQLAlchemy Core, made into
        frames by :func:`gradercal.frames.make_frame` (the reference of the fast path)."""
        from gradercal.db.frames_read import kept_rows, read_adjudications
        from gradercal.frames import (
            CRITERION_DTYPES,
            JUDGMENT_DTYPES,
            RESPONSE_DTYPES,
            TASK_DTYPES,
            Frames,
            make_frame,
        )

        bench = self.benchmark(benchmark)
        with self.db.read() as s:
            # Core execution of plain column selects (no ORM row processing: ≈ 2× faster
            # on 200,000 judgments).
            conn = s.connection()
            n_art = (
                select(m.Artifact.task_id, func.count().label("n"))
                .group_by(m.Artifact.task_id)
                .subquery()
            )
            task_rows = conn.execute(
                select(
                    m.Task.external_id,
                    m.Task.workflow,
                    m.Task.domain,
                    m.Task.answer_format,
                    func.coalesce(n_art.c.n, 0),
                )
                .outerjoin(n_art, n_art.c.task_id == m.Task.id)
                .where(m.Task.benchmark_id == bench.id)
                .order_by(m.Task.position)
            ).all()
            tasks = make_frame(
                TASK_DTYPES, ((a, b, c, d, int(n), n > 0) for a, b, c, d, n in task_rows)
            )
            crit_rows = conn.execute(
                select(
                    m.Task.external_id,
                    m.Criterion.external_id,
                    m.Criterion.position,
                    m.Criterion.text,
                    m.Criterion.points,
                    m.Criterion.kind,
                    m.Criterion.tags,
                    m.Criterion.levels,
                    m.Criterion.auto_key,
                    m.Criterion.auto_target,
                    m.Criterion.auto_abs_tol,
                    m.Criterion.auto_rel_tol,
                )
                .join(m.Task, m.Task.id == m.Criterion.task_id)
                .where(m.Task.benchmark_id == bench.id)
                .order_by(m.Task.position, m.Criterion.position)
            ).all()
            criteria = make_frame(
                CRITERION_DTYPES,
                ((*r[:6], tuple(r[6] or ()), *r[7:]) for r in crit_rows),
            )
            resp_rows = conn.execute(
                select(
                    m.Response.external_id, m.Task.external_id, m.Response.model, m.Response.answer
                )
                .join(m.Task, m.Task.id == m.Response.task_id)
                .where(m.Response.benchmark_id == bench.id)
                .order_by(m.Task.position, m.Response.position, m.Response.id)
            ).all()
            responses = make_frame(RESPONSE_DTYPES, (tuple(r) for r in resp_rows))
            j_rows = conn.execute(
                judgments_with_names(
                    m.Response.external_id,
                    m.Criterion.external_id,
                    m.Grader.name,
                    m.Grader.kind,
                    m.Judgment.met,
                    m.Judgment.level,
                    m.Judgment.confidence,
                    m.Judgment.rationale,
                    m.Judgment.unclear,
                    m.Judgment.criterion_id,
                    m.Judgment.task_version,
                    m.Criterion.verdict_version,
                )
                .where(m.Response.benchmark_id == bench.id)
                .order_by(m.Judgment.id)
            ).all()
            j_rows = kept_rows(conn, bench.id, version, j_rows)
            judgments = make_frame(JUDGMENT_DTYPES, (tuple(r[:9]) for r in j_rows))
            adjudications = read_adjudications(conn, bench.id, version)
        return Frames(
            pass_threshold=bench.pass_threshold,
            tasks=tasks,
            criteria=criteria,
            responses=responses,
            judgments=judgments,
            adjudications=adjudications,
        )

    # -- adjudication ----------------------------------------------------------------
    def adjudicate(
        self,
        benchmark: str | None,
        response_id: str,
        criterion_id: str,
        *,
        met: bool,
        adjudicator: str,
        note: str | None = None,
        level: int | None = None,
        expected_revision: int | None = None,
    ) -> None:
        """Record (or revise, keeping history) the final verdict on one criterion.

        NUL characters are dropped from the note and the adjudicator's name (PostgreSQL
        text cannot hold them); a blank note is stored as None.

        With ``expected_revision`` (the adjudication's revision when the decision was
        made, 0 when there was none) the write is optimistic, like a grader's
        (:class:`gradercal.db.grading.StaleJudgmentError`): when another decision was
        stored in between — even at the same moment, by another adjudicator — nothing is
        written and :class:`StaleAdjudicationError` shows that decision.
        """
        for attempt in (1, 2):
            try:
                self._adjudicate(
                    benchmark, response_id, criterion_id, met=met, adjudicator=adjudicator,
                    note=note, level=level, expected_revision=expected_revision,
                )  # fmt: skip
                return
            except IntegrityError:  # another decision on the unit was inserted in between
                if attempt == 2:
                    raise

    def _adjudicate(
        self,
        benchmark: str | None,
        response_id: str,
        criterion_id: str,
        *,
        met: bool,
        adjudicator: str,
        note: str | None,
        level: int | None,
        expected_revision: int | None,
    ) -> None:
        if note is not None:
            note = note.replace("\x00", "")
            note = note if note.strip() else None
        adjudicator = adjudicator.replace("\x00", "")
        bench = self.benchmark(benchmark)
        with self.db.write() as s:
            resp = s.execute(
                select(m.Response.id, m.Response.task_id).where(
                    m.Response.benchmark_id == bench.id, m.Response.external_id == response_id
                )
            ).first()
            if resp is None:
                raise NotFoundError(f"no response {response_id!r}")
            crit = s.scalar(
                select(m.Criterion.id).where(
                    m.Criterion.task_id == resp.task_id, m.Criterion.external_id == criterion_id
                )
            )
            if crit is None:
                raise NotFoundError(f"no criterion {criterion_id!r} on response {response_id!r}")
            now = m.utcnow()
            row = s.scalar(
                select(m.Adjudication)
                .where(
                    tuple_(m.Adjudication.response_id, m.Adjudication.criterion_id)
                    == (resp.id, crit)
                )
                .with_for_update()  # two adjudicators at once: the second waits, no lost update
            )
            current = 0 if row is None else int(row.revision)
            if expected_revision is not None and current != expected_revision:
                assert row is not None  # a revision beyond 0 is a stored row
                raise StaleAdjudicationError(response_id, criterion_id, expected_revision, row)
            if row is None:
                s.add(
                    m.Adjudication(
                        response_id=resp.id,
                        criterion_id=crit,
                        adjudicator=adjudicator,
                        met=met,
                        level=level,
                        note=note,
                        created_at=now,
                        updated_at=now,
                        task_version=response_task_version(s, resp.id),
                    )
                )
                return
            decision = Adjudication(response_id, criterion_id, met, adjudicator, note, level)
            revise_adjudication(s, row, decision, source="ui", actor=adjudicator, now=now)


def task_from_row(t: m.Task, crits: list[m.Criterion], arts: list[m.Artifact]) -> Task:
    return Task(
        id=t.external_id,
        prompt=t.prompt,
        workflow=t.workflow,
        domain=t.domain,
        answer_format=t.answer_format,
        tags=tuple(t.tags or ()),
        metadata=dict(t.meta or {}),
        version=int(t.version or 1),
        artifacts=tuple(
            Artifact(
                kind=ArtifactKind(a.kind),
                title=a.title,
                position=a.position,
                path=a.path,
                original_name=a.original_name,
                sha256=a.sha256,
                size=a.size,
                url=a.url,
                media_type=a.media_type,
            )
            for a in arts
        ),
        criteria=tuple(
            Criterion(
                id=c.external_id,
                text=c.text,
                points=c.points,
                position=c.position,
                tags=tuple(c.tags or ()),
                auto=(
                    AutoRule(c.auto_key, c.auto_target, c.auto_abs_tol, c.auto_rel_tol)
                    if c.kind == "auto" and c.auto_key is not None
                    else None
                ),
                levels=c.levels,
            )
            for c in crits
        ),
    )


def benchmark_of(data: BenchmarkData, name: str) -> BenchmarkData:
    """The same data, addressed to the benchmark called ``name``."""
    b = data.benchmark
    data.benchmark = Benchmark(
        name=name,
        pass_threshold=b.pass_threshold,
        format_version=b.format_version,
        instructions=b.instructions,
    )
    return data
