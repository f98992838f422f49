"""Judge alignment proven out of sample: the split, the leakage guard and the proof.

A judge's prompt is improved from the experts' verdicts on *development* tasks and the
improvement is proven on *held-out* tasks that nothing in the candidate prompts came
from. This module is the statistical core (pure: numpy, pandas, scipy, gradercal's
core; no SQL, Qt, click or rich). The calls that build and run candidates are in
:mod:`gradercal.judge.align`.

**Split** (:func:`split_tasks`). The tasks are grouped into strata by
``(workflow, domain)`` (a missing value is its own level). Within each stratum the tasks
are shuffled by ``numpy.random.default_rng(seed)`` (strata in sorted order, tasks sorted
before shuffling, so the split depends only on the set of tasks, their strata, the share
and the seed); task ``i`` (0-based) of a stratum of ``n_s`` tasks gets the key
``(i + u_s) / n_s`` with ``u_s`` uniform on [0, 1) drawn once per stratum, and the
``k = round(share · n)`` tasks with the smallest keys (at least one, at most ``n − 1``)
are held out. Each stratum therefore contributes ``⌊share · n_s⌋`` or ``⌈share · n_s⌉``
tasks (systematic sampling with a random start), and the total is exactly ``k``.

**Leakage guard** (:func:`assert_no_leakage`). Every candidate carries the task ids its
evidence came from (:class:`Provenance`); a candidate whose provenance names a held-out
task raises :class:`HeldOutLeakage` before it can be evaluated or stored.

**Units.** A unit is one (response, judgment criterion) of a held-out task with a decided
expert consensus (:func:`gradercal.analysis.verdicts.consensus_verdicts`). A judge's
verdict is met (1), not met (0) or missing (NaN). The figures of one judge use the units
where it has a verdict; a paired difference uses the units where *both* judges have one.

**Figures** against the consensus ``c`` of a judge ``j`` over units ``u``, from the sums
``n``, ``Σj``, ``Σc``, ``Σjc`` (so ``n₁₁ = Σjc``, ``n₀₀ = n − Σj − Σc + Σjc``):

* Cohen's kappa ``(p_o − p_e) / (1 − p_e)`` with ``p_o = (n₁₁ + n₀₀)/n`` and
  ``p_e = (Σj Σc + (n − Σj)(n − Σc)) / n²`` (undefined when ``p_e = 1``), equal to
  :func:`gradercal.stats.coefficients.cohen_kappa` on the same pairs;
* balanced accuracy ``(n₁₁/Σc + n₀₀/(n − Σc)) / 2`` (undefined when the consensus has one
  class only);
* per model: the mean-score error and the pass-rate error, judge minus consensus. A
  response's score here is ``Σ points · met / Σ positive points`` over its units (those
  with a consensus and a verdict of the judge), clipped to [0, 1], for the judge and the
  consensus on the *same* units; it passes at ``score ≥ pass_threshold − 1e-9``
  (default 0.7, the benchmark's rule in :mod:`gradercal.analysis.scoring`);
* flips: responses whose pass / fail by the judge differs from the consensus's.

**Paired difference** candidate − baseline of kappa and of balanced accuracy, with a
task-clustered bootstrap: one matrix of resampling weights
(:func:`gradercal.stats.bootstrap.resampling_weights`, ``n_boot`` × held-out tasks, from
``seed``) is applied to the per-task sums of *both* judges, so each resample's difference
is the difference of the two judges on the same resampled tasks. The interval is
:data:`~gradercal.stats.bootstrap.DEFAULT_CI_METHOD` (the expanded percentile interval)
of the difference's replicates, at ``ci`` (default 0.95): the field ``ci``.

**Multiplicity: ``ci_corrected``** (Holm 1979, as adjusted confidence levels). With
``m`` candidates evaluated on the held-out tasks, each candidate ``k`` gets
``q_k`` = the share of its valid replicates with difference ≤ 0 (the bootstrap's
one-sided p-value for "no gain"; ordering by it is ordering by how far the interval
clears zero). Candidates are ranked by ``q`` ascending (ties: input order). Walking the
ranks ``r = 1 … m``, candidate of rank ``r`` gets the interval at confidence
``ci_r = 1 − (1 − ci)/(m − r + 1)``; it is *proven better* when the lower bound of that
interval is above 0 **and** every lower rank was proven. At the first rank that is not
proven, Holm's procedure stops: that candidate and every later one get the Bonferroni
interval ``1 − (1 − ci)/m`` and are not proven. So ``ci_corrected`` is the interval whose
lower bound decides "proven better", and the family-wise probability of declaring a
candidate better when it is not is at most ``(1 − ci)/2`` (0.025 at 95 %: a one-sided
test at each step), whatever the dependence between the candidates — up to the
bootstrap's own approximation, checked by simulation in
tests/analysis/test_alignment_sim.py. With ``m = 1``, ``ci_corrected = ci``.
:func:`benjamini_yekutieli` adjusted p-values of the same ``q`` are reported too
(``p_by``), for an FDR reading; they do not decide anything.

A candidate is **proven better** only by the corrected lower bound of its *kappa*
difference, and only with at least ``min_tasks`` held-out tasks (default
:data:`~gradercal.stats.bootstrap.FEW_CLUSTERS` = 10: below that the cluster bootstrap's
intervals are unreliable, so they are reported but prove nothing); balanced accuracy is corrected the same way (its own family) and reported.

References: Holm (1979), *Scand. J. Statist.* 6:65; Benjamini & Yekutieli (2001),
*Ann. Statist.* 29:1165; Davison & Hinkley (1997) §3.8 (cluster bootstrap).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from gradercal.analysis.alt_test import benjamini_yekutieli
from gradercal.analysis.verdicts import consensus_verdicts
from gradercal.errors import GradercalError
from gradercal.frames import Frames
from gradercal.model import DEFAULT_PASS_THRESHOLD
from gradercal.stats.bootstrap import (
    DEFAULT_CI_METHOD,
    FEW_CLUSTERS,
    BootResult,
    CiMethod,
    interval_levels,
    resampling_weights,
)
from gradercal.stats.intervals import boot_json, percentile_interval

__all__ = [
    "DEFAULT_HOLDOUT_SHARE",
    "DEFAULT_N_BOOT",
    "METRICS",
    "PASS_EPSILON",
    "CandidateEvaluation",
    "HeldOutEvaluation",
    "HeldOutLeakage",
    "HeldOutUnits",
    "JudgeFigures",
    "PairedFigure",
    "Provenance",
    "TaskSplit",
    "assert_no_leakage",
    "binary_figures",
    "consensus_units",
    "contrastive_pairs",
    "development_evidence",
    "development_units",
    "evaluate_held_out",
    "holm_levels",
    "split_from_held_out",
    "split_tasks",
    "verdicts_on",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]

#: Share of the tasks held out unless told otherwise.
DEFAULT_HOLDOUT_SHARE = 0.3
#: Bootstrap resamples of the paired differences unless told otherwise.
DEFAULT_N_BOOT = 2000
#: The figures compared between judges, in report order.
METRICS: tuple[str, ...] = ("kappa", "balanced_accuracy")
#: Tolerance of the pass rule (as in :mod:`gradercal.analysis.scoring`).
PASS_EPSILON = 1e-9
_MISSING = "(none)"


# ----------------------------------------------------------------------------- split


@dataclass(frozen=True)
class TaskSplit:
    """Development and held-out tasks, as recorded with every alignment.

    Attributes:
        development: Development task ids (sorted): all evidence comes from these.
        held_out: Held-out task ids (sorted): only ever judged, never learned from.
        seed: The seed of the split.
        holdout_share: The share asked for.
        strata: ``{"workflow / domain": [n development, n held out]}``.
        source: ``"split"`` (drawn by :func:`split_tasks`) or where the held-out tasks
            came from (e.g. ``"calibration 3"``, :func:`split_from_held_out`).
    """

    development: tuple[str, ...]
    held_out: tuple[str, ...]
    seed: int
    holdout_share: float
    strata: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    source: str = "split"

    def as_json(self) -> dict[str, Any]:
        """``{"development": [...], "held_out": [...], "seed", "holdout_share", "strata"}``."""
        return {
            "development": list(self.development),
            "held_out": list(self.held_out),
            "seed": self.seed,
            "holdout_share": self.holdout_share,
            "strata": {k: list(v) for k, v in self.strata.items()},
            "source": self.source,
        }


def _level(x: Any) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)) or x is pd.NA:
        return _MISSING
    return str(x)


def split_tasks(
    tasks: pd.DataFrame | Sequence[str],
    holdout_share: float = DEFAULT_HOLDOUT_SHARE,
    seed: int = 0,
) -> TaskSplit:
    """Split tasks into development and held-out, stratified by workflow and domain.

    See the module docstring for the rule. Args:
        tasks: A frame with ``task_id`` and optionally ``workflow`` and ``domain``
            (e.g. ``Frames.tasks`` restricted to the tasks with a consensus), or task ids
            (one stratum).
        holdout_share: Share of tasks to hold out, in (0, 1).
        seed: The seed.

    Raises:
        ValueError: ``holdout_share`` outside (0, 1) or fewer than two distinct tasks.
    """
    if not (0.0 < holdout_share < 1.0) or math.isnan(holdout_share):
        raise ValueError(f"holdout share must be in (0, 1); got {holdout_share!r}")
    if isinstance(tasks, pd.DataFrame):
        df = tasks.drop_duplicates("task_id", keep="last")
        ids = [str(t) for t in df["task_id"]]
        wf = [_level(x) for x in df["workflow"]] if "workflow" in df else [_MISSING] * len(ids)
        dm = [_level(x) for x in df["domain"]] if "domain" in df else [_MISSING] * len(ids)
        stratum = {t: f"{w} / {d}" for t, w, d in zip(ids, wf, dm, strict=True)}
    else:
        stratum = {str(t): f"{_MISSING} / {_MISSING}" for t in tasks}
    n = len(stratum)
    if n < 2:
        raise ValueError(f"a split needs at least two tasks with a consensus; found {n}")
    k = min(n - 1, max(1, round(holdout_share * n)))
    rng = np.random.default_rng(seed)
    keyed: list[tuple[float, str]] = []
    by_stratum: dict[str, list[str]] = {}
    for t, s in stratum.items():
        by_stratum.setdefault(s, []).append(t)
    for s in sorted(by_stratum):
        members = sorted(by_stratum[s])
        order = rng.permutation(len(members))
        start = float(rng.random())
        for i, idx in enumerate(order):
            keyed.append(((i + start) / len(members), members[int(idx)]))
    keyed.sort()
    held = {t for _, t in keyed[:k]}
    counts = {
        s: (sum(t not in held for t in m), sum(t in held for t in m))
        for s, m in sorted(by_stratum.items())
    }
    return TaskSplit(
        development=tuple(sorted(set(stratum) - held)),
        held_out=tuple(sorted(held)),
        seed=int(seed),
        holdout_share=float(holdout_share),
        strata=counts,
    )


def split_from_held_out(
    tasks: pd.DataFrame, held_out: Iterable[Any], seed: int = 0, *, source: str = "given"
) -> TaskSplit:
    """The split whose held-out tasks are given (e.g. a saved calibration's held-out tasks).

    ``tasks`` (``task_id``, optionally ``workflow``, ``domain``) are the tasks with a
    consensus; held-out ids not among them are ignored, the others are development tasks.

    Raises:
        ValueError: No given held-out task is among ``tasks``, or none is left for
            development.
    """
    df = tasks.drop_duplicates("task_id", keep="last")
    ids = [str(t) for t in df["task_id"]]
    held = {str(t) for t in held_out} & set(ids)
    if not held:
        raise ValueError(f"none of the {source} held-out tasks has an expert consensus")
    if len(held) == len(ids):
        raise ValueError(f"the {source} held-out tasks leave no development task")
    wf = [_level(x) for x in df["workflow"]] if "workflow" in df else [_MISSING] * len(ids)
    dm = [_level(x) for x in df["domain"]] if "domain" in df else [_MISSING] * len(ids)
    counts: dict[str, list[int]] = {}
    for t, w, d in zip(ids, wf, dm, strict=True):
        c = counts.setdefault(f"{w} / {d}", [0, 0])
        c[1 if t in held else 0] += 1
    return TaskSplit(
        development=tuple(sorted(set(ids) - held)),
        held_out=tuple(sorted(held)),
        seed=int(seed),
        holdout_share=len(held) / len(ids),
        strata={k: (v[0], v[1]) for k, v in sorted(counts.items())},
        source=source,
    )


# ----------------------------------------------------------------------------- leakage


class HeldOutLeakage(GradercalError, AssertionError):
    """A candidate was built from evidence of a held-out task."""


@dataclass(frozen=True)
class Provenance:
    """What a candidate prompt was built from.

    Attributes:
        built_from: Kinds of evidence (``"baseline"``, ``"guidance"``, ``"examples"``…).
        task_ids: Every task whose verdicts, rationales, notes, adjudications,
            clarification answers or examples reached the candidate.
        optimizer_call: The optimizer prompt's version and model, when one wrote it.
    """

    built_from: tuple[str, ...]
    task_ids: frozenset[str] = frozenset()
    optimizer_call: Mapping[str, Any] | None = None

    def merged(self, other: Provenance) -> Provenance:
        """The provenance of a combination of two candidates."""
        return Provenance(
            tuple(dict.fromkeys((*self.built_from, *other.built_from))),
            self.task_ids | other.task_ids,
            self.optimizer_call or other.optimizer_call,
        )

    def as_json(self) -> dict[str, Any]:
        """Plain JSON of the provenance."""
        return {
            "built_from": list(self.built_from),
            "task_ids": sorted(self.task_ids),
            "optimizer_call": None if self.optimizer_call is None else dict(self.optimizer_call),
        }


def assert_no_leakage(
    task_ids: Iterable[Any], split: TaskSplit, *, what: str = "candidate"
) -> None:
    """Raise :class:`HeldOutLeakage` when any of ``task_ids`` is a held-out task.

    Called on every piece of evidence handed to the optimizer and on every candidate's
    provenance before it is evaluated; the message names the leaked task ids.
    """
    held = set(split.held_out)
    leaked = sorted({str(t) for t in task_ids} & held)
    if leaked:
        shown = ", ".join(leaked[:5]) + (" …" if len(leaked) > 5 else "")
        raise HeldOutLeakage(
            f"{what}: evidence from {len(leaked)} held-out task(s) ({shown}); "
            "nothing from a held-out task may reach a candidate"
        )


# ----------------------------------------------------------------------------- figures


def binary_figures(sums: FloatArray) -> dict[str, FloatArray]:
    """Kappa and balanced accuracy from sums ``[..., (n, Σj, Σc, Σjc)]`` (NaN if undefined).

    Vectorised over any leading axes (e.g. bootstrap resamples), see the module docstring.
    """
    n, sj, sc, sjc = sums[..., 0], sums[..., 1], sums[..., 2], sums[..., 3]
    with np.errstate(divide="ignore", invalid="ignore"):
        n11 = sjc
        n00 = n - sj - sc + sjc
        po = (n11 + n00) / n
        pe = (sj * sc + (n - sj) * (n - sc)) / (n * n)
        den = 1.0 - pe
        kappa = np.where(np.abs(den) > 1e-12, (po - pe) / np.where(den == 0, 1.0, den), np.nan)
        tpr = n11 / sc
        tnr = n00 / (n - sc)
        ba = (tpr + tnr) / 2.0
    kappa = np.where(n > 0, kappa, np.nan)
    return {"kappa": kappa.astype(np.float64), "balanced_accuracy": ba.astype(np.float64)}


def holm_levels(m: int, ci: float) -> list[float]:
    """Confidence levels of Holm's steps: ``1 − (1 − ci)/(m − r + 1)`` for ``r = 1 … m``."""
    return [1.0 - (1.0 - ci) / (m - r + 1) for r in range(1, m + 1)]


@dataclass(frozen=True)
class HeldOutUnits:
    """The held-out units: one row per (response, criterion) with a decided consensus.

    Attributes:
        task: Cluster code of each unit (index into ``task_ids``).
        task_ids: The held-out task ids.
        response: Response code of each unit (index into ``response_ids``).
        response_ids: Response ids.
        model: Model of each response (aligned with ``response_ids``).
        points: The criterion's points for each unit.
        consensus: The expert consensus (True = met).
    """

    task: IntArray
    task_ids: tuple[str, ...]
    response: IntArray
    response_ids: tuple[str, ...]
    model: tuple[str, ...]
    points: FloatArray
    consensus: npt.NDArray[np.bool_]

    @property
    def n(self) -> int:
        """Number of units."""
        return len(self.consensus)

    @classmethod
    def from_frame(cls, df: pd.DataFrame) -> HeldOutUnits:
        """From columns ``task_id``, ``response_id``, ``model``, ``points``, ``met``."""
        t_codes, t_ids = pd.factorize(df["task_id"].astype(str), sort=True)
        r_codes, r_ids = pd.factorize(df["response_id"].astype(str), sort=True)
        first = df.drop_duplicates("response_id")
        model_by = dict(
            zip(first["response_id"].astype(str), first["model"].astype(str), strict=True)
        )
        model_of = [model_by[str(r)] for r in r_ids]
        return cls(
            task=np.asarray(t_codes, dtype=np.intp),
            task_ids=tuple(str(t) for t in t_ids),
            response=np.asarray(r_codes, dtype=np.intp),
            response_ids=tuple(str(r) for r in r_ids),
            model=tuple(model_of),
            points=df["points"].to_numpy(dtype=np.float64),
            consensus=df["met"].to_numpy(dtype=bool),
        )


def consensus_units(frames: Frames, task_ids: Iterable[Any] | None = None) -> pd.DataFrame:
    """The units with a decided expert consensus, optionally of some tasks only.

    Returns:
        ``task_id``, ``response_id``, ``criterion_id``, ``model``, ``points``, ``met``
        (the consensus), ``workflow``, ``domain``; sorted by task, response, criterion.
    """
    cons = consensus_verdicts(frames)
    resp = frames.responses.loc[:, ["response_id", "task_id", "model"]].drop_duplicates(
        "response_id"
    )
    crit = frames.criteria.loc[
        frames.criteria["kind"] != "auto", ["task_id", "criterion_id", "points"]
    ].drop_duplicates(["task_id", "criterion_id"], keep="last")
    out = cons.merge(resp, on="response_id").merge(crit, on=["task_id", "criterion_id"])
    tasks = frames.tasks.loc[:, ["task_id", "workflow", "domain"]].drop_duplicates("task_id")
    out = out.merge(tasks, on="task_id", how="left")
    if task_ids is not None:
        keep = {str(t) for t in task_ids}
        out = out.loc[out["task_id"].astype(str).isin(keep)]
    cols = [
        "task_id",
        "response_id",
        "criterion_id",
        "model",
        "points",
        "met",
        "workflow",
        "domain",
    ]
    return (
        out.loc[:, cols]
        .sort_values(["task_id", "response_id", "criterion_id"])
        .reset_index(drop=True)
    )


def verdicts_on(units_frame: pd.DataFrame, verdicts: pd.DataFrame) -> FloatArray:
    """A judge's verdicts aligned to the rows of ``units_frame`` (1.0, 0.0 or NaN).

    Both frames are keyed by ``(response_id, criterion_id)``; ``verdicts`` has ``met``.
    """
    keys = units_frame[["response_id", "criterion_id"]].astype(str)
    v = verdicts[["response_id", "criterion_id", "met"]].copy()
    v["response_id"] = v["response_id"].astype(str)
    v["criterion_id"] = v["criterion_id"].astype(str)
    v = v.drop_duplicates(["response_id", "criterion_id"], keep="last")
    merged = keys.merge(v, on=["response_id", "criterion_id"], how="left")
    met = merged["met"]
    out = np.full(len(merged), np.nan)
    ok = met.notna().to_numpy()
    out[ok] = met[ok].astype(bool).to_numpy(dtype=np.float64)
    return out


@dataclass(frozen=True)
class JudgeFigures:
    """One judge's figures on the held-out units.

    Attributes:
        n_units: Units with a verdict of this judge.
        kappa: Cohen's kappa against the consensus (None when undefined).
        balanced_accuracy: Balanced accuracy (None when undefined).
        models: ``{model: {"mean_score_error", "pass_rate_error", "n_responses"}}``.
        flips: Responses whose pass / fail differs from the consensus's.
    """

    n_units: int
    kappa: float | None
    balanced_accuracy: float | None
    models: Mapping[str, Mapping[str, float | int | None]]
    flips: int

    def as_json(self) -> dict[str, Any]:
        """Plain JSON."""
        return {
            "n_units": self.n_units,
            "kappa": self.kappa,
            "balanced_accuracy": self.balanced_accuracy,
            "models": {m: dict(v) for m, v in self.models.items()},
            "flips": self.flips,
        }


@dataclass(frozen=True)
class PairedFigure:
    """The paired difference candidate − baseline of one figure.

    Attributes:
        estimate: The difference on the held-out units (None when undefined).
        interval: The uncorrected interval at ``ci`` (``ci`` in the JSON).
        corrected: The Holm-corrected interval (``ci_corrected``, see the module docstring).
        corrected_level: The confidence of ``corrected``.
        holm_rank: The candidate's Holm rank (1 = smallest ``q``).
        q: Share of valid replicates with difference ≤ 0.
        p_by: Benjamini–Yekutieli adjusted ``q`` over the candidates.
        proven_better: Holm rejects "no gain" (the corrected lower bound is above 0).
    """

    estimate: float | None
    interval: BootResult
    corrected: BootResult
    corrected_level: float
    holm_rank: int
    q: float | None
    p_by: float | None
    proven_better: bool

    def as_json(self) -> dict[str, Any]:
        """``{"estimate", "ci", "ci_corrected", "corrected_level", "holm_rank", "q",
        "p_by", "proven_better", "note"}``."""
        return {
            "estimate": self.estimate,
            "ci": boot_json(self.interval)["ci"],
            "ci_corrected": boot_json(self.corrected)["ci"],
            "corrected_level": self.corrected_level,
            "holm_rank": self.holm_rank,
            "q": self.q,
            "p_by": self.p_by,
            "proven_better": self.proven_better,
            "note": self.interval.note,
        }


@dataclass(frozen=True)
class CandidateEvaluation:
    """A candidate's figures and its paired differences to the baseline."""

    name: str
    figures: JudgeFigures
    paired: Mapping[str, PairedFigure]

    @property
    def proven_better(self) -> bool:
        """Proven better: the corrected lower bound of the kappa difference is above 0."""
        return self.paired["kappa"].proven_better

    def as_json(self) -> dict[str, Any]:
        """``{kappa, balanced_accuracy, …figures, paired: {metric: {...}}, proven_better}``."""
        out = self.figures.as_json()
        out["paired"] = {k: v.as_json() for k, v in self.paired.items()}
        out["proven_better"] = self.proven_better
        return out


@dataclass(frozen=True)
class HeldOutEvaluation:
    """The proof on the held-out tasks: baseline, every candidate, the correction.

    Attributes:
        baseline: The baseline's figures.
        candidates: Every candidate evaluated on the held-out tasks (input order).
        n_evaluated: ``m``, the size of the multiplicity family.
        n_tasks: Held-out tasks with units.
        n_boot: Resamples.
        seed: Seed of the resampling weights.
        ci: Confidence level of ``ci``.
        method: Interval method.
    """

    baseline: JudgeFigures
    candidates: tuple[CandidateEvaluation, ...]
    n_evaluated: int
    n_tasks: int
    n_boot: int
    seed: int
    ci: float
    method: CiMethod

    def proven(self) -> list[CandidateEvaluation]:
        """The candidates proven better, best held-out kappa first."""
        best = [c for c in self.candidates if c.proven_better]
        return sorted(best, key=lambda c: -(c.paired["kappa"].estimate or 0.0))


def _cluster_sums(
    task: IntArray,
    n_tasks: int,
    judge: FloatArray,
    consensus: FloatArray,
    mask: npt.NDArray[np.bool_],
) -> FloatArray:
    """Per-task ``(n, Σj, Σc, Σjc)`` over the masked units: shape ``(n_tasks, 4)``."""
    j = np.where(mask, judge, 0.0)
    c = np.where(mask, consensus, 0.0)
    feats = (mask.astype(np.float64), j, c, j * c)
    return np.stack([np.bincount(task, weights=f, minlength=n_tasks) for f in feats], axis=1)


def _stacked_sums(
    task: IntArray,
    n_tasks: int,
    judge: FloatArray,
    consensus: FloatArray,
    mask: npt.NDArray[np.bool_],
) -> FloatArray:
    """:func:`_cluster_sums` of each row of ``judge`` / ``mask`` (shape ``(m, n)``): ``(m, T, 4)``."""
    m = judge.shape[0]
    idx = (task[None, :] + n_tasks * np.arange(m)[:, None]).ravel()
    j = np.where(mask, judge, 0.0)
    c = np.where(mask, consensus[None, :], 0.0)
    feats = (mask.astype(np.float64), j, c, j * c)
    cols = [np.bincount(idx, weights=f.ravel(), minlength=m * n_tasks) for f in feats]
    return np.asarray(np.stack(cols, axis=1).reshape(m, n_tasks, 4), dtype=np.float64)


def _response_figures(
    units: HeldOutUnits, judge: FloatArray, pass_threshold: float
) -> tuple[dict[str, dict[str, float | int | None]], int]:
    mask = ~np.isnan(judge)
    n_resp = len(units.response_ids)
    r = units.response[mask]
    pts = units.points[mask]
    pos = np.bincount(r, weights=np.clip(pts, 0.0, None), minlength=n_resp)
    j_num = np.bincount(r, weights=pts * judge[mask], minlength=n_resp)
    c_num = np.bincount(r, weights=pts * units.consensus[mask], minlength=n_resp)
    ok = pos > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        js = np.clip(j_num / pos, 0.0, 1.0)
        cs = np.clip(c_num / pos, 0.0, 1.0)
    jp = js >= pass_threshold - PASS_EPSILON
    cp = cs >= pass_threshold - PASS_EPSILON
    flips = int(np.sum(ok & (jp != cp)))
    models: dict[str, dict[str, float | int | None]] = {}
    model_arr = np.asarray(units.model, dtype=object)
    for m in sorted(set(units.model)):
        sel = ok & (model_arr == m)
        k = int(sel.sum())
        models[m] = {
            "n_responses": k,
            "mean_score_error": float(np.mean(js[sel] - cs[sel])) if k else None,
            "pass_rate_error": float(np.mean(jp[sel]) - np.mean(cp[sel])) if k else None,
        }
    return models, flips


def _finite(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def _judge_figures(units: HeldOutUnits, judge: FloatArray, pass_threshold: float) -> JudgeFigures:
    mask = ~np.isnan(judge)
    sums = _cluster_sums(
        units.task, len(units.task_ids), judge, units.consensus.astype(np.float64), mask
    ).sum(axis=0)
    f = binary_figures(sums)
    models, flips = _response_figures(units, judge, pass_threshold)
    return JudgeFigures(
        n_units=int(mask.sum()),
        kappa=_finite(float(f["kappa"])),
        balanced_accuracy=_finite(float(f["balanced_accuracy"])),
        models=models,
        flips=flips,
    )


def evaluate_held_out(
    units: HeldOutUnits,
    baseline: FloatArray,
    candidates: Mapping[str, FloatArray],
    *,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = 0,
    ci: float = 0.95,
    method: CiMethod = DEFAULT_CI_METHOD,
    pass_threshold: float = DEFAULT_PASS_THRESHOLD,
    weights: npt.NDArray[np.int64] | None = None,
    min_tasks: int = FEW_CLUSTERS,
) -> HeldOutEvaluation:
    """Evaluate the baseline and every candidate on the held-out units.

    Args:
        units: The held-out units with their consensus.
        baseline: The baseline's verdict on each unit (1.0 met, 0.0 not met, NaN none).
        candidates: Each candidate's verdicts, same shape; all of them form the
            multiplicity family (``m = len(candidates)``).
        n_boot: Resamples of the task-clustered bootstrap.
        seed: Seed of the resampling weights (one matrix shared by every judge).
        ci: Confidence level of the uncorrected interval.
        method: ``"expanded_percentile"`` (default) or ``"percentile"``.
        pass_threshold: The pass rule's threshold.
        weights: Resampling weights ``(n_boot, n_tasks)`` to use instead of drawing them
            (simulations share one matrix across benchmarks of the same size).
        min_tasks: Fewest held-out tasks for a proof (default
            :data:`~gradercal.stats.bootstrap.FEW_CLUSTERS`, 10): with fewer, intervals
            are reported (with the bootstrap's "unreliable" note) but nothing is proven.

    Raises:
        ValueError: Shapes disagree, fewer than two held-out tasks, or no candidate.
    """
    n_tasks = len(units.task_ids)
    _check_verdicts(units, baseline, candidates)
    w = (
        resampling_weights(n_tasks, n_boot, seed).astype(np.float64)
        if weights is None
        else np.asarray(weights, dtype=np.float64)
    )
    if w.shape != (n_boot, n_tasks):
        raise ValueError(f"weights of shape {w.shape}, expected {(n_boot, n_tasks)}")
    cons = units.consensus.astype(np.float64)
    names = list(candidates)
    m = len(names)
    cand = np.stack([np.asarray(candidates[k], dtype=np.float64) for k in names])  # (m, n)
    mask = ~np.isnan(baseline)[None, :] & ~np.isnan(cand)  # the pairs of each candidate
    # per-candidate, per-task sums of both judges over that candidate's pairs: (m, T, 4)
    sb = _stacked_sums(units.task, n_tasks, np.broadcast_to(baseline, cand.shape), cons, mask)
    sc = _stacked_sums(units.task, n_tasks, cand, cons, mask)
    point = binary_figures(np.stack([sb.sum(axis=1), sc.sum(axis=1)]))  # (2, m)
    # the same resamples for both judges: W @ sums, (2, m, B, 4)
    both = np.stack([sb, sc])  # (2, m, T, 4)
    flat = w @ both.transpose(2, 0, 1, 3).reshape(n_tasks, -1)  # one BLAS product, (B, 2·m·4)
    rep = binary_figures(flat.reshape(n_boot, 2, m, 4).transpose(1, 2, 0, 3))
    est: dict[str, list[float | None]] = {}
    reps: dict[str, list[FloatArray]] = {}
    for k in METRICS:
        est[k] = [_finite(float(point[k][1, i] - point[k][0, i])) for i in range(m)]
        diff = rep[k][1] - rep[k][0]
        reps[k] = [diff[i] for i in range(m)]
    paired: dict[str, list[PairedFigure]] = {k: [] for k in METRICS}
    for k in METRICS:
        paired[k] = _corrected(est[k], reps[k], n_boot, n_tasks, ci, method, min_tasks)
    base_fig = _judge_figures(units, baseline, pass_threshold)
    evals = tuple(
        CandidateEvaluation(
            name,
            _judge_figures(units, np.asarray(candidates[name], dtype=np.float64), pass_threshold),
            {k: paired[k][i] for k in METRICS},
        )
        for i, name in enumerate(names)
    )
    return HeldOutEvaluation(base_fig, evals, m, n_tasks, n_boot, seed, ci, method)


def _check_verdicts(
    units: HeldOutUnits, baseline: FloatArray, candidates: Mapping[str, FloatArray]
) -> None:
    """Raise the :class:`ValueError` of :func:`evaluate_held_out` for fewer than two
    held-out tasks, verdicts of the wrong shape, or no candidate."""
    if len(units.task_ids) < 2:
        raise ValueError("the held-out evaluation needs at least two held-out tasks")
    for name, v in {"baseline": baseline, **candidates}.items():
        if np.shape(v) != (units.n,):
            raise ValueError(f"{name}: {np.shape(v)} verdicts for {units.n} units")
    if not candidates:
        raise ValueError("no candidate to evaluate")


def _sorted_quantiles(
    sorted_values: FloatArray, levels: tuple[float, float]
) -> tuple[float, float]:
    """``numpy.quantile(values, levels)`` (linear interpolation) of already sorted values."""
    n = len(sorted_values)
    out = []
    for p in levels:
        pos = p * (n - 1)
        lo = math.floor(pos)
        hi = min(lo + 1, n - 1)
        out.append(float(sorted_values[lo] + (pos - lo) * (sorted_values[hi] - sorted_values[lo])))
    return out[0], out[1]


def _corrected(
    estimates: Sequence[float | None],
    replicates: Sequence[FloatArray],
    n_boot: int,
    n_tasks: int,
    ci: float,
    method: CiMethod,
    min_tasks: int,
) -> list[PairedFigure]:
    """Uncorrected and Holm-corrected intervals of one figure's differences."""
    m = len(estimates)
    undefined = "the difference is undefined on the held-out units"
    q = np.ones(m)
    for i, (e, r) in enumerate(zip(estimates, replicates, strict=True)):
        valid = r[np.isfinite(r)]
        if e is not None and len(valid):
            q[i] = float(np.mean(valid <= 0.0))
    order = np.argsort(q, kind="stable")
    levels = holm_levels(m, ci)
    bonferroni = levels[0]
    _, p_by = benjamini_yekutieli(list(q))
    out: list[PairedFigure | None] = [None] * m
    still = True

    def interval(i: int, level: float) -> BootResult:
        e, r = estimates[i], replicates[i]
        known = None
        ordered = sorted_reps[i]
        if ordered is not None and e is not None and n_tasks >= 2:
            known = _sorted_quantiles(ordered, interval_levels(n_tasks, level, method))
        return percentile_interval(
            e,
            r,
            n_boot=n_boot,
            n_clusters=n_tasks,
            ci=level,
            method=method,
            note=undefined,
            quantiles=known,
        )

    # replicates without undefined values are sorted once; their quantiles at any level
    # are then read off (numpy's linear interpolation), as percentile_interval would
    sorted_reps = [
        np.sort(r) if len(r) and bool(np.isfinite(r).all()) else None for r in replicates
    ]
    for rank, i in enumerate(order, start=1):
        e = estimates[i]
        level = levels[rank - 1] if still else bonferroni
        corrected = interval(int(i), level)
        proven = (
            still
            and e is not None
            and corrected.ci_low is not None
            and corrected.ci_low > 0.0
            and n_tasks >= min_tasks
        )
        if still and not proven:
            still = False
            if level != bonferroni:
                level = bonferroni
                corrected = interval(int(i), level)
        out[i] = PairedFigure(
            estimate=e,
            interval=interval(int(i), ci),
            corrected=corrected,
            corrected_level=level,
            holm_rank=rank,
            q=None if e is None else float(q[i]),
            p_by=None if e is None else float(p_by[i]),
            proven_better=bool(proven),
        )
    return [o for o in out if o is not None]


# ----------------------------------------------------------------------------- evidence


def development_evidence(
    frames: Frames,
    judge: str,
    split: TaskSplit,
    *,
    tasks: Iterable[Any] | None = None,
    clarifications: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """The evidence an optimizer may see: the judge's disagreements on development tasks.

    One row per unit of ``tasks`` (default: the split's development tasks) with a decided
    consensus where ``judge``'s verdict differs from it. The tasks are checked with
    :func:`assert_no_leakage` *before* anything is read, so a held-out task raises
    :class:`HeldOutLeakage`.

    ``clarifications`` (``task_id``, ``criterion_id``, ``answer``: the coordinators'
    answers to clarification questions, the caller keeps the development tasks' only) are
    checked the same way — one from a held-out task raises :class:`HeldOutLeakage`, it is
    never silently dropped — and each answer joins the evidence rows of its criterion
    (``clarifications`` column; a criterion the judge never got wrong has no row, so its
    answer is not used).

    Returns:
        ``task_id``, ``response_id``, ``criterion_id``, ``criterion_key``
        (``task/criterion``), ``criterion_text``, ``points``, ``judge_met``,
        ``consensus_met``, ``rationales`` (the humans' rationales, list), ``notes`` (the
        adjudication note, list), ``clarifications`` (answers on the criterion, list);
        sorted by task, response, criterion.
    """
    source = list(split.development if tasks is None else tasks)
    assert_no_leakage(source, split, what="optimizer evidence")
    answers: dict[tuple[str, str], list[str]] = {}
    if clarifications is not None and len(clarifications):
        assert_no_leakage(clarifications["task_id"], split, what="clarification evidence")
        for t, c, a in zip(
            clarifications["task_id"],
            clarifications["criterion_id"],
            clarifications["answer"],
            strict=True,
        ):
            if a is not None and str(a).strip():
                answers.setdefault((str(t), str(c)), []).append(str(a).strip())
    dev = development_units(frames, judge, source)
    wrong = dev.loc[dev["judge_met"] != dev["consensus_met"]].reset_index(drop=True)
    wrong["clarifications"] = [
        list(answers.get((str(t), str(c)), []))
        for t, c in zip(wrong["task_id"], wrong["criterion_id"], strict=True)
    ]
    return wrong


def development_units(frames: Frames, judge: str, tasks: Iterable[Any]) -> pd.DataFrame:
    """Every unit of ``tasks`` with a consensus and a verdict of ``judge``, with its evidence.

    Columns as :func:`development_evidence` (agreements included). The caller checks
    the tasks against the split (:func:`development_evidence` does).
    """
    units = consensus_units(frames, tasks)
    j = frames.judgments
    jv = j.loc[j["grader"] == judge, ["response_id", "criterion_id", "met"]].dropna(subset=["met"])
    jv = jv.drop_duplicates(["response_id", "criterion_id"], keep="last").rename(
        columns={"met": "judge_met"}
    )
    out = units.rename(columns={"met": "consensus_met"}).merge(
        jv, on=["response_id", "criterion_id"], how="inner"
    )
    out["judge_met"] = out["judge_met"].astype(bool)
    humans = j.loc[(j["grader_kind"] == "human") & j["rationale"].notna()]
    why = humans.groupby(["response_id", "criterion_id"])["rationale"].agg(
        lambda s: [str(x) for x in s if str(x).strip()]
    )
    adj = frames.adjudications
    notes = (
        adj.loc[adj["note"].notna()]
        .groupby(["response_id", "criterion_id"])["note"]
        .agg(lambda s: [str(x) for x in s if str(x).strip()])
    )
    keys = list(zip(out["response_id"], out["criterion_id"], strict=True))
    out["rationales"] = [list(why.get(k, [])) for k in keys]
    out["notes"] = [list(notes.get(k, [])) for k in keys]
    crit = frames.criteria.drop_duplicates(["task_id", "criterion_id"], keep="last")
    text = dict(
        zip(zip(crit["task_id"], crit["criterion_id"], strict=True), crit["text"], strict=True)
    )
    out["criterion_text"] = [
        str(text.get((t, c), "")) for t, c in zip(out["task_id"], out["criterion_id"], strict=True)
    ]
    out["criterion_key"] = [
        f"{t}/{c}" for t, c in zip(out["task_id"], out["criterion_id"], strict=True)
    ]
    cols = [
        "task_id",
        "response_id",
        "criterion_id",
        "criterion_key",
        "criterion_text",
        "points",
        "judge_met",
        "consensus_met",
        "rationales",
        "notes",
    ]
    return out.loc[:, cols].reset_index(drop=True)


def contrastive_pairs(dev_units: pd.DataFrame, max_pairs: int = 3) -> list[tuple[int, int]]:
    """Row pairs (met, not met) of one criterion where the judge erred, from ``dev_units``.

    For each criterion (``criterion_key``) with at least one judge error and both a
    consensus-met and a consensus-not-met unit, the first erring unit and the first unit
    of the other consensus class (row order); criteria with the most errors first, then by
    key; at most ``max_pairs`` pairs. ``dev_units`` comes from :func:`development_units`.
    """
    d = dev_units.reset_index(drop=True)
    err = d["judge_met"] != d["consensus_met"]
    grouped = err.groupby(d["criterion_key"]).sum()
    counts = {str(k): int(n) for k, n in grouped.items()}
    ranked = sorted((k for k, n in counts.items() if n > 0), key=lambda k: (-counts[k], k))
    out: list[tuple[int, int]] = []
    for key in ranked:
        rows = d.index[d["criterion_key"] == key]
        wrong = [int(i) for i in rows if bool(err[i])]
        first = wrong[0]
        other = [
            int(i)
            for i in rows
            if bool(d.at[i, "consensus_met"]) != bool(d.at[first, "consensus_met"])
        ]
        if not other:
            continue
        pair = (first, other[0]) if bool(d.at[first, "consensus_met"]) else (other[0], first)
        out.append(pair)
        if len(out) >= max_pairs:
            break
    return out
