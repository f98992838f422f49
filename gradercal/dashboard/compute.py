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
from typing import TYPE_CHECKING, Any, Protocol, TypedDict, Unpack

import numpy as np
import pandas as pd

from gradercal._util.blas import blas_limited
from gradercal._util.collector import collections_paused
from gradercal._util.forked import ChildFailed, ForkedCall, Handover, fork_available
from gradercal.analysis.context import AnalysisContext
from gradercal.dashboard.filters import DashboardFilters, filter_frames
from gradercal.dashboard.inputs import DEFAULT_N_BOOT, DashboardInputs
from gradercal.dashboard.result import AGREEMENT_COLUMNS, EXPERTS, Dashboard, empty_frame
from gradercal.dashboard.sections import (
    Judged,
    agreement_rows,
    apply_design,
    calibrate_section,
    calibrated_columns,
    disagreements_section,
    grouping_rows,
    health_section,
    judge_sections,
    models_section,
    not_weighted_rows,
    overview_section,
    pairwise_section,
)
from gradercal.dashboard.tables import SectionInputs, TableSection, computed_sections
from gradercal.errors import GradercalError, NotFoundError
from gradercal.frames import Frames, frame_from_rows
from gradercal.stats.boot_settings import BootSettings

if TYPE_CHECKING:
    from gradercal.analysis.agreement import Grouping
    from gradercal.analysis.versions import VerdictEras
    from gradercal.dashboard.inputs import Design

__all__ = [
    "DEFAULT_CALIBRATION_METHOD",
    "DEFAULT_N_BOOT",
    "HEADLINE_FIELDS",
    "Cancelled",
    "DashboardOptions",
    "PartialWork",
    "ProgressCallback",
    "compute_dashboard",
    "headline_of",
    "preload",
    "primary_judge",
]

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


class PartialWork(Protocol):
    """Work on the dashboard's sections as soon as a process has computed them
    (:func:`compute_dashboard`'s ``partial``), e.g. the report drawing its charts in the
    process that computed their numbers while the other still computes.

    ``take(d, known)`` runs in the process that computed the sections — with
    ``processes=2`` once in this process and once in the forked child — on a
    :class:`Dashboard` holding them, the overview of the first step, and empty
    placeholders for the rest. ``known`` names the parts that are already those of the
    finished dashboard: field names, and ``agreement:<by>`` per grouping (``overall``
    included) whose agreement rows are all there. What ``take`` returns must pickle;
    ``keep(result)`` gets it in the calling process, in the order the sections finished.
    """

    def take(self, d: Dashboard, known: frozenset[str]) -> Any: ...

    def keep(self, result: Any) -> None: ...


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


#: Modules a dashboard computation imports on first use: the engines and their scipy and
#: krippendorff parts (about 1 s on a 2-core machine, once per process). The default
#: calibration (``threshold``, as ``leniency``) needs no scikit-learn
#: (:mod:`gradercal.analysis.calibration.thresholds`).
_PRELOAD = (
    "gradercal.analysis.agreement",
    "gradercal.analysis.alt_test",
    "gradercal.analysis.calibration",
    "gradercal.analysis.estimate",
    "gradercal.analysis.health",
    "gradercal.analysis.impact",
    "gradercal.stats.bootstrap",
    "gradercal.stats.coefficients",
    # (not scipy.stats, ≈ 0.35 s: the estimates' t quantiles come from scipy.special; the
    # few engines that need it — correlations of scales, the alt-test's exact test without
    # tasks — import it on first use)
    "krippendorff",
    "threadpoolctl",
)
#: What the ``isotonic`` and ``platt`` calibrations add: scikit-learn's estimators (about
#: 0.6 s more).
_PRELOAD_ESTIMATORS = (
    "sklearn.isotonic",
    "sklearn.linear_model",
    "sklearn.model_selection",
    "sklearn.utils.multiclass",
    "sklearn.utils.validation",
    "gradercal.analysis.calibration.calibrators",
)


def preload(*, estimators: bool = True) -> None:
    """Import now what :func:`compute_dashboard` would import on its first call.

    For a long-lived process that computes dashboards (the window's worker process): it
    calls this while idle, so that the first dashboard costs its computation only, and a
    forked child (``processes=2``) inherits the modules instead of importing them again.
    ``estimators=False`` leaves out scikit-learn (:data:`_PRELOAD_ESTIMATORS`), which
    only the ``isotonic`` and ``platt`` calibrations import (on first use): for a process
    that computes one dashboard of another method (``gradercal report``).
    """
    import importlib

    for name in _PRELOAD + (_PRELOAD_ESTIMATORS if estimators else ()):
        importlib.import_module(name)


class DashboardOptions(TypedDict, total=False):
    """The keyword form of :func:`compute_dashboard` (``compute_dashboard(frames, …)``):
    the fields of :class:`DashboardRequest` and :class:`DashboardData` by name, with the
    bootstrap as ``n_boot``, ``seed`` and ``ci`` (see :meth:`DashboardInputs.of`)."""

    judge: str | None
    filters: DashboardFilters | None
    calibration: Mapping[str, Any] | None
    n_boot: int
    seed: int
    ci: float
    threshold: float | None
    bar: float | None
    benchmark: str | None
    reviews: pd.DataFrame | None
    rounds: pd.DataFrame | None
    versions: tuple[Frames, VerdictEras] | None
    design: Design | None


# The cyclic collector is paused while the dashboard is computed (restored after; a forked
# child inherits the pause): the sections allocate millions of short-lived objects without
# reference cycles, and at 750 tasks the collector ran about 100 times per call for nothing
# (5–10% of the call). The numbers do not depend on it.
@collections_paused()
@blas_limited(_BLAS_THREADS)
# Text columns made with pandas' Python-backed strings: where pyarrow is installed pandas
# would back them with Arrow, and the sections' many small operations on them cost about
# 0.1–0.3 s more at 750 tasks, the first call the most (Arrow's compute kernels load).
# The same values either way.
@pd.option_context("mode.string_storage", "python")
def compute_dashboard(
    inputs: DashboardInputs | Frames,
    *,
    progress: ProgressCallback | None = None,
    cancelled: Callable[[], bool] | None = None,
    processes: int = 1,
    headline: Callable[[dict[str, Any]], None] | None = None,
    partial: PartialWork | None = None,
    **options: Unpack[DashboardOptions],
) -> Dashboard:
    """Compute every section of the dashboard.

    Args:
        inputs: The data and the request (:class:`~gradercal.dashboard.inputs.DashboardInputs`:
            what each field means is said there). Or, the keyword form, the benchmark
            frames with ``options`` naming the request's and the data's fields
            (:meth:`DashboardInputs.of <gradercal.dashboard.inputs.DashboardInputs.of>`;
            the bootstrap as ``n_boot``, ``seed``, ``ci``):
            ``compute_dashboard(frames, judge="j", n_boot=100)`` is
            ``compute_dashboard(DashboardInputs.of(frames, judge="j", n_boot=100))``.
            The calibration is always cross-fitted out of fold on the human-graded tasks,
            exactly as ``gradercal impact --calibration active`` does (a saved fit saw
            every human label: applying it here would be in-sample); None:
            :data:`DEFAULT_CALIBRATION_METHOD`. The versions are filtered like the frames;
            an active design weights the estimates as ``gradercal estimate`` does
            (:mod:`gradercal.dashboard.sections`, "Active designs").
        progress: ``progress(done, total, label)`` after every section.
        cancelled: Polled between sections; True raises :class:`Cancelled`.
        processes: 2 (or more): on Linux, compute the agreement by tag, calibration,
            models and health sections in a forked child process while this one computes
            the other agreement sections (:mod:`gradercal._util.forked`; about 30% less wall
            time on 2 cores, same numbers). Only for a process without Qt or other
            threads that a child must not inherit (the dashboard worker process, the
            ``report`` command). If the child fails, its sections are computed here.
            1: one process.
        headline: Called once, as soon as the headline is computed — before any other
            section — with :func:`headline_of` of what is known then: the overview, the
            overall agreement rows (the expert–expert figures and every judge against the
            consensus), the judges table without its calibrated columns, the alt-test of
            the primary judge and the notes so far. Its figures are those of the finished
            :class:`Dashboard` (the same computation; the rest only adds rows). For a
            window that shows the first numbers while the rest computes.
        partial: Given each process's sections as soon as it has computed them
            (:class:`PartialWork`): this process's (expert and judge agreement, the
            pairwise matrix, its groupings) before it waits for the child's, the child's
            (its grouping, calibration, models, health, disagreements) in the child
            (with one process, after this process's).

    Raises:
        Cancelled: ``cancelled()`` returned True.
        NotFoundError: ``judge`` is not a grader of the frames.
        ValueError: A malformed ``calibration`` or out-of-range option.
        TypeError: :class:`DashboardInputs` given with keyword options.
    """
    if isinstance(inputs, DashboardInputs):
        if options:
            raise TypeError(f"compute_dashboard(DashboardInputs, …) takes no {', '.join(options)}")
    else:
        inputs = DashboardInputs.of(inputs, **options)
    from gradercal.analysis.agreement import GROUPINGS

    groupings: list[Grouping] = [g for g in GROUPINGS if g != "criterion"]
    computed = computed_sections()
    run = _prepare(inputs, _Steps(8 + len(groupings) + len(computed), progress, cancelled))
    core = _core_sections(run, groupings, processes, headline, partial)
    if run.primary is not None:
        cal_cmp = None if run.late.method == "none" else core.late.cal_cmp
        calibrated_columns(core.judge_rows, run.primary, cal_cmp)
    tables = _table_sections(run, inputs, computed)
    return _assemble(run, core, tables)


def _assemble(run: _Run, core: _Core, tables: dict[str, pd.DataFrame]) -> Dashboard:
    """The :class:`Dashboard` of the computed sections (the last step)."""
    from gradercal.analysis.agreement import GROUPINGS

    late = core.late
    # the agreement by tag, workflow and domain in that order, whichever process
    # computed which (a stable sort: each grouping's rows keep their order)
    order = {by: i for i, by in enumerate(GROUPINGS)}
    grouped = sorted([*core.rows[core.n_designed :], *late.group_rows], key=lambda r: order[r[0]])
    agreement = _agreement_frame(run, core.rows[: core.n_designed], [*grouped, *late.crit_rows])
    notes = run.notes
    if run.primary is not None and not late.reliability and run.late.method != "none":
        notes.append("no reliability diagram: the calibration could not be fitted")
    run.steps.step("done")
    return Dashboard(
        overview=run.overview,
        agreement=agreement,
        pairwise=core.pairwise,
        judges=pd.DataFrame(core.judge_rows) if core.judge_rows else empty_frame(_JUDGES_EMPTY),
        confusion=core.judged.confusion,
        reliability=late.reliability,
        models=late.models,
        alt_test=core.judged.alt,
        flips=late.flips,
        health=late.health,
        disagreements=late.disagreements,
        tables=tables,
        notes=list(dict.fromkeys(n for n in notes if n)),
        calibration=late.cal_info,
        elapsed=dict(run.steps.elapsed),
    )


def _agreement_frame(
    run: _Run, designed: list[tuple[Any, ...]], later: list[tuple[Any, ...]]
) -> pd.DataFrame:
    """The agreement table of the rows computed before :func:`apply_design` ran
    (``designed``) and after it (``later``: under an active design each says it is not
    design-weighted)."""
    rows = [*designed, *not_weighted_rows(run.late.design, later)]
    return frame_from_rows(rows, AGREEMENT_COLUMNS) if rows else empty_frame(AGREEMENT_COLUMNS)


def _partial_dashboard(
    overview: dict[str, Any], agreement: pd.DataFrame, **fields: Any
) -> tuple[Dashboard, frozenset[str]]:
    """A dashboard of the sections one process computed (:class:`PartialWork`), and what
    of it is known: ``fields`` and the groupings with agreement rows."""
    empty = Dashboard(
        overview=overview,
        agreement=agreement,
        pairwise=empty_frame(()),
        judges=empty_frame(_JUDGES_EMPTY),
        confusion={},
        reliability={},
        models=empty_frame(()),
        alt_test=None,
        flips=empty_frame(()),
        health=empty_frame(()),
        disagreements=empty_frame(()),
    )
    d = replace(empty, **fields)
    groups = set(agreement["by"]) if len(agreement) else set()
    return d, frozenset([*fields, *(f"agreement:{by}" for by in groups)])


#: The columns of an empty judges table.
_JUDGES_EMPTY = ("judge", "primary")


@dataclass(frozen=True)
class _LateArgs:
    """What the calibration, models and health sections are computed from (in this
    process or a forked child)."""

    f: Frames
    v: pd.DataFrame
    primary: str | None
    humans: list[str]
    method: str
    cal_options: Mapping[str, Any]
    cal_source: str
    health_bar: float
    boot: BootSettings
    context: AnalysisContext | None
    design: Design | None


@dataclass
class _Run:
    """One computation's shared state, from :func:`_prepare` on."""

    late: _LateArgs
    judges: list[str]
    overview: dict[str, Any]
    notes: list[str]
    steps: _Steps

    @property
    def f(self) -> Frames:
        return self.late.f

    @property
    def humans(self) -> list[str]:
        return self.late.humans

    @property
    def primary(self) -> str | None:
        return self.late.primary

    @property
    def boot(self) -> BootSettings:
        return self.late.boot

    @property
    def context(self) -> AnalysisContext | None:
        return self.late.context


def _prepare(inputs: DashboardInputs, steps: _Steps) -> _Run:
    """Check the request, filter the frames, find the graders and compute the overview
    (the first step)."""
    from gradercal.analysis.health import DEFAULT_BAR
    from gradercal.analysis.verdicts import verdicts

    request, data, boot = inputs.request, inputs.data, inputs.request.boot
    boot.check()
    health_bar = DEFAULT_BAR if request.bar is None else float(request.bar)
    if not 0.0 < health_bar <= 1.0:
        raise ValueError("bar must be in (0, 1]")
    method, cal_options, cal_source = _calibration_spec(request.calibration)
    steps.check()
    filters = request.filters
    f = filter_frames(data.frames, filters) if filters is not None else data.frames
    if request.threshold is not None:
        if not 0.0 <= request.threshold <= 1.0:
            raise ValueError("threshold must be in [0, 1]")
        f = replace(f, pass_threshold=float(request.threshold))
    notes: list[str] = []
    humans, judges, primary = _graders(f, request.judge)
    if request.judge is not None and request.judge in humans:
        humans = [h for h in humans if h != request.judge]
        judges = sorted({*judges, request.judge})
    context = AnalysisContext() if _SHARE_TABLES else None
    v = verdicts(f, context=context)
    overview = overview_section(f, v, humans, judges, primary, context)
    overview["benchmark"] = request.benchmark
    overview["filters"] = (filters or DashboardFilters()).describe()
    overview.update({"n_boot": boot.n_boot, "seed": boot.seed, "ci": boot.ci, "bar": health_bar})
    if len(humans) < 2:
        notes.append(
            f"{len(humans)} expert{'s' if len(humans) != 1 else ''}: expert–expert agreement "
            "and the alt-test need at least two"
        )
    if primary is None:
        notes.append("no judge graded this benchmark: the judge sections are empty")
    steps.step("overview")
    late = _LateArgs(
        f, v, primary, humans, method, cal_options, cal_source, health_bar, boot, context,
        data.design,
    )  # fmt: skip
    return _Run(late, judges, overview, notes, steps)


@dataclass
class _Core:
    """The sections computed in this process (the late ones possibly in a child)."""

    rows: list[tuple[Any, ...]]
    n_designed: int
    judged: Judged
    pairwise: pd.DataFrame
    late: _LateSections

    @property
    def judge_rows(self) -> list[dict[str, Any]]:
        return self.judged.table_rows


@dataclass
class _Late:
    """The forked child of the late sections (None: they are computed here), the
    groupings they take, and what hands the child the overall rows (with a
    :class:`PartialWork`)."""

    forked: ForkedCall[_LateSections] | None
    groupings: list[Grouping]
    overall: Handover | None = None


def _fork_late(
    run: _Run, groupings: list[Grouping], processes: int, partial: PartialWork | None
) -> _Late:
    """The late sections (and the groupings of :data:`_CHILD_GROUPINGS`) in a forked
    child, with ``processes`` ≥ 2 where fork is available; without a child, the same
    groupings, so that one process computes the sections in the same order (the same
    progress). With ``partial``, the child receives the overall agreement rows once
    this process has them (:class:`~gradercal._util.forked.Handover`): its sections'
    charts include the forest plot of its grouping."""
    # For balance, the child also takes the agreement by tag (traced on 750 tasks × 25
    # criteria: tag 0.34 s, workflow 0.14 s, domain 0.13 s; the child's calibration,
    # models, health and disagreements 0.49 s; the parent's expert and judge agreement
    # and pairwise matrix 0.53 s — with the report's charts drawn where their numbers
    # are, 0.35 s in the child and 0.40 s in the parent, ≈ 1.2 s in each process).
    child_groupings = [g for g in groupings if g in _CHILD_GROUPINGS]
    # The calibration, models and health sections need nothing from the sections in
    # between: with two processes they run in a forked child meanwhile (same tables in
    # its copy of the context, so the same numbers).
    if processes < 2 or not fork_available():
        return _Late(None, child_groupings)
    overall = None
    with contextlib.suppress(OSError):
        overall = None if partial is None else Handover()
    with contextlib.suppress(ChildFailed, OSError):
        given = None if partial is None else _PartialIn(partial, run, overall)
        forked = ForkedCall(
            functools.partial(_late_sections, run.late, None, child_groupings, given)
        )
        if overall is not None:
            overall.parent_side()
        return _Late(forked, child_groupings, overall)
    if overall is not None:
        overall.close()
    return _Late(None, child_groupings)


def _core_sections(
    run: _Run,
    groupings: list[Grouping],
    processes: int,
    headline: Callable[[dict[str, Any]], None] | None,
    partial: PartialWork | None = None,
) -> _Core:
    """Expert and judge agreement, the headline, the pairwise matrix, the groupings and
    the late sections (from the forked child, or computed here)."""
    from gradercal.analysis.agreement import HUMAN_STATISTICS, human_agreement

    f, humans, boot, context, steps = run.f, run.humans, run.boot, run.context, run.steps
    fork = _fork_late(run, groupings, processes, partial)
    forked, child_groupings = fork.forked, fork.groupings
    try:
        # Expert–expert agreement, overall.
        ha = human_agreement(f, humans, **boot.kwargs(), context=context)
        rows = agreement_rows(
            "overall", "all", None, EXPERTS, ha.statistics, HUMAN_STATISTICS,
            ha.n_units_paired, ha.n_tasks,
        )  # fmt: skip
        steps.step("expert agreement")
        # Every judge against the consensus (+ every expert as a judge).
        coverage = run.overview["judge_coverage"]
        judged = judge_sections(
            f, run.judges, humans, run.primary, coverage, boot, context, steps, run.notes
        )
        rows += judged.rows
        steps.step("judges")
        # an active design: the judges' weighted figures and the notes, before the headline
        # shows them (nothing changes under a uniform design)
        rows = apply_design(
            f, run.late.design, humans, boot.ci, context, rows, judged.table_rows, judged.alt,
            run.overview, run.notes,
        )  # fmt: skip
        if headline is not None:
            headline(_headline(run, rows, judged))
        if fork.overall is not None:  # the child's forest plot needs them
            fork.overall.send(list(rows))
        n_designed = len(rows)
        pairwise = pairwise_section(f, humans, run.judges, boot, context)
        steps.step("pairwise")
        # Agreement by tag, workflow and domain.
        for by in groupings:
            if by not in child_groupings:
                rows += grouping_rows(f, by, humans, run.primary, boot, context, steps)
        if partial is not None:  # while the child computes
            mine = _agreement_frame(run, rows[:n_designed], rows[n_designed:])
            d, known = _partial_dashboard(
                dict(run.overview), mine, pairwise=pairwise, confusion=judged.confusion
            )
            partial.keep(partial.take(d, known))
        late = None if forked is None else _late_result(forked, steps, steps.cancelled, run.notes)
        if late is None:  # one process, or the child failed: its sections computed here
            given = None if partial is None else _PartialIn(partial, run, rows[:n_designed])
            late = _late_sections(run.late, steps, child_groupings, given)
            run.notes += late.notes
        if partial is not None and late.partial is not None:
            partial.keep(late.partial)
    finally:
        if forked is not None:
            forked.kill()  # no-op once its result is in; else a cancel or error here
        if fork.overall is not None:
            fork.overall.close()
    return _Core(rows, n_designed, judged, pairwise, late)


def _headline(run: _Run, rows: list[tuple[Any, ...]], judged: Judged) -> dict[str, Any]:
    """The headline (:func:`headline_of`) once the judges are computed."""
    return headline_of(
        overview=run.overview,
        agreement=frame_from_rows(rows, AGREEMENT_COLUMNS)
        if rows
        else empty_frame(AGREEMENT_COLUMNS),
        judges=pd.DataFrame([dict(r) for r in judged.table_rows])
        if judged.table_rows
        else empty_frame(_JUDGES_EMPTY),
        alt_test=judged.alt,
        notes=list(dict.fromkeys(n for n in run.notes if n)),
    )


def _table_sections(
    run: _Run, inputs: DashboardInputs, computed: Sequence[TableSection]
) -> dict[str, pd.DataFrame]:
    """The table sections declared with their own computation (:mod:`gradercal.dashboard.tables`),
    given the filtered data."""
    data, filters = inputs.data, inputs.request.filters
    reviews = data.reviews
    if reviews is None:
        reviews = empty_frame(("task_id", "reviewer", "dimension", "answer"))
    elif filters is not None and filters.graders is not None:
        reviews = reviews.loc[reviews["reviewer"].isin(list(filters.graders))]
    versions = data.versions
    if versions is not None and not versions[1]:
        versions = None
    elif versions is not None and filters is not None:
        versions = (filter_frames(versions[0], filters), versions[1])
    section_inputs = SectionInputs(
        frames=run.f,
        data=replace(data, frames=run.f, reviews=reviews, versions=versions),
        humans=tuple(run.humans),
        primary=run.primary,
        boot=run.boot,
    )
    tables: dict[str, pd.DataFrame] = {}
    for table in computed:
        assert table.compute is not None
        frame = table.compute(section_inputs)
        if frame is not None:  # None: an optional section with nothing to show
            tables[table.key] = frame
        run.steps.step(table.title.lower())
    return tables


#: The groupings whose agreement the forked child computes (``processes=2``).
_CHILD_GROUPINGS: tuple[Grouping, ...] = ("tag",)

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
    #: what ``partial.take`` returned on these sections (:class:`PartialWork`)
    partial: Any = None


@dataclass(frozen=True)
class _PartialIn:
    """What :func:`_late_sections` needs to hand its sections to a :class:`PartialWork`:
    the work, the run, and the overall agreement rows (after the design): the rows, or
    in a forked child what hands them over when the parent has them (None: not known)."""

    work: PartialWork
    run: _Run
    overall: list[tuple[Any, ...]] | Handover | None

    def overall_rows(self) -> list[tuple[Any, ...]] | None:
        if isinstance(self.overall, Handover):
            rows: list[tuple[Any, ...]] | None = self.overall.receive()
            return rows
        return self.overall


def _late_sections(
    a: _LateArgs,
    steps: _Steps | None,
    groupings: Sequence[Grouping],
    partial: _PartialIn | None = None,
) -> _LateSections:
    """Agreement by each of ``groupings``, calibration (out of fold) and reliability,
    per-model figures and flips, criterion health, criterion agreement rows and
    disagreements (with ``partial``, handed to its work). ``steps`` None: in a forked
    child (its own clock; progress and cancellation are the parent's business)."""
    from gradercal.analysis.verdicts import consensus_verdicts

    own = _Steps(len(groupings) + len(_LATE_STEPS), None, None) if steps is None else steps
    f, humans, primary, context = a.f, a.humans, a.primary, a.context
    group_rows: list[tuple[Any, ...]] = []
    for by in groupings:
        group_rows += grouping_rows(f, by, humans, primary, a.boot, context, own)
    notes: list[str] = []
    reliability: dict[str, pd.DataFrame] = {}
    cal_info: dict[str, Any] | None = None
    calibrated_scores: pd.DataFrame | None = None
    cal_cmp: Any = None
    if primary is not None and a.method == "none":
        notes.append("no calibrated judge: calibration 'none' requested")
    elif primary is not None:
        cal_info, calibrated_scores, rel, cal_cmp = calibrate_section(
            f, primary, humans, a.method, a.cal_options, a.cal_source, a.boot, notes, context
        )
        if rel is not None:
            reliability[primary] = rel
    own.step("calibration")
    models, flips = models_section(
        f, primary, humans, calibrated_scores, cal_info, a.boot, notes, context, a.design
    )
    own.step("models")
    health, crit_rows = health_section(f, primary, humans, a.health_bar, context)
    cons = (
        consensus_verdicts(f, humans, context=context)
        if humans
        else pd.DataFrame(columns=["response_id", "criterion_id", "met"])
    )
    disagreements = disagreements_section(a.v, cons, primary, humans, health, context)
    own.step("health")
    late = _LateSections(
        cal_info, reliability, cal_cmp, models, flips, health, crit_rows, disagreements,
        notes, dict(own.elapsed) if steps is None else {}, group_rows,
        [*(f"agreement by {by}" for by in groupings), *_LATE_STEPS],
    )  # fmt: skip
    if partial is not None:
        d, known = _partial_dashboard(
            dict(partial.run.overview),
            _agreement_frame(partial.run, partial.overall_rows() or [], [*group_rows, *crit_rows]),
            reliability=reliability, models=models, flips=flips, health=health,
            disagreements=disagreements,
        )  # fmt: skip
        late.partial = partial.work.take(d, known)
    return late


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
