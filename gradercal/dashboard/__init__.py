"""The coordinator's dashboard: every figure of the agreement view, computed at once.

:func:`compute_dashboard` reads :class:`~gradercal.frames.Frames` and returns a
:class:`Dashboard` — plain pandas tables and dicts that the Qt dashboard shows, the HTML /
PDF report (:mod:`gradercal.dashboard.report`) prints and ``--json`` serialises. Nothing here is new
statistics: every number comes from the engines the CLI uses, called with the same
arguments, so the dashboard shows what ``gradercal agreement``, ``alttest``, ``impact``,
``estimate``, ``calibrate`` and ``health`` print:

* expert–expert agreement and each judge against the expert consensus:
  :func:`gradercal.analysis.agreement.human_agreement`, :func:`~gradercal.analysis.agreement.judge_agreement`,
  :func:`~gradercal.analysis.agreement.pairwise_agreement`, :func:`~gradercal.analysis.agreement.group_agreement`;
* the alternative annotator test: :func:`gradercal.analysis.alt_test.alt_test_frames`;
* the calibrated judge: :func:`gradercal.analysis.calibration.cross_fit` (always out of fold, like
  ``gradercal impact``), :func:`~gradercal.analysis.calibration.reliability_table`,
  :func:`~gradercal.analysis.calibration.brier_score`,
  :func:`~gradercal.analysis.calibration.expected_calibration_error`;
* per-model figures and pass ↔ fail flips: :func:`gradercal.analysis.impact.impact_report`; the
  bias-corrected estimate: :func:`gradercal.analysis.estimate.estimate_report` (PPI++);
* criterion health and the item-level disagreements:
  :func:`gradercal.analysis.health.criterion_health`.

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
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

import numpy as np
import numpy.typing as npt
import pandas as pd

from gradercal._util.forked import ChildFailed, ForkedCall, fork_available
from gradercal.errors import GradercalError, NotFoundError
from gradercal.frames import Frames, frame_from_rows

if TYPE_CHECKING:
    from gradercal.analysis.agreement import Grouping

_P = ParamSpec("_P")
_R = TypeVar("_R")

__all__ = [
    "AGREEMENT_COLUMNS",
    "DEFAULT_CALIBRATION_METHOD",
    "DEFAULT_N_BOOT",
    "EXPERTS",
    "GROUP_BYS",
    "JUDGE_STATISTICS",
    "MODEL_SOURCES",
    "NO_VALUE",
    "Cancelled",
    "Dashboard",
    "DashboardFilters",
    "compute_dashboard",
    "filter_frames",
    "filter_options",
    "pairwise_matrix",
    "preload",
    "primary_judge",
]

#: Resamples of the task-clustered bootstrap used when the caller does not say (the
#: bootstrap is a small share of the dashboard's time; see benchmarks/README.md).
DEFAULT_N_BOOT = 200
#: Calibration cross-fitted when no saved calibration is given: per-tag leniency
#: correction, whose calibrated probabilities make a meaningful reliability diagram.
DEFAULT_CALIBRATION_METHOD = "threshold"
#: The ``comparison`` label of expert–expert rows of :attr:`Dashboard.agreement`.
EXPERTS = "experts"
#: Label of a missing workflow / domain in filters and group tables.
NO_VALUE = "(none)"
#: Label of criteria without a tag in the agreement-by-tag rows.
UNTAGGED = "(untagged)"
#: The ``by`` values of :attr:`Dashboard.agreement`, in display order.
GROUP_BYS: tuple[str, ...] = ("overall", "tag", "workflow", "domain", "criterion")
#: Judge-vs-consensus figures listed in the agreement table (the judges table has more).
JUDGE_STATISTICS: tuple[str, ...] = (
    "percent_agreement",
    "cohen_kappa",
    "balanced_f1",
    "leniency_bias",
)
#: ``source`` values of :attr:`Dashboard.models`, in display order.
MODEL_SOURCES: tuple[str, ...] = ("experts", "judge_raw", "judge_calibrated", "estimate")
#: Columns of :attr:`Dashboard.agreement`.
AGREEMENT_COLUMNS: tuple[str, ...] = (
    "by",
    "group",
    "task_id",
    "comparison",
    "statistic",
    "value",
    "ci_low",
    "ci_high",
    "n_items",
    "n_tasks",
    "note",
)
_PAIRWISE_COLUMNS = (
    "a",
    "b",
    "kind_a",
    "kind_b",
    "statistic",
    "value",
    "ci_low",
    "ci_high",
    "n_items",
    "n_tasks",
)
_MODEL_COLUMNS = (
    "model",
    "source",
    "metric",
    "value",
    "ci_low",
    "ci_high",
    "n_responses",
    "note",
)
_FLIP_COLUMNS = (
    "response_id",
    "task_id",
    "model",
    "source",
    "expert_score",
    "judge_score",
    "direction",
)
_JUDGE_FIGURES = ("cohen_kappa", "balanced_f1", "percent_agreement", "leniency_bias")
#: Whether one :func:`compute_dashboard` call shares its verdict, consensus and score
#: tables between the engines (a per-call memo; the tests switch it off to check that
#: the numbers do not depend on it).
_SHARE_TABLES = True
#: BLAS threads while :func:`compute_dashboard` runs (None: leave the library's
#: default). Its matrix products are small (resamples × tasks), so a second BLAS thread
#: buys nothing; on a busy 2-core machine its spinning workers cost ~1 s of a 750-task
#: call. One thread gives the same numbers (the products are sums of counts).
_BLAS_THREADS: int | None = 1


def _blas_limited(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    """``fn`` run with at most :data:`_BLAS_THREADS` BLAS threads (threadpoolctl, a
    dependency of scikit-learn; without it, unchanged)."""

    @functools.wraps(fn)
    def run(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        if _BLAS_THREADS is None:
            return fn(*args, **kwargs)
        try:
            from threadpoolctl import (  # type: ignore[import-untyped, unused-ignore]
                threadpool_limits,
            )
        except ImportError:  # pragma: no cover - installed with scikit-learn
            return fn(*args, **kwargs)
        with threadpool_limits(limits=_BLAS_THREADS, user_api="blas"):
            return fn(*args, **kwargs)

    return run


_SOURCE_OF = {"consensus": "experts", "judge": "judge_raw", "calibrated": "judge_calibrated"}

#: ``progress(done, total, label)``.
ProgressCallback = Callable[[int, int, str], None]


class Cancelled(GradercalError):
    """The caller's ``cancelled()`` returned True; the dashboard was not finished."""


# ---------------------------------------------------------------------------------------
# Filters
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DashboardFilters:
    """Which part of the benchmark the dashboard looks at (None: no restriction).

    Attributes:
        models: Response model names to keep.
        workflows: Task workflows to keep (:data:`NO_VALUE` selects tasks without one).
        domains: Task domains to keep (:data:`NO_VALUE` selects tasks without one).
        graders: The human graders to keep (their verdicts form the consensus and the
            expert–expert figures); judges are always kept. None: every human.
    """

    models: tuple[str, ...] | None = None
    workflows: tuple[str, ...] | None = None
    domains: tuple[str, ...] | None = None
    graders: tuple[str, ...] | None = None

    def is_empty(self) -> bool:
        """True when no filter is set."""
        return all(x is None for x in (self.models, self.workflows, self.domains, self.graders))

    def describe(self) -> str:
        """A one-line human description, e.g. ``"models: a, b; workflow: analysis"``."""
        parts = []
        for label, values in (
            ("models", self.models),
            ("workflows", self.workflows),
            ("domains", self.domains),
            ("experts", self.graders),
        ):
            if values is not None:
                parts.append(f"{label}: {', '.join(values) or 'none'}")
        return "; ".join(parts) or "no filter"


def _labels(s: pd.Series) -> pd.Series:
    """Object series with missing values replaced by :data:`NO_VALUE`."""
    return s.map(
        lambda x: NO_VALUE if x is None or (isinstance(x, float) and math.isnan(x)) else str(x)
    )


def filter_frames(frames: Frames, f: DashboardFilters) -> Frames:
    """The frames restricted to the filters (dtypes kept, indexes reset).

    Tasks are kept by workflow and domain; responses by model and kept task; criteria by
    kept task; judgments and adjudications by kept response, and human judgments by
    ``f.graders`` (judge verdicts stay). Values that match nothing give empty frames.
    """
    if f.is_empty():
        return frames
    tasks = frames.tasks
    keep_t = pd.Series(True, index=tasks.index)
    if f.workflows is not None:
        keep_t &= _labels(tasks["workflow"]).isin(list(f.workflows))
    if f.domains is not None:
        keep_t &= _labels(tasks["domain"]).isin(list(f.domains))
    tasks = tasks.loc[keep_t]
    task_ids = set(tasks["task_id"])
    resp = frames.responses
    keep_r = resp["task_id"].isin(task_ids)
    if f.models is not None:
        keep_r &= resp["model"].isin(list(f.models))
    resp = resp.loc[keep_r]
    rids = set(resp["response_id"])
    j = frames.judgments
    keep_j = j["response_id"].isin(rids)
    if f.graders is not None:
        keep_j &= (j["grader_kind"] != "human") | j["grader"].isin(list(f.graders))
    adj = frames.adjudications
    return Frames(
        pass_threshold=frames.pass_threshold,
        tasks=tasks.reset_index(drop=True),
        criteria=frames.criteria.loc[frames.criteria["task_id"].isin(task_ids)].reset_index(
            drop=True
        ),
        responses=resp.reset_index(drop=True),
        judgments=j.loc[keep_j].reset_index(drop=True),
        adjudications=adj.loc[adj["response_id"].isin(rids)].reset_index(drop=True),
    )


def filter_options(frames: Frames) -> dict[str, list[str]]:
    """The values each filter can take on these frames.

    Returns:
        ``{"models": […], "workflows": […], "domains": […], "graders": […],
        "judges": […]}``, each sorted; a missing workflow/domain is :data:`NO_VALUE`
        (listed last). ``graders`` are the human graders, ``judges`` the others (not a
        filter: listed so a front end can offer the primary-judge choice).
    """
    from gradercal.analysis.verdicts import human_graders, judge_graders

    def values(s: pd.Series) -> list[str]:
        got = set(_labels(s))
        return [*sorted(got - {NO_VALUE}), *([NO_VALUE] if NO_VALUE in got else [])]

    return {
        "models": sorted({str(m) for m in frames.responses["model"].dropna()}),
        "workflows": values(frames.tasks["workflow"]),
        "domains": values(frames.tasks["domain"]),
        "graders": human_graders(frames),
        "judges": judge_graders(frames),
    }


# ---------------------------------------------------------------------------------------
# Result
# ---------------------------------------------------------------------------------------


def _empty(columns: Sequence[str]) -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series([], dtype=object) for c in columns})


@dataclass
class Dashboard:
    """Everything the coordinator's dashboard shows.

    Attributes:
        overview: ``benchmark`` (name or None), ``filters`` (description),
            ``pass_threshold``, ``n_tasks``, ``n_responses``, ``n_criteria`` (all rubric
            items), ``n_judgment_criteria``, ``n_units`` (response × judgment criterion
            pairs), ``models``, ``humans``, ``judges``, ``primary_judge``,
            ``share_graded`` (``{grader: share of units with its verdict}`` for every
            human plus ``"overall"``: share with at least one human verdict, and
            ``"two_or_more"``: with two or more), ``judge_coverage``
            (``{judge: share of units}``), ``n_adjudications``, ``n_boot``, ``seed``, ``ci``.
        agreement: Long table, columns :data:`AGREEMENT_COLUMNS`: ``by`` ∈
            :data:`GROUP_BYS`; ``group`` (``"all"`` for overall; the tag, workflow,
            domain or criterion id; :data:`NO_VALUE` / :data:`UNTAGGED` when missing);
            ``task_id`` (criterion rows only); ``comparison`` — :data:`EXPERTS` for
            expert–expert figures (``percent_agreement``, ``fleiss_kappa``,
            ``gwet_ac1``, ``krippendorff_alpha``; ``n_items`` = units with ≥ 2 expert
            verdicts) or a judge's name for that judge against the expert consensus
            (:data:`JUDGE_STATISTICS`; ``n_items`` = units compared); ``value``,
            ``ci_low``, ``ci_high`` (NaN when undefined / no interval), ``n_tasks``,
            ``note``. Overall rows have one judge block per judge; group rows the
            primary judge's. Criterion rows (one task = one cluster: no interval) carry
            the experts' percent agreement and the judge's percent agreement with the
            consensus, from :func:`gradercal.analysis.health.criterion_health`.
        pairwise: Long table, one row per unordered grader pair and statistic
            (``percent_agreement``, ``cohen_kappa``), over experts and judges: ``a``,
            ``b``, ``kind_a``, ``kind_b`` (``"human"`` | ``"judge"``), ``statistic``,
            ``value``, ``ci_low``, ``ci_high``, ``n_items``, ``n_tasks``; the square
            matrix is :func:`pairwise_matrix`.
        judges: One row per judge grader (each judge = one prompt version), sorted by
            name: ``judge``, ``primary`` (bool), ``n_items``, ``n_tasks``,
            ``n_undecided``, ``coverage``, for each of ``cohen_kappa``, ``balanced_f1``,
            ``percent_agreement``, ``leniency_bias`` the value and ``*_low``/``*_high``
            (against the consensus of all experts — the judge was not fitted on these
            data, so they are held-out figures), ``kappa_experts_min`` /
            ``kappa_experts_max`` (each expert against the others' consensus),
            ``kappa_judge_loo`` (the judge on the same references) and
            ``kappa_within_experts``; ``alt_test_passed``, ``alt_test_winning_rate``,
            ``alt_test_advantage`` (None when refused); and for the primary judge the
            calibrated, out-of-fold ``calibrated_cohen_kappa``,
            ``calibrated_balanced_f1``, ``calibrated_leniency_bias`` (+ ``_low``/
            ``_high``; NaN for the others or a response-level calibration).
        confusion: ``{judge: 2×2 int array}`` against the expert consensus, oriented
            like scikit-learn's ``confusion_matrix(consensus, judge)``: rows are the
            consensus (0 = not met, 1 = met), columns the judge: ``[[TN, FP], [FN, TP]]``.
        reliability: ``{primary judge: bins}``: ``bin_low``, ``bin_high``, then
            ``n``, ``mean_predicted``, ``mean_observed`` for ``_before`` (the raw judge's
            probability) and ``_after`` (the out-of-fold calibrated probability); the
            frame's ``attrs`` hold ``brier_before``, ``brier_after``, ``ece_before``,
            ``ece_after``, ``level`` and ``method`` (also in :attr:`calibration`).
        models: Long table, columns ``model``, ``source`` (:data:`MODEL_SOURCES`),
            ``metric`` (``mean_score`` | ``pass_rate``), ``value``, ``ci_low``,
            ``ci_high``, ``n_responses``, ``note``. ``experts``, ``judge_raw`` and
            ``judge_calibrated`` are on the responses scored by all three
            (:func:`gradercal.analysis.impact.impact_report`, task-bootstrap intervals);
            ``estimate`` is PPI++ over every judge-scored response
            (:func:`gradercal.analysis.estimate.estimate_report`, small-sample intervals named by
            each figure's ``method``).
        alt_test: The primary judge's alt-test (:meth:`AltTestResult.to_dict`), or None.
        flips: Responses whose pass/fail differs between the experts and the judge:
            ``response_id``, ``task_id``, ``model``, ``source`` (``judge_raw`` |
            ``judge_calibrated``), ``expert_score``, ``judge_score``, ``direction``
            (``"pass→fail"``: the experts pass it, the judge fails it; or ``"fail→pass"``).
        health: Every judgment criterion, most impactful first: ``rank``, ``task_id``,
            ``criterion_id``, ``text``, ``points``, ``tags``, ``n_responses``,
            ``n_paired``, ``human_agreement``, ``n_judged``, ``judge_disagreement``,
            ``disagreement``, ``impact``, ``flags`` (tuple), ``flagged`` (at the
            ``bar`` of :func:`compute_dashboard`).
        disagreements: Item-level disagreements (the experts split, or the primary
            judge departs from a decided consensus), in health rank order:
            ``task_id``, ``criterion_id``, ``response_id``, ``model``, ``text``,
            ``points``, ``consensus`` (bool or None when undecided), ``judge`` (the
            primary judge's verdict or None), ``experts_split``, ``judge_departs``,
            ``n_unclear``, then one ``verdict:<grader>`` column per grader (True/False/
            None) — a front end opens the adjudication view on (``response_id``,
            ``criterion_id``).
        notes: Warnings and skipped sections, in order.
        calibration: How the calibrated judge was obtained: ``method``, ``level``,
            ``source`` (``"saved"`` | ``"default"``), ``out_of_fold`` (True),
            ``n_splits``, ``brier``/``ece`` before and after; None without one.
        elapsed: Seconds per section (for the benchmark and the status bar).
    """

    overview: dict[str, Any]
    agreement: pd.DataFrame
    pairwise: pd.DataFrame
    judges: pd.DataFrame
    confusion: dict[str, np.ndarray]
    reliability: dict[str, pd.DataFrame]
    models: pd.DataFrame
    alt_test: dict[str, Any] | None
    flips: pd.DataFrame
    health: pd.DataFrame
    disagreements: pd.DataFrame
    notes: list[str] = field(default_factory=list)
    calibration: dict[str, Any] | None = None
    elapsed: dict[str, float] = field(default_factory=dict)

    @property
    def primary_judge(self) -> str | None:
        """The judge of the per-judge sections (None without a judge)."""
        pj = self.overview.get("primary_judge")
        return None if pj is None else str(pj)

    def pairwise_matrix(self, statistic: str = "cohen_kappa") -> pd.DataFrame:
        """Square grader × grader matrix of ``statistic`` (see :func:`pairwise_matrix`)."""
        order = [*self.overview.get("humans", []), *self.overview.get("judges", [])]
        return pairwise_matrix(self.pairwise, statistic, order)

    def to_json(self) -> dict[str, Any]:
        """Strict-JSON data (NaN → null, arrays → lists, frames → lists of records)."""
        return {
            "format": "gradercal.dashboard",
            "format_version": 1,
            "overview": _plain(self.overview),
            "agreement": _records(self.agreement),
            "pairwise": _records(self.pairwise),
            "judges": _records(self.judges),
            "confusion": {
                k: {
                    "orientation": "rows: consensus not met, met; columns: judge not met, met",
                    "matrix": np.asarray(v).astype(int).tolist(),
                }
                for k, v in self.confusion.items()
            },
            "reliability": {
                k: {"bins": _records(v), **_plain(dict(v.attrs))}
                for k, v in self.reliability.items()
            },
            "models": _records(self.models),
            "alt_test": _plain(self.alt_test),
            "flips": _records(self.flips),
            "health": _records(self.health),
            "disagreements": _records(self.disagreements),
            "calibration": _plain(self.calibration),
            "notes": list(self.notes),
        }


def pairwise_matrix(
    pairwise: pd.DataFrame, statistic: str = "cohen_kappa", order: Sequence[str] | None = None
) -> pd.DataFrame:
    """A square, symmetric grader × grader frame from a :attr:`Dashboard.pairwise` table.

    The diagonal is 1.0 (a grader agrees with itself); pairs without a defined value
    are NaN. ``order`` fixes the rows/columns (default: names as they first appear).
    """
    sub = pairwise.loc[pairwise["statistic"] == statistic]
    names = (
        list(order)
        if order is not None
        else list(dict.fromkeys([*sub["a"].tolist(), *sub["b"].tolist()]))
    )
    mat = pd.DataFrame(np.nan, index=names, columns=names, dtype=np.float64)
    for n in names:
        mat.loc[n, n] = 1.0
    for a, b, v in sub.loc[:, ["a", "b", "value"]].itertuples(index=False, name=None):
        if a in mat.index and b in mat.index:
            mat.loc[a, b] = mat.loc[b, a] = float(v) if v is not None else np.nan
    return mat


def _plain(obj: Any) -> Any:
    """Strict-JSON data: numpy scalars → Python, non-finite floats → None."""
    if isinstance(obj, Mapping):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, np.ndarray):
        return _plain(obj.tolist())
    if isinstance(obj, list | tuple | set):
        return [_plain(v) for v in obj]
    if obj is pd.NA or obj is None:
        return None
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, bool | int | float | str):
        return obj
    return str(obj)


def _records(df: pd.DataFrame) -> list[dict[str, Any]]:
    cols = [str(c) for c in df.columns]
    return [
        {c: _plain(v) for c, v in zip(cols, row, strict=True)}
        for row in df.itertuples(index=False, name=None)
    ]


# ---------------------------------------------------------------------------------------
# Computation
# ---------------------------------------------------------------------------------------


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


def _fig(b: Any) -> tuple[float, float, float, str | None]:
    """``(value, low, high, note)`` from a BootResult (NaN for None)."""

    def f(x: float | None) -> float:
        return math.nan if x is None else float(x)

    return f(b.value), f(b.ci_low), f(b.ci_high), b.note


def _json_fig(d: Mapping[str, Any] | None) -> tuple[float, float, float, str | None]:
    """``(value, low, high, note)`` from ``{"value", "ci", "note"}``."""
    if not d or d.get("value") is None:
        return math.nan, math.nan, math.nan, None if not d else d.get("note")
    lo, hi = d["ci"] if d.get("ci") else (math.nan, math.nan)
    return float(d["value"]), float(lo), float(hi), d.get("note")


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


def _n_units(frames: Frames) -> int:
    crit = frames.criteria.loc[frames.criteria["kind"] != "auto"].drop_duplicates(
        ["task_id", "criterion_id"]
    )
    per_task = crit.groupby("task_id").size()
    resp = frames.responses.drop_duplicates("response_id")
    return int(resp["task_id"].map(per_task).fillna(0).sum())


def _overview(
    frames: Frames,
    v: pd.DataFrame,
    humans: list[str],
    judges: list[str],
    primary: str | None,
    memo: dict[Any, Any] | None = None,
) -> dict[str, Any]:
    from gradercal.analysis.verdicts import unit_positions

    n_units = _n_units(frames)
    keys = ["response_id", "criterion_id"]
    pos = unit_positions(memo, v)
    per_grader: Mapping[Any, int]
    if pos is not None:
        # Unit positions are known only when the units are unique, so every (unit,
        # grader) pair is one row already: counts by integer codes, no string groupbys.
        gcodes, gnames = pd.factorize(v["grader"].to_numpy(object), sort=False)
        gcodes = np.asarray(gcodes, dtype=np.int64)
        counts = np.bincount(gcodes[gcodes >= 0], minlength=len(gnames))
        per_grader = {g: int(n) for g, n in zip(gnames.tolist(), counts.tolist(), strict=True)}
        is_human = np.array([g in humans for g in gnames.tolist()] + [False], dtype=bool)
        hmask = is_human[gcodes]  # code -1 (no grader) → the trailing False
        per_unit_n = np.bincount(pos[0][hmask], minlength=pos[1])
        per_unit = pd.Series(per_unit_n[per_unit_n > 0])
    else:
        sizes = v.drop_duplicates([*keys, "grader"]).groupby("grader").size()
        per_grader = {g: int(n) for g, n in sizes.items()}
        hv = v.loc[v["grader"].isin(humans)]
        per_unit = hv.groupby(keys, sort=False).size()

    def share(n: float) -> float | None:
        return None if n_units == 0 else float(n) / n_units

    crit = frames.criteria.drop_duplicates(["task_id", "criterion_id"])
    return {
        "pass_threshold": float(frames.pass_threshold),
        "n_tasks": int(frames.tasks["task_id"].nunique()),
        "n_responses": int(frames.responses["response_id"].nunique()),
        "n_criteria": len(crit),
        "n_judgment_criteria": int((crit["kind"] != "auto").sum()),
        "n_units": n_units,
        "models": sorted({str(m) for m in frames.responses["model"].dropna()}),
        "humans": list(humans),
        "judges": list(judges),
        "primary_judge": primary,
        "share_graded": {
            **{h: share(per_grader.get(h, 0)) for h in humans},
            "overall": share(len(per_unit)),
            "two_or_more": share(int((per_unit >= 2).sum())),
        },
        "n_verdicts": {g: int(per_grader.get(g, 0)) for g in [*humans, *judges]},
        "judge_coverage": {j: share(per_grader.get(j, 0)) for j in judges},
        "n_adjudications": len(frames.adjudications),
    }


def _agreement_rows(
    by: str,
    group: str,
    task_id: str | None,
    comparison: str,
    stats: Mapping[str, Any],
    names: Sequence[str],
    n_items: int,
    n_tasks: int,
) -> list[tuple[Any, ...]]:
    rows = []
    for s in names:
        value, lo, hi, note = _fig(stats[s])
        rows.append((by, group, task_id, comparison, s, value, lo, hi, n_items, n_tasks, note))
    return rows


def _group_rows(by: str, groups: Sequence[Any], judge: str | None) -> list[tuple[Any, ...]]:
    from gradercal.analysis.agreement import HUMAN_STATISTICS

    missing = UNTAGGED if by == "tag" else NO_VALUE
    rows: list[tuple[Any, ...]] = []
    for g in groups:
        label = missing if g.group is None else str(g.group)
        h = g.humans
        rows += _agreement_rows(
            by, label, None, EXPERTS, h.statistics, HUMAN_STATISTICS, h.n_units_paired, h.n_tasks
        )
        if g.judge is not None and judge is not None:
            c = g.judge
            rows += _agreement_rows(
                by, label, None, judge, c.metrics, JUDGE_STATISTICS, c.n_units, c.n_tasks
            )
    return rows


def _calibration_spec(calibration: Mapping[str, Any] | None) -> tuple[str, dict[str, Any], str]:
    """``(method, cross_fit options, source)`` from saved params (or the default)."""
    from gradercal.analysis.calibration import METHODS

    if calibration is None:
        return DEFAULT_CALIBRATION_METHOD, {}, "default"
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


@_blas_limited
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

    Raises:
        Cancelled: ``cancelled()`` returned True.
        NotFoundError: ``judge`` is not a grader of the frames.
        ValueError: A malformed ``calibration`` or out-of-range option.
    """
    from gradercal.analysis.agreement import GROUPINGS, HUMAN_STATISTICS, human_agreement
    from gradercal.analysis.health import DEFAULT_BAR
    from gradercal.analysis.verdicts import Memo, verdicts

    if not 0.0 < ci < 1.0:
        raise ValueError("ci must be between 0 and 1")
    if n_boot < 0:
        raise ValueError("n_boot must be ≥ 0")
    health_bar = DEFAULT_BAR if bar is None else float(bar)
    if not 0.0 < health_bar <= 1.0:
        raise ValueError("bar must be in (0, 1]")
    method, cal_options, cal_source = _calibration_spec(calibration)
    groupings: list[Grouping] = [g for g in GROUPINGS if g != "criterion"]
    steps = _Steps(8 + len(groupings), progress, cancelled)
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
    memo: Memo | None = {} if _SHARE_TABLES else None
    v = verdicts(f, memo=memo)
    overview = _overview(f, v, humans, judges, primary, memo)
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
    # its copy of the memo, so the same numbers).
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
                    _late_sections, *late_args, n_boot, seed, ci, memo, None, child_groupings
                )
            )
        if forked is None:
            child_groupings = []

    try:
        # Expert–expert agreement, overall.
        rows: list[tuple[Any, ...]] = []
        ha = human_agreement(f, humans, n_boot=n_boot, seed=seed, ci=ci, memo=memo)
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
            f, judges, humans, primary, overview["judge_coverage"], n_boot, seed, ci, memo,
            steps, notes,
        )  # fmt: skip
        rows += judged.rows
        judge_rows = judged.table_rows
        steps.step("judges")

        # Pairwise matrix over experts and judges.
        pairwise = _pairwise(f, humans, judges, n_boot, seed, ci, memo)
        steps.step("pairwise")

        # Agreement by tag, workflow and domain.
        for by in groupings:
            if by not in child_groupings:
                rows += _grouping_rows(f, by, humans, primary, n_boot, seed, ci, memo, steps)

        late = None if forked is None else _late_result(forked, steps, cancelled, notes)
        if late is None:  # one process, or the child failed: its sections computed here
            late = _late_sections(
                f, v, primary, humans, method, cal_options, cal_source, health_bar,
                n_boot, seed, ci, memo, steps, child_groupings,
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
        notes=notes,
        calibration=cal_info,
        elapsed=dict(steps.elapsed),
    )


#: The sections of :func:`_late_sections` after its groupings, in order (their progress
#: labels).
_LATE_STEPS = ("calibration", "models", "health")


def _grouping_rows(
    f: Frames,
    by: Grouping,
    humans: list[str],
    primary: str | None,
    n_boot: int,
    seed: int,
    ci: float,
    memo: dict[Any, Any] | None,
    steps: _Steps,
) -> list[tuple[Any, ...]]:
    """The agreement rows of one grouping (tag, workflow or domain), as one section."""
    from gradercal.analysis.agreement import group_agreement

    groups = group_agreement(
        f,
        by,
        humans,
        primary,
        n_boot=n_boot,
        seed=seed,
        ci=ci,
        memo=memo,
        progress=steps.engine_hook,
    )
    steps.step(f"agreement by {by}")
    return _group_rows(by, groups, primary)


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
    memo: dict[Any, Any] | None,
    steps: _Steps | None,
    groupings: Sequence[Grouping],
) -> _LateSections:
    """Agreement by each of ``groupings``, calibration (out of fold) and reliability,
    per-model figures and flips, criterion health, criterion agreement rows and
    disagreements. ``steps`` None: in a forked child (its own clock; progress and
    cancellation are the parent's business)."""
    from gradercal.analysis.verdicts import consensus_verdicts

    own = _Steps(len(groupings) + len(_LATE_STEPS), None, None) if steps is None else steps
    group_rows: list[tuple[Any, ...]] = []
    for by in groupings:
        group_rows += _grouping_rows(f, by, humans, primary, n_boot, seed, ci, memo, own)
    notes: list[str] = []
    reliability: dict[str, pd.DataFrame] = {}
    cal_info: dict[str, Any] | None = None
    calibrated_scores: pd.DataFrame | None = None
    cal_cmp: Any = None
    if primary is not None and method == "none":
        notes.append("no calibrated judge: calibration 'none' requested")
    elif primary is not None:
        cal_info, calibrated_scores, rel, cal_cmp = _calibrate(
            f, primary, humans, method, cal_options, cal_source, n_boot, seed, ci, notes, memo
        )
        if rel is not None:
            reliability[primary] = rel
    own.step("calibration")
    models, flips = _models(
        f, primary, humans, calibrated_scores, cal_info, n_boot, seed, ci, notes, memo
    )
    own.step("models")
    health, crit_rows = _health(f, primary, humans, health_bar, memo)
    cons = (
        consensus_verdicts(f, humans, memo=memo)
        if humans
        else pd.DataFrame(columns=["response_id", "criterion_id", "met"])
    )
    disagreements = _disagreements(v, cons, primary, humans, health, memo)
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


@dataclass
class _Judged:
    """The judges section: agreement rows, the judges table's rows, confusion matrices
    and the primary judge's alt-test."""

    rows: list[tuple[Any, ...]]
    table_rows: list[dict[str, Any]]
    confusion: dict[str, np.ndarray]
    alt: dict[str, Any] | None


def _judge_sections(
    f: Frames,
    judges: Sequence[str],
    humans: list[str],
    primary: str | None,
    coverage: Mapping[str, Any],
    n_boot: int,
    seed: int,
    ci: float,
    memo: dict[Any, Any] | None,
    steps: _Steps,
    notes: list[str],
) -> _Judged:
    """Every judge against the expert consensus, with its alt-test."""
    from gradercal.analysis.agreement import judge_agreement

    out = _Judged([], [], {}, None)
    for jname in judges:
        try:
            ja = judge_agreement(
                f,
                jname,
                humans,
                n_boot=n_boot,
                seed=seed,
                ci=ci,
                memo=memo,
                progress=steps.engine_hook,
            )
        except ValueError as exc:
            notes.append(f"judge {jname}: {exc}")
            continue
        c = ja.headline
        out.rows += _agreement_rows(
            "overall", "all", None, jname, c.metrics, JUDGE_STATISTICS, c.n_units, c.n_tasks
        )
        k = c.confusion
        out.confusion[jname] = np.array([[k["tn"], k["fp"]], [k["fn"], k["tp"]]], dtype=np.int64)
        row: dict[str, Any] = {
            "judge": jname,
            "primary": jname == primary,
            "n_items": c.n_units,
            "n_tasks": c.n_tasks,
            "n_undecided": c.n_undecided,
            "coverage": coverage.get(jname),
        }
        for name in _JUDGE_FIGURES:
            value, lo, hi, _ = _fig(c.metrics[name])
            row[name], row[f"{name}_low"], row[f"{name}_high"] = value, lo, hi
        rng = ja.human_range.get("cohen_kappa")
        row["kappa_experts_min"] = math.nan if rng is None else float(rng[0])
        row["kappa_experts_max"] = math.nan if rng is None else float(rng[1])
        loo = ja.judge_loo_mean.get("cohen_kappa")
        row["kappa_judge_loo"] = math.nan if loo is None else float(loo)
        row["kappa_within_experts"] = ja.within_human_range.get("cohen_kappa")
        res = _alt_test(f, jname, humans, notes, memo)
        row["alt_test_passed"] = None if res is None else bool(res["passed"])
        row["alt_test_winning_rate"] = math.nan if res is None else float(res["winning_rate"])
        row["alt_test_advantage"] = math.nan if res is None else float(res["advantage_probability"])
        if jname == primary:
            out.alt = res
        out.table_rows.append(row)
        steps.check()
    return out


def _pairwise(
    f: Frames,
    humans: list[str],
    judges: list[str],
    n_boot: int,
    seed: int,
    ci: float,
    memo: dict[Any, Any] | None,
) -> pd.DataFrame:
    """Percent agreement and Cohen's kappa of every pair of experts and judges."""
    from gradercal.analysis.agreement import pairwise_agreement

    kinds = dict.fromkeys(humans, "human") | dict.fromkeys(judges, "judge")
    prow: list[tuple[Any, ...]] = []
    for p in pairwise_agreement(f, [*humans, *judges], n_boot=n_boot, seed=seed, ci=ci, memo=memo):
        for stat in ("percent_agreement", "cohen_kappa"):
            value, lo, hi, _ = _fig(getattr(p, stat))
            prow.append(
                (p.a, p.b, kinds[p.a], kinds[p.b], stat, value, lo, hi, p.n_units, p.n_tasks)
            )
    return (
        pd.DataFrame(prow, columns=list(_PAIRWISE_COLUMNS)) if prow else _empty(_PAIRWISE_COLUMNS)
    )


def _calibrated_columns(judge_rows: list[dict[str, Any]], primary: str, cal_cmp: Any) -> None:
    """The calibrated judge's kappa, balanced F1 and leniency (with intervals) on the
    primary judge's row; NaN elsewhere and when there is no calibrated judge."""
    for row in judge_rows:
        for name in ("cohen_kappa", "balanced_f1", "leniency_bias"):
            value, lo, hi = math.nan, math.nan, math.nan
            if row["judge"] == primary and cal_cmp is not None:
                value, lo, hi, _ = _fig(cal_cmp.metrics[name])
            row[f"calibrated_{name}"] = value
            row[f"calibrated_{name}_low"] = lo
            row[f"calibrated_{name}_high"] = hi


def _alt_test(
    f: Frames, judge: str, humans: Sequence[str], notes: list[str], memo: dict[Any, Any] | None
) -> dict[str, Any] | None:
    from gradercal.analysis.alt_test import alt_test_frames

    if len(humans) < 2:
        notes.append(f"alt-test of {judge} skipped: fewer than 2 experts")
        return None
    try:
        return alt_test_frames(f, judge, list(humans), memo=memo).to_dict()
    except (GradercalError, ValueError) as exc:
        notes.append(f"alt-test of {judge} skipped: {exc}")
        return None


def _calibrate(
    f: Frames,
    judge: str,
    humans: Sequence[str],
    method: str,
    options: Mapping[str, Any],
    source: str,
    n_boot: int,
    seed: int,
    ci: float,
    notes: list[str],
    memo: dict[Any, Any] | None,
) -> tuple[dict[str, Any] | None, pd.DataFrame | None, pd.DataFrame | None, Any]:
    from gradercal.analysis.agreement import compare
    from gradercal.analysis.calibration import (
        brier_score,
        cross_fit,
        expected_calibration_error,
        reliability_table,
    )

    try:
        cf = cross_fit(f, judge, method, list(humans), memo=memo, **options)  # type: ignore[arg-type]
    except ValueError as exc:
        notes.append(f"no calibrated judge: {exc}")
        return None, None, None, None
    if cf.items is not None:
        it = cf.items
        sel = np.isfinite(it["oof"].to_numpy(np.float64)) & np.isfinite(
            it["human_met"].to_numpy(np.float64)
        )
        it = it.loc[sel]
        before, after, y = it["judge_score"], it["oof"], it["human_met"]
        n_items = len(it)
        cmp = compare(
            it["oof"].to_numpy(np.float64) >= 0.5,
            it["human_met"].to_numpy(np.float64) == 1.0,
            it["task_id"].to_numpy(object).tolist(),
            candidate_name=f"{judge} (calibrated)",
            reference_name="consensus",
            n_boot=n_boot,
            seed=seed,
            ci=ci,
        )
    else:
        r = cf.responses
        sel = (
            np.isfinite(r["oof"].to_numpy(np.float64))
            & np.isfinite(r["human_score"].to_numpy(np.float64))
            & np.isfinite(r["judge_score"].to_numpy(np.float64))
        )
        rr = r.loc[sel]
        before, after, y = rr["judge_score"], rr["oof"], rr["human_score"]
        n_items = len(rr)
        cmp = None
    rb = pd.DataFrame(reliability_table(before, y))
    ra = pd.DataFrame(reliability_table(after, y))
    rel = pd.DataFrame(
        {
            "bin_low": rb["bin_low"].astype(np.float64),
            "bin_high": rb["bin_high"].astype(np.float64),
            "n_before": rb["n"].astype(np.int64),
            "mean_predicted_before": rb["mean_predicted"].astype(np.float64),
            "mean_observed_before": rb["mean_observed"].astype(np.float64),
            "n_after": ra["n"].astype(np.int64),
            "mean_predicted_after": ra["mean_predicted"].astype(np.float64),
            "mean_observed_after": ra["mean_observed"].astype(np.float64),
        }
    )
    info = {
        "judge": judge,
        "method": method,
        "level": cf.level,
        "source": source,
        "options": dict(options),
        "out_of_fold": True,
        "n_splits": len(set(cf.folds.values())),
        "n_tasks": len(cf.folds),
        "n_items": n_items,
        "brier_before": brier_score(before, y),
        "brier_after": brier_score(after, y),
        "ece_before": expected_calibration_error(before, y),
        "ece_after": expected_calibration_error(after, y),
    }
    rel.attrs.update(
        {
            k: info[k]
            for k in ("brier_before", "brier_after", "ece_before", "ece_after", "level", "method")
        }
    )
    if source == "default":
        notes.append(
            f"no saved calibration given: {method} calibration cross-fitted out of fold "
            f"({info['n_splits']} folds by task)"
        )
    scores = cf.responses.loc[:, ["response_id", "oof"]].rename(columns={"oof": "score"})
    return info, scores, rel, cmp


def _models(
    f: Frames,
    judge: str | None,
    humans: Sequence[str],
    calibrated: pd.DataFrame | None,
    cal_info: Mapping[str, Any] | None,
    n_boot: int,
    seed: int,
    ci: float,
    notes: list[str],
    memo: dict[Any, Any] | None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    from gradercal.analysis.estimate import estimate_report
    from gradercal.analysis.impact import impact_report

    if judge is None or not humans:
        if judge is not None:
            notes.append("no expert verdicts: per-model comparison skipped")
        return _empty(_MODEL_COLUMNS), _empty(_FLIP_COLUMNS)
    rows: list[tuple[Any, ...]] = []
    rep = impact_report(
        f,
        judge,
        list(humans),
        calibrated=calibrated,
        calibration=None if cal_info is None else dict(cal_info),
        breakdowns=(),
        n_boot=n_boot,
        seed=seed,
        ci=ci,
        memo=memo,
    )
    est = estimate_report(f, judge, list(humans), ci=ci, memo=memo)
    est_rows = {r["model"]: r for r in est["models"]}
    models = sorted({str(r["model"]) for r in rep["models"]} | set(est_rows))
    imp = {str(r["model"]): r for r in rep["models"]}
    for model in models:
        r = imp.get(model)
        for metric in ("mean_score", "pass_rate"):
            if r is not None:
                for g in rep["graders"]:
                    value, lo, hi, note = _json_fig(r[g][metric])
                    rows.append(
                        (model, _SOURCE_OF[g], metric, value, lo, hi, r["n_responses"], note)
                    )
            e = est_rows.get(model)
            if e is not None:
                d = e[metric]
                lo, hi = d["ci"] if d.get("ci") else (math.nan, math.nan)
                value = math.nan if d.get("estimate") is None else float(d["estimate"])
                rows.append(
                    (
                        model,
                        "estimate",
                        metric,
                        value,
                        float(lo),
                        float(hi),
                        e["n_responses"],
                        d.get("note"),
                    )
                )
    order = {s: i for i, s in enumerate(MODEL_SOURCES)}
    mdf = pd.DataFrame(rows, columns=list(_MODEL_COLUMNS)) if rows else _empty(_MODEL_COLUMNS)
    if rows:
        mdf = mdf.sort_values(
            ["model", "metric", "source"],
            key=lambda s: s.map(order) if s.name == "source" else s,
            kind="stable",
        ).reset_index(drop=True)
    if rep["n_unpaired"]:
        notes.append(
            f"{rep['n_unpaired']} responses scored by some graders only are left out of the "
            "experts / judge / calibrated figures"
        )
    notes.extend(est.get("notes") or [])
    frows = [
        (
            x["response_id"],
            x["task_id"],
            x["model"],
            _SOURCE_OF.get(x["grader"], x["grader"]),
            float(x["consensus_score"]),
            float(x["grader_score"]),
            x["direction"],
        )
        for x in rep["flips"]
    ]
    flips = pd.DataFrame(frows, columns=list(_FLIP_COLUMNS)) if frows else _empty(_FLIP_COLUMNS)
    return mdf, flips


def _health(
    f: Frames,
    judge: str | None,
    humans: Sequence[str],
    bar: float,
    memo: dict[Any, Any] | None,
) -> tuple[pd.DataFrame, list[tuple[Any, ...]]]:
    """Criterion-health table and the criterion rows of the agreement table."""
    from gradercal.analysis.health import HEALTH_TABLE_COLUMNS, health_table

    columns = ["rank", *HEALTH_TABLE_COLUMNS]
    t = health_table(f, judge, list(humans), bar=bar, memo=memo)
    crit_rows: list[tuple[Any, ...]] = []
    if t.empty:
        return _empty(columns), crit_rows
    cid, task = t["criterion_id"].tolist(), t["task_id"].tolist()
    ha, n_paired = t["human_agreement"].tolist(), t["n_paired"].tolist()
    jd, n_judged = t["judge_disagreement"].tolist(), t["n_judged"].tolist()
    for k in range(len(t)):
        if n_paired[k]:
            crit_rows.append(
                (
                    "criterion",
                    cid[k],
                    task[k],
                    EXPERTS,
                    "percent_agreement",
                    ha[k],
                    math.nan,
                    math.nan,
                    n_paired[k],
                    1,
                    None,
                )
            )
        if judge is not None and n_judged[k]:
            crit_rows.append(
                (
                    "criterion",
                    cid[k],
                    task[k],
                    judge,
                    "percent_agreement",
                    1.0 - jd[k],
                    math.nan,
                    math.nan,
                    n_judged[k],
                    1,
                    None,
                )
            )
    health = t.assign(rank=np.arange(1, len(t) + 1, dtype=np.int64)).loc[:, columns]
    return health, crit_rows


_DISAGREEMENT_COLUMNS = (
    "rank",
    "task_id",
    "criterion_id",
    "response_id",
    "model",
    "text",
    "points",
    "consensus",
    "judge",
    "experts_split",
    "judge_departs",
    "n_unclear",
)


def _disagreements(
    v: pd.DataFrame,
    cons: pd.DataFrame,
    judge: str | None,
    humans: Sequence[str],
    health: pd.DataFrame,
    memo: dict[Any, Any] | None = None,
) -> pd.DataFrame:
    """Units where the experts split or the judge departs from a decided consensus.

    The definitions of :func:`gradercal.analysis.health.criterion_health`'s details: *split* —
    two or more expert verdicts, not all equal; *departs* — the judge's verdict differs
    from the decided consensus (:func:`gradercal.analysis.agreement.consensus_verdicts`). With a
    memo that knows the unit position of every row of ``v`` and ``cons``, the units are
    found and described by position (no merges); the same table either way.
    """
    from gradercal.analysis.verdicts import unit_positions

    keys = ["response_id", "criterion_id"]
    graders = [*humans, *([judge] if judge is not None else [])]
    cols = [*_DISAGREEMENT_COLUMNS, *(f"verdict:{g}" for g in graders)]
    v_pos, c_pos = unit_positions(memo, v), unit_positions(memo, cons)
    keep = v["grader"].isin(graders).to_numpy(bool)
    v = v.loc[keep]
    if v.empty:
        return _empty(cols)
    if v_pos is not None and c_pos is not None and v_pos[1] == c_pos[1]:
        out = _disagreements_by_position(
            v, v_pos[0][keep], v_pos[1], cons, c_pos[0], judge, humans, graders
        )
        if out is None:
            return _empty(cols)
        return _ranked_disagreements(out, judge, graders, health, cols)
    hv = v.loc[v["grader"].isin(list(humans))]
    per = hv.groupby(keys, sort=False).agg(n=("met", "size"), n_met=("met", "sum"))
    split = per.loc[(per["n"] >= 2) & (per["n_met"] > 0) & (per["n_met"] < per["n"])]
    units = split.index.to_frame(index=False).assign(experts_split=True)
    if judge is not None and not cons.empty:
        jv = v.loc[v["grader"] == judge, [*keys, "met"]].rename(columns={"met": "j"})
        jc = jv.merge(cons.loc[:, [*keys, "met"]].rename(columns={"met": "c"}), on=keys)
        dep = jc.loc[jc["j"].to_numpy(bool) != jc["c"].to_numpy(bool), keys]
        units = units.merge(dep.assign(judge_departs=True), on=keys, how="outer")
    else:
        units = units.assign(judge_departs=False)
    if units.empty:
        return _empty(cols)
    units = units.assign(
        experts_split=units["experts_split"].fillna(False).astype(bool),
        judge_departs=units["judge_departs"].fillna(False).astype(bool),
    )
    sub = v.merge(units.loc[:, keys], on=keys, how="inner")
    first = sub.drop_duplicates(keys).loc[:, [*keys, "task_id", "model", "text", "points"]]
    unclear = sub.groupby(keys, sort=False)["unclear"].sum().rename("n_unclear").reset_index()
    wide = sub.pivot_table(index=keys, columns="grader", values="met", aggfunc="last")
    wide = wide.reindex(columns=graders)
    wide.columns = [f"verdict:{g}" for g in graders]
    out = first.merge(units, on=keys).merge(unclear, on=keys)
    out = out.merge(wide.reset_index(), on=keys, how="left")
    c = cons.loc[:, [*keys, "met"]].rename(columns={"met": "consensus"})
    out = out.merge(c, on=keys, how="left")
    return _ranked_disagreements(out, judge, graders, health, cols)


def _disagreements_by_position(
    v: pd.DataFrame,
    unit: npt.NDArray[np.intp],
    n_units: int,
    cons: pd.DataFrame,
    cons_unit: npt.NDArray[np.intp],
    judge: str | None,
    humans: Sequence[str],
    graders: Sequence[str],
) -> pd.DataFrame | None:
    """:func:`_disagreements`' unit table from unit positions (None: no such unit).

    One row per disagreeing unit in order of its first verdict row (the order of the
    merge path), with the first row's task, model, text and points, the two reasons,
    the number of "unclear" marks, every grader's verdict and the consensus.
    """
    grader = v["grader"].to_numpy(object)
    met = v["met"].to_numpy(bool)
    human = v["grader"].isin(list(humans)).to_numpy(bool)
    n = np.bincount(unit[human], minlength=n_units)
    n_met = np.bincount(unit[human], weights=met[human].astype(np.float64), minlength=n_units)
    split = (n >= 2) & (n_met > 0) & (n_met < n)
    # The decided consensus by unit: -1 undecided, else 0 / 1.
    c_met = np.full(n_units, -1, dtype=np.int8)
    c_met[cons_unit] = cons["met"].to_numpy(bool).astype(np.int8)
    departs = np.zeros(n_units, dtype=bool)
    if judge is not None and not cons.empty:
        j = grader == judge
        uj = unit[j]
        decided = c_met[uj] >= 0
        departs[uj[decided]] = met[j][decided] != c_met[uj][decided].astype(bool)
    rows = np.flatnonzero((split | departs)[unit])
    if not len(rows):
        return None
    sub_unit = unit[rows]
    _, first = np.unique(sub_unit, return_index=True)
    first = np.sort(first)
    order = sub_unit[first]  # the disagreeing units, in order of first appearance
    out = v.iloc[rows[first]].loc[
        :, ["response_id", "criterion_id", "task_id", "model", "text", "points"]
    ]
    out = out.reset_index(drop=True)
    unclear = np.bincount(
        sub_unit,
        weights=v["unclear"].to_numpy(bool)[rows].astype(np.float64),
        minlength=n_units,
    )
    out["experts_split"] = split[order]
    out["judge_departs"] = departs[order]
    out["n_unclear"] = unclear[order].astype(np.int64)
    for g in graders:
        lut = np.full(n_units, -1, dtype=np.int8)
        mine = grader == g
        lut[unit[mine]] = met[mine].astype(np.int8)
        out[f"verdict:{g}"] = [None if x < 0 else bool(x) for x in lut[order].tolist()]
    out["consensus"] = [None if x < 0 else bool(x) for x in c_met[order].tolist()]
    return out


def _optional_bools(s: pd.Series) -> Any:
    """``[None if pd.isna(x) else bool(x) for x in s]``, vectorised.

    Same values and, once assigned as a column, the same dtype (bool without a missing
    value, else object holding Python bools and None).
    """
    if len(s) == 0:
        return [None if pd.isna(x) else bool(x) for x in s]
    vals = s.to_numpy(object)
    na = np.asarray(pd.isna(vals), dtype=bool)
    if not na.any():
        return vals.astype(bool)
    res = np.full(len(vals), None, dtype=object)
    res[~na] = vals[~na].astype(bool)
    return res


def _ranked_disagreements(
    out: pd.DataFrame,
    judge: str | None,
    graders: Sequence[str],
    health: pd.DataFrame,
    cols: Sequence[str],
) -> pd.DataFrame:
    """The unit table with each criterion's health rank, in rank order, as published."""
    rank = health.loc[:, ["task_id", "criterion_id", "rank"]]
    out = out.merge(rank, on=["task_id", "criterion_id"], how="left")
    out["judge"] = out[f"verdict:{judge}"] if judge is not None else None
    out = out.sort_values(["rank"], kind="stable").reset_index(drop=True)
    for col in ["consensus", "judge", *(f"verdict:{g}" for g in graders)]:
        out[col] = _optional_bools(out[col])
    out["n_unclear"] = out["n_unclear"].astype(np.int64)
    out["points"] = out["points"].astype(np.int64)
    return out.loc[:, cols]
