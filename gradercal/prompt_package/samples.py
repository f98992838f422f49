"""The benchmark as the exported judge's samples: one per response (:func:`build_samples`).

Each sample is what the Inspect AI task and the promptfoo tests of an exported judge
grade::

    {"id": response id, "input": task prompt, "target": "",
     "metadata": {"task_id", "response_id", "model", "response" (its text),
                  "answer" (its structured answer or null), "artifacts" (the text
                  gradercal's runner sends for the task's attachments),
                  "rubric": [{"id", "criterion", "points", "tags", "levels",
                              "auto": {"key", "target", "abs_tol", "rel_tol"} | null}]}}

The rubric is the whole rubric, auto criteria included (the exported judge evaluates
them locally from ``answer``, as gradercal does). This module imports pandas and the
core only.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from gradercal.frames import Frames
from gradercal.judge.runner import WorkItem

__all__ = ["build_samples", "rubric_items"]


def _optional_float(x: Any) -> float | None:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return None
    return float(x)


def rubric_items(criteria: pd.DataFrame) -> list[dict[str, Any]]:
    """One task's criteria frame (``Frames.criteria`` rows, in position order) as the
    samples' rubric."""
    out = []
    for c in criteria.sort_values("position", kind="stable").to_dict("records"):
        auto = None
        if c.get("kind") == "auto":
            auto = {
                "key": str(c["auto_key"]),
                "target": c["auto_target"],
                "abs_tol": _optional_float(c.get("auto_abs_tol")),
                "rel_tol": _optional_float(c.get("auto_rel_tol")),
            }
        out.append(
            {
                "id": str(c["criterion_id"]),
                "criterion": str(c["text"]),
                "points": int(c["points"]),
                "tags": [str(t) for t in (c.get("tags") or ())],
                "levels": int(c.get("levels") or 2),
                "auto": auto,
            }
        )
    return out


def build_samples(
    frames: Frames,
    items: Iterable[WorkItem],
    texts: Mapping[str, tuple[str, str]] | None = None,
) -> list[dict[str, Any]]:
    """Samples for every response of ``frames``, in the frames' response order.

    Args:
        frames: The benchmark frames (rubrics, models, structured answers).
        items: Work items of the responses' judgment criteria (task prompt, response
            text and artifact text as gradercal's runner sends them).
        texts: Response id → (task prompt, response text) for responses without a
            judgment criterion (else they are left out: there is nothing to judge).
    """
    first: dict[str, WorkItem] = {}
    for it in items:
        first.setdefault(it.response_id, it)
    rubrics = {
        str(task): rubric_items(group)
        for task, group in frames.criteria.groupby("task_id", sort=False)
    }
    out = []
    for r in frames.responses.to_dict("records"):
        rid, task = str(r["response_id"]), str(r["task_id"])
        item = first.get(rid)
        if item is not None:
            task_prompt, text = item.task_prompt, item.response_text
        elif texts is not None and rid in texts:
            task_prompt, text = texts[rid]
        else:
            continue
        out.append(
            {
                "id": rid,
                "input": task_prompt,
                "target": "",
                "metadata": {
                    "task_id": task,
                    "response_id": rid,
                    "model": str(r["model"]),
                    "response": text,
                    "answer": r.get("answer"),
                    "artifacts": item.artifacts if item is not None else "",
                    "rubric": rubrics.get(task, []),
                },
            }
        )
    return out
