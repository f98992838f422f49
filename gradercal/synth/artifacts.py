"""The artifact files of synthetic tasks: small tables, FASTA, text, PNG, PDF and PDB
files made from scratch (standard library and numpy only), and writing them with the
task's ``artifacts`` entries.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from pathlib import Path

import numpy as np
import numpy.typing as npt

from gradercal.synth.config import SynthConfig
from gradercal.synth.plan import TaskPlan
from gradercal.synth.vocabulary import DOMAIN_VOCAB

_SHARE_WITH_ARTIFACTS = 0.5


_URL_SHARE = 0.04


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


def write_artifacts(
    out: Path, config: SynthConfig, plans: list[TaskPlan], rng: np.random.Generator
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
            DOMAIN_VOCAB[record["domain"]][1][0],
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
