"""Agreement among the human graders: on a set of units, pairwise, leave-one-out.

See :mod:`gradercal.analysis.agreement` for the definitions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from gradercal.analysis.agreement.compare import (
    Comparison,
    compare,
    compare_table,
    describe_reference,
    paired_units,
)
from gradercal.analysis.context import AnalysisContext
from gradercal.analysis.verdicts import (
    grader_rows,
    human_graders,
    pair,
    unit_positions,
    verdicts,
)
from gradercal.frames import Frames
from gradercal.stats.bootstrap import BootResult, clustered_bootstrap
from gradercal.stats.catalogue import FIGURES, Options, view
from gradercal.stats.coefficients.ratings import rating_table
from gradercal.stats.intervals import (
    boot_json,
)

#: The category set of binary verdicts (not met, met).
MET_CATEGORIES: tuple[float, float] = (0.0, 1.0)
#: Human–human statistics reported for every set of units (the catalogue's view ``"human"``).
HUMAN_STATISTICS: tuple[str, ...] = view("human")

# ---------------------------------------------------------------------------------------
# Human–human
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HumanAgreement:
    """Agreement among the human graders on a set of units.

    Attributes:
        raters: The human graders with at least one verdict here.
        n_units: Units with at least one human verdict.
        n_units_paired: Units with two or more human verdicts (those agreement uses).
        n_ratings: Human verdicts.
        n_tasks: Tasks (the bootstrap's clusters).
        statistics: ``{name: BootResult}`` for :data:`HUMAN_STATISTICS`.
    """

    raters: list[str]
    n_units: int
    n_units_paired: int
    n_ratings: int
    n_tasks: int
    statistics: dict[str, BootResult]

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        return {
            "raters": list(self.raters),
            "n_units": self.n_units,
            "n_units_paired": self.n_units_paired,
            "n_ratings": self.n_ratings,
            "n_tasks": self.n_tasks,
            **{k: boot_json(v) for k, v in self.statistics.items()},
        }


def _unit_codes(v: pd.DataFrame) -> npt.NDArray[np.int64]:
    """Codes of the (response, criterion) pairs of ``v`` in order of first appearance.

    The same codes as factorizing the pairs as tuples, without building the tuples.
    """
    rc, _ = pd.factorize(v["response_id"].to_numpy(object), sort=False)
    cc, cu = pd.factorize(v["criterion_id"].to_numpy(object), sort=False)
    pair = np.asarray(rc, np.int64) * max(len(cu), 1) + np.asarray(cc, np.int64)
    codes, _ = pd.factorize(pair, sort=False)
    return np.asarray(codes, np.int64)


#: Integer codes of the unit, grader and task of each verdict row, added once to a table
#: that is split into many groups (:func:`with_codes`) so each group's rating table is
#: coded from integers instead of strings.
CODE_COLUMNS = ("_unit_code", "_grader_code", "_task_code")


def with_codes(
    v: pd.DataFrame, full: pd.DataFrame, context: AnalysisContext | None
) -> pd.DataFrame:
    """``v`` (columns of ``full``) with :data:`CODE_COLUMNS` of the rows of ``full``.

    Any integer code that is one-to-one with the unit does as the unit code (each
    group's units are re-coded in order of first appearance): the unit position when
    the context knows it. The codes of ``full`` are kept in the context for the next grouping.
    """
    hit = None if context is None else context.codes
    if hit is None or hit[0] is not full:
        pos = unit_positions(context, full)
        grader, _ = pd.factorize(full["grader"].to_numpy(object), sort=False)
        task, _ = pd.factorize(full["task_id"].to_numpy(object), sort=False)
        codes = {
            "_unit_code": _unit_codes(full) if pos is None else pos[0].astype(np.int64),
            "_grader_code": np.asarray(grader, np.int64),
            "_task_code": np.asarray(task, np.int64),
        }
        hit = (full, codes)
        if context is not None:
            context.codes = hit
    return v.assign(**hit[1])


def unit_ratings(v: pd.DataFrame) -> pd.DataFrame:
    """Long ratings (unit, rater, value, task) of the verdict rows ``v``.

    When ``v`` carries :data:`CODE_COLUMNS` (a group of a coded table), raters and tasks
    are integer codes and units are the group's own codes in order of first appearance —
    the same codes, in the same order, as from the strings (every statistic here is
    label-free), only faster.
    """
    if all(c in v.columns for c in CODE_COLUMNS):
        units, _ = pd.factorize(v["_unit_code"].to_numpy(np.int64), sort=False)
        return pd.DataFrame(
            {
                "unit": np.asarray(units, dtype=np.int64),
                "rater": v["_grader_code"].to_numpy(np.int64),
                "value": v["met"].to_numpy(dtype=np.float64),
                "task": v["_task_code"].to_numpy(np.int64),
            }
        )
    codes = _unit_codes(v)
    return pd.DataFrame(
        {
            "unit": np.asarray(codes, dtype=np.int64),
            "rater": pd.Series(v["grader"].to_numpy(dtype=object), dtype=object),
            "value": v["met"].to_numpy(dtype=np.float64),
            "task": pd.Series(v["task_id"].to_numpy(dtype=object), dtype=object),
        }
    )


def human_stats(hv: pd.DataFrame, n_boot: int, seed: int, ci: float) -> HumanAgreement:
    ratings = unit_ratings(hv)
    per_unit = np.bincount(ratings["unit"].to_numpy(np.int64)) if len(ratings) else np.zeros(0)
    n_tasks = int(ratings["task"].nunique())
    cats = list(MET_CATEGORIES)
    stats: dict[str, BootResult]
    if n_boot > 0 and len(ratings):
        stats = clustered_bootstrap(
            ratings,
            "task",
            HUMAN_STATISTICS,
            n_boot=n_boot,
            ci=ci,
            seed=seed,
            categories=cats,
        )
    else:
        table = rating_table(ratings, cats)
        stats = {}
        for name in HUMAN_STATISTICS:
            compute = FIGURES[name].compute
            assert compute is not None, name  # the view "human" holds computed statistics
            s = compute(table, Options(level="nominal"))
            stats[name] = BootResult(s.value, None, None, 0, n_tasks, 0, ci, "percentile", s.note)
    if "_grader_code" in hv.columns:  # one row per grader code, found by integers
        _, first = np.unique(hv["_grader_code"].to_numpy(np.int64), return_index=True)
        present = hv["grader"].to_numpy(object)[first]
    else:
        present = pd.unique(hv["grader"].to_numpy(object))
    return HumanAgreement(
        raters=sorted({str(r) for r in present}),
        n_units=len(per_unit),
        n_units_paired=int((per_unit >= 2).sum()),
        n_ratings=len(ratings),
        n_tasks=n_tasks,
        statistics=stats,
    )


def human_agreement(
    frames: Frames,
    humans: Sequence[str] | None = None,
    *,
    n_boot: int = 2000,
    seed: int = 0,
    ci: float = 0.95,
    context: AnalysisContext | None = None,
) -> HumanAgreement:
    """Agreement among the human graders over every judgment unit.

    Args:
        frames: The benchmark frames.
        humans: The graders to include (default: every human grader).
        n_boot: Task-clustered bootstrap resamples (0: no intervals).
        seed: Bootstrap seed.
        ci: Confidence level.
        context: An ``AnalysisContext`` shared by calls on the same frames to reuse verdict
            and consensus tables (e.g. within one report); None: compute afresh.
    """
    names = list(humans) if humans is not None else human_graders(frames)
    return human_stats(verdicts(frames, names, context=context), n_boot, seed, ci)


@dataclass(frozen=True)
class PairAgreement:
    """Two graders on the units both rated.

    ``percent_agreement`` is the share of those units with the same verdict and
    ``cohen_kappa`` Cohen's kappa on them (marginals from the shared units only, so it
    equals scikit-learn's ``cohen_kappa_score`` on the paired verdicts).
    """

    a: str
    b: str
    n_units: int
    n_tasks: int
    percent_agreement: BootResult
    cohen_kappa: BootResult

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        return {
            "a": self.a,
            "b": self.b,
            "n_units": self.n_units,
            "n_tasks": self.n_tasks,
            "percent_agreement": boot_json(self.percent_agreement),
            "cohen_kappa": boot_json(self.cohen_kappa),
        }


def pairwise_agreement(
    frames: Frames,
    graders: Sequence[str] | None = None,
    *,
    n_boot: int = 2000,
    seed: int = 0,
    ci: float = 0.95,
    context: AnalysisContext | None = None,
) -> list[PairAgreement]:
    """Percent agreement and Cohen's kappa of every pair of graders.

    Args:
        frames: The benchmark frames.
        graders: The graders (default: every human grader), in the order to pair them.
        n_boot: Task-clustered bootstrap resamples (0: no intervals).
        seed: Bootstrap seed.
        ci: Confidence level.
        context: An ``AnalysisContext`` shared by calls on the same frames to reuse verdict
            and consensus tables (e.g. within one report); None: compute afresh.

    Returns:
        One entry per unordered pair ``(a, b)``, ``a`` before ``b`` in ``graders``.
    """
    names = list(graders) if graders is not None else human_graders(frames)
    v = verdicts(frames, names, context=context)
    out: list[PairAgreement] = []
    met = v["met"].to_numpy(bool)
    task = v["task_id"].to_numpy(object)
    for i, a in enumerate(names):
        ra = grader_rows(context, v, a)
        for b in names[i + 1 :]:
            rb = grader_rows(context, v, b)
            ia, ib = pair(context, v, v, left_rows=ra, right_rows=rb)
            c = compare(
                met[ra[ia]],
                met[rb[ib]],
                list(task[ra[ia]]),
                candidate_name=a,
                reference_name=b,
                n_boot=n_boot,
                seed=seed,
                ci=ci,
            )
            out.append(
                PairAgreement(
                    a,
                    b,
                    c.n_units,
                    c.n_tasks,
                    c.metrics["percent_agreement"],
                    c.metrics["cohen_kappa"],
                )
            )
    return out


def leave_one_out(
    frames: Frames,
    humans: Sequence[str] | None = None,
    *,
    n_boot: int = 2000,
    seed: int = 0,
    ci: float = 0.95,
    context: AnalysisContext | None = None,
) -> list[Comparison]:
    """Each human against the consensus of the other humans.

    Args:
        frames: The benchmark frames.
        humans: The human graders (default: all); needs at least two.
        n_boot: Task-clustered bootstrap resamples (0: no intervals).
        seed: Bootstrap seed.
        ci: Confidence level.
        context: An ``AnalysisContext`` shared by calls on the same frames to reuse verdict
            and consensus tables (e.g. within one report); None: compute afresh.

    Returns:
        One :class:`Comparison` per human (empty with fewer than two humans), on the
        units the human rated whose leave-one-out consensus is decided.
    """
    names = list(humans) if humans is not None else human_graders(frames)
    if len(names) < 2:
        return []
    v = verdicts(frames, names, context=context)
    out = []
    for h in names:
        others = [g for g in names if g != h]
        paired, undecided = paired_units(frames, v, h, others, context=context)
        out.append(
            compare_table(
                paired, "candidate", h, describe_reference(others), n_boot, seed, ci, undecided
            )
        )
    return out
