"""``gradercal export-prompt`` and ``gradercal import-prompt``: the calibrated judge prompt.

A front end: it reads the database through :mod:`gradercal.db.prompt_sources` and builds
and renders the package with :mod:`gradercal.prompt_package`. Registered lazily on the
main group (:class:`gradercal.cli.LazyGroup`).

The loop a team runs: ``export-prompt`` (JSON) → review the Markdown form →
``import-prompt`` → ``judge run --prompt HASH --judge NEW-NAME`` → ``agreement`` /
``calibrate`` on the new judge → compare.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, get_args

import click

from gradercal.cli.common import (
    EngineChoice,
    benchmark_option,
    db_option,
    emit_json,
    handle_errors,
    json_option,
    progress_bar,
)
from gradercal.errors import GradercalError, Problem, ValidationError

__all__ = ["export_prompt", "import_prompt"]


#: Formats that are a judge of their own (it sends the requests), and the tool it runs in.
_JUDGE_FORMATS = {"inspect": "Inspect AI", "promptfoo": "promptfoo"}


def _package_formats() -> tuple[str, ...]:
    from gradercal.prompt_package.rendering import PACKAGE_FORMATS

    return PACKAGE_FORMATS


def _warn(message: str) -> None:
    click.echo(click.style("warning: ", fg="yellow", bold=True) + message, err=True)


@click.command("export-prompt")
@db_option
@benchmark_option
@click.option("--judge", "-j", "judge", required=True, metavar="NAME", help="The judge grader.")
@click.option(
    "--format",
    "fmt",
    type=EngineChoice(_package_formats),
    default="json",
    show_default=True,
    help="json: the canonical package (re-importable); markdown: for people; inspect: an "
    "Inspect AI scorer module; promptfoo: an llm-rubric configuration.",
)
@click.option(
    "--examples",
    "n_examples",
    type=click.IntRange(0, 100),
    default=6,
    show_default=True,
    help="Few-shot examples (from adjudicated disagreements of the calibration split); "
    "0 keeps the judge's own.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the example choice.")
@click.option(
    "--n-boot",
    type=click.IntRange(0),
    default=1000,
    show_default=True,
    help="Bootstrap resamples for the card's all-data intervals.",
)
@click.option("--name", metavar="TEXT", help="Name of the new prompt version.")
@click.option(
    "--output",
    "-o",
    "output",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="File to write ('-' for standard output).",
)
@click.option(
    "--samples",
    "samples_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also write the benchmark's responses as the exported judge's samples (JSONL: "
    "task prompt, response, structured answer, attachment text, whole rubric), for "
    "`inspect eval FILE@gradercal_grading -T samples=…` or the promptfoo tests.",
)
@click.option(
    "--model",
    "model",
    metavar="M",
    help="promptfoo: the judge model its requests name, as your server knows it (default: "
    "the judge's recorded model; needed for a judge imported without one). Inspect AI "
    "takes the model from `inspect eval --model openai/M` instead.",
)
@json_option
@handle_errors
def export_prompt(
    db: str | None,
    benchmark: str | None,
    judge: str,
    fmt: str,
    n_examples: int,
    seed: int,
    n_boot: int,
    name: str | None,
    output: Path,
    samples_path: Path | None,
    model: str | None,
    as_json: bool,
) -> None:
    """Export the judge's calibrated prompt package.

    The package holds the judge's templates, rubric guidance distilled from the
    experts' "criterion unclear" and adjudication notes, few-shot examples from
    adjudicated disagreements (balanced met / not met, only from the calibration
    split's tasks), the decision threshold or score mapping of the judge's active
    calibration, and an agreement card whose held-out figures are the calibration's
    test figures on the tasks it held out (`gradercal calibrate --holdout`). A
    calibration without held-out tasks gives out-of-fold figures and a warning that
    the examples may come from the same tasks. Without a calibration the package is
    still written, without threshold or held-out figures, and says so.

    The promptfoo judge names its model in every request: for a judge recorded without a
    model (imported judgments name none) it is refused unless --model gives one. The
    Inspect AI judge grades with the model of `inspect eval --model openai/M`; for a judge
    without a recorded model the export warns that this choice is the user's.

    \b
    Examples:
      gradercal export-prompt --judge judge-gpt -o judge.json
      gradercal export-prompt --judge judge-gpt --format markdown -o judge.md
      gradercal export-prompt --judge judge-gpt --format inspect -o judge_scorer.py
    """
    from gradercal.db.prompt_sources import gather, package_from
    from gradercal.db.session import open_database
    from gradercal.prompt_package import MULTI_FILE_FORMATS, PackageFormat, render_files
    from gradercal.prompt_package.standalone import require_text_only

    if fmt not in get_args(PackageFormat):  # pragma: no cover - click checks
        raise GradercalError(f"unknown format {fmt!r}")
    if model is not None and fmt != "promptfoo":
        raise GradercalError(
            "--model sets the promptfoo judge's model; "
            + (
                "the Inspect AI judge takes it from `inspect eval --model openai/M`"
                if fmt == "inspect"
                else f"--format {fmt} sends no requests"
            )
        )
    if fmt in MULTI_FILE_FORMATS and str(output) == "-":
        raise GradercalError(
            f"--format {fmt} writes three files (configuration, assertion, tests): give "
            "-o FILE.yaml, not -"
        )
    database = open_database(db, create=False)
    try:
        with progress_bar(not as_json) as update:
            update("reading", 0, 3)
            src = gather(database, benchmark, judge)
            model_warnings = _check_model(fmt, judge, model or src.judge.model)
            # the exported judges send text only: refuse before any work, never drop figures
            if fmt in _JUDGE_FORMATS:
                require_text_only(src.base_prompt, f"the exported {_JUDGE_FORMATS[fmt]} judge")
            if samples_path is not None:
                require_text_only(src.base_prompt, "the exported judges' samples (--samples)")
            package = package_from(
                database,
                src,
                n_examples=n_examples,
                seed=seed,
                n_boot=n_boot,
                name=name,
                progress=update,
            )
            update("examples", 3, 3)
            samples = None
            if samples_path is not None or fmt in MULTI_FILE_FORMATS:
                from gradercal.db.prompt_sources import export_samples

                samples = export_samples(database, src.benchmark, src.frames, package.prompt)
    finally:
        database.dispose()
    warnings = [*src.warnings, *model_warnings, *package.warnings]
    if warnings != list(package.warnings):
        from dataclasses import replace

        package = replace(package, warnings=warnings)
    files = render_files(package, fmt, output.name, samples or [], model=model)  # type: ignore[arg-type]
    if str(output) == "-":
        click.echo(files[output.name], nl=False)
    else:
        for name, text in files.items():
            path = output.with_name(name)
            try:
                path.write_text(text, encoding="utf-8")
            except OSError as exc:
                raise GradercalError(f"cannot write {path}: {exc.strerror}") from exc
    if samples is not None and samples_path is not None:
        _write_jsonl(samples_path, samples)
    summary = {
        "output": str(output),
        "files": [] if str(output) == "-" else [str(output.with_name(n)) for n in files],
        "samples": None if samples_path is None else str(samples_path),
        "n_samples": None if samples is None else len(samples),
        "format": fmt,
        "judge": judge,
        "benchmark": src.benchmark,
        "prompt_version": package.prompt_version,
        "base_prompt_version": src.base_prompt.content_hash,
        "calibration": package.decision.get("calibration"),
        "rule": package.decision.get("rule"),
        "held_out": (package.card.get("held_out") or {}).get("kind"),
        "held_out_tasks": list(package.example_pool.get("held_out_tasks") or []),
        "examples": len(package.examples),
        "examples_met": sum(1 for e in package.examples if e["criteria_met"]),
        "guidance_criteria": len(package.guidance.get("criteria", [])),
        "warnings": list(package.warnings),
        "certificate": None if package.certificate is None else package.certificate["id"],
    }
    if as_json:
        if str(output) != "-":
            emit_json(summary)
        return
    for w in package.warnings:
        _warn(w)
    if str(output) != "-":
        click.echo(
            f"prompt version {package.prompt_version[:12]} of judge {judge!r} written to "
            f"{output} ({fmt}): {summary['examples']} example(s) "
            f"({summary['examples_met']} met), guidance for "
            f"{summary['guidance_criteria']} criteria, rule {summary['rule']}"
        )


def _check_model(fmt: str, judge: str, model: str | None) -> list[str]:
    """Refuse a promptfoo judge without a model (every request of it would fail); the
    warning for an Inspect AI judge without a recorded model; nothing otherwise."""
    if model:
        return []
    if fmt == "promptfoo":
        raise GradercalError(
            f"judge {judge!r} has no model recorded (it was imported without one), and the "
            "promptfoo judge names its model in every request: give --model M, the judge "
            "model as your server knows it"
        )
    if fmt == "inspect":
        return [
            f"judge {judge!r} has no model recorded (it was imported without one): the "
            "exported Inspect AI judge grades with the model you give `inspect eval --model "
            "openai/M`; name the model the judge was calibrated with"
        ]
    return []


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    from gradercal._util.jsonsafe import json_safe

    text = "".join(
        json.dumps(json_safe(r), ensure_ascii=False, allow_nan=False) + "\n" for r in rows
    )
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise GradercalError(f"cannot write {path}: {exc.strerror}") from exc


@click.command("import-prompt")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@db_option
@json_option
@handle_errors
def import_prompt(file: Path, db: str | None, as_json: bool) -> None:
    """Store a JSON prompt package as a prompt version (idempotent).

    The package is checked against its JSON Schema and its hashes first (an edited
    package is refused; nothing is written). Then run the judge with it under a new
    judge name, e.g.
    `gradercal judge run --judge judge-v2 --prompt HASH --model M --base-url URL`.
    """
    from gradercal.db.prompt_sources import import_package
    from gradercal.db.session import open_database
    from gradercal.formats._lines import read_json
    from gradercal.prompt_package import package_from_dict

    problems: list[Problem] = []
    try:  # UTF-8, JSON, nesting and keys named twice are checked
        data = read_json(file, str(file), problems)
    except OSError as exc:
        raise GradercalError(f"cannot read {file}: {exc.strerror}") from exc
    if problems:
        raise ValidationError(problems)
    package = package_from_dict(data, source=str(file))
    database = open_database(db, create=False)
    try:
        result = import_package(database, package)
    finally:
        database.dispose()
    out = result.to_dict() | {"file": str(file), "judge": package.judge.get("name")}
    if as_json:
        emit_json(out)
        return
    state = "stored" if result.created else "already stored"
    click.echo(
        f"prompt version {result.content_hash[:12]} ({result.name or 'unnamed'}) {state}, id "
        f"{result.id}; run it: gradercal judge run --judge NEW-NAME --prompt "
        f"{result.content_hash[:12]} --model MODEL"
    )
    if result.parent_missing:
        _warn("its parent prompt version is not in this database; stored without a parent")
