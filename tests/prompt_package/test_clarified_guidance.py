"""Answered clarifications feed the prompt package's guidance: answers first, marked
``Clarified:``, then the raw unclear notes; in the database-built package on both
backends, valid against the shipped schema."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

from gradercal.db.clarifications import answer, ask
from gradercal.db.session import open_database
from gradercal.prompt_package import ExpertNote, distill_guidance, guidance_option, load_schema
from tests.conftest import DatabaseTemplates
from tests.prompt_package.test_prompt_package import build_demo, export

ANSWER = "One error in total: one missing or one extra residue, not one of each."


def _note(source: str, resp: str, who: str, text: str) -> ExpertNote:
    return ExpertNote(source, "T1", "c1", resp, "Lists the residues", ("k",), who, text)  # type: ignore[arg-type]


def test_answers_come_first_then_the_raw_notes() -> None:
    notes = [
        _note("unclear", "r1", "ana", "One error in total, or one of each?"),
        _note("unclear", "r2", "ben", "one error in total, or one of each? "),
        _note("unclear", "r3", "cy", "Do waters count?"),
        _note("clarification", "", "chair", ANSWER),
    ]
    g = distill_guidance(notes)
    [c1] = g["criteria"]
    assert (c1["n_clarifications"], c1["n_unclear"], c1["n_adjudication_notes"]) == (1, 3, 0)
    assert [(n["text"], n["sources"], n["n_responses"]) for n in c1["notes"]] == [
        (ANSWER, ["clarification"], 0),
        ("One error in total, or one of each?", ["unclear"], 2),
        ("Do waters count?", ["unclear"], 1),
    ]
    assert guidance_option(g)["criteria"] == {
        "Lists the residues": [
            f"Clarified: {ANSWER}",
            "One error in total, or one of each? (noted 2×)",
            "Do waters count?",
        ]
    }
    # without a clarification nothing changes: the raw notes, most frequent first
    plain = distill_guidance(notes[:3])
    assert plain["criteria"][0]["n_clarifications"] == 0
    assert guidance_option(plain)["criteria"]["Lists the residues"][0].endswith("(noted 2×)")


def test_the_exported_package_carries_the_answer(
    db_url: str, db_templates: DatabaseTemplates, tmp_path: Path
) -> None:
    url = db_templates.fill(db_url, "prompt-package demo", build_demo)
    db = open_database(url)
    try:
        # T05/c1 has a raw unclear note in the demo; T02/c1 has none
        for task in ("T05", "T02"):
            thread = ask(db, None, task, "c1", "Which reading?", actor="ana")
            answer(db, thread.id, f"{task}: {ANSWER}", actor="chair")
        unanswered = ask(db, None, "T03", "c1", "Not answered yet", actor="ana")
        assert unanswered.status == "open"
    finally:
        db.dispose()
    out = tmp_path / "judge.json"
    export(url, out)
    data = json.loads(out.read_text("utf-8"))
    jsonschema.Draft202012Validator(load_schema()).validate(data)
    crits = {f"{c['task_id']}/{c['criterion_id']}": c for c in data["guidance"]["criteria"]}
    t05 = crits["T05/c1"]
    assert (t05["n_clarifications"], t05["n_unclear"]) == (1, 1)
    assert t05["notes"][0]["text"] == f"T05: {ANSWER}"
    assert t05["notes"][0]["authors"] == ["chair"]
    assert t05["notes"][1]["sources"] == ["unclear"]
    assert [n["text"] for n in crits["T02/c1"]["notes"]] == [f"T02: {ANSWER}"]
    assert "T03/c1" not in crits  # a question without an answer is not guidance
    sent = data["prompt"]["options"]["guidance"]["criteria"]
    t05_lines = sent[t05["criterion"]]
    assert t05_lines[0] == f"Clarified: T05: {ANSWER}"
    assert t05_lines[1].startswith("Does 'at most one missing or extra residue' mean")
    assert not any(line.startswith("Clarified:") for line in t05_lines[1:])
