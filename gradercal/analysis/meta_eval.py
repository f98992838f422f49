"""HealthBench's meta-evaluation metric: pairwise balanced F1 against each physician.

HealthBench (Arora et al. 2025) measures a grader against physicians *pairwise*: every
verdict of the grader on an item (a criterion of a completion) is paired with each
physician's label of the same item — for a physician, with each *other* physician's
label — and the pairs of all items are pooled. With "met" the positive class and the
other label taken as the truth, the pooled pairs give ``TP, FP, FN, TN`` and

* ``precision_met = TP/(TP + FP)``, ``recall_met = TP/(TP + FN)``;
  ``precision_not_met = TN/(TN + FN)``, ``recall_not_met = TN/(TN + FP)``;
* ``f1_met`` the harmonic mean of ``precision_met`` and ``recall_met`` (0 when both are
  0), **undefined when either is** (no pair where the grader, or the other label, says
  met) — HealthBench's rule, stricter than ``2TP/(2TP + FP + FN)``; ``f1_not_met`` the
  same for "not met";
* ``balanced_f1 = (f1_met + f1_not_met)/2``, undefined when either is.

It is computed overall and per category (the criteria's ``category:<name>`` tag, which
the HealthBench meta-evaluation importer sets). HealthBench compares a model grader's
value with the physicians' own (each physician against the other physicians): the
report gives each physician's value and their mean. With a single label per item and
no other physician, a physician has no pairs. pandas and numpy only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from gradercal.analysis.verdicts import human_graders, judge_graders, verdicts
from gradercal.frames import Frames

__all__ = ["CATEGORY_PREFIX", "has_categories", "meta_eval_report", "pairwise_f1"]

#: Prefix of the criterion tag that names an item's category.
CATEGORY_PREFIX = "category:"


def _ratio(num: float, den: float) -> float | None:
    return None if den == 0 else num / den


def _f1(precision: float | None, recall: float | None) -> float | None:
    if precision is None or recall is None:
        return None
    if precision == 0 and recall == 0:
        return 0.0
    return 2 * precision * recall / (precision + recall)


def pairwise_f1(counts: Sequence[int]) -> dict[str, Any]:
    """The figures of the module docstring from pooled pair counts ``TP, FP, FN, TN``."""
    tp, fp, fn, tn = (int(x) for x in counts)
    p_met, r_met = _ratio(tp, tp + fp), _ratio(tp, tp + fn)
    p_not, r_not = _ratio(tn, tn + fn), _ratio(tn, tn + fp)
    f1_met, f1_not = _f1(p_met, r_met), _f1(p_not, r_not)
    balanced = None if f1_met is None or f1_not is None else (f1_met + f1_not) / 2
    note = None
    if balanced is None:
        note = "no pairs" if tp + fp + fn + tn == 0 else "one class absent from the pairs"
    return {
        "balanced_f1": balanced,
        "f1_met": f1_met,
        "f1_not_met": f1_not,
        "precision_met": p_met,
        "recall_met": r_met,
        "precision_not_met": p_not,
        "recall_not_met": r_not,
        "n_pairs": tp + fp + fn + tn,
        "counts": {"tp": tp, "fp": fp, "fn": fn, "tn": tn},
        "note": note,
    }


def _category(tags: Any) -> str | None:
    for t in tags or ():
        if str(t).startswith(CATEGORY_PREFIX):
            return str(t)[len(CATEGORY_PREFIX) :]
    return None


def has_categories(frames: Frames) -> bool:
    """Whether any criterion carries a ``category:`` tag (a meta-evaluation import)."""
    return bool(frames.criteria["tags"].map(lambda t: _category(t) is not None).any())


def _pair_counts(pairs: pd.DataFrame) -> list[int]:
    a = pairs["met_rater"].to_numpy(bool)
    b = pairs["met_other"].to_numpy(bool)
    return [int((a & b).sum()), int((a & ~b).sum()), int((~a & b).sum()), int((~a & ~b).sum())]


def _figures(pairs: pd.DataFrame) -> dict[str, Any]:
    out = pairwise_f1(_pair_counts(pairs))
    out["by_category"] = {
        str(cat): pairwise_f1(_pair_counts(group))
        for cat, group in pairs.groupby("category", sort=True, dropna=True)
    }
    return out


def meta_eval_report(
    frames: Frames,
    judges: Sequence[str] | None = None,
    humans: Sequence[str] | None = None,
) -> dict[str, Any]:
    """HealthBench's pairwise balanced F1 of every judge against the humans (physicians)
    and of every human against the other humans, overall and per category.

    Returns:
        ``{"definition", "judges": [{"grader", **figures}], "humans": [{"grader",
        **figures}], "humans_mean": {"balanced_f1", "by_category": {cat: mean}}}``;
        figures are those of :func:`pairwise_f1` plus ``by_category``. Means are over
        the humans with a defined value.
    """
    humans = list(humans) if humans is not None else human_graders(frames)
    judges = list(judges) if judges is not None else judge_graders(frames)
    v = verdicts(frames, [*humans, *judges])
    v = v.assign(category=v["tags"].map(_category)).loc[
        :, ["response_id", "criterion_id", "grader", "met", "category"]
    ]
    labels = v.loc[v["grader"].isin(humans), ["response_id", "criterion_id", "grader", "met"]]
    labels = labels.rename(columns={"grader": "other", "met": "met_other"})

    def against(rater: str) -> dict[str, Any]:
        own = v.loc[v["grader"] == rater].rename(columns={"met": "met_rater"})
        pairs = own.merge(labels, on=["response_id", "criterion_id"], how="inner")
        pairs = pairs.loc[pairs["other"] != rater]
        return {"grader": rater, **_figures(pairs)}

    human_rows = [against(h) for h in humans]
    values = [r["balanced_f1"] for r in human_rows if r["balanced_f1"] is not None]
    cats = sorted({c for r in human_rows for c in r["by_category"]})
    mean_by_cat: dict[str, float | None] = {}
    for c in cats:
        vals = [
            r["by_category"][c]["balanced_f1"]
            for r in human_rows
            if c in r["by_category"] and r["by_category"][c]["balanced_f1"] is not None
        ]
        mean_by_cat[c] = float(np.mean(vals)) if vals else None
    return {
        "definition": (
            "HealthBench meta-evaluation: each verdict paired with each physician's label of "
            "the same item (a physician's with the other physicians'), pairs pooled; "
            "balanced F1 = mean of the F1 of 'met' and of 'not met'"
        ),
        "judges": [against(j) for j in judges],
        "humans": human_rows,
        "humans_mean": {
            "balanced_f1": float(np.mean(values)) if values else None,
            "n_humans": len(values),
            "by_category": mean_by_cat,
        },
    }
