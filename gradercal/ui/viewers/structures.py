"""Structure and chemical files read by hand: PDB, mmCIF, SDF/MOL (V2000, V3000), MOL2.

Summaries only (chains, residues, atoms; molecules with atom/bond counts, formula and
data fields). Qt-free, so it is tested without a window and runs in worker threads.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

_WATERS = frozenset({"HOH", "WAT", "DOD", "H2O"})
_THREE_TO_ONE = {
    "ALA": "A", "ARG": "R", "ASN": "N", "ASP": "D", "CYS": "C", "GLN": "Q", "GLU": "E",
    "GLY": "G", "HIS": "H", "ILE": "I", "LEU": "L", "LYS": "K", "MET": "M", "PHE": "F",
    "PRO": "P", "SER": "S", "THR": "T", "TRP": "W", "TYR": "Y", "VAL": "V", "SEC": "U",
    "PYL": "O", "MSE": "M",
    "DA": "A", "DC": "C", "DG": "G", "DT": "T", "A": "A", "C": "C", "G": "G", "U": "U",
}  # fmt: skip


class StructureParseError(ValueError):
    """The bytes are not a readable structure or chemical file; the message says why."""


@dataclass(frozen=True)
class ChainSummary:
    chain: str
    residues: int
    atoms: int
    first: str
    last: str
    sequence: str  # one-letter codes of polymer residues ('X' for unknown ones)


@dataclass(frozen=True)
class StructureSummary:
    format: Literal["pdb", "mmcif"]
    id: str | None
    title: str | None
    method: str | None
    resolution: str | None
    n_models: int
    n_atoms: int  # in the first model
    chains: tuple[ChainSummary, ...]
    ligands: dict[str, int] = field(default_factory=dict)  # het residue name → copies
    n_waters: int = 0

    @property
    def n_residues(self) -> int:
        return sum(c.residues for c in self.chains)


@dataclass(frozen=True)
class Molecule:
    name: str
    n_atoms: int
    n_bonds: int
    formula: str  # Hill order, explicit atoms only
    version: str
    properties: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class MoleculeFile:
    format: Literal["sdf", "mol", "mol2"]
    molecules: tuple[Molecule, ...]


def _decode(data: bytes) -> str:
    if b"\x00" in data[:65536]:
        raise StructureParseError("binary data (NUL bytes): not a text structure file")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def summarize(data: bytes, name: str | None = None) -> StructureSummary | MoleculeFile:
    """Summarize a structure file; the format comes from the name, else from the content."""
    text = _decode(data)
    if not text.strip():
        raise StructureParseError("the file is empty")
    lower = (name or "").lower()
    if lower.endswith((".cif", ".mmcif")) or (
        not lower.endswith(".pdb") and text.lstrip().startswith("data_")
    ):
        return parse_mmcif(text)
    if lower.endswith(".mol2") or "@<TRIPOS>MOLECULE" in text[:4096]:
        return parse_mol2(text)
    if lower.endswith((".sdf", ".sd", ".mol")):
        return parse_molfile(text, "mol" if lower.endswith(".mol") else "sdf")
    if lower.endswith((".pdb", ".ent")) or re.search(r"^(ATOM  |HETATM)", text, re.M):
        return parse_pdb(text)
    if "M  END" in text:
        return parse_molfile(text, "sdf")
    raise StructureParseError("not a PDB, mmCIF, SDF, MOL or MOL2 file")


# ---------------------------------------------------------------------------- PDB


class _ChainBuilder:
    def __init__(self) -> None:
        self.residues: dict[tuple[str, str], str] = {}
        self.atoms = 0

    def add(self, resseq: str, resname: str) -> None:
        self.atoms += 1
        self.residues.setdefault((resseq, ""), resname)

    def summary(self, chain: str) -> ChainSummary:
        keys = list(self.residues)
        seq = "".join(_THREE_TO_ONE.get(self.residues[k], "X") for k in keys)
        return ChainSummary(
            chain or "(blank)",
            len(keys),
            self.atoms,
            keys[0][0] if keys else "",
            keys[-1][0] if keys else "",
            seq,
        )


def parse_pdb(text: str) -> StructureSummary:
    chains: dict[str, _ChainBuilder] = {}
    ligands: Counter[str] = Counter()
    ligand_keys: set[tuple[str, str, str]] = set()
    water_keys: set[tuple[str, str]] = set()
    n_models = 0
    in_first_model = True
    n_atoms = 0
    title: list[str] = []
    ident = method = resolution = None
    seen_coords = False
    for lineno, line in enumerate(text.splitlines(), start=1):
        rec = line[:6]
        if rec == "HEADER":
            ident = line[62:66].strip() or ident
        elif rec == "TITLE ":
            title.append(line[10:80].strip())
        elif rec == "EXPDTA":
            method = line[10:79].strip() or method
        elif rec.startswith("REMARK") and line[6:10].strip() == "2" and "RESOLUTION" in line:
            resolution = line[11:].replace("RESOLUTION.", "").strip() or resolution
        elif rec == "MODEL ":
            n_models += 1
            in_first_model = n_models == 1
        elif rec in ("ATOM  ", "HETATM"):
            seen_coords = True
            if len(line) < 54:
                raise StructureParseError(
                    f"line {lineno}: {rec.strip()} record too short ({len(line)} characters)"
                )
            try:
                float(line[30:38])
                float(line[38:46])
                float(line[46:54])
            except ValueError:
                raise StructureParseError(
                    f"line {lineno}: coordinates are not numbers: {line[30:54]!r}"
                ) from None
            if not in_first_model:
                continue
            n_atoms += 1
            resname = line[17:20].strip()
            chain = line[21:22].strip()
            resseq = line[22:27].strip()
            if rec == "HETATM":
                if resname in _WATERS:
                    water_keys.add((chain, resseq))
                    continue
                key = (chain, resseq, resname)
                if key not in ligand_keys:
                    ligand_keys.add(key)
                    ligands[resname] += 1
                continue
            chains.setdefault(chain, _ChainBuilder()).add(resseq, resname)
    if not seen_coords:
        raise StructureParseError("no ATOM or HETATM records: not a PDB coordinate file")
    return StructureSummary(
        format="pdb",
        id=ident,
        title=" ".join(title) or None,
        method=method,
        resolution=resolution,
        n_models=max(n_models, 1),
        n_atoms=n_atoms,
        chains=tuple(b.summary(c) for c, b in chains.items()),
        ligands=dict(ligands),
        n_waters=len(water_keys),
    )


# -------------------------------------------------------------------------- mmCIF

_TOKEN = re.compile(r"""'(?:[^']|'(?=\S))*'(?=\s|$)|"(?:[^"]|"(?=\S))*"(?=\s|$)|\S+""")


def _cif_tokens(text: str) -> Iterator[str]:
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith(";"):
            block = [line[1:]]
            i += 1
            while i < len(lines) and not lines[i].startswith(";"):
                block.append(lines[i])
                i += 1
            if i >= len(lines):
                raise StructureParseError("unterminated ';' text field")
            yield "\n".join(block).strip()
            i += 1
            continue
        for m in _TOKEN.finditer(line):
            tok = m.group(0)
            if tok.startswith("#"):
                break
            if len(tok) >= 2 and tok[0] == tok[-1] and tok[0] in "'\"":
                yield "\x01" + tok[1:-1]  # marks a quoted value (never a keyword)
            else:
                yield tok
        i += 1


def _cif_value(tok: str) -> str:
    return tok[1:] if tok.startswith("\x01") else tok


def _is_keyword(tok: str) -> bool:
    low = tok.lower()
    return tok.startswith("_") or low == "loop_" or low.startswith(("data_", "save_"))


def parse_mmcif(text: str) -> StructureSummary:
    tokens = list(_cif_tokens(text))
    if not tokens or not tokens[0].lower().startswith("data_"):
        raise StructureParseError("no data_ block: not an mmCIF file")
    items: dict[str, str] = {}
    atom_cols: list[str] = []
    atom_rows: list[list[str]] = []
    i = 1
    n = len(tokens)
    while i < n:
        tok = tokens[i]
        if tok.lower() == "loop_":
            i += 1
            cols: list[str] = []
            while i < n and tokens[i].startswith("_"):
                cols.append(tokens[i].lower())
                i += 1
            values: list[str] = []
            while i < n and not _is_keyword(tokens[i]):
                values.append(_cif_value(tokens[i]))
                i += 1
            if cols and cols[0].startswith("_atom_site."):
                if len(values) % len(cols):
                    raise StructureParseError(
                        f"_atom_site loop has {len(values)} values for {len(cols)} columns"
                    )
                atom_cols = [c.split(".", 1)[1] for c in cols]
                atom_rows = [values[k : k + len(cols)] for k in range(0, len(values), len(cols))]
            elif len(cols) and len(values) == len(cols):
                items.update(dict(zip(cols, values, strict=True)))
            continue
        if tok.startswith("_") and i + 1 < n:
            items[tok.lower()] = _cif_value(tokens[i + 1])
            i += 2
            continue
        i += 1
    if not atom_rows:
        raise StructureParseError("no _atom_site records: not an mmCIF coordinate file")
    col = {c: k for k, c in enumerate(atom_cols)}

    def get(row: list[str], *names: str) -> str:
        for name in names:
            if name in col:
                return row[col[name]]
        return "?"

    chains: dict[str, _ChainBuilder] = {}
    ligands: Counter[str] = Counter()
    ligand_keys: set[tuple[str, str, str]] = set()
    water_keys: set[tuple[str, str]] = set()
    models: list[str] = []
    n_atoms = 0
    for row in atom_rows:
        model = get(row, "pdbx_pdb_model_num")
        if model not in models:
            models.append(model)
        if model != models[0]:
            continue
        n_atoms += 1
        group = get(row, "group_pdb")
        resname = get(row, "auth_comp_id", "label_comp_id")
        chain = get(row, "auth_asym_id", "label_asym_id")
        resseq = get(row, "auth_seq_id", "label_seq_id")
        if group == "HETATM":
            if resname in _WATERS:
                water_keys.add((chain, resseq))
                continue
            key = (chain, resseq, resname)
            if key not in ligand_keys:
                ligand_keys.add(key)
                ligands[resname] += 1
            continue
        chains.setdefault(chain, _ChainBuilder()).add(resseq, resname)
    res = items.get("_refine.ls_d_res_high") or items.get("_reflns.d_resolution_high")
    return StructureSummary(
        format="mmcif",
        id=items.get("_entry.id") or tokens[0][5:] or None,
        title=items.get("_struct.title"),
        method=items.get("_exptl.method"),
        resolution=f"{res} Å" if res and res not in ("?", ".") else None,
        n_models=max(len(models), 1),
        n_atoms=n_atoms,
        chains=tuple(b.summary(c) for c, b in chains.items()),
        ligands=dict(ligands),
        n_waters=len(water_keys),
    )


# --------------------------------------------------------------- SDF / MOL / MOL2


def hill_formula(elements: Counter[str]) -> str:
    """Hill order: C, then H, then the rest alphabetically (all alphabetical without C)."""

    def part(el: str) -> str:
        k = elements[el]
        return el if k == 1 else f"{el}{k}"

    keys = [e for e in elements if elements[e] > 0]
    if "C" in keys:
        order = ["C"] + (["H"] if "H" in keys else []) + sorted(k for k in keys if k not in "CH")
    else:
        order = sorted(keys)
    return "".join(part(e) for e in order)


def parse_molfile(text: str, fmt: Literal["sdf", "mol"] = "sdf") -> MoleculeFile:
    lines = text.splitlines()
    molecules: list[Molecule] = []
    start = 0
    index = 0
    while start < len(lines):
        end = start
        while end < len(lines) and lines[end].strip() != "$$$$":
            end += 1
        block = lines[start:end]
        if any(line.strip() for line in block):
            index += 1
            molecules.append(_molblock(block, start, index))
        start = end + 1
    if not molecules:
        raise StructureParseError("no molecule found: not an SDF or MOL file")
    return MoleculeFile(fmt, tuple(molecules))


def _molblock(block: list[str], offset: int, index: int) -> Molecule:
    where = f"molecule {index}"
    if len(block) < 4:
        raise StructureParseError(f"{where}: header and counts lines missing")
    name = block[0].strip() or f"(molecule {index})"
    counts = block[3]
    elements: Counter[str] = Counter()
    if "V3000" in counts:
        n_atoms = n_bonds = -1
        in_atoms = False
        for line in block[4:]:
            if not line.startswith("M  V30"):
                continue
            body = line[6:].split()
            if body[:1] == ["COUNTS"] and len(body) >= 3:
                n_atoms, n_bonds = int(body[1]), int(body[2])
            elif body[:2] == ["BEGIN", "ATOM"]:
                in_atoms = True
            elif body[:2] == ["END", "ATOM"]:
                in_atoms = False
            elif in_atoms and len(body) >= 2:
                elements[body[1]] += 1
        if n_atoms < 0:
            raise StructureParseError(f"{where}: V3000 block without a COUNTS line")
        version = "V3000"
    else:
        try:
            n_atoms = int(counts[0:3])
            n_bonds = int(counts[3:6])
        except ValueError:
            raise StructureParseError(
                f"line {offset + 4}: {where}: counts line {counts!r} is not 'aaabbb…V2000'"
            ) from None
        if len(block) < 4 + n_atoms + n_bonds:
            raise StructureParseError(
                f"{where}: declares {n_atoms} atoms and {n_bonds} bonds but the block is "
                f"{len(block) - 4} lines long"
            )
        for k in range(n_atoms):
            line = block[4 + k]
            symbol = line[31:34].strip() if len(line) >= 34 else ""
            if not symbol or not symbol[0].isalpha():
                raise StructureParseError(
                    f"line {offset + 5 + k}: {where}: atom line without an element symbol"
                )
            elements[symbol] += 1
        version = "V2000"
    if not any(line.startswith("M  END") for line in block):
        raise StructureParseError(f"{where}: no 'M  END' line")
    properties: dict[str, str] = {}
    k = 0
    while k < len(block):
        line = block[k]
        m = re.match(r"^>.*<([^>]+)>", line)
        if m:
            values = []
            k += 1
            while k < len(block) and block[k].strip():
                values.append(block[k].strip())
                k += 1
            properties[m.group(1)] = "\n".join(values)
        k += 1
    return Molecule(name, n_atoms, n_bonds, hill_formula(elements), version, properties)


def parse_mol2(text: str) -> MoleculeFile:
    molecules: list[Molecule] = []
    sections = re.split(r"^@<TRIPOS>MOLECULE\s*$", text, flags=re.M)[1:]
    if not sections:
        raise StructureParseError("no @<TRIPOS>MOLECULE section: not a MOL2 file")
    for index, sec in enumerate(sections, start=1):
        lines = sec.strip("\n").splitlines()
        if len(lines) < 2:
            raise StructureParseError(f"molecule {index}: name and counts lines missing")
        try:
            counts = [int(x) for x in lines[1].split()[:2]]
        except ValueError:
            raise StructureParseError(
                f"molecule {index}: counts line {lines[1]!r} is not numbers"
            ) from None
        elements: Counter[str] = Counter()
        atoms = re.search(r"^@<TRIPOS>ATOM\s*$(.*?)(?=^@<TRIPOS>|\Z)", sec, flags=re.M | re.S)
        if atoms:
            for line in atoms.group(1).strip().splitlines():
                parts = line.split()
                if len(parts) >= 6:
                    elements[parts[5].split(".")[0]] += 1
        molecules.append(
            Molecule(
                lines[0].strip() or f"(molecule {index})",
                counts[0],
                counts[1] if len(counts) > 1 else 0,
                hill_formula(elements),
                "MOL2",
            )
        )
    return MoleculeFile("mol2", tuple(molecules))
