"""Computing the dashboard: :func:`compute_dashboard` runs every section at once.

It filters the frames (:mod:`gradercal.dashboard.filters`), picks the primary judge,
shares one context of verdict, consensus and score tables between the engines, runs the
sections of :mod:`gradercal.dashboard.sections` in order and assembles the
:class:`~gradercal.dashboard.result.Dashboard`. With ``processes=2`` the calibration,
models and health sections (and the last grouping) run meanwhile in a forked child
(:mod:`gradercal._util.forked`), with the same numbers. :func:`preload` imports ahead
what the first computation would import.

**Which judge.** Every judge grader (one per prompt version) gets a row in
:attr:`Dashboard.judges`, a confusion matrix and a place in the pairwise matrix. The
per-judge sections — agreement by group, reliability, models, flips, health,
disagreements, alt-test detail — use the *primary* judge: ``judge=`` when given, else the
judge with the most verdicts on judgment criteria (ties: the first by name). Without any
judge those sections are empty and :attr:`Dashboard.notes` says so.

**Threads.** :func:`compute_dashboard` keeps no global state and may run in a worker
thread; ``progress(done, total, label)`` is called after every section and
``cancelled()`` is polled between sections (and inside the engines' progress callbacks);
when it returns True :class:`Cancelled` is raised.

This module imports pandas, numpy and gradercal's core only (no SQL, no Qt).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from gradercal._util.blas import blas_limited
from gradercal._util.collector import collections_paused
from gradercal._util.forked import ChildFailed, ForkedCall, fork_available
from gradercal.analysis.context import AnalysisContext
from gradercal.dashboard.filters import DashboardFilters, filter_frames
from gradercal.dashboard.result import AGREEMENT_COLUMNS, EXPERTS, Dashboard, _empty
from gradercal.dashboard.sections import (
    _agreement_rows,
    _calibrate,
    _calibrated_columns,
    _disagreements,
    _grouping_rows,
    _health,
    _judge_sections,
    _models,
    _overview,
    _pairwise,
    apply_design,
    not_weighted_rows,
)
from gradercal.dashboard.tables import SectionInputs, computed_sections
from gradercal.errors import GradercalError, NotFoundError
from gradercal.frames import Frames, frame_from_rows

if TYPE_CHECKING:
    from gradercal.analysis.agreement import Grouping
    from gradercal.analysis.versions import VerdictEras
    from gradercal.dashboard.sections import Design

__all__ = [
    "DEFAULT_CALIBRATION_METHOD",
    "DEFAULT_N_BOOT",
    "HEADLINE_FIELDS",
    "Cancelled",
    "ProgressCallback",
    "compute_dashboard",
    "headline_of",
    "preload",
    "primary_judge",
]

#: Resamples of the task-clustered bootstrap used when the caller does not say (the
#: bootstrap is a small share of the dashboard's time; see benchmarks/README.md).
DEFAULT_N_BOOT = 200
#: Calibration cross-fitted when no saved calibration is given: per-tag leniency
#: correction, whose calibrated probabilities make a meaningful reliability diagram.
DEFAULT_CALIBRATION_METHOD = "threshold"

#: Whether one :func:`compute_dashboard` call shares its verdict, consensus and score
#: tables between the engines (a per-call context; the tests switch it off to check that
#: the numbers do not depend on it).
_SHARE_TABLES = True
#: BLAS threads while :func:`compute_dashboard` runs (None: leave the library's
#: default). Its matrix products are small (resamples × tasks), so a second BLAS thread
#: buys nothing; on a busy 2-core machine its spinning workers cost ~1 s of a 750-task
#: call. One thread gives the same numbers (the products are sums of counts). Read once,
#: when this module is imported (:func:`gradercal._util.blas.blas_limited`).
_BLAS_THREADS: int | None = 1
#: ``progress(done, total, label)``.
ProgressCallback = Callable[[int, int, str], None]


#: The keys of a headline (:func:`headline_of`): the :class:`Dashboard` fields it holds.
HEADLINE_FIELDS = ("overview", "agreement", "judges", "alt_test", "notes")


def headline_of(**fields: Any) -> dict[str, Any]:
    """A headline: the :data:`HEADLINE_FIELDS` of a dashboard, as a dict (from a finished
    :class:`Dashboard`: ``headline_of(**{k: getattr(d, k) for k in HEADLINE_FIELDS})``).
    Its ``agreement`` may hold only the overall rows, its ``judges`` lack the calibrated
    columns; the overview tiles, the expert α, the judge's κ and the alt-test verdict
    are complete."""
    missing = [k for k in HEADLINE_FIELDS if k not in fields]
    if missing:
        raise TypeError(f"a headline needs {', '.join(missing)}")
    return {k: fields[k] for k in HEADLINE_FIELDS}


class Cancelled(GradercalError):
    """The caller's ``cancelled()`` returned True; the dashboard was not finished."""


def primary_judge(frames: Frames, judge: str | None = None) -> str | None:
    """The judge of the per-judge sections: ``judge`` if given, else the judge grader
    with the most verdicts (ties: the first by name), None without judges.

    Raises:
        NotFoundError: ``judge`` is not a grader of these frames.
    """
    return _graders(frames, judge)[2]


def _graders(frames: Frames, judge: str | None) -> tuple[list[str], list[str], str | None]:
    """``(human graders, judge graders, primary judge)`` from one pass over the judgments:
    the same lists as :func:`gradercal.analysis.agreement.human_graders` / ``judge_graders`` and
    the judge of :func:`primary_judge` (raising as it does)."""
    j = frames.judgments
    codes, uniques = pd.factorize(j["grader"])
    names: list[object] = uniques.tolist()
    human = (j["grader_kind"] == "human").to_numpy(dtype=bool, na_value=False)
    known = codes >= 0
    n = len(names)
    is_h = np.bincount(codes[known & human], minlength=n) > 0
    is_j = np.bincount(codes[known & ~human], minlength=n) > 0
    humans = sorted({str(names[i]) for i in np.flatnonzero(is_h).tolist()})
    judges = sorted({str(names[i]) for i in np.flatnonzero(is_j).tolist()})
    if judge is not None:
        if judge not in judges and judge not in humans:
            raise NotFoundError(
                f"no grader {judge!r} in this benchmark; judges: {', '.join(judges) or 'none'}"
            )
        return humans, judges, judge
    if not judges:
        return humans, judges, None
    # Verdicts (a non-missing met) per grader, as value_counts of the judges' rows.
    per_code = np.bincount(codes[known & j["met"].notna().to_numpy(bool)], minlength=n)
    counts: dict[str, int] = {}
    for i in np.flatnonzero(is_j).tolist():
        name = names[i]
        if isinstance(name, str):
            counts[name] = counts.get(name, 0) + int(per_code[i])
    return humans, judges, max(judges, key=lambda g: (counts.get(g, 0), [-ord(c) for c in g]))


class _Steps:
    """Progress and cancellation between sections."""

    def __init__(
        self,
        total: int,
        progress: ProgressCallback | None,
        cancelled: Callable[[], bool] | None,
    ) -> None:
        self.total = total
        self.done = 0
        self.progress = progress
        self.cancelled = cancelled
        self.elapsed: dict[str, float] = {}
        import time

        self._clock = time.perf_counter
        self._t = self._clock()

    def check(self) -> None:
        if self.cancelled is not None and self.cancelled():
            raise Cancelled("dashboard computation cancelled")

    def engine_hook(self, _stage: str, _done: int, _total: int) -> None:
        """An engine ``(stage, done, total)`` progress callback that polls cancellation."""
        self.check()

    def step(self, label: str) -> None:
        now = self._clock()
        self.elapsed[label] = self.elapsed.get(label, 0.0) + now - self._t
        self._t = now
        self._advance(label)

    def record(self, label: str, seconds: float, *, first: bool = False) -> None:
        """A section computed elsewhere (a forked child) in ``seconds``; with ``first``,
        the time spent here waiting for it goes to ``"waiting for the child"``."""
        now = self._clock()
        if first:
            self.elapsed["waiting for the child"] = now - self._t
        self.elapsed[label] = self.elapsed.get(label, 0.0) + seconds
        self._t = now
        self._advance(label)

    def _advance(self, label: str) -> None:
        self.done += 1
        if self.progress is not None:
            self.progress(min(self.done, self.total), self.total, label)
        self.check()


def _calibration_spec(calibration: Mapping[str, Any] | None) -> tuple[str, dict[str, Any], str]:
    """``(method, cross_fit options, source)`` from saved params (or the default)."""
    if calibration is None:  # (before importing the calibration: scikit-learn, ≈ 1 s)
        return DEFAULT_CALIBRATION_METHOD, {}, "default"
    from gradercal.analysis.calibration import METHODS

    params = calibration.get("params", calibration)
    method = params.get("method") if isinstance(params, Mapping) else None
    if method == "none":
        return "none", {}, "none"
    if method not in METHODS:
        raise ValueError(
            f"calibration must hold a 'method' among {', '.join(METHODS)}; got {method!r}"
        )
    sk = params.get("sklearn_params") or {}
    options: dict[str, Any] = {}
    if sk.get("per_group") is not None:
        options["per_group"] = bool(sk["per_group"])
    if params.get("metric") is not None:
        options["metric"] = params["metric"]
    if params.get("tag_prefix") is not None:
        options["tag_prefix"] = params["tag_prefix"]
    return str(method), options, "saved"


#: Modules a dashboard computation imports on first use: the engines and their scipy,
#: scikit-learn and krippendorff parts (about 2 s on a 2-core machine, once per process).
_PRELOAD = (
    "gradercal.analysis.agreement",
    "gradercal.analysis.alt_test",
    "gradercal.analysis.calibration",
    "gradercal.analysis.estimate",
    "gradercal.analysis.health",
    "gradercal.analysis.impact",
    "gradercal.stats.bootstrap",
    "gradercal.stats.coefficients",
    "scipy.stats",
    "sklearn.isotonic",
    "sklearn.linear_model",
    "sklearn.model_selection",
    "sklearn.utils.multiclass",
    "sklearn.utils.validation",
    "krippendorff",
    "threadpoolctl",
)


def preload() -> None:
    """Import now what :func:`compute_dashboard` would import on its first call.

    For a long-lived process that computes dashboards (the window's worker process): it
    calls this while idle, so that the first dashboard costs its computation only, and a
    forked child (``processes=2``) inherits the modules instead of importing them again.
    """
    import importlib

    for name in _PRELOAD:
        importlib.import_module(name)


# The cyclic collector is paused while the dashboard is computed (restored after; a forked
# child inherits the pause): the sections allocate millions of short-lived objects without
# reference cycles, and at 750 tasks the collector ran about 100 times per call for nothing
# (5–10% of the call). The numbers do not depend on it.
@collections_paused()
@blas_limited(_BLAS_THREADS)
def compute_dashboard(
    frames: Frames,
    *,
    judge: str | None = None,
    filters: DashboardFilters | None = None,
    calibration: Mapping[str, Any] | None = None,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = 0,
    ci: float = 0.95,
    threshold: float | None = None,
    bar: float | None = None,
    benchmark: str | None = None,
    progress: ProgressCallback | None = None,
    cancelled: Callable[[], bool] | None = None,
    processes: int = 1,
    reviews: pd.DataFrame | None = None,
    rounds: pd.DataFrame | None = None,
    versions: tuple[Frames, VerdictEras] | None = None,
    headline: Callable[[dict[str, Any]], None] | None = None,
    design: Design | None = None,
) -> Dashboard:
    """Compute every section of the dashboard.

    Args:
        frames: The benchmark frames (``Repository.load_frames``).
        judge: The primary judge (see the module docstring); None: the judge with the
            most verdicts.
        filters: Restrict to models / workflows / domains / human graders first.
        calibration: The params of a saved calibration
            (``SavedCalibration.params``, or any mapping with ``"method"`` and optionally
            ``sklearn_params.per_group``, ``metric``, ``tag_prefix``; a mapping with a
            ``"params"`` key is unwrapped; ``{"method": "none"}``: no calibrated judge): its method and options are cross-fitted out
            of fold on the human-graded tasks, exactly as ``gradercal impact
            --calibration active`` does (the saved fit itself saw every human label, so
            applying it here would be in-sample). None: :data:`DEFAULT_CALIBRATION_METHOD`.
        n_boot: Task-clustered bootstrap resamples for the intervals (0: none).
        seed: Bootstrap seed.
        ci: Confidence level.
        threshold: Pass threshold (None: the benchmark's, ``frames.pass_threshold``).
        bar: Agreement bar of the criterion-health flags (None:
            :data:`gradercal.analysis.health.DEFAULT_BAR`).
        benchmark: The benchmark's name, echoed in the overview.
        progress: ``progress(done, total, label)`` after every section.
        cancelled: Polled between sections; True raises :class:`Cancelled`.
        processes: 2 (or more): on Linux, compute the agreement by domain, calibration,
            models and health sections in a forked child process while this one computes
            the other agreement sections (:mod:`gradercal._util.forked`; about 30% less wall
            time on 2 cores, same numbers). Only for a process without Qt or other
            threads that a child must not inherit (the dashboard worker process, the
            ``report`` command). If the child fails, its sections are computed here.
            1: one process.
        reviews: Task review answers (``gradercal.db.calibrations.load_task_reviews``)
            for the task review section; None: that section is empty.
        rounds: The tasks' acceptance rounds (``gradercal.db.acceptance.load_round_table``)
            for the task acceptance section; None: that section is empty.
        versions: The frames with every verdict (``load_frames(version="all")``) and
            the eras of the verdicts on revised criteria
            (:func:`gradercal.db.eras.read_eras`), for the agreement per criterion
            version; filtered like ``frames``. None, or no revised criterion: that
            section is absent. Every other section uses ``frames``.
        headline: Called once, as soon as the headline is computed — before any other
            section — with :func:`headline_of` of what is known then: the overview, the
            overall agreement rows (the expert–expert figures and every judge against the
            consensus), the judges table without its calibrated columns, the alt-test of
            the primary judge and the notes so far. Its figures are those of the finished
            :class:`Dashboard` (the same computation; the rest only adds rows). For a
            window that shows the first numbers while the rest computes.
        design: An active design's inclusion probabilities and draws
            (:func:`gradercal.db.assignments.active_design`); None or empty: uniform, as
            before. The estimates are then weighted as ``gradercal estimate`` weights them
            (:mod:`gradercal.dashboard.sections`, "Active designs").

    Raises:
        Cancelled: ``cancelled()`` returned True.
        NotFoundError: ``judge`` is not a grader of the frames.
        ValueError: A malformed ``calibration`` or out-of-range option.
    """
    from gradercal.analysis.agreement import GROUPINGS, HUMAN_STATISTICS, human_agreement
    from gradercal.analysis.health import DEFAULT_BAR
    from gradercal.analysis.verdicts import verdicts

    if not 0.0 < ci < 1.0:
        raise ValueError("ci must be between 0 and 1")
    if n_boot < 0:
        raise ValueError("n_boot must be ≥ 0")
    health_bar = DEFAULT_BAR if bar is None else float(bar)
    if not 0.0 < health_bar <= 1.0:
        raise ValueError("bar must be in (0, 1]")
    method, cal_options, cal_source = _calibration_spec(calibration)
    groupings: list[Grouping] = [g for g in GROUPINGS if g != "criterion"]
    computed = computed_sections()
    steps = _Steps(8 + len(groupings) + len(computed), progress, cancelled)
    steps.check()
    f = filter_frames(frames, filters) if filters is not None else frames
    if threshold is not None:
        if not 0.0 <= threshold <= 1.0:
            raise ValueError("threshold must be in [0, 1]")
        f = replace(f, pass_threshold=float(threshold))
    notes: list[str] = []
    humans, judges, primary = _graders(f, judge)
    if judge is not None and judge in humans:
        humans = [h for h in humans if h != judge]
        judges = sorted({*judges, judge})
    context = AnalysisContext() if _SHARE_TABLES else None
    v = verdicts(f, context=context)
    overview = _overview(f, v, humans, judges, primary, context)
    overview["benchmark"] = benchmark
    overview["filters"] = (filters or DashboardFilters()).describe()
    overview.update({"n_boot": n_boot, "seed": seed, "ci": ci, "bar": health_bar})
    if len(humans) < 2:
        notes.append(
            f"{len(humans)} expert{'s' if len(humans) != 1 else ''}: expert–expert agreement "
            "and the alt-test need at least two"
        )
    if primary is None:
        notes.append("no judge graded this benchmark: the judge sections are empty")
    steps.step("overview")
    # The calibration, models and health sections need nothing from the sections in
    # between: with two processes they run in a forked child meanwhile (same tables in
    # its copy of the context, so the same numbers).
    forked = None
    child_groupings: list[Grouping] = []
    if processes >= 2 and fork_available():
        # For balance, the child also takes the last grouping (on 750 tasks × 25
        # criteria, after the overview: ≈ 2 s of work in each process).
        child_groupings = groupings[-1:]
        late_args = (f, v, primary, humans, method, cal_options, cal_source, health_bar)
        with contextlib.suppress(ChildFailed, OSError):
            forked = ForkedCall(
                functools.partial(
                    _late_sections,
                    *late_args,
                    n_boot,
                    seed,
                    ci,
                    context,
                    None,
                    child_groupings,
                    design,
                )
            )
        if forked is None:
            child_groupings = []

    try:
        # Expert–expert agreement, overall.
        rows: list[tuple[Any, ...]] = []
        ha = human_agreement(f, humans, n_boot=n_boot, seed=seed, ci=ci, context=context)
        rows += _agreement_rows(
            "overall",
            "all",
            None,
            EXPERTS,
            ha.statistics,
            HUMAN_STATISTICS,
            ha.n_units_paired,
            ha.n_tasks,
        )
        steps.step("expert agreement")

        # Every judge against the consensus (+ every expert as a judge).
        judged = _judge_sections(
            f, judges, humans, primary, overview["judge_coverage"], n_boot, seed, ci, context,
            steps, notes,
        )  # fmt: skip
        rows += judged.rows
        judge_rows = judged.table_rows
        steps.step("judges")
        # an active design: the judges' weighted figures and the notes, before the headline
        # shows them (nothing changes under a uniform design)
        rows = apply_design(
            f, design, humans, ci, context, rows, judge_rows, judged.alt, overview, notes
        )
        n_designed = len(rows)
        if headline is not None:
            headline(
                headline_of(
                    overview=overview,
                    agreement=frame_from_rows(rows, AGREEMENT_COLUMNS)
                    if rows
                    else _empty(AGREEMENT_COLUMNS),
                    judges=pd.DataFrame([dict(r) for r in judge_rows])
                    if judge_rows
                    else _empty(("judge", "primary")),
                    alt_test=judged.alt,
                    notes=list(dict.fromkeys(n for n in notes if n)),
                )
            )

        # Pairwise matrix over experts and judges.
        pairwise = _pairwise(f, humans, judges, n_boot, seed, ci, context)
        steps.step("pairwise")

        # Agreement by tag, workflow and domain.
        for by in groupings:
            if by not in child_groupings:
                rows += _grouping_rows(f, by, humans, primary, n_boot, seed, ci, context, steps)

        late = None if forked is None else _late_result(forked, steps, cancelled, notes)
        if late is None:  # one process, or the child failed: its sections computed here
            late = _late_sections(
                f, v, primary, humans, method, cal_options, cal_source, health_bar,
                n_boot, seed, ci, context, steps, child_groupings, design,
            )  # fmt: skip
            notes += late.notes
    finally:
        if forked is not None:
            forked.kill()  # no-op once its result is in; else a cancel or error here
    if primary is not None:
        _calibrated_columns(judge_rows, primary, None if method == "none" else late.cal_cmp)
    rows += late.group_rows
    rows += late.crit_rows
    reliability, cal_info = late.reliability, late.cal_info
    models, flips, health, disagreements = (
        late.models, late.flips, late.health, late.disagreements
    )  # fmt: skip

    # The table sections declared with their own computation (dashboard.tables).
    if reviews is None:
        reviews = _empty(("task_id", "reviewer", "dimension", "answer"))
    elif filters is not None and filters.graders is not None:
        reviews = reviews.loc[reviews["reviewer"].isin(list(filters.graders))]
    inputs = SectionInputs(
        frames=f,
        reviews=reviews,
        humans=tuple(humans),
        primary=primary,
        n_boot=n_boot,
        seed=seed,
        ci=ci,
        rounds=rounds,
        versions=None
        if versions is None or not versions[1]
        else (
            filter_frames(versions[0], filters) if filters is not None else versions[0],
            versions[1],
        ),
    )
    tables: dict[str, pd.DataFrame] = {}
    for table in computed:
        assert table.compute is not None
        frame = table.compute(inputs)
        if frame is not None:  # None: an optional section with nothing to show
            tables[table.key] = frame
        steps.step(table.title.lower())

    rows = rows[:n_designed] + not_weighted_rows(design, rows[n_designed:])
    agreement = frame_from_rows(rows, AGREEMENT_COLUMNS) if rows else _empty(AGREEMENT_COLUMNS)
    judges_df = pd.DataFrame(judge_rows) if judge_rows else _empty(("judge", "primary"))
    if primary is not None and not reliability and method != "none":
        notes.append("no reliability diagram: the calibration could not be fitted")
    notes = list(dict.fromkeys(n for n in notes if n))
    steps.step("done")
    return Dashboard(
        overview=overview,
        agreement=agreement,
        pairwise=pairwise,
        judges=judges_df,
        confusion=judged.confusion,
        reliability=reliability,
        models=models,
        alt_test=judged.alt,
        flips=flips,
        health=health,
        disagreements=disagreements,
        tables=tables,
        notes=notes,
        calibration=cal_info,
        elapsed=dict(steps.elapsed),
    )


#: The sections of :func:`_late_sections` after its groupings, in order (their progress
#: labels).
_LATE_STEPS = ("calibration", "models", "health")


@dataclass
class _LateSections:
    """What the calibration, models and health sections add to the dashboard."""

    cal_info: dict[str, Any] | None
    reliability: dict[str, pd.DataFrame]
    cal_cmp: Any
    models: pd.DataFrame
    flips: pd.DataFrame
    health: pd.DataFrame
    crit_rows: list[tuple[Any, ...]]
    disagreements: pd.DataFrame
    notes: list[str]
    elapsed: dict[str, float]
    group_rows: list[tuple[Any, ...]] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)


def _late_sections(
    f: Frames,
    v: pd.DataFrame,
    primary: str | None,
    humans: list[str],
    method: str,
    cal_options: Mapping[str, Any],
    cal_source: str,
    health_bar: float,
    n_boot: int,
    seed: int,
    ci: float,
    context: AnalysisContext | None,
    steps: _Steps | None,
    groupings: Sequence[Grouping],
    design: Design | None = None,
) -> _LateSections:
    """Agreement by each of ``groupings``, calibration (out of fold) and reliability,
    per-model figures and flips, criterion health, criterion agreement rows and
    disagreements. ``steps`` None: in a forked child (its own clock; progress and
    cancellation are the parent's business)."""
    from gradercal.analysis.verdicts import consensus_verdicts

    own = _Steps(len(groupings) + len(_LATE_STEPS), None, None) if steps is None else steps
    group_rows: list[tuple[Any, ...]] = []
    for by in groupings:
        group_rows += _grouping_rows(f, by, humans, primary, n_boot, seed, ci, context, own)
    notes: list[str] = []
    reliability: dict[str, pd.DataFrame] = {}
    cal_info: dict[str, Any] | None = None
    calibrated_scores: pd.DataFrame | None = None
    cal_cmp: Any = None
    if primary is not None and method == "none":
        notes.append("no calibrated judge: calibration 'none' requested")
    elif primary is not None:
        cal_info, calibrated_scores, rel, cal_cmp = _calibrate(
            f, primary, humans, method, cal_options, cal_source, n_boot, seed, ci, notes, context
        )
        if rel is not None:
            reliability[primary] = rel
    own.step("calibration")
    models, flips = _models(
        f, primary, humans, calibrated_scores, cal_info, n_boot, seed, ci, notes, context, design
    )
    own.step("models")
    health, crit_rows = _health(f, primary, humans, health_bar, context)
    cons = (
        consensus_verdicts(f, humans, context=context)
        if humans
        else pd.DataFrame(columns=["response_id", "criterion_id", "met"])
    )
    disagreements = _disagreements(v, cons, primary, humans, health, context)
    own.step("health")
    return _LateSections(
        cal_info, reliability, cal_cmp, models, flips, health, crit_rows, disagreements,
        notes, dict(own.elapsed) if steps is None else {}, group_rows,
        [*(f"agreement by {by}" for by in groupings), *_LATE_STEPS],
    )  # fmt: skip


def _late_result(
    forked: ForkedCall[_LateSections],
    steps: _Steps,
    cancelled: Callable[[], bool] | None,
    notes: list[str],
) -> _LateSections | None:
    """The forked child's sections (stepping the progress through them), or None when
    the child failed (the caller computes them itself).

    Raises:
        Cancelled: ``cancelled()`` turned True while waiting (the child is killed).
    """
    try:
        late = forked.result(cancelled)
    except InterruptedError:
        raise Cancelled("dashboard computation cancelled") from None
    except ChildFailed:
        return None
    for i, label in enumerate(late.labels):
        steps.record(label, late.elapsed.get(label, 0.0), first=i == 0)
    notes += late.notes
    return late
