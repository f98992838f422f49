"""CLI commands of the agreement and calibration engine.

``gradercal agreement``, ``alttest``, ``calibrate``, ``estimate``, ``health``, ``impact``
and ``surveys``: each reads a benchmark from the database (``--db``, ``--benchmark``),
prints readable tables, or with ``--json`` the stable shapes documented in
``docs/agreement.md``. They are registered lazily on the main group
(:class:`gradercal.cli.LazyGroup`), so importing this module costs nothing until one of
them runs; the statistics live in the core modules (:mod:`gradercal.analysis.agreement`,
:mod:`gradercal.analysis.alt_test`, :mod:`gradercal.analysis.calibration`, :mod:`gradercal.analysis.estimate`,
:mod:`gradercal.analysis.health`, :mod:`gradercal.analysis.impact`, :mod:`gradercal.analysis.surveys`).

Refusals (unknown judge, too little data, …) print ``error: …`` on stderr with exit
status 1; bad options exit with status 2.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from gradercal._util.jsonsafe import json_safe
from gradercal._util.numbers import fixed
from gradercal.cli.common import (
    EngineChoice,
    benchmark_option,
    ci_option,
    db_option,
    emit_json,
    handle_errors,
    json_option,
    open_repo,
    progress_bar,
    seed_option,
    styled,
    text_console,
    version_option,
    version_used,
    with_version,
)
from gradercal.errors import GradercalError

if TYPE_CHECKING:
    from rich.console import Console

    from gradercal.db.repo import Repository
    from gradercal.frames import Frames

__all__ = ["agreement", "alttest", "calibrate", "estimate", "health", "impact", "surveys"]

F = TypeVar("F", bound=Callable[..., Any])


def _calibration_methods() -> tuple[str, ...]:
    from gradercal.analysis.calibration import METHODS

    return METHODS


#: Share of the human-graded tasks ``calibrate`` holds out unless told otherwise.
DEFAULT_HOLDOUT = 0.25
BY_CHOICES = ("criterion", "tag", "workflow", "domain")
BREAKDOWN_CHOICES = ("workflow", "domain", "artifacts", "answer_format")


# ----------------------------------------------------------------------------- helpers


def refusals(fn: F) -> F:
    """Report ``ValueError`` from the statistics (too little data, unknown names) cleanly."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except GradercalError:
            raise
        except ValueError as exc:
            raise GradercalError(str(exc)) from exc

    return wrapper  # type: ignore[return-value]


def _load(
    db: str | None, benchmark: str | None, version: Any = "current"
) -> tuple[Repository, Frames, str]:
    repo = open_repo(db)
    bench = repo.benchmark(benchmark)
    return repo, repo.load_frames(bench.name, version), bench.name


def _emit(repo: Repository, name: str, version: Any, obj: dict[str, Any]) -> None:
    """``--json``: ``obj`` with the version used (:func:`gradercal.cli.common.version_used`)."""
    emit_json(with_version(obj, version_used(repo, name, version)))


def _check_judge(frames: Frames, judge: str) -> None:
    from gradercal.analysis.verdicts import human_graders, judge_graders

    known = judge_graders(frames) + human_graders(frames)
    if judge not in known:
        raise GradercalError(
            f"no grader {judge!r} in this benchmark; judges: {', '.join(judge_graders(frames)) or 'none'}"
        )


def _humans(frames: Frames, humans: str | None, judge: str | None) -> list[str]:
    from gradercal.analysis.verdicts import human_graders

    if humans is None:
        names = human_graders(frames)
    else:
        names = [h.strip() for h in humans.split(",") if h.strip()]
        known = set(frames.judgments["grader"])
        bad = [h for h in names if h not in known]
        if bad:
            raise GradercalError(f"no grader {bad[0]!r} in this benchmark")
    return [h for h in names if h != judge]


def _console() -> Console:
    return text_console(width=120)


_num = fixed


def _cell(fig: dict[str, Any] | None, digits: int = 3, pct: bool = False) -> str:
    """``0.812 [0.771, 0.850]`` from ``{"value", "ci"}``; ``—`` when null."""
    if fig is None or fig.get("value") is None:
        return "—"

    def f(x: float) -> str:
        return f"{x:.{max(digits - 2, 0)}%}" if pct else f"{x:.{digits}f}"

    text = f(fig["value"])
    if fig.get("ci"):
        lo, hi = fig["ci"]
        text += f" [{f(lo)}, {f(hi)}]"
    return text


def _notes(console: Console, notes: list[str]) -> None:
    for note in dict.fromkeys(n for n in notes if n):
        console.print(f"note: {note}", style="dim")


humans_option = click.option(
    "--humans",
    metavar="A,B,…",
    help="The human graders forming the consensus (default: every grader of kind human).",
)
bootstrap_option = click.option(
    "--bootstrap",
    "n_boot",
    type=click.IntRange(min=0),
    default=2000,
    show_default=True,
    help="Task-clustered bootstrap resamples for the intervals (0: none).",
)


# --------------------------------------------------------------------------- agreement


@click.command()
@db_option
@benchmark_option
@click.option("--judge", "-j", metavar="NAME", help="Also compare this judge with the experts.")
@click.option(
    "--by",
    type=click.Choice(BY_CHOICES),
    help="Also break agreement down by criterion, tag, workflow or domain.",
)
@click.option(
    "--by-version",
    is_flag=True,
    help="Agreement on each revised criterion per version of its wording (before and "
    "after each fix), with intervals that resample its responses; counts every verdict "
    "(not with --version).",
)
@humans_option
@bootstrap_option
@seed_option
@ci_option
@version_option
@json_option
@handle_errors
@refusals
def agreement(
    db: str | None,
    benchmark: str | None,
    judge: str | None,
    by: str | None,
    by_version: bool,
    humans: str | None,
    n_boot: int,
    seed: int,
    ci: float,
    version: Any,
    as_json: bool,
) -> None:
    """Expert–expert and expert–judge agreement, with task-clustered intervals.

    Human–human: percent agreement, Fleiss' kappa, Gwet's AC1 and Krippendorff's alpha
    on the met / not met verdicts, the pairwise matrix (Cohen's kappa), and each expert
    against the consensus of the others. With --judge: the judge against the human
    consensus (confusion matrix, precision/recall/F1 for met and not met, balanced F1,
    Cohen's kappa, leniency bias), beside every expert treated as the judge.
    The JSON shape is documented in docs/agreement.md.

    With --by-version: for every criterion revised in a way that changes verdicts, the
    agreement of the verdicts given under each version of it (each grader's latest
    verdict in that version, earlier ones from the history), human–human percent
    agreement and Krippendorff's alpha, and
    with --judge the judge against the consensus of the same version.
    """
    if by_version:
        _by_version(db, benchmark, judge, by, humans, n_boot, seed, ci, as_json)
        return
    from gradercal.analysis.agreement import agreement_report

    repo, frames, name = _load(db, benchmark, version)
    if judge is not None:
        _check_judge(frames, judge)
    names = _humans(frames, humans, judge)
    with progress_bar(not as_json) as update:
        report = agreement_report(
            frames,
            judge=judge,
            humans=names,
            by=by,  # type: ignore[arg-type]
            n_boot=n_boot,
            seed=seed,
            ci=ci,
            progress=update,
            benchmark=name,
        )
    from gradercal.analysis.meta_eval import has_categories, meta_eval_report

    if has_categories(frames):  # a HealthBench meta-evaluation: its own metric beside ours
        report["healthbench_meta"] = meta_eval_report(
            frames, judges=None if judge is None else [judge], humans=names
        )
    if as_json:
        _emit(repo, name, version, report)
        return
    _print_agreement(report)
    if "healthbench_meta" in report:
        _print_meta_eval(report["healthbench_meta"])


def _print_agreement(rep: dict[str, Any]) -> None:
    from rich.table import Table

    from gradercal.analysis.agreement import COMPARISON_FIGURES, HUMAN_STATISTICS
    from gradercal.stats.registry import STATISTICS

    console = _console()
    notes: list[str] = list(rep.get("notes") or [])
    hh = rep["human_human"]["overall"]
    t = Table(
        title=f"Agreement among the experts ({', '.join(rep['humans']) or 'none'}): "
        f"{hh['n_units_paired']} criterion verdicts rated by ≥ 2 experts, {hh['n_tasks']} tasks",
        title_justify="left",
    )
    t.add_column("statistic")
    t.add_column("value [95% CI]" if rep.get("bootstrap") else "value", justify="right")
    for key in HUMAN_STATISTICS:
        t.add_row(STATISTICS[key].phrase, _cell(hh[key]))
        notes.append(hh[key].get("note") or "")
    console.print(t)
    pairs = rep["human_human"]["pairwise"]
    if pairs:
        p = Table(title="Pairs of experts (shared verdicts)", title_justify="left")
        for col in ("a", "b", "n", "agreement", "Cohen's kappa"):
            p.add_column(col, justify="right" if col not in ("a", "b") else "left")
        for row in pairs:
            p.add_row(
                row["a"],
                row["b"],
                str(row["n_units"]),
                _cell(row["percent_agreement"]),
                _cell(row["cohen_kappa"]),
            )
        console.print(p)
    loo = rep["human_human"]["leave_one_out"]
    if loo:
        lt = Table(title="Each expert against the consensus of the others", title_justify="left")
        for col in ("expert", "n", "agreement", "Cohen's kappa", "balanced F1", "leniency bias"):
            lt.add_column(col, justify="left" if col == "expert" else "right")
        for c in loo:
            m = c["metrics"]
            lt.add_row(
                c["candidate"],
                str(c["n_units"]),
                _cell(m["percent_agreement"]),
                _cell(m["cohen_kappa"]),
                _cell(m["balanced_f1"]),
                _cell(m["leniency_bias"]),
            )
        console.print(lt)
    hj = rep.get("human_judge")
    if hj:
        c = hj["confusion"]
        console.print(
            styled(
                (f"Judge {hj['judge']} vs {hj['reference']}", "bold"),
                f": {hj['n_units']} verdicts, {hj['n_tasks']} tasks ({hj['n_undecided']} with "
                "tied or missing consensus left out)\n"
                f"confusion (rows judge, columns experts): met/met {c['tp']}, met/not {c['fp']}, "
                f"not/met {c['fn']}, not/not {c['tn']}",
            )
        )
        jt = Table(title_justify="left")
        jt.add_column("figure")
        jt.add_column("judge vs consensus", justify="right")
        jt.add_column("experts as judges: range", justify="right")
        jt.add_column("judge, same references", justify="right")
        jt.add_column("within range", justify="center")
        for key, label in ((f.key, f.label) for f in COMPARISON_FIGURES):
            r = hj["human_range"].get(key)
            within = hj["within_human_range"].get(key)
            jt.add_row(
                label,
                _cell(hj["metrics"][key]),
                "—" if r is None else f"{r[0]:.3f} – {r[1]:.3f}",
                _num(hj["judge_loo_mean"].get(key)),
                "—" if within is None else ("yes" if within else "no"),
            )
            notes.append(hj["metrics"][key].get("note") or "")
        console.print(jt)
    groups = rep.get("groups")
    if groups:
        g = Table(title=f"By {groups['by']}", title_justify="left")
        g.add_column(groups["by"])
        if groups["by"] == "criterion":
            g.add_column("task")
        g.add_column("n", justify="right")
        g.add_column("experts: agreement", justify="right")
        g.add_column("experts: Fleiss' kappa", justify="right")
        if hj:
            g.add_column("judge: balanced F1", justify="right")
            g.add_column("judge: kappa", justify="right")
            g.add_column("judge: leniency", justify="right")
        for row in groups["rows"]:
            h = row["human_human"]
            cells = [str(row["group"]) if row["group"] is not None else "—"]
            if groups["by"] == "criterion":
                cells.append(str(row.get("task_id")))
            cells += [str(h["n_units"]), _cell(h["percent_agreement"]), _cell(h["fleiss_kappa"])]
            if hj:
                j = row["human_judge"]
                m = j["metrics"] if j else {}
                cells += [
                    _cell(m.get("balanced_f1")),
                    _cell(m.get("cohen_kappa")),
                    _cell(m.get("leniency_bias")),
                ]
            g.add_row(*cells)
        console.print(g)
    _notes(console, notes)


def _by_version(
    db: str | None,
    benchmark: str | None,
    judge: str | None,
    by: str | None,
    humans: str | None,
    n_boot: int,
    seed: int,
    ci: float,
    as_json: bool,
) -> None:
    """``gradercal agreement --by-version``."""
    from click.core import ParameterSource

    from gradercal.analysis.versions import versions_report
    from gradercal.db.eras import load_eras

    ctx = click.get_current_context()
    if ctx.get_parameter_source("version") == ParameterSource.COMMANDLINE:
        raise click.UsageError("--by-version counts every verdict: leave out --version")
    if by is not None:
        raise click.UsageError("--by-version and --by do not go together")
    repo, frames, name = _load(db, benchmark, "all")
    if judge is not None:
        _check_judge(frames, judge)
    names = _humans(frames, humans, judge)
    rep = versions_report(
        frames,
        load_eras(repo, name),
        names,
        judge,
        n_boot=n_boot,
        seed=seed,
        ci=ci,
        benchmark=name,
    )
    if as_json:
        emit_json(with_version(rep, "all"))
        return
    _print_by_version(rep)


def _print_by_version(rep: dict[str, Any]) -> None:
    from rich.table import Table

    console = _console()
    rows = rep["criteria"]
    if not rows:
        console.print("no criterion was revised in a way that changes verdicts")
        return
    judge = rep.get("judge")
    level = f"{rep['bootstrap']['ci']:.0%} CI" if rep.get("bootstrap") else "no CI"
    t = Table(
        title=f"Agreement per criterion version ({rep['n_revised']} revised criteria; "
        f"experts {', '.join(rep['humans']) or 'none'}; intervals resample responses)",
        title_justify="left",
    )
    for col in ("task", "criterion", "version", "n", f"agreement [{level}]", "alpha"):
        t.add_column(col, justify="left" if col in ("task", "criterion") else "right")
    if judge:
        t.add_column("judge n", justify="right")
        t.add_column(f"{judge} vs experts", justify="right")
    notes: list[str] = list(rep.get("notes") or [])
    last: tuple[str, str] | None = None
    for r in rows:
        key = (r["task_id"], r["criterion_id"])
        cells = [
            *(("", "") if key == last else key),
            f"v{r['version']}" + (" (current)" if r["current"] else ""),
            str(r["n_units_paired"]),
            _cell(r["percent_agreement"]),
            _cell(r["krippendorff_alpha"]),
        ]
        if judge:
            hj = r["human_judge"]
            cells += [str(hj["n_units"]), _cell(hj["percent_agreement"])]
        t.add_row(*cells)
        last = key
    console.print(t)
    console.print("n: responses with two or more expert verdicts of that version", style="dim")
    _notes(console, notes)


# ----------------------------------------------------------------------------- alt-test


@click.command()
@db_option
@benchmark_option
@click.option("--judge", "-j", metavar="NAME", required=True, help="The judge to test.")
@click.option(
    "--epsilon",
    type=click.FloatRange(0.0, 1.0, max_open=True),
    default=0.2,
    show_default=True,
    help="Cost-benefit allowance ε (0.2 for experts, 0.15 skilled, 0.1 crowd).",
)
@click.option(
    "--alpha",
    type=click.FloatRange(0.0, 1.0, min_open=True, max_open=True),
    default=0.05,
    show_default=True,
    help="FDR level of the Benjamini–Yekutieli correction.",
)
@click.option(
    "--cluster",
    type=click.Choice(["auto", "task", "none"]),
    default="auto",
    show_default=True,
    help="auto: the task-clustered test when tasks hold several criteria (items of one "
    "task are correlated), else the exact test; task / none: force either.",
)
@click.option(
    "--min-tasks",
    type=click.IntRange(2),
    default=10,
    show_default=True,
    help="Fewest tasks for the task-clustered test of one expert (fewer: not tested).",
)
@click.option(
    "--seed",
    type=int,
    default=0,
    show_default=True,
    help="Seed of the task-clustered test's bootstrap.",
)
@humans_option
@version_option
@json_option
@handle_errors
@refusals
def alttest(
    db: str | None,
    benchmark: str | None,
    judge: str,
    epsilon: float,
    alpha: float,
    cluster: str,
    min_tasks: int,
    seed: int,
    humans: str | None,
    version: Any,
    as_json: bool,
) -> None:
    """The alternative annotator test: may the judge replace the experts?

    Calderon, Reichart & Dror (ACL 2025): leave one expert out at a time and test whether
    the judge represents the remaining experts at least as well as the excluded one,
    up to ε, with the Benjamini–Yekutieli correction. Per expert: a task-clustered
    bootstrap-t test when tasks hold several criteria (the default), else an exact test
    whose size is at most α for any number of items. Experts with items in fewer than
    --min-tasks tasks are not tested (and said so). The judge passes when it wins against
    at least half of the tested experts. Needs at least two testable experts on shared
    items (three recommended).
    """
    from gradercal.analysis.alt_test import alt_test_frames

    repo, frames, name = _load(db, benchmark, version)
    _check_judge(frames, judge)
    res = alt_test_frames(
        frames,
        judge,
        _humans(frames, humans, judge),
        epsilon=epsilon,
        alpha=alpha,
        cluster=cluster,  # type: ignore[arg-type]
        min_clusters=min_tasks,
        seed=seed,
    )
    out = {"benchmark": name, **res.to_dict()}
    if res.clustering == "none":
        # options of the task-clustered test, typed by the user, that did nothing
        from click.core import ParameterSource

        ctx = click.get_current_context()
        idle = [
            flag
            for param, flag in (("seed", "--seed"), ("min_tasks", "--min-tasks"))
            if ctx.get_parameter_source(param) == ParameterSource.COMMANDLINE
        ]
        if idle:
            out["warnings"] = [
                *out["warnings"],
                f"{', '.join(idle)} only {'affects' if len(idle) == 1 else 'affect'} the "
                "task-clustered test; the exact test was used (items independent)",
            ]
    if as_json:
        _emit(repo, name, version, out)
        return
    from rich.table import Table

    console = _console()
    how = (
        f"task-clustered bootstrap-t over {res.n_clusters} tasks"
        if res.clustering == "task"
        else "exact test, items independent"
    )
    t = Table(
        title=f"Alt-test of {judge}: ε = {epsilon:g}, α = {alpha:g} ({res.n_items} items; {how})",
        title_justify="left",
    )
    for col in (
        "left-out expert",
        "items",
        "tasks",
        "test",
        "ρ judge",
        "ρ expert",
        "p",
        "p (BY)",
        "judge wins",
    ):
        t.add_column(col, justify="left" if col == "left-out expert" else "right")
    for a in res.annotators:
        t.add_row(
            a.human,
            str(a.n_items),
            "—" if a.n_clusters is None else str(a.n_clusters),
            a.test,
            _num(a.rho_judge),
            _num(a.rho_human),
            "—" if a.p_value is None else f"{a.p_value:.3g}",
            "—" if a.p_adjusted is None else f"{a.p_adjusted:.3g}",
            "—" if not a.tested else ("yes" if a.rejected else "no"),
        )
    console.print(t)
    verdict = ("PASSES", "green") if res.passed else ("FAILS", "red")
    tested = len(res.tested)
    console.print(
        styled(
            f"winning rate ω = {res.winning_rate:.3f} over {tested} tested expert"
            f"{'s' if tested != 1 else ''}, average advantage probability "
            f"ρ = {res.advantage_probability:.3f}: the judge ",
            verdict,
            " (ω ≥ 0.5 needed)",
        )
    )
    _notes(console, [*out["warnings"], *(f"{a.human}: {a.note}" for a in res.annotators if a.note)])


# ---------------------------------------------------------------------------- calibrate


@click.command()
@db_option
@benchmark_option
@click.option("--judge", "-j", metavar="NAME", required=True, help="The judge to calibrate.")
@click.option(
    "--method",
    type=EngineChoice(_calibration_methods),
    default="threshold",
    show_default=True,
    help="threshold/leniency correct criterion verdicts; isotonic/platt map response scores.",
)
@click.option(
    "--metric",
    type=click.Choice(["kappa", "f1", "balanced_f1"]),
    default="kappa",
    show_default=True,
    help="What the threshold maximises.",
)
@click.option(
    "--per-tag/--overall",
    "per_tag",
    default=None,
    help="One threshold per criterion tag (default: overall for threshold, per tag for leniency).",
)
@click.option(
    "--tag-prefix",
    metavar="PREFIX",
    help="Group criteria by their first tag with this prefix (e.g. axis:).",
)
@click.option(
    "--folds",
    type=click.IntRange(min=2),
    default=5,
    show_default=True,
    help="GroupKFold folds (by task).",
)
@click.option(
    "--holdout",
    "holdout",
    type=click.FloatRange(0.0, 1.0, max_open=True),
    default=None,
    metavar="FRACTION",
    help="Share of the human-graded tasks held out (drawn with --seed), never used to fit; "
    "the figures on them are the test metrics. 0: none. [default: 0.25, or none with a "
    "warning below 4 human-graded tasks]",
)
@click.option(
    "--save/--no-save",
    default=True,
    show_default=True,
    help="Store the calibration in the database.",
)
@humans_option
@click.option(
    "--bootstrap",
    "n_boot",
    type=click.IntRange(min=0),
    default=1000,
    show_default=True,
    help="Task bootstrap resamples for the intervals (0: none). The out-of-fold figures' "
    "intervals redo the whole cross-fit on every resample (see --oof-interval).",
)
@click.option(
    "--oof-interval",
    type=click.Choice(["refit", "fixed"]),
    default="refit",
    show_default=True,
    help="refit: every task resample repeats the fold split and the fits, so the "
    "interval accounts for the fitting; fixed: the fitted calibrators are held fixed "
    "(faster, too narrow: 77-90% coverage at nominal 95% in docs/agreement.md).",
)
@click.option(
    "--seed",
    type=int,
    default=0,
    show_default=True,
    help="Seed of the bootstrap and of the held-out task draw.",
)
@ci_option
@version_option
@json_option
@handle_errors
@refusals
def calibrate(
    db: str | None,
    benchmark: str | None,
    judge: str,
    method: str,
    metric: str,
    per_tag: bool | None,
    tag_prefix: str | None,
    folds: int,
    holdout: float | None,
    save: bool,
    humans: str | None,
    n_boot: int,
    oof_interval: str,
    seed: int,
    ci: float,
    version: Any,
    as_json: bool,
) -> None:
    """Calibrate the judge against the experts; report held-out figures; save it.

    A seeded random share of the human-graded tasks (--holdout, default 0.25) is
    reserved: nothing is fitted on it. The rest, the calibration tasks, are evaluated
    out of fold (GroupKFold by task): agreement, leniency bias, Brier score and ECE
    before and after, and the effect on response scores and pass/fail. The calibrator
    fitted on all calibration tasks is then measured on the reserved tasks (the test
    figures) and saved as the judge's active calibration (a new version).
    """
    from gradercal.analysis.calibration import fit_calibration

    repo, frames, name = _load(db, benchmark, version)
    _check_judge(frames, judge)
    with progress_bar(not as_json) as update:
        update("calibrating", 0, 1)
        res = fit_calibration(
            frames,
            judge,
            method,  # type: ignore[arg-type]
            _humans(frames, humans, judge),
            n_splits=folds,
            per_group=per_tag,
            metric=metric,  # type: ignore[arg-type]
            tag_prefix=tag_prefix,
            n_boot=n_boot,
            oof_interval=oof_interval,  # type: ignore[arg-type]
            seed=seed,
            ci=ci,
            benchmark=name,
            holdout=DEFAULT_HOLDOUT if holdout is None else holdout,
            strict_holdout=holdout is not None,
        )
        update("calibrating", 1, 1)
    saved = None
    if save:
        from gradercal.db.calibrations import save_calibration

        saved = save_calibration(
            repo,
            name,
            judge,
            method,
            params=json_safe(res.params),
            split=json_safe(res.split),
            metrics=json_safe(res.metrics),
            # fitted on other verdicts than the current ones: say which
            provenance=json_safe(
                res.provenance if version == "current" else {**res.provenance, "version": version}
            ),
        )
    out = {"benchmark": name, "saved": None if saved is None else saved.to_dict(), **res.to_dict()}
    if as_json:
        _emit(repo, name, version, out)
        return
    for w in res.warnings:
        click.echo(click.style("warning: ", fg="yellow", bold=True) + w, err=True)
    _print_calibration(out)


def _print_calibration(out: dict[str, Any]) -> None:
    from rich.table import Table

    from gradercal.analysis.calibration import FIGURE_LABELS

    console = _console()
    m = out["metrics"]
    p = out["params"]
    head = styled((f"{out['method']} calibration of {out['judge']}", "bold"))
    if "threshold" in p:
        head += f": threshold {p['threshold']:.4g}"
        if p.get("group_thresholds"):
            head += " overall; " + ", ".join(
                f"{g} {t:.4g}" for g, t in p["group_thresholds"].items()
            )
    if "coef" in p:
        head += f": g(x) = σ({p['coef']:.4g}·x + {p['intercept']:.4g})"
    console.print(head)
    split = out["split"]
    held = list(split.get("held_out") or [])
    console.print(
        f"out of fold by {split['n_splits']}-fold GroupKFold over {m['n_tasks']} calibration "
        f"tasks ({m.get('n_items', '—')} criterion verdicts, {m['n_responses']} responses)"
    )
    test = m.get("test")
    if held and test:
        console.print(
            f"held out (never fitted on, seed {split.get('seed')}): {len(held)} tasks "
            f"({', '.join(held)}; {test.get('n_items', '—')} criterion verdicts, "
            f"{test['n_responses']} responses)"
        )
    else:
        console.print("held out: no task (--holdout 0): the out-of-fold figures are the only check")
    notes: list[str] = []
    blocks = [(m, "out of fold, calibration tasks")]
    if test:
        blocks.append((test, "held-out tasks (test)"))
    for source, title in blocks:
        for level in ("criterion", "response"):
            block = source.get(level)
            if not block:
                continue
            t = Table(title=f"{level} level, {title}", title_justify="left")
            for col in ("figure", "raw judge", "calibrated", "change"):
                t.add_column(col, justify="left" if col == "figure" else "right")
            for key, fig in block["before"].items():
                t.add_row(
                    FIGURE_LABELS.get(key, key),
                    _cell(fig),
                    _cell(block["after"][key]),
                    _cell(block["change"][key]),
                )
                notes.append(fig.get("note") or "")
            console.print(t)
    if out.get("saved"):
        s = out["saved"]
        console.print(f"saved as {out['method']} version {s['version']} (id {s['id']}), active")
    _notes(console, notes)


# ----------------------------------------------------------------------------- estimate


@click.command()
@db_option
@benchmark_option
@click.option(
    "--judge", "-j", metavar="NAME", required=True, help="The judge that graded everything."
)
@click.option(
    "--stratify",
    type=click.Choice(["workflow", "domain"]),
    help="Stratified PPI: one estimate per workflow (or domain), weighted by size.",
)
@click.option(
    "--rg-pooled",
    is_flag=True,
    help="Estimate the judge's sensitivity/specificity over all models (Rogan–Gladen).",
)
@click.option(
    "--sequential",
    is_flag=True,
    help="Add anytime-valid confidence sequences (cs) beside the fixed-sample intervals.",
)
@humans_option
@ci_option
@version_option
@json_option
@handle_errors
@refusals
def estimate(
    db: str | None,
    benchmark: str | None,
    judge: str,
    stratify: str | None,
    rg_pooled: bool,
    sequential: bool,
    humans: str | None,
    ci: float,
    version: Any,
    as_json: bool,
) -> None:
    """Bias-corrected mean score and pass rate per model from a human-graded subset.

    PPI++ (prediction-powered inference with power tuning) combines the experts'
    scores on the graded subset with the judge's on everything, and shows the
    effective number of human labels gained; the Rogan–Gladen correction of the
    judge's pass rate includes the uncertainty of the sensitivity and specificity.
    """
    from gradercal.analysis.estimate import estimate_report

    repo, frames, name = _load(db, benchmark, version)
    _check_judge(frames, judge)
    from gradercal.db.assignments import active_design

    probabilities, rounds = active_design(repo.db, name)
    rep = estimate_report(
        frames,
        judge,
        _humans(frames, humans, judge),
        stratify=stratify,  # type: ignore[arg-type]
        ci=ci,
        pooled=rg_pooled,
        benchmark=name,
        inclusion=probabilities,
        rounds=rounds,
    )
    if sequential:
        _attach_sequences(repo, name, frames, judge, _humans(frames, humans, judge), ci, rep)
    if as_json:
        _emit(repo, name, version, rep)
        return
    from rich.table import Table

    console = _console()
    for fig, label in (("mean_score", "Mean rubric score"), ("pass_rate", "Pass rate")):
        methods = dict.fromkeys(r[fig]["method"] for r in rep["models"] if r[fig].get("method"))
        classical = dict.fromkeys(
            r[fig]["classical_method"] for r in rep["models"] if r[fig].get("classical_method")
        )
        how = ""
        if methods:
            how = f": {', '.join(methods)}"
            if classical:
                how += f"; experts only: {', '.join(classical)}"
        t = Table(
            title=f"{label} by model: PPI++{' stratified by ' + stratify if stratify else ''} "
            f"(judge {judge}, {ci:.0%} intervals{how})",
            title_justify="left",
        )
        for col in (
            "model",
            "PPI++",
            "experts only",
            "judge only",
            "human labels",
            "effective",
            "λ",
        ):
            t.add_column(col, justify="left" if col == "model" else "right")
        for row in rep["models"]:
            r = row[fig]
            cl = r["classical_ci"]
            t.add_row(
                row["model"],
                _cell({"value": r["estimate"], "ci": r["ci"]}),
                _cell({"value": r["classical"], "ci": cl}),
                _num(r["judge_only"]),
                str(r["n_labelled"]),
                _num(r["n_effective"], 1),
                _num(r["lambda"], 2),
            )
        console.print(t)
    rg = Table(title="Pass rate, Rogan–Gladen correction of the judge", title_justify="left")
    for col in ("model", "corrected", "judge's apparent", "sensitivity", "specificity"):
        rg.add_column(col, justify="left" if col == "model" else "right")
    notes = list(rep["notes"])
    for row in rep["models"]:
        r = row["pass_rate_rogan_gladen"]
        rg.add_row(
            row["model"],
            _cell({"value": r["estimate"], "ci": r["ci"]}),
            _num(r["apparent"]),
            _num(r["sensitivity"]),
            _num(r["specificity"]),
        )
        notes += [
            r["note"] or "",
            *row["notes"],
            row["mean_score"]["note"] or "",
            row["pass_rate"]["note"] or "",
        ]
    console.print(rg)
    if sequential:
        _print_sequences(console, rep["sequential"])
    _notes(console, notes)


def _attach_sequences(
    repo: Repository,
    name: str,
    frames: Frames,
    judge: str,
    humans: list[str],
    ci: float,
    rep: dict[str, Any],
) -> None:
    """``estimate --sequential``: ``cs`` beside each model's ``ci`` and the report's
    ``sequential`` section (:mod:`gradercal.analysis.sequential_report`)."""
    from gradercal.analysis.sequential_report import sequential_report
    from gradercal.db.completion import consensus_completion_times

    times = consensus_completion_times(repo.db, repo.benchmark(name).id)
    seq = sequential_report(frames, judge, humans, times=times, alpha=1.0 - ci)
    for row in rep["models"]:
        for fig in ("mean_score", "pass_rate"):
            part = seq["models"].get(row["model"], {}).get(fig) or {}
            row[fig]["cs"] = part.get("cs")
            row[fig]["cs_half_width"] = part.get("half_width")
    rep["sequential"] = seq


def _print_sequences(console: Console, seq: dict[str, Any]) -> None:
    labels = {"mean_score": "mean score", "pass_rate": "pass rate"}
    for model, figs in seq["models"].items():
        for fig, label in labels.items():
            w = figs[fig]["half_width"]
            if w is not None:
                console.print(
                    f"model {model}'s {label} is known to ±{w:.3f} (anytime-valid, "
                    f"{figs[fig]['n']} expert-graded responses in {seq['order']} order)"
                )
    ag = seq["agreement"]
    if ag.get("half_width") is not None:
        console.print(
            f"judge–consensus percent agreement {ag['estimate']:.3f} is known to "
            f"±{ag['half_width']:.3f} (anytime-valid; a bounded mean, not κ)"
        )
    decided = [t for t in seq["tasks"] if t["decided"]]
    if seq["tasks"]:
        console.print(
            f"{len(decided)} of {len(seq['tasks'])} tasks: more grading will not change this "
            f"task's decision at the bar {seq['bar']:g} (reviewer agreement's sequence entirely "
            "above or below it)"
        )


# ------------------------------------------------------------------------------- health


@click.command()
@db_option
@benchmark_option
@click.option(
    "--judge",
    "-j",
    metavar="NAME",
    help="Also flag criteria where this judge departs from the consensus.",
)
@click.option(
    "--bar",
    type=click.FloatRange(0.0, 1.0, min_open=True),
    default=0.9,
    show_default=True,
    help="Agreement below this flags a criterion.",
)
@click.option(
    "--all", "include_all", is_flag=True, help="List every criterion, not only flagged ones."
)
@click.option("--limit", type=click.IntRange(min=1), help="Show at most this many criteria.")
@humans_option
@version_option
@json_option
@handle_errors
@refusals
def health(
    db: str | None,
    benchmark: str | None,
    judge: str | None,
    bar: float,
    include_all: bool,
    limit: int | None,
    humans: str | None,
    version: Any,
    as_json: bool,
) -> None:
    """Criteria to fix first: low expert agreement or a judge that departs, ranked by impact.

    Impact = |points| × disagreement. Each flagged criterion lists its disagreeing
    responses with every grader's verdict and rationale (in --json).
    """
    from gradercal.analysis.health import health_report

    repo, frames, name = _load(db, benchmark, version)
    if judge is not None:
        _check_judge(frames, judge)
    rep = health_report(
        frames,
        judge,
        _humans(frames, humans, judge),
        bar=bar,
        include_all=include_all,
        limit=limit,
        benchmark=name,
    )
    if as_json:
        _emit(repo, name, version, rep)
        return
    from rich.table import Table

    console = _console()
    t = Table(
        title=f"Criterion health (bar {bar:.0%}): {rep['n_flagged']} of {rep['n_criteria']} criteria flagged",
        title_justify="left",
    )
    for col in (
        "task",
        "criterion",
        "points",
        "experts agree",
        "judge departs",
        "impact",
        "flags",
        "text",
    ):
        t.add_column(
            col,
            justify="right"
            if col in ("points", "experts agree", "judge departs", "impact")
            else "left",
        )
    for c in rep["criteria"]:
        t.add_row(
            c["task_id"],
            c["criterion_id"],
            str(c["points"]),
            "—"
            if c["human_agreement"] is None
            else f"{c['human_agreement']:.0%} ({c['n_paired']})",
            "—"
            if c["judge_disagreement"] is None
            else f"{c['judge_disagreement']:.0%} ({c['n_judged']})",
            _num(c["impact"], 2),
            "; ".join(c["flags"]),
            c["text"] if len(c["text"]) <= 60 else c["text"][:59] + "…",
        )
    console.print(t)
    console.print(
        "note: per-criterion figures rest on few responses; --json lists the disagreeing verdicts",
        style="dim",
    )


# ------------------------------------------------------------------------------- impact


@click.command()
@db_option
@benchmark_option
@click.option("--judge", "-j", metavar="NAME", required=True, help="The judge.")
@click.option(
    "--calibration",
    type=EngineChoice(lambda: ("active", "none", *_calibration_methods())),
    default="active",
    show_default=True,
    help="Calibrated judge column: the method of the judge's active saved calibration, "
    "a method, or none. Always cross-fitted (out of fold) on the human-graded tasks.",
)
@click.option(
    "--by",
    "by",
    default=",".join(BREAKDOWN_CHOICES),
    show_default=True,
    help="Breakdowns (comma-separated; empty for none).",
)
@humans_option
@bootstrap_option
@seed_option
@ci_option
@version_option
@json_option
@handle_errors
@refusals
def impact(
    db: str | None,
    benchmark: str | None,
    judge: str,
    calibration: str,
    by: str,
    humans: str | None,
    n_boot: int,
    seed: int,
    ci: float,
    version: Any,
    as_json: bool,
) -> None:
    """What the judge does to each model's mean score and pass rate.

    Consensus vs raw judge vs calibrated judge on the same responses, their
    differences with task-clustered intervals, the responses that flip pass ↔ fail,
    breakdowns, and the partial-credit view (failing responses with ≥ 50% of the
    rubric reward).
    """
    from gradercal.analysis.impact import impact_report

    repo, frames, name = _load(db, benchmark, version)
    _check_judge(frames, judge)
    names = _humans(frames, humans, judge)
    groups = [g for g in by.split(",") if g]
    bad = [g for g in groups if g not in BREAKDOWN_CHOICES]
    if bad:
        raise click.BadParameter(
            f"unknown breakdown {bad[0]!r}; use {', '.join(BREAKDOWN_CHOICES)}", param_hint="--by"
        )
    calibrated = None
    described: dict[str, Any] | None = None
    method = None if calibration == "none" else calibration
    options: dict[str, Any] = {}
    if method == "active":
        from gradercal.db.calibrations import load_calibration

        saved = load_calibration(repo, name, judge)
        method = None if saved is None else saved.method
        if saved is not None:
            sk = saved.params.get("sklearn_params") or {}
            options = {
                "per_group": sk.get("per_group"),
                "metric": saved.params.get("metric", "kappa"),
                "tag_prefix": saved.params.get("tag_prefix"),
            }
            described = {
                "source": "active saved calibration",
                "id": saved.id,
                "version": saved.version,
            }
    with progress_bar(not as_json) as update:
        if method is not None:
            from gradercal.analysis.calibration import cross_fit

            update("calibrating", 0, 1)
            cf = cross_fit(frames, judge, method, names, **options)  # type: ignore[arg-type]
            calibrated = cf.responses.loc[:, ["response_id", "oof"]].rename(
                columns={"oof": "score"}
            )
            described = {
                **(described or {"source": "option"}),
                "method": method,
                "out_of_fold": True,
                "n_splits": len(set(cf.folds.values())),
            }
            update("calibrating", 1, 1)
        rep = impact_report(
            frames,
            judge,
            names,
            calibrated=calibrated,
            calibration=described,
            breakdowns=groups,
            n_boot=n_boot,
            seed=seed,
            ci=ci,
            progress=update,
            benchmark=name,
        )
    if as_json:
        _emit(repo, name, version, rep)
        return
    _print_impact(rep, groups)


def _print_impact(rep: dict[str, Any], groups: list[str]) -> None:
    from rich.table import Table

    console = _console()
    graders = rep["graders"]
    names = {"consensus": "experts", "judge": "judge", "calibrated": "calibrated judge"}
    for fig, label in (
        ("mean_score", "Mean rubric score"),
        ("pass_rate", "Pass rate"),
        ("partial_credit_rate", "Partial credit (fails, ≥ 50%)"),
    ):
        t = Table(
            title=f"{label} on {rep['n_paired']} responses graded by all (pass ≥ {rep['pass_threshold']:.0%})",
            title_justify="left",
        )
        t.add_column("model")
        t.add_column("n", justify="right")
        for g in graders:
            t.add_column(names[g], justify="right")
        for g in graders[1:]:
            t.add_column(f"{names[g]} − experts", justify="right")
        rows = [*rep["models"], *([{"model": "all", **rep["overall"]}] if rep["overall"] else [])]
        for row in rows:
            line = [row["model"], str(row["n_responses"])]
            line += [_cell(row[g][fig]) for g in graders]
            line += [_cell(row[f"{g}_minus_consensus"][fig]) for g in graders[1:]]
            t.add_row(*line)
        console.print(t)
    for b in groups:
        rows = rep["breakdowns"].get(b) or []
        if not rows:
            continue
        t = Table(
            title=f"by {b.replace('_', ' ')}: mean score, experts → judge (n)", title_justify="left"
        )
        t.add_column(b.replace("_", " "))
        models = sorted({r["model"] for r in rows})
        for m in models:
            t.add_column(m, justify="right")
        cells: dict[str, dict[str, str]] = {}
        for r in rows:
            cells.setdefault(r["group"], {})[r["model"]] = (
                f"{_num(r['consensus']['mean_score']['value'])} → {_num(r['judge']['mean_score']['value'])} ({r['n_responses']})"
            )
        for gname, per in cells.items():
            t.add_row(gname, *[per.get(m, "") for m in models])
        console.print(t)
    flips = rep["flips"]
    if flips:
        t = Table(
            title=f"Pass ↔ fail flips ({', '.join(f'{k}: {v}' for k, v in rep['n_flips'].items())})",
            title_justify="left",
        )
        for col in ("grader", "model", "task", "response", "experts", "grader score", "direction"):
            t.add_column(col, justify="right" if col in ("experts", "grader score") else "left")
        for f in flips:
            t.add_row(
                names.get(f["grader"], f["grader"]),
                f["model"],
                f["task_id"],
                f["response_id"],
                _num(f["consensus_score"]),
                _num(f["grader_score"]),
                f["direction"],
            )
        console.print(t)
    notes = []
    if rep["n_unpaired"]:
        notes.append(f"{rep['n_unpaired']} responses scored by some graders only were left out")
    if rep.get("calibration") is None:
        notes.append("no calibrated judge: run `gradercal calibrate` or pass --calibration METHOD")
    _notes(console, notes)


def _print_meta_eval(meta: dict[str, Any]) -> None:
    from rich.table import Table

    cats = sorted({c for r in [*meta["judges"], *meta["humans"]] for c in r["by_category"]})
    t = Table(
        title="HealthBench meta-evaluation: pairwise balanced F1 against each physician",
        title_justify="left",
    )
    t.add_column("grader")
    t.add_column("pairs", justify="right")
    t.add_column("balanced F1", justify="right")
    for c in cats:
        t.add_column(c, justify="right")

    def cell(x: Any) -> str:
        return fixed(x)

    for r in [*meta["judges"], *meta["humans"]]:
        t.add_row(
            r["grader"],
            f"{r['n_pairs']:,}",
            cell(r["balanced_f1"]),
            *(cell(r["by_category"].get(c, {}).get("balanced_f1")) for c in cats),
        )
    mean = meta["humans_mean"]
    t.add_row(
        f"physicians' mean ({mean['n_humans']})",
        "",
        cell(mean["balanced_f1"]),
        *(cell(mean["by_category"].get(c)) for c in cats),
    )
    _console().print(t)


# ------------------------------------------------------------------------------ surveys


@click.command()
@db_option
@benchmark_option
@click.option(
    "--bootstrap",
    "n_boot",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Task bootstrap resamples for intervals (0: none).",
)
@seed_option
@ci_option
@json_option
@handle_errors
@refusals
def surveys(
    db: str | None, benchmark: str | None, n_boot: int, seed: int, ci: float, as_json: bool
) -> None:
    """Task review surveys: share (strongly) agreeing per dimension, ordinal alpha across reviewers."""
    from gradercal.analysis.surveys import REVIEW_DIMENSIONS, survey_summary
    from gradercal.db.calibrations import load_task_reviews

    repo = open_repo(db)
    name = repo.benchmark(benchmark).name
    reviews = load_task_reviews(repo, name)
    order = [d.key for d in REVIEW_DIMENSIONS]
    rep = {"benchmark": name, **survey_summary(reviews, order, n_boot=n_boot, seed=seed, ci=ci)}
    if as_json:
        emit_json(rep)
        return
    from rich.table import Table

    console = _console()
    t = Table(
        title=f"Task review surveys: {rep['n_answers']} answers by {rep['n_reviewers']} reviewers on {rep['n_tasks']} tasks",
        title_justify="left",
    )
    for col in (
        "dimension",
        "answers",
        "strongly agree",
        "agree or strongly agree",
        "mean (1–5)",
        "ordinal alpha",
    ):
        t.add_column(col, justify="left" if col == "dimension" else "right")
    notes = []
    for d in rep["dimensions"]:
        t.add_row(
            d["dimension"],
            str(d["n_answers"]),
            _cell(d["share_strongly_agree"], pct=True),
            _cell(d["share_agree_or_strongly_agree"], pct=True),
            _cell(d["mean"], 2),
            _cell(d["krippendorff_alpha"]),
        )
        notes.append(d["krippendorff_alpha"].get("note") or "")
    console.print(t)
    _notes(console, notes)
