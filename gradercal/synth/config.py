"""What a synthetic benchmark is asked for and what was written: :class:`SynthConfig`,
:class:`SynthSummary`, the models' names, and the array types and JSON line writer the
parts of :mod:`gradercal.synth` share.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]


BoolArray = npt.NDArray[np.bool_]


IntArray = npt.NDArray[np.int64]


def _default_leniency() -> Mapping[str, float]:
    return {"axis:completeness": 0.15, "axis:communication": 0.1}


@dataclass(frozen=True)
class SynthConfig:
    """Parameters of a synthetic benchmark.

    Attributes:
        tasks: Number of tasks.
        criteria_per_task: Mean number of criteria per task. Counts vary between
            ``max(1, round(0.6 * M))`` and ``round(1.4 * M)``; their total is exactly
            ``round(tasks * M)``.
        responses_per_task: Responses per task, one per model (``model-a``, ``model-b``, …).
        human_graders: Number of simulated experts (``expert-01``, …).
        judge: Whether the LLM judge (``judge``) grades every judgment criterion.
        artifacts_per_task: Mean number of artifact files per task; the total is exactly
            ``round(tasks * A)``, spread over about half of the tasks.
        seed: Seed of ``numpy.random.default_rng``.
        human_sensitivity: P(human says met | truly met).
        human_specificity: P(human says not met | truly not met).
        judge_sensitivity: P(judge says met | truly met).
        judge_specificity: P(judge says not met | truly not met), before leniency.
        judge_leniency: Extra P(judge says met | truly not met) for criteria carrying the
            tag (the largest applies when several match).
        numeric_task_share: Share of tasks with ``answer_format`` ``"json"`` and 2-4
            ``auto`` criteria.
        overlap: Humans per response (rotated, balanced); ``None`` = every human grades
            every response.
        pass_threshold: Written to ``benchmark.json``; also used for the true pass rates.
    """

    tasks: int = 40
    criteria_per_task: float = 25.0
    responses_per_task: int = 3
    human_graders: int = 3
    judge: bool = True
    artifacts_per_task: float = 1.33
    seed: int = 0
    human_sensitivity: float = 0.92
    human_specificity: float = 0.90
    judge_sensitivity: float = 0.95
    judge_specificity: float = 0.85
    judge_leniency: Mapping[str, float] = field(default_factory=_default_leniency, hash=False)
    numeric_task_share: float = 0.1
    overlap: int | None = None
    pass_threshold: float = 0.7

    def __post_init__(self) -> None:
        object.__setattr__(self, "judge_leniency", MappingProxyType(dict(self.judge_leniency)))
        if self.tasks < 1:
            raise ValueError("tasks must be at least 1")
        if not self.criteria_per_task > 0:
            raise ValueError("criteria_per_task must be positive")
        if self.responses_per_task < 0:
            raise ValueError("responses_per_task must not be negative")
        if self.human_graders < 0:
            raise ValueError("human_graders must not be negative")
        if not self.artifacts_per_task >= 0:
            raise ValueError("artifacts_per_task must not be negative")
        for name in (
            "human_sensitivity",
            "human_specificity",
            "judge_sensitivity",
            "judge_specificity",
            "numeric_task_share",
        ):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {value}")
        for tag, extra in self.judge_leniency.items():
            if not 0.0 <= extra <= 1.0:
                raise ValueError(f"judge_leniency[{tag!r}] must be in [0, 1], got {extra}")
        if self.overlap is not None and not 1 <= self.overlap <= self.human_graders:
            raise ValueError(
                f"overlap must be between 1 and human_graders ({self.human_graders}), "
                f"got {self.overlap}"
            )
        if not 0.0 < self.pass_threshold <= 1.0:
            raise ValueError("pass_threshold must be in (0, 1]")

    def to_dict(self) -> dict[str, Any]:
        """Return the configuration as JSON-ready plain data."""
        out: dict[str, Any] = {f.name: getattr(self, f.name) for f in fields(self)}
        out["judge_leniency"] = dict(sorted(self.judge_leniency.items()))
        return out


@dataclass(frozen=True)
class SynthSummary:
    """What :func:`generate` wrote.

    Attributes:
        out_dir: The benchmark folder.
        tasks: Lines in ``tasks.jsonl``.
        criteria: Rubric items over all tasks (``auto`` ones included).
        artifacts: Artifact files written (URL references are not counted).
        responses: Lines in ``responses.jsonl``.
        judgments: Lines in ``judgments.jsonl`` (humans and judge).
        truth_path: Path of ``truth.jsonl``.
        url_artifacts: URL artifact references (no file).
    """

    out_dir: Path
    tasks: int
    criteria: int
    artifacts: int
    responses: int
    judgments: int
    truth_path: Path
    url_artifacts: int = 0

    def to_dict(self) -> dict[str, Any]:
        """Return the summary as JSON-ready plain data (paths as strings)."""
        return {
            "out_dir": str(self.out_dir),
            "tasks": self.tasks,
            "criteria": self.criteria,
            "artifacts": self.artifacts,
            "url_artifacts": self.url_artifacts,
            "responses": self.responses,
            "judgments": self.judgments,
            "truth_path": str(self.truth_path),
        }


def model_name(index: int) -> str:
    """Name of the ``index``-th model: ``model-a`` … ``model-z``, ``model-aa``, …."""
    letters = ""
    n = index + 1
    while n > 0:
        n, rem = divmod(n - 1, 26)
        letters = chr(ord("a") + rem) + letters
    return f"model-{letters}"


#: The JSON encoder of every line the generator writes (non-ASCII kept as is).
ENCODER = json.JSONEncoder(ensure_ascii=False)


def dumps(obj: Any) -> str:
    """One JSON line, as ``json.dumps(obj, ensure_ascii=False)`` writes it."""
    return ENCODER.encode(obj)
