"""Task acceptance rounds: when a task's review round may close, and whether it is proposed.

A pure module on plain facts (no database, no Qt); :mod:`gradercal.db.acceptance` reads
the facts, stores the rounds and applies the decisions. docs/review-process.md
("Acceptance rounds") states the rules for users.

**Rounds.** A task is reviewed in numbered rounds (1, 2, …). A round is *open* while its
reviewers work, *closed* once measured (its agreement and survey means are then frozen in
the round), and finally *decided*: ``accepted``, ``rejected`` or ``needs_revision`` (sent
back with a note; the next round opens after the revision). A task's **status** follows
from its last round (:func:`task_status`): no round → ``draft``; open or closed and
undecided → ``in review``; otherwise the last decision.

**Reviewers** of a round are the human graders assigned to (or with judgments on) the
task's responses. A round is **ready to close** when every reviewer has no open queue item
on the task (each is submitted or skipped) and has answered all four survey statements.

**Agreement** of a round: the units are the (response, criterion) pairs of the task's
judgment criteria, each rated by the reviewers (value: the level for a criterion with
more than two levels, else met = 1 / not met = 0). The statistic is a setting
(:data:`STATISTICS`, percent agreement by default), computed by
:mod:`gradercal.stats` on the units rated at least twice. The ratings of one criterion
are correlated, so its interval treats the task's **criteria** as the sampled clusters:

* percent agreement (and Bennett's S, a linear function of it): the **clustered Wilson
  interval** (:func:`gradercal.stats.intervals.clustered_wilson`: Wilson's score
  interval with the effective number of units of the design effect between criteria
  and the ``t_{K−1}`` quantile for ``K`` criteria). The plain percentile bootstrap over
  criteria used before covered a true agreement of 0.85–0.95 in 38–92 % of simulated
  tasks at 10 criteria, the expanded percentile (the default of
  :mod:`gradercal.stats.bootstrap`) in 38–97 %; this interval in 94.6–99.8 % at 10
  criteria and 95.1–99.0 % at 25 (``tests/ops/test_acceptance_coverage.py``;
  docs/review-process.md);
* the other statistics: the expanded percentile bootstrap over criteria
  (:data:`~gradercal.stats.bootstrap.DEFAULT_CI_METHOD`; ``n_boot`` resamples, a drawn
  criterion bringing all its responses).

With one criterion there is no interval (the note says so); with fewer than ten the note
says coverage was not checked; ``n_boot = 0`` gives the point value only (a draft's
preview).

**Proposal.** A closed round is *proposed for acceptance* when

1. the agreement passes the bar by the settings' **rule**: ``point`` (the default): the
   point estimate is at least ``bar``; ``interval``: the interval's lower end is at
   least ``bar`` (no interval: not passed);
2. every survey statement's mean answer is at least its threshold (default 4 = "agree"
   on the 5-point scale) — a statement nobody answered fails;
3. the round's number is at least ``min_rounds`` and the ``min_rounds − 1`` closed rounds
   before it passed 1 and 2 as well (LifeSciBench-style: two rounds of ≥ 90 %).

**At the bar** (:class:`AtBar`, :func:`at_bar`): beside the agreement test's outcome,
the probability that a task whose true percent agreement is exactly the bar would have
the same outcome under the same rule — an operating characteristic computed for this
task's criteria, units and reviewers per unit by simulating it at the bar. Under the
point rule a task at the bar passes about half the time (more on the coarse lattice of
a few units rated by two reviewers: 74 % with ten), under the interval rule 0–2 %. Only
for percent agreement (None, with why, otherwise).

Otherwise :attr:`Assessment.reasons` says, one line each, what is missing.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from gradercal._util.numbers import trimmed
from gradercal.model import REVIEW_DIMENSIONS
from gradercal.stats import coefficients as co
from gradercal.stats.catalogue import view
from gradercal.stats.registry import STATISTICS as _REGISTRY

__all__ = [
    "ACTIONS",
    "ROUND_COLUMNS",
    "ROUND_STATES",
    "RULES",
    "STATISTICS",
    "TASK_STATUSES",
    "WILSON_METHOD",
    "Assessment",
    "AtBar",
    "Measure",
    "Rating",
    "ReviewerFact",
    "RoundFact",
    "Settings",
    "assess",
    "at_bar",
    "check_action",
    "measure",
    "round_table",
    "survey_means",
    "task_design",
    "task_status",
]

#: Task statuses, in the order the tables list them.
TASK_STATUSES: tuple[str, ...] = ("draft", "in review", "needs revision", "accepted", "rejected")
#: States of one round row.
ROUND_STATES: tuple[str, ...] = ("open", "closed", "accepted", "rejected", "needs_revision")
#: What a coordinator can do to a task.
ACTIONS: tuple[str, ...] = ("open", "close", "accept", "reject", "reopen")
#: The statistics an acceptance bar may use (multi-rater coefficients of gradercal.stats):
#: the catalogue's view ``"acceptance"``.
STATISTICS: tuple[str, ...] = view("acceptance")
_DIMENSIONS = tuple(d.key for d in REVIEW_DIMENSIONS)
#: How the agreement must compare with the bar (see the module docstring, "Proposal").
RULES: tuple[str, ...] = ("point", "interval")
#: The interval of percent agreement and Bennett's S (``Measure.method``).
WILSON_METHOD = "clustered_wilson"
#: Statistics whose interval is the clustered Wilson interval of percent agreement.
_WILSON_STATISTICS = view("wilson")
#: Fewer criteria than this: the interval's coverage was not checked (a note says so).
FEW_CRITERIA = 10
#: What an :class:`AtBar` probability assumes (its JSON ``model``).
AT_BAR_MODEL = (
    "simulated: this task's criteria, units and reviewers; met/not met verdicts, every "
    "reviewer wrong with the same probability; true percent agreement = the bar"
)


def statistic_label(key: str) -> str:
    """The registry's phrase for a statistic (``"percent agreement"``)."""
    return _REGISTRY[key].phrase


@dataclass(frozen=True)
class Settings:
    """A benchmark's acceptance settings (stored per benchmark; these are the defaults)."""

    bar: float = 0.90
    statistic: str = "percent_agreement"
    min_rounds: int = 1
    survey_min: Mapping[str, float] = field(default_factory=lambda: dict.fromkeys(_DIMENSIONS, 4.0))
    n_boot: int = 2000
    ci: float = 0.95
    seed: int = 0
    rule: str = "point"

    def __post_init__(self) -> None:
        if not (isinstance(self.bar, int | float) and -1.0 <= float(self.bar) <= 1.0):
            raise ValueError(f"bar: must be a number between -1 and 1, got {self.bar!r}")
        if self.statistic not in STATISTICS:
            raise ValueError(
                f"statistic: unknown {self.statistic!r}; expected one of {', '.join(STATISTICS)}"
            )
        if not isinstance(self.min_rounds, int) or not 1 <= self.min_rounds <= 20:
            raise ValueError(f"min_rounds: must be an integer 1–20, got {self.min_rounds!r}")
        for dim, v in self.survey_min.items():
            if dim not in _DIMENSIONS:
                raise ValueError(
                    f"survey_min: unknown statement {dim!r}; expected {', '.join(_DIMENSIONS)}"
                )
            if not isinstance(v, int | float) or not 1.0 <= float(v) <= 5.0:
                raise ValueError(f"survey_min.{dim}: must be a number 1–5, got {v!r}")
        if not isinstance(self.n_boot, int) or not 0 <= self.n_boot <= 100_000:
            raise ValueError(f"n_boot: must be an integer 0–100000, got {self.n_boot!r}")
        if not 0.0 < float(self.ci) < 1.0:
            raise ValueError(f"ci: must be between 0 and 1, got {self.ci!r}")
        if self.rule not in RULES:
            raise ValueError(f"rule: unknown {self.rule!r}; expected one of {', '.join(RULES)}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "bar": float(self.bar),
            "statistic": self.statistic,
            "min_rounds": self.min_rounds,
            "survey_min": {k: float(v) for k, v in self.survey_min.items()},
            "n_boot": self.n_boot,
            "ci": float(self.ci),
            "seed": self.seed,
            "rule": self.rule,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Settings:
        """Settings from stored JSON (missing keys take the defaults; unknown keys refused)."""
        known = {"bar", "statistic", "min_rounds", "survey_min", "n_boot", "ci", "seed", "rule"}
        extra = sorted(set(data) - known)
        if extra:
            raise ValueError(f"{extra[0]}: unknown acceptance setting")
        kwargs = dict(data)
        if "survey_min" in kwargs:
            kwargs["survey_min"] = dict(kwargs["survey_min"])
        return cls(**kwargs)


@dataclass(frozen=True)
class Rating:
    """One reviewer's verdict on one criterion of one response of the task."""

    reviewer: str
    response: str
    criterion: str
    value: float


@dataclass(frozen=True)
class ReviewerFact:
    """A reviewer of the task: queue items still open on it, and their survey answers."""

    reviewer: str
    open_items: int = 0
    survey: Mapping[str, int | None] = field(default_factory=dict)


@dataclass(frozen=True)
class Measure:
    """A round's agreement: value and interval (None with ``note`` when undefined).

    ``method``: how the interval was formed (:data:`WILSON_METHOD` or
    ``"expanded_percentile"``; None without one, and for rounds closed before it was
    recorded). ``n_effective``: the effective number of units of percent agreement (see
    :func:`gradercal.stats.intervals.clustered_wilson`; None for the other statistics).
    """

    statistic: str
    value: float | None
    low: float | None
    high: float | None
    n_units: int
    n_criteria: int
    note: str | None = None
    method: str | None = None
    n_effective: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "statistic": self.statistic,
            "value": self.value,
            "ci": None if self.low is None or self.high is None else [self.low, self.high],
            "n_units": self.n_units,
            "n_criteria": self.n_criteria,
            "note": self.note,
            "method": self.method,
            "n_effective": self.n_effective,
        }


@dataclass(frozen=True)
class AtBar:
    """The operating characteristic beside an agreement decision (module docstring).

    ``passed``: the agreement test's outcome under ``rule``; ``probability``: how often a
    task whose true percent agreement is exactly ``bar`` would have that outcome (None
    when it cannot be computed: ``why``); ``n_units``: the units of the simulated task.
    """

    rule: str
    bar: float
    passed: bool
    probability: float | None
    n_units: int | None
    why: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "bar": self.bar,
            "passed": self.passed,
            "probability": self.probability,
            "n_units": self.n_units,
            "model": None if self.probability is None else AT_BAR_MODEL,
            "why": self.why,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AtBar:
        return cls(
            str(data["rule"]),
            float(data["bar"]),
            bool(data["passed"]),
            None if data.get("probability") is None else float(data["probability"]),
            None if data.get("n_units") is None else int(data["n_units"]),
            data.get("why"),
        )

    def text(self) -> str:
        """One line: ``"at the bar: 53% would pass too (point rule, 30 units)"``."""
        outcome = "pass" if self.passed else "fail"
        if self.probability is None:
            return f"at the bar: {self.why}"
        return (
            f"at the bar: {100 * self.probability:.0f}% would {outcome} too "
            f"({self.rule} rule, {self.n_units} units)"
        )


@dataclass(frozen=True)
class RoundFact:
    """One stored round, as far as the rules need it."""

    number: int
    state: str  # one of ROUND_STATES
    passed: bool | None = None  # at close: bar and survey met


@dataclass(frozen=True)
class Assessment:
    """What a round's data say: ready to close?, the figures, proposed? and why not."""

    ready: bool
    waiting: tuple[str, ...]
    measure: Measure
    survey: Mapping[str, float | None]
    passed: bool
    proposed: bool
    reasons: tuple[str, ...]
    at_bar: AtBar | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "ready": self.ready,
            "waiting": list(self.waiting),
            "agreement": self.measure.to_dict(),
            "survey": dict(self.survey),
            "passed": self.passed,
            "proposed": self.proposed,
            "reasons": list(self.reasons),
            "at_bar": None if self.at_bar is None else self.at_bar.to_dict(),
        }


def _criterion_sums(df: pd.DataFrame, paired: set[str]) -> tuple[list[float], list[int]]:
    """Per criterion with a paired unit: the sum of its units' shares of agreeing pairs
    of ratings, and its number of such units (the clusters of the Wilson interval)."""
    d = df.loc[df["unit"].isin(paired)]
    cells = d.groupby(["unit", "value"]).size().rename("k").reset_index()
    per = cells.assign(pairs=cells["k"] * (cells["k"] - 1)).groupby("unit")["pairs"].sum()
    r = d.groupby("unit").size()
    share = (per / (r * (r - 1))).rename("share")
    crit = d.drop_duplicates("unit").set_index("unit")["criterion"]
    by = pd.DataFrame({"share": share, "criterion": crit.reindex(share.index)})
    g = by.groupby("criterion", sort=False)["share"]
    return [float(x) for x in g.sum()], [int(x) for x in g.size()]


def measure(ratings: Iterable[Rating], settings: Settings) -> Measure:
    """The agreement of a round's ratings with its interval over criteria (module docstring)."""
    rows = list(ratings)
    stat = settings.statistic
    if not rows:
        return Measure(stat, None, None, None, 0, 0, "no judgments by the reviewers")
    df = pd.DataFrame(
        {
            "unit": [f"{r.response}\x1f{r.criterion}" for r in rows],
            "rater": [r.reviewer for r in rows],
            "value": [float(r.value) for r in rows],
            "criterion": [r.criterion for r in rows],
        }
    )
    per_unit = df.groupby("unit")["rater"].nunique()
    paired = set(per_unit.index[per_unit >= 2])
    n_units = len(paired)
    n_criteria = int(df.loc[df["unit"].isin(paired), "criterion"].nunique())
    categories = sorted(set(df["value"]) | {0.0, 1.0})
    if stat in _WILSON_STATISTICS:
        return _wilson_measure(df, paired, categories, settings, n_units, n_criteria)
    if settings.n_boot == 0:
        point = getattr(co, stat)(df[["unit", "rater", "value"]], categories=categories)
        return Measure(stat, point.value, None, None, n_units, n_criteria, point.note)
    # (imported here: the bootstrap brings scipy, ≈ 0.2 s, which reading a benchmark's
    # rounds — gradercal.db.acceptance, on every dashboard — does not need)
    from gradercal.stats.bootstrap import DEFAULT_CI_METHOD, clustered_bootstrap

    res = clustered_bootstrap(
        df,
        "criterion",
        [stat],
        n_boot=settings.n_boot,
        ci=settings.ci,
        seed=settings.seed,
        method=DEFAULT_CI_METHOD,
        categories=categories,
    )[stat]
    method = None if res.ci_low is None else DEFAULT_CI_METHOD
    return Measure(stat, res.value, res.ci_low, res.ci_high, n_units, n_criteria, res.note, method)


def _wilson_measure(
    df: pd.DataFrame,
    paired: set[str],
    categories: list[float],
    settings: Settings,
    n_units: int,
    n_criteria: int,
) -> Measure:
    """Percent agreement or Bennett's S with the clustered Wilson interval."""
    stat = settings.statistic
    point = getattr(co, stat)(df[["unit", "rater", "value"]], categories=categories)
    if point.value is None:
        return Measure(stat, None, None, None, n_units, n_criteria, point.note)
    totals, sizes = _criterion_sums(df, paired)
    pa = sum(totals) / sum(sizes)
    # Bennett's S = (pa − 1/q)/(1 − 1/q): the interval of pa mapped through it
    pe = 0.0 if stat == "percent_agreement" else 1.0 / len(categories)
    if not abs((pa - pe) / (1.0 - pe) - point.value) <= 1e-9:
        raise RuntimeError(
            f"percent agreement from the criteria ({pa!r}) disagrees with {stat} ({point.value!r})"
        )
    if len(totals) < 2:
        why = "no interval: needs at least two clusters (criteria)"
        return Measure(stat, point.value, None, None, n_units, n_criteria, why)
    from gradercal.stats.intervals import clustered_wilson

    low, high, _, n_eff = clustered_wilson(totals, sizes, settings.ci)
    if settings.n_boot == 0:  # the point value only (a draft's preview)
        return Measure(stat, point.value, None, None, n_units, n_criteria, point.note, None, n_eff)
    note: str | None = None
    if n_criteria < FEW_CRITERIA:
        note = (
            f"only {n_criteria} criteria: the interval's coverage was checked from "
            f"{FEW_CRITERIA} criteria on"
        )
    return Measure(
        stat,
        point.value,
        (low - pe) / (1.0 - pe),
        (high - pe) / (1.0 - pe),
        n_units,
        n_criteria,
        note,
        WILSON_METHOD,
        n_eff,
    )


#: Simulated tasks behind an :class:`AtBar` probability (Monte-Carlo se ≤ 0.007).
AT_BAR_DRAWS = 5000


def task_design(ratings: Iterable[Rating]) -> tuple[tuple[int, ...], ...]:
    """Per criterion (first-seen order), the number of reviewers of each of its units
    rated at least twice: the structure :func:`at_bar` simulates."""
    raters: dict[tuple[str, str], set[str]] = {}
    for r in ratings:
        raters.setdefault((r.criterion, r.response), set()).add(r.reviewer)
    out: dict[str, list[int]] = {}
    for (criterion, _response), who in raters.items():
        if len(who) >= 2:
            out.setdefault(criterion, []).append(len(who))
    return tuple(tuple(v) for v in out.values())


@functools.lru_cache(maxsize=1024)
def _pass_probability(
    design: tuple[tuple[int, ...], ...], bar: float, rule: str, ci: float, seed: int
) -> float:
    """P(the agreement test passes) for a task of this design whose true percent
    agreement is ``bar`` (see :func:`at_bar`). Cached: the tasks of a benchmark share a
    few designs (criteria, responses, reviewers)."""
    import numpy as np
    from scipy.special import stdtrit  # type: ignore[import-untyped, unused-ignore]

    if bar <= 0.5:  # binary verdicts never agree less than 1/2 on average
        return 1.0
    err = (1.0 - math.sqrt(min(2.0 * bar - 1.0, 1.0))) / 2.0
    rng = np.random.default_rng(seed)
    k = len(design)
    sizes = np.array([len(c) for c in design], dtype=np.float64)
    r = np.array([x for c in design for x in c], dtype=np.int64)
    crit = np.repeat(np.arange(k), [len(c) for c in design])
    wrong = rng.binomial(r, err, size=(AT_BAR_DRAWS, len(r)))
    share = (wrong * (wrong - 1) + (r - wrong) * (r - wrong - 1)) / (r * (r - 1))
    onehot = np.zeros((len(r), k))
    onehot[np.arange(len(r)), crit] = 1.0
    totals = share @ onehot  # (draws, criteria): each criterion's sum of unit agreement
    n = float(sizes.sum())
    p = totals.sum(axis=1) / n
    tol = 1e-12
    if rule == "point":
        return float(np.mean(p >= bar - tol))
    v0 = np.sum((totals - p[:, None] * sizes) ** 2, axis=1) / (n * n)
    pq = p * (1.0 - p)
    safe = np.where((v0 > 0) & (pq > 0), v0, 1.0)
    n_eff = np.where((v0 > 0) & (pq > 0), np.clip(pq / safe, 1.0, n), n) * (k - 1.0) / k
    q = float(stdtrit(k - 1.0, (1.0 + ci) / 2.0))
    a = q * q / n_eff
    low = ((p + a / 2.0) - q * np.sqrt(pq / n_eff + a / (4.0 * n_eff))) / (1.0 + a)
    return float(np.mean(low >= bar - tol))


def at_bar(
    design: Sequence[Sequence[int]], statistic: str, settings: Settings, passed: bool
) -> AtBar:
    """How often a task exactly at the bar would pass (``passed``) or fail the agreement
    test under the settings' rule.

    The model: ``AT_BAR_DRAWS`` simulated tasks with this task's criteria, units and
    reviewers per unit (``design``, :func:`task_design`), met / not met verdicts, every
    reviewer wrong with the same probability ``e`` on every unit, ``(1 − e)² + e² = bar``
    (true percent agreement = the bar); each is measured and judged as a round is
    (point estimate, or the clustered Wilson interval's lower end). Seeded by the
    settings' ``seed``. Only for percent agreement, with two criteria or more.
    """
    rule, bar = settings.rule, float(settings.bar)
    if statistic != "percent_agreement":
        return AtBar(rule, bar, passed, None, None, "computed for percent agreement only")
    if len(design) < 2:
        return AtBar(rule, bar, passed, None, None, "needs two criteria with units rated twice")
    shape = tuple(tuple(int(x) for x in c) for c in design)
    p_pass = _pass_probability(shape, bar, rule, float(settings.ci), settings.seed)
    n_units = sum(len(c) for c in design)
    return AtBar(rule, bar, passed, p_pass if passed else 1.0 - p_pass, n_units)


def survey_means(reviewers: Iterable[ReviewerFact]) -> dict[str, float | None]:
    """Mean answer per survey statement over the reviewers who answered it (None: nobody)."""
    facts = list(reviewers)
    out: dict[str, float | None] = {}
    for dim in _DIMENSIONS:
        answers = [f.survey.get(dim) for f in facts]
        given = [int(a) for a in answers if a is not None]
        out[dim] = sum(given) / len(given) if given else None
    return out


_fmt = trimmed


def assess(
    reviewers: Sequence[ReviewerFact],
    ratings: Iterable[Rating],
    settings: Settings,
    *,
    number: int,
    earlier: Sequence[RoundFact] = (),
) -> Assessment:
    """Judge round ``number`` of a task on its facts (see the module docstring).

    Args:
        reviewers: The round's reviewers.
        ratings: Their verdicts on the task's judgment criteria.
        settings: The benchmark's acceptance settings.
        number: The round's number.
        earlier: The task's rounds before this one (any order).
    """
    waiting: list[str] = []
    if not reviewers:
        waiting.append("no reviewer is assigned to the task")
    for f in sorted(reviewers, key=lambda f: f.reviewer):
        if f.open_items:
            waiting.append(f"{f.reviewer}: {f.open_items} response(s) not graded")
        missing = [d for d in _DIMENSIONS if f.survey.get(d) is None]
        if missing:
            waiting.append(f"{f.reviewer}: survey not answered ({', '.join(missing)})")
    rows = list(ratings)
    m = measure(rows, settings)
    means = survey_means(reviewers)
    reasons: list[str] = []
    label = statistic_label(settings.statistic)
    if m.value is None:
        reasons.append(f"{label} undefined: {m.note}")
    elif settings.rule == "point" and m.value < settings.bar:
        reasons.append(f"{label} {_fmt(m.value)} below the bar {_fmt(settings.bar)}")
    elif settings.rule == "interval" and m.low is None:
        reasons.append(
            f"{label} {_fmt(m.value)} has no interval ({m.note or 'n_boot is 0'}): the "
            "interval rule needs its lower end"
        )
    elif settings.rule == "interval" and m.low is not None and m.low < settings.bar:
        reasons.append(
            f"{label} {_fmt(m.value)}: the interval's lower end {_fmt(m.low)} is below the "
            f"bar {_fmt(settings.bar)}"
        )
    bar_test = None
    if m.value is not None:
        bar_test = at_bar(task_design(rows), settings.statistic, settings, not reasons)
    for dim, threshold in settings.survey_min.items():
        mean = means.get(dim)
        if mean is None:
            reasons.append(f"survey {dim}: no answers")
        elif mean < threshold:
            reasons.append(f"survey {dim}: mean {_fmt(mean)} below {_fmt(threshold)}")
    passed = not reasons
    needed = settings.min_rounds - 1
    if number < settings.min_rounds:
        reasons.append(f"round {number} of at least {settings.min_rounds}")
    elif needed:
        prior = sorted(
            (r for r in earlier if r.number < number and r.state != "open"),
            key=lambda r: r.number,
        )[-needed:]
        if len(prior) < needed or not all(r.passed for r in prior):
            reasons.append(f"the {needed} round(s) before this one did not all pass the bar")
    if waiting:
        reasons.insert(0, "round not ready to close")
    return Assessment(
        ready=not waiting,
        waiting=tuple(waiting),
        measure=m,
        survey=means,
        passed=passed,
        proposed=not reasons,
        reasons=tuple(reasons),
        at_bar=bar_test,
    )


def task_status(rounds: Sequence[RoundFact]) -> str:
    """The task's status from its rounds (see the module docstring)."""
    if not rounds:
        return "draft"
    last = max(rounds, key=lambda r: r.number)
    if last.state in ("open", "closed"):
        return "in review"
    return {"needs_revision": "needs revision"}.get(last.state, last.state)


def check_action(action: str, last: RoundFact | None, *, ready: bool, force: bool) -> str | None:
    """Why ``action`` is refused on a task whose last round is ``last`` (None: allowed).

    ``ready``: the open round is ready to close / the closed round is proposed (for
    ``close``, ``accept``). ``force`` lifts the refusals that are judgements (not ready,
    not proposed, no round yet), never the ones that would make the history inconsistent.
    """
    if action not in ACTIONS:
        raise ValueError(f"unknown action {action!r}")
    state = None if last is None else last.state
    n = 0 if last is None else last.number
    if action == "open":
        if state == "open":
            return f"round {n} is already open"
        if state == "closed":
            return None
        if state in ("accepted", "rejected"):
            return f"the task is {state}: reopen it first (tasks reopen ID --note …)"
        return None
    if action == "close":
        if state != "open":
            return (
                "no open round to close"
                if last is None or state != "closed"
                else (f"round {n} is already closed")
            )
        if not ready and not force:
            return f"round {n} is not ready to close (see `gradercal tasks`); --force closes it"
        return None
    if action == "reopen":
        if last is None:
            return "the task is a draft: nothing to send back (tasks open ID starts round 1)"
        if state == "open":
            return f"round {n} is still open: close it first (tasks close ID)"
        if state == "needs_revision":
            return f"round {n} was already sent back"
        return None
    # accept / reject
    if state in ("accepted", "rejected"):
        return f"the task is already {state}"
    if last is None and not force:
        return "the task has no closed review round; --force decides without one"
    if state == "needs_revision" and not force:
        return f"round {n} was sent back for revision; open the next round, or --force"
    if state == "open" and not force:
        return f"round {n} is still open: close it first (tasks close ID), or --force"
    if action == "accept" and state == "closed" and not ready and not force:
        return f"round {n} is not proposed for acceptance (see `gradercal tasks`); --force"
    return None


#: Columns of :func:`round_table`.
ROUND_COLUMNS = (
    "task_id",
    "workflow",
    "domain",
    "status",
    "round",
    "round_state",
    "statistic",
    "agreement",
    "agreement_low",
    "agreement_high",
)


def round_table(
    tasks: Sequence[tuple[Any, ...]], rounds: Sequence[tuple[Any, ...]]
) -> pd.DataFrame:
    """Every task's rounds as a long frame (the report's acceptance section).

    ``tasks``: ``(task row id, task id, workflow, domain)`` in the benchmark's order;
    ``rounds``: ``(task row id, number, state, statistic, agreement, agreement_low,
    agreement_high)`` in number order (``gradercal.db.dashboard_data.round_rows``). One row
    per (task, round), a draft task one row with ``round`` None; ``status`` is the task's
    status (:func:`task_status`), ``round_state`` the round's.
    """
    mine: dict[int, list[tuple[Any, ...]]] = {}
    for r in rounds:
        mine.setdefault(int(r[0]), []).append(r)
    records: list[tuple[Any, ...]] = []
    for pk, ext, workflow, domain in tasks:
        own = mine.get(int(pk), [])
        status = task_status([RoundFact(int(r[1]), str(r[2])) for r in own])
        if not own:
            records.append((ext, workflow, domain, status, None, None, None, None, None, None))
        for _task, number, state, statistic, agreement, low, high in own:
            records.append(
                (ext, workflow, domain, status, number, state, statistic, agreement, low, high)
            )
    floats = ("agreement", "agreement_low", "agreement_high")
    columns = list(zip(*records, strict=True)) if records else [()] * len(ROUND_COLUMNS)
    return pd.DataFrame(
        {
            name: pd.Series(
                [math.nan if v is None else v for v in values] if name in floats else values,
                dtype="float64" if name in floats else object,
            )
            for name, values in zip(ROUND_COLUMNS, columns, strict=True)
        }
    )
