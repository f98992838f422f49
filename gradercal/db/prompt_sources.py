"""What a calibrated judge-prompt package needs from the database, and importing one back.

:func:`gather` collects, for one judge on one benchmark: the judge's stored prompt
version (or the shipped default for a judge imported without one), the experts'
"criterion unclear" notes (``judgment.unclear`` / ``unclear_note`` of human graders),
the adjudications with their notes, every expert's and the judge's verdict on each
adjudicated item, the judge's active calibration, the frames for the agreement card,
and the provenance (graders, counts, date range). :func:`import_package` stores the
package's prompt as a prompt version through :meth:`JudgeStore.save_prompt` (one row
per content hash, so importing twice changes nothing).

SQLAlchemy only; never imports Qt. The package itself is built by
:mod:`gradercal.prompt_package`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC
from typing import Any

from sqlalchemy import func, select

from gradercal.db import models as m
from gradercal.db.calibrations import list_calibrations
from gradercal.db.judging import JudgeInfo, JudgeStore
from gradercal.db.repo import Repository
from gradercal.db.session import Database
from gradercal.db.versions import is_current
from gradercal.errors import NotFoundError
from gradercal.frames import Frames
from gradercal.judge.prompts import DEFAULT_PROMPT, PromptTemplate
from gradercal.prompt_package import AdjudicatedItem, ExpertNote, PromptPackage

__all__ = [
    "ImportedPrompt",
    "PromptSources",
    "export_samples",
    "gather",
    "import_package",
    "package_from",
]


@dataclass
class PromptSources:
    """Everything :func:`gradercal.prompt_package.build_package` needs, from one database.

    Attributes:
        benchmark: The benchmark's name.
        pass_threshold: Its pass threshold.
        judge: The judge grader.
        base_prompt: The judge's prompt version (the shipped default when it has none).
        notes: Unclear-criterion notes and adjudication notes.
        adjudicated: Every adjudicated judgment criterion, with the verdicts on it.
        calibration: The judge's active calibration (``to_dict(full=True)``), or None.
        frames: The benchmark frames (for the agreement card).
        provenance: ``{"benchmark", "judge", "judge_model", "experts", "counts",
            "date_range"}``.
        tasks: The tasks with their judgment criteria (for promptfoo tests).
        warnings: What the reader should know (e.g. no stored prompt version).
    """

    benchmark: str
    pass_threshold: float
    judge: JudgeInfo
    base_prompt: PromptTemplate
    notes: list[ExpertNote]
    adjudicated: list[AdjudicatedItem]
    calibration: dict[str, Any] | None
    frames: Frames
    provenance: dict[str, Any]
    tasks: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def judge_dict(self) -> dict[str, Any]:
        return {
            "name": self.judge.name,
            "model": self.judge.model,
            "prompt_version": self.judge.prompt_hash,
            "parameters": dict(self.judge.parameters or {}),
        }


def _judges(s: Any) -> list[str]:
    return list(
        s.scalars(select(m.Grader.name).where(m.Grader.kind == "judge").order_by(m.Grader.name))
    )


def gather(db: Database, benchmark: str | None, judge: str) -> PromptSources:
    """Collect the package's inputs for ``judge`` on ``benchmark``.

    Raises:
        NotFoundError: Unknown benchmark or judge (the message lists the judges).
        ConflictError: ``judge`` names a human grader.
    """
    store = JudgeStore(db)
    repo = Repository(db)
    bench = repo.benchmark(benchmark)
    info = store.judge(judge)
    if info is None:
        with db.read() as s:
            known = _judges(s)
        raise NotFoundError(
            f"no judge named {judge!r}"
            + (f"; judges: {', '.join(known)}" if known else "; the database has no judge")
        )
    warnings: list[str] = []
    if info.prompt_hash is None:
        base = store.load_prompt(None)
        warnings.append(
            f"judge {judge!r} has no stored prompt version (its verdicts were imported): the "
            "package starts from the shipped default prompt"
        )
    else:
        base = store.load_prompt(info.prompt_hash)
    saved = list_calibrations(repo, bench.name, judge)
    active = next((c for c in saved if c.active), None)
    if active is None and saved:
        warnings.append(
            f"{len(saved)} calibration(s) of {judge!r} saved but none is active: the package "
            "uses none (activate one, or run `gradercal calibrate` again)"
        )
    notes, adjudicated, provenance, tasks = _read(db, bench.id, info)
    provenance = {
        "benchmark": bench.name,
        "judge": judge,
        "judge_model": info.model,
        **provenance,
    }
    return PromptSources(
        benchmark=bench.name,
        pass_threshold=float(bench.pass_threshold),
        judge=info,
        base_prompt=base,
        notes=notes,
        adjudicated=adjudicated,
        calibration=None if active is None else active.to_dict(full=True),
        frames=repo.load_frames(bench.name),
        provenance=provenance,
        tasks=tasks,
        warnings=warnings,
    )


def package_from(
    db: Database,
    src: PromptSources,
    *,
    n_examples: int,
    seed: int,
    n_boot: int,
    name: str | None = None,
    progress: Any = None,
) -> PromptPackage:
    """The judge's prompt package from ``src`` (:func:`gather`): its agreement card, the
    examples, and the judge's newest alignment certificate on the benchmark. One path for
    ``gradercal export-prompt`` and the window's export dialog, so they write the same file.

    ``progress(stage, done, total)`` hears "agreement card" (1 of 3) and "examples" (2 of 3).
    """
    from dataclasses import replace

    from gradercal.prompt_package import agreement_card, build_package

    if progress is not None:
        progress("agreement card", 1, 3)
    card = agreement_card(
        src.frames,
        src.judge.name,
        src.calibration,
        provenance=src.provenance,
        n_boot=n_boot,
        seed=seed,
    )
    if progress is not None:
        progress("examples", 2, 3)
    package = build_package(
        judge=src.judge_dict(),
        base_prompt=src.base_prompt,
        benchmark=src.benchmark,
        notes=src.notes,
        adjudicated=src.adjudicated,
        calibration=src.calibration,
        card=card,
        pass_threshold=src.pass_threshold,
        n_examples=n_examples,
        seed=seed,
        name=name,
    )
    certificate = next(
        (r for r in JudgeStore(db).certificates(src.judge.name) if r["benchmark"] == src.benchmark),
        None,
    )
    return package if certificate is None else replace(package, certificate=certificate)


def export_samples(
    db: Database, benchmark: str, frames: Frames, prompt: PromptTemplate
) -> list[dict[str, Any]]:
    """Every response of ``benchmark`` as an exported judge's sample
    (:func:`gradercal.prompt_package.samples.build_samples`), with the task prompt,
    response text and artifact text that gradercal's runner would send under ``prompt``
    (its artifact budget)."""
    from gradercal.db.judging import Scope
    from gradercal.prompt_package.samples import build_samples

    items = JudgeStore(db).work_items(benchmark, None, Scope("all"), prompt)
    return build_samples(frames, items)


def _read(
    db: Database, bench_id: int, judge: JudgeInfo
) -> tuple[list[ExpertNote], list[AdjudicatedItem], dict[str, Any], list[dict[str, Any]]]:
    J, R, C, T, G, A = m.Judgment, m.Response, m.Criterion, m.Task, m.Grader, m.Adjudication
    with db.read() as s:
        crit: dict[int, Any] = {
            row.id: row
            for row in s.execute(
                select(
                    C.id,
                    C.external_id,
                    C.text,
                    C.points,
                    C.tags,
                    C.kind,
                    T.external_id.label("task"),
                )
                .join(T, T.id == C.task_id)
                .where(T.benchmark_id == bench_id)
            )
        }
        resp: dict[int, Any] = {
            row.id: row
            for row in s.execute(
                select(R.id, R.external_id, R.text, T.external_id.label("task"), T.prompt)
                .join(T, T.id == R.task_id)
                .where(R.benchmark_id == bench_id)
            )
        }
        judge_verdicts: dict[tuple[int, int], bool | None] = {
            (r, c): met
            for r, c, met in s.execute(
                select(J.response_id, J.criterion_id, J.met)
                .join(R, R.id == J.response_id)
                .where(J.grader_id == judge.grader_id, R.benchmark_id == bench_id, is_current(J))
            )
        }
        human = (
            select(
                J.response_id, J.criterion_id, G.name, J.met, J.rationale, J.unclear, J.unclear_note
            )
            .join(G, G.id == J.grader_id)
            .join(R, R.id == J.response_id)
            .where(G.kind == "human", R.benchmark_id == bench_id, is_current(J))
        )
        notes: list[ExpertNote] = []
        for r, c, name, met, _rat, _unclear, note in s.execute(
            human.where(J.unclear.is_(True), J.unclear_note.is_not(None))
        ):
            cr, rs = crit[c], resp[r]
            notes.append(
                ExpertNote(
                    source="unclear",
                    task_id=cr.task,
                    criterion_id=cr.external_id,
                    response_id=rs.external_id,
                    criterion=cr.text,
                    tags=tuple(str(t) for t in cr.tags or ()),
                    author=name,
                    text=str(note),
                    verdict=met,
                    judge_met=judge_verdicts.get((r, c)),
                )
            )
        for c, answer, who in s.execute(
            select(
                m.Clarification.criterion_id, m.Clarification.answer, m.Clarification.answered_by
            ).where(
                m.Clarification.benchmark_id == bench_id,
                m.Clarification.answer.is_not(None),
            )
        ):
            cr = crit[c]
            notes.append(
                ExpertNote(
                    source="clarification",
                    task_id=cr.task,
                    criterion_id=cr.external_id,
                    response_id="",
                    criterion=cr.text,
                    tags=tuple(str(t) for t in cr.tags or ()),
                    author=str(who or ""),
                    text=str(answer),
                )
            )
        adj_rows = s.execute(
            select(A.response_id, A.criterion_id, A.met, A.adjudicator, A.note)
            .where(is_current(A))
            .join(R, R.id == A.response_id)
            .where(R.benchmark_id == bench_id)
        ).all()
        keys = {(r, c) for r, c, *_ in adj_rows}
        experts: dict[tuple[int, int], dict[str, bool | None]] = {}
        rationales: dict[tuple[int, int], dict[str, str]] = {}
        if keys:
            resp_ids = sorted({r for r, _ in keys})
            for r, c, name, met, rat, _u, _n in s.execute(human.where(J.response_id.in_(resp_ids))):
                if (r, c) in keys:
                    experts.setdefault((r, c), {})[name] = met
                    if rat:
                        rationales.setdefault((r, c), {})[name] = rat
        adjudicated: list[AdjudicatedItem] = []
        for r, c, met, who, note in adj_rows:
            cr, rs = crit[c], resp[r]
            tags = tuple(str(t) for t in cr.tags or ())
            jm = judge_verdicts.get((r, c))
            if note and note.strip():
                notes.append(
                    ExpertNote(
                        source="adjudication",
                        task_id=cr.task,
                        criterion_id=cr.external_id,
                        response_id=rs.external_id,
                        criterion=cr.text,
                        tags=tags,
                        author=who,
                        text=note,
                        verdict=bool(met),
                        judge_met=jm,
                    )
                )
            if cr.kind == "auto":
                continue
            adjudicated.append(
                AdjudicatedItem(
                    task_id=cr.task,
                    response_id=rs.external_id,
                    criterion_id=cr.external_id,
                    criterion=cr.text,
                    points=int(cr.points),
                    tags=tags,
                    task_prompt=rs.prompt,
                    response=rs.text,
                    met=bool(met),
                    adjudicator=who,
                    note=note,
                    experts=experts.get((r, c), {}),
                    rationales=rationales.get((r, c), {}),
                    judge_met=jm,
                )
            )
        provenance = _provenance(s, bench_id, judge)
        task_rows = s.execute(
            select(T.id, T.external_id, T.prompt)
            .where(T.benchmark_id == bench_id)
            .order_by(T.position)
        ).all()
        by_task: dict[str, list[dict[str, Any]]] = {}
        for row in sorted(crit.values(), key=lambda x: x.id):
            if row.kind != "auto":
                by_task.setdefault(row.task, []).append(
                    {"criterion": row.text, "points": int(row.points), "tags": list(row.tags or ())}
                )
        tasks = [
            {"task_id": ext, "prompt": prompt, "rubric": by_task.get(ext, [])}
            for _tid, ext, prompt in task_rows
        ]
    notes.sort(key=lambda n: (n.task_id, n.criterion_id, n.response_id, n.source, n.author))
    adjudicated.sort(key=lambda a: (a.task_id, a.response_id, a.criterion_id))
    return notes, adjudicated, provenance, tasks


def _provenance(s: Any, bench_id: int, judge: JudgeInfo) -> dict[str, Any]:
    J, R, G = m.Judgment, m.Response, m.Grader
    base = (
        select(func.count())
        .select_from(J)
        .join(R, R.id == J.response_id)
        .join(G, G.id == J.grader_id)
        .where(R.benchmark_id == bench_id, J.met.is_not(None))
    )
    experts = list(
        s.scalars(
            select(G.name)
            .join(J, J.grader_id == G.id)
            .join(R, R.id == J.response_id)
            .where(G.kind == "human", R.benchmark_id == bench_id)
            .distinct()
            .order_by(G.name)
        )
    )
    lo, hi = s.execute(
        select(func.min(J.updated_at), func.max(J.updated_at))
        .join(R, R.id == J.response_id)
        .join(G, G.id == J.grader_id)
        .where(R.benchmark_id == bench_id, (G.kind == "human") | (G.id == judge.grader_id))
    ).one()
    alo, ahi = s.execute(
        select(func.min(m.Adjudication.updated_at), func.max(m.Adjudication.updated_at))
        .join(R, R.id == m.Adjudication.response_id)
        .where(R.benchmark_id == bench_id)
    ).one()
    stamps = [
        x if x.tzinfo is not None else x.replace(tzinfo=UTC)  # SQLite: naive, stored UTC
        for x in (lo, hi, alo, ahi)
        if x is not None
    ]
    counts = {
        "tasks": s.scalar(
            select(func.count()).select_from(m.Task).where(m.Task.benchmark_id == bench_id)
        ),
        "responses": s.scalar(
            select(func.count()).select_from(R).where(R.benchmark_id == bench_id)
        ),
        "expert_verdicts": s.scalar(base.where(G.kind == "human")),
        "judge_verdicts": s.scalar(base.where(G.id == judge.grader_id)),
        "adjudications": s.scalar(
            select(func.count())
            .select_from(m.Adjudication)
            .join(R, R.id == m.Adjudication.response_id)
            .where(R.benchmark_id == bench_id)
        ),
        "unclear_flags": s.scalar(
            select(func.count())
            .select_from(J)
            .join(R, R.id == J.response_id)
            .where(R.benchmark_id == bench_id, J.unclear.is_(True))
        ),
    }
    return {
        "experts": experts,
        "counts": {k: int(v or 0) for k, v in counts.items()},
        "date_range": (
            [min(stamps).date().isoformat(), max(stamps).date().isoformat()] if stamps else None
        ),
    }


@dataclass(frozen=True)
class ImportedPrompt:
    """The outcome of :func:`import_package`.

    Attributes:
        id: The prompt version's row id.
        content_hash: Its hash (= the package's ``prompt_version``).
        name: Its name.
        created: False when that version was already stored (nothing was written).
        parent_hash: The parent recorded (None when the package's parent is not stored
            in this database).
        parent_missing: The package named a parent this database does not hold.
    """

    id: int
    content_hash: str
    name: str | None
    created: bool
    parent_hash: str | None
    parent_missing: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "prompt_version": self.content_hash,
            "name": self.name,
            "created": self.created,
            "parent_hash": self.parent_hash,
            "parent_missing": self.parent_missing,
        }


def import_package(db: Database, package: PromptPackage) -> ImportedPrompt:
    """Store the package's prompt as a prompt version (idempotent: one row per hash).

    The guidance (the ``guidance`` option) and the few-shot examples are part of the
    stored prompt, so ``gradercal judge run --prompt HASH`` uses them. When the
    package's parent version is not stored here, the version is stored without a parent
    (the content hash does not depend on it).
    """
    prompt = package.prompt
    with db.read() as s:
        found = s.scalar(
            select(m.PromptVersion.id).where(m.PromptVersion.content_hash == prompt.content_hash)
        )
        parent_known = prompt.parent_hash is None or (
            s.scalar(
                select(m.PromptVersion.id).where(m.PromptVersion.content_hash == prompt.parent_hash)
            )
            is not None
        )
    if found is not None:
        return ImportedPrompt(
            int(found), prompt.content_hash, prompt.name, False, prompt.parent_hash, False
        )
    to_store = prompt
    if not parent_known and prompt.parent_hash == DEFAULT_PROMPT.content_hash:
        JudgeStore(db).save_prompt(DEFAULT_PROMPT)  # the shipped default, stored on first use
        parent_known = True
    if not parent_known:
        to_store = PromptTemplate(
            system=prompt.system,
            user=prompt.user,
            few_shot=prompt.few_shot,
            options=prompt.options,
            name=prompt.name,
            parent_hash=None,
        )
    pid = JudgeStore(db).save_prompt(to_store)
    return ImportedPrompt(
        pid, to_store.content_hash, to_store.name, True, to_store.parent_hash, not parent_known
    )
