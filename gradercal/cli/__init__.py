"""The ``gradercal`` command line: the one front door for people and scripts.

Every command takes ``--db`` (a SQLite path or a SQLAlchemy URL; default: ``$GRADERCAL_DB``
or a SQLite file in the user data directory) and ``--help``; commands that report take
``--json`` for a stable, documented shape. Errors print ``file:line: field: message``
lines to stderr and exit with status 1 without touching the database.
"""

from __future__ import annotations

from typing import ClassVar

import click

from gradercal import __version__


class LazyGroup(click.Group):
    """A group whose heavier subcommands are imported only when they run (fast --help)."""

    #: command name → ("module:attribute", one-line help shown by ``gradercal --help``)
    lazy: ClassVar[dict[str, tuple[str, str]]] = {
        "init": (
            "gradercal.cli.data:init",
            "Create the database (or upgrade it to the current schema).",
        ),
        "import": (
            "gradercal.cli.data:import_",
            "Import a benchmark folder, one of its JSONL files, or a HealthBench-style JSONL file.",
        ),
        "benchmarks": (
            "gradercal.cli.data:benchmarks",
            "List the benchmarks stored in the database.",
        ),
        "scores": (
            "gradercal.cli.data:scores",
            "Per-model mean rubric score and pass rate, with breakdowns.",
        ),
        "export": (
            "gradercal.cli.data:export",
            "Export judgments, scores, tasks or responses to CSV, JSONL or Parquet.",
        ),
        "samples": (
            "gradercal.cli.data:samples",
            "The demo benchmark, and synthetic benchmarks with known ground truth.",
        ),
        "gui": ("gradercal.cli.gui:gui", "Open the grading app (or save a screenshot of it)."),
        "stats": ("gradercal.cli.stats:stats", "Agreement statistics of any unit,rater,value CSV."),
        "judge": ("gradercal.cli.judge:judge", "Run the LLM judge, manage its prompts, probe it."),
        "agreement": (
            "gradercal.cli.analysis:agreement",
            "Expert-expert and expert-judge agreement, with task-clustered intervals.",
        ),
        "alttest": (
            "gradercal.cli.analysis:alttest",
            "Alternative annotator test: may the judge replace the experts?",
        ),
        "calibrate": (
            "gradercal.cli.analysis:calibrate",
            "Calibrate a judge against the experts (held-out figures); save it.",
        ),
        "estimate": (
            "gradercal.cli.analysis:estimate",
            "Bias-corrected mean score and pass rate (PPI++, Rogan-Gladen).",
        ),
        "health": ("gradercal.cli.analysis:health", "Criteria to fix first, ranked by impact."),
        "impact": (
            "gradercal.cli.analysis:impact",
            "What the judge does to each model's score and pass rate.",
        ),
        "surveys": ("gradercal.cli.analysis:surveys", "Task review surveys per dimension."),
        "report": (
            "gradercal.cli.report:report",
            "The agreement dashboard as a self-contained HTML (and PDF) report.",
        ),
        "assign": (
            "gradercal.cli.ops:assign",
            "Hand out responses to graders: K per response, balanced, seeded.",
        ),
        "plan": (
            "gradercal.cli.plan:plan",
            "How much expert grading stated interval widths and decisions need (simulated).",
        ),
        "progress": (
            "gradercal.cli.tasks:progress",
            "Grading progress per grader, packet and task: pace, forecast, overdue packets.",
        ),
        "tasks": (
            "gradercal.cli.tasks:tasks",
            "Task acceptance rounds: status, agreement, survey; accept, reject, send back.",
        ),
        "clarify": (
            "gradercal.cli.clarify:clarify",
            "Clarification threads on criteria: list, show, answer (and re-check), ask.",
        ),
        "rubric": (
            "gradercal.cli.rubric:rubric",
            "Revise rubric criteria; versions of tasks; stale verdicts.",
        ),
        "packet": ("gradercal.cli.ops:packet", "Offline grading packets: export, merge, inspect."),
        "backup": ("gradercal.cli.ops:backup", "A consistent copy of the database."),
        "check": ("gradercal.cli.ops:check", "Integrity, orphan rows and artifact hashes."),
        "team": (
            "gradercal.cli.team:team",
            "A grading team on PostgreSQL: login roles, row-level security, history.",
        ),
        "export-prompt": (
            "gradercal.cli.prompt:export_prompt",
            "Export the judge's calibrated prompt package (JSON, Markdown, Inspect, promptfoo).",
        ),
        "import-prompt": (
            "gradercal.cli.prompt:import_prompt",
            "Store a prompt package as a prompt version, to re-run the judge with it.",
        ),
    }

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            if name in self.lazy:
                rows.append((name, self.lazy[name][1]))
                continue
            cmd = super().get_command(ctx, name)
            if cmd is not None and not cmd.hidden:
                rows.append((name, cmd.get_short_help_str(limit=formatter.width - 20)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except click.exceptions.NoSuchCommand:
            # click suggests among the commands it holds; most of these are lazy
            raise click.exceptions.NoSuchCommand(
                click.utils.make_str(args[0]), possibilities=self.list_commands(ctx), ctx=ctx
            ) from None

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy:
            import importlib

            module, attr = self.lazy[cmd_name][0].split(":")
            command = getattr(importlib.import_module(module), attr)
            assert isinstance(command, click.Command)
            return command
        return super().get_command(ctx, cmd_name)


@click.group(
    cls=LazyGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(__version__, prog_name="gradercal")
def main() -> None:
    """gradercal: expert grading, agreement statistics and LLM-judge calibration
    for rubric-graded AI benchmarks.

    \b
    Typical first steps:
      gradercal samples demo -o demo     write the demo benchmark to a folder
      gradercal import demo              load a benchmark folder (format v1)
      gradercal scores                   per-model mean rubric score and pass rate
      gradercal export judgments -o j.csv
    """
    from gradercal._util.scratch import exit_on_sigterm, sweep_temp

    exit_on_sigterm()  # a stopped command still removes its scratch folders
    sweep_temp()  # and those a killed one left behind


def run() -> None:
    """The ``gradercal`` program (its console script and ``python -m gradercal``):
    :func:`main` in a process of its own, which a command may end as soon as its work is
    written (:func:`gradercal._util.program.end_process_now`). Callers of :func:`main`
    (the tests' ``CliRunner``) run on as before."""
    from gradercal._util import program

    program.OWN_PROCESS = True
    main(prog_name="gradercal")
