"""The calibrated judge-prompt package: what a team ships after checking its judge.

A :class:`PromptPackage` bundles, for one judge grader:

* **prompt** — the judge's system and user templates, extended with the rubric guidance
  (the ``guidance`` option, rendered per request into ``{{guidance}}``) and few-shot
  examples; its content hash is the **prompt version** (sha256 of the canonical JSON of
  templates, examples and options, :attr:`PromptTemplate.content_hash`), the id the
  database stores it under;
* **guidance** — rubric guidance distilled from the experts, deterministically (no
  LLM): the notes of "criterion unclear" flags and of adjudications, whitespace-
  normalised, deduplicated case-insensitively, grouped per criterion with counts and
  authors; per criterion tag, the counts of adjudicated items where the judge said
  met / not met against the final verdict and, when one direction dominates, one rule
  (:func:`distill_guidance`);
* **examples** — few-shot examples chosen from adjudicated disagreements
  (:func:`select_examples`): balanced met / not met, spread over criterion tags,
  deterministic for a seed, and drawn only from the tasks of the calibration split
  (:func:`split_tasks`), never from a held-out task (adjudication notes and the
  per-tag counts are limited to those tasks too: they reveal final verdicts);
* **decision** — the threshold or score mapping of the judge's calibration
  (:func:`decision_from_calibration`);
* **card** — the agreement card: held-out agreement with the experts (with CIs) from the
  calibration — its test figures on the tasks it held out (``gradercal calibrate
  --holdout``), which nothing in the package has seen, or, for a calibration without
  held-out tasks, its out-of-fold figures with a plain warning that the examples may
  come from the same tasks — judge-vs-experts agreement on all data, the expert–expert
  range, the alt-test, leniency, provenance with the split (:func:`agreement_card`).

Renderers: :func:`to_json` (canonical, versioned by ``format_version``; validated by
``gradercal/schemas/prompt-package.schema.json``), :func:`to_markdown` (for people),
:func:`to_inspect` (a scorer module for Inspect AI), :func:`to_promptfoo` (an
``llm-rubric`` configuration). :func:`package_from_dict` reads JSON back and refuses a
package that fails the schema (with the JSON path) or whose hashes do not match.

Core module: no Qt, no SQL; the database side is :mod:`gradercal.db.prompt_sources`.
"""

from __future__ import annotations

import functools
import json
import math
import random
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import resources
from typing import Any, Literal

from gradercal.errors import GradercalError, Problem, ValidationError
from gradercal.frames import Frames
from gradercal.judge.prompts import PromptTemplate, normalize_text, placeholders, prompt_from_dict
from gradercal.model import stable_hash

__all__ = [
    "FORMAT_VERSION",
    "NO_HOLDOUT_NOTE",
    "AdjudicatedItem",
    "ExpertNote",
    "PackageFormat",
    "PromptPackage",
    "agreement_card",
    "build_package",
    "decision_from_calibration",
    "distill_guidance",
    "guidance_option",
    "has_held_out_figures",
    "load_schema",
    "package_from_dict",
    "render",
    "select_examples",
    "split_tasks",
    "to_inspect",
    "to_json",
    "to_markdown",
    "to_promptfoo",
    "validate_package",
    "with_guidance_slot",
]

#: Version of the package format; readers refuse other versions.
FORMAT_VERSION = 1
PackageFormat = Literal["json", "markdown", "inspect", "promptfoo"]
#: Default number of few-shot examples.
DEFAULT_EXAMPLES = 6
#: Fewest adjudicated judge errors in one direction before a tag gets a rule.
MIN_DIRECTION = 2
#: The block inserted into a user template that lacks ``{{guidance}}``.
GUIDANCE_BLOCK = (
    "<guidance>\n"
    "Rubric guidance from the expert graders (follow it where it applies):\n"
    "{{guidance}}\n"
    "</guidance>"
)
_LENIENT_RULE = (
    "Answer true only when the response clearly does what the criterion describes: "
    "the experts overruled a 'met' verdict of the judge on {k} of {n} adjudicated items."
)
_STRICT_RULE = (
    "Do not ask for more than the criterion says: give it when the substance is there, "
    "even in other words; the experts overruled a 'not met' verdict of the judge on {k} "
    "of {n} adjudicated items."
)


# ---------------------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ExpertNote:
    """One thing an expert wrote about a criterion.

    Attributes:
        source: ``"unclear"`` (a grader flagged the criterion unclear, with a note) or
            ``"adjudication"`` (an adjudicator's note on the final verdict).
        task_id, criterion_id, response_id: Where (external ids).
        criterion: The criterion's text.
        tags: The criterion's tags.
        author: The grader or adjudicator.
        text: The note.
        verdict: The adjudicated verdict (adjudication) or the grader's (unclear).
        judge_met: The judge's verdict on the same item (None: no verdict).
    """

    source: Literal["unclear", "adjudication"]
    task_id: str
    criterion_id: str
    response_id: str
    criterion: str
    tags: tuple[str, ...]
    author: str
    text: str
    verdict: bool | None = None
    judge_met: bool | None = None


@dataclass(frozen=True)
class AdjudicatedItem:
    """A (response, criterion) pair with a final verdict, and what everyone said.

    Attributes:
        task_id, response_id, criterion_id: External ids.
        criterion: The criterion's text.
        points: Its points.
        tags: Its tags.
        task_prompt: The task's prompt.
        response: The response's text.
        met: The adjudicated (final) verdict.
        adjudicator: Who decided.
        note: The adjudicator's note.
        experts: ``{grader: met}`` of the human graders (None: unanswered).
        rationales: ``{grader: rationale}`` of the human graders who wrote one.
        judge_met: The judge's verdict (None: none).
    """

    task_id: str
    response_id: str
    criterion_id: str
    criterion: str
    points: int
    tags: tuple[str, ...]
    task_prompt: str
    response: str
    met: bool
    adjudicator: str = ""
    note: str | None = None
    experts: Mapping[str, bool | None] = field(default_factory=dict)
    rationales: Mapping[str, str] = field(default_factory=dict)
    judge_met: bool | None = None

    @property
    def judge_wrong(self) -> bool:
        """The judge gave a verdict that the adjudication overruled."""
        return self.judge_met is not None and self.judge_met != self.met

    @property
    def disagreement(self) -> bool:
        """Experts disagreed among themselves, or someone (judge included) with the final."""
        said = {v for v in self.experts.values() if v is not None}
        return len(said) > 1 or self.judge_wrong or (bool(said) and said != {self.met})

    def explanation(self) -> str:
        """The answer's explanation: the adjudicator's note, else an agreeing expert's."""
        if self.note and self.note.strip():
            return normalize_text(self.note)
        for grader in sorted(self.rationales):
            if self.experts.get(grader) == self.met and self.rationales[grader].strip():
                return normalize_text(self.rationales[grader])
        return f"The experts' final verdict: the criterion is {'' if self.met else 'not '}met."


# ---------------------------------------------------------------------------------------
# Guidance
# ---------------------------------------------------------------------------------------


def _criterion_key(task_id: str, criterion_id: str) -> str:
    return f"{task_id}/{criterion_id}"


def distill_guidance(
    notes: Iterable[ExpertNote], adjudicated: Iterable[AdjudicatedItem] = ()
) -> dict[str, Any]:
    """Group, deduplicate and count the experts' notes; derive per-tag rules.

    Per criterion (``task_id/criterion_id``): the distinct notes (compared
    case-insensitively after whitespace normalisation; the first spelling is kept) with
    how often each was written, by whom and from which sources; how many unclear flags
    and adjudications the criterion has.

    Per tag: over the adjudicated items whose criterion has the tag and that the judge
    rated, ``judge_overruled_met`` (judge met, final not met) and
    ``judge_overruled_not_met`` (the reverse). When one direction has at least
    :data:`MIN_DIRECTION` items and at least twice the other, the tag gets one rule
    (answer true only when clearly met / do not ask for more than the criterion says).
    The same test over all adjudicated items gives the general rule.

    Returns:
        ``{"criteria": [...], "tags": [...], "general": [...]}`` in a stable order
        (criteria by task and criterion id, tags by name).
    """
    per_criterion: dict[str, dict[str, Any]] = {}
    for n in sorted(notes, key=lambda x: (x.task_id, x.criterion_id, x.source, x.author)):
        text = normalize_text(n.text)
        if not text:
            continue
        key = _criterion_key(n.task_id, n.criterion_id)
        entry = per_criterion.setdefault(
            key,
            {
                "task_id": n.task_id,
                "criterion_id": n.criterion_id,
                "criterion": normalize_text(n.criterion),
                "tags": list(dict.fromkeys(n.tags)),
                "n_unclear": 0,
                "n_adjudication_notes": 0,
                "_notes": {},
            },
        )
        entry["n_unclear" if n.source == "unclear" else "n_adjudication_notes"] += 1
        slot = entry["_notes"].setdefault(
            text.casefold(),
            {"text": text, "count": 0, "authors": set(), "sources": set(), "responses": set()},
        )
        slot["count"] += 1
        slot["authors"].add(n.author)
        slot["sources"].add(n.source)
        slot["responses"].add(n.response_id)
    criteria = []
    for key in sorted(per_criterion):
        entry = per_criterion[key]
        raw = entry.pop("_notes")
        entry["notes"] = [
            {
                "text": s["text"],
                "count": s["count"],
                "authors": sorted(s["authors"]),
                "sources": sorted(s["sources"]),
                "n_responses": len(s["responses"]),
            }
            for s in sorted(raw.values(), key=lambda s: (-s["count"], s["text"].casefold()))
        ]
        criteria.append(entry)
    items = [a for a in adjudicated if a.judge_met is not None]
    tag_counts: dict[str, Counter[str]] = {}
    for a in items:
        for tag in dict.fromkeys(a.tags):
            c = tag_counts.setdefault(tag, Counter())
            c["n"] += 1
            if a.judge_met and not a.met:
                c["lenient"] += 1
            elif a.met and not a.judge_met:
                c["strict"] += 1
    tags = []
    for tag in sorted(tag_counts):
        c = tag_counts[tag]
        tags.append(
            {
                "tag": tag,
                "n_adjudicated": c["n"],
                "judge_overruled_met": c["lenient"],
                "judge_overruled_not_met": c["strict"],
                "rules": _rules(c["lenient"], c["strict"], c["n"]),
            }
        )
    total = Counter(
        "lenient" if a.judge_met and not a.met else "strict" if a.met and not a.judge_met else "ok"
        for a in items
    )
    general = _rules(total["lenient"], total["strict"], len(items))
    return {"criteria": criteria, "tags": tags, "general": general}


def _rules(lenient: int, strict: int, n: int) -> list[str]:
    if lenient >= MIN_DIRECTION and lenient >= 2 * strict:
        return [_LENIENT_RULE.format(k=lenient, n=n)]
    if strict >= MIN_DIRECTION and strict >= 2 * lenient:
        return [_STRICT_RULE.format(k=strict, n=n)]
    return []


def guidance_option(guidance: Mapping[str, Any]) -> dict[str, Any]:
    """The ``guidance`` prompt option (what the judge is sent) from distilled guidance.

    Criterion notes are keyed by criterion text; a note written more than once says so.
    Empty parts are left out; no guidance at all gives ``{}``.
    """
    crit: dict[str, list[str]] = {}
    for c in guidance.get("criteria", []):
        lines = crit.setdefault(c["criterion"], [])
        for note in c["notes"]:
            suffix = f" (noted {note['count']}×)" if note["count"] > 1 else ""
            if note["text"] + suffix not in lines:
                lines.append(note["text"] + suffix)
    tags = {t["tag"]: list(t["rules"]) for t in guidance.get("tags", []) if t["rules"]}
    out: dict[str, Any] = {}
    if guidance.get("general"):
        out["general"] = list(guidance["general"])
    if tags:
        out["tags"] = tags
    if crit:
        out["criteria"] = crit
    return out


def with_guidance_slot(user: str) -> str:
    """``user`` with a ``{{guidance}}`` block after its criterion (if it has none)."""
    if "guidance" in placeholders(user):
        return user
    closing = user.rfind("</criterion>")
    if closing >= 0:
        end = closing + len("</criterion>")
        return user[:end] + "\n\n" + GUIDANCE_BLOCK + user[end:]
    marker = user.find("# Instructions")
    if marker >= 0:
        return user[:marker] + GUIDANCE_BLOCK + "\n\n" + user[marker:]
    return user.rstrip("\n") + "\n\n" + GUIDANCE_BLOCK


# ---------------------------------------------------------------------------------------
# Few-shot examples
# ---------------------------------------------------------------------------------------


def split_tasks(split: Mapping[str, Any] | None) -> tuple[frozenset[str], frozenset[str]]:
    """(calibration tasks, held-out tasks) of a saved calibration's ``split``.

    Calibration tasks are the keys of ``split["folds"]`` (or the list
    ``split["calibration_tasks"]``); held-out tasks are those listed in
    ``split["held_out"]`` (or ``split["test_tasks"]``) plus the tasks of the folds in
    ``split["held_out_folds"]``. A task that is both is held out.
    """
    if not split:
        return frozenset(), frozenset()
    folds = dict(split.get("folds") or {})
    calib = {str(t) for t in (split.get("calibration_tasks") or folds)}
    held = {str(t) for t in (split.get("held_out") or split.get("test_tasks") or [])}
    held_folds = {int(f) for f in (split.get("held_out_folds") or [])}
    held |= {str(t) for t, f in folds.items() if int(f) in held_folds}
    return frozenset(calib - held), frozenset(held)


def select_examples(
    items: Iterable[AdjudicatedItem],
    n: int,
    *,
    seed: int = 0,
    allowed_tasks: Iterable[str] | None = None,
) -> list[AdjudicatedItem]:
    """Few-shot examples from adjudicated disagreements.

    Only items that are disagreements (:attr:`AdjudicatedItem.disagreement`) of an
    allowed task qualify. Balanced: ``n // 2`` of each final verdict (plus one of the
    class with more candidates when ``n`` is odd), fewer of both when a class runs short
    (never more than one more of one class than of the other). Within a class, picks are
    greedy: first the candidate adding the most tags not yet covered, then one from a
    task not yet used, then a judge error before an agreement, then one with an
    adjudicator's note; remaining ties by a random order drawn from ``seed``. Classes
    alternate (not met first) so both share the tag coverage.

    Returns:
        The examples, in pick order.
    """
    allowed = None if allowed_tasks is None else set(allowed_tasks)
    pool = sorted(
        (
            a
            for a in items
            if a.disagreement and (allowed is None or a.task_id in allowed) and a.response
        ),
        key=lambda a: (a.task_id, a.response_id, a.criterion_id),
    )
    order = list(range(len(pool)))
    random.Random(seed).shuffle(order)
    rank = {id(pool[i]): r for r, i in enumerate(order)}
    by_class = {True: [a for a in pool if a.met], False: [a for a in pool if not a.met]}
    half = n // 2
    take = {True: min(half, len(by_class[True])), False: min(half, len(by_class[False]))}
    take[True] = take[False] = min(take[True], take[False])
    if n % 2 == 1 or take[True] < half:
        # one extra of the richer class keeps |met − not met| ≤ 1
        spare = {v: len(by_class[v]) - take[v] for v in (True, False)}
        richer = max((False, True), key=lambda v: spare[v])
        if spare[richer] > 0 and sum(take.values()) < n:
            take[richer] += 1
    covered: set[str] = set()
    used_tasks: set[str] = set()
    picked: list[AdjudicatedItem] = []
    remaining = {v: list(by_class[v]) for v in (True, False)}
    counts = {True: 0, False: 0}
    turn = False
    while counts[True] < take[True] or counts[False] < take[False]:
        if counts[turn] >= take[turn]:
            turn = not turn
        cands = remaining[turn]
        best = min(
            cands,
            key=lambda a: (
                -len(set(a.tags) - covered),
                a.task_id in used_tasks,
                not a.judge_wrong,
                not (a.note and a.note.strip()),
                rank[id(a)],
            ),
        )
        cands.remove(best)
        picked.append(best)
        covered |= set(best.tags)
        used_tasks.add(best.task_id)
        counts[turn] += 1
        turn = not turn
    return picked


def _few_shot(item: AdjudicatedItem) -> dict[str, Any]:
    return {
        "task_prompt": item.task_prompt,
        "response": item.response,
        "criterion": item.criterion,
        "points": int(item.points),
        "criterion_tags": list(item.tags),
        "criteria_met": bool(item.met),
        "explanation": item.explanation(),
    }


def _example_record(item: AdjudicatedItem) -> dict[str, Any]:
    return {
        "task_id": item.task_id,
        "response_id": item.response_id,
        "criterion_id": item.criterion_id,
        "criteria_met": bool(item.met),
        "tags": list(item.tags),
        "adjudicator": item.adjudicator,
        "experts": {k: item.experts[k] for k in sorted(item.experts)},
        "judge_met": item.judge_met,
        "judge_wrong": item.judge_wrong,
    }


# ---------------------------------------------------------------------------------------
# Decision rule and agreement card
# ---------------------------------------------------------------------------------------


def decision_from_calibration(
    calibration: Mapping[str, Any] | None, pass_threshold: float
) -> dict[str, Any]:
    """The decision rule of a saved calibration (``SavedCalibration.to_dict(full=True)``).

    ``rule`` is ``"verdict"`` (no calibration: the judge's verdict is used as given),
    ``"threshold"`` (met iff P(met) ≥ threshold, per tag when ``group_thresholds``
    names the criterion's first tag), ``"leniency"`` (a verdict counts as the
    probability ``leniency[tag][verdict]``), ``"isotonic"`` or ``"platt"`` (the judge's
    rubric score of a response mapped by the fitted curve).
    """
    if not calibration:
        return {
            "rule": "verdict",
            "calibration": None,
            "pass_threshold": float(pass_threshold),
            "description": "No calibration: the judge's met / not met verdict is used as is.",
        }
    params = dict(calibration.get("params") or {})
    method = str(calibration.get("method") or params.get("method"))
    keep = {
        "threshold": ("threshold", "group_thresholds", "tag_prefix", "metric"),
        "leniency": ("threshold", "group_thresholds", "leniency", "tag_prefix"),
        "isotonic": ("x_thresholds", "y_thresholds", "y_low", "y_high"),
        "platt": ("coef", "intercept", "constant", "y_low", "y_high"),
    }.get(method, ())
    out: dict[str, Any] = {
        "rule": method,
        "calibration": {
            "id": calibration.get("id"),
            "method": method,
            "version": calibration.get("version"),
            "active": calibration.get("active"),
            "created_at": calibration.get("created_at"),
            "level": (calibration.get("metrics") or {}).get("level"),
        },
        "pass_threshold": float(pass_threshold),
        "params": {k: params.get(k) for k in keep if k in params},
        "groups": list(params.get("groups") or []),
    }
    if method == "threshold":
        desc = f"met iff P(met) ≥ {params.get('threshold')}"
        if params.get("group_thresholds"):
            desc += " (per tag: " + ", ".join(
                f"{g} {t:.4g}" for g, t in params["group_thresholds"].items()
            )
            desc += ")"
        desc += "; P(met) is the judge's confidence in 'met' (1 or 0 when it gives no confidence)."
    elif method == "leniency":
        desc = "each verdict counts as the share of such verdicts the experts call met, per tag."
    elif method in ("isotonic", "platt"):
        desc = f"the judge's rubric score of a response is mapped by the fitted {method} curve."
    else:
        desc = f"calibration method {method}."
    out["description"] = desc
    return out


def _fig(block: Mapping[str, Any] | None, names: Sequence[str]) -> dict[str, Any]:
    if not block:
        return {}
    return {k: dict(block[k]) for k in names if k in block}


_CRITERION_FIGURES = ("cohen_kappa", "percent_agreement", "balanced_f1", "leniency_bias")
_RESPONSE_FIGURES = ("mean_score_bias", "mae", "pass_kappa", "pass_agreement", "pass_rate_bias")


#: Said on the card and printed by ``export-prompt`` when the calibration holds no task out.
NO_HOLDOUT_NOTE = (
    "the calibration holds no task out: its figures are out-of-fold figures on the same "
    "tasks the few-shot examples and adjudication notes come from, so they may overstate "
    "this prompt's agreement; run `gradercal calibrate --judge NAME --holdout 0.25` and "
    "export again"
)


def has_held_out_figures(calibration: Mapping[str, Any] | None) -> bool:
    """Whether a saved calibration holds tasks out and has its test figures on them."""
    if not calibration:
        return False
    held = split_tasks(calibration.get("split"))[1]
    return bool(held) and bool((calibration.get("metrics") or {}).get("test"))


def _held_out_block(calibration: Mapping[str, Any]) -> dict[str, Any]:
    """The card's ``held_out`` block of a saved calibration (see :func:`agreement_card`)."""
    m = dict(calibration.get("metrics") or {})
    split = dict(calibration.get("split") or {})
    calib_tasks, held_tasks = split_tasks(split)

    def figures(source: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "n_tasks": source.get("n_tasks"),
            "n_items": source.get("n_items"),
            "n_responses": source.get("n_responses"),
            "criterion": {
                "raw": _fig((source.get("criterion") or {}).get("before"), _CRITERION_FIGURES),
                "calibrated": _fig(
                    (source.get("criterion") or {}).get("after"), _CRITERION_FIGURES
                ),
            },
            "response": {
                "raw": _fig((source.get("response") or {}).get("before"), _RESPONSE_FIGURES),
                "calibrated": _fig((source.get("response") or {}).get("after"), _RESPONSE_FIGURES),
            },
        }

    folds = (
        f"{split.get('scheme', '?')} by {split.get('group', 'task')}, "
        f"{split.get('n_splits', '?')} folds"
    )
    test = m.get("test")
    block: dict[str, Any] = {
        "source": (
            f"calibration {calibration.get('id')} ({calibration.get('method')} "
            f"version {calibration.get('version')})"
        ),
        "split": {
            "n_calibration_tasks": len(calib_tasks),
            "n_held_out_tasks": len(held_tasks),
            "held_out_tasks": sorted(held_tasks),
            "holdout": split.get("holdout"),
            "seed": split.get("seed"),
            "n_splits": split.get("n_splits"),
        },
    }
    if test and has_held_out_figures(calibration):
        block |= {
            "kind": "held_out_tasks",
            "scheme": (
                f"{len(held_tasks)} of {len(held_tasks) + len(calib_tasks)} human-graded tasks "
                f"held out at random (seed {split.get('seed')}): never used to fit the "
                f"calibration, nor for examples or adjudication notes; the calibrator was "
                f"fitted on the other {len(calib_tasks)} tasks"
            ),
            "examples_may_overlap": False,
            **figures(test),
            "out_of_fold": {"scheme": f"{folds} on the calibration tasks", **figures(m)},
        }
    else:
        block |= {
            "kind": "out_of_fold",
            "scheme": f"{folds} (out-of-fold figures); no task held out",
            "examples_may_overlap": True,
            **figures(m),
        }
    return block


def agreement_card(
    frames: Frames,
    judge: str,
    calibration: Mapping[str, Any] | None,
    *,
    provenance: Mapping[str, Any] | None = None,
    humans: Sequence[str] | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    ci: float = 0.95,
) -> dict[str, Any]:
    """The agreement card of a judge (JSON-able).

    * ``held_out``: None without a calibration. With a calibration that holds tasks out
      (``gradercal calibrate --holdout``; ``kind: "held_out_tasks"``): its test figures
      on those tasks — raw judge and calibrated, with their CIs — which neither the
      calibrator nor the examples and adjudication notes of the package have seen,
      ``split`` (how many tasks on each side, which are held out, share, seed) and, for
      reference, the calibration tasks' out-of-fold figures (``out_of_fold``). Without
      held-out tasks (older calibrations; ``kind: "out_of_fold"``): the out-of-fold
      figures, and ``examples_may_overlap`` is true — the card's notes say so;
    * ``all_data``: the judge against the expert consensus on every unit (in-sample;
      :func:`gradercal.analysis.agreement.judge_agreement`);
    * ``expert_range``: per figure, the (min, max) of each expert against the other
      experts' consensus, the judge's mean on the same comparisons, and whether it lies
      within the experts' range;
    * ``alt_test``: :func:`gradercal.analysis.alt_test.alt_test_frames` (or why it was refused);
    * ``leniency``: the leniency bias (judge met rate − experts' met rate), held out
      (raw and calibrated, from ``held_out``) and on all data;
    * ``provenance``: as given (graders, counts, dates), plus ``split`` with a
      calibration: which calibration, the kind of held-out figures, the numbers of
      calibration and held-out tasks and the held-out task ids.
    """
    from gradercal.analysis.agreement import judge_agreement
    from gradercal.analysis.alt_test import AltTestRefused, alt_test_frames
    from gradercal.analysis.verdicts import human_graders

    names = [
        h for h in (list(humans) if humans is not None else human_graders(frames)) if h != judge
    ]
    notes: list[str] = []
    held: dict[str, Any] | None = None
    prov = dict(provenance or {})
    if calibration:
        held = _held_out_block(calibration)
        prov["split"] = {"calibration": held["source"], "kind": held["kind"], **held["split"]}
        if held["examples_may_overlap"]:
            notes.append(NO_HOLDOUT_NOTE)
    else:
        notes.append(
            "no calibration: there are no held-out figures and no threshold; run "
            "`gradercal calibrate --judge NAME` and export again"
        )
    all_data: dict[str, Any] | None = None
    expert_range: dict[str, Any] = {}
    try:
        ja = judge_agreement(frames, judge, names, n_boot=n_boot, seed=seed, ci=ci)
    except ValueError as exc:
        notes.append(f"judge agreement unavailable: {exc}")
    else:
        head = ja.headline.to_dict()
        all_data = {
            "reference": head["reference"],
            "n_units": head["n_units"],
            "n_tasks": head["n_tasks"],
            "metrics": _fig(head["metrics"], _CRITERION_FIGURES),
        }
        for k in ("cohen_kappa", "percent_agreement"):
            rng = ja.human_range.get(k)
            expert_range[k] = {
                "experts": None if rng is None else [rng[0], rng[1]],
                "judge": ja.judge_loo_mean.get(k),
                "within": ja.within_human_range.get(k),
            }
    try:
        at = alt_test_frames(frames, judge, names).to_dict()
        alt = {
            k: at[k]
            for k in (
                "passed",
                "winning_rate",
                "advantage_probability",
                "epsilon",
                "alpha",
                "n_items",
                "n_humans",
                "warnings",
            )
        }
    except AltTestRefused as exc:
        alt = {"refused": str(exc)}
    leniency: dict[str, Any] = {
        "held_out_raw": (held or {}).get("criterion", {}).get("raw", {}).get("leniency_bias"),
        "held_out_calibrated": (held or {})
        .get("criterion", {})
        .get("calibrated", {})
        .get("leniency_bias"),
        "all_data": None if all_data is None else all_data["metrics"].get("leniency_bias"),
    }
    card: dict[str, Any] = _plain(
        {
            "judge": judge,
            "experts": names,
            "held_out": held,
            "all_data": all_data,
            "expert_range": expert_range,
            "alt_test": alt,
            "leniency": leniency,
            "provenance": prov,
            "notes": notes,
        }
    )
    return card


def _plain(obj: Any) -> Any:
    """JSON-safe copy: NaN/inf → None, tuples → lists, numpy scalars → Python."""
    if isinstance(obj, Mapping):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_plain(v) for v in obj]
    if isinstance(obj, bool) or obj is None or isinstance(obj, str):
        return obj
    if isinstance(obj, int):
        return int(obj)
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if hasattr(obj, "item"):
        return _plain(obj.item())
    if isinstance(obj, datetime):
        return obj.isoformat()
    return str(obj)


# ---------------------------------------------------------------------------------------
# The package
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PromptPackage:
    """A calibrated judge-prompt package (see the module docstring).

    Attributes:
        prompt: The calibrated prompt (guidance option and few-shot examples included).
        judge: ``{"name", "model", "prompt_version" (the judge's own prompt),
            "parameters"}``.
        benchmark: The benchmark's name.
        guidance: Distilled guidance (:func:`distill_guidance`).
        examples: Provenance of each few-shot example, aligned with ``prompt.few_shot``.
        example_pool: ``{"calibration_tasks", "held_out_tasks", "candidates",
            "seed", "requested"}``: where examples could come from.
        decision: :func:`decision_from_calibration`.
        card: :func:`agreement_card` (plus ``prompt_version``).
        warnings: What the exporter wants the reader to know.
        created_at: ISO time of the export.
        format_version: :data:`FORMAT_VERSION`.
    """

    prompt: PromptTemplate
    judge: Mapping[str, Any]
    benchmark: str | None
    guidance: Mapping[str, Any]
    examples: Sequence[Mapping[str, Any]]
    example_pool: Mapping[str, Any]
    decision: Mapping[str, Any]
    card: Mapping[str, Any]
    warnings: Sequence[str] = ()
    created_at: str = ""
    format_version: int = FORMAT_VERSION

    @property
    def prompt_version(self) -> str:
        """The prompt version hash (content hash of the calibrated prompt)."""
        return self.prompt.content_hash

    def body(self) -> dict[str, Any]:
        """Everything but the integrity block, JSON-able."""
        body: dict[str, Any] = _plain(
            {
                "format_version": self.format_version,
                "kind": "gradercal.prompt-package",
                "created_at": self.created_at,
                "benchmark": self.benchmark,
                "judge": dict(self.judge),
                "prompt_version": self.prompt_version,
                "prompt": {
                    "name": self.prompt.name,
                    "parent_hash": self.prompt.parent_hash,
                    "system": self.prompt.system,
                    "user": self.prompt.user,
                    "few_shot": [dict(x) for x in self.prompt.few_shot],
                    "options": dict(self.prompt.options),
                },
                "guidance": dict(self.guidance),
                "examples": [dict(x) for x in self.examples],
                "example_pool": dict(self.example_pool),
                "decision": dict(self.decision),
                "card": dict(self.card),
                "warnings": list(self.warnings),
            }
        )
        return body

    def to_dict(self) -> dict[str, Any]:
        """The canonical JSON form, with ``integrity.package_hash`` over the rest."""
        body = self.body()
        body["integrity"] = {"algorithm": "sha256", "package_hash": stable_hash(body)}
        return body


def build_package(
    *,
    judge: Mapping[str, Any],
    base_prompt: PromptTemplate,
    benchmark: str | None,
    notes: Sequence[ExpertNote],
    adjudicated: Sequence[AdjudicatedItem],
    calibration: Mapping[str, Any] | None,
    card: Mapping[str, Any],
    pass_threshold: float,
    n_examples: int = DEFAULT_EXAMPLES,
    seed: int = 0,
    name: str | None = None,
    created_at: datetime | None = None,
) -> PromptPackage:
    """Assemble the package from plain inputs (see the module docstring).

    The calibrated prompt derives from ``base_prompt`` (its parent): the ``guidance``
    option is set from the distilled guidance (and a ``{{guidance}}`` block added to the
    user template when it has none); with ``n_examples > 0`` the few-shot examples are
    the selected ones (else the base prompt's are kept).
    """
    warnings: list[str] = []
    calib_tasks, held_out = split_tasks((calibration or {}).get("split"))
    allowed: frozenset[str] | None = calib_tasks if calibration else None
    # Adjudications reveal final verdicts: outside the calibration split they would
    # leak held-out answers into the prompt. Unclear notes are about wording: all kept.
    used_notes = [
        n for n in notes if n.source == "unclear" or allowed is None or n.task_id in allowed
    ]
    used_adjudicated = [a for a in adjudicated if allowed is None or a.task_id in allowed]
    guidance = distill_guidance(used_notes, used_adjudicated)
    option = guidance_option(guidance)
    if not calibration:
        allowed = None
        if n_examples > 0:
            warnings.append(
                "no calibration: few-shot examples are drawn from every adjudicated task; "
                "leave their tasks (examples[].task_id) out when you measure this prompt"
            )
        warnings.append("no calibration: the package has no threshold and no held-out figures")
    chosen = select_examples(adjudicated, n_examples, seed=seed, allowed_tasks=allowed)
    if calibration and not has_held_out_figures(calibration):
        warnings.append(NO_HOLDOUT_NOTE)
    if n_examples > 0 and len(chosen) < n_examples:
        warnings.append(
            f"{len(chosen)} few-shot example(s) of {n_examples} asked: not enough adjudicated "
            "disagreements of each verdict in the calibration split"
        )
    options = dict(base_prompt.options)
    options.pop("guidance", None)
    user = base_prompt.user
    if option:
        options["guidance"] = option
        user = with_guidance_slot(user)
    few_shot = tuple(_few_shot(a) for a in chosen) if n_examples > 0 else base_prompt.few_shot
    prompt = PromptTemplate(
        system=base_prompt.system,
        user=user,
        few_shot=few_shot,
        options=options,
        name=name or f"{judge.get('name')}-calibrated",
        parent_hash=base_prompt.content_hash,
    )
    examples = [_example_record(a) for a in chosen] if n_examples > 0 else []
    pool = {
        "calibration_tasks": sorted(calib_tasks) if calibration else None,
        "held_out_tasks": sorted(held_out),
        "candidates": sum(
            1 for a in adjudicated if a.disagreement and (allowed is None or a.task_id in allowed)
        ),
        "requested": int(n_examples),
        "seed": int(seed),
        "tasks_used": sorted({a.task_id for a in chosen}) if n_examples > 0 else [],
        "adjudication_notes_left_out": len(notes) - len(used_notes),
    }
    card_out = dict(card)
    card_out["prompt_version"] = prompt.content_hash
    card_out["base_prompt_version"] = base_prompt.content_hash
    warnings.extend(str(n) for n in card.get("notes", []) if str(n) not in warnings)
    stamp = (created_at or datetime.now(UTC)).isoformat(timespec="seconds")
    return PromptPackage(
        prompt=prompt,
        judge=dict(judge),
        benchmark=benchmark,
        guidance=guidance,
        examples=examples,
        example_pool=pool,
        decision=decision_from_calibration(calibration, pass_threshold),
        card=card_out,
        warnings=warnings,
        created_at=stamp,
    )


# ---------------------------------------------------------------------------------------
# Schema, reading back
# ---------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def load_schema() -> dict[str, Any]:
    """The package's JSON Schema (``gradercal/schemas/prompt-package.schema.json``)."""
    text = (
        resources.files("gradercal")
        .joinpath("schemas/prompt-package.schema.json")
        .read_text("utf-8")
    )
    schema: dict[str, Any] = json.loads(text)
    return schema


def validate_package(obj: Any, *, source: str = "package") -> None:
    """Check ``obj`` against the JSON Schema and the package's hashes.

    Raises:
        ValidationError: Every schema violation (field = its JSON path, e.g.
            ``$.prompt.few_shot[0].criteria_met``); else a wrong ``prompt_version`` or
            ``integrity.package_hash`` (the package was edited after export).
    """
    import jsonschema

    validator = jsonschema.Draft202012Validator(load_schema())
    errors = sorted(validator.iter_errors(obj), key=lambda e: (list(e.absolute_path), e.message))
    if errors:
        raise ValidationError(Problem(source, None, e.json_path, e.message) for e in errors)
    problems = []
    try:
        prompt = prompt_from_dict(
            {k: obj["prompt"][k] for k in ("name", "parent_hash", "system", "user")}
            | {"few_shot": obj["prompt"]["few_shot"], "options": obj["prompt"]["options"]},
            source=source,
        )
    except ValidationError as exc:
        raise ValidationError(
            Problem(source, None, f"$.prompt.{p.field}" if p.field else "$.prompt", p.message)
            for p in exc.problems
        ) from None
    if prompt.content_hash != obj["prompt_version"]:
        problems.append(
            Problem(
                source,
                None,
                "$.prompt_version",
                f"hash mismatch: the prompt hashes to {prompt.content_hash[:12]}, the package "
                f"says {str(obj['prompt_version'])[:12]} (edited after export?)",
            )
        )
    body = {k: v for k, v in obj.items() if k != "integrity"}
    digest = stable_hash(body)
    if digest != obj["integrity"]["package_hash"]:
        problems.append(
            Problem(
                source,
                None,
                "$.integrity.package_hash",
                f"hash mismatch: the package hashes to {digest[:12]}, it says "
                f"{str(obj['integrity']['package_hash'])[:12]} (edited after export?)",
            )
        )
    if problems:
        raise ValidationError(problems)


def package_from_dict(obj: Any, *, source: str = "package") -> PromptPackage:
    """Read a package (the JSON form) after :func:`validate_package`."""
    validate_package(obj, source=source)
    p = obj["prompt"]
    prompt = PromptTemplate(
        system=p["system"],
        user=p["user"],
        few_shot=tuple(p["few_shot"]),
        options=p["options"],
        name=p.get("name"),
        parent_hash=p.get("parent_hash"),
    )
    return PromptPackage(
        prompt=prompt,
        judge=obj["judge"],
        benchmark=obj.get("benchmark"),
        guidance=obj["guidance"],
        examples=obj["examples"],
        example_pool=obj["example_pool"],
        decision=obj["decision"],
        card=obj["card"],
        warnings=obj.get("warnings", []),
        created_at=obj["created_at"],
        format_version=obj["format_version"],
    )


# ---------------------------------------------------------------------------------------
# Renderers
# ---------------------------------------------------------------------------------------


def to_json(package: PromptPackage) -> str:
    """The canonical JSON text (sorted keys, 2-space indent, UTF-8, final newline)."""
    return json.dumps(package.to_dict(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _num(x: Any, digits: int = 3) -> str:
    if x is None:
        return "—"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int | float):
        return f"{x:.{digits}f}"
    return str(x)


def _with_ci(fig: Mapping[str, Any] | None) -> str:
    if not fig or fig.get("value") is None:
        return "—"
    out = _num(fig["value"])
    if fig.get("ci"):
        lo, hi = fig["ci"]
        out += f" [{_num(lo)}, {_num(hi)}]"
    return out


_LABELS = {
    "cohen_kappa": "Cohen's kappa",
    "percent_agreement": "agreement",
    "balanced_f1": "balanced F1",
    "leniency_bias": "leniency bias",
    "mean_score_bias": "mean score bias",
    "mae": "mean absolute error",
    "pass_kappa": "pass/fail kappa",
    "pass_agreement": "pass/fail agreement",
    "pass_rate_bias": "pass-rate bias",
}


def _fence(text: str) -> str:
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return f"{ticks}text\n{text}\n{ticks}"


def _figure_table(block: Mapping[str, Any]) -> list[str]:
    out = [
        f"{block.get('n_tasks')} tasks, {block.get('n_items') or '—'} criterion verdicts, "
        f"{block.get('n_responses')} responses. 95% CIs, task-clustered bootstrap.",
        "",
        "| figure | raw judge | calibrated |",
        "|---|---|---|",
    ]
    for level in ("criterion", "response"):
        raw = block[level]["raw"]
        cal = block[level]["calibrated"]
        for k in raw:
            out.append(f"| {_LABELS.get(k, k)} | {_with_ci(raw[k])} | {_with_ci(cal.get(k))} |")
    out.append("")
    return out


def _card_markdown(package: PromptPackage) -> list[str]:
    card = package.card
    out = ["## Agreement card", ""]
    out.append(f"- **Prompt version**: `{package.prompt_version}`")
    out.append(f"- **Derived from**: `{card.get('base_prompt_version')}`")
    j = package.judge
    out.append(f"- **Judge**: {j.get('name')} (model {j.get('model') or '—'})")
    out.append(f"- **Experts**: {', '.join(card.get('experts') or []) or '—'}")
    prov = card.get("provenance") or {}
    counts = prov.get("counts") or {}
    if counts:
        out.append(
            "- **Data**: " + ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in counts.items())
        )
    dates = prov.get("date_range")
    if dates:
        out.append(f"- **Judgments dated**: {dates[0]} to {dates[1]}")
    out.append(f"- **Decision rule**: {package.decision.get('description')}")
    out.append("")
    held = card.get("held_out")
    if held:
        kind = held.get("kind")  # absent in packages exported before held-out splits
        split = held.get("split") or {}
        if kind == "held_out_tasks":
            out += [
                f"### Held-out agreement with the experts ({held['source']})",
                "",
                f"{held['scheme']}.",
                "",
                f"Held-out tasks: {', '.join(split.get('held_out_tasks') or []) or '—'}.",
                "",
            ]
        elif kind is None:
            out += [f"### Held-out agreement with the experts ({held['source']})", ""]
            out += [f"{held.get('scheme')}.", ""]
        else:
            out += [
                f"### Out-of-fold agreement with the experts ({held['source']}; no task held out)",
                "",
                f"{held['scheme']}. **No task was held out**: the few-shot examples and the "
                "adjudication notes of this package may come from the same tasks as these "
                "figures, so they may overstate its agreement. Run `gradercal calibrate "
                "--holdout 0.25` and export again for figures on tasks nothing has seen.",
                "",
            ]
        out += _figure_table(held)
        oof = held.get("out_of_fold")
        if oof:
            out += [
                f"For reference, out of fold on the {split.get('n_calibration_tasks')} "
                f"calibration tasks ({oof['scheme']}):",
                "",
                *_figure_table(oof),
            ]
    else:
        out += ["### Held-out agreement", "", "**No calibration**: no held-out figures.", ""]
    alld = card.get("all_data")
    if alld:
        out += [
            f"### Judge vs {alld['reference']} (all data, in-sample)",
            "",
            f"{alld['n_units']} units on {alld['n_tasks']} tasks.",
            "",
            "| figure | judge |",
            "|---|---|",
        ]
        out += [f"| {_LABELS.get(k, k)} | {_with_ci(v)} |" for k, v in alld["metrics"].items()]
        out.append("")
    rng = card.get("expert_range") or {}
    if rng:
        out += [
            "### Expert–expert range (each expert vs the others' consensus)",
            "",
            "| figure | experts (min – max) | judge (mean, same comparisons) | within |",
            "|---|---|---|---|",
        ]
        for k, v in rng.items():
            e = v.get("experts")
            span = "—" if not e else f"{_num(e[0])} – {_num(e[1])}"
            out.append(
                f"| {_LABELS.get(k, k)} | {span} | {_num(v.get('judge'))} | "
                f"{_num(v.get('within'))} |"
            )
        out.append("")
    alt = card.get("alt_test") or {}
    out += ["### Alternative annotator test", ""]
    if "refused" in alt:
        out.append(f"Not run: {alt['refused']}")
    else:
        verdict = "**passed**" if alt.get("passed") else "**not passed**"
        out.append(
            f"{verdict}: winning rate {_num(alt.get('winning_rate'))} over "
            f"{alt.get('n_tested', alt.get('n_humans'))} tested of {alt.get('n_humans')} "
            f"experts, advantage probability {_num(alt.get('advantage_probability'))} "
            f"(ε = {alt.get('epsilon')}, {alt.get('n_items')} items, "
            f"{alt.get('test', 'exact score')} test)."
        )
        out += [f"- {w}" for w in alt.get("warnings") or []]
    out.append("")
    len_ = card.get("leniency") or {}
    where = "out of fold" if (held or {}).get("kind") == "out_of_fold" else "held out"
    out += [
        "### Leniency (judge met rate − experts' met rate)",
        "",
        f"{where}, raw: {_with_ci(len_.get('held_out_raw'))}; {where}, calibrated: "
        f"{_with_ci(len_.get('held_out_calibrated'))}; all data: {_with_ci(len_.get('all_data'))}",
        "",
    ]
    return out


def to_markdown(package: PromptPackage) -> str:
    """A readable document: card, decision rule, guidance, examples, templates."""
    p = package.prompt
    out = [
        f"# Calibrated judge prompt: {p.name or 'unnamed'}",
        "",
        f"Benchmark: {package.benchmark or '—'} · exported {package.created_at} · "
        f"package format {package.format_version} · prompt version `{package.prompt_version}`",
        "",
    ]
    if package.warnings:
        out += ["> **Warnings**", ">"] + [f"> - {w}" for w in package.warnings] + [""]
    out += _card_markdown(package)
    out += ["## Rubric guidance", ""]
    g = package.guidance
    if g.get("general"):
        out += ["**In general**", ""] + [f"- {x}" for x in g["general"]] + [""]
    for t in g.get("tags", []):
        line = (
            f"- **{t['tag']}**: {t['n_adjudicated']} adjudicated, judge overruled on 'met' "
            f"{t['judge_overruled_met']}×, on 'not met' {t['judge_overruled_not_met']}×"
        )
        out.append(line + ("".join(f" — {r}" for r in t["rules"])))
    if g.get("tags"):
        out.append("")
    for c in g.get("criteria", []):
        out.append(
            f"**{c['task_id']}/{c['criterion_id']}** — {c['criterion']} "
            f"({c['n_unclear']} unclear flag(s), {c['n_adjudication_notes']} adjudication note(s))"
        )
        out.append("")
        for n in c["notes"]:
            out.append(
                f"- {n['text']} — {n['count']}× by {', '.join(n['authors'])} "
                f"({', '.join(n['sources'])})"
            )
        out.append("")
    if not (g.get("general") or g.get("tags") or g.get("criteria")):
        out += ["No notes from the experts yet.", ""]
    out += ["## Few-shot examples", ""]
    if not package.examples:
        out += ["None.", ""]
    for i, (ex, shot) in enumerate(zip(package.examples, p.few_shot, strict=False), 1):
        verdict = "met" if ex["criteria_met"] else "not met"
        out.append(
            f"{i}. **{ex['task_id']}/{ex['criterion_id']}** on response {ex['response_id']}: "
            f"**{verdict}** (judge said {_verdict_word(ex.get('judge_met'))}; tags "
            f"{', '.join(ex['tags']) or '—'}) — {shot.get('explanation', '')}"
        )
    out.append("")
    out += ["## System template", "", _fence(p.system), "", "## User template", ""]
    out += [_fence(p.user), ""]
    return "\n".join(out)


def _verdict_word(v: Any) -> str:
    return "—" if v is None else ("met" if v else "not met")


def _py_literal(text: str, indent: str = "    ") -> str:
    """``text`` as a parenthesised run of short string literals."""
    chunks = [text[i : i + 72] for i in range(0, len(text), 72)] or [""]
    return "(\n" + "".join(f"{indent}{c!r}\n" for c in chunks) + ")"


_INSPECT_MODULE = '''\
"""Calibrated gradercal judge for Inspect AI (generated by `gradercal export-prompt`).

Prompt version {version} of judge {judge!r} ({benchmark}).
Do not edit the embedded package: its hash is checked on import.

Each sample's response (the model output) is graded criterion by criterion with the
judge prompt (system, few-shot examples, user message with the rubric guidance); the
rubric comes from ``sample.metadata["rubric"]`` — a list of
``{{"criterion": str, "points": int, "tags": [str]}}`` — or, without it, the target text
is the one criterion (1 point). Score: points of met criteria over the positive points,
clipped to [0, 1], after the package's decision rule; ``passed`` in the metadata says
whether it reaches the pass threshold.

    from inspect_ai import Task, eval
    from inspect_ai.solver import generate
    from this_module import gradercal_judge

    task = Task(dataset=samples, solver=generate(), scorer=gradercal_judge("openai/gpt-4.1-mini"))

Only the verdict is used (no log-probabilities): a threshold in (0, 1] keeps it.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from typing import Any

from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    Model,
    get_model,
)
from inspect_ai.scorer import Score, Target, mean, scorer, stderr
from inspect_ai.solver import TaskState

PACKAGE: dict[str, Any] = json.loads({package_literal})
PROMPT_VERSION = {version!r}
_PROMPT = PACKAGE["prompt"]
_DECISION = PACKAGE["decision"]
_PLACEHOLDER = re.compile(r"\\{{\\{{\\s*([A-Za-z_][A-Za-z0-9_]*)\\s*\\}}\\}}")
_PASS_EPSILON = 1e-9


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _check() -> None:
    content = {{k: _PROMPT[k] for k in ("system", "user", "few_shot", "options")}}
    digest = hashlib.sha256(_canonical(content).encode("utf-8")).hexdigest()
    if digest != PROMPT_VERSION:
        raise RuntimeError(f"the embedded prompt was edited: {{digest}} != {{PROMPT_VERSION}}")


_check()


def _norm(text: str) -> str:
    return " ".join(str(text).split())


def guidance_for(criterion: str, tags: list[str]) -> str:
    """The clarifications of one criterion, of its tags, then the general ones."""
    g = _PROMPT["options"].get("guidance") or {{}}
    parts: list[str] = []
    own = [x for t, xs in (g.get("criteria") or {{}}).items() if _norm(t) == _norm(criterion)
           for x in xs]
    if own:
        parts.append("Clarifications of this criterion by the expert graders:")
        parts += [f"- {{x}}" for x in own]
    for tag in dict.fromkeys(tags):
        notes = (g.get("tags") or {{}}).get(tag) or []
        if notes:
            parts.append(f"For criteria tagged {{tag}}:")
            parts += [f"- {{x}}" for x in notes]
    if g.get("general"):
        parts.append("In general:")
        parts += [f"- {{x}}" for x in g["general"]]
    return "\\n".join(parts) if parts else "(none)"


def _values(task_prompt: str, response: str, criterion: str, points: int,
            tags: list[str]) -> dict[str, str]:
    return {{
        "task_prompt": task_prompt,
        "response": response,
        "criterion": criterion,
        "points": f"{{int(points):+d}}",
        "criterion_tags": ", ".join(tags) or "(none)",
        "artifacts": "(none)",
        "guidance": guidance_for(criterion, tags),
    }}


def _sub(template: str, values: dict[str, str]) -> str:
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), template)


def messages(task_prompt: str, response: str, criterion: str, points: int = 1,
             tags: list[str] | None = None) -> list[ChatMessage]:
    """The chat messages for one criterion of one response."""
    tags = list(tags or [])
    values = _values(task_prompt, response, criterion, points, tags)
    out: list[ChatMessage] = [ChatMessageSystem(content=_sub(_PROMPT["system"], values))]
    for ex in _PROMPT["few_shot"]:
        shot = _values(ex.get("task_prompt", ""), ex["response"], ex["criterion"],
                       ex.get("points", 0), list(ex.get("criterion_tags", [])))
        answer = {{"explanation": ex.get("explanation", ""), "criteria_met": ex["criteria_met"]}}
        out.append(ChatMessageUser(content=_sub(_PROMPT["user"], shot)))
        out.append(ChatMessageAssistant(content=json.dumps(answer, ensure_ascii=False)))
    out.append(ChatMessageUser(content=_sub(_PROMPT["user"], values)))
    return out


def parse_verdict(text: str) -> tuple[bool | None, str]:
    """(criteria_met, explanation) from a reply; None when there is no boolean verdict."""
    candidates = [text.strip()]
    start, end = text.find("{{"), text.rfind("}}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    for c in candidates:
        try:
            obj = json.loads(c)
        except ValueError:
            continue
        if isinstance(obj, dict) and isinstance(obj.get("criteria_met"), bool):
            return obj["criteria_met"], str(obj.get("explanation", ""))
    return None, text.strip()[:500]


def _group(tags: list[str]) -> str:
    prefix = (_DECISION.get("params") or {{}}).get("tag_prefix")
    usable = [t for t in tags if prefix is None or t.startswith(prefix)]
    return usable[0] if usable else "(untagged)"


def credit(met: bool, tags: list[str]) -> float:
    """The criterion-level decision: the share of its points a verdict earns."""
    rule = _DECISION.get("rule")
    params = _DECISION.get("params") or {{}}
    p = 1.0 if met else 0.0
    if rule == "threshold":
        t = (params.get("group_thresholds") or {{}}).get(_group(tags), params.get("threshold"))
        return 1.0 if t is None or p >= float(t) else 0.0
    if rule == "leniency":
        table = params.get("leniency") or {{}}
        row = table.get(_group(tags)) or table.get("(overall)")
        if isinstance(row, dict):
            value = row.get("1" if met else "0", row.get(str(met).lower()))
            if isinstance(value, (int, float)):
                return float(value)
    return p


def calibrated_score(raw: float) -> float:
    """The response-level decision: the judge's rubric score through the fitted map."""
    rule = _DECISION.get("rule")
    params = _DECISION.get("params") or {{}}
    if rule == "isotonic" and params.get("x_thresholds"):
        xs, ys = params["x_thresholds"], params["y_thresholds"]
        if raw <= xs[0]:
            return float(ys[0])
        if raw >= xs[-1]:
            return float(ys[-1])
        for i in range(1, len(xs)):
            if raw <= xs[i]:
                x0, x1, y0, y1 = xs[i - 1], xs[i], ys[i - 1], ys[i]
                return float(y0 if x1 == x0 else y0 + (y1 - y0) * (raw - x0) / (x1 - x0))
    if rule == "platt":
        lo, hi = float(params.get("y_low", 0.0)), float(params.get("y_high", 1.0))
        if params.get("constant") is not None:
            return lo + (hi - lo) * float(params["constant"])
        if params.get("coef") is not None:
            z = float(params["coef"]) * raw + float(params.get("intercept") or 0.0)
            return lo + (hi - lo) / (1.0 + math.exp(-z))
    return raw


def _rubric(state: TaskState, target: Target) -> list[dict[str, Any]]:
    items = (state.metadata or {{}}).get("rubric")
    if items:
        return [dict(x) for x in items]
    return [{{"criterion": target.text, "points": 1, "tags": []}}]


@scorer(metrics=[mean(), stderr()])
def gradercal_judge(model: str | Model | None = None, pass_threshold: float | None = None):
    """Grade the output against the sample's rubric with the calibrated judge prompt.

    Args:
        model: The grader model (default: the model being evaluated).
        pass_threshold: Pass mark of the rubric score (default: the package's).
    """
    threshold = float(_DECISION.get("pass_threshold", 0.7) if pass_threshold is None
                      else pass_threshold)

    async def score(state: TaskState, target: Target) -> Score:
        grader = get_model(model)
        rubric = _rubric(state, target)
        response = state.output.completion
        positive = sum(max(0, int(c.get("points", 1))) for c in rubric)
        earned = 0.0
        verdicts = []
        lines = []
        for c in rubric:
            points = int(c.get("points", 1))
            tags = [str(t) for t in c.get("tags", [])]
            out = await grader.generate(
                messages(state.input_text, response, str(c["criterion"]), points, tags)
            )
            met, why = parse_verdict(out.completion)
            share = 0.0 if met is None else credit(met, tags)
            earned += points * share
            verdicts.append({{"criterion": c["criterion"], "met": met, "credit": share}})
            lines.append(f"[{{'?' if met is None else 'x' if met else ' '}}] {{c['criterion']}}: {{why}}")
        raw = 0.0 if positive <= 0 else min(1.0, max(0.0, earned / positive))
        value = calibrated_score(raw)
        return Score(
            value=value,
            answer=response,
            explanation="\\n".join(lines),
            metadata={{
                "prompt_version": PROMPT_VERSION,
                "raw_score": raw,
                "passed": value + _PASS_EPSILON >= threshold,
                "criteria": verdicts,
                "unanswered": sum(v["met"] is None for v in verdicts),
            }},
        )

    return score
'''


def to_inspect(package: PromptPackage) -> str:
    """A Python module for Inspect AI: a ``gradercal_judge`` scorer built on
    ``get_model().generate`` with this package's prompt and decision rule.

    The module imports inspect_ai (gradercal does not); it checks on import that the
    embedded prompt still hashes to the prompt version.
    """
    body = package.to_dict()
    embedded = {"prompt": body["prompt"], "decision": body["decision"]}
    literal = _py_literal(json.dumps(embedded, sort_keys=True, ensure_ascii=False))
    return _INSPECT_MODULE.format(
        version=package.prompt_version,
        judge=str(package.judge.get("name")),
        benchmark=package.benchmark or "no benchmark",
        package_literal=literal,
    )


def _raw(text: str) -> str:
    """Literal text inside a promptfoo (Nunjucks) template."""
    return "{% raw %}" + text.replace("{% endraw %}", "{ % endraw % }") + "{% endraw %}"


def _escape_template(text: str) -> str:
    """A gradercal template with Nunjucks' own ``{%``/``{#`` made literal."""
    return text.replace("{%", "{{ '{%' }}").replace("{#", "{{ '{#' }}")


_PROMPTFOO_FORMAT = (
    "\n\nOutput format for this harness (it replaces the one above): return only a JSON "
    'object {"reason": string, "pass": boolean, "score": number}, where "reason" is your '
    'explanation, "pass" is what "criteria_met" would be, and "score" is 1 when "pass" '
    "is true and 0 otherwise."
)


def _shot_values(p: PromptTemplate, ex: Mapping[str, Any]) -> dict[str, str]:
    tags = tuple(str(t) for t in ex.get("criterion_tags", ()))
    return {
        "task_prompt": str(ex.get("task_prompt", "")),
        "response": str(ex["response"]),
        "criterion": str(ex["criterion"]),
        "points": f"{int(ex.get('points', 0)):+d}",
        "criterion_tags": ", ".join(tags) or "(none)",
        "artifacts": "(none)",
        "guidance": p.guidance_for(str(ex["criterion"]), tags),
    }


def to_promptfoo(
    package: PromptPackage,
    tests: Sequence[Mapping[str, Any]] = (),
    *,
    provider: str | None = None,
) -> str:
    """A promptfoo configuration (YAML) grading with ``llm-rubric`` and this prompt.

    Each test (``{"task_id", "prompt", "rubric": [{"criterion", "points", "tags"}]}``)
    asks every criterion: ``llm-rubric`` for positive points, ``not-llm-rubric`` for
    negative ones (the test should fail when the undesirable thing happens), weighted by
    the points, with the benchmark's pass threshold as the test's threshold. Each
    assertion's ``rubricPrompt`` is the judge's conversation (system, few-shot pairs,
    user) in promptfoo's variables — ``{{ output }}`` the response, ``{{ rubric }}`` the
    criterion, ``{{ task_prompt }}`` a test variable — with the criterion's points, tags
    and guidance written in, asking for promptfoo's ``{reason, pass, score}`` reply. The
    shared messages are YAML anchors, so the file stays small.
    """
    import yaml

    from gradercal.judge.prompts import substitute

    p = package.prompt
    live = {
        "response": "{{ output }}",
        "criterion": "{{ rubric }}",
        "task_prompt": "{{ task_prompt }}",
        "artifacts": "(none)",
    }
    system_values = live | {"points": "", "criterion_tags": "", "guidance": ""}
    shared: list[dict[str, str]] = [
        {
            "role": "system",
            "content": substitute(_escape_template(p.system), system_values) + _PROMPTFOO_FORMAT,
        }
    ]
    for ex in p.few_shot:
        user = _raw(substitute(p.user, _shot_values(p, ex)))
        answer = {
            "reason": str(ex.get("explanation", "")),
            "pass": bool(ex["criteria_met"]),
            "score": 1 if ex["criteria_met"] else 0,
        }
        shared.append({"role": "user", "content": user})
        shared.append({"role": "assistant", "content": json.dumps(answer, ensure_ascii=False)})
    user_template = _escape_template(p.user)

    def rubric_prompt(criterion: str, points: int, tags: Sequence[str]) -> list[dict[str, str]]:
        values = live | {
            "points": f"{points:+d}",
            "criterion_tags": _raw(", ".join(tags) or "(none)"),
            "guidance": _raw(p.guidance_for(criterion, tuple(tags))),
        }
        return [*shared, {"role": "user", "content": substitute(user_template, values)}]

    threshold = float(package.decision.get("pass_threshold", 0.7))
    model = provider or (
        f"openai:chat:{package.judge['model']}" if package.judge.get("model") else None
    )
    default: dict[str, Any] = {"options": {"rubricPrompt": rubric_prompt("", 1, [])}}
    if model:
        default["options"]["provider"] = model
    config: dict[str, Any] = {
        "description": (
            f"gradercal calibrated judge {package.judge.get('name')}, prompt version "
            f"{package.prompt_version}"
        ),
        "prompts": ["{{task_prompt}}"],
        "providers": ["echo"],
        "defaultTest": default,
        "tests": [],
    }
    for t in tests:
        asserts = []
        for c in t.get("rubric", []):
            points = int(c.get("points", 1))
            tags = [str(x) for x in c.get("tags", [])]
            asserts.append(
                {
                    "type": "llm-rubric" if points >= 0 else "not-llm-rubric",
                    "value": str(c["criterion"]),
                    "weight": abs(points) or 1,
                    "metric": tags[0] if tags else "untagged",
                    "rubricPrompt": rubric_prompt(str(c["criterion"]), points, tags),
                }
            )
        config["tests"].append(
            {
                "description": str(t.get("task_id", "")),
                "vars": {"task_prompt": str(t.get("prompt", ""))},
                "threshold": threshold,
                "assert": asserts,
            }
        )
    header = (
        "# promptfoo configuration generated by `gradercal export-prompt`\n"
        f"# judge prompt version {package.prompt_version}\n"
        "# `providers: [echo]` is a placeholder: list the models you evaluate.\n"
    )
    dumped: str = yaml.safe_dump(config, sort_keys=False, allow_unicode=True, width=100)
    return header + dumped


def render(
    package: PromptPackage, fmt: PackageFormat, tests: Sequence[Mapping[str, Any]] = ()
) -> str:
    """The package in one of the formats."""
    if fmt == "json":
        return to_json(package)
    if fmt == "markdown":
        return to_markdown(package)
    if fmt == "inspect":
        return to_inspect(package)
    if fmt == "promptfoo":
        return to_promptfoo(package, tests)
    raise GradercalError(f"unknown format {fmt!r}; use json, markdown, inspect or promptfoo")
