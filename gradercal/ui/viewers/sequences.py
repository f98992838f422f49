"""FASTA and GenBank files read by hand (no Biopython): records, lengths, GC content, layout.

Qt-free, so it is tested without a window and runs in worker threads.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

SequenceKind = Literal["dna", "rna", "protein", "empty"]

#: Characters a sequence line may hold (IUPAC letters, stop, gaps).
_SEQ_CHARS = re.compile(r"^[A-Za-z*\-.]*$")
_NUCLEOTIDES = frozenset("ACGTUN")


class SequenceParseError(ValueError):
    """The bytes are not a readable FASTA or GenBank file; the message says where and why."""


@dataclass(frozen=True)
class SequenceRecord:
    id: str
    description: str
    sequence: str
    molecule: str | None = None  # GenBank LOCUS molecule type, e.g. "DNA", "mRNA"
    topology: str | None = None
    features: dict[str, int] = field(default_factory=dict)  # GenBank feature type → count

    @property
    def length(self) -> int:
        return len(self.sequence)

    @property
    def kind(self) -> SequenceKind:
        return sequence_kind(self.sequence)

    @property
    def gc_content(self) -> float | None:
        return gc_content(self.sequence) if self.kind in ("dna", "rna") else None


@dataclass(frozen=True)
class SequenceFile:
    format: Literal["fasta", "genbank"]
    records: tuple[SequenceRecord, ...]

    @property
    def total_length(self) -> int:
        return sum(r.length for r in self.records)

    @property
    def gc_content(self) -> float | None:
        """GC share over every nucleotide record (None when there is none)."""
        gc = at = 0
        for r in self.records:
            if r.kind in ("dna", "rna"):
                g, a = _gc_at(r.sequence)
                gc += g
                at += a
        return gc / (gc + at) if gc + at else None


def sequence_kind(seq: str) -> SequenceKind:
    """``dna``/``rna`` when at least 90% of the letters are A, C, G, T, U or N; else protein."""
    letters = [c for c in seq.upper() if c.isalpha()]
    if not letters:
        return "empty"
    nuc = sum(1 for c in letters if c in _NUCLEOTIDES)
    if nuc / len(letters) < 0.9:
        return "protein"
    upper = seq.upper()
    return "rna" if "U" in upper and "T" not in upper else "dna"


def _gc_at(seq: str) -> tuple[int, int]:
    s = seq.upper()
    gc = s.count("G") + s.count("C") + s.count("S")
    at = s.count("A") + s.count("T") + s.count("U") + s.count("W")
    return gc, at


def gc_content(seq: str) -> float | None:
    """(G + C + S) / (A + C + G + T + U + S + W); ambiguous bases such as N are left out."""
    gc, at = _gc_at(seq)
    return gc / (gc + at) if gc + at else None


def _decode(data: bytes) -> str:
    if b"\x00" in data[:65536]:
        raise SequenceParseError("binary data (NUL bytes): not a FASTA or GenBank text file")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def parse_sequences(data: bytes, name: str | None = None) -> SequenceFile:
    """Read FASTA or GenBank (decided by the content; the file name breaks ties)."""
    text = _decode(data)
    head = text.lstrip()
    if not head:
        raise SequenceParseError("the file is empty")
    if head.startswith("LOCUS") or (name or "").lower().endswith((".gb", ".gbk", ".genbank")):
        return parse_genbank(text)
    return parse_fasta(text)


def parse_fasta(text: str) -> SequenceFile:
    records: list[SequenceRecord] = []
    header: str | None = None
    chunks: list[str] = []

    def flush() -> None:
        if header is not None:
            ident, _, desc = header.partition(" ")
            records.append(SequenceRecord(ident or "(no id)", desc.strip(), "".join(chunks)))

    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith(";"):
            continue
        if line.startswith(">"):
            flush()
            header, chunks = line[1:].strip(), []
            continue
        if header is None:
            raise SequenceParseError(
                f"line {lineno}: sequence data before the first '>' header: not a FASTA file"
            )
        compact = line.replace(" ", "").replace("\t", "")
        if not _SEQ_CHARS.match(compact):
            bad = next(c for c in compact if not (c.isalpha() or c in "*-."))
            raise SequenceParseError(f"line {lineno}: unexpected character {bad!r} in a sequence")
        chunks.append(compact)
    flush()
    if not records:
        raise SequenceParseError("no '>' header found: not a FASTA file")
    return SequenceFile("fasta", tuple(records))


_LOCUS = re.compile(r"^LOCUS\s+(\S+)\s+(\d+)\s+(?:bp|aa)\s*(\S+)?\s*(linear|circular)?", re.I)


def parse_genbank(text: str) -> SequenceFile:
    records: list[SequenceRecord] = []
    lines = text.splitlines()
    i = 0
    n = len(lines)
    while i < n:
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        if not line.startswith("LOCUS"):
            raise SequenceParseError(f"line {i + 1}: expected a LOCUS line: not a GenBank file")
        m = _LOCUS.match(line)
        locus_name = line.split()[1] if len(line.split()) > 1 else "(no name)"
        declared = int(m.group(2)) if m else None
        molecule = m.group(3) if m and m.group(3) else None
        topology = m.group(4) if m and m.group(4) else None
        definition: list[str] = []
        accession: str | None = None
        features: dict[str, int] = {}
        seq: list[str] = []
        section = ""
        i += 1
        ended = False
        while i < n:
            line = lines[i]
            if line.startswith("//"):
                ended = True
                i += 1
                break
            key = line[:12].strip()
            if line[:1] not in (" ", "\t") and key:
                section = key.split()[0]
                if section == "DEFINITION":
                    definition.append(line[12:].strip())
                elif section == "ACCESSION":
                    accession = line[12:].split()[0] if line[12:].split() else None
                elif section == "LOCUS":
                    raise SequenceParseError(f"line {i + 1}: LOCUS before '//' ended the record")
            elif section == "DEFINITION" and line.startswith(" "):
                definition.append(line.strip())
            elif section == "FEATURES" and len(line) > 5 and line[5] != " " and line[:5] == "     ":
                ftype = line[5:21].strip()
                if ftype:
                    features[ftype] = features.get(ftype, 0) + 1
            elif section == "ORIGIN":
                parts = line.split()
                if parts and parts[0].isdigit():
                    parts = parts[1:]
                chunk = "".join(parts)
                if not _SEQ_CHARS.match(chunk):
                    raise SequenceParseError(f"line {i + 1}: unexpected characters in ORIGIN")
                seq.append(chunk)
            i += 1
        if not ended:
            raise SequenceParseError(f"record {locus_name!r} has no closing '//' line")
        sequence = "".join(seq)
        if declared is not None and seq and declared != len(sequence):
            raise SequenceParseError(
                f"record {locus_name!r}: LOCUS says {declared} but ORIGIN holds {len(sequence)}"
            )
        records.append(
            SequenceRecord(
                accession or locus_name,
                " ".join(definition).rstrip("."),
                sequence,
                molecule=molecule,
                topology=topology,
                features=features,
            )
        )
    if not records:
        raise SequenceParseError("no LOCUS record found: not a GenBank file")
    return SequenceFile("genbank", tuple(records))


def wrapped(sequence: str, width: int = 60, block: int = 10, limit: int | None = None) -> str:
    """A monospaced layout: a ruler line, then lines of ``width`` letters in blocks of
    ``block``, each prefixed by the 1-based position of its first letter.

    Only the first ``limit`` letters are laid out when ``limit`` is given.
    """
    shown = sequence if limit is None else sequence[:limit]
    digits = max(len(str(max(len(shown), 1))), 4)
    blocks = max(width // block, 1)
    ruler = (
        " " * (digits + 1) + " ".join(f"{(b + 1) * block:>{block}}" for b in range(blocks)).rstrip()
    )
    tick = " " * (digits + 1) + " ".join(("." * (block - 1) + "|") for _ in range(blocks))
    out = [ruler, tick]
    for start in range(0, len(shown), width):
        line = shown[start : start + width]
        parts = [line[k : k + block] for k in range(0, len(line), block)]
        out.append(f"{start + 1:>{digits}} " + " ".join(parts))
    return "\n".join(out)
