"""Domain types of gradercal.

Plain dataclasses shared by every layer: the importers build them, ``gradercal.db``
persists them, scoring and statistics read them (usually as pandas DataFrames).
Identifiers here are the *external* ids used in benchmark files (``task.id``,
``criterion.id``, ``response.id``); database keys never leak into the core.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

#: A response passes a task when its rubric score reaches this share of the points.
DEFAULT_PASS_THRESHOLD = 0.70
#: Version of the benchmark folder format written and read by this release.
FORMAT_VERSION = 1


#: How a verdict is written: :func:`verdict_word`.
MET_WORD = "met"
NOT_MET_WORD = "not met"
#: The words read as a met / not-met verdict (lower case, surrounding space stripped): a
#: table's cells (docs/formats.md), besides booleans and 1/0.
MET_WORDS: frozenset[str] = frozenset({"true", "t", "1", "yes", "y", "met", "pass", "passed"})
NOT_MET_WORDS: frozenset[str] = frozenset(
    {"false", "f", "0", "no", "n", "not met", "not_met", "fail", "failed"}
)


def verdict_word(met: bool | None, missing: str = "—") -> str:
    """``"met"`` or ``"not met"`` for a verdict; ``missing`` for no verdict (None)."""
    if met is None:
        return missing
    return MET_WORD if met else NOT_MET_WORD


def read_verdict_word(text: str) -> bool | None:
    """The verdict a word says (:data:`MET_WORDS`, :data:`NOT_MET_WORDS`, any case), or
    None when it is not a verdict word."""
    word = text.strip().lower()
    return True if word in MET_WORDS else False if word in NOT_MET_WORDS else None


class ArtifactKind(StrEnum):
    """What an artifact is, which decides the viewer that shows it."""

    PDF = "pdf"
    IMAGE = "image"
    TABLE = "table"
    SEQUENCE = "sequence"
    STRUCTURE = "structure"
    TEXT = "text"
    URL = "url"


class CriterionKind(StrEnum):
    """``judgment`` criteria are graded by people or a judge; ``auto`` ones from the answer."""

    JUDGMENT = "judgment"
    AUTO = "auto"


class GraderKind(StrEnum):
    HUMAN = "human"
    JUDGE = "judge"


class AssignmentStatus(StrEnum):
    PENDING = "pending"
    IN_PROGRESS = "in_progress"
    SUBMITTED = "submitted"
    SKIPPED = "skipped"


_SUFFIX_KINDS: dict[str, ArtifactKind] = {
    ".pdf": ArtifactKind.PDF,
    ".png": ArtifactKind.IMAGE,
    ".jpg": ArtifactKind.IMAGE,
    ".jpeg": ArtifactKind.IMAGE,
    ".gif": ArtifactKind.IMAGE,
    ".tif": ArtifactKind.IMAGE,
    ".tiff": ArtifactKind.IMAGE,
    ".svg": ArtifactKind.IMAGE,
    ".webp": ArtifactKind.IMAGE,
    ".csv": ArtifactKind.TABLE,
    ".tsv": ArtifactKind.TABLE,
    ".xlsx": ArtifactKind.TABLE,
    ".xls": ArtifactKind.TABLE,
    ".parquet": ArtifactKind.TABLE,
    ".fasta": ArtifactKind.SEQUENCE,
    ".fa": ArtifactKind.SEQUENCE,
    ".fna": ArtifactKind.SEQUENCE,
    ".faa": ArtifactKind.SEQUENCE,
    ".gb": ArtifactKind.SEQUENCE,
    ".gbk": ArtifactKind.SEQUENCE,
    ".genbank": ArtifactKind.SEQUENCE,
    ".pdb": ArtifactKind.STRUCTURE,
    ".cif": ArtifactKind.STRUCTURE,
    ".mmcif": ArtifactKind.STRUCTURE,
    ".sdf": ArtifactKind.STRUCTURE,
    ".mol": ArtifactKind.STRUCTURE,
    ".mol2": ArtifactKind.STRUCTURE,
    ".txt": ArtifactKind.TEXT,
    ".md": ArtifactKind.TEXT,
    ".json": ArtifactKind.TEXT,
}


def artifact_kind_for(name: str) -> ArtifactKind:
    """Guess an artifact's kind from its file name (``text`` when unknown)."""
    lower = name.lower()
    for suffix, kind in _SUFFIX_KINDS.items():
        if lower.endswith(suffix):
            return kind
    return ArtifactKind.TEXT


@dataclass(frozen=True)
class AutoRule:
    """How an ``auto`` criterion is graded from a response's structured answer.

    ``key`` is a dotted path into the answer (``"answer.kd_nM"``; a leading ``answer.``
    is optional, integers index lists). With neither tolerance the answer must equal
    ``target`` exactly; with ``abs_tol`` and/or ``rel_tol`` a numeric answer is met when
    ``|answer - target| <= max(abs_tol, rel_tol * |target|)``.
    """

    key: str
    target: Any
    abs_tol: float | None = None
    rel_tol: float | None = None


@dataclass(frozen=True)
class Criterion:
    """One weighted rubric line. ``points`` may be negative (a penalty when met).

    ``levels`` is the size of the ordinal scale: 2 is met / not met, 3 adds "partial".
    """

    id: str
    text: str
    points: int
    position: int = 0
    tags: tuple[str, ...] = ()
    auto: AutoRule | None = None
    levels: int = 2

    @property
    def kind(self) -> CriterionKind:
        return CriterionKind.AUTO if self.auto is not None else CriterionKind.JUDGMENT


@dataclass(frozen=True)
class Artifact:
    """A file or URL a task ships with. Files are identified by the sha256 of their bytes."""

    kind: ArtifactKind
    title: str
    position: int = 0
    path: str | None = None  # relative to the benchmark folder, as written in tasks.jsonl
    original_name: str | None = None
    sha256: str | None = None
    size: int | None = None
    url: str | None = None
    media_type: str | None = None


@dataclass(frozen=True)
class Task:
    id: str
    prompt: str
    workflow: str | None = None
    domain: str | None = None
    answer_format: str | None = None
    tags: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)
    artifacts: tuple[Artifact, ...] = ()
    criteria: tuple[Criterion, ...] = ()
    #: 1 as first written, one more per revision (format v1 ``version``; not part of
    #: :meth:`content_hash`, which fingerprints the content alone)
    version: int = 1

    @property
    def has_artifacts(self) -> bool:
        return bool(self.artifacts)

    def criterion(self, criterion_id: str) -> Criterion:
        for c in self.criteria:
            if c.id == criterion_id:
                return c
        raise KeyError(criterion_id)

    def content_hash(self) -> str:
        """A stable fingerprint of everything that defines the task (artifact bytes by hash)."""
        return stable_hash(
            [
                self.id,
                self.prompt,
                self.workflow,
                self.domain,
                self.answer_format,
                self.tags,
                self.metadata,
                [
                    [a.kind.value, a.title, a.position, a.path, a.sha256, a.size, a.url]
                    for a in self.artifacts
                ],
                [
                    [
                        c.id,
                        c.text,
                        c.points,
                        c.position,
                        c.tags,
                        c.levels,
                        None
                        if c.auto is None
                        else [c.auto.key, c.auto.target, c.auto.abs_tol, c.auto.rel_tol],
                    ]
                    for c in self.criteria
                ],
            ]
        )


@dataclass(frozen=True)
class Response:
    id: str
    task_id: str
    model: str
    text: str
    answer: Any = None

    def content_hash(self) -> str:
        return stable_hash([self.id, self.task_id, self.model, self.text, self.answer])


@dataclass(frozen=True)
class Grader:
    name: str
    kind: GraderKind = GraderKind.HUMAN
    model: str | None = None
    prompt_version: str | None = None
    parameters: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Judgment:
    """One grader's verdict on one criterion of one response.

    ``met`` is the binary verdict; ``level`` the ordinal level on the criterion's scale
    (0 … levels-1) when one was given. ``unclear`` flags a criterion the grader found
    ambiguous, explained in ``unclear_note``.
    """

    response_id: str
    criterion_id: str
    grader: str
    grader_kind: GraderKind = GraderKind.HUMAN
    met: bool | None = None
    level: int | None = None
    confidence: float | None = None
    rationale: str | None = None
    unclear: bool = False
    unclear_note: str | None = None
    #: When the verdict was first given and last changed (timezone-aware; None: now).
    created_at: datetime | None = None
    updated_at: datetime | None = None
    #: The version of the task the verdict was given under (format v1 ``version``;
    #: None: the task's current version when it is imported).
    task_version: int | None = None


def judgment_of(
    response_id: str,
    criterion_id: str,
    grader: str,
    grader_kind: GraderKind,
    met: bool | None,
    level: int | None,
    confidence: float | None,
    rationale: str | None,
    unclear: bool,
    unclear_note: str | None,
    created_at: datetime | None,
    updated_at: datetime | None,
    task_version: int | None = None,
) -> Judgment:
    """``Judgment(...)`` with every field given, made faster for readers of large files.

    A frozen dataclass sets each field through ``object.__setattr__``, twelve calls per
    judgment: about 6 µs, over a second for a benchmark's 222,000 verdicts. This fills the
    instance's ``__dict__`` in one update instead; the object is the same in every way
    (equal, same hash, still frozen). Checked against the constructor in the tests.
    """
    made = _new(Judgment)
    made.__dict__.update(
        response_id=response_id,
        criterion_id=criterion_id,
        grader=grader,
        grader_kind=grader_kind,
        met=met,
        level=level,
        confidence=confidence,
        rationale=rationale,
        unclear=unclear,
        unclear_note=unclear_note,
        created_at=created_at,
        updated_at=updated_at,
        task_version=task_version,
    )
    return made


_new = object.__new__


@dataclass(frozen=True)
class Adjudication:
    """The final verdict on one criterion of one response, separate from graders' judgments."""

    response_id: str
    criterion_id: str
    met: bool
    adjudicator: str
    note: str | None = None
    level: int | None = None
    #: When the decision was first made and last changed (timezone-aware; None: now).
    created_at: datetime | None = None
    updated_at: datetime | None = None


@dataclass(frozen=True)
class Benchmark:
    name: str
    pass_threshold: float = DEFAULT_PASS_THRESHOLD
    format_version: int = FORMAT_VERSION
    #: general grading instructions shown to graders beside the rubric (None: none given)
    instructions: str | None = None


@dataclass
class BenchmarkData:
    """Everything read from one benchmark folder or file, validated, ready to persist.

    ``blobs`` maps the sha256 of each artifact file to its absolute path on disk;
    ``notes`` says what the reader read but did not import (shown with the import's
    summary).
    """

    benchmark: Benchmark
    tasks: list[Task] = field(default_factory=list)
    responses: list[Response] = field(default_factory=list)
    judgments: list[Judgment] = field(default_factory=list)
    blobs: dict[str, str] = field(default_factory=dict)
    adjudications: list[Adjudication] = field(default_factory=list)
    #: The model behind each judge grader named in the judgments, where the file says.
    grader_models: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def stable_hash(obj: Any) -> str:
    """sha256 of the canonical JSON form of ``obj`` (sorted keys, no whitespace)."""
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# --------------------------------------------------------------- task review survey


@dataclass(frozen=True)
class ReviewDimension:
    """One statement of the task review survey, answered on :data:`LIKERT`."""

    key: str
    statement: str


#: The task review survey: each statement is answered on a 5-point agreement scale.
REVIEW_DIMENSIONS: tuple[ReviewDimension, ...] = (
    ReviewDimension("real_research", "The task reflects real research work."),
    ReviewDimension(
        "reasoning_skill", "The task tests the right scientific reasoning and domain skill."
    ),
    ReviewDimension(
        "grounded",
        "The task is grounded and answerable from the evidence, the artifacts or expert consensus.",
    ),
    ReviewDimension("strong_task", "Overall, this is a strong evaluation task."),
)

#: The 5-point scale of the task review survey.
LIKERT: dict[int, str] = {
    1: "Strongly disagree",
    2: "Disagree",
    3: "Neither agree nor disagree",
    4: "Agree",
    5: "Strongly agree",
}
