"""What the coordinator window's operation dialogs do, without Qt (issue #33).

Each function does what the command of the same name does — ``gradercal import``,
``assign``, ``packet export``, ``packet merge``, ``report`` — through the same
``gradercal.db`` / ``gradercal.ops`` functions, and returns what the dialog shows as
plain lines (sentences, never a command to type). Every function runs in a worker
thread (:mod:`gradercal.ui.qt_workers`); those that take ``progress`` call it with
``(stage, done, total)`` from that thread. Errors are gradercal's own
(:class:`~gradercal.errors.GradercalError`; a :class:`~gradercal.errors.ValidationError`
lists every problem as ``file:line: field: message``) and leave the database as it was,
as the commands do.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from gradercal.errors import GradercalError

if TYPE_CHECKING:
    from gradercal.db.session import Database

#: ``(stage, done, total)``, called from the worker thread.
Progress = Callable[[str, int, int], None]


def _no_progress(_stage: str, _done: int, _total: int) -> None:
    return None


@dataclass
class Outcome:
    """What an operation did: a headline, detail lines, and its report as a dict."""

    headline: str
    lines: list[str] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)

    def text(self) -> str:
        return "\n".join([self.headline, *self.lines])


def split_names(text: str) -> list[str]:
    """``"ana, ben,,chloe"`` → ``["ana", "ben", "chloe"]``."""
    return [part.strip() for part in text.replace("\n", ",").split(",") if part.strip()]


# -- import ------------------------------------------------------------------------------------
def import_path(
    db: Database,
    path: str | Path,
    *,
    benchmark: str | None = None,
    progress: Progress | None = None,
) -> Outcome:
    """``gradercal import PATH``: a benchmark folder, one of its files, a table, a
    HealthBench file or Inspect AI logs, validated first (nothing is written when any
    line is bad). Importing the same data again changes nothing.

    Raises:
        GradercalError: no such path, an unknown format, or bad lines (ValidationError).
    """
    from gradercal.db.repo import Repository, benchmark_of
    from gradercal.formats import check_ready, read_path, recognise

    source = Path(path)
    if not str(path).strip() or not source.exists():
        raise GradercalError(f"{source}: no such file or folder")
    notify = progress or _no_progress
    notify("reading", 0, 1)
    found = recognise(source)
    if found.kind is None and source.is_file():
        read_path(source)  # says which formats were tried
    check_ready(found)
    repo = Repository(db)
    names = [b.name for b in repo.benchmarks()]
    target = benchmark or found.benchmark
    if target is None and found.new_benchmark is not None and not names:
        target = found.new_benchmark
    if target is None:
        if not names:
            raise GradercalError(
                f"{source}: names no benchmark and the database holds none to add it to"
            )
        target = repo.benchmark(None).name
    data = read_path(source, repo.catalog(target) if target in names else None, {})
    data = benchmark_of(data, target)
    notify("reading", 1, 1)
    report = repo.import_data(data, threshold_from_file=found.threshold_from_file, progress=notify)
    notes = list(data.notes)
    if not report.changed:
        return Outcome(f"{source.name}: nothing new; the database is unchanged.", notes)
    parts = [
        f"{report.tasks_added} tasks",
        f"{report.artifacts_added} artifacts",
        f"{report.responses_added} responses",
        f"{report.judgments_added} judgments",
    ]
    if report.adjudications_added:
        parts.append(f"{report.adjudications_added} adjudications")
    lines = []
    if report.graders_added:
        lines.append("New graders: " + ", ".join(report.graders_added) + ".")
    if report.judgments_updated:
        lines.append(f"{report.judgments_updated} judgments updated (old values kept).")
    return Outcome(
        f"Imported into benchmark {report.benchmark!r}: " + ", ".join(parts) + ".",
        lines + notes,
        report.to_dict(),
    )


# -- assign ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AssignOptions:
    """The options of ``gradercal assign``."""

    graders: tuple[str, ...]
    overlap: int
    calibration_fraction: float = 0.0
    stratify: tuple[str, ...] = ()
    seed: str = "0"
    unit: Literal["response", "task"] = "response"


def assign_preview(db: Database, benchmark: str | None, options: AssignOptions) -> Outcome:
    """Who would get what under ``options``: one line per grader; nothing is written.

    Raises:
        ValidationError: bad options (every problem listed).
    """
    from gradercal.db.assignments import load_units
    from gradercal.ops.assign import design_assignments

    units = load_units(db, benchmark)
    design = design_assignments(
        units,
        list(options.graders),
        options.overlap,
        calibration_fraction=options.calibration_fraction,
        stratify=options.stratify,
        seed=options.seed,
        unit=options.unit,
    )
    summary = design.summary(units)
    return Outcome(
        "Preview (nothing written yet): " + _assign_headline(summary),
        _grader_lines(summary),
        summary,
    )


def _assign_headline(d: dict[str, Any]) -> str:
    return (
        f"{d['n_responses']} responses, {d['n_assignments']} assignments "
        f"({d['n_calibration_responses']} responses graded by everyone), "
        f"overlap {d['overlap']}, seed {d['seed']!r}."
    )


def _grader_lines(d: dict[str, Any]) -> list[str]:
    return [
        f"{row['grader']}: {row['responses']} responses ({row['calibration']} calibration)"
        for row in d["graders_detail"]
    ]


def assign_apply(db: Database, benchmark: str | None, options: AssignOptions) -> Outcome:
    """``gradercal assign``: apply the design (existing assignments are never changed).

    Raises:
        ValidationError: bad options; ConflictError: a grader name belongs to a judge.
    """
    from gradercal.db.assignments import assign

    report = assign(
        db,
        list(options.graders),
        options.overlap,
        calibration_fraction=options.calibration_fraction,
        stratify=list(options.stratify),
        seed=options.seed,
        benchmark=benchmark,
        unit=options.unit,
    )
    lines = _grader_lines(report.design)
    if report.graders_created:
        lines.append("New graders: " + ", ".join(report.graders_created) + ".")
    for name, n in report.outside_design.items():
        lines.append(f"{name} already had {n} assignments outside this design (kept).")
    if report.assignments_differing:
        lines.append(
            f"{report.assignments_differing} existing assignments differ from this design "
            "and were left as they are."
        )
    head = (
        f"Created {report.assignments_created} assignments."
        if report.changed
        else "Already applied: the database is unchanged."
    )
    return Outcome(head, [_assign_headline(report.design), *lines], report.to_dict())


# -- packets -----------------------------------------------------------------------------------
def human_graders(db: Database) -> list[str]:
    """The human graders' names (whose packet can be exported), sorted."""
    from gradercal.db.grading import GradingStore

    return [g.name for g in GradingStore(db).graders()]


def export_packet(
    db: Database, benchmark: str | None, grader: str, path: str | Path, due_days: int = 0
) -> Outcome:
    """``gradercal packet export``: one grader's assignments to a packet file; ``due_days``
    > 0 sets the due date that many days from now.

    Raises:
        GradercalError: no such grader, no assignments, the file cannot be written.
    """
    from datetime import UTC, datetime, timedelta

    from gradercal.db.packets import export_packet as run_export

    if not grader.strip():
        raise GradercalError("choose whose packet to export")
    if not str(path).strip():
        raise GradercalError("choose the packet file to write")
    due = datetime.now(UTC) + timedelta(days=due_days) if due_days > 0 else None
    report = run_export(db, grader.strip(), Path(path), benchmark=benchmark, due_at=due)
    return Outcome(
        f"Wrote {Path(report.path).name}: {report.assignments} responses of {report.tasks} "
        f"tasks for {report.grader!r}.",
        [
            f"{report.artifacts} artifacts, {report.judgments} judgments so far, "
            f"{report.bytes / 1e6:.1f} MB."
        ],
        report.to_dict(),
    )


def merge_packet(db: Database, path: str | Path) -> Outcome:
    """``gradercal packet merge``: bring one returned packet's work back. Merging again
    changes nothing; a judgment changed on both sides is a conflict (``data["conflicts"]``).

    Raises:
        GradercalError: the packet is damaged, altered or foreign (nothing merged).
    """
    from gradercal.db.packets import merge_packet as run_merge

    if not str(path).strip():
        raise GradercalError("choose the returned packet to merge")
    report = run_merge(db, Path(path))
    data = report.to_dict()
    conflicts = len(data.get("conflicts") or [])
    lines = [f"{conflicts} conflicts kept beside the database's values."] if conflicts else []
    lines += [str(n) for n in data.get("notes") or []]
    lines += [str(w) for w in data.get("warnings") or []]
    return Outcome(_merge_headline(Path(path).name, data), lines, data)


def _merge_headline(name: str, d: dict[str, Any]) -> str:
    counts = {k: v for k, v in d.items() if isinstance(v, int) and not isinstance(v, bool)}
    added = counts.get("judgments_added", 0)
    updated = counts.get("judgments_updated", 0)
    if not (added or updated or d.get("changed")):
        return f"{name}: nothing new; the database is unchanged."
    return f"Merged {name}: {added} judgments added, {updated} updated."


# -- report ------------------------------------------------------------------------------------
def write_report(
    db: Database,
    benchmark: str | None,
    *,
    html: str | Path | None,
    pdf: str | Path | None,
    n_boot: int = 1000,
    seed: int = 0,
    title: str | None = None,
    progress: Progress | None = None,
) -> Outcome:
    """``gradercal report -o HTML --pdf PDF``: the dashboard of the current verdicts, the
    judge with the most verdicts, its active calibration.

    Raises:
        GradercalError: neither file chosen, no such benchmark, a file cannot be written.
    """
    from gradercal.dashboard import (
        DashboardInputs,
        DashboardRequest,
        compute_dashboard,
        primary_judge,
    )
    from gradercal.dashboard.report import write_html, write_pdf
    from gradercal.db.calibrations import load_calibration
    from gradercal.db.dashboard_data import load_dashboard_data
    from gradercal.db.repo import Repository
    from gradercal.stats.boot_settings import BootSettings

    targets = [Path(p) for p in (html, pdf) if p is not None and str(p).strip()]
    if not targets:
        raise GradercalError("choose an HTML or a PDF file to write")
    for target in targets:
        if not target.parent.is_dir():
            raise GradercalError(f"{target}: its folder {target.parent} does not exist")
    notify = progress or _no_progress
    notify("reading", 0, 1)
    repo = Repository(db)
    bench = repo.benchmark(benchmark).name
    data = load_dashboard_data(repo, bench)
    primary = primary_judge(data.frames, None)
    saved = load_calibration(repo, bench, primary) if primary is not None else None
    notify("reading", 1, 1)
    try:
        d = compute_dashboard(
            DashboardInputs(
                data,
                DashboardRequest(
                    judge=primary,
                    calibration=None if saved is None else dict(saved.params),
                    benchmark=bench,
                    boot=BootSettings(n_boot, seed),
                ),
            ),
            progress=lambda done, total, _label: notify("computing", done, total),
        )
    except ValueError as exc:
        raise GradercalError(str(exc)) from exc
    written: dict[str, str] = {}
    if html is not None and str(html).strip():
        write_html(
            d,
            Path(html),
            title=title,
            progress=lambda done, total, _label: notify("HTML charts", done, total),
        )
        written["html"] = str(html)
    if pdf is not None and str(pdf).strip():
        write_pdf(
            d,
            Path(pdf),
            title=title,
            progress=lambda done, total, _label: notify("PDF charts", done, total),
        )
        written["pdf"] = str(pdf)
    return Outcome(
        "Wrote the report: " + ", ".join(Path(p).name for p in written.values()) + ".",
        [f"Note: {n}" for n in d.notes],
        written,
    )


def file_stem(name: str | None, fallback: str = "benchmark") -> str:
    """A file name stem from a benchmark's name: letters, digits, dot, dash; at most 60."""
    import re

    stem = re.sub(r"[^A-Za-z0-9.-]+", "-", name or "").strip("-.")[:60]
    return stem or fallback


def existing_benchmarks(db: Database) -> Sequence[str]:
    """The benchmarks the database holds, by name."""
    from gradercal.db.repo import Repository

    return [b.name for b in Repository(db).benchmarks()]
