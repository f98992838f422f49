"""gradercal.dashboard.report and `gradercal report`: a self-contained HTML file with every section
and its embedded charts, escaped user text, a PDF that opens, and the command line."""

from __future__ import annotations

import base64
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gradercal.cli import main
from gradercal.dashboard import Dashboard, compute_dashboard
from gradercal.dashboard.report import REPORT_SECTIONS, render_html, report_sections, write_pdf
from gradercal.dashboard.tables import TABLE_SECTIONS
from gradercal.formats import read_path
from gradercal.frames import Frames, frames_from_data
from tests.conftest import DEMO

EVIL = '<script>alert("x")</script> & <img src="http://evil.example/x.png">'


class _Parsed(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.h2: list[str] = []
        self.imgs: list[str] = []
        self.links: list[str] = []
        self.scripts = 0
        self._in_h2 = False
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "h2":
            self._in_h2 = True
            self.h2.append("")
        if tag == "img":
            self.imgs.append(a.get("src") or "")
        if tag == "script":
            self.scripts += 1
        for key in ("src", "href"):
            if a.get(key):
                self.links.append(str(a[key]))

    def handle_endtag(self, tag: str) -> None:
        if tag == "h2":
            self._in_h2 = False

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._in_h2:
            self.h2[-1] += data


@pytest.fixture(scope="module")
def evil_dash() -> Dashboard:
    """The demo with a script planted in the text of a criterion that has disagreements."""
    frames = frames_from_data(read_path(DEMO))
    d0 = compute_dashboard(frames, n_boot=0)
    task, crit = d0.disagreements.iloc[0][["task_id", "criterion_id"]]
    c = frames.criteria.copy()
    sel = (c["task_id"] == task) & (c["criterion_id"] == crit)
    c.loc[sel, "text"] = EVIL
    f = Frames(
        frames.pass_threshold,
        frames.tasks,
        c,
        frames.responses,
        frames.judgments,
        frames.adjudications,
    )
    return compute_dashboard(f, n_boot=30, benchmark="demo <b>bench</b>")


def test_html_has_every_section_and_embedded_charts(evil_dash: Dashboard) -> None:
    html = render_html(evil_dash)
    p = _Parsed()
    p.feed(html)
    # every section but the optional ones it lacks (nothing revised: no criterion versions)
    assert p.h2 == [h for _, h in report_sections(evil_dash)]
    absent = [t.title for t in TABLE_SECTIONS if t.optional and not evil_dash.has_section(t.key)]
    assert not evil_dash.has_section("criterion_versions") and absent
    assert [h for _, h in REPORT_SECTIONS if h not in p.h2] == absent
    assert p.scripts == 0
    assert len(p.imgs) == 7
    for src in p.imgs:
        assert src.startswith("data:image/svg+xml;base64,")
        assert b"<svg" in base64.b64decode(src.split(",", 1)[1])[:3000]
    assert not [x for x in p.links if re.match(r"(?i)^\s*(https?:)?//", x)]
    assert "<link" not in html and "@import" not in html and "url(" not in html
    png = render_html(evil_dash, image_format="png")
    q = _Parsed()
    q.feed(png)
    assert all(s.startswith("data:image/png;base64,") for s in q.imgs) and len(q.imgs) == 7


def test_user_text_is_escaped(evil_dash: Dashboard) -> None:
    html = render_html(evil_dash)
    assert "<script>" not in html and 'src="http://evil' not in html
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html
    assert "demo &lt;b&gt;bench&lt;/b&gt;" in html
    p = _Parsed()
    p.feed(html)
    assert EVIL in "".join(p.text)  # shown as text, in the health and disagreement tables


def test_report_figures_match_the_dashboard(evil_dash: Dashboard) -> None:
    html = render_html(evil_dash)
    j = evil_dash.judges.iloc[0]
    kappa = f"{j['cohen_kappa']:.3f} [{j['cohen_kappa_low']:.3f}, {j['cohen_kappa_high']:.3f}]"
    assert kappa in html
    assert f"{len(evil_dash.disagreements):,} rows" in html


def test_pdf_opens_with_text_and_images(evil_dash: Dashboard, tmp_path: Path) -> None:
    import pymupdf

    out = write_pdf(evil_dash, tmp_path / "r.pdf", max_rows=10)
    doc = pymupdf.open(out)
    assert doc.page_count >= 3
    text = "".join(page.get_text() for page in doc)
    for _, heading in REPORT_SECTIONS:
        assert heading.replace("↔", "").split()[0] in text
    assert "Criterion health" in text and "judge-gpt" in text
    assert '<script>alert("x")</script>' in text  # escaped in HTML, printed as text
    assert sum(len(page.get_images()) for page in doc) == 7


def _pdf_blocks(page: Any) -> list[tuple[float, float, str, float]]:
    """(top, bottom, text, largest font size) of every text or image block of a page."""
    out = []
    for b in page.get_text("dict")["blocks"]:
        spans = [s for line in b.get("lines", []) for s in line["spans"]]
        text = "".join(s["text"] for s in spans).strip()
        size = max((s["size"] for s in spans), default=0.0)
        out.append((b["bbox"][1], b["bbox"][3], text, size))
    return out


@pytest.mark.parametrize("max_rows", [50])
def test_pdf_keeps_each_heading_with_what_follows_and_draws_no_stray_rules(
    evil_dash: Dashboard, tmp_path: Path, max_rows: int
) -> None:
    """Issue #33: "By tag", "By domain", "Per-model scores" ended pages alone, and table
    header backgrounds were drawn as grey rules beside the charts."""
    import pymupdf

    doc = pymupdf.open(write_pdf(evil_dash, tmp_path / "r.pdf", max_rows=max_rows))
    headings = {h for _, h in REPORT_SECTIONS} | {"Overall", "By tag", "By domain"}
    seen = set()
    for number, page in enumerate(doc):
        blocks = sorted(_pdf_blocks(page))
        big = [text for _top, _bottom, text, size in blocks if size >= 9.4]
        seen.update(big)
        if number < doc.page_count - 1:
            last = max(blocks, key=lambda b: b[1])
            assert last[3] < 9.4, f"page {number + 1} ends with the heading {last[2]!r}"
        for drawing in page.get_drawings():
            r, fill = drawing["rect"], drawing.get("fill")
            thin_grey = fill is not None and r.height < 3 and r.width > 10 and min(fill) > 0.8
            assert not thin_grey, f"page {number + 1}: a stray grey rule at {r}"
    assert {"Overall", "By tag", "Per-model scores"} <= seen & headings


@pytest.fixture(scope="module")
def demo_pdf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo's PDF report (200 resamples), laid out once for the layout tests."""
    d = compute_dashboard(frames_from_data(read_path(DEMO)), n_boot=200)
    return write_pdf(d, tmp_path_factory.mktemp("demo-pdf") / "r.pdf")


def test_pdf_never_ends_a_page_with_a_tables_header_row(demo_pdf: Path) -> None:
    """#33 (seen on the demo, session 16): "Judges and prompt versions", its introduction
    and its table's header row ended page 5, the table's only row on page 6. A section
    that goes on over the page keeps at least KEEP_WITH_HEADING points under its heading,
    else the heading starts the next page; no page but the last ends with a header row
    (bold cells) either way."""
    import pymupdf

    doc = pymupdf.open(demo_pdf)
    for number, page in enumerate(doc):
        if number == doc.page_count - 1:
            continue
        # every block, text or image (a chart below a heading is what follows it)
        cells = [
            (
                b["bbox"][3],
                [s for line in b.get("lines", []) for s in line["spans"] if s["text"].strip()],
                bool(b.get("lines")),
            )
            for b in page.get_text("dict")["blocks"]
        ]
        bottom = max(b for b, _spans, _text in cells)
        last = [(spans, text) for b, spans, text in cells if b > bottom - 2.0]
        last_row = [spans for spans, _text in last if spans]
        bold = all(text for _spans, text in last) and all(
            s["flags"] & 16 for spans in last_row for s in spans
        )
        text = " | ".join(s["text"] for spans in last_row for s in spans)
        assert not bold, f"page {number + 1} ends with a table's header row: {text}"


def test_pdf_draws_every_chart_at_its_size(demo_pdf: Path) -> None:
    """Looking at the demo's PDF with the locked PyMuPDF (1.28, session 16): the "By tag"
    chart, too tall for the rest of page 1, was drawn there as an unreadable thumbnail
    (164 pt wide instead of 432). A chart that does not fit moves to the next page with
    its heading; only one under a heading that starts its page (taller than a page can
    hold) is drawn smaller."""
    import pymupdf

    from gradercal.dashboard.report import chart_width

    doc = pymupdf.open(demo_pdf)
    drawn = 0
    for number, page in enumerate(doc):
        blocks = page.get_text("dict")["blocks"]
        for block in blocks:
            if block.get("type") != 1:
                continue
            drawn += 1
            x0, top, x1, _y1 = block["bbox"]
            given = chart_width(block["width"], page.rect.width - 72)
            above = [b for b in blocks if b["bbox"][3] <= top]
            assert x1 - x0 >= given - 1.0 or len(above) <= 1, (
                f"page {number + 1}: a chart drawn {x1 - x0:.0f} pt wide, given {given} pt, "
                f"under {len(above)} blocks"
            )
    assert drawn == 7


def test_a_left_out_expert_is_said_not_tested_once() -> None:
    """Issue #33: the alternative annotator test's note already says "not tested"."""
    from types import SimpleNamespace

    from gradercal.dashboard.report import _alt

    note = "not tested: items in only 2 tasks; the task-clustered test needs at least 5"
    d: Any = SimpleNamespace(
        alt_test={
            "judge": "j",
            "annotators": [
                {"human": "ana", "tested": False, "note": note},
                {"human": "ben", "tested": False, "note": "too few items"},
            ],
        }
    )
    out = _alt(d)
    assert "not tested: not tested" not in out
    assert note in out and "not tested: too few items" in out


# ------------------------------------------------------------------------------- CLI


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("reportdb") / "demo.sqlite"
    res = CliRunner().invoke(main, ["import", str(DEMO), "--db", str(path)])
    assert res.exit_code == 0, res.output
    return path


def test_cli_help() -> None:
    res = CliRunner().invoke(main, ["report", "--help"])
    assert res.exit_code == 0
    for opt in ("--db", "--judge", "--bootstrap", "--seed", "--pdf", "--json", "-o"):
        assert opt in res.output


def test_cli_writes_html_pdf_and_json(demo_db: Path, tmp_path: Path) -> None:
    out, pdf = tmp_path / "r.html", tmp_path / "r.pdf"
    res = CliRunner().invoke(
        main,
        [
            "report",
            "--db",
            str(demo_db),
            "-o",
            str(out),
            "--pdf",
            str(pdf),
            "--bootstrap",
            "20",
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["html"] == str(out) and data["pdf"] == str(pdf)
    d = data["dashboard"]
    assert d["overview"]["primary_judge"] == "judge-gpt" and d["overview"]["n_boot"] == 20
    assert {r["by"] for r in d["agreement"]} == {
        "overall",
        "tag",
        "workflow",
        "domain",
        "criterion",
    }
    p = _Parsed()
    p.feed(out.read_text("utf-8"))
    absent = {t.key for t in TABLE_SECTIONS if t.optional and t.key not in d}
    assert "criterion_versions" in absent  # nothing revised
    assert p.h2 == [h for sid, h in REPORT_SECTIONS if sid not in absent]
    assert pdf.read_bytes()[:5] == b"%PDF-"


def test_cli_filters_and_refusals(demo_db: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(
        main,
        [
            "report",
            "--db",
            str(demo_db),
            "--json",
            "--bootstrap",
            "0",
            "--models",
            "atlas-7b",
            "--calibration",
            "none",
        ],
    )
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)["dashboard"]
    assert d["overview"]["n_responses"] == 10 and d["overview"]["models"] == ["atlas-7b"]
    assert d["calibration"] is None
    missing = tmp_path / "none.sqlite"
    bad = runner.invoke(main, ["report", "--db", str(missing), "-o", str(tmp_path / "x.html")])
    assert bad.exit_code == 1 and "error: no database at" in bad.output
    assert not missing.exists()  # a mistyped --db creates nothing
    empty = tmp_path / "empty.sqlite"
    assert runner.invoke(main, ["init", "--db", str(empty)]).exit_code == 0
    bad = runner.invoke(main, ["report", "--db", str(empty), "-o", str(tmp_path / "x.html")])
    assert bad.exit_code == 1 and "error: " in bad.output and "no benchmark" in bad.output
    junk = tmp_path / "junk.sqlite"
    junk.write_text("not a database")
    bad = runner.invoke(main, ["report", "--db", str(junk), "-o", str(tmp_path / "x.html")])
    assert bad.exit_code == 1 and "cannot open database" in bad.output
    assert not (tmp_path / "x.html").exists()
    bad = runner.invoke(main, ["report", "--db", str(demo_db), "--judge", "nobody", "--json"])
    assert bad.exit_code == 1 and "no grader 'nobody'" in bad.output
    bad = runner.invoke(main, ["report", "--db", str(demo_db)])
    assert bad.exit_code == 2 and "--json" in bad.output
    bad = runner.invoke(
        main, ["report", "--db", str(demo_db), "-o", str(tmp_path / "no" / "x.html")]
    )
    assert bad.exit_code == 1 and "does not exist" in bad.output
