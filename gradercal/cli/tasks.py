"""The review process's commands: ``progress`` (who graded what, at what pace, what is due).

Registered lazily by :mod:`gradercal.cli` (``LazyGroup.lazy``). Every command takes
``--db``, ``--json`` and ``--help``; gradercal's own errors print ``error: …`` on stderr
with exit status 1.
"""

from __future__ import annotations

from pathlib import Path

import click

from gradercal.cli.common import benchmark_option, db_option, emit_json, handle_errors, json_option
from gradercal.errors import GradercalError

__all__ = ["progress"]

_TITLES = {"graders": "Graders", "packets": "Offline packets", "tasks": "Tasks"}


@click.command()
@db_option
@benchmark_option
@click.option(
    "--window-days",
    type=click.IntRange(1, 365),
    default=7,
    show_default=True,
    help="Recent pace: submissions of the last N days give the calendar forecast.",
)
@click.option(
    "--csv",
    "csv_dir",
    type=click.Path(path_type=Path, file_okay=False),
    metavar="DIR",
    help="Also write graders.csv, packets.csv and tasks.csv into DIR (created if needed).",
)
@click.option(
    "--tasks/--no-tasks",
    "show_tasks",
    default=False,
    help="Print the per-task table too (it is always in --json and --csv).",
)
@json_option
@handle_errors
def progress(
    db: str | None,
    benchmark: str | None,
    window_days: int,
    csv_dir: Path | None,
    show_tasks: bool,
    as_json: bool,
) -> None:
    """Grading progress: per grader assigned / done / skipped, active time, pace and
    forecast; offline packets out, overdue and returned; per task, how far grading got.

    Active time counts only while a grader gives input (a minute without a key, click or
    wheel stops the clock). The forecast extrapolates the last --window-days' pace.

    \b
      gradercal progress
      gradercal progress --tasks
      gradercal progress --csv progress/     (spreadsheet-ready tables)
      gradercal progress --json
    """
    from gradercal.cli.common import open_repo
    from gradercal.db.progress import load_progress
    from gradercal.ops.progress import records

    repo = open_repo(db)
    try:
        report = load_progress(repo.db, benchmark, window_days=window_days)
    finally:
        repo.db.dispose()
    tables = records(report)
    if csv_dir is not None:
        _write_csv(csv_dir, tables)
    if as_json:
        emit_json(report.to_dict())
        return
    _print(tables, show_tasks=show_tasks, window_days=window_days)
    if csv_dir is not None:
        click.echo(f"wrote graders.csv, packets.csv and tasks.csv to {csv_dir}")


def _write_csv(folder: Path, tables: dict[str, list[dict[str, object]]]) -> None:
    from gradercal.formats.tables import write_rows_csv
    from gradercal.ops.progress import COLUMNS

    try:
        folder.mkdir(parents=True, exist_ok=True)
        for name, rows in tables.items():
            write_rows_csv(folder / f"{name}.csv", [k for k, _h in COLUMNS[name]], rows)
    except OSError as exc:
        raise GradercalError(
            f"{folder}: cannot write the CSV files: {exc.strerror or exc}"
        ) from None


#: What the terminal shows (the CSV and JSON have every column).
_SHOWN: dict[str, tuple[tuple[str, str], ...]] = {
    "graders": (
        ("grader", "grader"),
        ("done", "done"),
        ("skipped", "skipped"),
        ("active_s", "active"),
        ("per_hour", "per hour"),
        ("active_left_s", "time left"),
        ("forecast", "forecast"),
        ("last_activity", "last activity"),
    ),
    "packets": (
        ("packet_id", "packet"),
        ("grader", "grader"),
        ("status", "status"),
        ("due_at", "due"),
        ("open", "open"),
        ("merges", "merges"),
        ("last_merged_at", "last merged"),
    ),
    "tasks": (
        ("task", "task"),
        ("workflow", "workflow"),
        ("domain", "domain"),
        ("done", "done"),
        ("graders", "graders"),
        ("status", "status"),
    ),
}


def _cell(name: str, key: str, row: dict[str, object]) -> str:
    from gradercal.ops.progress import display

    if key == "done" and name == "graders":
        return f"{_n(row['submitted']) + _n(row['skipped'])} / {row['assigned']}"
    if key == "done" and name == "tasks":
        return f"{row['done']} / {row['assigned']}"
    if key == "open":
        return f"{row['open_items']} / {row['items']}"
    if key == "packet_id":
        return str(row[key])[:8]
    return display(key, row[key])


def _print(
    tables: dict[str, list[dict[str, object]]], *, show_tasks: bool, window_days: int
) -> None:
    import sys

    from rich.console import Console
    from rich.table import Table

    console = Console(highlight=False, width=None if sys.stdout.isatty() else 120)
    for name in ("graders", "packets", "tasks"):
        rows = tables[name]
        if name == "tasks" and not show_tasks:
            counts: dict[str, int] = {}
            for r in rows:
                counts[str(r["status"])] = counts.get(str(r["status"]), 0) + 1
            order = ("graded", "grading", "not started", "not assigned")
            text = ", ".join(f"{counts[s]} {s}" for s in order if counts.get(s))
            console.print(f"Tasks: {len(rows)} ({text or 'none'}); --tasks lists them")
            continue
        if not rows:
            if name == "graders":
                console.print("No grader has assignments yet: run `gradercal assign` first.")
            elif name == "packets":
                console.print("No offline packets exported.")
            continue
        title = _TITLES[name]
        if name == "graders":
            title += f" (active time only; forecast from the last {window_days} days' pace; UTC)"
        t = Table(title=title, title_justify="left")
        for key, heading in _SHOWN[name]:
            left = key in ("grader", "packet_id", "status", "task", "workflow", "domain")
            t.add_column(heading, justify="left" if left else "right", no_wrap=key != "domain")
        for i, r in enumerate(rows):
            last = name == "graders" and i == len(rows) - 1
            t.add_row(
                *(_cell(name, k, r) for k, _h in _SHOWN[name]), style="bold" if last else None
            )
        console.print(t)


def _n(value: object) -> int:
    return value if isinstance(value, int) else 0
