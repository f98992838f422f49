"""A judge that sees figures (issue #15): images and rendered PDF pages as image parts.

Against the real loopback chat-completions server: the requests carry the image parts
(decoded and checked: PNG/JPEG bytes, the right pages at the right size), the page and
image budgets hold, text-only requests are byte for byte what they were before vision
existed, the provenance says what was sent, ``judge run --vision`` works end to end on
the demo, and the exported judges refuse a prompt that sends figures.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pymupdf
import pytest
from click.testing import CliRunner, Result
from sqlalchemy import select

from gradercal.cli import main
from gradercal.db import models as m
from gradercal.db.judging import JudgeStore, Scope
from gradercal.db.repo import Repository
from gradercal.db.session import open_database
from gradercal.errors import GradercalError, ValidationError
from gradercal.formats import read_folder
from gradercal.judge import DEFAULT_PROMPT, JudgeClient, JudgeParams, JudgeRunner, WorkItem
from gradercal.judge.artifacts import ArtifactInput, artifact_context
from gradercal.judge.client import encode_body
from gradercal.judge.prompts import PromptTemplate, with_vision
from gradercal.judge.runner import Verdict, estimate_run
from gradercal.judge.vision import (
    MAX_SIDE,
    VisionSettings,
    image_tokens,
    task_images,
)
from gradercal.prompt_package.standalone import exported_judge, require_text_only
from tests.conftest import DEMO
from tests.support.judge_server import JudgeServer, ServerConfig, image_parts, message_text

KEY_ENV = "GC_TEST_VISION_KEY"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
JPEG_MAGIC = b"\xff\xd8\xff"
#: sha256 of the request bodies (in work-list order) of the demo's tasks T01 (a PDF) and
#: T08 (a PNG) under the shipped prompt, computed with the code before vision existed
#: (commit faca554): text-only requests must stay byte for byte the same.
TEXT_ONLY_DEMO_DIGEST = "abf399d9ac97ac09b295bc9bf200c15e65d2a641de491e7054f73b0a52102c8b"


# ------------------------------------------------------------------------------ helpers
def make_pdf(pages: int, width: float = 595, height: float = 842) -> bytes:
    """A PDF whose page k says "Figure page k"."""
    doc = pymupdf.open()
    for k in range(1, pages + 1):
        page = doc.new_page(width=width, height=height)
        page.insert_text((72, 96), f"Figure page {k}", fontsize=28)
    data: bytes = doc.tobytes()
    doc.close()
    return data


def make_raster(width: int, height: int, fmt: str, shade: int = 180) -> bytes:
    pix = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, width, height), False)
    pix.clear_with(shade)
    data: bytes = pix.tobytes(fmt)
    return data


def page_png(pdf: bytes, page: int, dpi: int) -> bytes:
    """Page ``page`` (1-based) of ``pdf`` rendered as PyMuPDF renders it, for comparison."""
    with pymupdf.open(stream=pdf, filetype="pdf") as doc:
        data: bytes = doc[page - 1].get_pixmap(dpi=dpi, alpha=False).tobytes("png")
    return data


def decoded(part: dict[str, Any]) -> tuple[str, bytes]:
    """(media type, bytes) of an ``image_url`` part's ``data:`` URL."""
    url = part["image_url"]["url"]
    head, _, payload = url.partition(",")
    assert head.startswith("data:") and head.endswith(";base64"), head
    return head[5 : -len(";base64")], base64.b64decode(payload, validate=True)


def size_of(data: bytes) -> tuple[int, int]:
    pix = pymupdf.Pixmap(data)
    return int(pix.width), int(pix.height)


def vision_prompt(**settings: int) -> PromptTemplate:
    return with_vision(DEFAULT_PROMPT, VisionSettings(**settings))


def items_for(arts: list[ArtifactInput], prompt: PromptTemplate, n: int = 2) -> list[WorkItem]:
    vision = prompt.vision
    images = None if vision is None else task_images(arts, vision)
    text = artifact_context(arts, prompt.artifact_budget_tokens, images and images.notes())
    return [
        WorkItem(
            ref=i,
            task_id="T1",
            response_id=f"r{i}",
            criterion_id="c1",
            response_text=f"The figure shows a strong effect (response {i}).",
            criterion_text="Mentions the effect",
            points=2,
            task_prompt="Read the attached figures.",
            artifacts=text,
            images=images,
        )
        for i in range(n)
    ]


def judge_items(srv: JudgeServer, prompt: PromptTemplate, items: list[WorkItem]) -> list[Verdict]:
    got: list[Verdict] = []

    async def go() -> None:
        client = JudgeClient(JudgeParams(model="gpt-4o"), base_url=srv.base_url, concurrency=2)
        async with client:
            stats = await JudgeRunner(client, prompt, on_verdict=got.append).run(items)
            assert stats.status == "completed" and stats.ok == len(items)

    asyncio.run(go())
    return got


def cli(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def run_args(db: str, srv: JudgeServer, *extra: str, name: str = "jv") -> list[str]:
    return [
        "judge", "run", "--db", db, "--judge", name, "--model", "gpt-4o",
        "--base-url", srv.base_url, "--api-key-env", KEY_ENV, *extra,
    ]  # fmt: skip


@pytest.fixture
def demo_db(db_url: str) -> str:
    db = open_database(db_url)
    try:
        Repository(db).import_data(read_folder(DEMO))
    finally:
        db.dispose()
    return db_url


def task_of(body: dict[str, Any]) -> str:
    """The demo task a request is about, from its task prompt's title."""
    text = message_text(body["messages"][-1]["content"])
    if "Does GX-17 expand regulatory T cells?" in text:
        return "T01"
    if "ifnl1_volcano.png" in text:
        return "T08"
    return "other"


# ------------------------------------------------------------------ the prompt option
def test_vision_is_a_prompt_option_in_the_content_hash() -> None:
    p = vision_prompt()
    assert p.options["vision"] == {"dpi": 100, "max_pages": 4, "max_images": 4}
    assert p.vision == VisionSettings(100, 4, 4)
    assert p.content_hash != DEFAULT_PROMPT.content_hash
    assert (p.name, p.parent_hash) == ("default+vision", DEFAULT_PROMPT.content_hash)
    assert DEFAULT_PROMPT.vision is None and "vision" not in DEFAULT_PROMPT.options
    # the same settings: the same version (the prompt itself), other settings: another
    assert with_vision(p, VisionSettings()) is p
    other = with_vision(p, VisionSettings(dpi=150))
    assert other.name == "default+vision" and other.content_hash != p.content_hash
    # keys left out take their defaults, filled in, so the hash covers what is sent
    partial = PromptTemplate(p.system, p.user, options={"vision": {"dpi": 100}})
    full = PromptTemplate(p.system, p.user, options={"vision": VisionSettings().to_dict()})
    assert partial.options == full.options and partial.content_hash == full.content_hash
    # the text of the messages is the same with or without vision
    ctx = items_for([], p)[0].context()
    assert p.render(ctx) == DEFAULT_PROMPT.render(ctx)


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ({"dpi": 10}, "options.vision.dpi"),
        ({"dpi": True}, "options.vision.dpi"),
        ({"max_pages": -1}, "options.vision.max_pages"),
        ({"max_images": "4"}, "options.vision.max_images"),
        ({"zoom": 2}, "unknown key(s) ['zoom']"),
        (True, "must be an object"),
    ],
)
def test_invalid_vision_options_are_refused(value: Any, fragment: str) -> None:
    with pytest.raises(ValidationError, match=r"options\.vision") as err:
        PromptTemplate(DEFAULT_PROMPT.system, DEFAULT_PROMPT.user, options={"vision": value})
    assert fragment in str(err.value)


# ------------------------------------------------------------ requests over the wire
def test_requests_carry_the_pages_and_images_within_the_budgets() -> None:
    pdf_a, pdf_b = make_pdf(3), make_pdf(5)
    png, jpeg = make_raster(64, 48, "png"), make_raster(80, 40, "jpg")
    arts = [
        ArtifactInput("pdf", "Report A", "a.pdf", "application/pdf", None, pdf_a),
        ArtifactInput("image", "Blot", "blot.png", "image/png", None, png),
        ArtifactInput("pdf", "Report B", "b.pdf", "application/pdf", None, pdf_b),
        # a JPEG named .png: its bytes decide the media type
        ArtifactInput("image", "Gel", "gel.png", "image/png", None, jpeg),
        ArtifactInput("image", "Third image", "third.png", "image/png", None, png),
        ArtifactInput("table", "Counts", "counts.csv", "text/csv", None, b"gene,n\nA,1\n"),
    ]
    prompt = vision_prompt(dpi=72, max_pages=4, max_images=2)
    with JudgeServer(ServerConfig()) as srv:
        verdicts = judge_items(srv, prompt, items_for(arts, prompt))
        bodies = list(srv.stats.bodies)
    assert len(bodies) == 2 and len(verdicts) == 2
    for body in bodies:
        # the system message stays text; only the last user message has parts
        assert all(isinstance(msg["content"], str) for msg in body["messages"][:-1])
        content = body["messages"][-1]["content"]
        assert isinstance(content, list) and content[0]["type"] == "text"
        assert "Mentions the effect" in content[0]["text"]
        images = [decoded(p) for p in image_parts(content)]
        # in artifact order: 3 pages of A, the PNG, 1 page of B (the page budget of 4 is
        # the task's, across its PDFs), the JPEG; the third image is over the budget of 2
        a1, a2, a3, blot, b1, gel = images
        assert [a1, a2, a3, b1] == [("image/png", page_png(pdf_a, k, 72)) for k in (1, 2, 3)] + [
            ("image/png", page_png(pdf_b, 1, 72))
        ]
        assert all(data.startswith(PNG_MAGIC) for _, data in (a1, a2, a3, b1))
        assert size_of(a1[1]) == (595, 842)  # A4 at 72 dpi
        assert blot == ("image/png", png)  # sent as stored
        assert gel == ("image/jpeg", jpeg) and gel[1].startswith(JPEG_MAGIC)
        # each image is named by the text part before it
        labels = [content[i - 1]["text"] for i, p in enumerate(content) if p["type"] == "image_url"]
        assert labels == [
            "[Attachment image 1 of 6: Report A (a.pdf), page 1 of 3, rendered at 72 dpi]",
            "[Attachment image 2 of 6: Report A (a.pdf), page 2 of 3, rendered at 72 dpi]",
            "[Attachment image 3 of 6: Report A (a.pdf), page 3 of 3, rendered at 72 dpi]",
            "[Attachment image 4 of 6: Blot (blot.png)]",
            "[Attachment image 5 of 6: Report B (b.pdf), page 1 of 5, rendered at 72 dpi]",
            "[Attachment image 6 of 6: Gel (gel.png)]",
        ]
        # the attachment text says what is attached; the image over budget is not shown
        text = content[0]["text"]
        assert "### Report A (pdf) [pages 1–3 of 3 attached as images 1–3 of 6]" in text
        assert (
            "### Blot (image) [attached as image 4 of 6]\n[image blot.png: attached below]" in text
        )
        assert "### Report B (pdf) [page 1 of 5 attached as image 5 of 6]" in text
        assert "### Third image (image)\n[image third.png: not shown to the judge]" in text
        assert "gene,n\nA,1" in text
    # the provenance of every verdict says what was sent and what was left out
    for v in verdicts:
        vis = v.provenance["vision"]
        assert (vis["dpi"], vis["max_pages"], vis["max_images"]) == (72, 4, 2)
        sent = [(x["artifact"], x.get("page")) for x in vis["images"]]
        assert sent == [
            ("Report A", 1), ("Report A", 2), ("Report A", 3), ("Blot", None),
            ("Report B", 1), ("Gel", None),
        ]  # fmt: skip
        by_artifact = {x["artifact"]: x for x in vis["images"] if x.get("page") is None}
        assert by_artifact["Gel"]["media_type"] == "image/jpeg"
        assert by_artifact["Blot"]["sha256"] == hashlib.sha256(png).hexdigest()
        assert vis["withheld"] == [
            {"artifact": "Report B", "name": "b.pdf", "reason": "page budget",
             "pages": [2, 3, 4, 5]},
            {"artifact": "Third image", "name": "third.png", "reason": "image budget"},
        ]  # fmt: skip


def test_a_pdf_longer_than_the_page_budget_sends_exactly_the_budget() -> None:
    pdf = make_pdf(7)
    arts = [ArtifactInput("pdf", "Scan", "scan.pdf", "application/pdf", None, pdf)]
    prompt = vision_prompt(dpi=50, max_pages=3)
    with JudgeServer(ServerConfig()) as srv:
        [verdict] = judge_items(srv, prompt, items_for(arts, prompt, n=1))
        [body] = srv.stats.bodies
    sent = [decoded(p)[1] for p in image_parts(body["messages"][-1]["content"])]
    assert sent == [page_png(pdf, k, 50) for k in (1, 2, 3)]
    pages = [x["page"] for x in verdict.provenance["vision"]["images"]]
    assert pages == [1, 2, 3]
    assert verdict.provenance["vision"]["withheld"][0]["pages"] == [4, 5, 6, 7]


def test_the_dpi_sets_the_size_of_the_rendered_pages() -> None:
    pdf = make_pdf(1, width=288, height=144)  # 4 × 2 inches
    arts = [ArtifactInput("pdf", "Plot", "plot.pdf", "application/pdf", None, pdf)]
    sizes = {}
    with JudgeServer(ServerConfig()) as srv:
        for dpi in (50, 100, 200):
            prompt = vision_prompt(dpi=dpi)
            [verdict] = judge_items(srv, prompt, items_for(arts, prompt, n=1))
            body = srv.stats.bodies[-1]
            [(_, data)] = [decoded(p) for p in image_parts(body["messages"][-1]["content"])]
            sizes[dpi] = size_of(data)
            assert verdict.provenance["vision"]["images"][0]["dpi"] == dpi
    assert sizes == {50: (200, 100), 100: (400, 200), 200: (800, 400)}


def test_huge_figures_are_scaled_to_fit_and_unreadable_ones_withheld() -> None:
    poster = make_pdf(1, width=72 * 40, height=72 * 30)  # 40 × 30 inches
    wide = make_raster(3000, 120, "png")
    pnm = make_raster(30, 20, "pnm")  # neither PNG nor JPEG: sent as PNG
    arts = [
        ArtifactInput("pdf", "Poster", "poster.pdf", "application/pdf", None, poster),
        ArtifactInput("image", "Wide", "wide.png", "image/png", None, wide),
        ArtifactInput("image", "Odd", "odd.pnm", None, None, pnm),
        ArtifactInput("pdf", "Broken", "broken.pdf", "application/pdf", None, b"%PDF-1.4 junk"),
        ArtifactInput("image", "Missing", "missing.png", "image/png", None, None),
    ]
    images = task_images(arts, VisionSettings(dpi=300))
    poster_page, wide_img, odd = images.images
    assert max(poster_page.width, poster_page.height) <= MAX_SIDE
    assert poster_page.dpi == 51 and poster_page.width == 2040  # lowered from 300 dpi
    assert (wide_img.width, wide_img.height, wide_img.scaled_from) == (2048, 82, (3000, 120))
    assert wide_img.data.startswith(PNG_MAGIC) and size_of(wide_img.data) == (2048, 82)
    assert odd.media_type == "image/png" and odd.data.startswith(PNG_MAGIC)
    assert size_of(odd.data) == (30, 20)
    assert [(w.title, w.reason) for w in images.withheld] == [
        ("Broken", "unreadable: FileDataError"),
        ("Missing", "file not stored in the database"),
    ]


def test_text_only_requests_are_unchanged(demo_db: str) -> None:
    db = open_database(demo_db)
    try:
        store = JudgeStore(db)
        where = Scope.parse("tasks:T01,T08")
        items = store.work_items(None, None, where, DEFAULT_PROMPT)
        vision_items = store.work_items(None, None, where, vision_prompt())
    finally:
        db.dispose()
    assert len(items) == 99 and all(it.images is None for it in items)
    client = JudgeClient(JudgeParams(model="gpt-4o-mini"), base_url="http://127.0.0.1:9/v1")
    runner = JudgeRunner(client, DEFAULT_PROMPT, on_verdict=lambda v: None)
    digest = hashlib.sha256()
    for it in items:
        body = client.request_body(runner.messages(it))
        assert all(isinstance(msg["content"], str) for msg in body["messages"])
        digest.update(encode_body(body))
    assert digest.hexdigest() == TEXT_ONLY_DEMO_DIGEST
    # the same items under the vision prompt do carry parts (so the check above can fail)
    vision_runner = JudgeRunner(client, vision_prompt(), on_verdict=lambda v: None)
    assert all(isinstance(vision_runner.messages(it)[-1]["content"], list) for it in vision_items)


def test_image_token_estimate_follows_the_published_rule() -> None:
    assert image_tokens(512, 512) == 85 + 170
    assert image_tokens(1024, 1024) == 85 + 170 * 4  # shorter side to 768: 2 × 2 tiles
    assert image_tokens(4096, 2048) == 85 + 170 * 6  # 2048 × 1024, then 1536 × 768
    assert image_tokens(0, 10) == 0
    arts = [
        ArtifactInput("image", "Blot", "blot.png", "image/png", None, make_raster(512, 512, "png"))
    ]
    text_only = estimate_run(items_for(arts, DEFAULT_PROMPT, n=3), DEFAULT_PROMPT)
    seen = estimate_run(items_for(arts, vision_prompt(), n=3), vision_prompt())
    # 255 tokens for the image and its label, per item, on top of the text
    assert 3 * 255 < seen.prompt_tokens - text_only.prompt_tokens < 3 * 300


# ------------------------------------------------------------------- the command line
def test_judge_run_vision_on_the_demo(demo_db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test-vision")
    scope = ("--scope", "tasks:T01,T02,T08")
    with JudgeServer(ServerConfig()) as srv:
        plain = cli(*run_args(demo_db, srv, *scope, "--dry-run", "--json"))
        seen = cli(*run_args(demo_db, srv, *scope, "--vision", "--vision-pages", "2",
                             "--vision-dpi", "60", "--dry-run", "--json"))  # fmt: skip
        assert plain.exit_code == seen.exit_code == 0, seen.output
        assert srv.stats.requests == 0  # a dry run sends nothing
        assert (
            json.loads(seen.stdout)["estimate"]["prompt_tokens"]
            > json.loads(plain.stdout)["estimate"]["prompt_tokens"] + 1000
        )
        result = cli(*run_args(demo_db, srv, *scope, "--vision", "--vision-pages", "2",
                               "--vision-dpi", "60", "--json"))  # fmt: skip
        assert result.exit_code == 0, result.output
        out = json.loads(result.stdout)
        bodies = list(srv.stats.bodies)
    assert out["status"] == "completed" and out["ok"] == out["items"] == len(bodies) > 0
    assert out["vision"] == {"dpi": 60, "max_pages": 2, "max_images": 4}
    by_task: dict[str, list[dict[str, Any]]] = {}
    for body in bodies:
        by_task.setdefault(task_of(body), []).append(body)
    assert set(by_task) == {"T01", "T08", "other"}
    pdf = (DEMO / "artifacts" / "T01" / "treg_flow_report.pdf").read_bytes()
    png = (DEMO / "artifacts" / "T08" / "ifnl1_volcano.png").read_bytes()
    for body in by_task["T01"]:  # the 3-page report: 2 pages, at 60 dpi
        sent = [decoded(p) for p in image_parts(body["messages"][-1]["content"])]
        assert sent == [("image/png", page_png(pdf, k, 60)) for k in (1, 2)]
    for body in by_task["T08"]:  # the volcano plot, as stored
        assert [decoded(p) for p in image_parts(body["messages"][-1]["content"])] == [
            ("image/png", png)
        ]
    for body in by_task["other"]:  # T02 has a CSV only: plain text, as without vision
        assert isinstance(body["messages"][-1]["content"], str)
    db = open_database(demo_db)
    try:
        store = JudgeStore(db)
        info = store.judge("jv")
        assert info is not None and info.prompt_hash == out["prompt_version"]
        prompt = store.load_prompt(out["prompt_version"])
        assert prompt.vision == VisionSettings(60, 2, 4) and prompt.name == "default+vision"
        assert prompt.parent_hash == DEFAULT_PROMPT.content_hash
        with db.read() as s:
            rows = s.execute(
                select(m.Task.external_id, m.Judgment.provenance)
                .join(m.Grader, m.Grader.id == m.Judgment.grader_id)
                .join(m.Response, m.Response.id == m.Judgment.response_id)
                .join(m.Task, m.Task.id == m.Response.task_id)
                .where(m.Grader.name == "jv")
            ).all()
            [run] = s.scalars(select(m.JudgeRun)).all()
    finally:
        db.dispose()
    assert len(rows) == out["ok"]
    assert run.parameters["vision"] == {"dpi": 60, "max_pages": 2, "max_images": 4}
    for task, prov in rows:
        vis = prov["vision"]
        assert vis["dpi"] == 60
        if task == "T01":
            assert [(x["name"], x["page"], x["dpi"]) for x in vis["images"]] == [
                ("treg_flow_report.pdf", 1, 60), ("treg_flow_report.pdf", 2, 60),
            ]  # fmt: skip
            assert vis["withheld"][0]["pages"] == [3]
        elif task == "T08":
            assert [(x["name"], x["media_type"]) for x in vis["images"]] == [
                ("ifnl1_volcano.png", "image/png")
            ]
        else:
            assert vis["images"] == [] and vis["withheld"] == []


def test_vision_options_need_vision_and_a_judge_keeps_its_prompt(
    demo_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test-vision")
    with JudgeServer(ServerConfig()) as srv:
        lone = cli(*run_args(demo_db, srv, "--vision-dpi", "150"))
        assert lone.exit_code == 2 and "need --vision" in lone.output
        first = cli(*run_args(demo_db, srv, "--scope", "tasks:T08", name="plain"))
        assert first.exit_code == 0, first.output
        # the same judge with figures would mix two prompts in one grader's verdicts
        mixed = CliRunner().invoke(main, run_args(demo_db, srv, "--vision", name="plain"))
        assert mixed.exit_code == 1
        assert "was run with prompt" in mixed.output and "another --judge name" in mixed.output
        # resuming a vision judge without --vision keeps its prompt (and its figures)
        sees = cli(*run_args(demo_db, srv, "--scope", "tasks:T08", "--vision", name="sees"))
        assert sees.exit_code == 0, sees.output
        before = srv.stats.requests
        again = cli(*run_args(demo_db, srv, "--scope", "all", "--json", name="sees"))
        assert again.exit_code == 0, again.output
        resumed = srv.stats.bodies[before:]
    assert json.loads(again.stdout)["vision"] == VisionSettings().to_dict()
    assert resumed and all(
        image_parts(b["messages"][-1]["content"]) for b in resumed if task_of(b) == "T08"
    )
    assert any(task_of(b) == "T01" and image_parts(b["messages"][-1]["content"]) for b in resumed)


# --------------------------------------------------------------- the exported judges
def test_exported_judges_refuse_a_prompt_that_sends_figures(
    demo_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test-vision")
    with JudgeServer(ServerConfig()) as srv:
        res = cli(*run_args(demo_db, srv, "--scope", "tasks:T08", "--vision"))
        assert res.exit_code == 0, res.output
    export = ["export-prompt", "--db", demo_db, "--judge", "jv", "--n-boot", "0"]
    for fmt, tool in (("inspect", "Inspect AI"), ("promptfoo", "promptfoo")):
        out = tmp_path / f"judge-{fmt}.out"
        refused = CliRunner().invoke(main, [*export, "--format", fmt, "-o", str(out)])
        assert refused.exit_code == 1, refused.output
        [line] = refused.stderr.strip().splitlines()
        assert f"which the exported {tool} judge cannot do" in line
        assert "option vision" in line and "--format json or markdown" in line
        assert not list(tmp_path.glob(f"judge-{fmt}*"))  # nothing written
    samples = CliRunner().invoke(
        main, [*export, "-o", str(tmp_path / "p.json"), "--samples", str(tmp_path / "s.jsonl")]
    )
    assert samples.exit_code == 1 and "--samples" in samples.stderr
    assert not (tmp_path / "s.jsonl").exists()
    # the package itself keeps the option: JSON re-imports with it, Markdown says so
    ok = cli(*export, "-o", str(tmp_path / "judge.json"), "--json")
    assert ok.exit_code == 0, ok.output
    data = json.loads((tmp_path / "judge.json").read_text("utf-8"))
    assert data["prompt"]["options"]["vision"] == VisionSettings().to_dict()
    back = cli("import-prompt", str(tmp_path / "judge.json"), "--db", demo_db, "--json")
    assert back.exit_code == 0, back.output
    db = open_database(demo_db)
    try:
        stored = JudgeStore(db).load_prompt(data["prompt_version"])
    finally:
        db.dispose()
    assert stored.vision == VisionSettings()
    md = cli(*export, "--format", "markdown", "-o", str(tmp_path / "judge.md"))
    assert md.exit_code == 0, md.output
    assert "## Figures" in (tmp_path / "judge.md").read_text("utf-8")
    # the core refuses too, whoever builds an exported judge
    for glue, tool in (("inspect_judge", "Inspect AI"), ("promptfoo_assert", "promptfoo")):
        with pytest.raises(GradercalError, match=f"which the exported {tool} judge cannot do"):
            exported_judge(SimpleNamespace(prompt=stored), glue, "")  # type: ignore[arg-type]
    require_text_only(DEFAULT_PROMPT, "the exported Inspect AI judge")  # text only: fine


def test_judge_align_vision_candidates_see_the_figures(demo_db: str) -> None:
    """`judge align --vision`: the candidates derive from the judge's prompt with the
    vision option and their requests carry the tasks' figures (#34)."""
    from tests.cli.test_judge_align import _answers
    from tests.support.align_judge import AlignJudgeServer

    env = {KEY_ENV: "sk-test-vision"}
    with AlignJudgeServer(_answers(demo_db)) as srv:
        conn = ["--model", "gpt-4o", "--base-url", srv.base_url, "--api-key-env", KEY_ENV]
        run = CliRunner().invoke(
            main, ["judge", "run", "--db", demo_db, "--judge", "ja", *conn, "--no-logprobs"],
            env=env,
        )  # fmt: skip
        assert run.exit_code == 0, run.output
        assert srv.image_requests == 0
        res = CliRunner().invoke(
            main,
            ["judge", "align", "--db", demo_db, "--judge", "ja", *conn, "--json",
             "--n-boot", "200", "--vision", "--vision-pages", "1", "--vision-dpi", "40"],
            env=env,
        )  # fmt: skip
        assert res.exit_code == 0, res.output
    cert = json.loads(res.stdout)
    assert cert["vision"] == {"dpi": 40, "max_pages": 1, "max_images": 4}
    assert srv.image_requests > 0
    db = open_database(demo_db)
    try:
        store = JudgeStore(db)
        for c in cert["candidates"]:
            p = store.load_prompt(c["prompt_version"])
            assert p.vision is not None and p.vision.dpi == 40
        assert store.load_prompt(cert["baseline"]["prompt_version"]) == DEFAULT_PROMPT
    finally:
        db.dispose()
