"""Reading benchmark files: format v1 folders and HealthBench JSONL, good and bad."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gradercal.errors import ValidationError
from gradercal.formats import (
    FORMATS,
    Catalog,
    Recognised,
    read_folder,
    read_healthbench,
    read_path,
    recognise,
    sniff_jsonl,
)
from gradercal.model import ArtifactKind, CriterionKind, GraderKind
from tests.conftest import DEMO, read_jsonl, write_jsonl


def problems_of(path: Path) -> list[str]:
    with pytest.raises(ValidationError) as info:
        read_path(path)
    return [str(p) for p in info.value.problems]


def test_reads_the_mini_folder(mini: Path) -> None:
    data = read_folder(mini)
    assert data.benchmark.name == "mini"
    assert data.benchmark.pass_threshold == 0.7
    assert [t.id for t in data.tasks] == ["M1", "M2"]
    m1, m2 = data.tasks
    assert [c.points for c in m1.criteria] == [6, 3, -4, 1]
    assert m1.criteria[3].levels == 3
    assert [a.kind for a in m1.artifacts] == [ArtifactKind.SEQUENCE, ArtifactKind.URL]
    fasta = m1.artifacts[0]
    assert fasta.size == (mini / "artifacts/construct.fasta").stat().st_size
    assert fasta.sha256 in data.blobs
    assert m2.artifacts[0].title == "dose.csv"
    assert m2.criteria[0].kind is CriterionKind.AUTO
    assert m2.criteria[0].auto is not None and m2.criteria[0].auto.rel_tol == 0.2
    assert len(data.responses) == 4
    assert data.responses[2].answer == {"ec50_uM": 4.0, "model": "4PL"}
    assert len(data.judgments) == 30
    assert {j.grader_kind for j in data.judgments if j.grader == "judge-x"} == {GraderKind.JUDGE}


def test_content_hash_is_stable(mini: Path) -> None:
    a = read_folder(mini)
    b = read_folder(mini)
    assert [t.content_hash() for t in a.tasks] == [t.content_hash() for t in b.tasks]
    (mini / "artifacts/dose.csv").write_text("dose_uM,response_pct\n1,2\n")
    c = read_folder(mini)
    assert a.tasks[1].content_hash() != c.tasks[1].content_hash()


def _edit_line(
    path: Path, index: int, edit: dict[str, object] | None, raw: str | None = None
) -> None:
    lines = path.read_text("utf-8").splitlines()
    if raw is not None:
        lines[index] = raw
    else:
        rec = json.loads(lines[index])
        for key, value in (edit or {}).items():
            if value is _DELETE:
                del rec[key]
            else:
                rec[key] = value
        lines[index] = json.dumps(rec)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


_DELETE = object()


@pytest.mark.parametrize(
    ("file", "index", "edit", "expected"),
    [
        ("tasks.jsonl", 1, {"id": "M1"}, "tasks.jsonl:2: id: duplicate task id 'M1'"),
        ("tasks.jsonl", 0, {"prompt": _DELETE}, "tasks.jsonl:1: prompt: is required"),
        ("tasks.jsonl", 0, {"id": 7}, "tasks.jsonl:1: id: must be a string, got 7"),
        (
            "responses.jsonl",
            1,
            {"id": "M1-a"},
            "responses.jsonl:2: id: duplicate response id 'M1-a'",
        ),
        (
            "responses.jsonl",
            0,
            {"task_id": "M9"},
            "responses.jsonl:1: task_id: unknown task_id 'M9'",
        ),
        ("responses.jsonl", 0, {"model": _DELETE}, "responses.jsonl:1: model: is required"),
        (
            "judgments.jsonl",
            0,
            {"response_id": "nope"},
            "judgments.jsonl:1: response_id: unknown response_id 'nope'",
        ),
        (
            "judgments.jsonl",
            0,
            {"criterion_id": "c99"},
            "judgments.jsonl:1: criterion_id: unknown criterion_id 'c99' for response 'M1-a'",
        ),
        (
            "judgments.jsonl",
            1,
            {"grader": "ana"},
            "judgments.jsonl:2: criterion_id: duplicate judgment by 'ana' on 'M1-a' / 'c1'",
        ),
        (
            "judgments.jsonl",
            0,
            {"met": "yes"},
            'judgments.jsonl:1: met: must be a boolean or null, got "yes"',
        ),
        (
            "judgments.jsonl",
            0,
            {"confidence": 1.5},
            "judgments.jsonl:1: confidence: 1.5 is greater than the maximum of 1",
        ),
    ],
)
def test_each_bad_field_gets_its_own_message(
    mini: Path, file: str, index: int, edit: dict[str, object], expected: str
) -> None:
    _edit_line(mini / file, index, edit)
    assert expected in problems_of(mini)


def test_grader_kind_mixup_names_the_second_line(mini: Path) -> None:
    # ana's first line is a judge line, her later lines say human: the later line is reported.
    _edit_line(mini / "judgments.jsonl", 0, {"grader_kind": "judge"})
    problems = problems_of(mini)
    assert any(p.startswith("judgments.jsonl:4: grader_kind:") for p in problems)


@pytest.mark.parametrize(
    ("points", "expected"),
    [
        ("six", 'tasks.jsonl:1: rubric[0].points: must be an integer, got "six"'),
        (6.5, "tasks.jsonl:1: rubric[0].points: must be an integer, got 6.5"),
        (None, "tasks.jsonl:1: rubric[0].points: must be an integer, got null"),
        (True, "tasks.jsonl:1: rubric[0].points: must be an integer, got true"),
    ],
)
def test_non_numeric_points(mini: Path, points: object, expected: str) -> None:
    rec = read_jsonl(mini / "tasks.jsonl")
    rec[0]["rubric"][0]["points"] = points
    write_jsonl(mini / "tasks.jsonl", rec)
    assert expected in problems_of(mini)


def test_duplicate_criterion_id(mini: Path) -> None:
    rec = read_jsonl(mini / "tasks.jsonl")
    rec[0]["rubric"][1]["id"] = "c1"
    write_jsonl(mini / "tasks.jsonl", rec)
    assert "tasks.jsonl:1: rubric[1].id: duplicate criterion id 'c1'" in problems_of(mini)


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("../outside.txt", "leaves the benchmark folder"),
        ("artifacts/../../outside.txt", "leaves the benchmark folder"),
        ("/etc/passwd", "absolute path '/etc/passwd' is not allowed"),
        ("C:\\\\Windows\\\\win.ini", "absolute path"),
        ("artifacts/missing.pdf", "missing artifact file 'artifacts/missing.pdf'"),
        ("artifacts", "'artifacts' is not a file"),
    ],
)
def test_artifact_paths_are_confined(mini: Path, path: str, message: str) -> None:
    (mini.parent / "outside.txt").write_text("secret")
    rec = read_jsonl(mini / "tasks.jsonl")
    rec[0]["artifacts"][0]["path"] = path
    write_jsonl(mini / "tasks.jsonl", rec)
    problems = problems_of(mini)
    assert any(
        p.startswith("tasks.jsonl:1: artifacts[0].path:") and message in p for p in problems
    ), problems


def test_symlink_escaping_the_folder_is_rejected(mini: Path) -> None:
    (mini.parent / "outside.txt").write_text("secret")
    (mini / "artifacts" / "link.txt").symlink_to(mini.parent / "outside.txt")
    rec = read_jsonl(mini / "tasks.jsonl")
    rec[0]["artifacts"][0]["path"] = "artifacts/link.txt"
    write_jsonl(mini / "tasks.jsonl", rec)
    assert any("resolves outside the folder" in p for p in problems_of(mini))


def test_invalid_json_and_utf8_are_reported_per_line(mini: Path) -> None:
    _edit_line(mini / "responses.jsonl", 1, None, raw='{"id": "M1-b", "task_id": ')
    with (mini / "responses.jsonl").open("ab") as fh:
        fh.write(b'{"id": "x", "task_id": "M1", "model": "m", "text": "caf\xe9"}\n')
    problems = problems_of(mini)
    assert any(p.startswith("responses.jsonl:2: invalid JSON:") for p in problems), problems
    assert "responses.jsonl:5: invalid UTF-8 at byte 56" in problems


def test_a_bad_task_does_not_bury_its_cause_under_follow_on_errors(mini: Path) -> None:
    _edit_line(mini / "tasks.jsonl", 0, {"rubric": []})
    problems = problems_of(mini)
    # only the root cause: the responses and judgments of M1 are not reported as unknown
    assert problems == ["tasks.jsonl:1: rubric: must not be empty"]


def test_a_line_that_is_not_an_object(mini: Path) -> None:
    with (mini / "tasks.jsonl").open("a") as fh:
        fh.write("[1, 2]\n")
    assert "tasks.jsonl:3: must be a JSON object, got [1, 2]" in problems_of(mini)


def test_every_problem_is_listed_in_one_pass(mini: Path) -> None:
    _edit_line(mini / "tasks.jsonl", 0, {"prompt": 3})
    _edit_line(mini / "responses.jsonl", 3, {"task_id": "nowhere"})
    _edit_line(mini / "judgments.jsonl", 5, {"met": 1})
    problems = problems_of(mini)
    assert any(p.startswith("tasks.jsonl:1: prompt:") for p in problems)
    assert any(p.startswith("responses.jsonl:4: task_id:") for p in problems)
    assert any(p.startswith("judgments.jsonl:6: met:") for p in problems)


def test_judgments_on_auto_criteria_are_refused(mini: Path) -> None:
    with (mini / "judgments.jsonl").open("a") as fh:
        fh.write(
            json.dumps(
                {"response_id": "M2-a", "criterion_id": "ec50", "grader": "ana", "met": True}
            )
            + "\n"
        )
    assert any("'ec50' is an auto criterion" in p for p in problems_of(mini))


def test_level_must_fit_the_scale(mini: Path) -> None:
    with (mini / "judgments.jsonl").open("a") as fh:
        fh.write(
            json.dumps(
                {
                    "response_id": "M1-a",
                    "criterion_id": "c4",
                    "grader": "carl",
                    "met": None,
                    "level": 3,
                }
            )
            + "\n"
        )
        fh.write(
            json.dumps(
                {
                    "response_id": "M1-a",
                    "criterion_id": "c1",
                    "grader": "carl",
                    "met": None,
                    "level": 1,
                }
            )
            + "\n"
        )
        fh.write(
            json.dumps(
                {
                    "response_id": "M1-b",
                    "criterion_id": "c4",
                    "grader": "carl",
                    "met": True,
                    "level": 1,
                }
            )
            + "\n"
        )
    problems = problems_of(mini)
    assert "judgments.jsonl:31: level: must be below 3 (the criterion has 3 levels)" in problems
    assert "judgments.jsonl:33: met: disagrees with level 1" in problems
    assert not any(p.startswith("judgments.jsonl:32") for p in problems)


def test_tolerance_needs_a_numeric_target(mini: Path) -> None:
    rec = read_jsonl(mini / "tasks.jsonl")
    rec[1]["rubric"][0]["auto"]["target"] = "4.3"
    write_jsonl(mini / "tasks.jsonl", rec)
    assert (
        "tasks.jsonl:2: rubric[0].auto.target: must be a number when a tolerance is given"
        in problems_of(mini)
    )


def test_bad_benchmark_json(mini: Path) -> None:
    (mini / "benchmark.json").write_text('{"name": "mini", "pass_threshold": 70}')
    assert "benchmark.json: pass_threshold: 70 is greater than the maximum of 1" in problems_of(
        mini
    )
    (mini / "benchmark.json").write_text('{"name": "mini", "format_version": 2}')
    assert "benchmark.json: format_version: must be 1, got 2" in problems_of(mini)


def test_not_a_benchmark_folder(tmp_path: Path) -> None:
    assert problems_of(tmp_path) == [f"{tmp_path}: not a benchmark folder: no tasks.jsonl"]
    assert problems_of(tmp_path / "nope") == [f"{tmp_path / 'nope'}: no such file or folder"]


def test_many_problems_are_capped_in_the_message(mini: Path) -> None:
    write_jsonl(mini / "responses.jsonl", [{"id": f"r{i}"} for i in range(80)])
    with pytest.raises(ValidationError) as info:
        read_path(mini)
    text = str(info.value)
    assert len(info.value.problems) >= 240  # task_id, model and text missing on each line
    assert text.count("\n") == 50
    assert text.endswith("more problems")


def test_single_judgments_file_resolves_against_a_catalog(mini: Path) -> None:
    catalog = Catalog(
        criteria={"M1": {"c1": ("judgment", 2)}},
        responses={"M1-a": "M1"},
        grader_kinds={"ana": "human"},
    )
    write_jsonl(
        mini / "more.jsonl",
        [{"response_id": "M1-a", "criterion_id": "c1", "grader": "ana", "met": False}],
    )
    assert sniff_jsonl(mini / "more.jsonl") == "judgments"
    data = read_folder(mini / "more.jsonl", catalog)
    assert [j.met for j in data.judgments] == [False]
    with pytest.raises(ValidationError, match="unknown response_id"):
        read_folder(mini / "more.jsonl", Catalog())


HB_LINE = {
    "prompt_id": "hb-1",
    "prompt": [
        {"role": "system", "content": "You are a lab assistant."},
        {"role": "user", "content": "My qPCR Ct values are 38 for the target. Is it expressed?"},
    ],
    "rubrics": [
        {
            "criterion": "Explains that Ct 38 is near the detection limit",
            "points": 7,
            "tags": ["axis:accuracy"],
        },
        {"criterion": "Claims strong expression", "points": -5, "tags": ["axis:accuracy"]},
    ],
    "example_tags": ["theme:analysis", "physician_agreed_category:enough-context"],
    "completion": [{"role": "assistant", "content": "Ct 38 is close to the limit of detection."}],
}


def test_healthbench_lines_become_tasks_and_responses(tmp_path: Path) -> None:
    path = tmp_path / "hb.jsonl"
    second = {**HB_LINE, "prompt_id": "hb-2", "completion": "plain text answer", "model": "gpt-x"}
    del second["example_tags"]
    write_jsonl(path, [HB_LINE, second])
    assert sniff_jsonl(path) is None  # not a v1 file: the HealthBench format recognises it
    assert recognise(path) == Recognised("healthbench", "healthbench", "hb")
    data = read_path(path)
    assert data.benchmark.name == "hb"
    t1 = data.tasks[0]
    assert t1.id == "hb-1"
    assert t1.workflow == "analysis"
    assert "### System" in t1.prompt and "### User" in t1.prompt
    assert [(c.id, c.points) for c in t1.criteria] == [("c1", 7), ("c2", -5)]
    assert t1.criteria[0].tags == ("axis:accuracy",)
    assert t1.tags == ("theme:analysis", "physician_agreed_category:enough-context")
    assert [(r.id, r.model, r.text) for r in data.responses] == [
        ("hb-1:completion", "completion", "Ct 38 is close to the limit of detection."),
        ("hb-2:completion", "gpt-x", "plain text answer"),
    ]


def test_healthbench_errors_name_line_and_field(tmp_path: Path) -> None:
    path = tmp_path / "hb.jsonl"
    bad_points = json.loads(json.dumps(HB_LINE))
    bad_points["prompt_id"] = "hb-2"
    bad_points["rubrics"][1]["points"] = "five"
    no_prompt = {k: v for k, v in HB_LINE.items() if k != "prompt"}
    no_prompt["prompt_id"] = "hb-3"
    write_jsonl(path, [HB_LINE, bad_points, no_prompt, HB_LINE])
    with pytest.raises(ValidationError) as info:
        read_healthbench(path)
    problems = [str(p) for p in info.value.problems]
    assert "hb.jsonl:2: rubrics[1].points: must be a number, got 'five'" in problems
    assert "hb.jsonl:3: prompt: must be a non-empty list of {role, content}" in problems
    assert "hb.jsonl:4: prompt_id: duplicate prompt_id 'hb-1'" in problems


@pytest.mark.skipif(not DEMO.exists(), reason="samples/demo not built")
def test_the_demo_folder_is_valid() -> None:
    data = read_folder(DEMO)
    kinds = {a.kind for t in data.tasks for a in t.artifacts}
    assert kinds >= {
        ArtifactKind.PDF,
        ArtifactKind.IMAGE,
        ArtifactKind.TABLE,
        ArtifactKind.SEQUENCE,
        ArtifactKind.STRUCTURE,
        ArtifactKind.URL,
    }
    assert len(data.tasks) >= 8
    assert len({t.workflow for t in data.tasks}) >= 5
    assert all(5 <= len(t.criteria) <= 25 for t in data.tasks)
    assert any(c.points < 0 for t in data.tasks for c in t.criteria)
    assert any(c.auto is not None for t in data.tasks for c in t.criteria)
    per_task: dict[str, int] = {}
    for r in data.responses:
        per_task[r.task_id] = per_task.get(r.task_id, 0) + 1
    assert set(per_task.values()) == {3}
    graders = {(j.grader, j.grader_kind) for j in data.judgments}
    assert sum(k is GraderKind.HUMAN for _, k in graders) == 3
    assert sum(k is GraderKind.JUDGE for _, k in graders) == 1
    judged = {(j.response_id, j.criterion_id) for j in data.judgments}
    expected = {
        (r.id, c.id)
        for r in data.responses
        for t in data.tasks
        if t.id == r.task_id
        for c in t.criteria
        if c.auto is None
    }
    assert judged == expected
    assert len(data.judgments) == 4 * len(expected)


def test_nan_and_infinity_are_not_json(mini: Path) -> None:
    with (mini / "judgments.jsonl").open("a") as fh:
        fh.write(
            '{"response_id": "M1-a", "criterion_id": "c1", "grader": "carl", "met": true, "confidence": NaN}\n'
        )
    problems = problems_of(mini)
    assert any(p.startswith("judgments.jsonl:31: invalid JSON:") for p in problems), problems


def test_nul_characters_are_refused_before_they_reach_a_database(mini: Path) -> None:
    with (mini / "responses.jsonl").open("a") as fh:
        fh.write('{"id": "n", "task_id": "M1", "model": "m", "text": "a\\u0000b"}\n')
        fh.write(
            '{"id": "ok", "task_id": "M1", "model": "m", "text": "a literal \\\\u0000 is fine"}\n'
        )
    assert problems_of(mini) == [
        "responses.jsonl:5: contains a NUL character (\\u0000), which databases cannot store"
    ]


def test_points_and_labels_are_bounded(mini: Path) -> None:
    rec = read_jsonl(mini / "tasks.jsonl")
    rec[0]["rubric"][0]["points"] = 2**40
    rec[0]["workflow"] = "w" * 201
    write_jsonl(mini / "tasks.jsonl", rec)
    problems = problems_of(mini)
    assert (
        "tasks.jsonl:1: rubric[0].points: 1099511627776 is greater than the maximum of 1000000"
        in problems
    )
    assert any(p.startswith("tasks.jsonl:1: workflow:") and "too long" in p for p in problems), (
        problems
    )


def test_the_format_registry_recognises_each_kind_of_path(mini: Path, tmp_path: Path) -> None:
    """Each path goes to the first format that recognises it, with the benchmark it names;
    an unrecognised path falls back to v1, whose reader says what is wrong."""
    assert FORMATS[-1].name == "v1"  # the fallback; every format: test_format_registry.py
    assert recognise(mini) == Recognised("v1", "folder", "mini", threshold_from_file=True)
    assert recognise(mini / "tasks.jsonl") == Recognised("v1", "tasks", "mini")
    assert recognise(mini / "judgments.jsonl") == Recognised("v1", "judgments", None)
    adjudications = tmp_path / "final.jsonl"
    write_jsonl(
        adjudications,
        [{"response_id": "r", "criterion_id": "c", "met": True, "adjudicator": "lead"}],
    )
    assert recognise(adjudications) == Recognised("v1", "adjudications", None)
    table = tmp_path / "ratings.csv"
    table.write_text("item,rater,verdict\n")
    assert recognise(table) == Recognised("table", "table", None)
    bare = tmp_path / "bare"
    bare.mkdir()
    write_jsonl(bare / "tasks.jsonl", [])
    assert recognise(bare) == Recognised("v1", "folder", "bare")
    junk = tmp_path / "notes.txt"
    junk.write_text("hello\n")
    assert recognise(junk) == Recognised("v1", None, tmp_path.resolve().name)
    with pytest.raises(ValidationError):
        read_path(junk)


def test_a_key_named_twice_is_refused_by_line_and_path(tmp_path: Path) -> None:
    """JSON parsers keep the last of two equal keys silently; the import refuses them,
    naming the line and the field, also inside nested objects and benchmark.json (which
    may start with a byte order mark, like the JSONL files)."""
    from gradercal.formats._lines import duplicate_key

    folder = tmp_path / "twice"
    folder.mkdir()
    one = '[{"id": "c1", "criterion": "Names the assay", "points": 2}]'
    tasks = [
        '{"id": "t1", "prompt": "Say it", "rubric": [], "rubric": ' + one + "}",
        '{"id": "t2", "prompt": "Say it", "rubric": [{"id": "c1", "criterion": "x", '
        '"points": 1}, {"id": "c2", "criterion": "Quotes \\": it", "points": 1, "points": 5}]}',
        '{"id": "t3", "prompt": "A \\"quoted\\": string is fine", "rubric": ' + one + "}",
    ]
    (folder / "tasks.jsonl").write_text("\n".join(tasks) + "\n", "utf-8")
    (folder / "benchmark.json").write_bytes(
        "\ufeff".encode() + b'{"name": "b", "pass_threshold": 0.7, "pass_threshold": 0.5}'
    )
    with pytest.raises(ValidationError) as info:
        read_folder(folder)
    got = {(p.file, p.line, p.field) for p in info.value.problems}
    assert ("tasks.jsonl", 1, "rubric") in got
    assert ("tasks.jsonl", 2, "rubric[1].points") in got
    assert ("benchmark.json", None, "pass_threshold") in got
    assert not [p for p in info.value.problems if p.line == 3]  # quotes in strings are fine
    assert duplicate_key(b'{"a": "x\\": y", "b": {"c": 1}}', {"a": 'x": y', "b": {"c": 1}}) is None


def test_an_absurd_rubric_is_refused_with_the_stated_limit(tmp_path: Path) -> None:
    folder = tmp_path / "huge"
    folder.mkdir()
    rubric = [{"id": f"c{i}", "criterion": "x", "points": 1} for i in range(1001)]
    ok = {"id": "t2", "prompt": "p", "rubric": rubric[:1000]}
    (folder / "tasks.jsonl").write_text(
        json.dumps({"id": "t1", "prompt": "p", "rubric": rubric}) + "\n" + json.dumps(ok) + "\n",
        "utf-8",
    )
    with pytest.raises(ValidationError) as info:
        read_folder(folder)
    assert [str(p) for p in info.value.problems] == [
        "tasks.jsonl:1: rubric: has 1001 items; at most 1000 are accepted"
    ]
