"""Operations commands: ``assign``, ``packet export|merge|info|conflicts|resolve``, ``backup``,
``check``.

Registered lazily by :mod:`gradercal.cli` (``LazyGroup.lazy``), so ``gradercal --help``
does not import the database layer. Every command takes ``--db``, ``--json`` and
``--help``; gradercal's own errors print ``error: …`` on stderr with exit status 1 and
leave the database unchanged.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from gradercal.cli.common import db_option, emit_json, fail, handle_errors, json_option
from gradercal.model import verdict_word

if TYPE_CHECKING:
    from datetime import datetime

    from gradercal.db.session import Database

__all__ = ["assign", "backup", "check", "packet"]

benchmark_option = click.option(
    "--benchmark", "-b", metavar="NAME", help="Benchmark to use when the database holds several."
)


def _open(db: str | None) -> Database:
    from gradercal.db.session import open_database

    return open_database(db, create=False)


def _split(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


# -- assign ------------------------------------------------------------------------------------
@click.command()
@db_option
@benchmark_option
@click.option(
    "--graders",
    required=True,
    metavar="A,B,C",
    help="Comma-separated grader names; new names are created as human graders.",
)
@click.option(
    "--overlap",
    "-k",
    required=True,
    type=click.IntRange(1),
    help="Graders per response (outside the calibration subset).",
)
@click.option(
    "--strategy",
    type=click.Choice(["uniform", "active"]),
    default="uniform",
    show_default=True,
    help="uniform: every response (or, with --budget N, a uniform batch of N drawn among "
    "the responses without an assignment); active: draw --budget responses where the "
    "judge is least sure (Poisson sampling, probabilities stored for the estimates).",
)
@click.option(
    "--budget",
    type=click.IntRange(1),
    metavar="N",
    help="Expected number of responses drawn among those without an assignment (active; "
    "with uniform, a uniform batch: each drawn with probability N/n, as the window's "
    "Where to grade next does).",
)
@click.option(
    "--floor",
    type=click.FloatRange(0.0, 1.0),
    metavar="PI_MIN",
    help="Active: every candidate's least probability (default: a quarter of budget/n).",
)
@click.option(
    "--calibration-fraction",
    default=0.0,
    show_default=True,
    type=click.FloatRange(0.0, 1.0),
    help="Share of responses graded by every grader (first in every queue).",
)
@click.option(
    "--stratify",
    default="",
    metavar="KEYS",
    help="Balance each grader's load over these attributes: workflow, domain, "
    "answer_format, model (comma-separated).",
)
@click.option(
    "--unit",
    type=click.Choice(["response", "task"]),
    default="response",
    show_default=True,
    help="Assign responses independently, or whole tasks (a grader then sees every "
    "response of a task).",
)
@click.option(
    "--seed", required=True, metavar="S", help="Any text; the same seed, the same design."
)
@json_option
@handle_errors
def assign(
    db: str | None,
    benchmark: str | None,
    graders: str,
    overlap: int,
    strategy: str,
    budget: int | None,
    floor: float | None,
    calibration_fraction: float,
    stratify: str,
    unit: str,
    seed: str,
    as_json: bool,
) -> None:
    """Decide who grades which response: K graders each, balanced, reproducible.

    Each response outside the calibration subset gets OVERLAP graders; the calibration
    subset is graded by everyone. Loads are balanced within every stratum. Applying the
    same design again changes nothing; existing assignments are never changed or removed.

    \b
    Example:
      gradercal assign --graders ana,ben,chloe --overlap 2 \\
          --calibration-fraction 0.1 --stratify workflow,model --seed 2024
    """
    from gradercal.db.assignments import assign as run_assign

    if strategy == "active" or budget is not None:
        if strategy == "uniform" and floor is not None:
            raise click.UsageError("--floor applies to --strategy active only")
        _assign_active(
            db, benchmark, graders, overlap, budget, floor, seed, as_json, strategy == "uniform"
        )
        return
    if floor is not None:
        raise click.UsageError("--floor applies to --strategy active only")
    database = _open(db)
    try:
        report = run_assign(
            database,
            _split(graders),
            overlap,
            calibration_fraction=calibration_fraction,
            stratify=_split(stratify),
            seed=seed,
            benchmark=benchmark,
            unit="task" if unit == "task" else "response",
        )
    finally:
        database.dispose()
    if as_json:
        emit_json(report.to_dict())
        return
    d = report.design
    click.echo(
        f"benchmark {report.benchmark!r}: {d['n_responses']} responses, "
        f"{d['n_assignments']} assignments ({d['n_calibration_responses']} responses "
        f"graded by everyone), overlap {d['overlap']}, seed {d['seed']!r}"
    )
    for row in d["graders_detail"]:
        click.echo(
            f"  {row['grader']}: {row['responses']} responses ({row['calibration']} calibration)"
        )
    if report.graders_created:
        click.echo("new graders: " + ", ".join(report.graders_created))
    if not report.changed:
        click.echo("already applied: the database is unchanged")
    else:
        click.echo(f"created {report.assignments_created} assignments")
    for name, n in report.outside_design.items():
        click.echo(
            f"note: {name} already had {n} assignments outside this design (kept; "
            "they were probably created when the app was opened before assigning)"
        )
    if report.assignments_differing:
        click.echo(
            f"note: {report.assignments_differing} existing assignments differ from this "
            "design (position or calibration) and were left as they are"
        )


def _assign_active(
    db: str | None,
    benchmark: str | None,
    graders: str,
    overlap: int,
    budget: int | None,
    floor: float | None,
    seed: str,
    as_json: bool,
    uniform: bool = False,
) -> None:
    from gradercal.db.assignments import assign_active

    if budget is None:
        raise click.UsageError(
            "--strategy active needs --budget N (the expected number of responses drawn)"
        )
    database = _open(db)
    try:
        report, summary = assign_active(
            database,
            _split(graders),
            overlap,
            budget,
            floor=floor,
            seed=seed,
            benchmark=benchmark,
            uniform=uniform,
        )
    finally:
        database.dispose()
    if as_json:
        emit_json({**report.to_dict(), **summary})
        return
    how = "uniformly" if uniform else f"floor {summary['floor']:.4g}"
    click.echo(
        f"benchmark {report.benchmark!r}: drew {summary['n_assigned']} of "
        f"{summary['n_candidates']} unassigned responses (expected {summary['budget']}, "
        f"Poisson sampling, {how}), overlap {overlap}, seed {seed!r}; "
        f"created {report.assignments_created} assignments"
    )
    click.echo(
        "the sampling probabilities are stored with the assignments (graders never see them)"
    )


# -- packets -----------------------------------------------------------------------------------
@click.group()
def packet() -> None:
    """Offline grading packets: export one grader's work, merge it back.

    \b
      gradercal packet export --grader ana -o ana.gcpkg
      gradercal gui ana.gcpkg                 (grade offline)
      gradercal packet merge ana.gcpkg
      gradercal packet conflicts              (changed on both sides)
      gradercal packet resolve ID --keep packet
    """


@packet.command(name="export")
@db_option
@benchmark_option
@click.option("--grader", "-g", required=True, metavar="NAME", help="Whose assignments.")
@click.option(
    "-o",
    "--output",
    required=True,
    type=click.Path(path_type=Path, dir_okay=False),
    help="The packet file to write (NAME.gcpkg).",
)
@click.option(
    "--due",
    metavar="DATE",
    help="When the work is due back: YYYY-MM-DD (end of that day, UTC), an ISO time, "
    "or +N for N days from now. `gradercal progress` lists packets past it as overdue.",
)
@json_option
@handle_errors
def packet_export(
    db: str | None,
    benchmark: str | None,
    grader: str,
    output: Path,
    due: str | None,
    as_json: bool,
) -> None:
    """Write one grader's assignments to a packet file for offline grading.

    The packet holds the grader's assignments with their tasks, rubrics, artifacts and
    responses (models replaced by codes) and the grader's own judgments so far — no
    other grader's work, no judge verdicts, no adjudications.
    """
    from gradercal.db.packets import export_packet

    database = _open(db)
    try:
        report = export_packet(database, grader, output, benchmark=benchmark, due_at=_due(due))
    finally:
        database.dispose()
    if as_json:
        emit_json(report.to_dict())
        return
    click.echo(
        f"wrote {report.path}: {report.assignments} responses of {report.tasks} tasks for "
        f"{report.grader!r} ({report.artifacts} artifacts, {report.judgments} judgments so far, "
        f"{report.bytes / 1e6:.1f} MB)"
    )


def _due(text: str | None) -> datetime | None:
    """``--due``: YYYY-MM-DD (the end of that day, UTC), an ISO time, or +N days."""
    from datetime import UTC, datetime, time, timedelta

    if text is None:
        return None
    value = text.strip()
    try:
        if value.startswith("+"):
            days = int(value[1:])
            if not 0 <= days <= 3650:
                raise ValueError
            return datetime.now(UTC) + timedelta(days=days)
        if len(value) == 10:
            day = datetime.strptime(value, "%Y-%m-%d").date()
            return datetime.combine(day, time(23, 59, 59), UTC)
        when = datetime.fromisoformat(value.replace("Z", "+00:00"))
        return when if when.tzinfo is not None else when.replace(tzinfo=UTC)
    except ValueError:
        raise click.BadParameter(
            f"{text!r} is not a date: use YYYY-MM-DD, an ISO time or +N (days from now)",
            param_hint="--due",
        ) from None


@packet.command(name="merge")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path, dir_okay=False))
@db_option
@json_option
@handle_errors
def packet_merge(files: tuple[Path, ...], db: str | None, as_json: bool) -> None:
    """Bring packets' judgments back into the database they were exported from.

    Merging again changes nothing. A judgment changed both in the packet and in the
    database since the export is a conflict: the database keeps its value, the
    packet's is stored beside it, and both are listed. A damaged, altered or foreign
    packet is refused and the database is left as it was by it (each packet is merged
    on its own: one refused packet does not stop the others).

    Prints one line per packet, in the order given: what it brought (or "nothing
    new", or why it was refused); conflicts, notes and warnings follow on standard
    error. The exit status is 1 when any packet was refused. With --json: one packet's
    report as an object (as before), several as a list of them, a refused packet as
    {"path", "error"}.
    """
    from gradercal.db.packets import merge_packet
    from gradercal.errors import GradercalError

    database = _open(db)
    results: list[tuple[Path, Any]] = []  # (file, MergeReport or the error's message)
    try:
        for file in files:
            if len(files) == 1:  # one packet: its error is the command's (as before)
                results.append((file, merge_packet(database, file)))
                continue
            try:
                results.append((file, merge_packet(database, file)))
            except GradercalError as exc:
                results.append((file, str(exc)))
            if not as_json:
                _echo_merge(*results[-1])
    finally:
        database.dispose()
    refused = [f for f, r in results if isinstance(r, str)]
    if as_json:
        dicts = [
            {"path": str(f), "error": r} if isinstance(r, str) else r.to_dict() for f, r in results
        ]
        emit_json(dicts[0] if len(files) == 1 else dicts)
    elif len(files) == 1:
        _echo_merge(*results[0])
    if refused:
        fail(
            f"{len(refused)} of {len(files)} packets refused (nothing merged from "
            f"{'it' if len(refused) == 1 else 'them'}): {', '.join(f.name for f in refused)}"
        )
        raise SystemExit(1)


def merge_line(name: str, report: Any) -> str:
    """One line: what merging packet ``name`` did (a :class:`MergeReport`) or, for a
    string, why it was refused."""
    if isinstance(report, str):
        return f"{name}: refused: {report}"
    r = report
    grader = f"({r.grader!r})"
    if not r.changed:
        detail = f"{r.judgments_already} judgments already merged"
        if r.conflicts:
            detail += f", {len(r.conflicts)} conflicts kept from before"
        return f"{name} {grader}: nothing new, the database is unchanged ({detail})"
    parts = [
        f"{r.judgments_added} judgments added, {r.judgments_updated} updated, "
        f"{r.judgments_already} already merged, {r.judgments_unchanged} unchanged since export",
        f"{r.assignments_updated} queue items updated",
    ]
    if r.judgments_confirmed:
        parts.insert(1, f"{r.judgments_confirmed} stale judgments confirmed under the revision")
    if r.reopens_added:
        parts.append(f"{r.reopens_added} reopenings recorded")
    if r.reviews_added or r.reviews_updated:
        parts.append(f"task reviews {r.reviews_added} added, {r.reviews_updated} updated")
    if r.conflicts:
        parts.append(f"{len(r.conflicts)} conflicts ({r.new_conflicts} new)")
    return f"{name} {grader}: merged: " + "; ".join(parts)


def _echo_merge(file: Path, report: Any) -> None:
    """The packet's line on standard output, its details on standard error."""
    click.echo(merge_line(str(file), report))
    if isinstance(report, str):
        return
    if report.conflicts:
        click.secho(
            f"{file.name}: {len(report.conflicts)} conflicts ({report.new_conflicts} new): "
            "both versions kept, the database's value stays current "
            "(see `gradercal packet conflicts`)",
            fg="yellow",
            err=True,
        )
        for c in report.conflicts[:50]:
            where = " / ".join(x for x in (c.task_id, c.response_id, c.criterion_id) if x)
            click.echo(
                f"  {c.kind} {where}: database {_short(c.database)} · packet {_short(c.packet)}",
                err=True,
            )
    for note in report.ignored:
        click.secho(f"{file.name}: note: {note}", fg="yellow", err=True)
    for warning in report.warnings:
        click.secho(f"{file.name}: warning: {warning}", fg="yellow", err=True)


def _short(value: Any) -> str:
    if isinstance(value, dict) and "met" in value:
        verdict = verdict_word(value.get("met"))
        if value.get("level") is not None:
            verdict += f" (level {value['level']})"
        return verdict
    if isinstance(value, dict) and "status" in value:
        return str(value["status"])
    text = str(value)
    return text if len(text) <= 60 else text[:57] + "…"


@packet.command(name="info")
@click.argument("file", type=click.Path(path_type=Path, dir_okay=False))
@db_option
@click.option(
    "--check-seal/--no-check-seal",
    default=False,
    help="Also check that the packet belongs to --db and was not altered.",
)
@json_option
@handle_errors
def packet_info_cmd(file: Path, db: str | None, check_seal: bool, as_json: bool) -> None:
    """Check a packet file (archive safety, hashes) and describe it."""
    from gradercal.db.packets import packet_info

    database = _open(db) if check_seal else None
    try:
        info = packet_info(file, database)
    finally:
        if database is not None:
            database.dispose()
    if as_json:
        emit_json(info)
        return
    counts = info.get("counts", {})
    click.echo(
        f"{file}: packet for {info['grader']!r}, benchmark {info['benchmark']!r}, "
        f"{counts.get('assignments', '?')} responses, saved {info['generation']} times "
        f"(last {info['saved_at']}); verified: {info['verified']}"
    )


@packet.command(name="conflicts")
@db_option
@click.option("--grader", "-g", metavar="NAME", help="Only this grader's conflicts.")
@click.option("--all", "show_all", is_flag=True, help="Also list conflicts already resolved.")
@json_option
@handle_errors
def packet_conflicts(db: str | None, grader: str | None, show_all: bool, as_json: bool) -> None:
    """List packet values kept beside the database's because both had changed.

    Open conflicts only, unless --all. Settle one with `gradercal packet resolve ID`.
    """
    from gradercal.db.packets import list_conflicts

    database = _open(db)
    try:
        rows = list_conflicts(database, grader=grader, include_resolved=show_all)
    finally:
        database.dispose()
    if as_json:
        emit_json(rows)
        return
    if not rows:
        click.echo("no conflicts" if show_all else "no open conflicts")
    for r in rows:
        where = " / ".join(
            str(x) for x in (r.get("task_id"), r.get("response_id"), r.get("criterion_id")) if x
        )
        line = (
            f"#{r['id']} {r.get('grader')}: {r['kind']} {where}: "
            f"database {_short(r.get('database'))} · packet {_short(r.get('packet'))}"
        )
        if r["resolution"] is not None:
            res = r["resolution"]
            line += f" — resolved by {res['by']}: kept {res['keep']}"
        elif r.get("current") is not None and _comparable(r["current"]) != r.get("database"):
            line += f" — now {_short(r['current'])} (changed since)"
        click.echo(line)


def _comparable(current: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in current.items() if k != "revision"}


def _keep_value(text: str) -> tuple[str, dict[str, Any] | None]:
    """``database``, ``packet``, ``met``, ``not-met`` or ``level:N`` → (keep, value)."""
    word = text.strip().lower().replace("_", "-")
    if word in ("database", "packet"):
        return word, None
    if word == "met":
        return "value", {"met": True, "level": None}
    if word in ("not-met", "unmet"):
        return "value", {"met": False, "level": None}
    if word.startswith("level:"):
        try:
            return "value", {"met": None, "level": int(word.split(":", 1)[1])}
        except ValueError:
            pass
    raise click.BadParameter(
        "use database, packet, met, not-met or level:N (e.g. level:1)", param_hint="--keep"
    )


@packet.command(name="resolve")
@click.argument("conflict_id", metavar="ID", type=int)
@db_option
@click.option(
    "--keep",
    required=True,
    metavar="WHICH",
    help="database (the current value stays), packet (the packet's value is written), "
    "or a new verdict: met, not-met, level:N.",
)
@click.option("--note", metavar="TEXT", help="Why; kept with the decision.")
@click.option(
    "--by",
    metavar="NAME",
    default="coordinator",
    show_default=True,
    help="Who decides (kept in the history).",
)
@click.option(
    "--force",
    is_flag=True,
    help="Resolve even if the database's value changed after the conflict was recorded.",
)
@json_option
@handle_errors
def packet_resolve(
    conflict_id: int,
    db: str | None,
    keep: str,
    note: str | None,
    by: str,
    force: bool,
    as_json: bool,
) -> None:
    """Settle one conflict listed by `gradercal packet conflicts` (its #ID).

    The value replaced is kept in the history, and so is the decision (what was kept,
    by whom, the note); the conflict is then listed as resolved. Merging the packet
    again changes nothing.

    \b
    Example:
      gradercal packet resolve 412 --keep packet --note "ana re-read the figure"
    """
    from gradercal.db.packets import resolve_conflict

    which, value = _keep_value(keep)
    database = _open(db)
    try:
        result = resolve_conflict(
            database, conflict_id, which, value=value, note=note, by=by, force=force
        )
    finally:
        database.dispose()
    if as_json:
        emit_json(result.to_dict())
        return
    if result.changed:
        click.echo(
            f"conflict #{conflict_id} resolved: {result.kind} is now {_short(result.value)} "
            f"(was {_short(result.previous)}; the old value is kept in its history)"
        )
    else:
        click.echo(
            f"conflict #{conflict_id} resolved: the database's value {_short(result.value)} stays"
        )


# -- backup and check --------------------------------------------------------------------------
@click.command()
@db_option
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Backup file (default: next to a SQLite database, NAME.backup-<time>.sqlite; "
    "for PostgreSQL ./gradercal-<db>-<time>.dump).",
)
@json_option
@handle_errors
def backup(db: str | None, output: Path | None, as_json: bool) -> None:
    """Make a consistent backup while others keep working.

    SQLite: the online backup API, verified before it is renamed into place.
    PostgreSQL: pg_dump (custom format; restore with pg_restore).
    """
    from gradercal.db.maintenance import backup as run_backup

    database = _open(db)
    try:
        report = run_backup(database, output)
    finally:
        database.dispose()
    if as_json:
        emit_json(report.to_dict())
        return
    click.echo(
        f"backed up {report.database} to {report.path} "
        f"({report.bytes / 1e6:.1f} MB, {report.method}, {report.verified})"
    )


@click.command()
@db_option
@click.option("--quick", is_flag=True, help="SQLite quick_check instead of integrity_check.")
@click.option("--no-blobs", is_flag=True, help="Do not re-hash the artifacts' bytes.")
@click.option(
    "--undo-import",
    is_flag=True,
    help="First remove what an interrupted import wrote (SQLite; refused while it still runs).",
)
@json_option
@handle_errors
def check(db: str | None, quick: bool, no_blobs: bool, undo_import: bool, as_json: bool) -> None:
    """Check the database: integrity, orphan rows, artifact hashes, unfinished imports.
    Exit status 1 on problems.

    Reads only (except with --undo-import). A damaged SQLite file is opened read-only
    (never migrated or written) and reported.
    """
    from gradercal.db.maintenance import check as run_check
    from gradercal.db.maintenance import open_checked, undo_unfinished_imports

    opened = open_checked(db, create=False)
    try:
        undone = undo_unfinished_imports(opened.db) if undo_import else []
        report = run_check(opened.db, quick=quick, blobs=not no_blobs)
    finally:
        opened.db.dispose()
    if as_json:
        out = report.to_dict()
        out["opened_read_only"] = opened.read_only
        out["imports_undone"] = [
            {
                "import": u.header.describe(),
                "rows_deleted": u.rows_deleted,
                "judgments_kept": u.judgments_kept,
                "blobs_deleted": u.blobs_deleted,
                "graders_deleted": u.graders_deleted,
                "benchmark_deleted": u.benchmark_deleted,
            }
            for u in undone
        ]
        emit_json(out)
    else:
        if opened.message:
            click.secho(opened.message, fg="yellow", err=True)
        for u in undone:
            rows = sum(u.rows_deleted.values())
            kept = f"; kept {u.judgments_kept} judgments graded since" if u.judgments_kept else ""
            click.echo(f"undid {u.header.describe()}: removed {rows} rows{kept}")
        if report.ok:
            click.echo(
                f"{report.database}: ok ({len(report.checks)} checks, "
                f"{report.blobs_checked} artifact files re-hashed)"
            )
        for p in report.problems:
            click.secho(f"problem: {p.check}: {p.message}", fg="red", err=True)
    if not report.ok:
        raise SystemExit(1)
