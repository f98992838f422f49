"""Importing Inspect AI eval logs, made by inspect_ai itself.

The logs are written once per session by ``inspect_ai.eval`` on its ``mockllm/model``
with deterministic replies (no network): an eval of the mini benchmark's tasks whose
model calls a tool before it answers, scored per criterion (a score value keyed by
criterion id) and as a whole, as a ``.eval`` log and as a ``.json`` log of two epochs;
and gradercal's own exported Inspect judge (``export-prompt --format inspect
--samples``) grading the mini benchmark's stored responses.
"""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
import sys
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gradercal.cli import main
from gradercal.errors import GradercalError, ValidationError
from gradercal.formats import FORMATS, Catalog, Recognised, check_ready, read_path, recognise
from gradercal.formats.inspect_log import INSTALL_HINT, log_files
from gradercal.model import GraderKind
from tests.conftest import DATA, fingerprint, read_jsonl
from tests.support.judge_server import expected_met, split_prompt

inspect_ai = pytest.importorskip("inspect_ai")

#: The per-criterion verdicts the test scorer gives, per task (M2's ec50 is auto).
VERDICTS = {
    "M1": {"c1": "C", "c2": "I", "c3": False, "c4": 1},
    "M2": {"c1": "C", "ec50": "C"},
}
ANSWERS = {"M1": "There is a premature stop codon.", "M2": "EC50 is about 4 uM."}


@dataclass(frozen=True)
class Logs:
    eval_log: Path  # the mini tasks, one epoch, .eval
    json_log: Path  # the same eval, two epochs, .json
    folder: Path  # both of them (and an unrelated file)
    judged: Path  # gradercal's exported judge on the mini responses, .eval
    judge_py: Path


def _offline(output: Any) -> Any:
    """Give a reply its token usage, so mockllm need not fetch a tokenizer from the web."""
    from inspect_ai.model import ModelUsage

    output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
    return output


def _cli(*args: str) -> dict[str, Any]:
    res = CliRunner().invoke(main, [*args, "--json"])
    assert res.exit_code == 0, res.output
    out: dict[str, Any] = json.loads(res.stdout) if res.stdout.strip() else {}
    return out


def _mini_db(path: Path) -> str:
    db = str(path)
    _cli("import", str(DATA / "mini"), "--db", db)
    return db


@pytest.fixture(scope="session")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Logs:
    from inspect_ai import Task
    from inspect_ai import eval as inspect_eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput, get_model
    from inspect_ai.scorer import Score, Target, mean, scorer
    from inspect_ai.solver import TaskState, generate, use_tools
    from inspect_ai.tool import tool

    root = tmp_path_factory.mktemp("inspect")

    @tool
    def lookup() -> Any:
        async def execute(term: str) -> str:
            """Look a term up in the lab's notes.

            Args:
              term: What to look up.
            """
            return f"notes on {term}: see the attached file"

        return execute

    @scorer(metrics=[mean()])
    def rubric_verdicts() -> Any:
        async def score(state: TaskState, target: Target) -> Score:
            return Score(value=VERDICTS[str(state.sample_id)], explanation="by rule")

        return score

    @scorer(metrics=[mean()])
    def overall() -> Any:
        async def score(state: TaskState, target: Target) -> Score:
            return Score(value=1.0)

        return score

    def answer(messages: list[Any], *_args: Any) -> Any:
        last = messages[-1]
        if last.role == "user":
            return _offline(ModelOutput.for_tool_call("mockllm/model", "lookup", {"term": "x"}))
        task = next(m.text for m in messages if m.role == "user")
        key = "M1" if "construct" in task else "M2"
        return _offline(ModelOutput.from_content("mockllm/model", ANSWERS[key]))

    tasks = {t["id"]: t["prompt"] for t in read_jsonl(DATA / "mini" / "tasks.jsonl")}
    model = get_model("mockllm/model", custom_outputs=answer, memoize=False)
    task = Task(
        dataset=[Sample(id=tid, input=prompt, target="") for tid, prompt in tasks.items()],
        solver=[use_tools(lookup()), generate()],
        scorer=[rubric_verdicts(), overall()],
        name="mini_check",
    )
    out = root / "logs"
    (eval_log,) = inspect_eval(
        task, model=model, log_dir=str(out), log_format="eval", display="none"
    )
    (json_log,) = inspect_eval(
        task, model=model, log_dir=str(out), log_format="json", display="none", epochs=2
    )
    assert eval_log.status == json_log.status == "success"
    (out / "README.txt").write_text("not a log\n", "utf-8")

    db = _mini_db(root / "mini.sqlite")
    judge_py, samples = root / "gc_judge.py", root / "samples.jsonl"
    _cli(
        "export-prompt", "--db", db, "--judge", "judge-x", "--format", "inspect",
        "-o", str(judge_py), "--samples", str(samples), "--n-boot", "0",
    )  # fmt: skip

    def grade(messages: list[Any], *_args: Any) -> Any:
        response, criterion = split_prompt(messages[-1].text)
        reply = json.dumps(
            {"explanation": "keyword rule", "criteria_met": expected_met(criterion, response)}
        )
        return _offline(ModelOutput.from_content(model="mockllm/model", content=reply))

    judge = get_model("mockllm/model", custom_outputs=grade, memoize=False)
    (judged,) = inspect_eval(
        f"{judge_py}@gradercal_grading",
        task_args={"samples": str(samples)},
        model=judge,
        log_dir=str(root / "judged"),
        log_format="eval",
        display="none",
    )
    assert judged.status == "success", judged.error
    return Logs(
        eval_log=Path(eval_log.location),
        json_log=Path(json_log.location),
        folder=out,
        judged=Path(judged.location),
        judge_py=judge_py,
    )


def _mini_catalog(tmp_path: Path) -> Catalog:
    from gradercal.db.repo import Repository
    from gradercal.db.session import open_database

    database = open_database(_mini_db(tmp_path / "cat.sqlite"))
    try:
        return Repository(database).catalog("mini")
    finally:
        database.dispose()


# -- recognising ------------------------------------------------------------------------
def test_recognises_eval_and_json_logs_and_log_folders(logs: Logs, tmp_path: Path) -> None:
    assert "inspect" in {f.name for f in FORMATS}
    assert recognise(logs.eval_log) == Recognised(
        "inspect", "log", None, new_benchmark="mini-check"
    )
    assert recognise(logs.json_log) == Recognised(
        "inspect", "log", None, new_benchmark="mini-check"
    )
    assert recognise(logs.folder) == Recognised("inspect", "log-folder", None, new_benchmark="logs")
    assert log_files(logs.folder) == sorted([logs.eval_log, logs.json_log])
    # a log under any name is still a log; a JSON file that is not one is not
    renamed = tmp_path / "run.json"
    shutil.copy(logs.json_log, renamed)
    assert recognise(renamed) == Recognised("inspect", "log", None, new_benchmark="run")
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"eval": {}, "version": 2, "samples": []}), "utf-8")
    assert recognise(other).kind is None
    # a gradercal v1 folder holding logs is still a v1 folder
    mini = tmp_path / "mini"
    shutil.copytree(DATA / "mini", mini)
    shutil.copy(logs.eval_log, mini / "run.eval")
    assert recognise(mini) == Recognised("v1", "folder", "mini", threshold_from_file=True)
    # a folder with neither stays v1's, whose reader says what is missing
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "other.json").write_text("{}", "utf-8")
    assert recognise(empty).format == "v1"


def test_an_unrecognised_file_names_the_inspect_format_and_what_it_looks_for(
    tmp_path: Path,
) -> None:
    junk = tmp_path / "results.json"
    junk.write_text('{"accuracy": 0.5}\n', "utf-8")
    with pytest.raises(ValidationError) as info:
        read_path(junk)
    message = str(info.value)
    assert "no import format reads this file" in message
    assert 'inspect needs a .eval file, a .json file starting {"version"' in message


# -- reading ----------------------------------------------------------------------------
def test_samples_become_responses_with_their_transcript(logs: Logs, tmp_path: Path) -> None:
    data = read_path(logs.eval_log, _mini_catalog(tmp_path))
    assert data.tasks == []  # both tasks are stored
    by_task = {r.task_id: r for r in data.responses}
    assert set(by_task) == {"M1", "M2"}
    from inspect_ai.log import read_eval_log

    log = read_eval_log(str(logs.eval_log))
    for tid, r in by_task.items():
        assert r.id == f"{tid}@{log.eval.eval_id}"
        assert r.model == "mockllm/model"
        assert r.text == ANSWERS[tid]
        transcript = r.answer["transcript"]
        assert [m["role"] for m in transcript] == ["user", "assistant", "tool", "assistant"]
        assert transcript[1]["tool_calls"] == [{"function": "lookup", "arguments": {"term": "x"}}]
        assert transcript[2]["function"] == "lookup"
        assert transcript[2]["content"] == "notes on x: see the attached file"
        assert transcript[-1]["content"] == ANSWERS[tid]


def test_per_criterion_scores_become_judge_verdicts(logs: Logs, tmp_path: Path) -> None:
    data = read_path(logs.eval_log, _mini_catalog(tmp_path))
    got = {(j.response_id.split("@")[0], j.criterion_id): j for j in data.judgments}
    assert {k: j.met for k, j in got.items()} == {
        ("M1", "c1"): True,
        ("M1", "c2"): False,
        ("M1", "c3"): False,
        ("M1", "c4"): True,
        ("M2", "c1"): True,  # ec50 is an auto criterion: graded from the answer
    }
    assert {(j.grader, j.grader_kind) for j in data.judgments} == {
        ("judge:rubric_verdicts", GraderKind.JUDGE)
    }
    assert any("overall (2 samples)" in n and "not per criterion" in n for n in data.notes)
    assert any("1 verdict on auto criteria left out" in n for n in data.notes)


def test_a_json_log_of_two_epochs_gives_a_response_per_epoch(logs: Logs, tmp_path: Path) -> None:
    data = read_path(logs.json_log, _mini_catalog(tmp_path))
    assert sorted(r.id.split("@")[0] + r.id[-2:] for r in data.responses) == [
        "M1#1",
        "M1#2",
        "M2#1",
        "M2#2",
    ]
    assert len(data.judgments) == 2 * 5


def test_gradercals_exported_judge_gives_its_criterion_verdicts(logs: Logs, tmp_path: Path) -> None:
    from inspect_ai.log import read_eval_log

    data = read_path(logs.judged, _mini_catalog(tmp_path))
    assert data.tasks == [] and data.responses == []  # the stored responses, replayed
    expected = {}
    for s in read_eval_log(str(logs.judged)).samples or []:
        (score,) = (s.scores or {}).values()
        for c in (score.metadata or {})["criteria"]:
            expected[(str(s.id), c["id"])] = (c["met"], c["explanation"])
    assert len(expected) == 2 * 4 + 2 * 1  # M1: 4 criteria judged, M2: 1 (and 2 auto)
    got = {(j.response_id, j.criterion_id): (j.met, j.rationale) for j in data.judgments}
    assert got == expected
    assert {j.grader for j in data.judgments} == {"judge:mockllm/model"}
    # the keyword judge: M1-a names the stop codon and re-sequencing, M1-b neither
    assert got[("M1-a", "c1")][0] is True and got[("M1-b", "c1")][0] is False


def test_a_judge_log_into_an_empty_database_makes_its_tasks(logs: Logs, tmp_path: Path) -> None:
    data = read_path(logs.judged)
    assert {t.id for t in data.tasks} == {"M1", "M2"}
    mini = {t["id"]: t for t in read_jsonl(DATA / "mini" / "tasks.jsonl")}
    for t in data.tasks:
        assert t.prompt == mini[t.id]["prompt"]
        assert [c.id for c in t.criteria] == [c["id"] for c in mini[t.id]["rubric"]]
    m2 = next(t for t in data.tasks if t.id == "M2")
    assert m2.criterion("ec50").auto is not None and m2.criterion("ec50").auto.rel_tol == 0.2
    assert next(t for t in data.tasks if t.id == "M1").criterion("c4").levels == 3
    stored = {r["id"]: r for r in read_jsonl(DATA / "mini" / "responses.jsonl")}
    for r in data.responses:
        assert (r.task_id, r.model, r.text) == tuple(
            stored[r.id][k] for k in ("task_id", "model", "text")
        )
        assert r.answer == stored[r.id].get("answer")


# -- problems ---------------------------------------------------------------------------
def test_a_sample_without_a_task_or_rubric_is_a_named_problem(logs: Logs) -> None:
    with pytest.raises(ValidationError) as info:
        read_path(logs.eval_log)  # nothing stored: no task M1 or M2
    *problems, hint = str(info.value).splitlines()
    assert hint.startswith("(read as inspect: Inspect AI eval logs")  # the format that took it
    lines = sorted(problems)
    assert len(lines) == 2
    assert lines[0].startswith(f"{logs.eval_log.name}: sample 'M1': its task 'M1'")
    assert lines[1].startswith(f"{logs.eval_log.name}: sample 'M2': its task 'M2'")
    assert all("no metadata.rubric to make the task from" in line for line in lines)


def test_broken_logs_are_named_problems_and_change_nothing(logs: Logs, tmp_path: Path) -> None:
    db = _mini_db(tmp_path / "mini.sqlite")
    before = fingerprint(db)
    bad_zip = tmp_path / "broken.eval"
    bad_zip.write_bytes(b"not a zip archive")
    cut = tmp_path / "cut.json"
    cut.write_bytes(logs.json_log.read_bytes()[:3000])
    for path, why in ((bad_zip, "a .eval log is a zip archive"), (cut, "")):
        res = CliRunner().invoke(main, ["import", str(path), "--db", db])
        assert res.exit_code == 1
        assert f"{path.name}: not a readable Inspect AI log: {why}" in res.output
    folder = tmp_path / "logs"
    shutil.copytree(logs.folder, folder)
    shutil.copy(bad_zip, folder / "broken.eval")
    res = CliRunner().invoke(main, ["import", str(folder), "--db", db])
    assert res.exit_code == 1 and "broken.eval: not a readable Inspect AI log" in res.output
    res = CliRunner().invoke(main, ["import", str(logs.eval_log), "--db", str(tmp_path / "x.db")])
    assert res.exit_code == 1 and "sample 'M1'" in res.output
    assert fingerprint(db) == before


def test_without_inspect_ai_the_import_says_what_to_install(
    logs: Logs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "inspect_ai.log", None)  # `import inspect_ai.log` fails
    with pytest.raises(GradercalError, match=r"pip install 'gradercal\[inspect\]'"):
        check_ready(recognise(logs.eval_log))
    with pytest.raises(ValidationError, match=r"pip install 'gradercal\[inspect\]'"):
        read_path(logs.folder)
    db = tmp_path / "new.sqlite"
    res = CliRunner().invoke(main, ["import", str(logs.eval_log), "--db", str(db)])
    assert res.exit_code == 1
    assert len(res.output.strip().splitlines()) == 1 and INSTALL_HINT in res.output
    assert not db.exists()  # said before any database is made


def test_reading_formats_does_not_import_inspect_ai() -> None:
    code = "import sys, gradercal.formats, gradercal.cli.data; print('inspect_ai' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# -- the command line, end to end -------------------------------------------------------
def test_import_shows_the_responses_and_verdicts_in_export_and_scores(
    logs: Logs, tmp_path: Path
) -> None:
    db = _mini_db(tmp_path / "mini.sqlite")
    res = CliRunner().invoke(main, ["import", str(logs.folder), "--db", db])
    assert res.exit_code == 0, res.output
    assert "0 tasks" in res.output and "6 responses" in res.output and "15 judgments" in res.output
    assert "new graders: judge:rubric_verdicts" in res.output
    assert "note: scores of whole samples are not per criterion" in res.output
    again = CliRunner().invoke(main, ["import", str(logs.folder), "--db", db])
    assert again.exit_code == 0 and "nothing new" in again.output

    out = CliRunner().invoke(main, ["export", "responses", "-o", "-", "--db", db])
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    imported = [r for r in rows if "@" in r["id"]]
    assert len(imported) == 6 and {r["model"] for r in imported} == {"mockllm/model"}
    assert all(r["answer"]["transcript"][1]["tool_calls"] for r in imported)
    out = CliRunner().invoke(main, ["export", "judgments", "-o", "-", "--db", db])
    verdicts = [json.loads(line) for line in out.stdout.splitlines()]
    mine = [v for v in verdicts if v["grader"] == "judge:rubric_verdicts"]
    assert len(mine) == 15 and {v["grader_kind"] for v in mine} == {"judge"}
    scores = _cli("scores", "--db", db, "--grader", "judge:rubric_verdicts")
    assert {m["model"]: m["n_scored"] for m in scores["models"]}["mockllm/model"] == 6


def test_import_of_a_judge_log_adds_verdicts_to_the_stored_responses(
    logs: Logs, tmp_path: Path
) -> None:
    db = _mini_db(tmp_path / "mini.sqlite")
    report = _cli("import", str(logs.judged), "--db", db)
    assert report["responses_added"] == 0 and report["judgments_added"] == 10
    assert report["graders_added"] == ["judge:mockllm/model"]
    fresh = _cli("import", str(logs.judged), "--db", str(tmp_path / "fresh.sqlite"))
    assert fresh["benchmark"] == "gradercal-grading" and fresh["benchmark_created"]
    assert (fresh["tasks_added"], fresh["responses_added"]) == (2, 4)


def test_samples_that_ended_in_an_error_are_left_out_and_said(tmp_path: Path) -> None:
    from inspect_ai import Task
    from inspect_ai import eval as inspect_eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput, get_model
    from inspect_ai.solver import generate

    def answer(messages: list[Any], *_args: Any) -> Any:
        if "dose-response" in messages[-1].text:
            raise RuntimeError("the model fell over")
        return _offline(ModelOutput.from_content("mockllm/model", ANSWERS["M1"]))

    tasks = {t["id"]: t["prompt"] for t in read_jsonl(DATA / "mini" / "tasks.jsonl")}
    model = get_model("mockllm/model", custom_outputs=answer, memoize=False)
    task = Task(
        dataset=[Sample(id=tid, input=prompt, target="") for tid, prompt in tasks.items()],
        solver=generate(),
        name="mini_check",
    )
    (log,) = inspect_eval(
        task, model=model, log_dir=str(tmp_path / "logs"), display="none", fail_on_error=False
    )
    assert {str(s.id) for s in log.samples or [] if s.error is not None} == {"M2"}
    data = read_path(Path(log.location), _mini_catalog(tmp_path))
    assert [r.task_id for r in data.responses] == ["M1"]
    assert "1 sample that ended in an error left out" in data.notes


# -- hostile archives ---------------------------------------------------------------------------
def _with_member(log: Path, dest: Path, name: str, chunks: Any, level: int = 6) -> Path:
    """A copy of the ``.eval`` log ``log`` with one more member written from ``chunks``."""
    shutil.copy(log, dest)
    with (
        zipfile.ZipFile(dest, "a", zipfile.ZIP_DEFLATED, compresslevel=level) as z,
        z.open(name, "w") as member,
    ):
        for chunk in chunks:
            member.write(chunk)
    return dest


def _import_fails_fast(path: Path, db: str, *expected: str) -> str:
    # CPU time of this process (the import runs in it): what the refusal costs, which a
    # loaded machine does not stretch as it stretches the wall clock
    start = time.process_time()
    res = CliRunner().invoke(main, ["import", str(path), "--db", db])
    elapsed = time.process_time() - start
    assert res.exit_code == 1, res.output
    assert "Traceback" not in res.output
    for text in expected:
        assert text in res.output, res.output
    assert elapsed < 10, elapsed
    return res.output


def test_a_zip_bomb_is_refused_from_its_directory(logs: Logs, tmp_path: Path) -> None:
    """A 300 MiB member of zeros (0.3 MB compressed): refused by name before anything is
    decompressed (the directory check), quickly and with nothing imported."""
    db = _mini_db(tmp_path / "mini.sqlite")
    before = fingerprint(db)
    bomb = _with_member(
        logs.eval_log, tmp_path / "bomb.eval", "samples/bomb_epoch_1.json",
        (b"\0" * 2**20 for _ in range(300)),
    )  # fmt: skip
    assert bomb.stat().st_size < 2 * 2**20
    _import_fails_fast(
        bomb, db, "bomb.eval: not a readable Inspect AI log: member 'samples/bomb_epoch_1.json'",
        "would decompress to 300 MiB, over the 256 MiB",
    )  # fmt: skip
    assert fingerprint(db) == before


def test_a_member_compressed_like_a_bomb_is_refused(logs: Logs, tmp_path: Path) -> None:
    db = _mini_db(tmp_path / "mini.sqlite")
    bomb = _with_member(
        logs.eval_log, tmp_path / "small-bomb.eval", "samples/x.json", [b"\0" * 8 * 2**20]
    )
    _import_fails_fast(
        bomb, db, "small-bomb.eval: not a readable Inspect AI log: member 'samples/x.json' is "
        "compressed", "over the 200× an Inspect log reaches",
    )  # fmt: skip


def _lie_about_size(path: Path, name: str, size: int) -> None:
    """Rewrite the uncompressed size of member ``name`` in the zip's central directory and
    in its local header (the data stay as they are)."""
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as z:
        info = z.getinfo(name)
    encoded = name.encode()
    central = data.rfind(b"PK\x01\x02", 0, data.rfind(encoded))
    assert central > 0
    data[central + 24 : central + 28] = struct.pack("<I", size)
    local = info.header_offset
    data[local + 22 : local + 26] = struct.pack("<I", size)
    path.write_bytes(bytes(data))


def test_a_member_whose_directory_lies_is_refused_by_name(logs: Logs, tmp_path: Path) -> None:
    """The directory says 1,000 bytes, the data inflate to 64 MiB: the stream stops at the
    size the directory gave and the member is refused (its data do not match), without
    inflating the rest."""
    db = _mini_db(tmp_path / "mini.sqlite")
    liar = _with_member(
        logs.eval_log, tmp_path / "liar.eval", "samples/liar.json",
        (b"\0" * 2**20 for _ in range(64)),
    )  # fmt: skip
    _lie_about_size(liar, "samples/liar.json", 1000)
    with zipfile.ZipFile(liar) as z:
        assert z.getinfo("samples/liar.json").file_size == 1000
    _import_fails_fast(
        liar, db, "liar.eval: not a readable Inspect AI log: member 'samples/liar.json'"
    )
