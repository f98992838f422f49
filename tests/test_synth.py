"""Tests of the synthetic benchmark generator (``gradercal.synth``).

Statistical checks use a fixed seed, so they are deterministic; their tolerances are
still derived from the binomial standard error (``Z`` standard errors), so that a
different seed or a change of the generator keeps them meaningful rather than tuned.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import struct
import subprocess
import sys
import time
import zlib
from collections import Counter, defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from gradercal.model import ArtifactKind, artifact_kind_for
from gradercal.synth import (
    AXIS_TAGS,
    WORKFLOWS,
    SynthConfig,
    SynthSummary,
    generate,
    model_name,
)

#: Standard errors allowed in the statistical checks (two-sided p ≈ 6e-5 each).
Z = 4.0

SMALL = SynthConfig(tasks=12, criteria_per_task=8, artifacts_per_task=3.0, seed=3)
NUMERIC = SynthConfig(
    tasks=30,
    criteria_per_task=6,
    numeric_task_share=0.5,
    artifacts_per_task=0.0,
    human_graders=1,
    seed=5,
)
MEDIUM = SynthConfig(tasks=80, criteria_per_task=20, artifacts_per_task=0.0, seed=11)

TASK_KEYS = {
    "id",
    "prompt",
    "workflow",
    "domain",
    "answer_format",
    "tags",
    "metadata",
    "artifacts",
    "rubric",
}
CRITERION_KEYS = {"id", "criterion", "points", "tags", "levels", "auto"}
JUDGMENT_KEYS = {
    "response_id",
    "criterion_id",
    "grader",
    "grader_kind",
    "met",
    "level",
    "confidence",
    "rationale",
    "unclear",
    "unclear_note",
}


# --------------------------------------------------------------------------- helpers


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def all_files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def binomial_se(p: float, n: int) -> float:
    return math.sqrt(p * (1.0 - p) / n)


def evaluate_auto(rule: dict[str, Any], answer: Any) -> bool:
    """Independent implementation of the ``auto`` rule of docs/formats.md."""
    key = rule["key"].removeprefix("answer.")
    value = answer
    for part in key.split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return False
    if "abs_tol" not in rule and "rel_tol" not in rule:
        return bool(value == rule["target"])
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    target = float(rule["target"])
    tol = max(float(rule.get("abs_tol", 0.0)), float(rule.get("rel_tol", 0.0)) * abs(target))
    return abs(value - target) <= tol


def check_png(data: bytes) -> tuple[int, int]:
    """Parse a PNG by hand: signature, chunk CRCs, IHDR, decompressible IDAT."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks, idat = 8, [], b""
    width = height = 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length : pos + 12 + length])
        assert crc == zlib.crc32(kind + body) & 0xFFFFFFFF
        chunks.append(kind)
        if kind == b"IHDR":
            width, height = struct.unpack(">II", body[:8])
        if kind == b"IDAT":
            idat += body
        pos += 12 + length
    assert chunks[0] == b"IHDR"
    assert chunks[-1] == b"IEND"
    raw = zlib.decompress(idat)
    assert len(raw) == height * (width + 1)  # 8-bit grayscale, one filter byte per row
    return width, height


def check_pdf(data: bytes) -> None:
    """Check the PDF skeleton and that every xref offset points at its object."""
    assert data.startswith(b"%PDF-1.")
    assert data.rstrip().endswith(b"%%EOF")
    startxref = int(data[data.rindex(b"startxref") + len(b"startxref") :].split()[0])
    assert data[startxref:].startswith(b"xref")
    table = data[startxref:].split(b"trailer")[0].splitlines()[2:]
    for number, entry in enumerate(table[1:], start=1):
        offset = int(entry.split()[0])
        assert data[offset:].startswith(b"%d 0 obj" % number)


def validate_folder(root: Path) -> dict[str, Any]:
    """Validate a benchmark folder against docs/formats.md; return the parsed files."""
    benchmark = json.loads((root / "benchmark.json").read_text(encoding="utf-8"))
    assert isinstance(benchmark["name"], str)
    assert benchmark["name"]
    assert 0 < benchmark["pass_threshold"] <= 1
    assert benchmark["format_version"] == 1

    tasks = read_jsonl(root / "tasks.jsonl")
    responses = read_jsonl(root / "responses.jsonl")
    judgments = read_jsonl(root / "judgments.jsonl")
    by_task: dict[str, dict[str, Any]] = {}
    referenced: set[str] = set()
    for task in tasks:
        assert set(task) <= TASK_KEYS
        assert isinstance(task["id"], str)
        assert task["id"] not in by_task, "task ids are unique"
        by_task[task["id"]] = task
        assert isinstance(task["prompt"], str)
        assert task["prompt"].strip()
        assert task["workflow"] in WORKFLOWS
        assert isinstance(task["domain"], str)
        assert task["answer_format"] in {"free text", "json"}
        assert all(isinstance(t, str) for t in task["tags"])
        assert isinstance(task["metadata"], dict)
        for art in task.get("artifacts", []):
            assert set(art) in ({"path", "title"}, {"url", "title"})
            if "url" in art:
                assert art["url"].startswith("https://example.org/")
                continue
            rel = art["path"]
            assert not rel.startswith("/")
            assert ".." not in rel.split("/")
            assert rel.startswith(f"artifacts/{task['id']}/")
            path = root / rel
            assert path.is_file()
            assert path.resolve().is_relative_to(root.resolve())
            assert artifact_kind_for(rel) in {
                ArtifactKind.PDF,
                ArtifactKind.IMAGE,
                ArtifactKind.TABLE,
                ArtifactKind.SEQUENCE,
                ArtifactKind.STRUCTURE,
                ArtifactKind.TEXT,
            }
            assert rel not in referenced
            referenced.add(rel)
        rubric = task["rubric"]
        assert rubric, "at least one criterion"
        assert [c["id"] for c in rubric] == [f"c{i}" for i in range(1, len(rubric) + 1)]
        assert len({c["criterion"] for c in rubric}) == len(rubric), "no duplicate lines"
        assert any(c["points"] > 0 for c in rubric), "something to earn"
        for c in rubric:
            assert set(c) <= CRITERION_KEYS
            assert isinstance(c["criterion"], str)
            assert c["criterion"]
            assert type(c["points"]) is int
            assert c["points"] != 0
            assert -25 <= c["points"] <= 25
            assert all(isinstance(t, str) for t in c["tags"])
            assert c.get("levels", 2) in (2, 3)
            if "auto" in c:
                auto = c["auto"]
                assert set(auto) in ({"key", "target", "abs_tol"}, {"key", "target", "rel_tol"})
                assert auto["key"].startswith("answer.")
                assert isinstance(auto["target"], int | float)
                assert auto.get("abs_tol", 0) >= 0
                assert auto.get("rel_tol", 0) >= 0
    on_disk = {
        p.relative_to(root).as_posix() for p in (root / "artifacts").rglob("*") if p.is_file()
    }
    if (root / "artifacts").exists() or referenced:
        assert on_disk == referenced, "every artifact file is referenced, every reference exists"

    by_response: dict[str, dict[str, Any]] = {}
    for resp in responses:
        assert set(resp) <= {"id", "task_id", "model", "text", "answer"}
        assert isinstance(resp["id"], str)
        assert resp["id"] not in by_response, "response ids are unique"
        by_response[resp["id"]] = resp
        assert resp["task_id"] in by_task
        assert resp["id"] == f"{resp['task_id']}-{resp['model']}"
        assert isinstance(resp["text"], str)
        assert resp["text"]
        assert ("answer" in resp) == (by_task[resp["task_id"]]["answer_format"] == "json")

    seen: set[tuple[str, str, str]] = set()
    for j in judgments:
        assert set(j) <= JUDGMENT_KEYS
        resp = by_response[j["response_id"]]
        criteria = {c["id"]: c for c in by_task[resp["task_id"]]["rubric"]}
        criterion = criteria[j["criterion_id"]]
        assert "auto" not in criterion, "auto criteria are not judged"
        key = (j["grader"], j["response_id"], j["criterion_id"])
        assert key not in seen, "one judgment per grader, response and criterion"
        seen.add(key)
        assert j["grader_kind"] in ("human", "judge")
        assert (j["grader_kind"] == "judge") == (j["grader"] == "judge")
        assert isinstance(j["met"], bool)
        if "level" in j:
            assert criterion.get("levels", 2) == 3
            assert 0 <= j["level"] <= 2
            assert (j["level"] == 2) == j["met"]
        else:
            assert criterion.get("levels", 2) == 2
        if j["grader_kind"] == "judge":
            assert 0.0 <= j["confidence"] <= 1.0
            assert isinstance(j["rationale"], str)
        else:
            assert "confidence" not in j
        if j.get("unclear"):
            assert isinstance(j["unclear_note"], str)
    return {
        "benchmark": benchmark,
        "tasks": tasks,
        "responses": responses,
        "judgments": judgments,
        "by_task": by_task,
        "by_response": by_response,
    }


def truth_map(root: Path) -> dict[tuple[str, str], dict[str, Any]]:
    return {(t["response_id"], t["criterion_id"]): t for t in read_jsonl(root / "truth.jsonl")}


def tags_of(data: dict[str, Any], response_id: str, criterion_id: str) -> list[str]:
    task = data["by_task"][data["by_response"][response_id]["task_id"]]
    return next(c["tags"] for c in task["rubric"] if c["id"] == criterion_id)


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, SynthSummary]:
    root = tmp_path_factory.mktemp("small") / "bench"
    return root, generate(root, SMALL)


@pytest.fixture(scope="module")
def medium(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    root = tmp_path_factory.mktemp("medium") / "bench"
    generate(root, MEDIUM)
    return root, validate_folder(root)


@pytest.fixture(scope="module")
def numeric(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    root = tmp_path_factory.mktemp("numeric") / "bench"
    generate(root, NUMERIC)
    return root, validate_folder(root)


# --------------------------------------------------------------------------- structure


def test_folder_is_valid_format_v1(small: tuple[Path, SynthSummary]) -> None:
    root, _ = small
    data = validate_folder(root)
    assert len(data["tasks"]) == SMALL.tasks
    assert {r["model"] for r in data["responses"]} == {"model-a", "model-b", "model-c"}
    assert {j["grader"] for j in data["judgments"]} == {
        "expert-01",
        "expert-02",
        "expert-03",
        "judge",
    }
    ids = [t["id"] for t in data["tasks"]]
    assert ids == [f"S{i:04d}" for i in range(1, SMALL.tasks + 1)]
    assert (root / "truth.json").is_file()


def test_lines_validate_against_the_json_schemas(small: tuple[Path, SynthSummary]) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schemas = Path(__file__).resolve().parents[1] / "gradercal" / "schemas"
    if not (schemas / "task.schema.json").is_file():
        pytest.skip("schemas not present")
    root, _ = small

    def validator(name: str) -> Any:
        schema = json.loads((schemas / f"{name}.schema.json").read_text(encoding="utf-8"))
        return jsonschema.Draft202012Validator(schema)

    validator("benchmark").validate(json.loads((root / "benchmark.json").read_text()))
    for name, file in (("task", "tasks"), ("response", "responses"), ("judgment", "judgments")):
        v = validator(name)
        for line in read_jsonl(root / f"{file}.jsonl"):
            v.validate(line)


def test_jsonl_lines_are_canonical_json(small: tuple[Path, SynthSummary]) -> None:
    """Hand-assembled lines (judgments, truth) match what json.dumps writes."""
    root, _ = small
    for name in ("tasks", "responses", "judgments", "truth"):
        for line in (root / f"{name}.jsonl").read_text(encoding="utf-8").splitlines():
            assert json.dumps(json.loads(line), ensure_ascii=False) == line


def test_artifact_files_are_distinct_and_parse(small: tuple[Path, SynthSummary]) -> None:
    root, _ = small
    files = sorted((root / "artifacts").rglob("*.*"))
    assert {p.suffix for p in files} == {".csv", ".fasta", ".txt", ".png", ".pdf", ".pdb"}
    digests = [hashlib.sha256(p.read_bytes()).hexdigest() for p in files]
    assert len(set(digests)) == len(digests), "content-addressing must see every file"
    for path in files:
        data = path.read_bytes()
        task_id = path.parent.name
        suffix = path.suffix
        if suffix == ".png":
            width, height = check_png(data)
            assert width * height > 0
            assert task_id.encode() in data
        elif suffix == ".pdf":
            check_pdf(data)
            assert task_id.encode() in data
        else:
            text = data.decode("utf-8")
            assert task_id in text
            if suffix == ".csv":
                rows = list(csv.reader(io.StringIO(text)))
                assert len({len(r) for r in rows}) == 1
                assert len(rows) > 1
            elif suffix == ".fasta":
                lines = text.splitlines()
                assert lines[0].startswith(">")
                assert all(set(s) <= set("ACGT") for s in lines if not s.startswith(">"))
            elif suffix == ".pdb":
                assert any(s.startswith("ATOM  ") for s in text.splitlines())
                assert text.rstrip().endswith("END")


def test_third_party_readers_open_png_and_pdf(small: tuple[Path, SynthSummary]) -> None:
    pil_image = pytest.importorskip("PIL.Image")
    pymupdf = pytest.importorskip("pymupdf")
    root, _ = small
    pngs = sorted((root / "artifacts").rglob("*.png"))
    pdfs = sorted((root / "artifacts").rglob("*.pdf"))
    assert pngs
    assert pdfs
    for path in pngs:
        with pil_image.open(path) as img:
            img.load()
            assert img.mode == "L"
    for path in pdfs:
        with pymupdf.open(path) as doc:
            assert doc.page_count == 1
            assert path.parent.name in doc[0].get_text()


def test_summary_counts_match_files(small: tuple[Path, SynthSummary]) -> None:
    root, summary = small
    tasks = read_jsonl(root / "tasks.jsonl")
    truth = read_jsonl(summary.truth_path)
    refs = [a for t in tasks for a in t.get("artifacts", [])]
    assert summary.out_dir == root
    assert summary.truth_path == root / "truth.jsonl"
    assert summary.tasks == len(tasks)
    assert summary.criteria == sum(len(t["rubric"]) for t in tasks)
    assert summary.artifacts == sum(1 for p in (root / "artifacts").rglob("*") if p.is_file())
    assert summary.artifacts == sum("path" in a for a in refs)
    assert summary.url_artifacts == sum("url" in a for a in refs)
    assert summary.responses == len(read_jsonl(root / "responses.jsonl"))
    assert summary.judgments == len(read_jsonl(root / "judgments.jsonl"))
    assert len(truth) == SMALL.responses_per_task * summary.criteria
    assert summary.criteria == round(SMALL.tasks * SMALL.criteria_per_task)
    assert summary.artifacts == round(SMALL.tasks * SMALL.artifacts_per_task)
    assert json.loads(json.dumps(summary.to_dict())) == summary.to_dict()
    truth_doc = json.loads((root / "truth.json").read_text(encoding="utf-8"))
    assert truth_doc["counts"]["judgments"] == summary.judgments
    assert truth_doc["config"] == SMALL.to_dict()


def test_judgment_count_is_graders_times_judged_criteria(small: tuple[Path, SynthSummary]) -> None:
    root, summary = small
    tasks = read_jsonl(root / "tasks.jsonl")
    judged = sum(1 for t in tasks for c in t["rubric"] if "auto" not in c)
    graders = SMALL.human_graders + int(SMALL.judge)
    assert summary.judgments == judged * SMALL.responses_per_task * graders


def test_truth_json_describes_graders_and_models(small: tuple[Path, SynthSummary]) -> None:
    root, _ = small
    doc = json.loads((root / "truth.json").read_text(encoding="utf-8"))
    graders = {g["name"]: g for g in doc["graders"]}
    assert graders["expert-02"] == {
        "name": "expert-02",
        "kind": "human",
        "sensitivity": SMALL.human_sensitivity,
        "specificity": SMALL.human_specificity,
        "leniency": {},
    }
    assert graders["judge"]["kind"] == "judge"
    assert graders["judge"]["leniency"] == dict(SMALL.judge_leniency)
    assert [m["name"] for m in doc["models"]] == ["model-a", "model-b", "model-c"]
    qualities = [m["quality"] for m in doc["models"]]
    assert qualities == sorted(qualities, reverse=True)


# --------------------------------------------------------------------------- determinism


def test_same_config_gives_byte_identical_files(tmp_path: Path) -> None:
    generate(tmp_path / "a", SMALL)
    generate(tmp_path / "b", SMALL)
    a, b = all_files(tmp_path / "a"), all_files(tmp_path / "b")
    assert sorted(a) == sorted(b)
    assert a == b


def test_another_seed_gives_other_content(tmp_path: Path) -> None:
    generate(tmp_path / "a", SMALL)
    generate(tmp_path / "b", replace(SMALL, seed=SMALL.seed + 1))
    for name in ("tasks.jsonl", "responses.jsonl", "judgments.jsonl", "truth.jsonl"):
        assert (tmp_path / "a" / name).read_bytes() != (tmp_path / "b" / name).read_bytes()


def test_truth_does_not_depend_on_grader_settings(tmp_path: Path) -> None:
    generate(tmp_path / "a", SMALL)
    generate(tmp_path / "b", replace(SMALL, human_graders=5, overlap=2, judge=False))
    a, b = all_files(tmp_path / "a"), all_files(tmp_path / "b")
    for name in ("tasks.jsonl", "responses.jsonl", "truth.jsonl"):
        assert a[name] == b[name]
    assert {k: v for k, v in a.items() if k.startswith("artifacts/")} == {
        k: v for k, v in b.items() if k.startswith("artifacts/")
    }
    assert a["judgments.jsonl"] != b["judgments.jsonl"]


# --------------------------------------------------------------------------- rubric realism


def test_rubric_structure_is_realistic(medium: tuple[Path, dict[str, Any]]) -> None:
    _, data = medium
    criteria = [c for t in data["tasks"] for c in t["rubric"]]
    judged = [c for c in criteria if "auto" not in c]
    n = len(judged)
    negative = sum(c["points"] < 0 for c in judged)
    # negatives are drawn with p = 0.1 per judgment criterion (auto ones are positive)
    assert abs(negative / n - 0.1) <= Z * binomial_se(0.1, n)
    assert all(1 <= c["points"] <= 25 for c in criteria if c["points"] > 0)
    axes = Counter(t for c in criteria for t in c["tags"] if t.startswith("axis:"))
    assert set(axes) == set(AXIS_TAGS)
    three = sum(c.get("levels") == 3 for c in judged)
    assert 0 < three < n
    assert len({t["domain"] for t in data["tasks"]}) >= 4
    assert len({t["workflow"] for t in data["tasks"]}) >= 5
    counts = [len(t["rubric"]) for t in data["tasks"]]
    m = MEDIUM.criteria_per_task
    assert sum(counts) == round(MEDIUM.tasks * m)
    assert min(counts) >= math.floor(0.6 * m)
    assert max(counts) <= math.ceil(1.4 * m)
    assert len(set(counts)) > 5


def test_model_quality_orders_true_pass_rates(medium: tuple[Path, dict[str, Any]]) -> None:
    root, data = medium
    truth = read_jsonl(root / "truth.jsonl")
    doc = json.loads((root / "truth.json").read_text(encoding="utf-8"))
    # recompute the true scores from truth.jsonl with the documented score rule
    credit: dict[str, float] = defaultdict(float)
    for t in truth:
        task = data["by_task"][t["task_id"]]
        c = next(c for c in task["rubric"] if c["id"] == t["criterion_id"])
        levels = c.get("levels", 2)
        level = t.get("level", levels - 1 if t["met"] else 0)
        assert t["met"] == (level == levels - 1)
        credit[t["response_id"]] += c["points"] * level / (levels - 1)
    by_model: dict[str, list[float]] = defaultdict(list)
    for resp in data["responses"]:
        task = data["by_task"][resp["task_id"]]
        max_points = sum(c["points"] for c in task["rubric"] if c["points"] > 0)
        score = min(1.0, max(0.0, credit[resp["id"]] / max_points))
        by_model[resp["model"]].append(score)
    rates = {
        m: sum(s >= MEDIUM.pass_threshold - 1e-9 for s in v) / len(v) for m, v in by_model.items()
    }
    for entry in doc["models"]:
        assert entry["true_pass_rate"] == pytest.approx(rates[entry["name"]], abs=1e-6)
    assert rates["model-a"] > rates["model-b"] > rates["model-c"]
    n = MEDIUM.tasks
    gap_se = math.sqrt(
        binomial_se(rates["model-a"], n) ** 2 + binomial_se(rates["model-c"], n) ** 2
    )
    assert rates["model-a"] - rates["model-c"] > Z * gap_se


def test_penalties_apply_less_to_better_models(medium: tuple[Path, dict[str, Any]]) -> None:
    root, data = medium
    applied: dict[str, list[bool]] = defaultdict(list)
    for t in read_jsonl(root / "truth.jsonl"):
        task = data["by_task"][t["task_id"]]
        points = next(c["points"] for c in task["rubric"] if c["id"] == t["criterion_id"])
        if points < 0:
            applied[t["model"]].append(t["met"])
    rate = {m: sum(v) / len(v) for m, v in applied.items()}
    assert rate["model-a"] < rate["model-c"]


# --------------------------------------------------------------------------- graders


def test_human_sensitivity_and_specificity_match_config(
    medium: tuple[Path, dict[str, Any]],
) -> None:
    root, data = medium
    truth = truth_map(root)
    counts: dict[str, Counter[tuple[bool, bool]]] = defaultdict(Counter)
    for j in data["judgments"]:
        if j["grader_kind"] == "human":
            met = truth[(j["response_id"], j["criterion_id"])]["met"]
            counts[j["grader"]][(met, j["met"])] += 1
            counts["all"][(met, j["met"])] += 1
    assert len(counts) == MEDIUM.human_graders + 1
    for grader, c in counts.items():
        n_pos = c[(True, True)] + c[(True, False)]
        n_neg = c[(False, True)] + c[(False, False)]
        assert n_pos > 500, grader
        assert n_neg > 500, grader
        sens = c[(True, True)] / n_pos
        spec = c[(False, False)] / n_neg
        p_sens, p_spec = MEDIUM.human_sensitivity, MEDIUM.human_specificity
        assert abs(sens - p_sens) <= Z * binomial_se(p_sens, n_pos), (grader, sens)
        assert abs(spec - p_spec) <= Z * binomial_se(p_spec, n_neg), (grader, spec)


def test_judge_rates_and_leniency_on_lenient_tag(medium: tuple[Path, dict[str, Any]]) -> None:
    root, data = medium
    truth = truth_map(root)
    lenient_tag = "axis:completeness"
    extra = MEDIUM.judge_leniency[lenient_tag]
    lenient_tags = set(MEDIUM.judge_leniency)
    tp = fn = 0
    fp: Counter[str] = Counter()
    tn: Counter[str] = Counter()
    for j in data["judgments"]:
        if j["grader_kind"] != "judge":
            continue
        met = truth[(j["response_id"], j["criterion_id"])]["met"]
        tags = set(tags_of(data, j["response_id"], j["criterion_id"]))
        group = lenient_tag if lenient_tag in tags else ("plain" if not tags & lenient_tags else "")
        if met:
            tp += j["met"]
            fn += not j["met"]
        elif group:
            fp[group] += j["met"]
            tn[group] += not j["met"]
    sens = tp / (tp + fn)
    assert abs(sens - MEDIUM.judge_sensitivity) <= Z * binomial_se(
        MEDIUM.judge_sensitivity, tp + fn
    )
    n_plain = fp["plain"] + tn["plain"]
    n_len = fp[lenient_tag] + tn[lenient_tag]
    fpr_plain = fp["plain"] / n_plain
    fpr_len = fp[lenient_tag] / n_len
    p_plain = 1 - MEDIUM.judge_specificity
    p_len = p_plain + extra
    assert abs(fpr_plain - p_plain) <= Z * binomial_se(p_plain, n_plain)
    assert abs(fpr_len - p_len) <= Z * binomial_se(p_len, n_len)
    diff_se = math.sqrt(binomial_se(p_plain, n_plain) ** 2 + binomial_se(p_len, n_len) ** 2)
    assert fpr_len - fpr_plain > Z * diff_se, "leniency is visible"


def test_judge_confidence_is_higher_when_right(medium: tuple[Path, dict[str, Any]]) -> None:
    root, data = medium
    truth = truth_map(root)
    right: list[float] = []
    wrong: list[float] = []
    for j in data["judgments"]:
        if j["grader_kind"] == "judge":
            ok = j["met"] == truth[(j["response_id"], j["criterion_id"])]["met"]
            (right if ok else wrong).append(j["confidence"])
    assert wrong
    assert sum(right) / len(right) - sum(wrong) / len(wrong) > 0.15
    # calibrated-ish: among confident verdicts (>= 0.9) the judge is mostly right
    confident = [c for c in right if c >= 0.9], [c for c in wrong if c >= 0.9]
    assert len(confident[0]) / (len(confident[0]) + len(confident[1])) > 0.95


def test_levels_follow_verdicts_and_truth(medium: tuple[Path, dict[str, Any]]) -> None:
    root, data = medium
    truth = truth_map(root)
    partial_when_partial: list[bool] = []
    partial_when_zero: list[bool] = []
    for j in data["judgments"]:
        if "level" not in j or j["met"]:
            continue
        true_level = truth[(j["response_id"], j["criterion_id"])]["level"]
        (partial_when_partial if true_level >= 1 else partial_when_zero).append(j["level"] == 1)
    assert partial_when_partial
    assert partial_when_zero
    rate_hi = sum(partial_when_partial) / len(partial_when_partial)
    rate_lo = sum(partial_when_zero) / len(partial_when_zero)
    assert rate_hi > rate_lo + 0.3


@pytest.mark.parametrize(("humans", "overlap"), [(5, 2), (4, 1), (3, 3)])
def test_overlap_gives_k_humans_per_response(tmp_path: Path, humans: int, overlap: int) -> None:
    config = replace(SMALL, human_graders=humans, overlap=overlap, tasks=10)
    generate(tmp_path / "b", config)
    data = validate_folder(tmp_path / "b")
    per_item: dict[tuple[str, str], set[str]] = defaultdict(set)
    per_response: dict[str, set[str]] = defaultdict(set)
    judge_items = set()
    for j in data["judgments"]:
        key = (j["response_id"], j["criterion_id"])
        if j["grader_kind"] == "human":
            per_item[key].add(j["grader"])
            per_response[j["response_id"]].add(j["grader"])
        else:
            judge_items.add(key)
    assert set(per_item) == judge_items, "humans and judge cover the same items"
    assert set(per_response) == set(data["by_response"])
    assert all(len(g) == overlap for g in per_item.values())
    # the same K humans grade every criterion of a response
    for (rid, _), graders in per_item.items():
        assert graders == per_response[rid]
    load = Counter(g for graders in per_response.values() for g in graders)
    assert len(load) == humans
    assert max(load.values()) - min(load.values()) <= 1, "balanced rotation"


def test_no_overlap_means_every_human_grades_everything(small: tuple[Path, SynthSummary]) -> None:
    root, _ = small
    per_response: dict[str, set[str]] = defaultdict(set)
    for j in read_jsonl(root / "judgments.jsonl"):
        if j["grader_kind"] == "human":
            per_response[j["response_id"]].add(j["grader"])
    assert all(len(g) == SMALL.human_graders for g in per_response.values())


def test_no_graders_writes_no_judgments(tmp_path: Path) -> None:
    summary = generate(tmp_path / "b", replace(SMALL, human_graders=0, judge=False))
    assert summary.judgments == 0
    assert read_jsonl(tmp_path / "b" / "judgments.jsonl") == []
    doc = json.loads((tmp_path / "b" / "truth.json").read_text(encoding="utf-8"))
    assert doc["graders"] == []


def test_judge_off_keeps_humans_only(tmp_path: Path) -> None:
    generate(tmp_path / "b", replace(SMALL, judge=False))
    judgments = read_jsonl(tmp_path / "b" / "judgments.jsonl")
    assert judgments
    assert {j["grader_kind"] for j in judgments} == {"human"}


# --------------------------------------------------------------------------- auto criteria


def test_auto_truth_agrees_with_tolerance_evaluation(numeric: tuple[Path, dict[str, Any]]) -> None:
    root, data = numeric
    truth = truth_map(root)
    numeric_tasks = [t for t in data["tasks"] if t["answer_format"] == "json"]
    assert len(numeric_tasks) == round(NUMERIC.tasks * NUMERIC.numeric_task_share)
    outcomes: Counter[bool] = Counter()
    kinds: Counter[str] = Counter()
    for task in data["tasks"]:
        autos = [c for c in task["rubric"] if "auto" in c]
        if task["answer_format"] != "json":
            assert not autos
            continue
        assert 2 <= len(autos) <= min(4, len(task["rubric"]))
        for c in autos:
            kinds["abs_tol" if "abs_tol" in c["auto"] else "rel_tol"] += 1
        for model in (model_name(r) for r in range(NUMERIC.responses_per_task)):
            resp = data["by_response"][f"{task['id']}-{model}"]
            assert isinstance(resp["answer"], dict)
            assert "```json" in resp["text"]
            for c in autos:
                met = truth[(resp["id"], c["id"])]["met"]
                assert evaluate_auto(c["auto"], resp["answer"]) == met, (resp["id"], c["id"])
                outcomes[met] += 1
    assert outcomes[True] > 10, "some answers land inside the tolerance"
    assert outcomes[False] > 10, "some land outside"
    assert kinds["abs_tol"] > 0
    assert kinds["rel_tol"] > 0
    judged = {(j["response_id"], j["criterion_id"]) for j in data["judgments"]}
    auto_items = {
        (f"{t['id']}-{model_name(r)}", c["id"])
        for t in numeric_tasks
        for c in t["rubric"]
        if "auto" in c
        for r in range(NUMERIC.responses_per_task)
    }
    assert not judged & auto_items, "auto criteria get no judgments"
    assert auto_items <= set(truth), "auto criteria have truth lines"


# --------------------------------------------------------------------------- config and output folder


@pytest.mark.parametrize(
    "changes",
    [
        {"tasks": 0},
        {"criteria_per_task": 0},
        {"human_sensitivity": 1.5},
        {"judge_specificity": -0.1},
        {"overlap": 4},
        {"overlap": 0},
        {"human_graders": 0, "overlap": 1},
        {"pass_threshold": 0.0},
        {"judge_leniency": {"axis:safety": 2.0}},
        {"artifacts_per_task": -1.0},
    ],
)
def test_invalid_config_is_rejected(changes: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=r"must"):
        replace(SynthConfig(), **changes)


def test_config_is_immutable_and_hashable() -> None:
    config = SynthConfig()
    with pytest.raises(TypeError):
        config.judge_leniency["axis:accuracy"] = 0.5  # type: ignore[index]
    assert hash(config) == hash(SynthConfig())
    assert config == SynthConfig()
    assert json.loads(json.dumps(config.to_dict()))["judge_leniency"] == dict(config.judge_leniency)


def test_model_names() -> None:
    assert [model_name(i) for i in (0, 1, 25, 26, 27)] == [
        "model-a",
        "model-b",
        "model-z",
        "model-aa",
        "model-ab",
    ]


def test_refuses_non_empty_folder(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("precious")
    with pytest.raises(FileExistsError):
        generate(tmp_path, SMALL)
    with pytest.raises(FileExistsError):
        generate(tmp_path, SMALL, overwrite=True)  # not a synthetic benchmark
    assert (tmp_path / "keep.txt").read_text() == "precious"


def test_overwrite_replaces_a_previous_synthetic_benchmark(tmp_path: Path) -> None:
    generate(tmp_path / "b", replace(SMALL, tasks=20))
    with pytest.raises(FileExistsError):
        generate(tmp_path / "b", SMALL)
    generate(tmp_path / "b", SMALL, overwrite=True)
    generate(tmp_path / "fresh", SMALL)
    assert all_files(tmp_path / "b") == all_files(tmp_path / "fresh"), "no stale files"


def test_core_module_imports_neither_qt_nor_sqlalchemy() -> None:
    code = (
        "import sys, gradercal.synth; "
        "bad = [m for m in sys.modules if m.split('.')[0] in ('PySide6', 'sqlalchemy')]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


# --------------------------------------------------------------------------- scale


@pytest.mark.slow
def test_scale_750_tasks(tmp_path: Path) -> None:
    config = SynthConfig(tasks=750, criteria_per_task=25.36, artifacts_per_task=1.33)
    # The CPU time of this process (generation is single-process): the work it does, which
    # other processes on a loaded machine do not stretch as they stretch the wall clock.
    start = time.process_time()
    summary = generate(tmp_path / "big", config)
    elapsed = time.process_time() - start
    assert elapsed < 20.0, f"generation took {elapsed:.1f} s of CPU"
    assert summary.tasks == 750
    assert summary.criteria == 19_020
    assert 950 <= summary.artifacts <= 1_050
    assert summary.responses == 2_250
    tasks = read_jsonl(tmp_path / "big" / "tasks.jsonl")
    with_files = sum(any("path" in a for a in t.get("artifacts", [])) for t in tasks)
    assert 0.4 * 750 <= with_files <= 0.6 * 750, "roughly half the tasks have artifact files"
    digests = {
        hashlib.sha256(p.read_bytes()).digest()
        for p in (tmp_path / "big" / "artifacts").rglob("*")
        if p.is_file()
    }
    assert len(digests) == summary.artifacts
    truth_lines = sum(1 for _ in summary.truth_path.open(encoding="utf-8"))
    assert truth_lines == 3 * 19_020
