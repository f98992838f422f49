"""Grading agreement: expert vs expert, and the LLM judge vs the experts.

Everything here reads :class:`~gradercal.frames.Frames` and works on the binary
*met / not met* verdicts of **judgment criteria** (auto criteria are graded from the
answer and never judged, so they are left out). A *unit* is one criterion of one
response. Definitions:

* **Verdict** of a grader on a unit: its ordinal level when given (clipped to
  ``0 … levels−1``), else its ``met``; the unit counts as *met* when the level is the
  top level — the rule of :mod:`gradercal.analysis.scoring`, so a "partial" verdict on a 3-level
  criterion is *not met*. A verdict with neither level nor met is a missing rating. A
  grader's duplicate verdicts on one unit keep the last.
* **Human consensus** (the reference): :func:`consensus_verdicts`, the met / not met of
  :func:`gradercal.analysis.scoring.consensus` — the adjudication when there is one, else the
  strict majority of the human met / not-met verdicts (a "partial" counts as not met,
  so "not met, not met, partial, met" is a decided *not met* even though its median
  level is tied). Units where exactly half the humans say met, or with no human
  verdict, are *undecided* and left out of every judge–human comparison (their count
  is reported).
* **Human–human agreement** of a set of units: percent agreement, Fleiss' kappa, Gwet's
  AC1 and Krippendorff's alpha (nominal) of :mod:`gradercal.stats` on the human
  verdicts, category set ``{0, 1}``, missing ratings handled as Gwet does.
* **Candidate vs reference** (:func:`compare`): on the units where both have a verdict,
  with the reference taken as truth and "met" as the positive class, the confusion
  counts ``TP, FP, FN, TN`` (``n`` their sum) give

  - ``percent_agreement = (TP + TN)/n``;
  - ``precision_met = TP/(TP + FP)``, ``recall_met = TP/(TP + FN)``,
    ``f1_met = 2TP/(2TP + FP + FN)``; ``precision_not_met = TN/(TN + FN)``,
    ``recall_not_met = TN/(TN + FP)``, ``f1_not_met = 2TN/(2TN + FN + FP)``;
  - ``balanced_f1 = (f1_met + f1_not_met)/2`` — the macro F1 that HealthBench's
    meta-evaluation reports (Arora et al. 2025), = scikit-learn's
    ``f1_score(average="macro")``;
  - ``cohen_kappa = (p_o − p_e)/(1 − p_e)``, ``p_o`` the percent agreement,
    ``p_e = c·r + (1 − c)(1 − r)`` with ``c = (TP + FP)/n`` and ``r = (TP + FN)/n`` the two
    met rates on these units (Cohen 1960; = scikit-learn's ``cohen_kappa_score``);
  - ``candidate_met_rate = c``, ``reference_met_rate = r`` and
    ``leniency_bias = c − r = (FP − FN)/n``: positive when the candidate says "met" more
    often than the reference.

  A ratio whose denominator is 0 is undefined (``null`` with the reason), never 0 or 1.
* **Humans as judges**: every human ``h`` is compared, exactly like the judge, with the
  consensus of the *other* humans (leave-one-out); the judge is compared with the same
  leave-one-out reference on the same units, so each human figure has a judge figure
  beside it computed on identical data. The *human range* of a figure is its minimum and
  maximum over the humans; the judge's figure for that comparison is the mean over ``h``
  of its leave-one-out figures.

**Confidence intervals** come from the task-clustered bootstrap of
:mod:`gradercal.stats.bootstrap`: whole tasks are resampled with the multinomial weights
of :func:`~gradercal.stats.bootstrap.resampling_weights` (same seed → same resamples),
every comparison figure being a function of per-task confusion counts, so resample
``b`` has counts ``W[b] @ S``. Expanded percentile intervals (:func:`percentile_interval`:
the percentile interval widened for few tasks, Hesterberg 2015); resamples on which a
figure is undefined are excluded and counted in the note; fewer than
:data:`~gradercal.stats.bootstrap.FEW_CLUSTERS` (10) tasks give a warning.

The package's modules: :mod:`~gradercal.analysis.agreement.compare` (a candidate against
a reference, the comparison figures), :mod:`~gradercal.analysis.agreement.humans`
(human–human agreement, pairs, leave-one-out), :mod:`~gradercal.analysis.agreement.judge`
(the judge against the consensus and the humans' range),
:mod:`~gradercal.analysis.agreement.groups` (by tag, workflow, domain, criterion) and
:mod:`~gradercal.analysis.agreement.report` (``gradercal agreement --json``). The figures
reported and their names are views of :mod:`gradercal.stats.catalogue`
(:data:`HUMAN_STATISTICS`, :data:`COMPARISON_FIGURES`).

This package imports pandas, numpy and gradercal's core only (no SQL, no Qt).
"""

from __future__ import annotations

from gradercal.analysis.agreement.compare import (
    COMPARISON_FIGURES,
    COMPARISON_METRICS,
    Comparison,
    ComparisonFigure,
    Progress,
    compare,
    comparison_metrics,
)
from gradercal.analysis.agreement.groups import (
    GROUPINGS,
    GroupAgreement,
    Grouping,
    group_agreement,
)
from gradercal.analysis.agreement.humans import (
    HUMAN_STATISTICS,
    MET_CATEGORIES,
    HumanAgreement,
    PairAgreement,
    human_agreement,
    leave_one_out,
    pairwise_agreement,
)
from gradercal.analysis.agreement.judge import JudgeAgreement, LooRow, judge_agreement
from gradercal.analysis.agreement.report import agreement_report
from gradercal.stats.intervals import percentile_interval

__all__ = [
    "COMPARISON_FIGURES",
    "COMPARISON_METRICS",
    "GROUPINGS",
    "HUMAN_STATISTICS",
    "MET_CATEGORIES",
    "Comparison",
    "ComparisonFigure",
    "GroupAgreement",
    "Grouping",
    "HumanAgreement",
    "JudgeAgreement",
    "LooRow",
    "PairAgreement",
    "Progress",
    "agreement_report",
    "compare",
    "comparison_metrics",
    "group_agreement",
    "human_agreement",
    "judge_agreement",
    "leave_one_out",
    "pairwise_agreement",
    "percentile_interval",
]
