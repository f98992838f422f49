"""Builders shared by the grading store and GUI tests (no tests in here).

``write_gui_benchmark(folder)`` writes a small benchmark folder (format v1) with three
tasks, three models per task whose names are distinctive (so a test can look for
them anywhere in a window), one artifact file of every kind, and judgments by two
human graders and a judge.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

MODELS = ("zephyrine-secret-9b", "quokkaflux-ultra", "marmotron-70b")
JUDGE = "judge-omegatron"
OTHER_GRADER = "expert-ben"
GRADER = "expert-ana"
JUDGE_RATIONALE = "JUDGE-RATIONALE-do-not-show"
OTHER_RATIONALE = "BEN-RATIONALE-do-not-show"

FASTA = b""">seq1 first test construct
ATGGCCGCGTTAGCGGCCGCATAAGGCGC
GCGCATATAT
>seq2 second one
ATATATATGC
"""

GENBANK = b"""LOCUS       TESTSEQ                   20 bp    DNA     linear   SYN 01-JAN-2024
DEFINITION  A tiny synthetic test sequence.
ACCESSION   TS0001
FEATURES             Location/Qualifiers
     source          1..20
     CDS             1..18
ORIGIN
        1 atggccgcgt tagcggccgc
//
"""

PDB = b"""HEADER    TEST PROTEIN                            01-JAN-24   1TST
TITLE     A TINY TEST STRUCTURE
ATOM      1  N   ALA A   1      11.104   6.134  -6.504  1.00  0.00           N
ATOM      2  CA  ALA A   1      11.639   6.071  -5.147  1.00  0.00           C
ATOM      3  N   GLY A   2      12.104   7.134  -4.504  1.00  0.00           N
ATOM      4  N   SER B   1      13.104   8.134  -3.504  1.00  0.00           N
HETATM    5  C1  LIG A 101      14.000   9.000  -2.000  1.00  0.00           C
HETATM    6  O   HOH A 201      15.000  10.000  -1.000  1.00  0.00           O
END
"""

MMCIF = b"""data_1TST
_entry.id 1TST
_struct.title 'A tiny mmCIF test structure'
loop_
_atom_site.group_PDB
_atom_site.id
_atom_site.type_symbol
_atom_site.label_atom_id
_atom_site.label_comp_id
_atom_site.label_asym_id
_atom_site.label_seq_id
_atom_site.Cartn_x
_atom_site.Cartn_y
_atom_site.Cartn_z
_atom_site.pdbx_PDB_model_num
ATOM 1 N N ALA A 1 11.1 6.1 -6.5 1
ATOM 2 C CA ALA A 1 11.6 6.0 -5.1 1
ATOM 3 N N GLY A 2 12.1 7.1 -4.5 1
ATOM 4 O "O5'" DA B 1 1.0 2.0 3.0 1
HETATM 5 O O HOH C . 15.0 10.0 -1.0 1
"""

MOL = b"""ethanol
  test

  3  2  0  0  0  0  0  0  0  0999 V2000
    0.0000    0.0000    0.0000 C   0  0  0  0  0  0  0  0  0  0  0  0
    1.5000    0.0000    0.0000 C   0  0  0  0  0  0  0  0  0  0  0  0
    2.0000    1.0000    0.0000 O   0  0  0  0  0  0  0  0  0  0  0  0
  1  2  1  0
  2  3  1  0
M  END
"""

SDF = (
    MOL
    + b"""> <SMILES>
CCO

$$$$
"""
    + MOL.replace(b"ethanol", b"ethanol-2")
    + b"$$$$\n"
)

CSV = b"well,conc_uM,viability\nA1,0.1,98.5\nA2,1,80.25\nA3,10,12\n"
TSV = b"gene\tlog2fc\tpadj\nIFIT1\t7.9\t1e-58\nMX1\t6.1\t2e-53\n"

#: Corrupt files, one per kind: bytes that look like the kind but are not readable.
CORRUPT: dict[str, bytes] = {
    "broken.pdf": b"%PDF-1.7\n this is not really a pdf \x00\x01\x02",
    "broken.png": b"\x89PNG\r\n\x1a\n" + b"\x00" * 40,
    "broken.xlsx": b"PK\x03\x04 not a zip archive at all",
    "broken.csv": b"a,b\n\x00\x01\x02\x03 binary junk",
    "broken.fasta": b"ATGC without a header line\n",
    "broken.gb": b"LOCUS       X 10 bp DNA\nORIGIN\n        1 atgc\n",
    "broken.pdb": b"HEADER    NOTHING HERE\nREMARK    no atoms at all\n",
    "broken.sdf": b"name\n  x\n\nnot a counts line\nM  END\n$$$$\n",
    "broken.txt": b"\x00\x01binary\x00",
}


def make_pdf(pages: int = 3, marker: str = "viability") -> bytes:
    from gradercal._util.pdf import import_pymupdf

    pymupdf = import_pymupdf()
    doc = pymupdf.open()
    for i in range(pages):
        page = doc.new_page(width=595, height=842)
        page.insert_text((72, 100), f"Test report page {i + 1}", fontsize=18)
        if i == 1:
            page.insert_text((72, 160), f"The {marker} dye was omitted in batch 2.", fontsize=12)
    data: bytes = doc.tobytes()
    doc.close()
    return data


def make_png(width: int = 64, height: int = 48) -> bytes:
    from gradercal._util.pdf import import_pymupdf

    pymupdf = import_pymupdf()
    pix = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, width, height), False)
    pix.clear_with(180)
    data: bytes = pix.tobytes("png")
    return data


def make_xlsx() -> bytes:
    import openpyxl

    wb = openpyxl.Workbook()
    ws = wb.active
    assert ws is not None
    ws.title = "runs"
    ws.append(["run", "mic"])
    ws.append(["R1", 0.5])
    ws.append(["R2", 2])
    ws2 = wb.create_sheet("lots")
    ws2.append(["lot", "ok"])
    ws2.append(["L1", True])
    buf = io.BytesIO()
    wb.save(buf)
    return buf.getvalue()


def sample_files() -> dict[str, bytes]:
    """One readable file of every artifact kind, by file name."""
    return {
        "report.pdf": make_pdf(),
        "plot.png": make_png(),
        "data.csv": CSV,
        "genes.tsv": TSV,
        "book.xlsx": make_xlsx(),
        "construct.fasta": FASTA,
        "construct.gb": GENBANK,
        "model.pdb": PDB,
        "model.cif": MMCIF,
        "ligands.sdf": SDF,
        "ethanol.mol": MOL,
        "notes.md": b"# Notes\n\n| a | b |\n|---|---|\n| 1 | 2 |\n",
    }


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def write_gui_benchmark(folder: Path, *, corrupt_pdf: bool = False) -> Path:
    """A benchmark folder for GUI tests; returns ``folder``."""
    art = folder / "artifacts"
    art.mkdir(parents=True, exist_ok=True)
    files = sample_files()
    if corrupt_pdf:
        files["report.pdf"] = CORRUPT["broken.pdf"]
    for name, data in files.items():
        (art / name).write_bytes(data)
    (folder / "benchmark.json").write_text(
        json.dumps({"name": "gui-bench", "pass_threshold": 0.7, "format_version": 1})
    )
    tasks = [
        {
            "id": "P1",
            "prompt": "Read the **report** and judge the claim.\n\n| donor | change |\n|---|---|\n| D1 | +0.5 |\n",
            "domain": "immunology",
            "artifacts": [
                {"path": "artifacts/report.pdf", "title": "Flow report"},
                {"path": "artifacts/notes.md", "title": "Notes"},
            ],
            "rubric": [
                {"id": "c1", "criterion": "Says the claim is not supported", "points": 6},
                {"id": "c2", "criterion": "Notes the missing viability dye", "points": 4},
                {"id": "c3", "criterion": "Endorses the claim", "points": -3},
                {"id": "c4", "criterion": "Explains the statistics", "points": 2, "levels": 3},
            ],
        },
        {
            "id": "P2",
            "prompt": "Fit the table; answer in JSON.",
            "answer_format": "json",
            "artifacts": [
                {"path": "artifacts/data.csv", "title": "Viability"},
                {"path": "artifacts/genes.tsv", "title": "Genes"},
                {"path": "artifacts/book.xlsx", "title": "Workbook"},
                {"path": "artifacts/plot.png", "title": "Plot"},
            ],
            "rubric": [
                {
                    "id": "auto1",
                    "criterion": "IC50 within 20% of 4.3",
                    "points": 5,
                    "auto": {"key": "answer.ic50", "target": 4.3, "rel_tol": 0.2},
                },
                {"id": "c1", "criterion": "Explains the plateau", "points": 3},
            ],
        },
        {
            "id": "P3",
            "prompt": "Check the construct and the model.",
            "artifacts": [
                {"path": "artifacts/construct.fasta", "title": "Construct"},
                {"path": "artifacts/construct.gb", "title": "GenBank"},
                {"path": "artifacts/model.pdb", "title": "Model"},
                {"path": "artifacts/model.cif", "title": "Model (mmCIF)"},
                {"path": "artifacts/ligands.sdf", "title": "Ligands"},
                {"path": "artifacts/ethanol.mol", "title": "Ethanol"},
                {"url": "https://example.org/vector-map", "title": "Vector map"},
            ],
            "rubric": [
                {"id": "c1", "criterion": "Finds the stop codon", "points": 5},
                {"id": "c2", "criterion": "Checks the chain count", "points": 2},
            ],
        },
    ]
    _jsonl(folder / "tasks.jsonl", tasks)
    responses = []
    for t in tasks:
        for k, model in enumerate(MODELS):
            r: dict[str, Any] = {
                "id": f"{t['id']}-{model}",
                "task_id": t["id"],
                "model": model,
                "text": f"Answer {k} to task {t['id']}.\n\n- point one\n- point two\n",
            }
            if t["id"] == "P2":
                r["answer"] = {"ic50": [4.0, 9.0, 4.5][k]}
            responses.append(r)
    _jsonl(folder / "responses.jsonl", responses)
    judgments = []
    for r in responses:
        crits = next(t for t in tasks if t["id"] == r["task_id"])["rubric"]
        for c in crits:
            if "auto" in c:
                continue
            judgments.append(
                {
                    "response_id": r["id"],
                    "criterion_id": c["id"],
                    "grader": JUDGE,
                    "grader_kind": "judge",
                    "met": True,
                    "rationale": JUDGE_RATIONALE,
                }
            )
            judgments.append(
                {
                    "response_id": r["id"],
                    "criterion_id": c["id"],
                    "grader": OTHER_GRADER,
                    "grader_kind": "human",
                    "met": False,
                    "rationale": OTHER_RATIONALE,
                }
            )
    _jsonl(folder / "judgments.jsonl", judgments)
    return folder


def import_folder(db_url: str, folder: Path, *, adjudications: bool = True) -> None:
    """Import a benchmark folder; ``adjudications=False`` leaves its final verdicts out
    (a benchmark nobody has adjudicated yet)."""
    from gradercal.db.repo import Repository
    from gradercal.db.session import open_database
    from gradercal.formats import read_folder

    db = open_database(db_url)
    try:
        data = read_folder(folder)
        if not adjudications:
            data.adjudications.clear()
        Repository(db).import_data(data)
    finally:
        db.dispose()
