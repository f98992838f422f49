"""The review process's commands: ``progress`` (who graded what, at what pace, what is due)
and ``tasks`` (acceptance rounds: status, agreement, survey, and the coordinator's
decisions; the rules are :mod:`gradercal.ops.acceptance`, the storage
:mod:`gradercal.db.acceptance`).

Registered lazily by :mod:`gradercal.cli` (``LazyGroup.lazy``). Every command takes
``--db``, ``--json`` and ``--help``; gradercal's own errors print ``error: …`` on stderr
with exit status 1.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click

from gradercal._util.numbers import fixed
from gradercal.cli.common import (
    benchmark_option,
    db_option,
    emit_json,
    handle_errors,
    json_option,
    text_console,
)
from gradercal.errors import GradercalError
from gradercal.stats.catalogue import view

__all__ = ["progress", "tasks"]

#: The statistics an acceptance bar may use: the catalogue's view, as in
#: gradercal.ops.acceptance (the catalogue loads no pandas, so --help stays light).
_ACCEPT_STATISTICS = view("acceptance")

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
@click.option(
    "--judge",
    "-j",
    metavar="NAME",
    help="Add the anytime-valid confidence sequences of the headline figures (per model "
    "mean score and pass rate with this judge, agreement, decisions at the bar).",
)
@json_option
@handle_errors
def progress(
    db: str | None,
    benchmark: str | None,
    window_days: int,
    csv_dir: Path | None,
    show_tasks: bool,
    judge: str | None,
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
    seq: dict[str, Any] | None = None
    try:
        report = load_progress(repo.db, benchmark, window_days=window_days)
        if judge is not None:
            seq = _sequences(repo, benchmark, judge)
    finally:
        repo.db.dispose()
    tables = records(report)
    if csv_dir is not None:
        _write_csv(csv_dir, tables)
    if as_json:
        out = report.to_dict()
        if seq is not None:
            out["sequential"] = seq
        emit_json(out)
        return
    _print(tables, show_tasks=show_tasks, window_days=window_days)
    if seq is not None:
        _print_sequences(seq)
    if csv_dir is not None:
        click.echo(f"wrote graders.csv, packets.csv and tasks.csv to {csv_dir}")


def _sequences(repo: Any, benchmark: str | None, judge: str) -> dict[str, Any]:
    """The confidence sequences of the headline figures
    (:func:`gradercal.analysis.sequential_report.sequential_report`)."""
    from gradercal.analysis.sequential_report import sequential_report
    from gradercal.db.completion import consensus_completion_times

    bench = repo.benchmark(benchmark)
    frames = repo.load_frames(bench.name)
    if judge not in set(frames.judgments["grader"]):
        raise GradercalError(f"no grader {judge!r} in benchmark {bench.name!r}")
    times = consensus_completion_times(repo.db, bench.id)
    return sequential_report(frames, judge, times=times)


def _print_sequences(seq: dict[str, Any]) -> None:
    console = text_console(width=120)
    labels = {"mean_score": "mean score", "pass_rate": "pass rate"}
    for model, figs in seq["models"].items():
        for fig, label in labels.items():
            w = figs[fig]["half_width"]
            if w is not None:
                console.print(f"model {model}'s {label} is known to ±{w:.3f} (anytime-valid)")
    ag = seq["agreement"]
    if ag.get("half_width") is not None:
        console.print(
            f"judge–consensus percent agreement {ag['estimate']:.3f} is known to "
            f"±{ag['half_width']:.3f} (anytime-valid; a bounded mean, not κ)"
        )
    for t in seq["tasks"]:
        if t["decided"]:
            console.print(
                f"task {t['task_id']}: more grading will not change this task's decision at the "
                f"bar {seq['bar']:g} (agreement {t['cs'][0]:.3f}–{t['cs'][1]:.3f}, {t['decided']})"
            )


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
    from rich.table import Table

    console = text_console(width=120)
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


# -- acceptance rounds ------------------------------------------------------------------------
_STATUS_CHOICE = click.Choice(["draft", "in-review", "needs-revision", "accepted", "rejected"])


def _status_arg(value: str | None) -> str | None:
    return None if value is None else value.replace("-", " ")


@click.group(invoke_without_command=True)
@db_option
@benchmark_option
@click.option("--status", type=_STATUS_CHOICE, help="Only the tasks with this status.")
@json_option
@click.pass_context
@handle_errors
def tasks(
    ctx: click.Context, db: str | None, benchmark: str | None, status: str | None, as_json: bool
) -> None:
    """Task acceptance rounds: per task its status (draft, in review, needs revision,
    accepted, rejected), its round, the reviewers' agreement with its interval, the
    survey means, and whether it is proposed for acceptance (or why not).

    A round is proposed when the agreement reaches the bar and every survey statement
    its threshold (`gradercal tasks settings`). The coordinator decides:

    \b
      gradercal tasks                         (every task)
      gradercal tasks --status in-review --json
      gradercal tasks open T1                 (start round 1; or the next after a revision)
      gradercal tasks accept T1 --note "clear and well graded"
      gradercal tasks reopen T1 --note "criterion c3 is ambiguous"   (send back)
      gradercal tasks reject T1 --note "not answerable from the data"
      gradercal tasks settings --bar 0.85 --statistic gwet_ac1
    """
    if ctx.invoked_subcommand is not None:
        return
    from gradercal.cli.common import open_repo
    from gradercal.db.acceptance import load_acceptance

    repo = open_repo(db)
    try:
        acc = load_acceptance(repo.db, benchmark, status=_status_arg(status))
    finally:
        repo.db.dispose()
    if as_json:
        emit_json(acc.to_dict())
        return
    _print_acceptance(acc)


_fmt = fixed


def _agreement_text(measure: Any) -> str:
    text = _fmt(measure.value)
    if measure.value is not None and measure.low is not None and measure.high is not None:
        text += f" [{_fmt(measure.low)}, {_fmt(measure.high)}]"
    return text


def _survey_text(survey: Mapping[str, float | None]) -> str:
    from gradercal.model import REVIEW_DIMENSIONS

    return " ".join(_fmt(survey.get(d.key), 1) for d in REVIEW_DIMENSIONS)


def _print_acceptance(acc: Any) -> None:
    from rich.table import Table

    from gradercal.ops.acceptance import statistic_label

    console = text_console(width=140)
    s = acc.settings
    counts = ", ".join(f"{n} {k}" for k, n in acc.counts().items() if n)
    console.print(
        f"Tasks of {acc.benchmark}: {len(acc.tasks)} ({counts or 'none'}). Bar: "
        f"{statistic_label(s.statistic)} "
        + ("≥" if s.rule == "point" else "interval's lower end ≥")
        + f" {s.bar:g}; survey means ≥ "
        + ", ".join(f"{k} {v:g}" for k, v in s.survey_min.items())
    )
    if not acc.tasks:
        return
    t = Table(title_justify="left")
    for heading, right in (
        ("task", False),
        ("status", False),
        ("round", True),
        ("agreement [interval]", True),
        ("survey (RR RS G ST)", True),
        ("proposed / why not", False),
    ):
        t.add_column(heading, justify="right" if right else "left")
    for task in acc.tasks:
        if task.state in ("accepted", "rejected", "needs_revision"):
            verdict = f"decided: {task.status}" + (f" — {task.note}" if task.note else "")
        elif task.proposed:
            verdict = "proposed"
        else:
            verdict = task.reasons[0] if task.reasons else ""
            if task.waiting and task.round is not None:
                verdict += f" ({task.waiting[0]})"
        if task.at_bar is not None and task.at_bar.probability is not None:
            verdict += f"; {task.at_bar.text()}"
        t.add_row(
            task.task,
            task.status,
            "—" if task.round is None else f"{task.round} {task.state}",
            _agreement_text(task.measure),
            _survey_text(task.survey),
            verdict,
        )
    console.print(t)


def _decide(action: str, help_text: str, note_required: bool) -> click.Command:
    @click.command(name=action, help=help_text)
    @db_option
    @benchmark_option
    @click.argument("task_id", metavar="ID")
    @click.option(
        "--note",
        required=note_required,
        metavar="TEXT",
        help="Why (kept with the round and in its history)."
        + (" Required." if note_required else ""),
    )
    @click.option(
        "--actor",
        metavar="NAME",
        help="Who decides (default: your login; in team mode always the session user).",
    )
    @click.option("--force", is_flag=True, help=_FORCE_HELP.get(action, "Override a judgement."))
    @json_option
    @handle_errors
    def command(
        db: str | None,
        benchmark: str | None,
        task_id: str,
        note: str | None,
        actor: str | None,
        force: bool,
        as_json: bool,
    ) -> None:
        from gradercal.cli.common import open_repo
        from gradercal.db.acceptance import act

        repo = open_repo(db)
        try:
            after = act(
                repo.db,
                benchmark,
                task_id,
                action,
                note=note,
                actor=actor or _login(),
                force=force,
            )
        finally:
            repo.db.dispose()
        if as_json:
            emit_json(after.to_dict())
            return
        click.echo(f"{after.task}: {after.status} (round {after.round}, {after.state})")

    return command


_FORCE_HELP = {
    "open": "No effect (opening a round is never a judgement).",
    "close": "Close the round even if reviewers have not finished grading or the survey.",
    "accept": "Accept a task that is not proposed, has no round, was sent back, or whose "
    "reviewers are still at work (the round closes as it stands).",
    "reject": "Reject a task without a round, one sent back, or one whose reviewers are "
    "still at work (the round closes as it stands).",
    "reopen": "Send back while reviewers are still at work (the round closes as it stands).",
}


def _login() -> str:
    import getpass

    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return "coordinator"


for _action, _help, _required in (
    (
        "open",
        "Open the task's next review round: round 1 of a draft, or the next round of a task "
        "sent back for revision (its reviewers' queue items on it become pending again).",
        False,
    ),
    (
        "close",
        "Close the open round: measure the agreement and survey and keep those numbers "
        "with the round (accept, reject and reopen close a ready round themselves).",
        False,
    ),
    (
        "accept",
        "Accept the task (its round must be proposed: agreement at the bar, survey at its "
        "thresholds; --force otherwise). A ready open round is closed first.",
        False,
    ),
    (
        "reject",
        "Reject the task for good, with a note saying why. A ready open round is closed first.",
        True,
    ),
    (
        "reopen",
        "Send the task back for revision with a note (status: needs revision); also "
        "reopens an accepted or rejected task. `tasks open ID` starts the next round.",
        True,
    ),
):
    tasks.add_command(_decide(_action, _help, _required))


@tasks.command(name="settings")
@db_option
@benchmark_option
@click.option("--bar", type=click.FloatRange(-1.0, 1.0), help="Agreement needed (default 0.90).")
@click.option(
    "--statistic",
    type=click.Choice(list(_ACCEPT_STATISTICS)),
    help="The agreement statistic (default percent_agreement).",
)
@click.option(
    "--min-rounds",
    type=click.IntRange(1, 20),
    help="Rounds that must pass in a row before a task is proposed (default 1).",
)
@click.option(
    "--survey-min",
    "survey_min",
    multiple=True,
    metavar="STATEMENT=X",
    help="Threshold of a survey statement's mean (1–5, default 4), e.g. grounded=4.5; repeatable.",
)
@click.option("--n-boot", type=click.IntRange(0, 100_000), help="Bootstrap resamples (2000).")
@click.option(
    "--ci",
    type=click.FloatRange(0.0, 1.0, min_open=True, max_open=True),
    help="Confidence level of the interval (0.95).",
)
@click.option("--seed", type=int, help="Bootstrap seed (0).")
@click.option(
    "--rule",
    type=click.Choice(["point", "interval"]),
    help="How the agreement must reach the bar: its point estimate (point, the default) "
    "or its interval's lower end (interval).",
)
@json_option
@handle_errors
def settings_command(
    db: str | None,
    benchmark: str | None,
    bar: float | None,
    statistic: str | None,
    min_rounds: int | None,
    survey_min: tuple[str, ...],
    n_boot: int | None,
    ci: float | None,
    seed: int | None,
    rule: str | None,
    as_json: bool,
) -> None:
    """Show the benchmark's acceptance settings, or change the ones given (the others stay).

    \b
      gradercal tasks settings
      gradercal tasks settings --bar 0.85 --statistic gwet_ac1 --min-rounds 2
      gradercal tasks settings --survey-min grounded=4.5
      gradercal tasks settings --rule interval --bar 0.8
    """
    from gradercal.cli.common import open_repo
    from gradercal.db.acceptance import load_settings, save_settings
    from gradercal.ops.acceptance import statistic_label

    thresholds: dict[str, float] = {}
    for item in survey_min:
        key, sep, value = item.partition("=")
        try:
            thresholds[key.strip()] = float(value)
        except ValueError:
            sep = ""
        if not sep:
            raise GradercalError(f"--survey-min {item!r}: write STATEMENT=NUMBER, e.g. grounded=4")
    changes = {
        "bar": bar,
        "statistic": statistic,
        "min_rounds": min_rounds,
        "survey_min": thresholds or None,
        "n_boot": n_boot,
        "ci": ci,
        "seed": seed,
        "rule": rule,
    }
    repo = open_repo(db)
    try:
        if any(v is not None for v in changes.values()):
            s = save_settings(repo.db, benchmark, **changes)
        else:
            s = load_settings(repo.db, benchmark)
    finally:
        repo.db.dispose()
    if as_json:
        emit_json(s.to_dict())
        return
    click.echo(f"bar: {s.bar:g} ({statistic_label(s.statistic)}, statistic {s.statistic})")
    click.echo(f"min rounds: {s.min_rounds}")
    for k, v in s.survey_min.items():
        click.echo(f"survey {k}: mean ≥ {v:g}")
    click.echo(
        f"rule: {s.rule} ("
        + ("the point estimate" if s.rule == "point" else "the interval's lower end")
        + " must reach the bar)"
    )
    if s.statistic in ("percent_agreement", "bennett_s"):
        how = "clustered Wilson interval over criteria" + (
            " (n_boot 0: none)" if not s.n_boot else ""
        )
    else:
        how = f"expanded percentile bootstrap over criteria, {s.n_boot} resamples"
    click.echo(f"interval: {s.ci:g}, {how}")
