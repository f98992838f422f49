"""Agreement per criterion version: did a rubric fix help? (issue #16)

A criterion revised in a way that can change a verdict has *eras* (see
:mod:`gradercal.db.eras`): era ``v`` holds the verdicts given while the criterion read as
it did from task version ``v`` on. :func:`agreement_by_version` takes frames loaded with
``version="all"`` (every verdict, stale ones included) and the era of each verdict on a
revised criterion (:class:`VerdictEras`), and computes, for every revised criterion and
every era:

* the units (responses) with a human verdict, those with two or more, the verdicts;
* **human–human agreement**: Gwet's percent agreement and nominal Krippendorff's alpha
  (:func:`gradercal.stats.coefficients.percent_agreement`,
  :func:`~gradercal.stats.coefficients.krippendorff_alpha`) on the met / not met verdicts
  of the era, category set {0, 1} — the statistics of
  :func:`gradercal.analysis.agreement.human_agreement`, on the same verdict rule
  (:func:`gradercal.analysis.verdicts.verdicts`);
* with a judge, the **judge against the human consensus** of the same era
  (:func:`gradercal.analysis.agreement.compare` against
  :func:`~gradercal.analysis.verdicts.consensus_verdicts`: adjudication, else strict
  majority; undecided units left out): percent agreement and Cohen's kappa.

**Intervals.** The project's intervals resample tasks (:mod:`gradercal.stats.bootstrap`,
expanded percentile). A criterion belongs to one task, so over its units the task
bootstrap has a single cluster and gives no interval (the dashboard's per-criterion rows
say so). Here the next level down is resampled: the unit — one response, all its
verdicts together (``clustered_bootstrap`` with each unit its own cluster, and
``compare`` with the response as cluster). The same seed gives the same resamples, and
the expanded percentile interval widens for few units; with fewer than two units there
is no interval. The units of one criterion are the responses to one task, so the
interval speaks of those graders re-reading responses like these, not of other tasks.

**What an era holds.** Each grader's latest verdict given in that era: the database row
for the current era, the history for earlier ones (a verdict given again under a
revised criterion is a new revision; the history keeps the earlier value with the
version it was given under), so the "before" of a fix stays readable after everyone has
regraded. Its criteria attributes (points, levels) are the current ones.

This module imports pandas, numpy and gradercal's core only (no SQL, no Qt).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from gradercal.analysis.agreement import MET_CATEGORIES, compare
from gradercal.analysis.verdict_eras import VerdictEras
from gradercal.analysis.verdicts import consensus_verdicts, human_graders, verdicts
from gradercal.frames import Frames
from gradercal.stats.bootstrap import BootResult, clustered_bootstrap
from gradercal.stats.catalogue import view
from gradercal.stats.coefficients import RatingTable, krippendorff_alpha, percent_agreement
from gradercal.stats.intervals import boot_json

__all__ = [
    "VERSION_STATISTICS",
    "VerdictEras",
    "VersionAgreement",
    "agreement_by_version",
    "versions_report",
]

#: Human–human statistics per criterion version (the catalogue's view ``"version"``).
VERSION_STATISTICS: tuple[str, ...] = view("version")
#: Judge-vs-consensus figures per criterion version (view ``"version_judge"``).
JUDGE_FIGURES: tuple[str, ...] = view("version_judge")


@dataclass(frozen=True)
class VersionAgreement:
    """Agreement on one revised criterion within one of its eras.

    Attributes:
        task_id, criterion_id: The criterion.
        version: The task version at which this era began (1 for the first).
        current: Whether this is the criterion's current era.
        raters: Human graders with a verdict in this era.
        n_units: Responses with a human verdict.
        n_units_paired: Responses with two or more human verdicts (what agreement uses).
        n_ratings: Human verdicts.
        statistics: ``{name: BootResult}`` for :data:`VERSION_STATISTICS` (intervals
            resample the responses).
        judge: The judge compared, or None.
        judge_n_units: Responses with a judge verdict and a decided consensus.
        judge_metrics: ``{name: BootResult}`` for :data:`JUDGE_FIGURES` (empty without a
            judge).
    """

    task_id: str
    criterion_id: str
    version: int
    current: bool
    raters: list[str]
    n_units: int
    n_units_paired: int
    n_ratings: int
    statistics: dict[str, BootResult]
    judge: str | None = None
    judge_n_units: int = 0
    judge_metrics: dict[str, BootResult] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        out: dict[str, Any] = {
            "task_id": self.task_id,
            "criterion_id": self.criterion_id,
            "version": self.version,
            "current": self.current,
            "raters": list(self.raters),
            "n_units": self.n_units,
            "n_units_paired": self.n_units_paired,
            "n_ratings": self.n_ratings,
            **{k: boot_json(v) for k, v in self.statistics.items()},
        }
        if self.judge is not None:
            out["human_judge"] = {
                "judge": self.judge,
                "n_units": self.judge_n_units,
                **{k: boot_json(v) for k, v in self.judge_metrics.items()},
            }
        return out


def _no_value(note: str, ci: float) -> BootResult:
    return BootResult(None, None, None, 0, 0, 0, ci, "percentile", note)


def _human_statistics(
    hv: pd.DataFrame, n_boot: int, seed: int, ci: float
) -> tuple[dict[str, BootResult], int, int]:
    """The statistics of the verdict rows ``hv``, each unit its own cluster; with the
    units with ≥ 1 and ≥ 2 verdicts."""
    units, _ = pd.factorize(hv["response_id"].to_numpy(object), sort=False)
    ratings = pd.DataFrame(
        {
            "unit": np.asarray(units, dtype=np.int64),
            "rater": pd.Series(hv["grader"].to_numpy(object), dtype=object),
            "value": hv["met"].to_numpy(dtype=np.float64),
        }
    )
    per_unit = np.bincount(ratings["unit"].to_numpy(np.int64)) if len(ratings) else np.zeros(0)
    n_units, n_paired = len(per_unit), int((per_unit >= 2).sum())
    if not len(ratings):
        return {k: _no_value("no ratings", ci) for k in VERSION_STATISTICS}, 0, 0
    cats = list(MET_CATEGORIES)
    table = RatingTable.from_frame(ratings, cats)  # once for every statistic
    if n_boot > 0 and n_units >= 2:
        stats = clustered_bootstrap(
            table, None, VERSION_STATISTICS, n_boot=n_boot, ci=ci, seed=seed, categories=cats
        )
        return stats, n_units, n_paired
    direct = {
        "percent_agreement": percent_agreement(table, categories=cats),
        "krippendorff_alpha": krippendorff_alpha(table, level="nominal", categories=cats),
    }
    stats = {
        k: BootResult(s.value, None, None, 0, n_units, 0, ci, "percentile", s.note)
        for k, s in direct.items()
    }
    return stats, n_units, n_paired


def _of_era(frame: pd.DataFrame, of_era: pd.DataFrame, era: int, keys: list[str]) -> pd.DataFrame:
    """The verdicts of era ``era``: ``of_era``'s own rows when it holds the values (as
    :func:`gradercal.db.eras.read_eras` gives them), else ``frame``'s rows whose key it
    places in that era (eras given as keys only: each verdict's value is the frame's)."""
    columns = list(frame.columns)
    source = of_era if set(columns) <= set(of_era.columns) else frame.merge(of_era, on=keys)
    kept: pd.DataFrame = source.loc[source["era"].to_numpy(np.int64) == era, columns]
    return kept


def _era_frames(frames: Frames, eras: VerdictEras, era: int) -> Frames:
    """``frames`` with only the verdicts of era ``era`` on the revised criteria, as they
    were given then."""
    j = _of_era(frames.judgments, eras.judgments, era, ["response_id", "criterion_id", "grader"])
    a = _of_era(frames.adjudications, eras.adjudications, era, ["response_id", "criterion_id"])
    return replace(
        frames, judgments=j.reset_index(drop=True), adjudications=a.reset_index(drop=True)
    )


def agreement_by_version(
    frames: Frames,
    eras: VerdictEras,
    humans: Sequence[str] | None = None,
    judge: str | None = None,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    ci: float = 0.95,
) -> list[VersionAgreement]:
    """Agreement on every revised criterion in each of its eras (module notes).

    Args:
        frames: The benchmark frames with every verdict (``load_frames(version="all")``;
            filtered frames are fine: the eras are matched by response, criterion and
            grader).
        eras: The revised criteria and each verdict's era
            (:func:`gradercal.db.eras.read_eras`).
        humans: The human graders (default: every grader of kind human); the judge is
            never one of them.
        judge: Also compare this judge with the human consensus of each era.
        n_boot: Bootstrap resamples of the responses (0: no intervals).
        seed: Bootstrap seed.
        ci: Confidence level.

    Returns:
        One row per revised criterion (rubric order) and era (ascending). An era before
        the current one is listed only when it holds a verdict (a criterion added by a
        revision has no earlier era); the current era always.
    """
    if not 0.0 < ci < 1.0:
        raise ValueError("ci must be between 0 and 1")
    if not eras:
        return []
    names = [
        h for h in (list(humans) if humans is not None else human_graders(frames)) if h != judge
    ]
    graders = [*names, *([judge] if judge is not None else [])]
    wanted = frames.criteria.loc[frames.criteria["kind"] != "auto", ["task_id", "criterion_id"]]
    order = [
        (str(t), str(c))
        for t, c in wanted.itertuples(index=False, name=None)
        if (str(t), str(c)) in eras.revised
    ]
    order = list(dict.fromkeys(order))
    # Only the revised criteria (the verdict and consensus tables span the criteria given).
    crit = frames.criteria
    keys = pd.MultiIndex.from_arrays([crit["task_id"], crit["criterion_id"]])
    revised = replace(frames, criteria=crit.loc[keys.isin(order)].reset_index(drop=True))
    per_era = _per_era(revised, eras, graders, names, judge)
    empty_v = verdicts(replace(revised, judgments=revised.judgments.iloc[:0]), graders)
    out: list[VersionAgreement] = []
    for task_id, crit_id in order:
        marks = eras.revised[(task_id, crit_id)]
        for era in marks:
            by_crit, cons_by = per_era[era]
            mine = by_crit.get((task_id, crit_id), empty_v)
            cons = cons_by.get((task_id, crit_id), pd.DataFrame())
            current = era == marks[-1]
            if mine.empty and not current:
                continue
            hv = mine.loc[mine["grader"].isin(names)]
            stats, n_units, n_paired = _human_statistics(hv, n_boot, seed, ci)
            row = VersionAgreement(
                task_id=task_id,
                criterion_id=crit_id,
                version=int(era),
                current=current,
                raters=sorted({str(g) for g in hv["grader"]}),
                n_units=n_units,
                n_units_paired=n_paired,
                n_ratings=len(hv),
                statistics=stats,
            )
            if judge is not None:
                row = _with_judge(row, mine, cons, judge, names, n_boot, seed, ci)
            out.append(row)
    return out


def _per_era(
    revised: Frames,
    eras: VerdictEras,
    graders: list[str],
    names: list[str],
    judge: str | None,
) -> dict[int, tuple[dict[Any, pd.DataFrame], dict[Any, pd.DataFrame]]]:
    """Per era: its verdicts of ``graders`` and (with a judge) the consensus of ``names``,
    each split by ``(task_id, criterion_id)`` once."""
    per_era: dict[int, tuple[dict[Any, pd.DataFrame], dict[Any, pd.DataFrame]]] = {}
    for era in sorted({v for marks in eras.revised.values() for v in marks}):
        sub = _era_frames(revised, eras, era)
        v = verdicts(sub, graders)
        by_crit = dict(tuple(v.groupby(["task_id", "criterion_id"], sort=False)))
        cons_by: dict[Any, pd.DataFrame] = {}
        if judge is not None and names:
            cons = consensus_verdicts(sub, names)
            cons = cons.merge(
                sub.responses.loc[:, ["response_id", "task_id"]], on="response_id", how="inner"
            )
            cons_by = dict(tuple(cons.groupby(["task_id", "criterion_id"], sort=False)))
        per_era[era] = (by_crit, cons_by)
    return per_era


def _with_judge(
    row: VersionAgreement,
    mine: pd.DataFrame,
    cons: pd.DataFrame,
    judge: str,
    names: Sequence[str],
    n_boot: int,
    seed: int,
    ci: float,
) -> VersionAgreement:
    mine_judge = mine["grader"].to_numpy(object) == judge
    responses = mine["response_id"].to_numpy(object)[mine_judge]
    met = mine["met"].to_numpy(bool)[mine_judge]
    # this criterion's decided consensus of the same era, by response
    ref = (
        {}
        if cons.empty
        else dict(zip(cons["response_id"].tolist(), cons["met"].tolist(), strict=True))
    )
    both = np.fromiter((r in ref for r in responses), dtype=bool, count=len(responses))
    paired = responses[both]
    if len(paired):
        c = compare(
            met[both],
            np.asarray([bool(ref[r]) for r in paired], dtype=bool),
            list(paired),  # each response its own cluster
            candidate_name=judge,
            reference_name="consensus of " + ", ".join(names),
            n_boot=n_boot,
            seed=seed,
            ci=ci,
        )
        metrics = {k: c.metrics[k] for k in JUDGE_FIGURES}
    else:
        note = "no response with a judge verdict and a decided consensus"
        metrics = {k: _no_value(note, ci) for k in JUDGE_FIGURES}
    return replace(row, judge=judge, judge_n_units=len(paired), judge_metrics=metrics)


def versions_report(
    frames: Frames,
    eras: VerdictEras,
    humans: Sequence[str] | None = None,
    judge: str | None = None,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    ci: float = 0.95,
    benchmark: str | None = None,
) -> dict[str, Any]:
    """``gradercal agreement --by-version --json``: the rows of
    :func:`agreement_by_version` with what they were computed on."""
    names = [
        h for h in (list(humans) if humans is not None else human_graders(frames)) if h != judge
    ]
    rows = agreement_by_version(frames, eras, names, judge, n_boot=n_boot, seed=seed, ci=ci)
    return {
        "benchmark": benchmark,
        "humans": names,
        "judge": judge,
        "bootstrap": (
            {
                "n_boot": n_boot,
                "ci": ci,
                "seed": seed,
                "cluster": "response",
                "method": "expanded_percentile",
            }
            if n_boot > 0
            else None
        ),
        "n_revised": len({(r.task_id, r.criterion_id) for r in rows}),
        "criteria": [r.to_dict() for r in rows],
        "notes": [
            "each version holds every grader's latest verdict given under it (earlier "
            "versions from the history): the same grader may count in several versions"
        ]
        if rows
        else [],
    }
