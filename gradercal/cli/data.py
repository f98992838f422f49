"""Commands on the benchmark's data: ``init``, ``import``, ``benchmarks``, ``scores``,
``export`` and ``samples generate``.

Registered lazily by :class:`gradercal.cli.LazyGroup`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from gradercal._util.numbers import percent
from gradercal.errors import GradercalError

if TYPE_CHECKING:
    import pandas as pd


from gradercal.cli.common import (
    BREAKDOWNS,
    attach_calibrated,
    benchmark_option,
    db_option,
    db_option_unused,
    emit_json,
    handle_errors,
    json_option,
    open_repo,
    print_calibrated,
    progress_bar,
    revision_line,
    text_console,
    version_option,
    version_used,
    with_version,
)


@click.command()
@db_option
@json_option
@handle_errors
def init(db: str | None, as_json: bool) -> None:
    """Create the database (or upgrade it to the current schema)."""
    from gradercal.db.session import head_revision

    repo = open_repo(db, create=True)
    info = {"database": repo.db.display, "schema_revision": head_revision()}
    if as_json:
        emit_json(info)
    else:
        click.echo(f"database ready: {info['database']} (schema {info['schema_revision']})")


@click.command(name="import")
@click.argument("path", type=click.Path(path_type=Path))
@db_option
@benchmark_option
@click.option(
    "--map",
    "column_map",
    multiple=True,
    metavar="FIELD=COLUMN",
    help="A table's column for a gradercal field, e.g. --map response_id=item "
    "--map grader=rater (repeat, or comma-separate). Tables only.",
)
@click.option(
    "--revise",
    is_flag=True,
    help="Tasks already stored that differ become new versions of themselves (prompt, "
    "artifacts, rubric); verdicts a change can affect become stale and go back to the "
    "graders' queues. Without it, a changed task is refused.",
)
@click.option(
    "--reason",
    metavar="TEXT",
    help="Why the tasks were revised (kept in the history; with --revise).",
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="With --revise: show what would change and which verdicts would go stale; write nothing.",
)
@json_option
@handle_errors
def import_(
    path: Path,
    db: str | None,
    benchmark: str | None,
    column_map: tuple[str, ...],
    revise: bool,
    reason: str | None,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Import a benchmark folder, one of its JSONL files, a judgments or adjudications
    table (CSV, TSV, Excel, Parquet), a HealthBench JSONL file, or Inspect AI eval logs
    (.eval, .json or a folder of them); '-' reads JSONL from standard input.

    Everything is validated first; a file with any bad line imports nothing and every
    problem is listed as file:line: field: message. Importing the same data again
    changes nothing. Artifact paths of tasks read from standard input are relative to
    the current folder.

    With --revise, stored tasks that changed are revised first (all or nothing; see
    `gradercal rubric history`), then everything else in PATH is imported as usual.
    """
    if (reason or dry_run) and not revise:
        raise click.UsageError("--reason and --dry-run go with --revise")
    if revise:
        if str(path) == "-" or not path.exists():
            raise GradercalError(f"{path}: --revise needs a benchmark folder or tasks.jsonl")
        _import_revised(path, db, benchmark, column_map, reason, dry_run, as_json)
        return

    if str(path) == "-":
        from dataclasses import replace

        from gradercal._util.scratch import scratch_dir
        from gradercal.errors import ValidationError

        with scratch_dir("gradercal-stdin-") as tmp:
            spooled = _spool_stdin(tmp)
            try:
                _import(spooled, db, benchmark, column_map, as_json, stdin=True)
            except ValidationError as exc:  # problems name the input, not its spool file
                raise ValidationError(
                    [
                        replace(p, file="<stdin>") if p.file == spooled.name else p
                        for p in exc.problems
                    ],
                    hint=exc.hint,
                ) from None
        return
    if not path.exists():  # a bad path creates no database
        raise GradercalError(f"{path}: no such file or folder")
    _import(path, db, benchmark, column_map, as_json)


def _spool_stdin(folder: Path) -> Path:
    """Standard input copied to a JSONL file in ``folder`` (the readers read files)."""
    import shutil
    import sys

    target = folder / "stdin.jsonl"
    with target.open("wb") as out:
        shutil.copyfileobj(sys.stdin.buffer, out)
    if target.stat().st_size == 0:
        raise GradercalError("-: standard input is empty (expected JSON Lines)")
    return target


def _import(
    path: Path,
    db: str | None,
    benchmark: str | None,
    column_map: tuple[str, ...],
    as_json: bool,
    *,
    stdin: bool = False,
) -> None:
    from dataclasses import replace

    from gradercal.db.repo import benchmark_of
    from gradercal.formats import check_ready, read_path, recognise
    from gradercal.formats.tables import parse_column_map

    mapping = parse_column_map(column_map)
    found = recognise(path)
    if stdin:
        from gradercal.formats.v1 import read_stream

        # standard input names no folder: tasks go to --benchmark or the stored one
        found = replace(found, benchmark=None, threshold_from_file=False, new_benchmark=None)
    if found.kind is None and path.is_file():
        read_path(path)  # says which formats were tried, before any database is opened
    check_ready(found)  # and a missing optional extra

    def read(catalog: Any) -> Any:
        if stdin and found.format == "v1":
            return read_stream(path, "<stdin>", Path.cwd(), catalog)
        return read_path(path, catalog, mapping)

    from gradercal.db.session import database_exists

    nameless = GradercalError(
        "-: tasks from standard input name no benchmark; give --benchmark NAME"
    )
    unnamed = stdin and not benchmark and found.kind == "tasks"
    data = None
    if not database_exists(db):  # a new database: read (and refuse) before creating it
        if unnamed:
            raise nameless
        data = read(None)
    repo = open_repo(db, create=True)
    if unnamed and not repo.benchmarks():
        raise nameless
    target = benchmark or found.benchmark
    if target is None and found.new_benchmark is not None and not repo.benchmarks():
        target = found.new_benchmark  # a file that stands alone, into an empty database
    target = target or repo.benchmark(None).name
    if data is None:
        data = read(repo.catalog(target))
    data = benchmark_of(data, target)
    with progress_bar(not as_json) as update:
        report = repo.import_data(
            data, threshold_from_file=found.threshold_from_file, progress=update
        )
    if as_json:
        emit_json({**report.to_dict(), **({"notes": data.notes} if data.notes else {})})
        return
    shown = "-" if stdin else str(path)
    if not report.changed:
        click.echo(f"{shown}: nothing new; {repo.db.display} unchanged")
        _echo_notes(data.notes)
        return
    parts = [
        f"{report.tasks_added} tasks",
        f"{report.artifacts_added} artifacts ({report.bytes_added / 1e6:.1f} MB new)",
        f"{report.responses_added} responses",
        f"{report.judgments_added} judgments",
    ]
    if report.adjudications_added or data.adjudications:
        parts.append(f"{report.adjudications_added} adjudications")
    click.echo(f"imported into benchmark {report.benchmark!r}: " + ", ".join(parts))
    if report.judgments_updated or report.judgments_confirmed:
        click.echo(_judgments_line(report))
    if report.adjudications_updated:
        click.echo(
            f"updated {report.adjudications_updated} adjudications (old values kept as revisions)"
        )
    if report.graders_added:
        click.echo("new graders: " + ", ".join(report.graders_added))
    if report.grader_models_set:
        click.echo("judge models recorded: " + ", ".join(report.grader_models_set))
    if report.pass_threshold_changed:
        old, new = report.pass_threshold_changed
        click.echo(f"pass threshold changed from {old} to {new}")
    _echo_notes(data.notes)


def _import_revised(
    path: Path,
    db: str | None,
    benchmark: str | None,
    column_map: tuple[str, ...],
    reason: str | None,
    dry_run: bool,
    as_json: bool,
) -> None:
    """``import --revise``: revise the stored tasks that changed, then import the rest."""
    import getpass

    from gradercal.db.repo import benchmark_of
    from gradercal.db.revisions import RevisionStore
    from gradercal.formats import read_path, recognise
    from gradercal.formats.tables import parse_column_map

    found = recognise(path)
    repo = open_repo(db)
    target = benchmark or found.benchmark or repo.benchmark(None).name
    data = benchmark_of(read_path(path, repo.catalog(target), parse_column_map(column_map)), target)
    stored = {t.id for t in repo.load_tasks(target)}
    revised = [t for t in data.tasks if t.id in stored]
    reports = RevisionStore(repo.db).revise_tasks(
        target,
        revised,
        reason=reason,
        actor=getpass.getuser(),
        source="import",
        blobs=data.blobs,
        dry_run=dry_run,
    )
    changed = [r for r in reports if r.changed]
    imported = None
    if not dry_run:
        with progress_bar(not as_json) as update:
            imported = repo.import_data(
                data, threshold_from_file=found.threshold_from_file, progress=update
            )
    if as_json:
        emit_json(
            {
                "benchmark": target,
                "dry_run": dry_run,
                "revised": [r.to_dict() for r in changed],
                "unchanged": len(reports) - len(changed),
                "import": imported.to_dict() if imported is not None else None,
            }
        )
        return
    verb = "would revise" if dry_run else "revised"
    click.echo(f"{verb} {len(changed)} of {len(reports)} stored tasks in {target!r}")
    for r in changed:
        click.echo("  " + revision_line(r))
    if imported is not None and imported.changed:
        click.echo(
            f"also imported: {imported.tasks_added} new tasks, {imported.responses_added} "
            f"responses, {imported.judgments_added} judgments"
        )
        if imported.judgments_updated or imported.judgments_confirmed:
            click.echo(_judgments_line(imported))


def _judgments_line(report: Any) -> str:
    """What an import did to judgments already stored: "updated 2 judgments (…)", or with
    stale verdicts given again unchanged, "updated 2, confirmed 7 under version 2 (…)"."""
    kept = "(old values kept as revisions)"
    if not report.judgments_confirmed:
        return f"updated {report.judgments_updated} judgments {kept}"
    versions = report.confirmed_versions
    under = (
        f"version {versions[0]}"
        if len(versions) == 1
        else "versions " + ", ".join(str(v) for v in versions)
    )
    return (
        f"judgments: updated {report.judgments_updated}, confirmed "
        f"{report.judgments_confirmed} under {under} {kept}"
    )


def _echo_notes(notes: list[str]) -> None:
    """What the reader read but did not import (e.g. an Inspect log's whole-sample scores)."""
    for note in notes:
        click.echo(f"note: {note}")


@click.command()
@db_option
@json_option
@handle_errors
def benchmarks(db: str | None, as_json: bool) -> None:
    """List the benchmarks stored in the database."""
    rows = open_repo(db).benchmarks()
    if as_json:
        emit_json([r.__dict__ for r in rows])
        return
    if not rows:
        click.echo("no benchmarks yet: run `gradercal import PATH`")
    for r in rows:
        click.echo(
            f"{r.name}: {r.n_tasks} tasks, {r.n_responses} responses, {r.n_judgments} judgments, "
            f"pass threshold {r.pass_threshold:.0%}"
        )


@click.command()
@db_option
@benchmark_option
@click.option(
    "--grader",
    "-g",
    default="consensus",
    show_default=True,
    metavar="NAME|consensus|all",
    help="Whose verdicts to score: one grader, the human consensus, or every grader.",
)
@click.option(
    "--by",
    "by",
    default=",".join(BREAKDOWNS),
    show_default=True,
    help="Breakdowns to show (comma-separated; empty for none).",
)
@click.option(
    "--svg",
    "svg",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Also save the tables as an SVG image (for reports and READMEs).",
)
@click.option(
    "--calibrated",
    is_flag=True,
    help="Also the judge's figures under its active calibration (`gradercal calibrate`), "
    "applied to all its verdicts, new runs included.",
)
@version_option
@json_option
@handle_errors
def scores(
    db: str | None,
    benchmark: str | None,
    grader: str,
    by: str,
    svg: Path | None,
    calibrated: bool,
    version: Any,
    as_json: bool,
) -> None:
    """Per-model mean rubric score and pass rate, with breakdowns.

    \b
    JSON shape (one object, or a list of them with --grader all):
      {"grader", "pass_threshold", "models": [{"model", "n_responses", "n_scored",
       "mean_score", "pass_rate"}], "breakdowns": {"workflow": [{"model", "group", …}], …},
       "incomplete", "ties"}
    With a rubric revision (or --version given), each object also names the "version"
    of the verdicts used, first.
    """
    from gradercal.analysis.scoring import score_report

    repo = open_repo(db)
    frames = repo.load_frames(benchmark, version)
    graders = _graders(frames, grader)
    groups = [g for g in by.split(",") if g]
    bad = [g for g in groups if g not in BREAKDOWNS]
    if bad:
        raise click.BadParameter(f"unknown breakdown {bad[0]!r}; use {', '.join(BREAKDOWNS)}")
    reports = [score_report(frames, grader=g) for g in graders]
    if calibrated:
        attach_calibrated(repo, benchmark, reports)
    if as_json:
        used = version_used(repo, benchmark, version)
        reports = [with_version(r, used) for r in reports]
        emit_json(reports if grader == "all" else reports[0])
        return
    console = text_console(record=svg is not None)
    for rep in reports:
        _print_report(rep, groups, console)
        if calibrated:
            print_calibrated(rep.get("calibrated"))
    if svg is not None:
        console.save_svg(str(svg), title="gradercal scores")


def _graders(frames: Any, grader: str) -> list[str]:
    names = sorted(set(frames.judgments["grader"]))
    if grader == "all":
        return ["consensus", *names]
    if grader != "consensus" and grader not in names:
        raise GradercalError(
            f"no grader {grader!r} in this benchmark; graders: {', '.join(names) or 'none'}"
        )
    return [grader]


def _print_report(rep: dict[str, Any], groups: list[str], console: Any) -> None:
    from rich.table import Table

    who = "human consensus" if rep["grader"] == "consensus" else f"grader {rep['grader']}"
    table = Table(
        title=f"Scores under {who} (pass ≥ {rep['pass_threshold']:.0%} of rubric points)",
        title_justify="left",
    )
    for col, justify in [
        ("model", "left"),
        ("responses", "right"),
        ("scored", "right"),
        ("mean score", "right"),
        ("pass rate", "right"),
    ]:
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for row in rep["models"]:
        table.add_row(
            row["model"],
            str(row["n_responses"]),
            str(row["n_scored"]),
            _pct(row["mean_score"]),
            _pct(row["pass_rate"]),
        )
    console.print(table)
    models = [row["model"] for row in rep["models"]]
    for group in groups:
        rows = rep["breakdowns"].get(group, [])
        if not rows:
            continue
        label = group.replace("_", " ")
        sub = Table(
            title=f"by {label}: mean score · pass rate (responses scored)",
            title_justify="left",
        )
        sub.add_column(label)
        for model in models:
            sub.add_column(model, justify="right")
        cells: dict[Any, dict[str, str]] = {}
        for row in rows:
            cells.setdefault(row["group"], {})[row["model"]] = (
                f"{_pct(row['mean_score'])} · {_pct(row['pass_rate'], 0)} ({row['n_scored']})"
            )
        for key, by_model in cells.items():
            sub.add_row("—" if key is None else str(key), *[by_model.get(m, "") for m in models])
        console.print(sub)
    notes = []
    if rep.get("incomplete"):
        notes.append(f"{rep['incomplete']} responses not fully graded (left out)")
    if rep.get("ties"):
        notes.append(f"{rep['ties']} criteria with tied human votes (responses left out)")
    for note in notes:
        console.print(f"note: {note}", style="dim")


_pct = percent


@click.command()
@click.argument(
    "what",
    type=click.Choice(
        ["judgments", "adjudications", "scores", "tasks", "responses", "assignments", "benchmark"]
    ),
)
@click.option(
    "-o",
    "--output",
    required=True,
    type=click.Path(path_type=Path),
    help="Output file: .csv, .jsonl or .parquet (the format follows the suffix); "
    "'-' for standard output (JSONL, or CSV with --format csv); a new folder for "
    "`export benchmark`.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["csv", "jsonl", "parquet"]),
    help="The format, whatever the suffix.",
)
@click.option(
    "--accepted-only",
    is_flag=True,
    help="Only the tasks accepted in review (`gradercal tasks`), with their responses, "
    "judgments, adjudications and scores.",
)
@db_option
@benchmark_option
@handle_errors
def export(
    what: str,
    output: Path,
    db: str | None,
    benchmark: str | None,
    fmt: str | None,
    accepted_only: bool,
) -> None:
    """Export judgments, adjudications, scores, tasks or responses to CSV, JSONL or
    Parquet, or the whole benchmark as a format v1 folder.

    `export benchmark -o DIR` writes benchmark.json, tasks, responses, judgments and
    adjudications JSONL and every artifact file at its original path: a folder that
    `gradercal import DIR` reads back into the same benchmark (DIR must not exist).

    `export judgments -o FILE.jsonl` writes the judgments.jsonl format (judges' models
    and every verdict's times included), so the file imports back unchanged; so do
    `export adjudications` and the CSV/Parquet forms of both. `export tasks -o FILE.jsonl` writes tasks.jsonl records;
    as CSV/Parquet it writes one row per criterion.

    `export assignments` lists who was sent what, with the active design's inclusion
    probability and draw of each (`assign --strategy active`; empty when uniform): the
    coordinator's record of the design, which graders' packets never carry.

    `--accepted-only` keeps the tasks whose last review round was accepted (and
    everything of theirs): `export benchmark --accepted-only -o DIR` is the benchmark
    as released.
    """
    from gradercal.formats import response_record, task_record

    opened = open_repo(db) if accepted_only else None
    keep = _accepted(opened, benchmark) if opened is not None else None
    if what == "benchmark":
        n = _export_folder(opened or open_repo(db), benchmark, output, keep)
        click.echo(f"wrote benchmark folder {output} ({n} files)")
        return
    if output.is_dir():
        raise GradercalError(f"{output}: is a folder; give a file name")
    suffix = "." + fmt if fmt else output.suffix.lower()
    if str(output) == "-" and not fmt:
        suffix = ".jsonl"
    if suffix not in (".csv", ".jsonl", ".parquet"):
        raise GradercalError(
            f"{output}: unknown suffix {suffix!r}; use .csv, .jsonl or .parquet (or --format)"
        )
    repo = opened or open_repo(db)
    records: list[dict[str, Any]]
    if what == "judgments":
        records = repo.judgment_records(benchmark)
    elif what == "adjudications":
        records = repo.adjudication_records(benchmark)
    elif what == "tasks":
        tasks = [t for t in repo.load_tasks(benchmark) if keep is None or t.id in keep]
        records = [task_record(t) for t in tasks] if suffix == ".jsonl" else _criterion_rows(tasks)
    elif what == "responses":
        records = [response_record(r) for r in repo.load_responses(benchmark)]
    elif what == "assignments":
        from gradercal.db.assignments import assignment_records

        records = assignment_records(repo.db, benchmark)
    else:
        from gradercal.analysis.scoring import all_grader_scores

        df = all_grader_scores(repo.load_frames(benchmark))
        records = df.astype(object).where(df.notna(), None).to_dict(orient="records")  # type: ignore[assignment]
    if keep is not None and what != "tasks":
        records = [r for r in records if r.get("task_id") in keep]
    n = write_records(records, output, suffix.lstrip("."))
    if str(output) != "-":
        click.echo(f"wrote {n} {what} rows to {output}")


def _accepted(repo: Any, benchmark: str | None) -> set[str]:
    """The ids of the benchmark's accepted tasks; an error when there is none."""
    from gradercal.db.acceptance import accepted_tasks

    keep = accepted_tasks(repo.db, benchmark)
    if not keep:
        raise GradercalError(
            "no task is accepted yet: nothing to export with --accepted-only "
            "(see `gradercal tasks`)"
        )
    return keep


def _export_folder(
    repo: Any, benchmark: str | None, output: Path, keep: set[str] | None = None
) -> int:
    """The benchmark as a format v1 folder at ``output``, written beside it first and
    moved into place whole (an interrupted export leaves no half folder). ``keep``: only
    these tasks (and their responses, verdicts and artifacts)."""
    import os
    import shutil
    import tempfile
    from pathlib import PurePosixPath

    from gradercal.formats import response_record, task_record, write_jsonl

    if str(output) == "-":
        raise GradercalError("a benchmark folder cannot go to standard output: give -o DIR")
    if output.exists():
        raise GradercalError(f"{output}: already exists; give a new folder")
    bench = repo.benchmark(benchmark)
    tasks = repo.load_tasks(bench.name)
    if keep is not None:
        tasks = [t for t in tasks if t.id in keep]
    output.parent.mkdir(parents=True, exist_ok=True)
    from gradercal._util.scratch import sweep_stale

    sweep_stale(f".{output.name}-", output.parent)  # left by a killed export
    tmp = Path(tempfile.mkdtemp(prefix=f".{output.name}-{os.getpid()}-", dir=output.parent))
    try:
        settings = {
            "name": bench.name,
            "pass_threshold": bench.pass_threshold,
            "format_version": bench.format_version,
        }
        if bench.instructions:
            settings["instructions"] = bench.instructions
        (tmp / "benchmark.json").write_text(
            json.dumps(settings, ensure_ascii=False, indent=2) + "\n", encoding="utf-8"
        )
        files = 1
        for task in tasks:
            for art in task.artifacts:
                if art.path is None or art.sha256 is None:
                    continue
                rel = PurePosixPath(art.path)
                if rel.is_absolute() or ".." in rel.parts:  # never written outside DIR
                    raise GradercalError(f"task {task.id}: unsafe artifact path {art.path!r}")
                target = tmp.joinpath(*rel.parts)
                if not target.exists():
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(repo.read_blob(art.sha256))
                    files += 1
        informative = ("task_id", "revision")  # verdicts' read-only extras
        tables = {
            "tasks.jsonl": [task_record(t) for t in tasks],
            "responses.jsonl": [response_record(r) for r in repo.load_responses(bench.name)],
            "judgments.jsonl": repo.judgment_records(bench.name),
            "adjudications.jsonl": repo.adjudication_records(bench.name),
        }
        for name, records in tables.items():
            if keep is not None and name != "tasks.jsonl":  # the tasks are cut already
                records = [r for r in records if r.get("task_id") in keep]
            if not records and name != "tasks.jsonl":
                continue
            if name in ("judgments.jsonl", "adjudications.jsonl"):
                records = [{k: v for k, v in r.items() if k not in informative} for r in records]
            write_jsonl(tmp / name, records)
            files += 1
        tmp.rename(output)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return files


def _criterion_rows(tasks: list[Any]) -> list[dict[str, Any]]:
    rows = []
    for t in tasks:
        for c in t.criteria:
            rows.append(
                {
                    "task_id": t.id,
                    "workflow": t.workflow,
                    "domain": t.domain,
                    "answer_format": t.answer_format,
                    "n_artifacts": len(t.artifacts),
                    "criterion_id": c.id,
                    "position": c.position,
                    "criterion": c.text,
                    "points": c.points,
                    "kind": c.kind.value,
                    "tags": ";".join(c.tags),
                    "auto_key": c.auto.key if c.auto else None,
                    "auto_target": json.dumps(c.auto.target) if c.auto else None,
                }
            )
    return rows


def write_records(records: list[dict[str, Any]], output: Path, fmt: str | None = None) -> int:
    """Write records as ``fmt`` (default: by suffix): JSONL as is, CSV/Parquet as a typed
    table (:func:`_frame`); ``output`` ``-`` is standard output (JSONL or CSV)."""
    fmt = fmt or output.suffix.lower().lstrip(".")
    if str(output) == "-":
        if fmt == "parquet":
            raise GradercalError("Parquet cannot go to standard output: give -o FILE.parquet")
        import sys

        if fmt == "jsonl":
            from gradercal.formats.v1 import dump_jsonl

            return dump_jsonl(sys.stdout, records)
        frame = _frame(records)
        _inert(frame).to_csv(sys.stdout, index=False)
        return len(frame)
    output.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "jsonl":
        from gradercal.formats import write_jsonl

        return write_jsonl(output, records)
    frame = _frame(records)
    if fmt == "csv":
        _inert(frame).to_csv(output, index=False)
    else:
        try:
            frame.to_parquet(output, index=False)
        except ImportError as exc:
            raise GradercalError(
                f"{output}: writing Parquet needs pyarrow: pip install 'gradercal[parquet]'"
            ) from exc
    return len(frame)


def _inert(frame: pd.DataFrame) -> pd.DataFrame:
    """Text cells a spreadsheet would run as a formula (starting with = + - @, a tab or a
    carriage return) prefixed with ``'``, as OWASP advises against CSV injection;
    gradercal's table import takes the quote off again (docs/formats.md)."""
    from gradercal.formats.tables import neutralise_cell

    out = frame.copy()
    for col in out.columns:
        if out[col].dtype == object or str(out[col].dtype) in ("str", "string"):
            out[col] = out[col].map(neutralise_cell)
    return out


#: Columns written as integers (nullable), booleans and timestamps in CSV/Parquet.
_INT_COLUMNS = frozenset({"level", "revision", "points", "position", "n_artifacts", "levels"})
_BOOL_COLUMNS = frozenset({"met"})
_FLAG_COLUMNS = frozenset({"unclear"})  # absent = False


def _frame(records: list[dict[str, Any]]) -> pd.DataFrame:
    """Records as a typed table: nested values (answers, lists) as JSON text, ``*_at``
    columns as timezone-aware timestamps (UTC), counts and levels as nullable integers,
    verdicts as nullable booleans, flags as booleans."""
    import pandas as pd

    frame = pd.DataFrame.from_records(records)
    for col in frame.columns:
        s = frame[col]
        if s.map(lambda v: isinstance(v, dict | list | tuple)).any():
            frame[col] = s.map(
                lambda v: (
                    None
                    if v is None
                    else json.dumps(list(v) if isinstance(v, tuple) else v, ensure_ascii=False)
                )
            )
        elif str(col).endswith("_at"):
            frame[col] = pd.to_datetime(s, utc=True, format="ISO8601")
        elif col in _INT_COLUMNS:
            frame[col] = pd.to_numeric(s).astype("Int64")
        elif col in _BOOL_COLUMNS:
            frame[col] = s.astype("boolean")
        elif col in _FLAG_COLUMNS:
            frame[col] = s.map(lambda v: bool(v) if v is not None and v == v else False)
    return frame


@click.group()
def samples() -> None:
    """The demo benchmark, and synthetic benchmarks with known ground truth."""


@samples.command()
@click.option(
    "-o",
    "--output",
    required=True,
    type=click.Path(path_type=Path, file_okay=False),
    help="Folder to write (new, or empty).",
)
@db_option_unused
@json_option
@handle_errors
def demo(output: Path, as_json: bool) -> None:
    """Write the demo benchmark (a hand-written life-science benchmark, format v1, shipped
    with gradercal) to a folder, to try gradercal on: `gradercal samples demo -o demo &&
    gradercal import demo`.

    10 research tasks with artifacts (PDF, CSV, FASTA, PDB, SDF, XLSX, PNG), 3 model answers
    each, the verdicts of three experts and one LLM judge, adjudications and the true verdicts
    (truth.json). --json: {"output": FOLDER, "files": N, "bytes": N}.
    """
    from importlib.resources import as_file, files

    if output.exists() and any(output.iterdir()):
        raise GradercalError(f"-o {output}: the folder is not empty; give a new or empty one")
    with as_file(files("gradercal") / "demo") as source:
        if not (source / "tasks.jsonl").is_file():
            raise GradercalError(f"the demo is missing from this installation ({source})")
        written = _copy_tree(source, output)
    if as_json:
        emit_json({"output": str(output), "files": len(written), "bytes": sum(written)})
    else:
        click.echo(f"wrote the demo benchmark to {output} ({len(written)} files)")
        click.echo(f"next: gradercal import {output}")


def _copy_tree(source: Path, target: Path) -> list[int]:
    """Copy every file under ``source`` to ``target`` (created); the sizes written."""
    import shutil

    sizes = []
    for path in sorted(source.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            dest = target / path.relative_to(source)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, dest)
            sizes.append(dest.stat().st_size)
    return sizes


@samples.command()
@click.option("-o", "--output", required=True, type=click.Path(path_type=Path, file_okay=False))
@click.option("--tasks", default=40, show_default=True, type=click.IntRange(1))
@click.option("--criteria-per-task", default=25.0, show_default=True, type=click.FloatRange(1))
@click.option("--responses-per-task", default=3, show_default=True, type=click.IntRange(1, 26))
@click.option("--human-graders", default=3, show_default=True, type=click.IntRange(0))
@click.option("--judge/--no-judge", default=True, show_default=True)
@click.option("--artifacts-per-task", default=1.33, show_default=True, type=click.FloatRange(0))
@click.option("--overlap", type=click.IntRange(1), help="Humans per response (default: all).")
@click.option("--seed", default=0, show_default=True, type=int)
@db_option_unused
@json_option
@handle_errors
def generate(
    output: Path,
    tasks: int,
    criteria_per_task: float,
    responses_per_task: int,
    human_graders: int,
    judge: bool,
    artifacts_per_task: float,
    overlap: int | None,
    seed: int,
    as_json: bool,
) -> None:
    """Write a synthetic benchmark folder (format v1) plus truth.jsonl with the true verdicts."""
    from gradercal.synth import SynthConfig, generate

    if overlap is not None and overlap > human_graders:
        raise click.BadParameter("cannot exceed --human-graders", param_hint="--overlap")
    summary = generate(
        output,
        SynthConfig(
            tasks=tasks,
            criteria_per_task=criteria_per_task,
            responses_per_task=responses_per_task,
            human_graders=human_graders,
            judge=judge,
            artifacts_per_task=artifacts_per_task,
            overlap=overlap,
            seed=seed,
        ),
    )
    if as_json:
        emit_json(summary.to_dict())
    else:
        click.echo(
            f"wrote {summary.tasks} tasks, {summary.criteria} criteria, {summary.artifacts} "
            f"artifacts, {summary.responses} responses, {summary.judgments} judgments to {output}"
        )
