"""Agreement within groups of units: by tag, workflow, domain or criterion.

See :mod:`gradercal.analysis.agreement` for the definitions.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

import numpy as np
import numpy.typing as npt
import pandas as pd

from gradercal.analysis.agreement.compare import (
    COMPARISON_METRICS,
    PE_TOLERANCE,
    UNDEFINED,
    Comparison,
    FloatArray,
    Progress,
    compare_table,
    comparison_metrics,
    describe_reference,
    paired_units,
)
from gradercal.analysis.agreement.humans import (
    HUMAN_STATISTICS,
    MET_CATEGORIES,
    HumanAgreement,
    human_stats,
    unit_ratings,
    with_codes,
)
from gradercal.analysis.context import AnalysisContext
from gradercal.analysis.verdicts import (
    consensus_verdicts,
    human_graders,
    verdicts,
)
from gradercal.frames import Frames
from gradercal.stats.bootstrap import BootResult
from gradercal.stats.catalogue import FIGURES, Options
from gradercal.stats.coefficients import RatingTable, Stat
from gradercal.stats.coefficients.ratings import rating_table

Grouping = Literal["criterion", "tag", "workflow", "domain"]
#: Values of ``by=`` for :func:`group_agreement` (the CLI's ``--by``).
GROUPINGS: tuple[Grouping, ...] = get_args(Grouping)

# ---------------------------------------------------------------------------------------
# Groups
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GroupAgreement:
    """Agreement within one group of units (a tag, workflow, domain or criterion).

    Attributes:
        group: The group's label (None: units whose task has no workflow/domain).
        task_id: For ``by="criterion"``, the criterion's task (criterion ids are unique
            only within a task); None otherwise.
        humans: Human–human agreement on the group's units.
        judge: The judge against the human consensus on them (None without a judge).
        points: For ``by="criterion"``, the criterion's points; None otherwise.
    """

    group: str | None
    task_id: str | None
    humans: HumanAgreement
    judge: Comparison | None
    points: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        out: dict[str, Any] = {"group": self.group}
        if self.task_id is not None:
            out["task_id"] = self.task_id
            out["points"] = self.points
        out["human_human"] = self.humans.to_dict()
        out["human_judge"] = None if self.judge is None else self.judge.to_dict()
        return out


def _group_labels(v: pd.DataFrame, by: Grouping) -> pd.DataFrame:
    """``v`` with a ``group`` column; rows repeated for several tags."""
    if by == "tag":
        # One row per (row, tag), rows in order and each row's tags in order (as
        # ``explode`` of the tag lists would give); untagged rows get the group None.
        # The tags are looked up once per distinct tag tuple, not once per row.
        try:
            codes, uniq = pd.factorize(v["tags"].to_numpy(object), sort=False)
        except TypeError:  # unhashable tag lists: one lookup per row
            g = v.assign(group=v["tags"].map(lambda t: list(t) if t else [None]))
            g = g.explode("group").reset_index(drop=True)
            col = g["group"].astype(object)
            return g.assign(group=col.where(col.notna(), None))
        per = [list(t) if t else [None] for t in uniq]
        counts = np.array([len(x) for x in per], dtype=np.intp)
        codes = np.asarray(codes, dtype=np.intp)
        if (codes < 0).any():  # a missing tags cell: untagged
            per.append([None])
            counts = np.append(counts, 1)
            codes = np.where(codes < 0, len(per) - 1, codes)
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.intp)
        flat = np.empty(int(counts.sum()), dtype=object)
        flat[:] = [x for tags in per for x in tags]
        n = counts[codes]
        rows = np.repeat(np.arange(len(v), dtype=np.intp), n)
        within = np.arange(len(rows), dtype=np.intp) - np.repeat(np.cumsum(n) - n, n)
        g = v.take(rows).reset_index(drop=True)
        col = pd.Series(flat[starts[codes][rows] + within], dtype=object)
        return g.assign(group=col.where(col.notna(), None))
    if by == "criterion":
        return v.assign(group=v["criterion_id"].astype(object))
    return v.assign(group=v[by].astype(object))


def _group_selector(g: pd.DataFrame) -> Callable[[str | None], pd.DataFrame]:
    """``label → rows of g whose group is label`` (None: missing group), in row order.

    The same rows as ``g.loc[g["group"] == label]`` (``g["group"].isna()`` for None),
    from one factorization of the group column instead of a comparison per label.
    """
    codes, uniq = pd.factorize(g["group"].to_numpy(object), sort=False)
    codes = np.asarray(codes, dtype=np.intp)
    position = {x: k for k, x in enumerate(uniq)}
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(-1, len(uniq) + 1))

    def select(label: str | None) -> pd.DataFrame:
        k = -1 if label is None else position.get(label)
        if k is None:
            return g.iloc[0:0]
        return g.iloc[order[bounds[k + 1] : bounds[k + 2]]]

    return select


def _stat(value: float, note: str | None, ci: float) -> BootResult:
    if math.isfinite(value):
        return BootResult(float(value), None, None, 0, 1, 0, ci, "percentile", None)
    return BootResult(None, None, None, 0, 1, 0, ci, "percentile", note or "undefined")


#: The experts' statistics :func:`_criterion_groups` computes from per-unit counts for all
#: criteria at once; any other statistic of the view ``"human"`` is computed directly
#: from each criterion's ratings (same formulas, slower).
_VECTORISED = ("percent_agreement", "fleiss_kappa", "gwet_ac1", "krippendorff_alpha")
_CONFUSION = ["tp", "fp", "fn", "tn"]
_KEYS = ["task_id", "criterion_id"]


def _criterion_sums(frames: Frames, v: pd.DataFrame) -> pd.DataFrame:
    """One row per judgment criterion (rubric order): ``task_id``, ``criterion_id``,
    ``points``, the per-unit sums of the human statistics and the sorted ``raters``."""
    crit = frames.criteria.loc[
        frames.criteria["kind"] != "auto", ["task_id", "criterion_id", "points"]
    ].drop_duplicates(_KEYS)
    # Per unit: r (ratings) and r1 (met).
    unit = (
        v.groupby([*_KEYS, "response_id"], sort=False)["met"].agg(r="size", r1="sum").reset_index()
    )
    r = unit["r"].to_numpy(np.float64)
    r1 = unit["r1"].to_numpy(np.float64)
    r0 = r - r1
    two = r >= 2
    safe = np.where(two, r * (r - 1), 1.0)
    unit = unit.assign(
        agree=np.where(two, (r1 * (r1 - 1) + r0 * (r0 - 1)) / safe, 0.0),
        two=two.astype(np.float64),
        share1=r1 / r,
        o01=np.where(two, r0 * r1 / np.where(two, r - 1, 1.0), 0.0),
        n0=np.where(two, r0, 0.0),
        n1=np.where(two, r1, 0.0),
    )
    g = unit.groupby(_KEYS, sort=False).agg(
        n_units=("r", "size"),
        n_ratings=("r", "sum"),
        n_two=("two", "sum"),
        agree=("agree", "sum"),
        pi1=("share1", "mean"),
        o01=("o01", "sum"),
        n0=("n0", "sum"),
        n1=("n1", "sum"),
    )
    raters = (
        v.drop_duplicates([*_KEYS, "grader"])
        .groupby(_KEYS, sort=False)["grader"]
        .agg(lambda x: sorted(str(a) for a in x))
        .rename("raters")
    )
    return crit.merge(g.reset_index(), on=_KEYS, how="left").merge(
        raters.reset_index(), on=_KEYS, how="left"
    )


def _with_confusion(table: pd.DataFrame, paired: pd.DataFrame) -> pd.DataFrame:
    """``table`` with the judge's confusion counts ``tp, fp, fn, tn`` per criterion."""
    cell = np.where(
        paired["candidate"].to_numpy(bool),
        np.where(paired["reference"].to_numpy(bool), 0, 1),
        np.where(paired["reference"].to_numpy(bool), 2, 3),
    )
    onehot = pd.DataFrame(np.eye(4)[cell], columns=_CONFUSION)
    onehot[_KEYS[0]] = paired["task_id"].to_numpy(object)
    onehot[_KEYS[1]] = paired["criterion_id"].to_numpy(object)
    counts = onehot.groupby(_KEYS, sort=False)[_CONFUSION].sum().reset_index()
    return table.merge(counts, on=_KEYS, how="left")


def _vectorised_humans(table: pd.DataFrame) -> tuple[dict[str, FloatArray], npt.NDArray[np.str_]]:
    """Per criterion, the :data:`_VECTORISED` statistics (NaN where undefined) and the
    note that leaves every statistic undefined (empty where none does)."""
    num = {
        c: table[c].to_numpy(np.float64, na_value=0.0)
        for c in ("n_units", "n_ratings", "n_two", "agree", "pi1", "o01", "n0", "n1")
    }
    n_raters = np.array([len(x) if isinstance(x, list) else 0 for x in table["raters"]])
    with np.errstate(divide="ignore", invalid="ignore"):
        pa = np.where(
            num["n_two"] > 0, num["agree"] / np.where(num["n_two"] > 0, num["n_two"], 1), np.nan
        )
        pi1 = num["pi1"]
        pe_f = pi1**2 + (1 - pi1) ** 2
        pe_g = 2 * pi1 * (1 - pi1)
        fk = np.where(1 - pe_f > PE_TOLERANCE, (pa - pe_f) / (1 - pe_f), np.nan)
        ac1 = np.where(1 - pe_g > PE_TOLERANCE, (pa - pe_g) / (1 - pe_g), np.nan)
        n0, n1 = num["n0"], num["n1"]
        ok = (n0 > 0) & (n1 > 0)
        alpha = np.where(ok, 1 - (n0 + n1 - 1) * num["o01"] / np.where(ok, n0 * n1, 1), np.nan)
    base = np.select(
        [num["n_ratings"] == 0, n_raters < 2, num["n_two"] == 0],
        ["no ratings", "only one rater", "no unit was rated by two or more raters"],
        default="",
    )
    values = {
        "percent_agreement": pa,
        "fleiss_kappa": fk,
        "gwet_ac1": ac1,
        "krippendorff_alpha": alpha,
    }
    return values, base


_FLAT = "no variation: chance agreement is 1 (a single category used)"
#: The note of each vectorised statistic where its own formula is undefined.
_NOTES = {"percent_agreement": None, "fleiss_kappa": _FLAT, "gwet_ac1": _FLAT}
_SAME = "no variation: all pairable values are identical"


def _direct_humans(v: pd.DataFrame, keys: Sequence[str]) -> dict[tuple[Any, Any], dict[str, Any]]:
    """The statistics ``keys`` of each criterion's ratings, computed directly."""
    out: dict[tuple[Any, Any], dict[str, Any]] = {}
    if not keys:
        return out
    for (task, cid), sub in v.groupby(_KEYS, sort=False):
        table = rating_table(unit_ratings(sub), list(MET_CATEGORIES))
        out[(task, cid)] = {k: _computed(k, table) for k in keys}
    return out


def _computed(key: str, table: RatingTable) -> Stat:
    compute = FIGURES[key].compute
    assert compute is not None, key  # the view "human" holds computed statistics
    return compute(table, Options(level="nominal"))


def _criterion_judge(
    judge: str, reference: str, c: FloatArray, jm: dict[str, FloatArray], i: int, ci: float
) -> Comparison:
    total = int(c.sum())
    return Comparison(
        candidate=judge,
        reference=reference,
        n_units=total,
        n_tasks=1 if total else 0,
        confusion={k: int(x) for k, x in zip(_CONFUSION, c, strict=True)},
        metrics={
            k: _stat(float(jm[k][i]), UNDEFINED[k] if total else "no unit rated by both", ci)
            for k in COMPARISON_METRICS
        },
    )


def _criterion_groups(
    frames: Frames,
    v: pd.DataFrame,
    paired: pd.DataFrame | None,
    judge: str | None,
    names: Sequence[str],
    ci: float,
) -> list[GroupAgreement]:
    """Per-criterion agreement, vectorised (no bootstrap: one task is one cluster).

    The human statistics are Gwet's percent agreement, Fleiss' kappa, Gwet's AC1 and
    nominal Krippendorff's alpha on the category set {0, 1}, with the formulas (and the
    notes) of :mod:`gradercal.stats.coefficients`, computed from per-unit counts; any
    other statistic of :data:`HUMAN_STATISTICS` directly from the criterion's ratings.
    """
    table = _criterion_sums(frames, v)
    if paired is not None and judge is not None:
        table = _with_confusion(table, paired)
        conf = table.loc[:, _CONFUSION].to_numpy(np.float64, na_value=0.0)
        jm = comparison_metrics(conf)
    values, base = _vectorised_humans(table)
    direct = _direct_humans(v, [k for k in HUMAN_STATISTICS if k not in _VECTORISED])
    reference = describe_reference(names)
    out: list[GroupAgreement] = []
    rows = table.loc[
        :, ["task_id", "criterion_id", "points", "raters", "n_units", "n_ratings", "n_two"]
    ]
    for i, (task, cid, points, who, n_units, n_ratings, n_two) in enumerate(
        rows.itertuples(index=False, name=None)
    ):
        stats: dict[str, BootResult] = {}
        for k in HUMAN_STATISTICS:
            if base[i]:
                stats[k] = _stat(math.nan, str(base[i]), ci)
            elif k in values:
                stats[k] = _stat(float(values[k][i]), _NOTES.get(k, _SAME), ci)
            else:
                s = direct[(task, cid)][k]
                stats[k] = _stat(math.nan if s.value is None else s.value, s.note, ci)
        n = 0 if pd.isna(n_units) else int(n_units)
        ha = HumanAgreement(
            list(who) if isinstance(who, list) else [],
            n,
            0 if pd.isna(n_two) else int(n_two),
            0 if pd.isna(n_ratings) else int(n_ratings),
            1 if n else 0,
            stats,
        )
        jc = None
        if paired is not None and judge is not None:
            jc = _criterion_judge(str(judge), reference, conf[i], jm, i, ci)
        out.append(GroupAgreement(str(cid), str(task), ha, jc, int(points)))
    return out


def _judge_pairs(
    frames: Frames,
    judge: str | None,
    names: Sequence[str],
    by: Grouping,
    label_col: str,
    context: AnalysisContext | None,
) -> pd.DataFrame | None:
    """The judge's units with a decided consensus of ``names``, with their group labels
    (only the columns the groups read, but for ``by="criterion"``); None without a judge."""
    if judge is None:
        return None
    jv = verdicts(frames, [judge], context=context)
    cons = consensus_verdicts(frames, names, context=context) if names else None
    paired, _ = paired_units(frames, jv, judge, names, cons=cons, context=context)
    if by != "criterion":
        pneed = ["task_id", "candidate", "reference", label_col]
        paired = paired.loc[:, list(dict.fromkeys(pneed))]
    return _group_labels(paired, by)


def group_agreement(
    frames: Frames,
    by: Grouping,
    humans: Sequence[str] | None = None,
    judge: str | None = None,
    *,
    n_boot: int = 2000,
    seed: int = 0,
    ci: float = 0.95,
    progress: Progress | None = None,
    context: AnalysisContext | None = None,
) -> list[GroupAgreement]:
    """Human–human agreement and judge–consensus comparison within each group.

    Groups: ``"tag"`` (a unit counts in every tag of its criterion; untagged units form
    the group None), ``"workflow"`` and ``"domain"`` (the task's; None when unset), or
    ``"criterion"`` (one group per criterion of a task; no bootstrap intervals: all its
    units lie in one task, i.e. one cluster).

    Args:
        frames: The benchmark frames.
        by: The grouping.
        humans: The human graders (default: all).
        judge: The judge to compare with the consensus, or None.
        n_boot: Task-clustered bootstrap resamples (0: no intervals).
        seed: Bootstrap seed.
        ci: Confidence level.
        context: An ``AnalysisContext`` shared by calls on the same frames to reuse verdict
            and consensus tables (e.g. within one report); None: compute afresh.
        progress: Optional ``(stage, done, total)`` callback.

    Returns:
        One entry per group, sorted by label (None last); criteria in rubric order.

    Raises:
        ValueError: Unknown ``by``.
    """
    if by not in GROUPINGS:
        raise ValueError(f"by must be one of {GROUPINGS}, not {by!r}")
    names = [
        h for h in (list(humans) if humans is not None else human_graders(frames)) if h != judge
    ]
    v = verdicts(frames, names, context=context)
    # Only the columns the group statistics read travel through the grouping.
    label_col = {"tag": "tags", "criterion": "criterion_id"}.get(by, by)
    need = ["response_id", "criterion_id", "task_id", "grader", "met", label_col]
    hv = _group_labels(
        v if by == "criterion" else with_codes(v.loc[:, list(dict.fromkeys(need))], v, context), by
    )
    paired = _judge_pairs(frames, judge, names, by, label_col, context)
    if by == "criterion":
        out_c = _criterion_groups(frames, v, paired, judge, names, ci)
        if progress:
            progress("by criterion", len(out_c), len(out_c))
        return out_c
    labels = set(hv["group"].tolist()) | (
        set(paired["group"].tolist()) if paired is not None else set()
    )
    groups: list[str | None] = [*sorted(str(x) for x in labels if x is not None)]
    if None in labels:
        groups.append(None)
    hsel_of = _group_selector(hv)
    psel_of = _group_selector(paired) if paired is not None else None
    out: list[GroupAgreement] = []
    for i, label in enumerate(groups):
        hsel = hsel_of(label)
        psel = psel_of(label) if psel_of is not None else None
        ha = human_stats(hsel, n_boot, seed, ci)
        jc = None
        if psel is not None and judge is not None:
            jc = compare_table(
                psel, "candidate", judge, describe_reference(names), n_boot, seed, ci
            )
        out.append(GroupAgreement(label, None, ha, jc, None))
        if progress:
            progress(f"by {by}", i + 1, len(groups))
    return out
