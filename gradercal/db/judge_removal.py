"""Remove a (test) judge's verdicts from a benchmark (the coordinator window, issue #33).

:func:`judge_verdict_count` says how many verdicts would go; :func:`remove_judge` removes
them in one transaction, with the judge's saved calibrations and alignment certificates
of that benchmark. Each removed verdict is kept in the history as a ``judgment_deleted``
row (as removing a criterion keeps them; on PostgreSQL in team mode the delete trigger
writes that row itself), so ``gradercal check`` finds nothing orphaned. When the judge
has no verdict left in any benchmark, its runs and its grader row go too (a test judge
leaves no trace but the history). Human graders are refused.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import delete, func, select, text

from gradercal.db import models as m
from gradercal.db.session import Database
from gradercal.db.snapshots import deleted_judgment_revision
from gradercal.errors import GradercalError, NotFoundError
from gradercal.model import GraderKind


@dataclass(frozen=True)
class RemovalReport:
    judge: str
    benchmark: str
    verdicts: int
    calibrations: int
    certificates: int
    #: the grader row and its runs went too (no verdict left anywhere)
    grader_removed: bool


def _judge_and_bench(s: object, benchmark: str | None, judge: str) -> tuple[m.Grader, m.Benchmark]:
    from sqlalchemy.orm import Session

    assert isinstance(s, Session)
    grader = s.scalar(select(m.Grader).where(m.Grader.name == judge))
    if grader is None:
        raise NotFoundError(f"no judge {judge!r}")
    if grader.kind != GraderKind.JUDGE.value:
        raise GradercalError(f"{judge!r} is a human grader, not a judge: their work is kept")
    if benchmark is None:
        names = list(s.scalars(select(m.Benchmark).order_by(m.Benchmark.name)))
        if len(names) != 1:
            raise GradercalError("choose the benchmark (the database holds several)")
        return grader, names[0]
    bench = s.scalar(select(m.Benchmark).where(m.Benchmark.name == benchmark))
    if bench is None:
        raise NotFoundError(f"no benchmark {benchmark!r}")
    return grader, bench


def _verdicts(bench_id: int, grader_id: int):  # type: ignore[no-untyped-def]
    in_bench = select(m.Response.id).where(m.Response.benchmark_id == bench_id)
    return (m.Judgment.grader_id == grader_id, m.Judgment.response_id.in_(in_bench))


def judge_verdict_count(db: Database, benchmark: str | None, judge: str) -> int:
    """How many verdicts ``judge`` has in the benchmark (what removing it would delete).

    Raises:
        NotFoundError: no such judge or benchmark; GradercalError: a human grader.
    """
    with db.read() as s:
        grader, bench = _judge_and_bench(s, benchmark, judge)
        return int(
            s.scalar(
                select(func.count()).select_from(m.Judgment).where(*_verdicts(bench.id, grader.id))
            )
            or 0
        )


def remove_judge(
    db: Database, benchmark: str | None, judge: str, *, actor: str | None = None
) -> RemovalReport:
    """Delete ``judge``'s verdicts, calibrations and certificates in the benchmark (one
    transaction; the verdicts are kept in the history).

    Raises:
        NotFoundError: no such judge or benchmark; GradercalError: a human grader.
    """
    from gradercal.db.models import utcnow

    with db.write() as s:
        grader, bench = _judge_and_bench(s, benchmark, judge)
        by_trigger = s.get_bind().dialect.name == "postgresql" and bool(
            s.scalar(
                text("SELECT count(*) FROM pg_trigger WHERE tgname = 'gradercal_keep_deleted'")
            )
        )
        now = utcnow()
        rows = list(s.scalars(select(m.Judgment).where(*_verdicts(bench.id, grader.id))))
        if not by_trigger:
            for j in rows:
                s.add(
                    deleted_judgment_revision(j, actor=actor, source="remove-judge", changed_at=now)
                )
            s.flush()
        ids = [j.id for j in rows]
        for start in range(0, len(ids), 500):
            s.execute(
                delete(m.Judgment)
                .where(m.Judgment.id.in_(ids[start : start + 500]))
                .execution_options(synchronize_session=False)
            )
        cal_ids = list(
            s.scalars(
                select(m.Calibration.id).where(
                    m.Calibration.grader_id == grader.id, m.Calibration.benchmark_id == bench.id
                )
            )
        )
        cert_ids = list(
            s.scalars(
                select(m.JudgeCertificate.id).where(
                    m.JudgeCertificate.grader_id == grader.id,
                    m.JudgeCertificate.benchmark_id == bench.id,
                )
            )
        )
        s.execute(delete(m.Calibration).where(m.Calibration.id.in_(cal_ids)))
        s.execute(delete(m.JudgeCertificate).where(m.JudgeCertificate.id.in_(cert_ids)))
        left = s.scalar(
            select(func.count()).select_from(m.Judgment).where(m.Judgment.grader_id == grader.id)
        )
        others = s.scalar(
            select(func.count())
            .select_from(m.Calibration)
            .where(m.Calibration.grader_id == grader.id)
        )
        removed = not left and not others
        if removed:
            s.execute(delete(m.JudgeCertificate).where(m.JudgeCertificate.grader_id == grader.id))
            s.execute(delete(m.Assignment).where(m.Assignment.grader_id == grader.id))
            s.execute(delete(m.JudgeRun).where(m.JudgeRun.grader_id == grader.id))
            s.execute(delete(m.Grader).where(m.Grader.id == grader.id))
        return RemovalReport(
            judge=judge,
            benchmark=bench.name,
            verdicts=len(ids),
            calibrations=len(cal_ids),
            certificates=len(cert_ids),
            grader_removed=removed,
        )
