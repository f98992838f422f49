"""The dashboard's result: :class:`Dashboard`, the vocabulary of its tables, its JSON form.

:class:`Dashboard` holds plain pandas tables and dicts, one attribute per section; the
constants here name the labels and columns of those tables (:data:`EXPERTS`,
:data:`GROUP_BYS`, :data:`JUDGE_STATISTICS`, :data:`MODEL_SOURCES`,
:data:`AGREEMENT_COLUMNS`). :meth:`Dashboard.to_json` is the strict-JSON form that
``--json`` prints (``format: "gradercal.dashboard"``, ``format_version: 1``), and
:func:`pairwise_matrix` turns the long pairwise table into a square matrix.

This module imports pandas, numpy, :mod:`gradercal._util.jsonsafe` (the JSON rules) and
:mod:`gradercal.dashboard.tables` (which sections are fields) only.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from gradercal._util.jsonsafe import json_safe
from gradercal.dashboard.tables import section
from gradercal.stats.catalogue import view

__all__ = [
    "AGREEMENT_COLUMNS",
    "EXPERTS",
    "GROUP_BYS",
    "JUDGE_STATISTICS",
    "MODEL_SOURCES",
    "UNTAGGED",
    "Dashboard",
    "pairwise_matrix",
]

#: The ``comparison`` label of expert–expert rows of :attr:`Dashboard.agreement`.
EXPERTS = "experts"
#: Label of criteria without a tag in the agreement-by-tag rows.
UNTAGGED = "(untagged)"
#: The ``by`` values of :attr:`Dashboard.agreement`, in display order.
GROUP_BYS: tuple[str, ...] = ("overall", "tag", "workflow", "domain", "criterion")
#: Judge-vs-consensus figures listed in the agreement table (the judges table has more):
#: the catalogue's view ``"judge"``.
JUDGE_STATISTICS: tuple[str, ...] = view("judge")
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


def empty_frame(columns: Sequence[str]) -> pd.DataFrame:
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
            domain or criterion id; :data:`~gradercal.dashboard.filters.NO_VALUE` /
            :data:`UNTAGGED` when missing);
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
            ``bar`` of :func:`~gradercal.dashboard.compute.compute_dashboard`).
        disagreements: Item-level disagreements (the experts split, or the primary
            judge departs from a decided consensus), in health rank order:
            ``task_id``, ``criterion_id``, ``response_id``, ``model``, ``text``,
            ``points``, ``consensus`` (bool or None when undecided), ``judge`` (the
            primary judge's verdict or None), ``experts_split``, ``judge_departs``,
            ``n_unclear``, then one ``verdict:<grader>`` column per grader (True/False/
            None) — a front end opens the adjudication view on (``response_id``,
            ``criterion_id``).
        tables: The computed table sections of
            :data:`gradercal.dashboard.tables.TABLE_SECTIONS` (those with a
            ``compute``), by key — e.g. ``task_reviews``, one row per task review
            statement (:data:`~gradercal.dashboard.tables.REVIEW_COLUMNS`). In the JSON
            each is a list of records under its key, after ``disagreements``. An
            optional section with nothing to show is absent (``criterion_versions``, the
            agreement per criterion version, is there only when a criterion was revised:
            :data:`~gradercal.dashboard.tables.VERSION_COLUMNS`).
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
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    calibration: dict[str, Any] | None = None
    elapsed: dict[str, float] = field(default_factory=dict)

    @classmethod
    def from_fields(cls, values: Mapping[str, Any]) -> Dashboard:
        """The dashboard whose fields are ``values`` (by name; a field not given keeps its
        default): how the window puts back together the fields the worker sent one by
        one."""
        fields = dataclasses.fields(cls)
        dash = cls(**{f.name: values[f.name] for f in fields if f.init and f.name in values})
        for f in fields:
            if not f.init and f.name in values:
                object.__setattr__(dash, f.name, values[f.name])
        return dash

    @property
    def primary_judge(self) -> str | None:
        """The judge of the per-judge sections (None without a judge)."""
        pj = self.overview.get("primary_judge")
        return None if pj is None else str(pj)

    def table(self, key: str) -> pd.DataFrame:
        """The frame of table section ``key`` (a field, or an entry of :attr:`tables`).

        Raises:
            KeyError: No such section in this dashboard.
        """
        if key in self.tables:
            return self.tables[key]
        table = section(key)
        if table.compute is None:  # a section the core pipeline fills: a field
            frame: pd.DataFrame = getattr(self, key)
            return frame
        if table.optional:  # absent from this dashboard: no rows
            return empty_frame(table.columns)
        raise KeyError(key)

    def has_section(self, key: str) -> bool:
        """Whether table section ``key`` is part of this dashboard (an optional section
        whose computation found nothing to show is not)."""
        return key in self.tables or not section(key).optional

    def pairwise_matrix(self, statistic: str = "cohen_kappa") -> pd.DataFrame:
        """Square grader × grader matrix of ``statistic`` (see :func:`pairwise_matrix`)."""
        order = [*self.overview.get("humans", []), *self.overview.get("judges", [])]
        return pairwise_matrix(self.pairwise, statistic, order)

    def to_json(self) -> dict[str, Any]:
        """Strict-JSON data (NaN → null, arrays → lists, frames → lists of records)."""
        return {
            "format": "gradercal.dashboard",
            "format_version": 1,
            "overview": json_safe(self.overview),
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
                k: {"bins": _records(v), **json_safe(dict(v.attrs))}
                for k, v in self.reliability.items()
            },
            "models": _records(self.models),
            "alt_test": json_safe(self.alt_test),
            "flips": _records(self.flips),
            "health": _records(self.health),
            "disagreements": _records(self.disagreements),
            **{key: _records(frame) for key, frame in self.tables.items()},
            "calibration": json_safe(self.calibration),
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


def _records(df: pd.DataFrame) -> list[dict[str, Any]]:
    cols = [str(c) for c in df.columns]
    return [
        {c: json_safe(v) for c, v in zip(cols, row, strict=True)}
        for row in df.itertuples(index=False, name=None)
    ]
