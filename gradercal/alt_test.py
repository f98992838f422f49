"""The alternative annotator test (alt-test) of Calderon, Reichart & Dror (ACL 2025).

Can the LLM judge replace the human experts? The alt-test answers with a
leave-one-annotator-out comparison (Calderon, Reichart & Dror, "The Alternative
Annotator Test for LLM-as-a-Judge: How to Statistically Justify Replacing Human
Annotators with LLMs", ACL 2025, §3; reference code github.com/nitaytech/AltTest).

Definitions, for human annotators ``h_1 … h_m``, items ``i`` (here: one judgment
criterion of one response) and the judge ``f``:

* Items enter when the judge has a verdict and at least two humans do.
* For each excluded human ``h_j`` and each item ``i`` that ``h_j`` rated, the *alignment*
  of an annotation ``a`` with the remaining humans ``H_i − j`` is its accuracy against
  them: ``S(a, i, j) = (1/|H_i − j|) Σ_{k ∈ H_i − j} 1[a = h_k(i)]``.
* Indicators: ``W^f_ij = 1[S(f(i), i, j) ≥ S(h_j(i), i, j)]`` (the judge represents the
  others at least as well as ``h_j``) and ``W^h_ij = 1[S(h_j(i), i, j) ≥ S(f(i), i, j)]``
  (ties count for both).
* Advantage probabilities ``ρ^f_j = mean_i W^f_ij`` and ``ρ^h_j = mean_i W^h_ij``; the
  **average advantage probability** is ``ρ = mean_j ρ^f_j``.
* For each ``j``, test ``H0: ρ^f_j ≤ ρ^h_j − ε`` against ``H1: ρ^f_j > ρ^h_j − ε`` with the
  paired differences ``d_i = W^h_ij − W^f_ij``: a one-sided one-sample t-test of
  ``mean(d) < ε`` (``scipy.stats.ttest_1samp(d, ε, alternative="less")``), or, when
  ``h_j`` rated fewer than :data:`MIN_T_TEST_ITEMS` (30) items, the Wilcoxon signed-rank
  test of ``d − ε`` (``scipy.stats.wilcoxon(d − ε, alternative="less")``; scipy uses an
  exact or permutation null for small samples and the tie-corrected normal
  approximation otherwise). ``ε`` (default 0.2, the paper's value for experts) is the
  cost-benefit allowance granted to the judge.
* The ``m`` p-values are corrected with the Benjamini–Yekutieli procedure at level
  ``α`` (default 0.05; Benjamini & Yekutieli 2001, FDR control under arbitrary
  dependence): with sorted p-values ``p_(1) ≤ … ≤ p_(m)`` and ``c(m) = Σ_{k=1}^m 1/k``,
  reject ``H_(1) … H_(k)`` for the largest ``k`` with ``p_(k) ≤ k α / (m c(m))``.
  Adjusted p-values: ``min(1, min_{l ≥ k} m c(m) p_(l) / l)``.
* **Winning rate** ``ω`` = the share of humans whose null is rejected (the judge "wins"
  against them). The judge **passes** when ``ω ≥ 0.5``.

Edge cases: fewer than two humans with items shared with another human and the judge
→ :class:`AltTestRefused` (the test is undefined); two humans → a warning (the paper
recommends at least three: with two, each "consensus" is a single person). A constant
difference ``d`` makes the t statistic ±∞: its limit p-value is used (0 when
``mean(d) < ε``, 1 otherwise; scipy gives the same) — and when ``mean(d) = ε`` exactly the
p-value is undefined and counted as not rejected, with a note. Items are treated as
independent, as in the paper, although criteria of one task are correlated; the
p-values are therefore somewhat optimistic when tasks carry many criteria.

This module imports pandas, numpy, scipy and gradercal's core only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd

from gradercal.errors import GradercalError
from gradercal.frames import Frames

__all__ = [
    "DEFAULT_ALPHA",
    "DEFAULT_EPSILON",
    "MIN_T_TEST_ITEMS",
    "AltTestRefused",
    "AltTestResult",
    "AnnotatorTest",
    "alt_test",
    "alt_test_frames",
    "benjamini_yekutieli",
]

#: The paper's ε for expert annotators.
DEFAULT_EPSILON = 0.2
#: FDR level of the Benjamini–Yekutieli correction.
DEFAULT_ALPHA = 0.05
#: Below this many items the Wilcoxon signed-rank test replaces the t-test.
MIN_T_TEST_ITEMS = 30
#: The winning rate at which the judge passes.
PASS_WINNING_RATE = 0.5

FloatArray = npt.NDArray[np.float64]


class AltTestRefused(GradercalError, ValueError):
    """The alt-test cannot be run on these data (e.g. fewer than two humans)."""


@dataclass(frozen=True)
class AnnotatorTest:
    """The test against one excluded human annotator.

    Attributes:
        human: The excluded annotator ``h_j``.
        n_items: Items ``h_j`` rated (with the judge and at least one other human).
        test: ``"t"`` (one-sided t-test) or ``"wilcoxon"`` (fewer than 30 items).
        rho_judge: ``ρ^f_j``, the judge's advantage probability.
        rho_human: ``ρ^h_j``, the human's advantage probability.
        mean_difference: ``mean(d) = ρ^h_j − ρ^f_j``.
        statistic: The test statistic (t, or Wilcoxon's ``R+``), None if undefined.
        p_value: One-sided p-value, None if undefined (see ``note``).
        p_adjusted: Benjamini–Yekutieli adjusted p-value (None with ``p_value``).
        rejected: Whether ``H0`` is rejected after correction: the judge wins.
        note: Why a value is missing, or a caveat.
    """

    human: str
    n_items: int
    test: Literal["t", "wilcoxon"]
    rho_judge: float
    rho_human: float
    mean_difference: float
    statistic: float | None
    p_value: float | None
    p_adjusted: float | None
    rejected: bool
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        return {
            "human": self.human,
            "n_items": self.n_items,
            "test": self.test,
            "rho_judge": self.rho_judge,
            "rho_human": self.rho_human,
            "mean_difference": self.mean_difference,
            "statistic": self.statistic,
            "p_value": self.p_value,
            "p_adjusted": self.p_adjusted,
            "rejected": self.rejected,
            "note": self.note,
        }


@dataclass(frozen=True)
class AltTestResult:
    """The outcome of the alt-test.

    Attributes:
        judge: The judge's name.
        epsilon: The cost-benefit allowance ``ε``.
        alpha: The FDR level of the Benjamini–Yekutieli correction.
        n_items: Items with the judge's and at least two humans' annotations.
        annotators: One :class:`AnnotatorTest` per tested human, in name order.
        winning_rate: ``ω``, the share of humans the judge wins against.
        advantage_probability: ``ρ``, the mean of ``ρ^f_j`` over the humans.
        passed: ``ω ≥ 0.5``.
        warnings: Caveats (e.g. only two humans).
    """

    judge: str
    epsilon: float
    alpha: float
    n_items: int
    annotators: list[AnnotatorTest]
    winning_rate: float
    advantage_probability: float
    passed: bool
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (see ``docs/agreement.md``)."""
        return {
            "judge": self.judge,
            "epsilon": self.epsilon,
            "alpha": self.alpha,
            "scoring": "accuracy",
            "correction": "benjamini-yekutieli",
            "n_items": self.n_items,
            "n_humans": len(self.annotators),
            "winning_rate": self.winning_rate,
            "advantage_probability": self.advantage_probability,
            "passed": self.passed,
            "annotators": [a.to_dict() for a in self.annotators],
            "warnings": list(self.warnings),
        }


def benjamini_yekutieli(
    p_values: Sequence[float], alpha: float = DEFAULT_ALPHA
) -> tuple[npt.NDArray[np.bool_], FloatArray]:
    """The Benjamini–Yekutieli step-up procedure.

    Args:
        p_values: The ``m`` p-values (finite, in [0, 1]).
        alpha: The FDR level.

    Returns:
        ``(rejected, adjusted)`` in the input order: with sorted p-values
        ``p_(k)`` and ``c(m) = Σ 1/k``, the hypotheses up to the largest ``k`` with
        ``p_(k) ≤ k α/(m c(m))`` are rejected; ``adjusted_(k) = min(1, min_{l≥k}
        m c(m) p_(l)/l)`` (= statsmodels' ``multipletests(method="fdr_by")``).
    """
    p = np.asarray(p_values, dtype=np.float64)
    m = len(p)
    if m == 0:
        return np.zeros(0, dtype=bool), np.zeros(0)
    if not np.all(np.isfinite(p)) or np.any(p < 0) or np.any(p > 1):
        raise ValueError("p-values must be finite and in [0, 1]")
    order = np.argsort(p, kind="stable")
    ranks = np.arange(1, m + 1, dtype=np.float64)
    c_m = float(np.sum(1.0 / ranks))
    sorted_p = p[order]
    below = sorted_p <= ranks * alpha / (m * c_m)
    k = int(np.max(np.flatnonzero(below))) + 1 if below.any() else 0
    rejected = np.zeros(m, dtype=bool)
    rejected[order[:k]] = True
    adj_sorted = np.minimum.accumulate((m * c_m * sorted_p / ranks)[::-1])[::-1]
    adjusted = np.empty(m)
    adjusted[order] = np.minimum(adj_sorted, 1.0)
    return rejected, adjusted


def _one_sided(d: FloatArray, epsilon: float) -> tuple[str, float | None, float | None, str | None]:
    """Test ``mean(d) < ε``; ``(test, statistic, p_value, note)``."""
    from scipy import stats  # type: ignore[import-untyped, unused-ignore]

    n = len(d)
    if n < MIN_T_TEST_ITEMS:
        shifted = d - epsilon
        if np.all(shifted == 0):
            return "wilcoxon", None, None, "every difference equals ε: no test possible"
        wres = stats.wilcoxon(shifted, alternative="less")
        return "wilcoxon", float(wres.statistic), float(wres.pvalue), None
    if np.all(d == d[0]):
        if d[0] < epsilon:
            return "t", -math.inf, 0.0, "constant differences below ε: limit p-value 0"
        if d[0] > epsilon:
            return "t", math.inf, 1.0, "constant differences above ε: limit p-value 1"
        return "t", None, None, "every difference equals ε: no test possible"
    tres = stats.ttest_1samp(d, epsilon, alternative="less")
    return "t", float(tres.statistic), float(tres.pvalue), None


def alt_test(
    humans: pd.DataFrame,
    judge: Mapping[Any, Any] | pd.Series,
    *,
    judge_name: str = "judge",
    epsilon: float = DEFAULT_EPSILON,
    alpha: float = DEFAULT_ALPHA,
) -> AltTestResult:
    """Run the alt-test on any categorical annotations.

    Args:
        humans: Long format: ``item``, ``annotator``, ``value`` (one row per human
            annotation; an annotator annotates an item at most once).
        judge: The judge's annotation of each item (item → value).
        judge_name: The judge's label in the result.
        epsilon: The cost-benefit allowance ``ε`` (0 ≤ ε < 1).
        alpha: FDR level of the Benjamini–Yekutieli correction.

    Raises:
        AltTestRefused: Fewer than two humans annotated items that another human and
            the judge annotated too.
        ValueError: Bad ``epsilon``/``alpha`` or duplicate annotations.
    """
    if not 0.0 <= epsilon < 1.0:
        raise ValueError("epsilon must be in [0, 1)")
    if not 0.0 < alpha < 1.0:
        raise ValueError("alpha must be in (0, 1)")
    missing = [c for c in ("item", "annotator", "value") if c not in humans.columns]
    if missing:
        raise ValueError(f"human annotations lack columns: {', '.join(missing)}")
    h = humans.loc[humans["value"].notna(), ["item", "annotator", "value"]]
    if h.duplicated(["item", "annotator"]).any():
        raise ValueError("an annotator annotated an item more than once")
    jmap = dict(judge.items())
    if pd.api.types.is_integer_dtype(h["item"].dtype) and all(
        isinstance(i, int | np.integer) for i in jmap
    ):
        # Integer items (e.g. codes from alt_test_frames): one hash lookup for all rows.
        known = np.fromiter(
            (i for i, x in jmap.items() if not _missing(x)), dtype=np.int64, count=-1
        )
        h = h.loc[h["item"].isin(known)]
    else:
        h = h.loc[h["item"].map(lambda i: i in jmap and not _missing(jmap[i]))]
    per_item = h.groupby("item")["annotator"].transform("size")
    h = h.loc[per_item >= 2]
    annotator, annotators = pd.factorize(h["annotator"].to_numpy(object), sort=False)
    names = sorted({str(a) for a in annotators})
    if (np.asarray(annotator) < 0).any():  # a missing annotator counts as str(a) too
        names = sorted({str(a) for a in h["annotator"]})
    if len(names) < 2:
        raise AltTestRefused(
            f"the alt-test needs at least two human graders who annotated the same items as "
            f"another human and the judge {judge_name!r}; found {len(names)}"
        )
    warnings: list[str] = []
    if len(names) < 3:
        warnings.append(
            "only two human graders: each is compared with a single other person; the "
            "alt-test's authors recommend at least three"
        )
    # Wide matrix items × annotators of value codes (-1 where missing); the judge's codes.
    codes, items = pd.factorize(h["item"], sort=False)
    jraw = [jmap[i] for i in items]
    vcodes, _ = pd.factorize(pd.Series([*h["value"].tolist(), *jraw], dtype=object))
    vcodes = np.asarray(vcodes, dtype=np.int64)
    col = {a: k for k, a in enumerate(names)}
    wide = np.full((len(items), len(names)), -1, dtype=np.int64)
    if (np.asarray(annotator) < 0).any():  # a missing annotator: one by one, as before
        where = np.asarray([col[str(a)] for a in h["annotator"]], dtype=np.intp)
    else:
        where = np.asarray([col[str(a)] for a in annotators], dtype=np.intp)[annotator]
    wide[np.asarray(codes), where] = vcodes[: len(h)]
    jv = vcodes[len(h) :]
    present = wide >= 0
    rows: list[dict[str, Any]] = []
    for j, name in enumerate(names):
        others = present.copy()
        others[:, j] = False
        k_other = others.sum(axis=1)
        sel = present[:, j] & (k_other > 0)
        n = int(sel.sum())
        if n == 0:
            continue
        hw = wide[sel]
        oth = others[sel]
        kk = k_other[sel].astype(np.float64)
        same_h = (hw == hw[:, [j]]) & oth
        same_f = (hw == jv[sel][:, None]) & oth
        s_h = same_h.sum(axis=1) / kk
        s_f = same_f.sum(axis=1) / kk
        w_f = (s_f >= s_h).astype(np.float64)
        w_h = (s_h >= s_f).astype(np.float64)
        d = w_h - w_f
        test, stat, p, note = _one_sided(d, epsilon)
        rows.append(
            {
                "human": name,
                "n_items": n,
                "test": test,
                "rho_judge": float(np.mean(w_f)),
                "rho_human": float(np.mean(w_h)),
                "mean_difference": float(np.mean(d)),
                "statistic": stat,
                "p_value": p,
                "note": note,
            }
        )
    if len(rows) < 2:
        raise AltTestRefused(
            f"the alt-test needs at least two human graders with shared items; found {len(rows)}"
        )
    p_for_by = [1.0 if r["p_value"] is None else float(r["p_value"]) for r in rows]
    rejected, adjusted = benjamini_yekutieli(p_for_by, alpha)
    tests = [
        AnnotatorTest(
            human=r["human"],
            n_items=r["n_items"],
            test=r["test"],
            rho_judge=r["rho_judge"],
            rho_human=r["rho_human"],
            mean_difference=r["mean_difference"],
            statistic=None
            if r["statistic"] is None or not math.isfinite(r["statistic"])
            else r["statistic"],
            p_value=r["p_value"],
            p_adjusted=None if r["p_value"] is None else float(adjusted[k]),
            rejected=bool(rejected[k]) and r["p_value"] is not None,
            note=r["note"],
        )
        for k, r in enumerate(rows)
    ]
    small = [t.human for t in tests if t.test == "wilcoxon"]
    if small:
        warnings.append(
            f"fewer than {MIN_T_TEST_ITEMS} items for {', '.join(small)}: Wilcoxon "
            "signed-rank test instead of the t-test (low power)"
        )
    omega = float(np.mean([t.rejected for t in tests]))
    rho = float(np.mean([t.rho_judge for t in tests]))
    return AltTestResult(
        judge=judge_name,
        epsilon=float(epsilon),
        alpha=float(alpha),
        n_items=len(items),
        annotators=tests,
        winning_rate=omega,
        advantage_probability=rho,
        passed=omega >= PASS_WINNING_RATE,
        warnings=warnings,
    )


def _missing(x: Any) -> bool:
    if x is None or x is pd.NA:
        return True
    return isinstance(x, float) and math.isnan(x)


def alt_test_frames(
    frames: Frames,
    judge: str,
    humans: Sequence[str] | None = None,
    *,
    epsilon: float = DEFAULT_EPSILON,
    alpha: float = DEFAULT_ALPHA,
    memo: dict[Any, Any] | None = None,
) -> AltTestResult:
    """The alt-test of a judge on a benchmark's met / not met verdicts.

    Items are (response, judgment criterion) pairs; values the binary verdicts of
    :func:`gradercal.agreement.verdicts` (a partial level counts as not met).
    Adjudications are not used: the test compares annotators only.

    Args:
        frames: The benchmark frames.
        judge: The judge's grader name.
        humans: The human graders (default: every grader of kind ``"human"``).
        epsilon: The cost-benefit allowance ``ε``.
        alpha: FDR level.
        memo: A dict shared by calls on the same frames (e.g. within one report) to
            reuse the verdict table (:data:`gradercal.agreement.Memo`); None: compute
            afresh.

    Raises:
        AltTestRefused: See :func:`alt_test`.
    """
    from gradercal.agreement import human_graders, verdicts

    names = [
        h for h in (list(humans) if humans is not None else human_graders(frames)) if h != judge
    ]
    v = verdicts(frames, [*names, judge], memo=memo)
    # An item is a (response, criterion) pair, coded as an integer.
    rc, _ = pd.factorize(v["response_id"].to_numpy(object), sort=False)
    cc, cu = pd.factorize(v["criterion_id"].to_numpy(object), sort=False)
    v = v.assign(item=np.asarray(rc, np.int64) * max(len(cu), 1) + np.asarray(cc, np.int64))
    jv = v.loc[v["grader"] == judge]
    if jv.empty:
        raise AltTestRefused(f"grader {judge!r} has no verdict on any judgment criterion")
    hv = v.loc[v["grader"] != judge]
    table = pd.DataFrame(
        {"item": hv["item"], "annotator": hv["grader"], "value": hv["met"].astype(bool)}
    )
    return alt_test(
        table,
        dict(zip(jv["item"], jv["met"].astype(bool), strict=True)),
        judge_name=judge,
        epsilon=epsilon,
        alpha=alpha,
    )
