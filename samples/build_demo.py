# mypy: disable-error-code="no-untyped-call"
"""Build the gradercal demo benchmark folder ``samples/demo/`` (benchmark folder format v1).

Run ``python samples/build_demo.py`` (from anywhere). The script rewrites ``samples/demo/``
from the hand-written content in ``demo_content.py`` plus generated artifacts and grader
judgments. Everything is seeded and timestamps are pinned, so two runs produce identical
files.

What is generated here rather than written by hand:

* the artifacts (PDF report, PNG volcano plot, CSV/XLSX tables, FASTA, PDB and SDF);
* ``judgments.jsonl``: verdicts of three human experts and one LLM judge, derived from the
  hand-specified true verdicts in ``demo_content.TRUTH`` plus seeded noise (see
  ``NOISE``);
* ``adjudications.jsonl``: a coordinator's final verdicts on the expert disagreements
  for which the content gives an evidence note (the note explains the decision; the
  decision is the true verdict);
* ``truth.json``: the true verdicts, the auto-criterion outcomes and the noise settings.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import random
import re
import shutil
import sys
import zipfile
from datetime import datetime
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import openpyxl  # type: ignore[import-untyped]
import pymupdf
from openpyxl.styles import Alignment, Font, PatternFill  # type: ignore[import-untyped]

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import demo_content as content  # noqa: E402

# The demo ships inside the package (`gradercal samples demo -o DIR` copies it);
# samples/demo is a link to it.
OUT = HERE.parent / "gradercal" / "demo"
FIXED_TIME = datetime(2024, 6, 3, 9, 0, 0)
PNG_META = {"Software": None}
PDF_META = {"Creator": None, "Producer": None, "CreationDate": None}

plt.rcParams.update(
    {
        "font.family": "DejaVu Sans",
        "font.size": 9,
        "svg.hashsalt": "gradercal",
        "pdf.fonttype": 42,
    }
)


# ======================================================================================
# Small helpers
# ======================================================================================


def _seeded(*parts: object) -> random.Random:
    """A Random seeded from a string key, so each draw is stable when content is added."""
    key = "|".join(str(p) for p in parts).encode("utf-8")
    return random.Random(int.from_bytes(hashlib.sha256(key).digest()[:8], "big"))


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    with path.open("w", encoding="utf-8", newline="\n") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")


def _pin_zip_times(path: Path) -> None:
    """Rewrite an xlsx with fixed member timestamps and a fixed 'modified' property.

    openpyxl stamps ``dcterms:modified`` with the current time on save, whatever
    ``wb.properties.modified`` says, so the core properties are patched afterwards.
    """
    src = zipfile.ZipFile(path)
    members = [(info, src.read(info.filename)) for info in src.infolist()]
    src.close()
    stamp = FIXED_TIME.strftime("%Y-%m-%dT%H:%M:%SZ").encode()
    with zipfile.ZipFile(path, "w") as dst:
        for info, data in members:
            if info.filename == "docProps/core.xml":
                data = re.sub(
                    rb"(<dcterms:modified[^>]*>)[^<]*(</dcterms:modified>)",
                    rb"\g<1>" + stamp + rb"\g<2>",
                    data,
                )
            pinned = zipfile.ZipInfo(info.filename, date_time=FIXED_TIME.timetuple()[:6])
            pinned.compress_type = zipfile.ZIP_DEFLATED
            pinned.external_attr = 0o644 << 16
            dst.writestr(pinned, data)


def _fig_bytes(fig: Any, fmt: str, dpi: int = 100) -> bytes:
    buf = io.BytesIO()
    meta = PNG_META if fmt == "png" else PDF_META
    fig.savefig(buf, format=fmt, dpi=dpi, metadata=meta)
    plt.close(fig)
    return buf.getvalue()


# ======================================================================================
# T01: flow core report (3-page PDF with a table and a figure)
# ======================================================================================

T01_DONORS = [
    # donor, batch, dye, live veh, live GX, %CD25+FOXP3+ veh, GX, %CD127lo veh, GX
    ("D1", 1, "yes", 82, 61, 5.2, 6.0, 88, 84),
    ("D2", 1, "yes", 80, 58, 6.0, 6.5, 90, 86),
    ("D3", 1, "yes", 84, 63, 4.8, 5.9, 87, 80),
    ("D4", 2, "no", None, None, 6.9, 13.4, 71, 52),
    ("D5", 2, "no", None, None, 7.4, 14.1, 69, 49),
    ("D6", 2, "no", None, None, 6.3, 12.9, 73, 55),
]

_REPORT_CSS = """
* { font-family: sans-serif; }
body { font-size: 10pt; color: #222; }
h1 { font-size: 15pt; margin: 0 0 4pt 0; color: #1f3b5a; }
h2 { font-size: 11.5pt; margin: 10pt 0 3pt 0; color: #1f3b5a; }
p { margin: 0 0 5pt 0; line-height: 1.3; }
.meta { font-size: 9pt; color: #555; }
table { border-collapse: collapse; width: 100%; font-size: 8.5pt; }
th, td { border: 1px solid #888; padding: 2pt 3pt; text-align: center; }
th { background-color: #dfe7f0; }
.small { font-size: 8.5pt; color: #444; }
"""


def _t01_page1() -> str:
    return """
<h1>Flow Cytometry Core &mdash; Analysis Report FCR-0412</h1>
<p class="meta">Project TRG-22 &middot; Requested by: Immunology group (GX-17 program)
&middot; Analyst: core staff &middot; Acquisition: 4 and 11 March &middot; Page 1 of 3</p>

<h2>Summary (as provided by the core)</h2>
<p>GX-17 increased the frequency of CD4<sup>+</sup>CD25<sup>+</sup>FOXP3<sup>+</sup>
regulatory T cells from <b>6.1%</b> (vehicle) to <b>9.8%</b> (GX-17, 1&nbsp;&micro;M)
after 72&nbsp;h of culture (<b>p&nbsp;&lt;&nbsp;0.001</b>, unpaired two-tailed t-test,
n&nbsp;=&nbsp;18 wells per condition).</p>

<h2>Samples and culture</h2>
<p>PBMC from six healthy donors (D1&ndash;D6) were stimulated with anti-CD3/CD28 beads
(1 bead : 1 cell) plus IL-2 (20&nbsp;U/mL) and cultured for 72&nbsp;h with vehicle
(0.1% DMSO) or GX-17 (1&nbsp;&micro;M), in triplicate wells per donor and condition.
Donors D1&ndash;D3 were processed and acquired on 4 March (batch 1); donors D4&ndash;D6 on
11 March (batch 2).</p>

<h2>Staining panel</h2>
<p>CD3-BV421, CD4-FITC, CD25-PE, CD127-BV605 (surface); FOXP3-APC after
fixation/permeabilisation (transcription-factor buffer set). Fixable viability dye
eFluor&nbsp;780 was included in batch 1 only; the dye was out of stock for batch 2 and
was omitted.</p>

<h2>Gating</h2>
<p>Lymphocytes (FSC/SSC) &rarr; singlets &rarr; live cells (batch 1 only) &rarr;
CD3<sup>+</sup>CD4<sup>+</sup> &rarr; CD25<sup>+</sup>FOXP3<sup>+</sup>. The FOXP3
gate was placed at the 99.5th percentile of the mouse IgG1-APC isotype control stained
in parallel. The CD127<sup>low</sup> fraction of the CD25<sup>+</sup>FOXP3<sup>+</sup>
gate is reported for information and was not used to define Tregs.</p>

<h2>Statistics</h2>
<p>All wells of all donors were pooled per condition (vehicle: 6.1 &plusmn; 0.9%,
GX-17: 9.8 &plusmn; 3.8%, mean &plusmn; SD of 18 wells) and compared with an unpaired
two-tailed t-test.</p>

<p class="small">Per-donor values: page 2. Figure: page 3.</p>
"""


def _t01_page2() -> str:
    rows = []
    for d, batch, dye, lv, lg, tv, tg, cv, cg in T01_DONORS:
        live_v = f"{lv}" if lv is not None else "n.d."
        live_g = f"{lg}" if lg is not None else "n.d."
        rows.append(
            f"<tr><td>{d}</td><td>{batch}</td><td>{dye}</td><td>{live_v}</td><td>{live_g}</td>"
            f"<td>{tv:.1f}</td><td>{tg:.1f}</td><td>{cv}</td><td>{cg}</td></tr>"
        )
    mean_v = sum(r[5] for r in T01_DONORS) / len(T01_DONORS)
    mean_g = sum(r[6] for r in T01_DONORS) / len(T01_DONORS)
    rows.append(
        "<tr><td><b>Mean</b></td><td></td><td></td><td></td><td></td>"
        f"<td><b>{mean_v:.1f}</b></td><td><b>{mean_g:.1f}</b></td><td></td><td></td></tr>"
    )
    return f"""
<h1>Table 1. Per-donor results</h1>
<p class="meta">Mean of triplicate wells. Page 2 of 3.</p>
<table>
<tr><th rowspan="2" style="width: 9%;">Donor</th><th rowspan="2" style="width: 9%;">Batch</th>
<th rowspan="2" style="width: 12%;">Viability dye</th>
<th colspan="2">Live cells (% of singlets)</th>
<th colspan="2">CD25<sup>+</sup>FOXP3<sup>+</sup> (% of CD4<sup>+</sup>)</th>
<th colspan="2">CD127<sup>low</sup> (% of gate)</th></tr>
<tr><th>vehicle</th><th>GX-17</th><th>vehicle</th><th>GX-17</th><th>vehicle</th>
<th>GX-17</th></tr>
{"".join(rows)}
</table>
<p class="small">n.d. = not determined (no viability dye in batch 2).</p>

<h1 style="margin-top: 14pt;">Table 2. Gating controls</h1>
<p class="meta">Donor D1, vehicle wells; events falling inside the final FOXP3 gate.</p>
<table>
<tr><th>Control</th><th>Events in FOXP3<sup>+</sup> gate (% of CD4<sup>+</sup>)</th>
<th>Comment</th></tr>
<tr><td>Isotype (mouse IgG1-APC)</td><td>0.4</td><td>used to set the gate</td></tr>
<tr><td>FMO (all stains except FOXP3)</td><td>2.9</td><td>acquired, not used for gating</td></tr>
<tr><td>Unstimulated PBMC, day 0 (full panel)</td><td>4.5</td><td>reference only</td></tr>
</table>

<h2>Notes from the core</h2>
<p>Batch 2 was acquired after a cytometer laser realignment (CS&amp;T passed). Bead
removal was performed magnetically before staining in both batches.</p>
"""


def _t01_figure() -> bytes:
    rng = np.random.default_rng(412)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(7.2, 3.2), gridspec_kw={"width_ratios": [1, 1.3]})
    colours = {1: "#1f77b4", 2: "#d62728"}
    for d, batch, _dye, _lv, _lg, tv, tg, *_ in T01_DONORS:
        ax1.plot([0, 1], [tv, tg], "-o", color=colours[batch], lw=1.2, ms=4)
        nudge = {"D1": 0.25, "D3": -0.3, "D4": 0.1, "D6": -0.1}.get(d, 0.0)
        ax1.annotate(d, (1.04, tg + nudge), fontsize=7, va="center", color=colours[batch])
    ax1.set_xticks([0, 1], ["vehicle", "GX-17 1 µM"])
    ax1.set_xlim(-0.3, 1.35)
    ax1.set_ylabel("CD25+FOXP3+ (% of CD4+)")
    ax1.set_title("A  Per-donor paired values", loc="left", fontsize=9)
    ax1.plot([], [], "-o", color=colours[1], label="batch 1 (viability dye)")
    ax1.plot([], [], "-o", color=colours[2], label="batch 2 (no viability dye)")
    ax1.legend(fontsize=7, frameon=False, loc="upper left")

    bins = np.linspace(1.0, 4.6, 70)
    iso = rng.normal(1.85, 0.2, 20000)
    fmo = rng.normal(1.95, 0.225, 20000)
    stained = np.concatenate([rng.normal(1.97, 0.23, 19000), rng.normal(3.2, 0.3, 1000)])
    ax2.hist(iso, bins=bins, histtype="step", color="0.55", lw=1.2, label="isotype", density=True)
    ax2.hist(fmo, bins=bins, histtype="step", color="#ff7f0e", lw=1.2, label="FMO", density=True)
    ax2.hist(stained, bins=bins, histtype="step", color="k", lw=1.2, label="stained", density=True)
    gate = float(np.percentile(iso, 99.5))
    ax2.axvline(gate, color="#2ca02c", ls="--", lw=1)
    ax2.text(gate + 0.05, ax2.get_ylim()[1] * 0.85, "FOXP3+ gate\n(isotype 99.5th pct)", fontsize=7)
    ax2.set_xlabel("FOXP3-APC (log10 fluorescence)")
    ax2.set_ylabel("density")
    ax2.set_title("B  FOXP3 staining, D4 vehicle, CD4+ gated", loc="left", fontsize=9)
    ax2.legend(fontsize=7, frameon=False, loc="upper right")
    fig.tight_layout()
    return _fig_bytes(fig, "pdf")


def build_t01_pdf(path: Path) -> None:
    doc = pymupdf.open()
    width, height = pymupdf.paper_size("a4")
    box = pymupdf.Rect(50, 50, width - 50, height - 50)
    for html in (_t01_page1(), _t01_page2()):
        page = doc.new_page(width=width, height=height)
        page.insert_htmlbox(box, html, css=_REPORT_CSS)
    page = doc.new_page(width=width, height=height)
    page.insert_htmlbox(
        pymupdf.Rect(50, 50, width - 50, 110),
        "<h1>Figure 1</h1><p class='meta'>Page 3 of 3.</p>",
        css=_REPORT_CSS,
    )
    fig_doc = pymupdf.open("pdf", _t01_figure())
    page.show_pdf_page(
        pymupdf.Rect(50, 115, width - 50, 115 + (width - 100) * 3.2 / 7.2), fig_doc, 0
    )
    caption = """
<p><b>Figure 1. GX-17 and CD25<sup>+</sup>FOXP3<sup>+</sup> cells.</b>
(A) Percentage of CD25<sup>+</sup>FOXP3<sup>+</sup> cells among CD4<sup>+</sup> T cells
per donor (mean of triplicate wells), vehicle versus GX-17 (1&nbsp;&micro;M), coloured by
processing batch. (B) FOXP3-APC fluorescence of CD4<sup>+</sup> cells from donor D4
(vehicle) with the isotype and FMO controls; the dashed line marks the FOXP3<sup>+</sup>
gate used for all samples (99.5th percentile of the isotype control).</p>
"""
    page.insert_htmlbox(pymupdf.Rect(50, 345, width - 50, 500), caption, css=_REPORT_CSS)
    doc.set_metadata(
        {
            "title": "Flow cytometry core analysis report FCR-0412 (gradercal demo)",
            "author": "gradercal demo",
            "subject": "Fictional report for the gradercal demo benchmark",
            "keywords": "",
            "creator": "gradercal samples/build_demo.py",
            "producer": "gradercal",
            "creationDate": "D:20240603090000Z",
            "modDate": "D:20240603090000Z",
        }
    )
    path.write_bytes(doc.tobytes(garbage=4, deflate=True, no_new_id=True))
    doc.close()
    fig_doc.close()


# ======================================================================================
# T02: dose-response CSV and a small 4PL fitter
# ======================================================================================


def four_pl(logx: np.ndarray, p: np.ndarray) -> np.ndarray:
    bottom, top, log_ic50, hill = p
    y: np.ndarray = bottom + (top - bottom) / (1 + 10 ** (hill * (logx - log_ic50)))
    return y


def fit_four_pl(logx: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Levenberg–Marquardt least squares; returns (bottom, top, log10 IC50, h) and SEs."""

    def jac(p: np.ndarray) -> np.ndarray:
        j = np.empty((len(y), 4))
        for k in range(4):
            dp = np.zeros(4)
            dp[k] = 1e-6 * max(1.0, abs(p[k]))
            j[:, k] = (four_pl(logx, p + dp) - four_pl(logx, p - dp)) / (2 * dp[k])
        return j

    p = np.array([0.0, 100.0, float(np.median(logx)), 1.0])
    lam = 1e-3
    cost = float(((y - four_pl(logx, p)) ** 2).sum())
    for _ in range(500):
        j = jac(p)
        a = j.T @ j
        step = np.linalg.solve(a + lam * np.diag(np.diag(a)), j.T @ (y - four_pl(logx, p)))
        new = p + step
        new_cost = float(((y - four_pl(logx, new)) ** 2).sum())
        if new_cost < cost:
            done = cost - new_cost < 1e-12
            p, cost, lam = new, new_cost, lam / 3
            if done:
                break
        else:
            lam *= 4
    j = jac(p)
    cov = cost / (len(y) - 4) * np.linalg.inv(j.T @ j)
    return p, np.sqrt(np.diag(cov))


def t02_rows() -> list[dict[str, Any]]:
    rng = random.Random(114)
    bottom, top, ic50, hill = 6.0, 100.0, 0.42, 1.3
    concs = [30 / 3**i for i in range(10)]
    bkg = [round(850 + rng.gauss(0, 40)) for _ in range(6)]
    veh = [round(182000 * (1 + rng.gauss(0, 0.03))) for _ in range(6)]
    bkg_mean, veh_mean = sum(bkg) / 6, sum(veh) / 6
    rows: list[dict[str, Any]] = []
    for i, r in enumerate("BCDEFG"):
        rows.append(
            {"well": f"{r}01", "sample": "medium only", "compound": "", "conc_uM": 0.0,
             "replicate": i + 1, "rlu": bkg[i]}
        )  # fmt: skip
    for rep, r in enumerate("BCD", 1):
        for j, c in enumerate(concs):
            well = f"{r}{j + 2:02d}"
            pct = bottom + (top - bottom) / (1 + (c / ic50) ** hill) + rng.gauss(0, 3.0)
            if well == "C05":  # the pipetting failure: no compound reached the cells
                pct = 94.0 + rng.gauss(0, 1.0)
            rlu = max(0, round(bkg_mean + pct / 100 * (veh_mean - bkg_mean)))
            rows.append(
                {"well": well, "sample": "compound", "compound": "GC-114",
                 "conc_uM": round(c, 5), "replicate": rep, "rlu": rlu}
            )  # fmt: skip
    for i, r in enumerate("BCDEFG"):
        rows.append(
            {"well": f"{r}12", "sample": "vehicle (0.1% DMSO)", "compound": "",
             "conc_uM": 0.0, "replicate": i + 1, "rlu": veh[i]}
        )  # fmt: skip
    for row in rows:
        row["pct_viability"] = round((row["rlu"] - bkg_mean) / (veh_mean - bkg_mean) * 100, 1) + 0.0
    return rows


def build_t02_csv(path: Path) -> dict[str, Any]:
    rows = t02_rows()
    cols = ["well", "sample", "compound", "conc_uM", "replicate", "rlu", "pct_viability"]
    with path.open("w", encoding="utf-8", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=cols, lineterminator="\n")
        w.writeheader()
        for row in rows:
            w.writerow(row)
    # Refit and check the targets of the auto criteria.
    cmp_rows = [r for r in rows if r["sample"] == "compound" and r["well"] != "C05"]
    logx = np.log10([r["conc_uM"] for r in cmp_rows])
    y = np.array([r["pct_viability"] for r in cmp_rows])
    p, se = fit_four_pl(logx, y)
    fit: dict[str, Any] = {
        "ic50_uM": float(10 ** p[2]),
        "ic50_95ci_uM": [float(10 ** (p[2] - 2.056 * se[2])), float(10 ** (p[2] + 2.056 * se[2]))],
        "hill_slope": float(p[3]),
        "top_pct": float(p[1]),
        "bottom_pct": float(p[0]),
    }
    t = content.T02_TARGETS
    assert abs(fit["ic50_uM"] - t["ic50_uM"]) < 0.01, fit
    assert abs(fit["hill_slope"] - t["hill_slope"]) < 0.01, fit
    assert abs(fit["top_pct"] - t["top_pct"]) < 0.05, fit
    assert abs(fit["bottom_pct"] - t["bottom_pct"]) < 0.05, fit
    return {
        k: (round(v, 4) if isinstance(v, float) else [round(x, 4) for x in v])
        for k, v in fit.items()
    }


# ======================================================================================
# T03: FASTA
# ======================================================================================


def build_t03_fasta(path: Path) -> None:
    stops = {"TAA", "TAG", "TGA"}
    lines = []
    for name, desc, seq in content.SLC99A1_EXONS:
        assert len(seq) % 3 == 0, name
        codons = [seq[i : i + 3] for i in range(0, len(seq) - 3, 3)]
        assert not stops & set(codons), f"in-frame stop in {name}"
        lines.append(f">{name} {desc}")
        lines.extend(seq[i : i + 60] for i in range(0, len(seq), 60))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    exons = {name: seq for name, _desc, seq in content.SLC99A1_EXONS}
    everything = "".join(exons.values())
    for exon, start, spacer, pam in content.T03_GUIDES.values():
        seq = exons[exon]
        assert seq[start - 1 : start + 19] == spacer, spacer
        assert seq[start + 19 : start + 22] == pam and pam.endswith("GG"), spacer
        assert everything.count(spacer) == 1, spacer


# ======================================================================================
# T05: PDB model and SDF ligand
# ======================================================================================

_SIDE_CHAINS: dict[str, list[tuple[str, tuple[str, str, str], float, float, float | None]]] = {
    "ALA": [],
    "SER": [("OG", ("N", "CA", "CB"), 1.417, 110.8, None)],
    "VAL": [
        ("CG1", ("N", "CA", "CB"), 1.527, 110.7, 177.2),
        ("CG2", ("N", "CA", "CB"), 1.527, 110.4, -63.3),
    ],
    "THR": [
        ("OG1", ("N", "CA", "CB"), 1.43, 109.2, 60.0),
        ("CG2", ("N", "CA", "CB"), 1.53, 111.1, -60.0),
    ],
    "LEU": [
        ("CG", ("N", "CA", "CB"), 1.53, 116.1, None),
        ("CD1", ("CA", "CB", "CG"), 1.524, 110.3, 174.9),
        ("CD2", ("CA", "CB", "CG"), 1.525, 110.6, 66.7),
    ],
    "PHE": [
        ("CG", ("N", "CA", "CB"), 1.50, 113.9, None),
        ("CD1", ("CA", "CB", "CG"), 1.39, 120.0, 93.3),
        ("CD2", ("CA", "CB", "CG"), 1.39, 120.0, -86.7),
        ("CE1", ("CB", "CG", "CD1"), 1.39, 120.0, 180.0),
        ("CE2", ("CB", "CG", "CD2"), 1.39, 120.0, 180.0),
        ("CZ", ("CG", "CD1", "CE1"), 1.39, 120.0, 0.0),
    ],
    "TYR": [
        ("CG", ("N", "CA", "CB"), 1.51, 113.8, None),
        ("CD1", ("CA", "CB", "CG"), 1.39, 120.9, 93.1),
        ("CD2", ("CA", "CB", "CG"), 1.39, 120.8, -86.9),
        ("CE1", ("CB", "CG", "CD1"), 1.39, 120.0, 180.0),
        ("CE2", ("CB", "CG", "CD2"), 1.39, 120.0, 180.0),
        ("CZ", ("CG", "CD1", "CE1"), 1.39, 120.0, 0.0),
        ("OH", ("CD1", "CE1", "CZ"), 1.39, 120.0, 180.0),
    ],
    "LYS": [
        ("CG", ("N", "CA", "CB"), 1.52, 113.8, None),
        ("CD", ("CA", "CB", "CG"), 1.52, 111.8, -178.1),
        ("CE", ("CB", "CG", "CD"), 1.52, 111.7, -179.6),
        ("NZ", ("CG", "CD", "CE"), 1.49, 111.7, 179.6),
    ],
    "GLU": [
        ("CG", ("N", "CA", "CB"), 1.52, 113.8, None),
        ("CD", ("CA", "CB", "CG"), 1.52, 113.3, -179.8),
        ("OE1", ("CB", "CG", "CD"), 1.25, 119.0, -6.2),
        ("OE2", ("CB", "CG", "CD"), 1.25, 118.1, 173.8),
    ],
    "ASP": [
        ("CG", ("N", "CA", "CB"), 1.52, 113.1, None),
        ("OD1", ("CA", "CB", "CG"), 1.25, 119.2, -46.7),
        ("OD2", ("CA", "CB", "CG"), 1.25, 118.2, 133.3),
    ],
}

HELIX_SEQ = [
    "SER",
    "GLU",
    "GLU",
    "LEU",
    "LEU",
    "LYS",
    "LYS",
    "ALA",
    "TYR",
    "GLU",
    "PHE",
    "LEU",
    "LYS",
    "LYS",
    "LEU",
    "ALA",
]
PEPTIDE_SEQ = ["GLY", "LYS", "THR", "LEU", "VAL", "ASP", "PHE"]
LIGAND_ATOMS = ["C1", "C2", "C3", "C4", "C5", "C6", "C7", "O8", "N9", "C10", "O11", "CL12"]
LIGAND_BONDS = [
    (1, 2, 2), (2, 3, 1), (3, 4, 2), (4, 5, 1), (5, 6, 2), (6, 1, 1),
    (1, 7, 1), (7, 8, 2), (7, 9, 1), (9, 10, 1), (4, 11, 1), (3, 12, 1),
]  # fmt: skip
#: Pose found once by a seeded search (helix/peptide rotations, peptide offset, ligand pose).
POSE: dict[str, Any] = {
    "helix_rot": 181.85,
    "peptide_rot": 319.93,
    "peptide_offset": (10.64, 0.0, -0.82),
    "ligand_euler": (241.22, 260.46, 297.88),
    "ligand_centre": (5.99, -0.57, -0.57),
    "shift": (28.0, 26.0, 30.0),
}


def _place(
    a: np.ndarray, b: np.ndarray, c: np.ndarray, bond: float, angle: float, tor: float
) -> np.ndarray:
    """Atom d from a, b, c, bond length |cd|, angle b-c-d and dihedral a-b-c-d (degrees)."""
    ang, t = math.radians(angle), math.radians(tor)
    bc = (c - b) / np.linalg.norm(c - b)
    n = np.cross(b - a, bc)
    n = n / np.linalg.norm(n)
    m = np.cross(n, bc)
    d: np.ndarray = (
        c
        - bond * math.cos(ang) * bc
        + bond * math.sin(ang) * math.cos(t) * m
        + bond * math.sin(ang) * math.sin(t) * n
    )
    return d


def _rot(axis: Any, deg: float) -> np.ndarray:
    axis = np.asarray(axis, float) / np.linalg.norm(axis)
    t = math.radians(deg)
    k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    r: np.ndarray = np.eye(3) + math.sin(t) * k + (1 - math.cos(t)) * k @ k
    return r


def _chain(seq: list[str], phi: float, psi: float) -> list[tuple[str, dict[str, np.ndarray]]]:
    """Ideal backbone and side chains from internal coordinates, centred, axis along z."""
    n = np.array([0.0, 1.458, 0.0])
    ca = np.zeros(3)
    c = ca + 1.525 * np.array([math.sin(math.radians(111.2)), math.cos(math.radians(111.2)), 0])
    residues: list[tuple[str, dict[str, np.ndarray]]] = []
    prev = None
    for res in seq:
        if prev is not None:
            pn, pca, pc = prev
            n = _place(pn, pca, pc, 1.329, 116.2, psi)
            ca = _place(pca, pc, n, 1.458, 121.7, 180.0)
            c = _place(pc, n, ca, 1.525, 111.2, phi)
        atoms = {"N": n, "CA": ca, "C": c, "O": _place(n, ca, c, 1.231, 120.5, psi + 180.0)}
        if res != "GLY":
            atoms["CB"] = _place(c, n, ca, 1.53, 109.5, -122.6)
            for name, (r1, r2, r3), bond, angle, tor in _SIDE_CHAINS[res]:
                atoms[name] = _place(
                    atoms[r1], atoms[r2], atoms[r3], bond, angle, -65.0 if tor is None else tor
                )
        residues.append((res, atoms))
        prev = (n, ca, c)
    cas = np.array([a["CA"] for _, a in residues])
    centre = cas.mean(axis=0)
    axis = np.linalg.svd(cas - centre)[2][0]
    if np.dot(cas[-1] - cas[0], axis) < 0:
        axis = -axis
    z = np.array([0.0, 0.0, 1.0])
    v = np.cross(axis, z)
    r = _rot(v, math.degrees(math.atan2(np.linalg.norm(v), np.dot(axis, z))))
    return [(res, {k: r @ (x - centre) for k, x in a.items()}) for res, a in residues]


def _ligand_local() -> np.ndarray:
    """3-chloro-4-hydroxy-N-methylbenzamide ("GXL-2"), planar, centred."""

    def d(deg: float) -> np.ndarray:
        return np.array([math.cos(math.radians(deg)), math.sin(math.radians(deg)), 0.0])

    ring = [1.39 * d(60.0 * i) for i in range(6)]
    c7 = ring[0] + 1.49 * d(0)
    o8 = c7 + 1.23 * d(60)
    n9 = c7 + 1.33 * d(-60)
    c10 = n9 + 1.45 * d(0)
    o11 = ring[3] + 1.36 * d(180)
    cl12 = ring[2] + 1.74 * d(120)
    xyz = np.vstack([*ring, c7, o8, n9, c10, o11, cl12])
    centred: np.ndarray = xyz - xyz.mean(axis=0)
    return centred


def t05_model() -> dict[str, Any]:
    """Coordinates of the made-up complex: chains A (helix 40-55), B (peptide 1-7), ligand."""
    shift = np.array(POSE["shift"])
    rh = _rot([0, 0, 1], POSE["helix_rot"])
    rp = _rot([0, 0, 1], POSE["peptide_rot"])
    off = np.array(POSE["peptide_offset"])
    helix = [(r, {k: rh @ x + shift for k, x in a.items()}) for r, a in _chain(HELIX_SEQ, -57, -47)]
    peptide = [
        (r, {k: rp @ x + off + shift for k, x in a.items()})
        for r, a in _chain(PEPTIDE_SEQ, -120, 130)
    ]
    a, b, c = POSE["ligand_euler"]
    rl = _rot([1, 0, 0], a) @ _rot([0, 1, 0], b) @ _rot([0, 0, 1], c)
    ligand = _ligand_local() @ rl.T + np.array(POSE["ligand_centre"]) + shift
    residues = [("A", 40 + i, r, at) for i, (r, at) in enumerate(helix)]
    residues += [("B", 1 + i, r, at) for i, (r, at) in enumerate(peptide)]
    # Waters: grid points 2.7-3.1 Å from a polar atom and >= 2.7 Å from every other atom.
    polar = [x for *_, at in residues for k, x in at.items() if k[0] in "ON"]
    polar += [x for name, x in zip(LIGAND_ATOMS, ligand, strict=True) if name[0] in "ON"]
    heavy = np.array([x for *_, at in residues for x in at.values()] + list(ligand))
    polar_arr = np.array(polar)
    waters: list[np.ndarray] = []
    centre = ligand.mean(axis=0)
    grid = [
        centre + np.array([i, j, k]) * 0.5
        for i in range(-16, 17)
        for j in range(-16, 17)
        for k in range(-16, 17)
    ]
    grid.sort(
        key=lambda g: (
            round(float(np.linalg.norm(g - centre)), 3),
            tuple(round(float(v), 3) for v in g),
        )
    )
    for g in grid:
        if len(waters) == 6:
            break
        dp = np.linalg.norm(polar_arr - g, axis=1).min()
        dh = np.linalg.norm(heavy - g, axis=1).min()
        dw = min((np.linalg.norm(w - g) for w in waters), default=99.0)
        if 2.7 <= dp <= 3.1 and dh >= 2.7 and dw >= 3.5:
            waters.append(g)
    return {"residues": residues, "ligand": ligand, "waters": waters}


def _b_factor(chain: str, resseq: int, atom: str) -> float:
    depth = {"N": 0, "CA": 0, "C": 0, "O": 0.5, "CB": 1.5}.get(atom, 3.0 + 0.5 * len(atom))
    if chain == "A":
        return 23.0 + 1.4 * abs(resseq - 48) + depth
    return 36.0 + 2.5 * abs(resseq - 4) + depth


def _pdb_atom(
    rec: str, serial: int, name: str, resn: str, chain: str, resseq: int,
    xyz: np.ndarray, occ: float, b: float, element: str,
) -> str:  # fmt: skip
    label = name if len(name) == 4 or len(element) == 2 else " " + name
    x, y, z = (float(v) for v in xyz)
    return (
        f"{rec:<6}{serial:>5} {label:<4} {resn:>3} {chain}{resseq:>4}    "
        f"{x:8.3f}{y:8.3f}{z:8.3f}{occ:6.2f}{b:6.2f}          {element:>2}  "
    )


def _seqres(chain: str, seq: list[str]) -> list[str]:
    lines = []
    for i in range(0, len(seq), 13):
        chunk = " ".join(f"{r:>3}" for r in seq[i : i + 13])
        lines.append(f"SEQRES {i // 13 + 1:>3} {chain} {len(seq):>4}  {chunk}".ljust(80))
    return lines


def contacts(model: dict[str, Any], cutoff: float = 4.0) -> list[tuple[str, int, str, float]]:
    out = []
    for chain, resseq, resn, atoms in model["residues"]:
        dmin = min(float(np.linalg.norm(model["ligand"] - x, axis=1).min()) for x in atoms.values())
        if dmin <= cutoff:
            out.append((chain, resseq, resn, round(dmin, 2)))
    return out


def build_t05_structure(pdb_path: Path, sdf_path: Path) -> dict[str, Any]:
    model = t05_model()
    lines = [
        "HEADER    SIGNALING PROTEIN/PEPTIDE               03-JUN-24   XGCL".ljust(80),
        "TITLE     FICTIONAL MODEL: RECEPTOR FRAGMENT RCX (CHAIN A) WITH PEPTIDE PX".ljust(80),
        "TITLE    2 (CHAIN B) AND COMPOUND GXL-2 - GRADERCAL DEMO".ljust(80),
        "REMARK   1 MADE-UP COORDINATES WRITTEN FOR THE GRADERCAL DEMO BENCHMARK.".ljust(80),
        "REMARK   1 NOT AN EXPERIMENTAL STRUCTURE.".ljust(80),
        "REMARK   2".ljust(80),
        "REMARK   2 RESOLUTION.    2.85 ANGSTROMS.".ljust(80),
        "REMARK   3".ljust(80),
        "REMARK   3 REFINEMENT.".ljust(80),
        "REMARK   3   R VALUE            (WORKING SET) : 0.231".ljust(80),
        "REMARK   3   FREE R VALUE                     : 0.298".ljust(80),
        "REMARK   3   LIGAND GXL MODELLED INTO POSITIVE FO-FC DENSITY AT 2.5 SIGMA".ljust(80),
        "REMARK   3   AFTER PROTEIN REFINEMENT; OCCUPANCY REFINED TO 0.50".ljust(80),
        *_seqres("A", HELIX_SEQ),
        *_seqres("B", PEPTIDE_SEQ),
        "HET    GXL  A 201      12".ljust(80),
        "HETNAM     GXL 3-CHLORO-4-HYDROXY-N-METHYLBENZAMIDE".ljust(80),
        "FORMUL   3  GXL    C8 H8 CL N O2".ljust(80),
        "FORMUL   4  HOH   *6(H2 O)".ljust(80),
        "CRYST1   60.000   60.000   60.000  90.00  90.00  90.00 P 1           1".ljust(80),
    ]
    serial = 0
    last: dict[str, tuple[str, int]] = {}
    for chain in ("A", "B"):
        for ch, resseq, resn, atoms in model["residues"]:
            if ch != chain:
                continue
            for name, xyz in atoms.items():
                serial += 1
                b = _b_factor(ch, resseq, name)
                lines.append(
                    _pdb_atom("ATOM", serial, name, resn, ch, resseq, xyz, 1.0, b, name[0])
                )
            last[chain] = (resn, resseq)
        serial += 1
        resn, resseq = last[chain]
        lines.append(f"TER   {serial:>5}      {resn:>3} {chain}{resseq:>4}".ljust(80))
    lig_serials = []
    for i, (name, xyz) in enumerate(zip(LIGAND_ATOMS, model["ligand"], strict=True)):
        serial += 1
        lig_serials.append(serial)
        element = "CL" if name.startswith("CL") else name[0]
        b = 84.0 + (i * 7) % 12
        lines.append(_pdb_atom("HETATM", serial, name, "GXL", "A", 201, xyz, 0.5, b, element))
    for i, xyz in enumerate(model["waters"]):
        serial += 1
        b = 38.0 + (i * 5) % 14
        lines.append(_pdb_atom("HETATM", serial, "O", "HOH", "A", 301 + i, xyz, 1.0, b, "O"))
    for a1, a2, _order in LIGAND_BONDS:
        s1, s2 = lig_serials[a1 - 1], lig_serials[a2 - 1]
        lines.append(f"CONECT{s1:>5}{s2:>5}".ljust(80))
    lines.append("END".ljust(80))
    pdb_path.write_text("\n".join(lines) + "\n", encoding="ascii")

    sdf = [
        "GXL-2",
        "  gradercal-demo 3D",
        "3-chloro-4-hydroxy-N-methylbenzamide, pose as in rcx_gxl2_model.pdb (heavy atoms)",
        f"{len(LIGAND_ATOMS):>3}{len(LIGAND_BONDS):>3}  0  0  0  0  0  0  0  0999 V2000",
    ]
    for name, xyz in zip(LIGAND_ATOMS, model["ligand"], strict=True):
        element = "Cl" if name.startswith("CL") else name[0]
        x, y, z = (float(v) for v in xyz)
        sdf.append(
            f"{x:>10.4f}{y:>10.4f}{z:>10.4f} {element:<3} 0  0  0  0  0  0  0  0  0  0  0  0"
        )
    for a1, a2, order in LIGAND_BONDS:
        sdf.append(f"{a1:>3}{a2:>3}{order:>3}  0")
    sdf += [
        "M  END",
        "> <NAME>",
        "GXL-2",
        "",
        "> <SMILES>",
        "CNC(=O)c1ccc(O)c(Cl)c1",
        "",
        "> <NOTE>",
        "Fictional compound name and pose for the gradercal demo.",
        "",
        "$$$$",
    ]
    sdf_path.write_text("\n".join(sdf) + "\n", encoding="ascii")

    found = contacts(model)
    expected = [(c, n, r) for c, n, r in content.T05_CONTACTS]
    assert [(c, n, r) for c, n, r, _d in found] == expected, found
    lig_b = [84.0 + (i * 7) % 12 for i in range(len(LIGAND_ATOMS))]
    contact_b = [
        _b_factor(ch, n, name)
        for ch, n, _r, atoms in model["residues"]
        if (ch, n) in {(c, k) for c, k, _ in expected}
        for name in atoms
    ]
    return {
        "contacts_4A": [
            {"chain": c, "resseq": n, "resname": r, "min_dist_A": d} for c, n, r, d in found
        ],
        "ligand_mean_b": round(sum(lig_b) / len(lig_b), 1),
        "contact_residue_mean_b": round(sum(contact_b) / len(contact_b), 1),
        "waters": len(model["waters"]),
    }


# ======================================================================================
# T06: antimicrobial susceptibility QC workbook (XLSX)
# ======================================================================================

T06_QC: dict[tuple[str, str, float, float], list[float | None]] = {
    # (strain, agent, low, high): MICs for runs R01..R20 (None = QC not recorded)
    ("P. aeruginosa ATCC 27853", "gentamicin", 0.5, 2): [
        1, 1, 2, 1, 1, 1, 2, 1, 1, 1, 1, 2, 4, 4, 2, None, 4, 8, 4, 4,
    ],
    ("P. aeruginosa ATCC 27853", "amikacin", 1, 4): [
        2, 2, 2, 4, 2, 2, 2, 2, 4, 2, 2, 4, 8, 8, 4, None, 8, 8, 8, 8,
    ],
    ("E. coli ATCC 25922", "gentamicin", 0.25, 1): [
        0.5, 0.5, 0.5, 0.25, 0.5, 0.5, 0.5, 0.5, 0.25, 0.5, 0.5,
        1, 1, 1, 0.5, None, 1, 1, 1, 1,
    ],
    ("E. coli ATCC 25922", "ciprofloxacin", 0.004, 0.016): [
        0.008, 0.008, 0.004, 0.008, 0.008, 0.008, 0.004, 0.008, 0.008, 0.008, 0.008,
        0.008, 0.016, 0.016, 0.008, None, 0.016, 0.016, 0.008, 0.016,
    ],
}  # fmt: skip
T06_TECHS = ["MK", "JS", "MK", "AL", "JS", "MK", "AL", "JS", "MK", "AL"] * 2
T06_CLINICAL = [
    # isolates tested, of which P. aeruginosa
    (7, 1), (9, 2), (6, 1), (8, 2), (7, 1), (9, 1), (6, 2), (8, 1), (7, 1), (8, 2),
    (9, 1), (7, 2), (8, 2), (6, 1), (9, 2), (7, 1), (8, 2), (7, 1), (9, 2), (8, 1),
]  # fmt: skip


def _t06_dates() -> list[datetime]:
    days: list[datetime] = []
    d = datetime(2024, 5, 6)
    while len(days) < 20:
        if d.weekday() < 5:
            days.append(d)
        d = datetime.fromordinal(d.toordinal() + 1)
    return days


def build_t06_xlsx(path: Path) -> dict[str, Any]:
    dates = _t06_dates()
    wb = openpyxl.Workbook()
    head_font = Font(bold=True)
    head_fill = PatternFill("solid", fgColor="DDE7F0")
    ws = wb.active
    ws.title = "QC_log"
    header = [
        "run_id", "date", "qc_strain", "agent", "mic_ug_per_mL", "qc_range_low",
        "qc_range_high", "in_range", "medium_lot", "tech", "comment",
    ]  # fmt: skip
    ws.append(header)
    out_of_range = []
    for i, day in enumerate(dates):
        run = f"R{i + 1:02d}"
        lot = "L2309" if i < 11 else "L2417"
        for (strain, agent, low, high), mics in T06_QC.items():
            mic = mics[i]
            if mic is None:
                ws.append([run, day.date(), strain, agent, None, low, high, "", lot,
                           T06_TECHS[i], "QC not recorded"])  # fmt: skip
                continue
            ok = low <= mic <= high
            if not ok:
                out_of_range.append((run, strain, agent, mic))
            comment = "" if ok else "out of range - repeated next run"
            ws.append([run, day.date(), strain, agent, mic, low, high, "Y" if ok else "N", lot,
                       T06_TECHS[i], comment])  # fmt: skip
    ws2 = wb.create_sheet("Media_lots")
    ws2.append([
        "lot", "product", "received", "coa_ca_mg_per_L", "coa_mg_mg_per_L",
        "in_house_cation_supplement", "first_run", "last_run", "notes",
    ])  # fmt: skip
    ws2.append([
        "L2309", "Mueller-Hinton broth (not cation-adjusted)", datetime(2024, 3, 18).date(),
        3.1, 2.4, "yes, per SOP-114 (CaCl2 + MgCl2 stock, 1 mL/L)", "R01", "R11",
        "SOP-114 brings unadjusted MHB to 20-25 mg/L Ca2+ and 10-12.5 mg/L Mg2+",
    ])  # fmt: skip
    ws2.append([
        "L2417", "Cation-adjusted Mueller-Hinton broth (CAMHB)", datetime(2024, 5, 17).date(),
        23.4, 11.2, "yes, per SOP-114 (CaCl2 + MgCl2 stock, 1 mL/L)", "R12", "R20",
        "New supplier after backorder of the usual product",
    ])  # fmt: skip
    ws3 = wb.create_sheet("Clinical_runs")
    ws3.append([
        "run_id", "date", "isolates_tested", "p_aeruginosa_isolates",
        "aminoglycoside_results_reported", "reports_released",
    ])  # fmt: skip
    for i, day in enumerate(dates):
        n, pa = T06_CLINICAL[i]
        ws3.append([f"R{i + 1:02d}", day.date(), n, pa, "yes", "yes"])
    widths = {
        "QC_log": [8, 12, 26, 14, 14, 12, 13, 9, 11, 6, 30],
        "Media_lots": [8, 44, 12, 16, 16, 46, 9, 9, 66],
        "Clinical_runs": [8, 12, 15, 21, 31, 17],
    }
    for sheet in wb.worksheets:
        for cell in sheet[1]:
            cell.font = head_font
            cell.fill = head_fill
            cell.alignment = Alignment(wrap_text=False)
        for col, width in enumerate(widths[sheet.title], start=1):
            sheet.column_dimensions[openpyxl.utils.get_column_letter(col)].width = width
        for row in sheet.iter_rows(min_row=2):
            for cell in row:
                if hasattr(cell.value, "year"):
                    cell.number_format = "yyyy-mm-dd"
        sheet.freeze_panes = "A2"
    wb.properties.creator = "gradercal demo"
    wb.properties.lastModifiedBy = "gradercal demo"
    wb.properties.title = "AST QC log (fictional, gradercal demo)"
    wb.properties.created = FIXED_TIME
    wb.properties.modified = FIXED_TIME
    wb.save(path)
    _pin_zip_times(path)
    released = sum(n for n, _pa in T06_CLINICAL[11:])
    released_pa = sum(pa for _n, pa in T06_CLINICAL[11:])
    assert (released, released_pa) == content.T06_RELEASED, (released, released_pa)
    return {"out_of_range": out_of_range, "isolates_R12_R20": released, "pa_R12_R20": released_pa}


# ======================================================================================
# T08: volcano plot (PNG) and top-gene table (CSV)
# ======================================================================================


def t08_genes() -> list[dict[str, Any]]:
    rng = random.Random(808)
    genes: list[dict[str, Any]] = []
    for name, lfc, p, base in content.T08_NAMED_GENES:
        genes.append({"gene": name, "log2FC": lfc, "pvalue": p, "baseMean": base})
    n_named = len(genes)
    for i in range(content.T08_TESTED - n_named):
        if rng.random() < 0.075:  # responsive genes
            sign = 1 if rng.random() < 0.62 else -1
            lfc = sign * (0.4 + rng.expovariate(1 / 1.1))
            se = rng.uniform(0.18, 0.45) * (1 + 0.25 * abs(lfc))
        else:
            lfc = rng.gauss(0, 0.22)
            se = rng.uniform(0.12, 0.6)
        z = abs(lfc) / se
        genes.append(
            {
                "gene": f"gene{i + 1:05d}",
                "log2FC": round(lfc, 3),
                "pvalue": math.erfc(z / math.sqrt(2)),
                "baseMean": round(math.exp(rng.gauss(6.0, 1.6)), 1),
            }
        )
    # Benjamini–Hochberg
    order = sorted(range(len(genes)), key=lambda k: genes[k]["pvalue"])
    m = len(genes)
    running = 1.0
    for rank in range(m, 0, -1):
        k = order[rank - 1]
        running = min(running, genes[k]["pvalue"] * m / rank)
        genes[k]["padj"] = running
    return genes


def build_t08(png_path: Path, csv_path: Path) -> dict[str, int]:
    genes = t08_genes()
    up = [g for g in genes if g["padj"] < 0.05 and g["log2FC"] >= 1]
    down = [g for g in genes if g["padj"] < 0.05 and g["log2FC"] <= -1]
    counts = {"tested": len(genes), "up": len(up), "down": len(down)}
    assert counts == content.T08_COUNTS, counts

    fig, ax = plt.subplots(figsize=(6.4, 4.8))
    sig_ids = {id(g) for g in up + down}
    grey = [g for g in genes if id(g) not in sig_ids]
    for group, colour, label in (
        (grey, "0.72", f"below thresholds ({len(grey):,})"),
        (up, "#c0392b", f"up ({len(up)})"),
        (down, "#2e6da4", f"down ({len(down)})"),
    ):
        ax.scatter(
            [g["log2FC"] for g in group],
            [-math.log10(g["padj"]) for g in group],
            s=5,
            c=colour,
            alpha=0.75,
            linewidths=0,
            label=label,
            rasterized=True,
        )
    ax.axvline(-1, ls="--", lw=0.8, c="0.3")
    ax.axvline(1, ls="--", lw=0.8, c="0.3")
    ax.axhline(-math.log10(0.05), ls="--", lw=0.8, c="0.3")
    for name in content.T08_LABELLED:
        g = next(x for x in genes if x["gene"] == name)
        ax.annotate(
            name,
            (g["log2FC"], -math.log10(g["padj"])),
            xytext=(4, 2),
            textcoords="offset points",
            fontsize=7.5,
            fontstyle="italic",
        )
    ax.set_xlabel("log2 fold change (IFN-λ1 vs mock)")
    ax.set_ylabel("−log10 adjusted p-value (BH)")
    ax.set_title("Primary HBEC, IFN-λ1 100 ng/mL 24 h vs mock (n = 4 donors)", fontsize=9.5)
    ax.legend(fontsize=7.5, frameon=False, loc="upper left", markerscale=2.5)
    fig.tight_layout()
    png_path.write_bytes(_fig_bytes(fig, "png", dpi=110))

    top = sorted(genes, key=lambda g: g["padj"])[:15]
    with csv_path.open("w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(["gene", "baseMean", "log2FoldChange", "pvalue", "padj"])
        for g in top:
            w.writerow(
                [g["gene"], g["baseMean"], g["log2FC"], f"{g['pvalue']:.3g}", f"{g['padj']:.3g}"]
            )
    assert [g["gene"] for g in top] == [n for n, *_ in content.T08_NAMED_GENES], top
    return counts


# ======================================================================================
# Judgments: true verdicts + seeded grader noise
# ======================================================================================

#: Noise model. Humans flip a verdict with probability ``flip`` (x ``ambiguous_factor`` on
#: criteria marked ambiguous in demo_content). The judge is lenient: it credits unmet
#: positive criteria with probability ``false_met`` (``false_met_tag`` on criteria tagged
#: ``lenient_tag``) and misses true penalties with probability ``missed_penalty``.
NOISE: dict[str, Any] = {
    "humans": {"expert-ana": 0.065, "expert-ben": 0.08, "expert-chloe": 0.09},
    "ambiguous_factor": 2.5,
    "judge": {
        "name": "judge-gpt",
        "false_met": 0.14,
        "false_met_tag": 0.40,
        "lenient_tag": "axis:completeness",
        "false_unmet": 0.04,
        "missed_penalty": 0.25,
        "false_penalty": 0.03,
        "ambiguous_extra": 0.06,
    },
}

_HUMAN_SHORT_MET = [
    "Clearly addressed.",
    "Yes, stated explicitly.",
    "Covered.",
    "Met, though briefly.",
    "Present in the second half of the answer.",
]
_HUMAN_SHORT_UNMET = [
    "Not addressed.",
    "Missing.",
    "Only implied, not stated.",
    "I could not find this in the response.",
    "Too vague to count.",
]
_HUMAN_PENALTY_MET = ["Penalty applies.", "Yes, this error is present.", "Applies, see text."]
_HUMAN_PENALTY_UNMET = ["No such error.", "Does not apply.", "Not present."]


def _base_verb(text: str) -> str:
    """'Identifies that …' -> 'identify that …' (crude, for rationale templates)."""
    first, _, rest = text.partition(" ")
    low = first.lower()
    irregular = {"does": "do", "is": "be", "has": "have", "puts": "put", "gives": "give"}
    if low in irregular:
        verb = irregular[low]
    elif low.endswith("ies"):
        verb = low[:-3] + "y"
    elif low.endswith(("sses", "shes", "ches", "xes")):
        verb = low[:-2]
    elif low.endswith("s") and not low.endswith("ss"):
        verb = low[:-1]
    else:
        verb = low
    return f"{verb} {rest}".rstrip(".")


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:]


def _judge_rationale(
    rng: random.Random,
    crit: dict[str, Any],
    met: bool,
    correct: bool,
    note: str | None,
    level: int | None = None,
) -> str:
    """A plausible one-line rationale for a judge verdict (templated, seeded)."""
    text = re.sub(r"\s*\(partial:[^)]*\)", "", crit["criterion"])
    verb = _base_verb(text)
    if level is not None and 0 < level < crit.get("levels", 2) - 1:
        if correct and note:
            return f"Partially met. {note}"
        return "Partially met: the response goes in the right direction but is incomplete."
    if correct and note:
        return f"{'Met.' if met else 'Not met.'} {note}"
    if crit["points"] < 0:
        if met and correct:
            return f"Met: the response does {verb}."
        if met:
            return "Met: part of the response can be read this way, so the penalty applies."
        if correct:
            return rng.choice(
                [
                    "Not met: I found no instance of this error in the response.",
                    "Not met: the response does not contain this problem.",
                ]
            )
        return "Not met: the response is broadly sound on this point; no penalty."
    if met and correct:
        return rng.choice(
            [
                f"Met: the response does {verb}.",
                f"Met. The response explicitly addresses this: it does {verb}.",
            ]
        )
    if met:
        return rng.choice(
            [
                "Met: the response covers this implicitly in its discussion and recommendations.",
                "Met: this point is addressed in spirit, although not in these exact terms.",
                "Met: the general direction of the answer is consistent with this criterion.",
            ]
        )
    if correct:
        return rng.choice(
            [
                f"Not met: the response does not {verb}.",
                f"Not met. I could not find where the response would {verb}.",
            ]
        )
    return rng.choice(
        [
            "Not met: the response mentions related ideas but not with the required specificity.",
            "Not met: this is not stated clearly enough to credit.",
        ]
    )


def _flip_level(rng: random.Random, level: int, levels: int) -> int:
    options = [x for x in (level - 1, level + 1) if 0 <= x < levels]
    return rng.choice(options)


def build_judgments() -> tuple[list[dict[str, Any]], dict[str, Any]]:
    tasks = {t["id"]: t for t in content.TASKS}
    judgments: list[dict[str, Any]] = []
    truth_out: dict[str, Any] = {}
    unclear = {(u["response_id"], u["criterion_id"], u["grader"]): u for u in content.UNCLEAR}
    jn = NOISE["judge"]
    for resp in content.RESPONSES:
        task = tasks[resp["task_id"]]
        spec = content.TRUTH[resp["id"]]
        met_ids = set(spec["met"].split())
        levels = spec.get("levels", {})
        notes = spec.get("notes", {})
        judgment_ids = {c["id"] for c in task["rubric"] if "auto" not in c}
        assert met_ids <= judgment_ids, (resp["id"], met_ids - judgment_ids)
        assert set(notes) <= judgment_ids, (resp["id"], set(notes) - judgment_ids)
        truth_out[resp["id"]] = {}
        for crit in task["rubric"]:
            if "auto" in crit:
                continue
            cid = crit["id"]
            n_levels = crit.get("levels", 2)
            if n_levels > 2:
                true_level = levels[cid]
                true_met = true_level == n_levels - 1
                assert cid not in met_ids, (resp["id"], cid, "give 3-level truths in 'levels'")
            else:
                true_level = None
                true_met = cid in met_ids
            truth_out[resp["id"]][cid] = (
                {"met": true_met, "level": true_level}
                if true_level is not None
                else {"met": true_met}
            )
            ambiguous = bool(crit.get("ambiguous"))
            note = notes.get(cid)
            for grader, p_flip in NOISE["humans"].items():
                rng = _seeded("human", grader, resp["id"], cid)
                p = min(0.5, p_flip * (NOISE["ambiguous_factor"] if ambiguous else 1.0))
                flipped = rng.random() < p
                j: dict[str, Any] = {
                    "response_id": resp["id"],
                    "criterion_id": cid,
                    "grader": grader,
                    "grader_kind": "human",
                }
                if true_level is not None:
                    level = _flip_level(rng, true_level, n_levels) if flipped else true_level
                    j["met"] = level == n_levels - 1
                    j["level"] = level
                else:
                    j["met"] = (not true_met) if flipped else true_met
                correct = j["met"] == true_met
                # Rationales: more often on "not met" and always when a note exists and agrees.
                r = rng.random()
                if note and correct and r < 0.55:
                    j["rationale"] = note
                elif r < (0.35 if not j["met"] else 0.15):
                    if crit["points"] < 0:
                        pool = _HUMAN_PENALTY_MET if j["met"] else _HUMAN_PENALTY_UNMET
                    else:
                        pool = _HUMAN_SHORT_MET if j["met"] else _HUMAN_SHORT_UNMET
                    j["rationale"] = rng.choice(pool)
                u = unclear.get((resp["id"], cid, grader))
                if u is not None:
                    j["unclear"] = True
                    j["unclear_note"] = u["note"]
                judgments.append(j)
            # The judge.
            rng = _seeded("judge", jn["name"], resp["id"], cid)
            penalty = crit["points"] < 0
            extra = jn["ambiguous_extra"] if ambiguous else 0.0
            if penalty:
                p_wrong = (jn["missed_penalty"] if true_met else jn["false_penalty"]) + extra
            elif true_met:
                p_wrong = jn["false_unmet"] + extra
            else:
                lenient = jn["lenient_tag"] in crit.get("tags", [])
                p_wrong = (jn["false_met_tag"] if lenient else jn["false_met"]) + extra
            wrong = rng.random() < p_wrong
            j = {
                "response_id": resp["id"],
                "criterion_id": cid,
                "grader": jn["name"],
                "grader_kind": "judge",
            }
            if true_level is not None:
                if wrong:
                    # lenient on partial credit: move up when possible
                    level = true_level + 1 if true_level < n_levels - 1 else true_level - 1
                else:
                    level = true_level
                j["met"] = level == n_levels - 1
                j["level"] = level
            else:
                j["met"] = (not true_met) if wrong else true_met
            correct = j["met"] == true_met and j.get("level", true_level) == true_level
            conf = rng.uniform(0.74, 0.97) if correct else rng.uniform(0.52, 0.82)
            j["confidence"] = round(conf, 2)
            j["rationale"] = _judge_rationale(rng, crit, j["met"], correct, note, j.get("level"))
            judgments.append(j)
    return judgments, truth_out


#: Who settles the demo's disagreements, and when (pinned, like every demo time).
ADJUDICATOR = "lead-dana"
ADJUDICATED_AT = "2024-06-10T14:00:00+00:00"


def build_adjudications(
    judgments: list[dict[str, Any]], truth: dict[str, Any]
) -> list[dict[str, Any]]:
    """Final verdicts on the human disagreements that the content has a note for."""
    votes: dict[tuple[str, str], set[bool]] = {}
    for j in judgments:
        if j["grader_kind"] == "human":
            votes.setdefault((j["response_id"], j["criterion_id"]), set()).add(j["met"])
    out: list[dict[str, Any]] = []
    for resp in content.RESPONSES:
        notes = content.TRUTH[resp["id"]].get("notes", {})
        for cid, verdict in truth[resp["id"]].items():
            if len(votes.get((resp["id"], cid), ())) < 2 or cid not in notes:
                continue
            rec: dict[str, Any] = {
                "response_id": resp["id"],
                "criterion_id": cid,
                "met": verdict["met"],
            }
            if verdict.get("level") is not None:
                rec["level"] = verdict["level"]
            rec.update(
                adjudicator=ADJUDICATOR,
                note=notes[cid],
                created_at=ADJUDICATED_AT,
                updated_at=ADJUDICATED_AT,
            )
            out.append(rec)
    return out


# ======================================================================================
# Auto criteria (to record their outcomes in truth.json)
# ======================================================================================


def _auto_met(rule: dict[str, Any], answer: Any) -> bool:
    key = rule["key"]
    if key.startswith("answer."):
        key = key[len("answer.") :]
    value = answer
    for part in key.split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return False
    target = rule["target"]
    if "abs_tol" not in rule and "rel_tol" not in rule:
        if isinstance(value, str) and isinstance(target, str):
            return value.strip() == target.strip()
        return bool(value == target)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    tol = max(rule.get("abs_tol", 0.0), rule.get("rel_tol", 0.0) * abs(target))
    return bool(abs(value - target) <= tol)


# ======================================================================================
# Main
# ======================================================================================


def _task_record(task: dict[str, Any]) -> dict[str, Any]:
    rec = {k: task[k] for k in ("id", "prompt", "workflow", "domain", "answer_format", "tags")}
    rec["metadata"] = task["metadata"]
    if task["artifacts"]:
        rec["artifacts"] = task["artifacts"]
    rec["rubric"] = [{k: v for k, v in c.items() if k != "ambiguous"} for c in task["rubric"]]
    return rec


def build(out: Path = OUT) -> dict[str, Any]:
    if out.exists():
        if out.name != "demo" or not (out / "tasks.jsonl").exists():
            raise SystemExit(f"refusing to delete unexpected folder {out}")
        shutil.rmtree(out)
    art = out / "artifacts"
    for sub in ("T01", "T02", "T03", "T05", "T06", "T08"):
        (art / sub).mkdir(parents=True, exist_ok=True)

    facts: dict[str, Any] = {}
    build_t01_pdf(art / "T01" / "treg_flow_report.pdf")
    facts["T02_fit"] = build_t02_csv(art / "T02" / "gc114_viability.csv")
    build_t03_fasta(art / "T03" / "slc99a1_exons.fasta")
    facts["T05"] = build_t05_structure(art / "T05" / "rcx_gxl2_model.pdb", art / "T05" / "gxl2.sdf")
    facts["T06"] = build_t06_xlsx(art / "T06" / "ast_qc_log.xlsx")
    facts["T08"] = build_t08(art / "T08" / "ifnl1_volcano.png", art / "T08" / "top_de_genes.csv")

    (out / "benchmark.json").write_text(
        json.dumps(content.BENCHMARK, ensure_ascii=False, indent=2) + "\n", encoding="utf-8"
    )
    _write_jsonl(out / "tasks.jsonl", [_task_record(t) for t in content.TASKS])
    _write_jsonl(out / "responses.jsonl", content.RESPONSES)
    judgments, truth = build_judgments()
    _write_jsonl(out / "judgments.jsonl", judgments)
    _write_jsonl(out / "adjudications.jsonl", build_adjudications(judgments, truth))

    tasks = {t["id"]: t for t in content.TASKS}
    auto: dict[str, dict[str, bool]] = {}
    for resp in content.RESPONSES:
        for crit in tasks[resp["task_id"]]["rubric"]:
            if "auto" in crit:
                auto.setdefault(resp["id"], {})[crit["id"]] = _auto_met(
                    crit["auto"], resp.get("answer")
                )
    ambiguous = {
        t["id"]: [c["id"] for c in t["rubric"] if c.get("ambiguous")] for t in content.TASKS
    }
    truth_doc = {
        "about": (
            "True verdicts behind the demo judgments (hand-written in samples/demo_content.py). "
            "Not part of format v1; gradercal ignores this file."
        ),
        "judgment_criteria": truth,
        "auto_criteria": auto,
        "ambiguous_criteria": ambiguous,
        "noise": NOISE,
        "partial_credit": "for 3-level criteria, met is true only at the top level",
        "artifact_facts": facts,
    }
    (out / "truth.json").write_text(
        json.dumps(truth_doc, ensure_ascii=False, indent=2) + "\n", encoding="utf-8"
    )
    return facts


def main() -> None:
    facts = build()
    for path in sorted(OUT.rglob("*")):
        if path.is_file():
            digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
            print(f"{path.relative_to(HERE)}  {path.stat().st_size:>8} B  {digest}")
    print(json.dumps(facts["T05"]["contacts_4A"]))


if __name__ == "__main__":
    main()
