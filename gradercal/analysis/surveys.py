"""Task review surveys: how reviewers rate the tasks themselves.

Reviewers answer statements about each task (e.g. "The task reflects real research
work") on a 5-point agreement scale: 1 strongly disagree, 2 disagree, 3 neither, 4
agree, 5 strongly agree. Per dimension (statement):

* ``share_strongly_agree`` = answers of 5 / answers;
* ``share_agree_or_strongly_agree`` = answers of 4 or 5 / answers;
* ``mean`` answer and the count of each answer 1–5;
* ``krippendorff_alpha`` — Krippendorff's alpha at the **ordinal** level across
  reviewers, the tasks being the units (tasks reviewed once are not pairable and do not
  enter it; see :func:`gradercal.stats.krippendorff_alpha`); null with the reason when
  undefined (e.g. one reviewer, or every answer identical).

With ``n_boot > 0`` every figure gets a bootstrap interval from resampling **tasks**
(the answers of one task are correlated): percentile intervals as in
:mod:`gradercal.stats.bootstrap`, the shares from per-task counts, alpha from
:func:`~gradercal.stats.bootstrap.clustered_bootstrap` with the same seed.

This module imports pandas, numpy and gradercal's core only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from gradercal.model import LIKERT, REVIEW_DIMENSIONS, ReviewDimension
from gradercal.stats.bootstrap import clustered_bootstrap, resampling_weights
from gradercal.stats.coefficients import krippendorff_alpha
from gradercal.stats.intervals import boot_json, percentile_interval

__all__ = [
    "LIKERT",
    "LIKERT_SCALE",
    "REVIEW_DIMENSIONS",
    "SURVEY_COLUMNS",
    "ReviewDimension",
    "survey_summary",
]


#: The answers of the 5-point scale.
LIKERT_SCALE: tuple[int, ...] = (1, 2, 3, 4, 5)
#: Columns of the input frame.
SURVEY_COLUMNS: tuple[str, ...] = ("task_id", "reviewer", "dimension", "answer")


def _check(reviews: pd.DataFrame) -> pd.DataFrame:
    missing = [c for c in SURVEY_COLUMNS if c not in reviews.columns]
    if missing:
        raise ValueError(f"reviews lack columns: {', '.join(missing)}")
    df = reviews.loc[reviews["answer"].notna(), list(SURVEY_COLUMNS)].copy()
    raw = df["answer"].to_numpy(object)
    bad = [
        a
        for a in raw
        if isinstance(a, bool) or not float(a).is_integer() or int(a) not in LIKERT_SCALE
    ]
    if bad:
        raise ValueError(f"answers must be integers 1–5; found {bad[0]!r}")
    df["answer"] = df["answer"].astype(np.int64)
    dup = df.duplicated(["task_id", "reviewer", "dimension"])
    if dup.any():
        row = df.loc[dup].iloc[0]
        raise ValueError(
            f"reviewer {row['reviewer']!r} answered {row['dimension']!r} of task "
            f"{row['task_id']!r} more than once"
        )
    return df


def _shares(s: np.ndarray[Any, Any]) -> dict[str, np.ndarray[Any, Any]]:
    n = s[..., 0]
    safe = np.where(n > 0, n, 1.0)
    return {
        "share_strongly_agree": np.where(n > 0, s[..., 5] / safe, np.nan),
        "share_agree_or_strongly_agree": np.where(n > 0, (s[..., 4] + s[..., 5]) / safe, np.nan),
        "mean": np.where(n > 0, s[..., 6] / safe, np.nan),
    }


def survey_summary(
    reviews: pd.DataFrame,
    dimensions: Sequence[str] | None = None,
    *,
    n_boot: int = 0,
    seed: int = 0,
    ci: float = 0.95,
) -> dict[str, Any]:
    """Summarise task review surveys per dimension.

    Args:
        reviews: One row per answer: ``task_id``, ``reviewer``, ``dimension``,
            ``answer`` (integer 1–5; missing answers are skipped).
        dimensions: The dimensions to report, in order (default: as they first occur).
            A listed dimension without answers is reported with null figures.
        n_boot: Task bootstrap resamples (0: no intervals).
        seed: Bootstrap seed.
        ci: Confidence level.

    Returns:
        ``{"n_tasks", "n_reviewers", "n_answers", "bootstrap", "dimensions": [{"dimension",
        "n_answers", "n_tasks", "n_reviewers", "counts": {"1": …, …, "5": …}, "mean",
        "share_strongly_agree", "share_agree_or_strongly_agree",
        "krippendorff_alpha"}]}`` — figures as ``{"value", "ci", "note"}``.

    Raises:
        ValueError: Missing columns, answers outside 1–5, or a duplicate answer.
    """
    df = _check(reviews)
    dims = list(dimensions) if dimensions is not None else list(pd.unique(df["dimension"]))
    out_dims = [_dimension_summary(df, dim, n_boot=n_boot, seed=seed, ci=ci) for dim in dims]
    return {
        "n_tasks": int(df["task_id"].nunique()),
        "n_reviewers": int(df["reviewer"].nunique()),
        "n_answers": len(df),
        "scale": {
            "1": "strongly disagree",
            "2": "disagree",
            "3": "neither",
            "4": "agree",
            "5": "strongly agree",
        },
        "bootstrap": (
            {"n_boot": n_boot, "seed": seed, "ci": ci, "cluster": "task"} if n_boot > 0 else None
        ),
        "dimensions": out_dims,
    }


def _dimension_summary(
    df: pd.DataFrame, dim: str, *, n_boot: int, seed: int, ci: float
) -> dict[str, Any]:
    """One dimension's entry of :func:`survey_summary` (answers already checked)."""
    d = df.loc[df["dimension"] == dim]
    codes, tasks = pd.factorize(d["task_id"], sort=False)
    n_tasks = len(tasks)
    counts = np.zeros((n_tasks, 7))
    a = d["answer"].to_numpy(np.int64)
    tc = np.asarray(codes, dtype=np.intp)
    np.add.at(counts[:, 0], tc, 1.0)
    for k in LIKERT_SCALE:
        np.add.at(counts[:, k], tc, (a == k).astype(np.float64))
    np.add.at(counts[:, 6], tc, a.astype(np.float64))
    point = _shares(counts.sum(axis=0))
    reps: dict[str, Any] = {}
    if n_boot > 0 and n_tasks >= 2:
        w = resampling_weights(n_tasks, n_boot, seed).astype(np.float64)
        reps = _shares(w @ counts)
    row: dict[str, Any] = {
        "dimension": dim,
        "n_answers": len(d),
        "n_tasks": n_tasks,
        "n_reviewers": int(d["reviewer"].nunique()),
        "counts": {str(k): int((a == k).sum()) for k in LIKERT_SCALE},
    }
    for name in ("mean", "share_strongly_agree", "share_agree_or_strongly_agree"):
        value = float(point[name])
        row[name] = boot_json(
            percentile_interval(
                None if np.isnan(value) else value,
                reps.get(name, np.zeros(0)),
                n_boot=n_boot if reps else 0,
                n_clusters=n_tasks,
                ci=ci,
                note="no answers",
            )
        )
    row["krippendorff_alpha"] = _ordinal_alpha(d, a, n_boot=n_boot, seed=seed, ci=ci)
    return row


def _ordinal_alpha(
    d: pd.DataFrame, a: np.ndarray[Any, np.dtype[np.int64]], *, n_boot: int, seed: int, ci: float
) -> dict[str, Any]:
    """Krippendorff's ordinal alpha of one dimension's answers ``a`` (rows of ``d``), tasks
    as units, with a task-bootstrap interval when ``n_boot`` > 0."""
    ratings = pd.DataFrame(
        {
            "unit": d["task_id"].to_numpy(object),
            "rater": d["reviewer"].to_numpy(object),
            "value": a.astype(np.float64),
        }
    )
    if n_boot > 0 and len(ratings):
        res = clustered_bootstrap(
            ratings,
            None,
            ["krippendorff_alpha"],
            n_boot=n_boot,
            ci=ci,
            seed=seed,
            level="ordinal",
            categories=list(LIKERT_SCALE),
        )["krippendorff_alpha"]
        return boot_json(res)
    if not len(ratings):
        return {"value": None, "ci": None, "note": "no answers"}
    stat = krippendorff_alpha(ratings, level="ordinal", categories=list(LIKERT_SCALE))
    return {"value": stat.value, "ci": None, "note": stat.note}
