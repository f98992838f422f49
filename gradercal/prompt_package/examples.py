"""Few-shot examples chosen from adjudicated disagreements, within the calibration split.

:func:`select_examples`: balanced met / not met, spread over criterion tags, deterministic
for a seed, and drawn only from the tasks of the calibration split (:func:`split_tasks`),
never from a held-out task (adjudication notes and the per-tag counts are limited to
those tasks too: they reveal final verdicts).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from typing import Any

from gradercal.prompt_package.inputs import AdjudicatedItem

__all__ = ["DEFAULT_EXAMPLES", "select_examples", "split_tasks"]

#: Default number of few-shot examples.
DEFAULT_EXAMPLES = 6


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


def few_shot_entry(item: AdjudicatedItem) -> dict[str, Any]:
    return {
        "task_prompt": item.task_prompt,
        "response": item.response,
        "criterion": item.criterion,
        "points": int(item.points),
        "criterion_tags": list(item.tags),
        "criteria_met": bool(item.met),
        "explanation": item.explanation(),
    }


def example_record(item: AdjudicatedItem) -> dict[str, Any]:
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
