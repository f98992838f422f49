"""``gradercal rubric``: revise a criterion, read the versions of tasks, count stale
verdicts (issue #16; the rules in :mod:`gradercal.ops.revisions`, the storage in
:mod:`gradercal.db.revisions`).

Registered lazily by :class:`gradercal.cli.LazyGroup`.
"""

from __future__ import annotations

import getpass
from pathlib import Path
from typing import Any

import click

from gradercal.cli.common import (
    benchmark_option,
    db_option,
    emit_json,
    handle_errors,
    json_option,
    open_repo,
)

__all__ = ["rubric"]


@click.group()
def rubric() -> None:
    """Revise rubric criteria and read the versions of tasks.

    \b
    A change to a criterion's text or scale (or to the task's prompt, artifacts or
    answer format) can change verdicts: those given before stay stored but become
    stale — left out of scores, agreement and calibration (see --version on those
    commands), back in the graders' queues, and re-judged by `judge --scope stale`.
    A points-only change rescales scores; nobody grades again.
    """


@rubric.command()
@click.argument("task_id")
@click.argument("criterion_id")
@click.option("--text", help="The criterion's new text.")
@click.option("--points", type=int, help="Its new points (negative: a penalty).")
@click.option("--levels", type=click.IntRange(2, 10), help="Its new scale size (2 = met / not).")
@click.option("--tags", help="Its new tags, comma-separated ('' for none).")
@click.option("--reason", required=True, help="Why (kept in the history).")
@click.option("--actor", help="Who revises (default: your login).")
@click.option("--dry-run", is_flag=True, help="Show what would change; write nothing.")
@db_option
@benchmark_option
@json_option
@handle_errors
def revise(
    task_id: str,
    criterion_id: str,
    text: str | None,
    points: int | None,
    levels: int | None,
    tags: str | None,
    reason: str,
    actor: str | None,
    dry_run: bool,
    db: str | None,
    benchmark: str | None,
    as_json: bool,
) -> None:
    """Revise one criterion of a task: a new version of the task.

    \b
    Examples:
      gradercal rubric revise T0042 c07 --text "Names the stop codon and its position" \\
          --reason "graders split on 'notes'"
      gradercal rubric revise T0042 c07 --points 3 --reason "too heavy" --dry-run
    """
    from gradercal.cli.data import _revision_line
    from gradercal.db.revisions import RevisionStore

    if text is None and points is None and levels is None and tags is None:
        raise click.UsageError("nothing to change: give --text, --points, --levels or --tags")
    if not reason.strip():
        raise click.UsageError("--reason must not be empty")
    repo = open_repo(db)
    report = RevisionStore(repo.db).revise_criterion(
        benchmark,
        task_id,
        criterion_id,
        text=text,
        points=points,
        levels=levels,
        tags=None if tags is None else [t.strip() for t in tags.split(",") if t.strip()],
        reason=reason,
        actor=actor or getpass.getuser(),
        source="revise",
        dry_run=dry_run,
    )
    if as_json:
        emit_json(report.to_dict())
        return
    if not report.changed:
        click.echo(f"{task_id}/{criterion_id}: nothing changed (still v{report.version})")
        return
    click.echo(("would revise " if dry_run else "revised ") + _revision_line(report))


@rubric.command()
@click.argument("task_id", required=False)
@click.option(
    "--output",
    "-o",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Write the history as JSON Lines (one version per line, content included).",
)
@db_option
@benchmark_option
@json_option
@handle_errors
def history(
    task_id: str | None,
    output: Path | None,
    db: str | None,
    benchmark: str | None,
    as_json: bool,
) -> None:
    """The versions of one task (or of every revised task): what changed, why, who, when."""
    from gradercal.db.revisions import RevisionStore

    repo = open_repo(db)
    store = RevisionStore(repo.db)
    versions = store.history(benchmark, task_id) if task_id else store.all_history(benchmark)
    if output is not None:
        from gradercal.formats.v1 import write_jsonl

        n = write_jsonl(output, [v.to_dict(content=True) for v in versions])
        if not as_json:
            click.echo(f"wrote {n} versions to {output}")
            return
    if as_json:
        emit_json([v.to_dict() for v in versions])
        return
    if not versions:
        click.echo(f"{task_id or 'no task'}: never revised (version 1)")
        return
    for v in versions:
        when = v.created_at.strftime("%Y-%m-%d %H:%M") if v.created_at else "?"
        who = f" by {v.actor}" if v.actor else ""
        click.echo(f"{v.task_id} v{v.version} ({v.kind}) {when}{who}" + _why(v.reason))
        for line in _change_lines(v.changes):
            click.echo("    " + line)


def _why(reason: str | None) -> str:
    return f": {reason}" if reason else ""


def _change_lines(changes: dict[str, Any]) -> list[str]:
    out = []
    for f in changes.get("task", ()):
        out.append(f"task {f['field']} ({f['kind']})")
    for c in changes.get("criteria", ()):
        if c.get("added"):
            out.append(f"{c['id']}: added")
        elif c.get("removed"):
            out.append(f"{c['id']}: removed")
        else:
            fields = ", ".join(f"{f['field']} ({f['kind']})" for f in c.get("fields", ()))
            out.append(f"{c['id']}: {fields}")
    return out


@rubric.command()
@db_option
@benchmark_option
@json_option
@handle_errors
def stale(db: str | None, benchmark: str | None, as_json: bool) -> None:
    """Verdicts a revision made stale, per grader (people regrade in the app; the judge
    with `gradercal judge run --scope stale`)."""
    from gradercal.db.revisions import RevisionStore

    counts = RevisionStore(open_repo(db).db).stale_counts(benchmark)
    if as_json:
        emit_json(counts)
        return
    if not counts:
        click.echo("no stale verdicts")
        return
    for name, n in counts.items():
        click.echo(f"{name}: {n} stale verdicts")
