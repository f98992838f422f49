"""Planning the tasks of a synthetic benchmark: rubrics (positive, penalty, 3-level,
numeric ``auto`` criteria), tags, prompts and the criteria's latent difficulties.

Draws only from the task stream, so tasks do not change when only the graders do.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from gradercal.synth.config import BoolArray, FloatArray, IntArray, SynthConfig
from gradercal.synth.vocabulary import (
    AXIS_TAGS,
    AXIS_WEIGHTS,
    DOMAIN_VOCAB,
    DOMAINS,
    NEGATIVE_TEMPLATES,
    POSITIVE_TEMPLATES,
    PROMPT_TEMPLATES,
    QUANTITIES,
    WORKFLOWS,
)

_NEGATIVE_SHARE = 0.1


_THREE_LEVEL_SHARE = 0.15


_AMBIGUOUS_SHARE = 0.02


@dataclass
class TaskPlan:
    """One task's record plus the latent arrays the truth is drawn from."""

    record: dict[str, Any]
    points: IntArray
    difficulty: FloatArray
    auto_rules: list[dict[str, Any] | None]
    leniency: FloatArray
    levels: IntArray
    ambiguous: BoolArray


def _counts_with_total(rng: np.random.Generator, n: int, lo: int, hi: int, total: int) -> IntArray:
    """Draw ``n`` integers uniformly in [lo, hi], then nudge them to sum to ``total``."""
    counts = rng.integers(lo, hi + 1, size=n).astype(np.int64)
    total = min(max(total, n * lo), n * hi)
    diff = total - int(counts.sum())
    while diff != 0:
        room = np.flatnonzero(counts < hi) if diff > 0 else np.flatnonzero(counts > lo)
        chosen = rng.choice(room, size=min(abs(diff), room.size), replace=False)
        counts[chosen] += 1 if diff > 0 else -1
        diff = total - int(counts.sum())
    return counts


def _sig(x: float, digits: int = 3) -> float:
    """Round to ``digits`` significant figures."""
    return float(f"{x:.{digits}g}")


def _fmt(x: float) -> str:
    return f"{x:g}"


def _numeric_rules(rng: np.random.Generator, count: int) -> tuple[list[dict[str, Any]], list[str]]:
    picks = rng.choice(len(QUANTITIES), size=count, replace=False)
    rules: list[dict[str, Any]] = []
    texts: list[str] = []
    for q in picks:
        key, label, unit, lo, hi, log = QUANTITIES[int(q)]
        raw = math.exp(rng.uniform(math.log(lo), math.log(hi))) if log else rng.uniform(lo, hi)
        target = _sig(raw)
        share = float(rng.choice([0.05, 0.1, 0.2]))
        rule: dict[str, Any] = {"key": f"answer.{key}", "target": target}
        if rng.random() < 0.5:
            rule["rel_tol"] = share
            tol_text = f"{round(share * 100)}%"
        else:
            rule["abs_tol"] = _sig(share * target, 2)
            tol_text = f"{_fmt(rule['abs_tol'])} {unit}"
        rules.append(rule)
        texts.append(f"Reports {label} within {tol_text} of {_fmt(target)} {unit}")
    return rules, texts


def plan_tasks(
    config: SynthConfig, rng: np.random.Generator, text_rng: np.random.Generator
) -> list[TaskPlan]:
    """The tasks: rubric sizes, criteria (text, points, tags, levels, ``auto`` rules) and prompts.

    ``rng`` draws the structure and ``text_rng`` the wording, so neither depends on the
    graders' settings.
    """
    n_tasks = config.tasks
    m = config.criteria_per_task
    lo = max(1, round(0.6 * m))
    hi = max(lo, round(1.4 * m))
    counts = _counts_with_total(rng, n_tasks, lo, hi, round(n_tasks * m))
    numeric = np.zeros(n_tasks, dtype=bool)
    numeric[rng.choice(n_tasks, size=round(n_tasks * config.numeric_task_share), replace=False)] = (
        True
    )
    workflows = rng.integers(0, len(WORKFLOWS), size=n_tasks)
    domains = rng.integers(0, len(DOMAINS), size=n_tasks)
    task_difficulty = rng.normal(0.0, 0.5, size=n_tasks)
    leniency_of = config.judge_leniency

    plans: list[TaskPlan] = []
    for t in range(n_tasks):
        task_id = f"S{t + 1:04d}"
        n = int(counts[t])
        domain = DOMAINS[int(domains[t])]
        workflow = WORKFLOWS[int(workflows[t])]
        assays, analytes = DOMAIN_VOCAB[domain]
        assay = assays[int(text_rng.integers(0, len(assays)))]
        analyte = analytes[int(text_rng.integers(0, len(analytes)))]

        n_auto = min(n, int(rng.integers(2, 5))) if numeric[t] else 0
        difficulty = rng.normal(0.0, 1.0, size=n) + task_difficulty[t]
        negative = rng.random(n) < _NEGATIVE_SHARE
        negative[:n_auto] = False
        pos_points = np.clip(np.rint(rng.lognormal(math.log(6.0), 0.8, size=n)), 1, 25)
        neg_points = -np.clip(np.rint(rng.lognormal(math.log(5.0), 0.7, size=n)), 1, 25)
        if negative.all():  # every task needs something to earn
            negative[0] = False
        points = np.where(negative, neg_points, pos_points).astype(np.int64)
        axes = rng.choice(len(AXIS_TAGS), size=n, p=AXIS_WEIGHTS)
        three_level = (rng.random(n) < _THREE_LEVEL_SHARE) & ~negative
        three_level[:n_auto] = False
        ambiguous = rng.random(n) < _AMBIGUOUS_SHARE
        ambiguous[:n_auto] = False
        example_tag = rng.random(n) < 0.2

        auto_rules: list[dict[str, Any] | None] = [None] * n
        auto_texts: list[str] = []
        rubric: list[dict[str, Any]] = []
        leniency = np.zeros(n)
        if n_auto:
            rules, auto_texts = _numeric_rules(rng, n_auto)
            auto_rules[:n_auto] = rules
        fills_n = text_rng.integers(1, 24, size=n)
        fills_m = fills_n + text_rng.integers(1, 6, size=n)
        wells = text_rng.integers(0, 96, size=n)
        template_pick = text_rng.integers(0, 1 << 30, size=n)
        seen: set[str] = set()
        for i in range(n):
            rule = auto_rules[i]
            if rule is not None:
                text = auto_texts[i]
                tags = ["axis:accuracy"]
            else:
                if negative[i]:
                    options, axis = NEGATIVE_TEMPLATES, ""
                else:
                    axis = AXIS_TAGS[int(axes[i])]
                    options = tuple((t, axis) for t in POSITIVE_TEMPLATES[axis])
                pick, n_fill, well = int(template_pick[i]), int(fills_n[i]), int(wells[i])
                for attempt in range(8):
                    if attempt:  # rubric lines within a task are distinct: redraw
                        pick = int(text_rng.integers(0, 1 << 30))
                        n_fill = int(text_rng.integers(1, 40))
                        well = int(text_rng.integers(0, 96))
                    template, axis = options[pick % len(options)]
                    text = template.format(
                        assay=assay,
                        analyte=analyte,
                        n=n_fill,
                        m=n_fill + int(fills_m[i] - fills_n[i]),
                        well=f"{'ABCDEFGH'[well // 12]}{well % 12 + 1}",
                    )
                    if text not in seen:
                        break
                else:  # pragma: no cover - practically unreachable
                    text = f"{text} (item {i + 1})"
                tags = [axis]
            seen.add(text)
            if example_tag[i] and rule is None:
                tags.append("level:example")
            leniency[i] = max((leniency_of.get(tag, 0.0) for tag in tags), default=0.0)
            item: dict[str, Any] = {
                "id": f"c{i + 1}",
                "criterion": text,
                "points": int(points[i]),
                "tags": tags,
            }
            if three_level[i]:
                item["levels"] = 3
            if rule is not None:
                item["auto"] = rule
            rubric.append(item)

        k = int(text_rng.integers(2, 9))
        prompt = (
            f"### Task {task_id}\n\n"
            f"*Workflow:* {workflow} · *Domain:* {domain}\n\n"
            + PROMPT_TEMPLATES[workflow].format(assay=assay, analyte=analyte, k=k)
        )
        if n_auto:
            keys = ", ".join(
                f"`{r['key'].removeprefix('answer.')}`" for r in auto_rules[:n_auto] if r
            )
            noun = "key" if n_auto == 1 else "keys"
            prompt += f"\n\nReturn your final values as a JSON object with the {noun} {keys}."
        record: dict[str, Any] = {
            "id": task_id,
            "prompt": prompt,
            "workflow": workflow,
            "domain": domain,
            "answer_format": "json" if n_auto else "free text",
            "tags": [assay, "synthetic"],
            "metadata": {"source": "gradercal.synth", "seed": config.seed},
            "artifacts": [],
            "rubric": rubric,
        }
        plans.append(
            TaskPlan(
                record=record,
                points=points,
                difficulty=difficulty,
                auto_rules=auto_rules,
                leniency=leniency,
                levels=np.where(three_level, 3, 2).astype(np.int64),
                ambiguous=ambiguous,
            )
        )
    return plans
