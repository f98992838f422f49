"""gradercal: expert grading, agreement statistics and LLM-judge calibration for rubric benchmarks.

The core package holds domain types, file formats, scoring and statistics; it imports
neither Qt nor SQLAlchemy. Persistence lives in :mod:`gradercal.db`, the desktop app in
:mod:`gradercal.ui`, and the command line in :mod:`gradercal.cli`.
"""

from __future__ import annotations

from gradercal.errors import ConflictError, GradercalError, NotFoundError, Problem, ValidationError
from gradercal.model import (
    DEFAULT_PASS_THRESHOLD,
    FORMAT_VERSION,
    Adjudication,
    Artifact,
    ArtifactKind,
    AssignmentStatus,
    AutoRule,
    Benchmark,
    BenchmarkData,
    Criterion,
    CriterionKind,
    Grader,
    GraderKind,
    Judgment,
    Response,
    Task,
)

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_PASS_THRESHOLD",
    "FORMAT_VERSION",
    "Adjudication",
    "Artifact",
    "ArtifactKind",
    "AssignmentStatus",
    "AutoRule",
    "Benchmark",
    "BenchmarkData",
    "ConflictError",
    "Criterion",
    "CriterionKind",
    "Grader",
    "GraderKind",
    "GradercalError",
    "Judgment",
    "NotFoundError",
    "Problem",
    "Response",
    "Task",
    "ValidationError",
    "__version__",
]
