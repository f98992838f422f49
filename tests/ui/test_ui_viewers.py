"""Artifact viewers (pytest-qt, offscreen): every sample file opens, every corrupt one says so."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QDesktopServices

from gradercal.model import Artifact, ArtifactKind, artifact_kind_for
from gradercal.ui import qt_workers
from gradercal.ui.viewers import create_viewer
from gradercal.ui.viewers import qt_pdf_viewer as pdfmod
from gradercal.ui.viewers.qt_base import QtArtifactViewer, QtMessagePanel
from gradercal.ui.viewers.sequences import gc_content, parse_sequences, wrapped
from gradercal.ui.viewers.structures import MoleculeFile, StructureSummary, summarize
from gradercal.ui.viewers.tables import read_table
from tests.conftest import DEMO
from tests.support.gui import CORRUPT, FASTA, GENBANK, MMCIF, PDB, SDF, make_pdf, sample_files

pytestmark = pytest.mark.gui

SAMPLES = sample_files()


def _artifact(name: str, data: bytes) -> Artifact:
    return Artifact(
        kind=artifact_kind_for(name),
        title=name,
        path=f"artifacts/{name}",
        original_name=name,
        sha256=f"test-{name}-{len(data)}",
        size=len(data),
    )


@pytest.fixture
def open_viewer(qtbot: Any) -> Iterator[Any]:
    def make(name: str, data: bytes) -> QtArtifactViewer:
        viewer = create_viewer(_artifact(name, data), lambda: data)
        qtbot.addWidget(viewer)
        viewer.resize(800, 600)
        viewer.show()
        with qtbot.waitSignal(viewer.ready, timeout=20_000):
            viewer.start()
        return viewer

    yield make
    qtbot.waitUntil(lambda: qt_workers.pending_jobs() == 0, timeout=20_000)


# -------------------------------------------------------------------------------- parsers


def test_fasta_records_lengths_and_gc() -> None:
    parsed = parse_sequences(FASTA, "x.fasta")
    assert parsed.format == "fasta"
    assert [(r.id, r.description, r.length) for r in parsed.records] == [
        ("seq1", "first test construct", 39),
        ("seq2", "second one", 10),
    ]
    # seq2 = ATATATATGC: one G and one C in ten bases
    assert parsed.records[1].gc_content == pytest.approx(0.2)
    assert gc_content("GGCCNNNN") == 1.0  # N is left out of the denominator
    assert parse_sequences(b">p\nMKTAYIAKQRQISFVKSHFSRQ\n").records[0].kind == "protein"


def test_genbank_record() -> None:
    parsed = parse_sequences(GENBANK, "x.gb")
    (rec,) = parsed.records
    assert (rec.id, rec.length, rec.molecule, rec.topology) == ("TS0001", 20, "DNA", "linear")
    assert rec.description == "A tiny synthetic test sequence"
    assert rec.features == {"source": 1, "CDS": 1}
    assert rec.sequence == "atggccgcgttagcggccgc"


def test_wrapped_layout_has_a_ruler_and_positions() -> None:
    lines = wrapped("A" * 25, width=10, block=5).splitlines()
    assert lines[0].split() == ["5", "10"]
    assert lines[2] == "   1 AAAAA AAAAA"
    assert lines[4] == "  21 AAAAA"


def test_structure_summaries() -> None:
    pdb = summarize(PDB, "m.pdb")
    assert isinstance(pdb, StructureSummary)
    assert [(c.chain, c.residues, c.atoms, c.sequence) for c in pdb.chains] == [
        ("A", 2, 3, "AG"),
        ("B", 1, 1, "S"),
    ]
    assert (pdb.ligands, pdb.n_waters, pdb.n_atoms) == ({"LIG": 1}, 1, 6)
    cif = summarize(MMCIF, "m.cif")
    assert isinstance(cif, StructureSummary)
    assert cif.title == "A tiny mmCIF test structure"
    assert [(c.chain, c.residues) for c in cif.chains] == [("A", 2), ("B", 1)]
    assert cif.n_waters == 1
    sdf = summarize(SDF, "l.sdf")
    assert isinstance(sdf, MoleculeFile)
    assert [(x.name, x.n_atoms, x.n_bonds, x.formula) for x in sdf.molecules] == [
        ("ethanol", 3, 2, "C2O"),
        ("ethanol-2", 3, 2, "C2O"),
    ]
    assert sdf.molecules[0].properties == {"SMILES": "CCO"}


def test_tables_read_by_kind() -> None:
    csv = read_table(SAMPLES["data.csv"], "data.csv")[""]
    assert list(csv.columns) == ["well", "conc_uM", "viability"] and csv.shape == (3, 3)
    tsv = read_table(SAMPLES["genes.tsv"], "genes.tsv")[""]
    assert list(tsv["gene"]) == ["IFIT1", "MX1"]
    book = read_table(SAMPLES["book.xlsx"], "book.xlsx")
    assert list(book) == ["runs", "lots"] and book["runs"].shape == (2, 2)


# -------------------------------------------------------------------------------- viewers


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_every_sample_file_opens(open_viewer: Any, name: str) -> None:
    viewer = open_viewer(name, SAMPLES[name])
    assert viewer.error is None
    assert viewer.findChild(QtMessagePanel, "artifactError") is None


@pytest.mark.parametrize(
    "path",
    sorted(p for p in DEMO.glob("artifacts/*/*") if p.is_file()) if DEMO.exists() else [],
    ids=lambda p: p.name,
)
def test_every_demo_artifact_opens(open_viewer: Any, path: Path) -> None:
    viewer = open_viewer(path.name, path.read_bytes())
    assert viewer.error is None


@pytest.mark.parametrize("name", sorted(CORRUPT))
def test_a_corrupt_file_shows_a_clear_message(open_viewer: Any, name: str) -> None:
    viewer = open_viewer(name, CORRUPT[name])
    assert viewer.error
    panel = viewer.findChild(QtMessagePanel, "artifactError")
    assert panel is not None and panel.isVisible()
    assert panel.title.text() == f"Cannot show {name}"
    assert viewer.error in panel.detail.text()
    assert "damaged" in panel.detail.text()


def test_pdf_pages_navigation_zoom_and_search(open_viewer: Any, qtbot: Any) -> None:
    viewer = open_viewer("report.pdf", SAMPLES["report.pdf"])
    assert viewer.page_count_value() == 3
    assert pdfmod.cached_page(viewer.info.sha, 0, viewer.zoom) is not None
    viewer.go_to_page(2)
    qtbot.waitUntil(lambda: viewer.current_page() == 2)
    assert viewer.page_box.value() == 3
    before = viewer.zoom
    viewer.step_zoom(+1)
    assert viewer.zoom > before and not viewer.fit_width
    viewer.set_fit_width(True)
    with qtbot.waitSignal(viewer.search_done, timeout=10_000) as hits:
        viewer.search("viability")
    assert hits.args == [1]
    assert viewer.hits[0][0] == 1  # on page 2
    assert viewer.hit_label.text() == "1 / 1"
    qtbot.waitUntil(lambda: viewer.current_page() == 1)


def test_a_long_pdf_renders_only_the_pages_in_view(open_viewer: Any, qtbot: Any) -> None:
    data = make_pdf(pages=300)
    pdfmod.clear_cache()
    viewer = open_viewer("long.pdf", data)
    assert viewer.page_count_value() == 300
    sha = viewer.info.sha
    rendered = [p for (s, p, _z) in pdfmod._CACHE if s == sha]
    assert 0 in rendered and len(rendered) < 10
    viewer.go_to_page(250)
    qtbot.waitUntil(lambda: pdfmod.cached_page(sha, 250, viewer.zoom) is not None, timeout=10_000)
    assert len([p for (s, p, _z) in pdfmod._CACHE if s == sha]) < 20


def test_table_viewer_sorts_without_copying(open_viewer: Any) -> None:
    viewer = open_viewer("data.csv", SAMPLES["data.csv"])
    model = viewer.model
    assert model.frame is viewer.sheets[""]  # the model reads the frame itself
    assert (model.rowCount(), model.columnCount()) == (3, 3)
    viewer.table.sortByColumn(2, Qt.SortOrder.DescendingOrder)
    assert [model.data(model.index(r, 0)) for r in range(3)] == ["A1", "A2", "A3"]
    viewer.table.sortByColumn(2, Qt.SortOrder.AscendingOrder)
    assert [model.data(model.index(r, 0)) for r in range(3)] == ["A3", "A2", "A1"]
    assert model.headerData(0, Qt.Orientation.Vertical) == "3"  # original row number
    assert viewer.shape_label.text() == "3 rows × 3 columns"


def test_workbook_viewer_switches_sheets(open_viewer: Any) -> None:
    viewer = open_viewer("book.xlsx", SAMPLES["book.xlsx"])
    assert viewer.sheet_box.isVisibleTo(viewer) and viewer.sheet_box.count() == 2
    viewer.sheet_box.setCurrentText("lots")
    assert viewer.model.data(viewer.model.index(0, 1)) == "TRUE"


def test_sequence_viewer_shows_records_and_wrapped_text(open_viewer: Any) -> None:
    viewer = open_viewer("construct.fasta", FASTA)
    assert viewer.records_model.rowCount() == 2
    assert "GC" in viewer.summary.text() and "49 letters" in viewer.summary.text()
    assert viewer.text.toPlainText().splitlines()[3].startswith("   1 ATGGCCGCGT TAGCGGCCGC")
    viewer.records_view.selectRow(1)
    assert viewer.text.toPlainText().startswith(">seq2 second one")


def test_structure_viewer_summary_and_text(open_viewer: Any) -> None:
    viewer = open_viewer("model.pdb", PDB)
    html = viewer.summary_view.toPlainText()
    assert "2 chains" in html and "LIG × 1" in html
    assert viewer.text.toPlainText().startswith("HEADER")


def test_image_viewer_fits_and_zooms(open_viewer: Any) -> None:
    viewer = open_viewer("plot.png", SAMPLES["plot.png"])
    assert (viewer.image.width(), viewer.image.height()) == (64, 48)
    fitted = viewer.scale_factor
    viewer.zoom_by(2.0)
    assert viewer.scale_factor == pytest.approx(fitted * 2.0)
    viewer.set_fit(True)
    assert viewer.scale_factor == pytest.approx(fitted)


def test_a_url_is_never_fetched_until_asked(qtbot: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[str] = []
    monkeypatch.setattr(QDesktopServices, "openUrl", lambda url: opened.append(url.toString()))
    art = Artifact(kind=ArtifactKind.URL, title="Vector map", url="https://example.org/map")
    viewer = create_viewer(art, None)
    qtbot.addWidget(viewer)
    viewer.start()
    assert viewer.is_ready and viewer.error is None
    assert viewer.address.text() == "https://example.org/map"
    assert opened == []
    qtbot.mouseClick(viewer.open_button, Qt.MouseButton.LeftButton)
    assert opened == ["https://example.org/map"]
    bad = create_viewer(Artifact(kind=ArtifactKind.URL, title="x", url="file:///etc/passwd"), None)
    qtbot.addWidget(bad)
    bad.start()
    assert bad.error is not None and "http" in bad.error


def test_clearing_the_pdf_search_clears_its_count_and_highlights(
    open_viewer: Any, qtbot: Any
) -> None:
    viewer = open_viewer("report.pdf", SAMPLES["report.pdf"])
    viewer.search_box.setText("viability")
    with qtbot.waitSignal(viewer.search_done, timeout=10_000):
        viewer.search_box.returnPressed.emit()
    assert viewer.hit_label.text() == "1 / 1" and viewer.hits
    viewer.search_box.clear()  # what the box's clear button does
    assert viewer.hits == [] and viewer.hit_index == -1
    assert viewer.hit_label.text() == ""
    viewer.search_box.setText("page")  # a new search after that works as before
    with qtbot.waitSignal(viewer.search_done, timeout=10_000) as done:
        viewer.search_box.returnPressed.emit()
    assert done.args == [3] and viewer.hit_label.text() == "1 / 3"


def test_viewers_page_zoom_sheet_and_link_abilities(
    open_viewer: Any, qtbot: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    pdf = open_viewer("report.pdf", SAMPLES["report.pdf"])
    assert pdf.step_page(1)
    qtbot.waitUntil(lambda: pdf.current_page() == 1)
    assert pdf.step_page(-1)
    qtbot.waitUntil(lambda: pdf.current_page() == 0)
    fitted = pdf.zoom
    assert pdf.change_zoom(1) and pdf.zoom > fitted and not pdf.fit_width
    assert pdf.change_zoom(0) and pdf.fit_width and pdf.zoom == pytest.approx(fitted)
    assert not pdf.step_sheet(1) and not pdf.open_link()
    image = open_viewer("plot.png", SAMPLES["plot.png"])
    fitted = image.scale_factor
    assert image.change_zoom(-1) and image.scale_factor == pytest.approx(fitted * 0.8)
    assert image.change_zoom(0) and image.scale_factor == pytest.approx(fitted)
    book = open_viewer("book.xlsx", SAMPLES["book.xlsx"])
    assert book.step_sheet(1) and book.sheet_box.currentText() == "lots"
    assert book.step_sheet(1) and book.sheet_box.currentText() == "runs"  # wraps around
    assert not open_viewer("data.csv", SAMPLES["data.csv"]).step_sheet(1)  # one table only
    opened: list[str] = []
    monkeypatch.setattr(QDesktopServices, "openUrl", lambda url: opened.append(url.toString()))
    link = create_viewer(
        Artifact(kind=ArtifactKind.URL, title="Map", url="https://example.org/m"), None
    )
    qtbot.addWidget(link)
    link.start()
    assert link.open_link() and opened == ["https://example.org/m"]
    assert not link.change_zoom(1) and not link.step_page(1)


#: Run in a fresh process with an empty HOME: the PDF viewer opens the demo's PDF, pages
#: it, searches it, and the judge's text and page extraction read it; then it prints what
#: got imported.
_PDF_IN_A_FRESH_HOME = """
import json, sys
from pathlib import Path
from PySide6.QtWidgets import QApplication
app = QApplication([])
from gradercal.judge.artifacts import _pdf_text
from gradercal.judge.vision import _pymupdf
from gradercal.model import Artifact, ArtifactKind
from gradercal.ui import qt_workers
from gradercal.ui.qt_app import preload_pdf_engine
from gradercal.ui.viewers import create_viewer
preload_pdf_engine()  # what the app does at start
data = Path(sys.argv[1]).read_bytes()
art = Artifact(kind=ArtifactKind.PDF, title="report", path="artifacts/r.pdf",
               original_name="r.pdf", sha256="fresh-home", size=len(data))
viewer = create_viewer(art, lambda: data)
viewer.resize(800, 600)
viewer.show()
found = []
viewer.search_done.connect(found.append)
viewer.ready.connect(lambda: viewer.search("Treg"))
viewer.start()
while not found:
    app.processEvents()
viewer.step_page(1)
while qt_workers.pending_jobs():
    app.processEvents()
text = _pdf_text(data, 10_000)
doc = _pymupdf().open(stream=data, filetype="pdf")
doc[0].get_pixmap(dpi=50)
print(json.dumps({"hits": found[0], "text": len(text),
                  "modules": sorted(m for m in sys.modules
                                    if m.split(".")[0] in ("onnxruntime", "pymupdf4llm")
                                    or m == "pymupdf.layout")}))
"""


def test_opening_a_pdf_writes_nothing_under_the_users_cache(tmp_path: Path) -> None:
    """PyMuPDF 2 imports its optional layout helpers (pymupdf.layout, pymupdf4llm), which
    load ONNX Runtime, which writes a device id under ~/.cache on its first import. The
    app renders, searches and extracts text without them: opening a PDF in a process
    with an empty HOME leaves the cache empty of them (it held
    Microsoft/DeveloperTools/.onnxruntime/deviceid before)."""
    import json
    import os
    import subprocess
    import sys

    home = tmp_path / "home"
    cache = home / ".cache"
    cache.mkdir(parents=True)
    env = {
        **os.environ,
        "HOME": str(home),
        "XDG_CACHE_HOME": str(cache),
        "QT_QPA_PLATFORM": "offscreen",
        "PYTHONPATH": os.pathsep.join(p for p in sys.path if p),
    }
    pdf = DEMO / "artifacts" / "T01" / "treg_flow_report.pdf"
    done = subprocess.run(
        [sys.executable, "-c", _PDF_IN_A_FRESH_HOME, str(pdf)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["hits"] > 0 and out["text"] > 100  # the PDF was really read
    assert out["modules"] == []
    written = sorted(str(p.relative_to(home)) for p in home.rglob("*") if p.is_file())
    assert not [p for p in written if "onnxruntime" in p.lower() or "Microsoft" in p], written


# -------------------------------------------------------------------------- big workbooks
def _big_workbook(rows: int, *, cut: bool) -> bytes:
    """A workbook of ``rows`` data rows (numbers and shared strings, written with
    openpyxl's write_only mode); with ``cut`` its sheet XML ends after about a fifth of
    its bytes (malformed: only a reader that stops early gets through)."""
    import openpyxl

    wb = openpyxl.Workbook(write_only=True)
    ws = wb.create_sheet("big")
    ws.append(["id", "value", "label"])
    for i in range(rows):
        ws.append([i, i / 2, f"row {i % 7}"])
    buf = io.BytesIO()
    wb.save(buf)
    data = buf.getvalue()
    if not cut:
        return data
    src = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            member = src.read(info.filename)
            if info.filename.startswith("xl/worksheets/"):
                member = member[: len(member) // 5]
            dst.writestr(info.filename, member)
    return out.getvalue()


def test_a_big_workbook_is_read_only_as_far_as_its_preview(monkeypatch: Any) -> None:
    """Reading stops after the first rows: a sheet whose XML is cut off after a fifth of
    its rows still previews (a whole read fails), and says it has more rows."""
    from gradercal.ui.viewers import tables

    monkeypatch.setattr(tables, "XLSX_STREAM_BYTES", 64 * 1024)
    data = _big_workbook(20_000, cut=True)
    with pytest.raises(tables.TableParseError):
        read_table(data, "big.xlsx")
    preview = tables.read_table_preview(data, "big.xlsx")["big"]
    assert preview.frame.shape == (1000, 3) and preview.rows is None
    assert preview.at_least > 1000
    assert list(preview.frame.columns) == ["id", "value", "label"]
    assert preview.frame.iloc[999].tolist() == [999, 499.5, "row 5"]
    assert preview.describe() == "first 1,000 of ≥ 1,001 rows × 3 columns (sorting sorts these)"
    # the same workbook whole, streamed: the same first rows as pandas reads
    whole = _big_workbook(3_000, cut=False)
    streamed = tables.read_table_preview(whole, "big.xlsx")["big"].frame
    by_pandas = read_table(whole, "big.xlsx")["big"].iloc[:1000]
    assert streamed.astype(str).values.tolist() == by_pandas.astype(str).values.tolist()


def test_table_viewer_says_how_much_of_a_big_sheet_it_shows(
    open_viewer: Any, monkeypatch: Any
) -> None:
    from gradercal.ui.viewers import tables

    monkeypatch.setattr(tables, "XLSX_STREAM_BYTES", 64 * 1024)
    viewer = open_viewer("big.xlsx", _big_workbook(20_000, cut=True))
    assert viewer.model.rowCount() == 1000
    assert viewer.shape_label.text().startswith("first 1,000 of ≥ 1,001 rows × 3 columns")
    small = open_viewer("data.csv", SAMPLES["data.csv"])
    assert small.shape_label.text() == "3 rows × 3 columns"
