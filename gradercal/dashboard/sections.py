"""The dashboard's sections: one function per section, computing it from the frames.

Nothing here is new statistics: every number comes from the engines the CLI uses, called
with the same arguments, so the dashboard shows what ``gradercal agreement``, ``alttest``,
``impact``, ``estimate``, ``calibrate`` and ``health`` print:

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

**Active designs** (``assign --strategy active``; ``design`` holds the inclusion
probabilities and draws of :func:`gradercal.db.assignments.active_design`): the
bias-corrected estimate is :func:`~gradercal.analysis.estimate.estimate_report` with
them, exactly as ``gradercal estimate`` computes it; each judge's percent agreement and
Cohen's kappa against the consensus are design-weighted
(:func:`design_weighted_agreement`); every other figure over expert-graded items (the
experts / raw / calibrated judge columns of the models section, expert–expert and
grouped agreement, the pairwise matrix, the alt-test, criterion health) is over the items
as sampled, and its note says it is not design-weighted. A uniform design (``design``
None or empty) changes nothing.

Each function takes the (filtered) frames and the ``context`` shared by one
:func:`~gradercal.dashboard.compute.compute_dashboard` call, appends its warnings to
``notes`` and returns its rows or tables in the shapes of
:class:`~gradercal.dashboard.result.Dashboard`; the order of the sections, their progress
and cancellation are :mod:`gradercal.dashboard.compute`'s business. The engines are
imported on first use (:func:`~gradercal.dashboard.compute.preload` imports them ahead).

This module imports pandas, numpy and gradercal's core only (no SQL, no Qt).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import numpy.typing as npt
import pandas as pd

from gradercal.analysis.context import AnalysisContext
from gradercal.dashboard.filters import NO_VALUE
from gradercal.dashboard.inputs import Design
from gradercal.dashboard.result import (
    EXPERTS,
    JUDGE_STATISTICS,
    MODEL_SOURCES,
    UNTAGGED,
    empty_frame,
)
from gradercal.errors import GradercalError
from gradercal.frames import Frames

if TYPE_CHECKING:
    from gradercal.analysis.agreement import Comparison, Grouping
    from gradercal.analysis.calibration.crossfit import CrossFit
    from gradercal.stats.boot_settings import BootSettings

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

_SOURCE_OF = {"consensus": "experts", "judge": "judge_raw", "calibrated": "judge_calibrated"}


#: The dashboard's statement of an active design (a note, the overview, the report).
ACTIVE_DESIGN = "active design: weighted by inclusion probability"
#: The note of a figure over expert-graded items that is not design-weighted.
NOT_WEIGHTED = (
    "active design: over the expert-graded items as sampled only, not design-weighted "
    "(they over-represent the judge's uncertain responses)"
)
#: The note of a design-weighted agreement figure.
WEIGHTED = (
    "active design: weighted by inclusion probability (Hájek, responses as units; "
    "linearised interval)"
)


def is_active(design: Design | None) -> bool:
    """Whether ``design`` is an active one (some response has a probability)."""
    return design is not None and bool(design[0])


def _with_note(note: str | None, extra: str) -> str:
    return extra if not note else f"{note}; {extra}"


def design_weighted_agreement(
    f: Frames,
    judge: str,
    humans: Sequence[str],
    design: Design,
    ci: float,
    context: AnalysisContext | None = None,
) -> dict[str, tuple[float, float, float]]:
    """The judge's percent agreement and Cohen's kappa with the decided consensus,
    design-weighted: ``{"percent_agreement": (value, low, high), "cohen_kappa": …}``.

    Per response ``i`` judged: ``m_i`` units with both a judge verdict and a decided
    consensus, ``a_i`` of them agreeing, ``j_i`` judged met, ``c_i`` met by the
    consensus. Their population means ``M, A, J, C`` over the responses the judge graded
    are :func:`gradercal.analysis.estimate.active_design_mean` over the expert-graded
    responses (the estimator of ``gradercal estimate``; the pilot uniform, each draw
    weighted by ``1/π``). Percent agreement ``p_o = A/M``; kappa
    ``(p_o − p_e)/(1 − p_e)`` with ``p_e = p_j p_c + (1 − p_j)(1 − p_c)``,
    ``p_j = J/M``, ``p_c = C/M``: ratios of consistent estimates, so consistent. Their
    intervals: ``± t_{n−1}·se``, ``se`` the same estimator's standard error of the mean of
    the linearised values (the influence of each response on the ratio). Under a
    uniform design the point values equal the unit-level figures. NaN when undefined.
    """
    from gradercal.analysis.estimate import active_design_mean
    from gradercal.analysis.ppi import t_quantile
    from gradercal.analysis.verdicts import consensus_verdicts, verdicts

    nan3 = (math.nan, math.nan, math.nan)
    out = {"percent_agreement": nan3, "cohen_kappa": nan3}
    keys = ["response_id", "criterion_id"]
    jv = verdicts(f, [judge], context=context).loc[:, [*keys, "met"]]
    hv = verdicts(f, list(humans), context=context)
    cons = consensus_verdicts(f, list(humans), context=context).loc[:, [*keys, "met"]]
    population = pd.Index(jv["response_id"].unique())
    labelled = population.intersection(pd.Index(hv["response_id"].unique()))
    n, N = len(labelled), len(population)
    if n < 2:
        return out
    per = _unit_counts(jv.merge(cons, on=keys, suffixes=("_j", "_c")), labelled)
    probs, rounds = design
    P = np.array([probs.get(str(r), math.nan) for r in labelled], np.float64)
    R = np.array([rounds.get(str(r), 1) for r in labelled], np.int64)

    def mean(x: npt.NDArray[np.float64]) -> tuple[float, float]:
        return active_design_mean(x, P, N, rounds=R)

    cols = {k: per[k].to_numpy(np.float64) for k in ("m", "a", "j", "c")}
    M, A, J, C = (mean(cols[k])[0] for k in ("m", "a", "j", "c"))
    if not M > 0:
        return out
    q = t_quantile(ci, n - 1)
    po, pj, pc = A / M, J / M, C / M
    infl = {k: (cols[k] - r * cols["m"]) / M for k, r in (("a", po), ("j", pj), ("c", pc))}
    h = q * math.sqrt(max(mean(infl["a"])[1], 0.0))
    out["percent_agreement"] = (po, max(po - h, 0.0), min(po + h, 1.0))
    pe = pj * pc + (1.0 - pj) * (1.0 - pc)
    if pe < 1.0:
        kappa = (po - pe) / (1.0 - pe)
        z = (
            infl["a"]
            + (po - 1.0) / (1.0 - pe) * ((2 * pc - 1) * infl["j"] + (2 * pj - 1) * infl["c"])
        ) / (1.0 - pe)
        hk = q * math.sqrt(max(mean(z)[1], 0.0))
        out["cohen_kappa"] = (kappa, kappa - hk, kappa + hk)
    return out


def _unit_counts(u: pd.DataFrame, labelled: pd.Index) -> pd.DataFrame:
    """Per expert-graded response (``labelled``, in order): ``m`` units paired between
    the judge (``met_j``) and the consensus (``met_c``) in ``u``, ``a`` agreeing, ``j``
    met by the judge, ``c`` met by the consensus (0 for a response without any)."""
    u = u.loc[u["response_id"].isin(labelled)]
    jm, cm = u["met_j"].astype(bool), u["met_c"].astype(bool)
    return (
        pd.DataFrame(
            {
                "response_id": u["response_id"].to_numpy(),
                "m": 1.0,
                "a": (jm == cm).astype(np.float64).to_numpy(),
                "j": jm.astype(np.float64).to_numpy(),
                "c": cm.astype(np.float64).to_numpy(),
            }
        )
        .groupby("response_id")
        .sum()
        .reindex(labelled, fill_value=0.0)
    )


def apply_design(
    f: Frames,
    design: Design | None,
    humans: Sequence[str],
    ci: float,
    context: AnalysisContext | None,
    rows: list[tuple[Any, ...]],
    judge_rows: list[dict[str, Any]],
    alt: dict[str, Any] | None,
    overview: dict[str, Any],
    notes: list[str],
) -> list[tuple[Any, ...]]:
    """Under an active design (else nothing changes): each judge's overall percent
    agreement and kappa design-weighted (:func:`design_weighted_agreement`) in the
    agreement rows and the judges table, the not-weighted note on every other agreement
    row and on the alt-test, the design in the overview and the notes. Returns the rows."""
    if not is_active(design):
        return rows
    assert design is not None
    overview["design"] = "active"
    notes.insert(
        0,
        f"{ACTIVE_DESIGN}: the bias-corrected estimates and the judges' agreement with the "
        "consensus (percent agreement, kappa) are design-weighted; the other figures over "
        "expert-graded items (experts / raw / calibrated judge by model, expert agreement, "
        "agreement by group, pairwise, alt-test, criterion health, flips, disagreements) "
        "are over the items as sampled only and not design-weighted",
    )
    weighted: dict[str, dict[str, tuple[float, float, float]]] = {}
    for row in judge_rows:
        w = design_weighted_agreement(f, row["judge"], humans, design, ci, context)
        weighted[row["judge"]] = w
        for stat in ("cohen_kappa", "percent_agreement"):
            row[stat], row[f"{stat}_low"], row[f"{stat}_high"] = w[stat]
    out = []
    for r in rows:
        judge_overall = r[0] == "overall" and r[3] in weighted
        out += _design_rows([r], weighted[r[3]] if judge_overall else None)
    if alt is not None:
        alt["design_note"] = NOT_WEIGHTED
    return out


def not_weighted_rows(design: Design | None, rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """``rows`` computed after :func:`apply_design` ran: under an active design each says
    it is not design-weighted; under a uniform one they are returned as they are."""
    return _design_rows(rows, None) if is_active(design) else rows


def _design_rows(
    rows: list[tuple[Any, ...]], weighted: Mapping[str, tuple[float, float, float]] | None
) -> list[tuple[Any, ...]]:
    """Agreement rows under an active design: the design-weighted figures replace theirs
    (``weighted``, by statistic), every other row's note says it is not weighted."""
    out = []
    for r in rows:
        stat, note = r[4], r[10]
        if weighted is not None and stat in weighted:
            value, lo, hi = weighted[stat]
            out.append((*r[:5], value, lo, hi, *r[8:10], _with_note(note, WEIGHTED)))
        else:
            out.append((*r[:10], _with_note(note, NOT_WEIGHTED)))
    return out


class _Steps(Protocol):
    """What a section needs of the computation's progress
    (:class:`gradercal.dashboard.compute._Steps`): mark a section done, poll cancellation."""

    def check(self) -> None: ...

    def engine_hook(self, _stage: str, _done: int, _total: int) -> None: ...

    def step(self, label: str) -> None: ...


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


def _n_units(frames: Frames) -> int:
    crit = frames.criteria.loc[frames.criteria["kind"] != "auto"].drop_duplicates(
        ["task_id", "criterion_id"]
    )
    per_task = crit.groupby("task_id").size()
    resp = frames.responses.drop_duplicates("response_id")
    return int(resp["task_id"].map(per_task).fillna(0).sum())


def overview_section(
    frames: Frames,
    v: pd.DataFrame,
    humans: list[str],
    judges: list[str],
    primary: str | None,
    context: AnalysisContext | None = None,
) -> dict[str, Any]:
    from gradercal.analysis.verdicts import unit_positions

    n_units = _n_units(frames)
    keys = ["response_id", "criterion_id"]
    pos = unit_positions(context, v)
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


def agreement_rows(
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
        rows += agreement_rows(
            by, label, None, EXPERTS, h.statistics, HUMAN_STATISTICS, h.n_units_paired, h.n_tasks
        )
        if g.judge is not None and judge is not None:
            c = g.judge
            rows += agreement_rows(
                by, label, None, judge, c.metrics, JUDGE_STATISTICS, c.n_units, c.n_tasks
            )
    return rows


def grouping_rows(
    f: Frames,
    by: Grouping,
    humans: list[str],
    primary: str | None,
    boot: BootSettings,
    context: AnalysisContext | None,
    steps: _Steps,
) -> list[tuple[Any, ...]]:
    """The agreement rows of one grouping (tag, workflow or domain), as one section."""
    from gradercal.analysis.agreement import group_agreement

    groups = group_agreement(
        f,
        by,
        humans,
        primary,
        **boot.kwargs(),
        context=context,
        progress=steps.engine_hook,
    )
    steps.step(f"agreement by {by}")
    return _group_rows(by, groups, primary)


@dataclass
class Judged:
    """The judges section: agreement rows, the judges table's rows, confusion matrices
    and the primary judge's alt-test."""

    rows: list[tuple[Any, ...]]
    table_rows: list[dict[str, Any]]
    confusion: dict[str, np.ndarray]
    alt: dict[str, Any] | None


def judge_sections(
    f: Frames,
    judges: Sequence[str],
    humans: list[str],
    primary: str | None,
    coverage: Mapping[str, Any],
    boot: BootSettings,
    context: AnalysisContext | None,
    steps: _Steps,
    notes: list[str],
) -> Judged:
    """Every judge against the expert consensus, with its alt-test."""
    from gradercal.analysis.agreement import judge_agreement

    out = Judged([], [], {}, None)
    for jname in judges:
        try:
            ja = judge_agreement(
                f,
                jname,
                humans,
                **boot.kwargs(),
                context=context,
                progress=steps.engine_hook,
            )
        except ValueError as exc:
            notes.append(f"judge {jname}: {exc}")
            continue
        c = ja.headline
        out.rows += agreement_rows(
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
        res = _alt_test(f, jname, humans, notes, context)
        row["alt_test_passed"] = None if res is None else bool(res["passed"])
        row["alt_test_winning_rate"] = math.nan if res is None else float(res["winning_rate"])
        row["alt_test_advantage"] = math.nan if res is None else float(res["advantage_probability"])
        if jname == primary:
            out.alt = res
        out.table_rows.append(row)
        steps.check()
    return out


def pairwise_section(
    f: Frames,
    humans: list[str],
    judges: list[str],
    boot: BootSettings,
    context: AnalysisContext | None,
) -> pd.DataFrame:
    """Percent agreement and Cohen's kappa of every pair of experts and judges."""
    from gradercal.analysis.agreement import pairwise_agreement

    kinds = dict.fromkeys(humans, "human") | dict.fromkeys(judges, "judge")
    prow: list[tuple[Any, ...]] = []
    for p in pairwise_agreement(f, [*humans, *judges], **boot.kwargs(), context=context):
        for stat in ("percent_agreement", "cohen_kappa"):
            value, lo, hi, _ = _fig(getattr(p, stat))
            prow.append(
                (p.a, p.b, kinds[p.a], kinds[p.b], stat, value, lo, hi, p.n_units, p.n_tasks)
            )
    return (
        pd.DataFrame(prow, columns=list(_PAIRWISE_COLUMNS))
        if prow
        else empty_frame(_PAIRWISE_COLUMNS)
    )


def calibrated_columns(judge_rows: list[dict[str, Any]], primary: str, cal_cmp: Any) -> None:
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
    f: Frames, judge: str, humans: Sequence[str], notes: list[str], context: AnalysisContext | None
) -> dict[str, Any] | None:
    from gradercal.analysis.alt_test import alt_test_frames

    if len(humans) < 2:
        notes.append(f"alt-test of {judge} skipped: fewer than 2 experts")
        return None
    try:
        return alt_test_frames(f, judge, list(humans), context=context).to_dict()
    except (GradercalError, ValueError) as exc:
        notes.append(f"alt-test of {judge} skipped: {exc}")
        return None


def calibrate_section(
    f: Frames,
    judge: str,
    humans: Sequence[str],
    method: str,
    options: Mapping[str, Any],
    source: str,
    boot: BootSettings,
    notes: list[str],
    context: AnalysisContext | None,
) -> tuple[dict[str, Any] | None, pd.DataFrame | None, pd.DataFrame | None, Any]:
    from gradercal.analysis.calibration import brier_score, cross_fit, expected_calibration_error

    try:
        cf = cross_fit(f, judge, method, list(humans), context=context, **options)  # type: ignore[arg-type]
    except ValueError as exc:
        notes.append(f"no calibrated judge: {exc}")
        return None, None, None, None
    before, after, y, cmp = _out_of_fold(cf, judge, boot)
    n_items = len(y)
    rel = _reliability_frame(before, after, y)
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


def _out_of_fold(
    cf: CrossFit, judge: str, boot: BootSettings
) -> tuple[pd.Series, pd.Series, pd.Series, Comparison | None]:
    """``(judge's probability, out-of-fold calibrated one, truth, comparison)`` of the
    cross-fit ``cf``: per item (the calibrated judge's agreement with the consensus
    compared, :func:`gradercal.analysis.agreement.compare`) or, for a per-response fit,
    per response (no comparison); only where all are finite."""
    from gradercal.analysis.agreement import compare

    if cf.items is not None:
        it = cf.items
        sel = np.isfinite(it["oof"].to_numpy(np.float64)) & np.isfinite(
            it["human_met"].to_numpy(np.float64)
        )
        it = it.loc[sel]
        cmp = compare(
            it["oof"].to_numpy(np.float64) >= 0.5,
            it["human_met"].to_numpy(np.float64) == 1.0,
            it["task_id"].to_numpy(object).tolist(),
            candidate_name=f"{judge} (calibrated)",
            reference_name="consensus",
            **boot.kwargs(),
        )
        return it["judge_score"], it["oof"], it["human_met"], cmp
    r = cf.responses
    sel = (
        np.isfinite(r["oof"].to_numpy(np.float64))
        & np.isfinite(r["human_score"].to_numpy(np.float64))
        & np.isfinite(r["judge_score"].to_numpy(np.float64))
    )
    rr = r.loc[sel]
    return rr["judge_score"], rr["oof"], rr["human_score"], None


def _reliability_frame(before: pd.Series, after: pd.Series, y: pd.Series) -> pd.DataFrame:
    """The reliability table before and after calibration, side by side."""
    from gradercal.analysis.calibration import reliability_table

    rb = pd.DataFrame(reliability_table(before, y))
    ra = pd.DataFrame(reliability_table(after, y))
    return pd.DataFrame(
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


def models_section(
    f: Frames,
    judge: str | None,
    humans: Sequence[str],
    calibrated: pd.DataFrame | None,
    cal_info: Mapping[str, Any] | None,
    boot: BootSettings,
    notes: list[str],
    context: AnalysisContext | None,
    design: Design | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per model: the experts', raw and calibrated judge's figures (on the responses all
    three scored) and the bias-corrected estimate (``gradercal estimate``'s, with the
    active ``design``'s weights when given), and the pass ↔ fail flips."""
    from gradercal.analysis.estimate import estimate_report
    from gradercal.analysis.impact import impact_report

    if judge is None or not humans:
        if judge is not None:
            notes.append("no expert verdicts: per-model comparison skipped")
        return empty_frame(_MODEL_COLUMNS), empty_frame(_FLIP_COLUMNS)
    rep = impact_report(
        f,
        judge,
        list(humans),
        calibrated=calibrated,
        calibration=None if cal_info is None else dict(cal_info),
        breakdowns=(),
        **boot.kwargs(),
        context=context,
    )
    active = is_active(design)
    est = estimate_report(
        f,
        judge,
        list(humans),
        ci=boot.ci,
        context=context,
        inclusion=design[0] if design is not None and active else None,
        rounds=design[1] if design is not None and active else None,
    )
    rows = _model_rows(rep, est, active)
    order = {s: i for i, s in enumerate(MODEL_SOURCES)}
    mdf = pd.DataFrame(rows, columns=list(_MODEL_COLUMNS)) if rows else empty_frame(_MODEL_COLUMNS)
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
    return mdf, _flips(rep)


def _model_rows(
    rep: Mapping[str, Any], est: Mapping[str, Any], active: bool
) -> list[tuple[Any, ...]]:
    """The models table's rows, model by model: each grader's figures of the impact
    report ``rep``, then the estimate ``est`` (notes saying what an active design
    weights)."""
    rows: list[tuple[Any, ...]] = []
    est_rows = {r["model"]: r for r in est["models"]}
    models = sorted({str(r["model"]) for r in rep["models"]} | set(est_rows))
    imp = {str(r["model"]): r for r in rep["models"]}
    for model in models:
        r = imp.get(model)
        for metric in ("mean_score", "pass_rate"):
            if r is not None:
                for g in rep["graders"]:
                    value, lo, hi, note = _json_fig(r[g][metric])
                    if active:
                        note = _with_note(note, NOT_WEIGHTED)
                    rows.append(
                        (model, _SOURCE_OF[g], metric, value, lo, hi, r["n_responses"], note)
                    )
            e = est_rows.get(model)
            if e is not None:
                d = e[metric]
                lo, hi = d["ci"] if d.get("ci") else (math.nan, math.nan)
                value = math.nan if d.get("estimate") is None else float(d["estimate"])
                note = _with_note(d.get("note"), ACTIVE_DESIGN) if active else d.get("note")
                rows.append(
                    (model, "estimate", metric, value, float(lo), float(hi), e["n_responses"], note)
                )
    return rows


def _flips(rep: Mapping[str, Any]) -> pd.DataFrame:
    """The pass ↔ fail flips of the impact report ``rep``."""
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
    return pd.DataFrame(frows, columns=list(_FLIP_COLUMNS)) if frows else empty_frame(_FLIP_COLUMNS)


def health_section(
    f: Frames,
    judge: str | None,
    humans: Sequence[str],
    bar: float,
    context: AnalysisContext | None,
) -> tuple[pd.DataFrame, list[tuple[Any, ...]]]:
    """Criterion-health table and the criterion rows of the agreement table."""
    from gradercal.analysis.health import HEALTH_TABLE_COLUMNS, health_table

    columns = ["rank", *HEALTH_TABLE_COLUMNS]
    t = health_table(f, judge, list(humans), bar=bar, context=context)
    crit_rows: list[tuple[Any, ...]] = []
    if t.empty:
        return empty_frame(columns), crit_rows
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


def disagreements_section(
    v: pd.DataFrame,
    cons: pd.DataFrame,
    judge: str | None,
    humans: Sequence[str],
    health: pd.DataFrame,
    context: AnalysisContext | None = None,
) -> pd.DataFrame:
    """Units where the experts split or the judge departs from a decided consensus.

    The definitions of :func:`gradercal.analysis.health.criterion_health`'s details: *split* —
    two or more expert verdicts, not all equal; *departs* — the judge's verdict differs
    from the decided consensus (:func:`gradercal.analysis.agreement.consensus_verdicts`). With a
    context that knows the unit position of every row of ``v`` and ``cons``, the units are
    found and described by position (no merges); the same table either way. Verdicts and
    consensus are paired by :func:`gradercal.analysis.verdicts.pair` on both paths.
    """
    from gradercal.analysis.verdicts import grader_rows, pair, unit_positions

    keys = ["response_id", "criterion_id"]
    graders = [*humans, *([judge] if judge is not None else [])]
    cols = [*_DISAGREEMENT_COLUMNS, *(f"verdict:{g}" for g in graders)]
    keep = v["grader"].isin(graders).to_numpy(bool)
    if not keep.any():
        return empty_frame(cols)
    # The judge's rows (of ``v``) whose verdict differs from the decided consensus.
    departing = np.zeros(0, dtype=np.intp)
    if judge is not None and not cons.empty:
        jrows = grader_rows(context, v, judge)
        i, c = pair(context, v, cons, left_rows=jrows)
        differs = v["met"].to_numpy(bool)[jrows[i]] != cons["met"].to_numpy(bool)[c]
        departing = jrows[i][differs]
    v_pos, c_pos = unit_positions(context, v), unit_positions(context, cons)
    if v_pos is not None and c_pos is not None and v_pos[1] == c_pos[1]:
        out = _disagreements_by_position(
            context, v, np.flatnonzero(keep), v_pos[0], v_pos[1], cons, departing, humans, graders
        )
        if out is None:
            return empty_frame(cols)
        return _ranked_disagreements(out, judge, graders, health, cols)
    dep = v.iloc[departing].loc[:, keys]
    v = v.loc[keep]
    hv = v.loc[v["grader"].isin(list(humans))]
    per = hv.groupby(keys, sort=False).agg(n=("met", "size"), n_met=("met", "sum"))
    split = per.loc[(per["n"] >= 2) & (per["n_met"] > 0) & (per["n_met"] < per["n"])]
    units = split.index.to_frame(index=False).assign(experts_split=True)
    if judge is not None and not cons.empty:
        units = units.merge(dep.assign(judge_departs=True), on=keys, how="outer")
    else:
        units = units.assign(judge_departs=False)
    if units.empty:
        return empty_frame(cols)
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
    i, c = pair(context, out, cons, keep_unmatched=True)
    out = out.iloc[i].reset_index(drop=True)
    cons_met = cons["met"].to_numpy(bool)
    out["consensus"] = [None if k < 0 else bool(cons_met[k]) for k in c.tolist()]
    return _ranked_disagreements(out, judge, graders, health, cols)


def _disagreements_by_position(
    context: AnalysisContext | None,
    v: pd.DataFrame,
    kept: npt.NDArray[np.intp],
    unit_of: npt.NDArray[np.intp],
    n_units: int,
    cons: pd.DataFrame,
    departing: npt.NDArray[np.intp],
    humans: Sequence[str],
    graders: Sequence[str],
) -> pd.DataFrame | None:
    """:func:`disagreements_section`' unit table from unit positions (None: no such unit).

    ``kept`` are the rows of ``v`` by ``graders``, ``unit_of`` the unit position of every
    row of ``v``, ``departing`` the judge's rows that differ from the consensus. One row
    per disagreeing unit in order of its first verdict row (the order of the merge
    path), with the first row's task, model, text and points, the two reasons, the
    number of "unclear" marks, every grader's verdict and the consensus.
    """
    from gradercal.analysis.verdicts import grader_rows, pair

    met = v["met"].to_numpy(bool)
    unit = unit_of[kept]
    human = v["grader"].isin(list(humans)).to_numpy(bool)[kept]
    n = np.bincount(unit[human], minlength=n_units)
    n_met = np.bincount(unit[human], weights=met[kept][human].astype(np.float64), minlength=n_units)
    split = (n >= 2) & (n_met > 0) & (n_met < n)
    departs = np.zeros(n_units, dtype=bool)
    departs[unit_of[departing]] = True
    rows = kept[np.flatnonzero((split | departs)[unit])]
    if not len(rows):
        return None
    sub_unit = unit_of[rows]
    _, first = np.unique(sub_unit, return_index=True)
    first = np.sort(first)
    order = sub_unit[first]  # the disagreeing units, in order of first appearance
    first_rows = rows[first]
    out = v.iloc[first_rows].loc[
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

    def matched(right: pd.DataFrame, right_rows: Any, values: Any) -> list[bool | None]:
        """The value of each disagreeing unit's row of ``right`` (None: no row)."""
        i, j = pair(
            context, v, right, left_rows=first_rows, right_rows=right_rows, keep_unmatched=True
        )
        code = np.full(len(first_rows), -1, dtype=np.int8)
        found = j >= 0
        code[i[found]] = np.asarray(values, dtype=bool)[j[found]]
        return [None if x < 0 else bool(x) for x in code.tolist()]

    for g in graders:
        mine = grader_rows(context, v, g)
        out[f"verdict:{g}"] = matched(v, mine, met[mine])
    out["consensus"] = matched(cons, None, cons["met"].to_numpy(bool))
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
