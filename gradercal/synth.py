"""Synthetic benchmarks with known ground truth.

:func:`generate` writes a complete benchmark folder in format v1 (see ``docs/formats.md``):
tasks with weighted rubrics and artifact files, one response per model and task, and the
verdicts of simulated human experts and an LLM judge. Alongside it writes the truth the
graders were simulated from, so statistics computed from the folder can be checked
against it:

* ``truth.jsonl``: one line per (response, criterion), ``auto`` criteria included:
  ``{"response_id", "criterion_id", "met", "task_id", "model"}``, plus ``"level"`` (the
  true ordinal level) on 3-level criteria.
* ``truth.json``: the configuration, each grader's true sensitivity, specificity and
  per-tag leniency, each model's latent quality, true mean score and true pass rate.

The generative model:

* Every model ``model-a``, ``model-b``, … has a latent quality (``model-a`` is the best);
  every criterion a latent difficulty (task effect included). A positive criterion is
  truly met with probability ``sigmoid(quality - difficulty + 1)``; a penalty (negative
  points) truly applies with probability ``sigmoid(-1 - 0.8 * quality + 0.5 * difficulty)``,
  so good models incur fewer penalties.
* On a 3-level criterion (``"levels": 3``) the true level is 2 when met; when not met it
  is 1 ("partial") with probability 0.4, else 0. True scores credit
  ``points * level / (levels - 1)``, as :mod:`gradercal.analysis.scoring` does.
* A human says "met" with probability ``human_sensitivity`` when the criterion is truly
  met and ``1 - human_specificity`` when it is not; the judge likewise with its own
  rates, plus ``judge_leniency[tag]`` (the largest over the criterion's tags) on truly
  unmet criteria. Verdicts are independent given the truth. A "met" verdict on a
  3-level criterion has level 2; a "not met" one is partial mostly when the truth is
  partial or met. The judge's ``confidence`` is higher when its verdict is right.
  Humans occasionally add a rationale, and flag ambiguous criteria as unclear.
* ``auto`` criteria are never judged; the response's ``answer`` lands inside the
  tolerance exactly when the criterion is truly met (or lacks the key, 10% of misses).

Generation is deterministic: the same :class:`SynthConfig` writes byte-identical files.
Random numbers come from independent streams spawned from
``numpy.random.default_rng(seed)``, so tasks, responses and truth do not change when only
the graders (``human_graders``, ``judge``, ``overlap``, their rates) change.

This module is core code: it needs numpy and the standard library only.
"""

from __future__ import annotations

import json
import math
import shutil
import struct
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
import numpy.typing as npt

from gradercal.model import FORMAT_VERSION, stable_hash

__all__ = [
    "AXIS_TAGS",
    "DOMAINS",
    "WORKFLOWS",
    "SynthConfig",
    "SynthSummary",
    "generate",
    "model_name",
]

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]

WORKFLOWS: tuple[str, ...] = (
    "evidence handling",
    "analysis",
    "design and optimization",
    "scientific reasoning",
    "validation and operations",
    "translation",
    "scientific communication",
)

#: Domain -> (assays, analytes) used to fill the text templates.
_DOMAIN_VOCAB: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "immunology": (
        ("ELISA", "flow cytometry panel", "western blot"),
        ("IL-6", "CD4+ T cells", "anti-spike IgG"),
    ),
    "genomics": (
        ("RNA-seq run", "qPCR assay", "variant calling pipeline"),
        ("BRCA1 expression", "the GAPDH transcript", "the rs334 variant"),
    ),
    "structural biology": (
        ("cryo-EM map", "crystal structure", "SEC-MALS run"),
        ("the kinase domain", "the ligand-binding pocket", "the dimer interface"),
    ),
    "pharmacology": (
        ("dose-response assay", "binding assay", "PK study"),
        ("compound 7", "the lead inhibitor", "the active metabolite"),
    ),
    "microbiology": (
        ("MIC assay", "growth curve", "16S sequencing run"),
        ("E. coli K-12", "the biofilm fraction", "the resistant isolate"),
    ),
    "neuroscience": (
        ("patch-clamp recording", "calcium imaging session", "behavioural assay"),
        ("the CA1 neurons", "GCaMP signal", "the NMDA current"),
    ),
    "cell biology": (
        ("viability assay", "immunofluorescence stain", "cell cycle analysis"),
        ("HeLa cells", "the mitochondrial marker", "the G2/M fraction"),
    ),
    "clinical chemistry": (
        ("HbA1c assay", "troponin test", "lipid panel"),
        ("serum creatinine", "LDL cholesterol", "high-sensitivity troponin"),
    ),
}
DOMAINS: tuple[str, ...] = tuple(_DOMAIN_VOCAB)

AXIS_TAGS: tuple[str, ...] = (
    "axis:accuracy",
    "axis:completeness",
    "axis:reasoning",
    "axis:safety",
    "axis:communication",
)
_AXIS_WEIGHTS = np.array([0.34, 0.26, 0.2, 0.08, 0.12])

#: Positive criterion templates per axis; fields: {assay}, {analyte}, {n}, {m}, {well}.
_POSITIVE_TEMPLATES: dict[str, tuple[str, ...]] = {
    "axis:accuracy": (
        "States the {assay}'s detection limit for sample {n}",
        "Reports the level of {analyte} in sample {n} with units",
        "Identifies {analyte} as the main driver of the effect in condition {n}",
        "Gives the correct fold change of {analyte} between conditions {n} and {m}",
        "Uses the calibration curve of the {assay} to quantify sample {n}",
        "Reads the correct value for well {well} from the {assay} export",
        "Attributes the shift in sample {n} to {analyte}, not to the vehicle",
    ),
    "axis:completeness": (
        "Mentions the negative control of the {assay} run {n}",
        "Lists all replicates used for sample {n}",
        "Addresses the outlier in well {well}",
        "Covers both time points of experiment {n}",
        "Reports results for every condition from {n} to {m}",
        "Includes the blank-corrected values for plate {n}",
    ),
    "axis:reasoning": (
        "Explains why the {assay} signal in sample {n} is saturated",
        "Justifies the statistical test used to compare {analyte} in runs {n} and {m}",
        "Distinguishes correlation from causation for {analyte} in cohort {n}",
        "Considers batch effects between runs {n} and {m}",
        "Explains the discrepancy between replicate {n} and replicate {m}",
    ),
    "axis:safety": (
        "Flags the biosafety level required to handle sample {n}",
        "Warns against using the {assay} result of sample {n} alone for clinical decisions",
        "Notes that sample {n} must be handled as potentially infectious",
    ),
    "axis:communication": (
        "Summarizes the conclusion about {analyte} from run {n} in the first paragraph",
        "Presents the {assay} results for samples {n}-{m} in a table",
        "Defines every abbreviation used in the section on run {n}",
        "Labels the axes of the plot for experiment {n} with units",
    ),
}
#: Penalty templates (criterion "met" means the mistake was made) with their axis tag.
_NEGATIVE_TEMPLATES: tuple[tuple[str, str], ...] = (
    ("Recommends an unvalidated antibody for the {assay} of sample {n}", "axis:safety"),
    (
        "Claims a significant change in {analyte} in run {n} without a statistical test",
        "axis:reasoning",
    ),
    ("Invents a reference for the {assay} protocol", "axis:accuracy"),
    ("Confuses sample {n} with sample {m}", "axis:accuracy"),
    ("Suggests skipping the controls of the {assay} in run {n}", "axis:safety"),
    ("Reports {analyte} for sample {n} without units", "axis:communication"),
)

_PROMPT_TEMPLATES: dict[str, str] = {
    "evidence handling": (
        "Review the {assay} data for {analyte} and decide which of samples 1-{k} "
        "support the claim that it changes under treatment."
    ),
    "analysis": (
        "Analyse the {assay} results for {analyte} across samples 1-{k} and report the key "
        "quantities with their uncertainty."
    ),
    "design and optimization": (
        "Propose an optimized {assay} protocol that measures {analyte} with at most {k} samples."
    ),
    "scientific reasoning": (
        "Explain what the {assay} results imply about {analyte} in condition {k}."
    ),
    "validation and operations": (
        "Write a validation plan for the {assay} that measures {analyte}, "
        "including acceptance criteria for {k} runs."
    ),
    "translation": (
        "Rewrite the {assay} findings on {analyte} for a clinical audience without "
        "losing accuracy; keep it under {k}0 words."
    ),
    "scientific communication": (
        "Draft a short results paragraph on {analyte} from the {assay} for a lab meeting, "
        "citing {k} key numbers."
    ),
}

#: Quantities for numeric (auto-graded) criteria: key, label, unit, low, high, log-scale.
_QUANTITIES: tuple[tuple[str, str, str, float, float, bool], ...] = (
    ("kd_nM", "Kd", "nM", 0.5, 500.0, True),
    ("ic50_uM", "IC50", "µM", 0.01, 50.0, True),
    ("ec50_nM", "EC50", "nM", 1.0, 1000.0, True),
    ("tm_C", "the melting temperature", "°C", 40.0, 90.0, False),
    ("yield_pct", "the yield", "%", 5.0, 95.0, False),
    ("half_life_h", "the half-life", "h", 0.5, 72.0, True),
    ("gc_content_pct", "the GC content", "%", 30.0, 70.0, False),
    ("fold_change", "the fold change", "x", 0.2, 20.0, True),
    ("mw_kDa", "the molecular weight", "kDa", 10.0, 250.0, True),
    ("doubling_time_min", "the doubling time", "min", 20.0, 120.0, False),
)

_JUDGE_MET_RATIONALES: tuple[str, ...] = (
    "The response addresses this explicitly.",
    "Stated clearly in the answer.",
    "The relevant passage satisfies the criterion.",
    "Covered, with supporting detail.",
)
_JUDGE_UNMET_RATIONALES: tuple[str, ...] = (
    "The response does not address this.",
    "Only mentioned in passing, not satisfied.",
    "No passage satisfies the criterion.",
    "The answer is missing this point.",
)
_HUMAN_RATIONALES: tuple[str, ...] = (
    "Borderline; read generously.",
    "Stated, but without units.",
    "Partly addressed in the second paragraph.",
    "Not where I expected it, but present.",
)

_QUALITY_BEST = 1.0
_QUALITY_WORST = -0.6
_SHARE_WITH_ARTIFACTS = 0.5
_URL_SHARE = 0.04
_NEGATIVE_SHARE = 0.1
_THREE_LEVEL_SHARE = 0.15
_AMBIGUOUS_SHARE = 0.02
#: P(true level is "partial" | truly not met) on a 3-level criterion.
_PARTIAL_SHARE = 0.4


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


# --------------------------------------------------------------------------- helpers


def model_name(index: int) -> str:
    """Name of the ``index``-th model: ``model-a`` … ``model-z``, ``model-aa``, …."""
    letters = ""
    n = index + 1
    while n > 0:
        n, rem = divmod(n - 1, 26)
        letters = chr(ord("a") + rem) + letters
    return f"model-{letters}"


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


def _sigmoid(x: FloatArray) -> FloatArray:
    return 1.0 / (1.0 + np.exp(-x))


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


_ENCODER = json.JSONEncoder(ensure_ascii=False)


def _dumps(obj: Any) -> str:
    """One JSON line, as ``json.dumps(obj, ensure_ascii=False)`` writes it."""
    return _ENCODER.encode(obj)


# --------------------------------------------------------------------------- artifacts


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return (
        struct.pack(">I", len(data))
        + kind
        + data
        + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    )


def _png(pixels: npt.NDArray[np.uint8], comment: str) -> bytes:
    """Encode a 2-D uint8 array as a grayscale PNG with a ``Comment`` text chunk."""
    height, width = pixels.shape
    raw = np.zeros((height, width + 1), dtype=np.uint8)  # filter byte 0 per row
    raw[:, 1:] = pixels
    return (
        b"\x89PNG\r\n\x1a\n"
        + _png_chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
        + _png_chunk(b"tEXt", b"Comment\x00" + comment.encode("latin-1"))
        + _png_chunk(b"IDAT", zlib.compress(raw.tobytes(), 6))
        + _png_chunk(b"IEND", b"")
    )


def _pdf(lines: list[str]) -> bytes:
    """A minimal one-page PDF showing ``lines`` in Helvetica."""

    def esc(s: str) -> str:
        return s.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")

    text_ops = " ".join(f"({esc(line)}) Tj T*" for line in lines)
    stream = f"BT /F1 11 Tf 14 TL 36 160 Td {text_ops} ET".encode("latin-1")
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 360 200] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for i, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for off in offsets:
        out += b"%010d 00000 n \n" % off
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


_Maker = Callable[[np.random.Generator, str, int, tuple[str, str]], bytes]


def _make_table(rng: np.random.Generator, task_id: str, k: int, vocab: tuple[str, str]) -> bytes:
    rows = ["sample_id,condition,replicate,signal,background"]
    signal = rng.lognormal(3.0, 0.6, size=8)
    background = rng.uniform(0.5, 3.0, size=8)
    for i in range(8):
        rows.append(
            f"{task_id}-{k}-{i + 1:02d},{'treated' if i % 2 else 'control'},{i // 2 + 1},"
            f"{signal[i]:.3f},{background[i]:.3f}"
        )
    return ("\n".join(rows) + "\n").encode()


def _make_fasta(rng: np.random.Generator, task_id: str, k: int, vocab: tuple[str, str]) -> bytes:
    out = []
    alphabet = np.frombuffer(b"ACGT", dtype=np.uint8)
    for rec in range(2):
        seq = alphabet[rng.integers(0, 4, size=int(rng.integers(90, 180)))].tobytes().decode()
        out.append(f">{task_id}_{k}_seq{rec + 1} synthetic construct for {vocab[1]}")
        out.extend(seq[i : i + 60] for i in range(0, len(seq), 60))
    return ("\n".join(out) + "\n").encode()


def _make_text(rng: np.random.Generator, task_id: str, k: int, vocab: tuple[str, str]) -> bytes:
    day = int(rng.integers(1, 28))
    temp = rng.uniform(20.0, 37.5)
    lines = [
        f"Lab notes - task {task_id}, file {k}",
        "",
        f"Day {day}: ran the {vocab[0]} for {vocab[1]}.",
        f"Incubation at {temp:.1f} C; plate {int(rng.integers(1, 9))} looked uneven.",
        "Controls behaved as expected; see the table for raw values.",
    ]
    return ("\n".join(lines) + "\n").encode()


def _make_png(rng: np.random.Generator, task_id: str, k: int, vocab: tuple[str, str]) -> bytes:
    height, width, lanes = 32, 48, 6
    img = np.full((height, width), 235.0)
    lane_w = width // lanes
    for lane in range(lanes):
        for _ in range(int(rng.integers(1, 4))):
            y = int(rng.integers(2, height - 3))
            img[y : y + 2, lane * lane_w + 1 : (lane + 1) * lane_w - 1] = rng.uniform(20, 120)
    img += rng.normal(0.0, 6.0, size=img.shape)
    pixels = np.clip(img, 0, 255).astype(np.uint8)
    return _png(pixels, f"gradercal synthetic gel, task {task_id}, file {k}")


def _make_pdf(rng: np.random.Generator, task_id: str, k: int, vocab: tuple[str, str]) -> bytes:
    return _pdf(
        [
            f"Protocol for the {vocab[0]}",
            f"Task {task_id}, file {k}",
            f"Incubate {int(rng.integers(10, 90))} min at {int(rng.integers(4, 38))} C.",
            f"Target: {vocab[1]}",
        ]
    )


def _make_pdb(rng: np.random.Generator, task_id: str, k: int, vocab: tuple[str, str]) -> bytes:
    lines = [
        f"HEADER    SYNTHETIC MODEL                         {task_id[:4]:<4}",
        f"TITLE     {task_id} FILE {k}",
    ]
    residues = ("ALA", "GLY", "SER", "LEU", "LYS", "ASP")
    coords = np.cumsum(rng.normal(0.0, 1.5, size=(12, 3)), axis=0)
    for i, (x, y, z) in enumerate(coords, start=1):
        res = residues[int(rng.integers(0, len(residues)))]
        lines.append(
            f"ATOM  {i:5d}  CA  {res} A{i:4d}    {x:8.3f}{y:8.3f}{z:8.3f}  1.00 20.00           C"
        )
    lines += ["TER", "END"]
    return ("\n".join(lines) + "\n").encode()


#: Artifact kinds: stem, suffix, title, maker, weight.
_ARTIFACT_KINDS: tuple[tuple[str, str, str, _Maker, float], ...] = (
    ("plate_readout", ".csv", "Plate reader export", _make_table, 0.3),
    ("construct", ".fasta", "Construct sequences", _make_fasta, 0.15),
    ("lab_notes", ".txt", "Lab notes", _make_text, 0.15),
    ("gel_image", ".png", "Gel image", _make_png, 0.2),
    ("protocol", ".pdf", "Protocol", _make_pdf, 0.12),
    ("model", ".pdb", "Structural model", _make_pdb, 0.08),
)
_ARTIFACT_WEIGHTS = np.array([k[4] for k in _ARTIFACT_KINDS])


# --------------------------------------------------------------------------- generation


@dataclass
class _TaskPlan:
    """One task's record plus the latent arrays the truth is drawn from."""

    record: dict[str, Any]
    points: IntArray
    difficulty: FloatArray
    auto_rules: list[dict[str, Any] | None]
    leniency: FloatArray
    levels: IntArray
    ambiguous: BoolArray


def _numeric_rules(rng: np.random.Generator, count: int) -> tuple[list[dict[str, Any]], list[str]]:
    picks = rng.choice(len(_QUANTITIES), size=count, replace=False)
    rules: list[dict[str, Any]] = []
    texts: list[str] = []
    for q in picks:
        key, label, unit, lo, hi, log = _QUANTITIES[int(q)]
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


def _plan_tasks(
    config: SynthConfig, rng: np.random.Generator, text_rng: np.random.Generator
) -> list[_TaskPlan]:
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

    plans: list[_TaskPlan] = []
    for t in range(n_tasks):
        task_id = f"S{t + 1:04d}"
        n = int(counts[t])
        domain = DOMAINS[int(domains[t])]
        workflow = WORKFLOWS[int(workflows[t])]
        assays, analytes = _DOMAIN_VOCAB[domain]
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
        axes = rng.choice(len(AXIS_TAGS), size=n, p=_AXIS_WEIGHTS)
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
                    options, axis = _NEGATIVE_TEMPLATES, ""
                else:
                    axis = AXIS_TAGS[int(axes[i])]
                    options = tuple((t, axis) for t in _POSITIVE_TEMPLATES[axis])
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
            + _PROMPT_TEMPLATES[workflow].format(assay=assay, analyte=analyte, k=k)
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
            _TaskPlan(
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
    rng: np.random.Generator, model: str, plan: _TaskPlan, answer: dict[str, Any] | None
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


@dataclass
class _Simulation:
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


def _simulate_responses(
    config: SynthConfig,
    plans: list[_TaskPlan],
    truth_rng: np.random.Generator,
    answer_rng: np.random.Generator,
) -> _Simulation:
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
        cid_json = [_dumps(c) for c in crit_ids]
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
            response_lines.append(_dumps(response))
            response_ids.append(response_id)
            rid = _dumps(response_id)
            tail = f', "task_id": {_dumps(task_id)}, "model": {_dumps(model)}}}'
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

    return _Simulation(
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


def _prepare_out_dir(out: Path, overwrite: bool) -> None:
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"{out} exists and is not a directory")
    if out.is_dir() and any(out.iterdir()):
        if not overwrite:
            raise FileExistsError(f"{out} is not empty")
        if not (out / "truth.json").is_file():
            raise FileExistsError(
                f"{out} is not empty and holds no synthetic benchmark (truth.json); "
                "refusing to overwrite it"
            )
        for name in _WRITTEN_FILES:
            (out / name).unlink(missing_ok=True)
        shutil.rmtree(out / "artifacts", ignore_errors=True)
    out.mkdir(parents=True, exist_ok=True)


_WRITTEN_FILES = (
    "benchmark.json",
    "tasks.jsonl",
    "responses.jsonl",
    "judgments.jsonl",
    "truth.jsonl",
    "truth.json",
)


def generate(
    out_dir: str | Path, config: SynthConfig | None = None, *, overwrite: bool = False
) -> SynthSummary:
    """Write a synthetic benchmark folder (format v1) with its ground truth.

    Args:
        out_dir: Folder to write; created when missing. It must be empty unless
            ``overwrite`` is set.
        config: The parameters; ``SynthConfig()`` when omitted.
        overwrite: Replace a previous synthetic benchmark in ``out_dir`` (a folder holding
            ``truth.json``). Other non-empty folders are never touched.

    Returns:
        Counts of what was written.

    Raises:
        FileExistsError: ``out_dir`` is not empty (and not a synthetic benchmark to
            overwrite).
        NotADirectoryError: ``out_dir`` is a file.
    """
    config = config if config is not None else SynthConfig()
    out = Path(out_dir)
    _prepare_out_dir(out, overwrite)
    (
        struct_rng,
        text_rng,
        truth_rng,
        answer_rng,
        human_rng,
        judge_rng,
        artifact_rng,
    ) = np.random.default_rng(config.seed).spawn(7)

    plans = _plan_tasks(config, struct_rng, text_rng)
    n_files, n_urls = _write_artifacts(out, config, plans, artifact_rng)

    sim = _simulate_responses(config, plans, truth_rng, answer_rng)
    judgment_lines = _judgment_lines(config, sim, human_rng, judge_rng)
    models, quality, scores = sim.models, sim.quality, sim.scores
    response_lines, truth_lines = sim.response_lines, sim.truth_lines

    # ---- write
    name = (
        f"Synthetic benchmark (seed {config.seed}, {config.tasks} tasks, "
        f"config {stable_hash(config.to_dict())[:8]})"
    )
    benchmark = {
        "name": name,
        "pass_threshold": config.pass_threshold,
        "format_version": FORMAT_VERSION,
    }
    _write_text(out / "benchmark.json", json.dumps(benchmark, ensure_ascii=False, indent=2) + "\n")
    _write_lines(out / "tasks.jsonl", [_dumps(p.record) for p in plans])
    _write_lines(out / "responses.jsonl", response_lines)
    _write_lines(out / "judgments.jsonl", judgment_lines)
    truth_path = out / "truth.jsonl"
    _write_lines(truth_path, truth_lines)

    graders: list[dict[str, Any]] = [
        {
            "name": _human_name(h),
            "kind": "human",
            "sensitivity": config.human_sensitivity,
            "specificity": config.human_specificity,
            "leniency": {},
        }
        for h in range(config.human_graders)
    ]
    if config.judge:
        graders.append(
            {
                "name": "judge",
                "kind": "judge",
                "sensitivity": config.judge_sensitivity,
                "specificity": config.judge_specificity,
                "leniency": dict(sorted(config.judge_leniency.items())),
            }
        )
    n_criteria = sum(len(p.record["rubric"]) for p in plans)
    truth_doc = {
        "generator": "gradercal.synth",
        "truth_version": 1,
        "config": config.to_dict(),
        "benchmark": benchmark,
        "graders": graders,
        "models": [
            {
                "name": model,
                "quality": round(float(quality[r]), 6),
                "true_mean_score": round(float(np.mean(scores[r])), 6),
                "true_pass_rate": round(
                    float(np.mean(np.array(scores[r]) >= config.pass_threshold - 1e-9)), 6
                ),
            }
            for r, model in enumerate(models)
        ],
        "score_rule": (
            "credit = points * true level / (levels - 1) (points when met, 0 when not); "
            "score = clip(sum of credits / sum of positive points, 0, 1); "
            "pass when score >= pass_threshold - 1e-9"
        ),
        "counts": {
            "tasks": len(plans),
            "criteria": n_criteria,
            "artifacts": n_files,
            "url_artifacts": n_urls,
            "responses": len(response_lines),
            "judgments": len(judgment_lines),
            "truth_lines": len(truth_lines),
        },
    }
    _write_text(out / "truth.json", json.dumps(truth_doc, ensure_ascii=False, indent=2) + "\n")
    return SynthSummary(
        out_dir=out,
        tasks=len(plans),
        criteria=n_criteria,
        artifacts=n_files,
        responses=len(response_lines),
        judgments=len(judgment_lines),
        truth_path=truth_path,
        url_artifacts=n_urls,
    )


def _human_name(h: int) -> str:
    return f"expert-{h + 1:02d}"


def _judgment_lines(
    config: SynthConfig,
    sim: _Simulation,
    human_rng: np.random.Generator,
    judge_rng: np.random.Generator,
) -> list[str]:
    """Simulate every grader's verdicts and render them as ``judgments.jsonl`` lines.

    On a 3-level criterion a "met" verdict has the top level; a "not met" verdict is
    "partial" (level 1) mostly when the truth is partial or met, rarely otherwise.
    """
    truth, ambiguous, leniency, levels = sim.truth, sim.ambiguous, sim.leniency, sim.levels
    response_ids, row_resp, row_crit = sim.response_ids, sim.row_resp, sim.row_crit
    p_partial = np.where(sim.partial_or_met, 0.75, 0.1)
    n_rows = truth.size
    n_humans = config.human_graders
    k = config.overlap if config.overlap is not None else n_humans

    # humans: one column of draws per human, used only where the human is assigned
    u_met = human_rng.random((n_rows, n_humans))
    human_met = np.where(
        truth[:, None], u_met < config.human_sensitivity, u_met >= config.human_specificity
    )
    human_partial = human_rng.random((n_rows, n_humans)) < p_partial[:, None]
    u_unclear = human_rng.random((n_rows, n_humans))
    human_unclear = u_unclear < np.where(ambiguous, 0.4, 0.002)[:, None]
    human_note = human_rng.random((n_rows, n_humans)) < 0.03
    note_pick = human_rng.integers(0, len(_HUMAN_RATIONALES), size=(n_rows, n_humans))

    # judge
    u_judge = judge_rng.random(n_rows)
    judge_fpr = np.clip(1.0 - config.judge_specificity + leniency, 0.0, 1.0)
    judge_met = np.where(truth, u_judge < config.judge_sensitivity, u_judge < judge_fpr)
    judge_right = judge_met == truth
    conf_right = 0.55 + 0.44 * judge_rng.beta(4.0, 1.5, size=n_rows)
    conf_wrong = 0.5 + 0.4 * judge_rng.beta(1.5, 3.0, size=n_rows)
    judge_conf = np.round(np.where(judge_right, conf_right, conf_wrong), 3)
    judge_partial = judge_rng.random(n_rows) < p_partial
    rationale_pick = judge_rng.integers(0, 4, size=n_rows)

    # Lines are assembled from pre-encoded pieces: json.dumps per line would dominate the
    # run time at scale. The result is exactly what ``_dumps`` gives for the same dict.
    enc = _ENCODER.encode
    rid_json = [enc(r) for r in response_ids]
    human_heads = [
        f', "grader": {enc(_human_name(h))}, "grader_kind": "human", "met": '
        for h in range(n_humans)
    ]
    human_notes = [f', "rationale": {enc(r)}' for r in _HUMAN_RATIONALES]
    unclear_part = ', "unclear": true, "unclear_note": ' + enc(
        "The criterion could be read more than one way."
    )
    judge_notes = (
        [f', "rationale": {enc(r)}' for r in _JUDGE_UNMET_RATIONALES],
        [f', "rationale": {enc(r)}' for r in _JUDGE_MET_RATIONALES],
    )
    assigned = [
        sorted((resp * k + j) % n_humans for j in range(k)) if n_humans else []
        for resp in range(len(response_ids))
    ]
    h_met = human_met.tolist()
    h_partial = human_partial.tolist()
    h_note = human_note.tolist()
    h_note_pick = note_pick.tolist()
    h_unclear = human_unclear.tolist()
    j_met = judge_met.tolist()
    j_conf = judge_conf.tolist()
    j_partial = judge_partial.tolist()
    j_pick = rationale_pick.tolist()
    three_level = (levels == 3).tolist()
    lines: list[str] = []
    for row in range(n_rows):
        resp = row_resp[row]
        head = f'{{"response_id": {rid_json[resp]}, "criterion_id": {enc(row_crit[row])}'
        three = three_level[row]
        for h in assigned[resp]:
            met = h_met[row][h]
            line = head + human_heads[h] + ("true" if met else "false")
            if three:
                line += f', "level": {2 if met else int(h_partial[row][h])}'
            if h_note[row][h]:
                line += human_notes[h_note_pick[row][h]]
            if h_unclear[row][h]:
                line += unclear_part
            lines.append(line + "}")
        if config.judge:
            met = j_met[row]
            line = (
                f'{head}, "grader": "judge", "grader_kind": "judge", "met": '
                f'{"true" if met else "false"}, "confidence": {float(j_conf[row])!r}'
                + judge_notes[int(met)][j_pick[row]]
            )
            if three:
                line += f', "level": {2 if met else int(j_partial[row])}'
            lines.append(line + "}")
    return lines


def _write_artifacts(
    out: Path, config: SynthConfig, plans: list[_TaskPlan], rng: np.random.Generator
) -> tuple[int, int]:
    """Write artifact files and reference them from the task records.

    Returns:
        The number of files written and of URL references added.
    """
    n_tasks = len(plans)
    total = round(n_tasks * config.artifacts_per_task)
    n_with = min(n_tasks, total, max(1, round(n_tasks * _SHARE_WITH_ARTIFACTS)))
    per_task = np.zeros(n_tasks, dtype=np.int64)
    if n_with:
        with_idx = np.sort(rng.choice(n_tasks, size=n_with, replace=False))
        per_task[with_idx] = 1 + rng.multinomial(total - n_with, np.full(n_with, 1.0 / n_with))
    has_url = rng.random(n_tasks) < _URL_SHARE
    n_files = 0
    for t, plan in enumerate(plans):
        record = plan.record
        task_id = record["id"]
        vocab = (
            str(record["tags"][0]),
            _DOMAIN_VOCAB[record["domain"]][1][0],
        )
        count = int(per_task[t])
        if count:
            folder = out / "artifacts" / task_id
            folder.mkdir(parents=True, exist_ok=True)
            kinds = rng.choice(len(_ARTIFACT_KINDS), size=count, p=_ARTIFACT_WEIGHTS)
            used: dict[str, int] = {}
            for k, kind_index in enumerate(kinds, start=1):
                stem, suffix, title, maker, _weight = _ARTIFACT_KINDS[int(kind_index)]
                used[stem] = used.get(stem, 0) + 1
                name = stem + (f"_{used[stem]}" if used[stem] > 1 else "") + suffix
                title_n = title + (f" {used[stem]}" if used[stem] > 1 else "")
                (folder / name).write_bytes(maker(rng, task_id, k, vocab))
                record["artifacts"].append(
                    {"path": f"artifacts/{task_id}/{name}", "title": title_n}
                )
                n_files += 1
        if count:
            names = ", ".join(f"`{a['path'].rsplit('/', 1)[-1]}`" for a in record["artifacts"])
            record["prompt"] += f"\n\nThe attached files hold the data: {names}."
        if has_url[t]:
            record["artifacts"].append(
                {
                    "url": f"https://example.org/gradercal-synth/{task_id}/reference",
                    "title": "Reference method",
                }
            )
        if not record["artifacts"]:
            del record["artifacts"]
    return n_files, int(has_url.sum())


def _write_lines(path: Path, lines: list[str]) -> None:
    _write_text(path, "".join(line + "\n" for line in lines))


def _write_text(path: Path, text: str) -> None:
    path.write_bytes(text.encode("utf-8"))
