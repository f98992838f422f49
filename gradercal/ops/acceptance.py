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
:mod:`gradercal.stats` on the units rated at least twice. Its interval is a **percentile
bootstrap over criteria**: ``n_boot`` resamples of the task's criteria with replacement,
each drawn criterion bringing all its responses (the ratings of one criterion are
correlated), the plain ``(1 ∓ ci)/2`` quantiles of the resampled values. With one
criterion there is no interval (the note says so); with fewer than ten the note warns it
is unreliable.

**Proposal.** A closed round is *proposed for acceptance* when

1. the agreement value (the point estimate, not its lower bound) is at least ``bar``;
2. every survey statement's mean answer is at least its threshold (default 4 = "agree"
   on the 5-point scale) — a statement nobody answered fails;
3. the round's number is at least ``min_rounds`` and the ``min_rounds − 1`` closed rounds
   before it passed 1 and 2 as well (LifeSciBench-style: two rounds of ≥ 90 %).

Otherwise :attr:`Assessment.reasons` says, one line each, what is missing.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from gradercal.model import REVIEW_DIMENSIONS
from gradercal.stats import coefficients as co
from gradercal.stats.bootstrap import clustered_bootstrap
from gradercal.stats.registry import STATISTICS as _REGISTRY

__all__ = [
    "ACTIONS",
    "ROUND_STATES",
    "STATISTICS",
    "TASK_STATUSES",
    "Assessment",
    "Measure",
    "Rating",
    "ReviewerFact",
    "RoundFact",
    "Settings",
    "assess",
    "check_action",
    "measure",
    "survey_means",
    "task_status",
]

#: Task statuses, in the order the tables list them.
TASK_STATUSES: tuple[str, ...] = ("draft", "in review", "needs revision", "accepted", "rejected")
#: States of one round row.
ROUND_STATES: tuple[str, ...] = ("open", "closed", "accepted", "rejected", "needs_revision")
#: What a coordinator can do to a task.
ACTIONS: tuple[str, ...] = ("open", "close", "accept", "reject", "reopen")
#: The statistics an acceptance bar may use (multi-rater coefficients of gradercal.stats).
STATISTICS: tuple[str, ...] = (
    "percent_agreement",
    "gwet_ac1",
    "krippendorff_alpha",
    "fleiss_kappa",
    "bennett_s",
    "light_kappa",
    "conger_kappa",
)
_DIMENSIONS = tuple(d.key for d in REVIEW_DIMENSIONS)


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

    def to_dict(self) -> dict[str, Any]:
        return {
            "bar": float(self.bar),
            "statistic": self.statistic,
            "min_rounds": self.min_rounds,
            "survey_min": {k: float(v) for k, v in self.survey_min.items()},
            "n_boot": self.n_boot,
            "ci": float(self.ci),
            "seed": self.seed,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Settings:
        """Settings from stored JSON (missing keys take the defaults; unknown keys refused)."""
        known = {"bar", "statistic", "min_rounds", "survey_min", "n_boot", "ci", "seed"}
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
    """A round's agreement: value and interval (None with ``note`` when undefined)."""

    statistic: str
    value: float | None
    low: float | None
    high: float | None
    n_units: int
    n_criteria: int
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "statistic": self.statistic,
            "value": self.value,
            "ci": None if self.low is None or self.high is None else [self.low, self.high],
            "n_units": self.n_units,
            "n_criteria": self.n_criteria,
            "note": self.note,
        }


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

    def to_dict(self) -> dict[str, Any]:
        return {
            "ready": self.ready,
            "waiting": list(self.waiting),
            "agreement": self.measure.to_dict(),
            "survey": dict(self.survey),
            "passed": self.passed,
            "proposed": self.proposed,
            "reasons": list(self.reasons),
        }


def measure(ratings: Iterable[Rating], settings: Settings) -> Measure:
    """The agreement of a round's ratings with its percentile bootstrap over criteria."""
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
    if settings.n_boot == 0:
        point = getattr(co, stat)(df[["unit", "rater", "value"]], categories=categories)
        return Measure(stat, point.value, None, None, n_units, n_criteria, point.note)
    res = clustered_bootstrap(
        df,
        "criterion",
        [stat],
        n_boot=settings.n_boot,
        ci=settings.ci,
        seed=settings.seed,
        method="percentile",
        categories=categories,
    )[stat]
    return Measure(stat, res.value, res.ci_low, res.ci_high, n_units, n_criteria, res.note)


def survey_means(reviewers: Iterable[ReviewerFact]) -> dict[str, float | None]:
    """Mean answer per survey statement over the reviewers who answered it (None: nobody)."""
    facts = list(reviewers)
    out: dict[str, float | None] = {}
    for dim in _DIMENSIONS:
        answers = [f.survey.get(dim) for f in facts]
        given = [int(a) for a in answers if a is not None]
        out[dim] = sum(given) / len(given) if given else None
    return out


def _fmt(x: float) -> str:
    return f"{x:.3f}".rstrip("0").rstrip(".") if math.isfinite(x) else str(x)


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
    m = measure(ratings, settings)
    means = survey_means(reviewers)
    reasons: list[str] = []
    label = statistic_label(settings.statistic)
    if m.value is None:
        reasons.append(f"{label} undefined: {m.note}")
    elif m.value < settings.bar:
        reasons.append(f"{label} {_fmt(m.value)} below the bar {_fmt(settings.bar)}")
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
