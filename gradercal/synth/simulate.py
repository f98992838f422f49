"""Simulating the responses and the truth: each model's answers, which criteria are truly
met (and at which level), and the structured answers ``auto`` criteria check, as the
generative model of :mod:`gradercal.synth` says.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from gradercal.synth.config import BoolArray, FloatArray, IntArray, SynthConfig, dumps, model_name
from gradercal.synth.plan import TaskPlan

_QUALITY_BEST = 1.0


_QUALITY_WORST = -0.6


#: P(true level is "partial" | truly not met) on a 3-level criterion.
_PARTIAL_SHARE = 0.4


@dataclass
class Simulation:
    """Responses and true verdicts, plus one row per (response, judgment criterion)."""

    models: list[str]
    quality: FloatArray
    scores: list[list[float]]
    response_ids: list[str]
    response_lines: list[str]
    truth_lines: list[str]
    row_resp: list[int]
    row_crit: list[str]
    truth: BoolArray
    #: True ordinal level >= 1 (met, or "partial" on a 3-level criterion).
    partial_or_met: BoolArray
    leniency: FloatArray
    levels: IntArray
    ambiguous: BoolArray


def _sigmoid(x: FloatArray) -> FloatArray:
    return 1.0 / (1.0 + np.exp(-x))


def _auto_met(rule: Mapping[str, Any], answer: Any) -> bool:
    """Evaluate an ``auto`` rule against a structured answer as ``docs/formats.md`` says.

    Args:
        rule: ``{"key", "target", "abs_tol"?, "rel_tol"?}``.
        answer: The response's ``answer`` value.

    Returns:
        Whether the criterion is met.
    """
    key = str(rule["key"])
    if key.startswith("answer."):
        key = key[len("answer.") :]
    value: Any = answer
    for part in key.split(".") if key else []:
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return False
    target = rule["target"]
    abs_tol = rule.get("abs_tol")
    rel_tol = rule.get("rel_tol")
    if abs_tol is None and rel_tol is None:
        if isinstance(value, str) and isinstance(target, str):
            return value.strip() == target.strip()
        return bool(value == target)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if isinstance(target, bool) or not isinstance(target, int | float):
        return False
    tol = max(float(abs_tol or 0.0), float(rel_tol or 0.0) * abs(float(target)))
    return abs(float(value) - float(target)) <= tol


def _answer_value(rng: np.random.Generator, rule: Mapping[str, Any], met: bool) -> float | None:
    """A value for ``rule`` that is inside its tolerance exactly when ``met``."""
    target = float(rule["target"])
    tol = max(float(rule.get("abs_tol", 0.0)), float(rule.get("rel_tol", 0.0)) * abs(target))
    decimals = max(0, math.ceil(-math.log10(0.05 * tol)))
    if not met and rng.random() < 0.1:
        return None  # key missing from the answer
    for _ in range(20):
        if met:
            value = target + rng.uniform(-0.7, 0.7) * tol
        else:
            value = target + (1 if rng.random() < 0.5 else -1) * tol * rng.uniform(1.3, 3.0)
        value = round(value, decimals)
        if abs(value - target) <= tol and met:
            return value
        if abs(value - target) > tol and not met:
            return value
    return target if met else round(target + 3.0 * tol, decimals)  # pragma: no cover


def _response_text(
    rng: np.random.Generator, model: str, plan: TaskPlan, answer: dict[str, Any] | None
) -> str:
    rec = plan.record
    openers = (
        "Here is my assessment.",
        "Summary of the analysis follows.",
        "Below is a structured answer.",
        "I reviewed the material provided.",
    )
    bullets = (
        "The controls behave as expected.",
        "Replicates agree within the expected variation.",
        "One sample looks like an outlier and is excluded.",
        "The effect is consistent across conditions.",
        "Further validation is needed before drawing conclusions.",
        "Units follow the assay's reporting convention.",
    )
    picks = rng.choice(len(bullets), size=3, replace=False)
    text = (
        f"## Answer ({model})\n\n{openers[int(rng.integers(0, len(openers)))]} "
        f"This concerns the {rec['workflow']} task {rec['id']} in {rec['domain']}.\n\n"
        + "\n".join(f"- {bullets[int(p)]}" for p in picks)
    )
    if answer is not None:
        text += "\n\n```json\n" + json.dumps(answer, indent=2) + "\n```"
    return text


def simulate_responses(
    config: SynthConfig,
    plans: list[TaskPlan],
    truth_rng: np.random.Generator,
    answer_rng: np.random.Generator,
) -> Simulation:
    """Draw the true verdicts, build the responses (with answers) and the truth lines."""
    n_models = config.responses_per_task
    models = [model_name(r) for r in range(n_models)]
    quality = (
        np.linspace(_QUALITY_BEST, _QUALITY_WORST, n_models)
        if n_models > 1
        else np.full(n_models, (_QUALITY_BEST + _QUALITY_WORST) / 2)
    )
    response_ids: list[str] = []
    response_lines: list[str] = []
    truth_lines: list[str] = []
    scores: list[list[float]] = [[] for _ in models]
    row_resp: list[int] = []
    row_crit: list[str] = []
    parts: dict[str, list[Any]] = {
        "truth": [],
        "partial_or_met": [],
        "leniency": [],
        "levels": [],
        "ambiguous": [],
    }
    for plan in plans:
        task_id = plan.record["id"]
        n = plan.points.size
        negative = plan.points < 0
        logits = np.where(
            negative[None, :],
            -1.0 - 0.8 * quality[:, None] + 0.5 * plan.difficulty[None, :],
            quality[:, None] - plan.difficulty[None, :] + 1.0,
        )
        met_matrix = truth_rng.random((n_models, n)) < _sigmoid(logits)
        partial_matrix = truth_rng.random((n_models, n)) < _PARTIAL_SHARE
        top = plan.levels - 1
        level_matrix = np.where(
            met_matrix, top, np.where(partial_matrix & (plan.levels > 2), 1, 0)
        ).astype(np.int64)
        credit_matrix = plan.points * level_matrix / top
        is_auto = np.array([rule is not None for rule in plan.auto_rules], dtype=bool)
        judged = np.flatnonzero(~is_auto)
        crit_ids = [item["id"] for item in plan.record["rubric"]]
        cid_json = [dumps(c) for c in crit_ids]
        three = (plan.levels > 2).tolist()
        max_points = int(plan.points[plan.points > 0].sum())
        for r, model in enumerate(models):
            response_id = f"{task_id}-{model}"
            met = met_matrix[r]
            answer: dict[str, Any] | None = None
            if is_auto.any():
                answer = {}
                for i, rule in enumerate(plan.auto_rules):
                    if rule is not None:
                        value = _answer_value(answer_rng, rule, bool(met[i]))
                        if value is not None:
                            answer[rule["key"].removeprefix("answer.")] = value
                for i, rule in enumerate(plan.auto_rules):
                    if rule is not None and _auto_met(rule, answer) != bool(met[i]):
                        raise AssertionError("auto answer disagrees with truth")  # pragma: no cover
            response: dict[str, Any] = {
                "id": response_id,
                "task_id": task_id,
                "model": model,
                "text": _response_text(answer_rng, model, plan, answer),
            }
            if answer is not None:
                response["answer"] = answer
            response_lines.append(dumps(response))
            response_ids.append(response_id)
            rid = dumps(response_id)
            tail = f', "task_id": {dumps(task_id)}, "model": {dumps(model)}}}'
            lvl = level_matrix[r].tolist()
            truth_lines.extend(
                f'{{"response_id": {rid}, "criterion_id": {cid_json[i]}, '
                f'"met": {"true" if m else "false"}'
                + (f', "level": {lvl[i]}' if three[i] else "")
                + tail
                for i, m in enumerate(met.tolist())
            )
            scores[r].append(min(1.0, max(0.0, float(credit_matrix[r].sum()) / max_points)))
            row_resp.extend([len(response_ids) - 1] * judged.size)
            row_crit.extend(crit_ids[i] for i in judged)
            parts["truth"].append(met[judged])
            parts["partial_or_met"].append(level_matrix[r][judged] >= 1)
            parts["leniency"].append(plan.leniency[judged])
            parts["levels"].append(plan.levels[judged])
            parts["ambiguous"].append(plan.ambiguous[judged])

    def cat(key: str, dtype: Any) -> Any:
        return np.concatenate(parts[key]) if parts[key] else np.zeros(0, dtype=dtype)

    return Simulation(
        models=models,
        quality=quality,
        scores=scores,
        response_ids=response_ids,
        response_lines=response_lines,
        truth_lines=truth_lines,
        row_resp=row_resp,
        row_crit=row_crit,
        truth=cat("truth", bool),
        partial_or_met=cat("partial_or_met", bool),
        leniency=cat("leniency", float),
        levels=cat("levels", np.int64),
        ambiguous=cat("ambiguous", bool),
    )
