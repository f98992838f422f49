"""The calibrated judge-prompt package: export, schema, examples, guidance, import, re-run.

Runs on the demo benchmark (three experts and an imported judge) after adjudicating its
disagreements through the repository, on SQLite and PostgreSQL; the re-run of the
judge with the imported prompt goes through the real loopback server of
``tests/support/judge_server.py``.
"""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from click.testing import CliRunner, Result

from gradercal._util.jsonsafe import json_safe as _plain
from gradercal.analysis.calibration import fit_calibration
from gradercal.analysis.verdicts import verdicts
from gradercal.cli import main
from gradercal.db.calibrations import save_calibration
from gradercal.db.grading import GradingStore
from gradercal.db.judging import JudgeStore
from gradercal.db.prompt_sources import gather, import_package
from gradercal.db.repo import Repository
from gradercal.db.session import open_database
from gradercal.errors import ValidationError
from gradercal.formats import read_folder
from gradercal.judge.prompts import (
    DEFAULT_PROMPT,
    DEFAULT_SYSTEM,
    DEFAULT_USER,
    PromptContext,
    PromptTemplate,
)
from gradercal.model import stable_hash
from gradercal.prompt_package import (
    NO_HOLDOUT_NOTE,
    AdjudicatedItem,
    ExpertNote,
    agreement_card,
    build_package,
    distill_guidance,
    load_schema,
    package_from_dict,
    select_examples,
    split_tasks,
    to_json,
    to_markdown,
    to_promptfoo,
    validate_package,
)
from tests.conftest import DEMO, ROOT, DatabaseTemplates, fingerprint
from tests.support.judge_server import JudgeServer, ServerConfig, split_prompt

JUDGE = "judge-gpt"
EXPERTS = ("expert-ana", "expert-ben", "expert-chloe")
#: adjudicator notes: the same clarification twice with other spacing and case
NOTE_A = "Count a dose range as stated only when the units are given."
NOTE_A_VARIANT = "count a dose range  as stated only when the units are given. "


def cli(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


# ---------------------------------------------------------------------------- fixtures


def adjudicate_demo(db_url: str) -> list[tuple[str, str, bool]]:
    """Adjudicate every disagreement of the demo (experts split, or judge vs majority).

    The final verdict is the experts' majority; items the judge got wrong get a note,
    two of them the same note in two spellings. Returns (response, criterion, met).
    """
    db = open_database(db_url)
    try:
        repo = Repository(db)
        v = verdicts(repo.load_frames())
        human = v.loc[v["grader"].isin(EXPERTS)]
        agg = human.groupby(["response_id", "criterion_id"])["met"].agg(["sum", "count"])
        judge = v.loc[v["grader"] == JUDGE].set_index(["response_id", "criterion_id"])["met"]
        done = []
        noted = 0
        for (rid, cid), row in agg.iterrows():
            majority = bool(row["sum"] * 2 > row["count"])
            split = 0 < row["sum"] < row["count"]
            jm = judge.get((rid, cid))
            wrong = jm is not None and bool(jm) != majority
            if not (split or wrong):
                continue
            note = None
            if wrong:
                note = NOTE_A if noted % 2 == 0 else NOTE_A_VARIANT
                noted += 1
                if noted > 2:
                    note = f"Final verdict on {cid}: {'met' if majority else 'not met'}."
            repo.adjudicate(None, rid, cid, met=majority, adjudicator="lead", note=note)
            done.append((rid, cid, majority))
        return done
    finally:
        db.dispose()


def calibrate(db_url: str, holdout: float = 0.3, *, legacy: bool = False) -> dict[str, Any]:
    """Fit and save a threshold calibration; ``legacy`` saves it in the shape calibrations
    had before held-out splits (no ``held_out``/``holdout``/``seed``, no test metrics)."""
    db = open_database(db_url)
    try:
        repo = Repository(db)
        res = fit_calibration(
            repo.load_frames(), JUDGE, "threshold", n_boot=30, seed=1, holdout=holdout
        )
        split, metrics = _plain(res.split), _plain(res.metrics)
        if legacy:
            split = {k: v for k, v in split.items() if k not in ("held_out", "holdout", "seed")}
            del metrics["test"]
        saved = save_calibration(
            repo,
            None,
            JUDGE,
            "threshold",
            params=_plain(res.params),
            split=split,
            metrics=metrics,
            provenance=_plain(res.provenance),
        )
        return saved.to_dict(full=True)
    finally:
        db.dispose()


def build_demo(db_url: str) -> None:
    """The demo imported, its disagreements adjudicated."""
    db = open_database(db_url)
    try:
        Repository(db).import_data(read_folder(DEMO))
    finally:
        db.dispose()
    adjudicate_demo(db_url)


def build_calibrated(db_url: str) -> None:
    """``build_demo`` with a threshold calibration fitted and saved."""
    build_demo(db_url)
    calibrate(db_url)


# Built once per session and backend, then copied into each test's own database.
@pytest.fixture
def demo_db(db_url: str, db_templates: DatabaseTemplates) -> str:
    return db_templates.fill(db_url, "prompt-package demo", build_demo)


@pytest.fixture
def calibrated_db(db_url: str, db_templates: DatabaseTemplates) -> str:
    return db_templates.fill(db_url, "prompt-package demo calibrated", build_calibrated)


def export(db_url: str, out: Path, *extra: str) -> dict[str, Any]:
    result = cli(
        "export-prompt", "--db", db_url, "--judge", JUDGE, "--n-boot", "30", "-o", str(out),
        "--json", *extra,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    summary: dict[str, Any] = json.loads(result.stdout)
    return summary


def _package_json(db_url: str, tmp_path: Path) -> dict[str, Any]:
    out = tmp_path / "package.json"
    export(db_url, out)
    data: dict[str, Any] = json.loads(out.read_text("utf-8"))
    return data


# ------------------------------------------------------------------- schema and JSON


def test_shipped_schema_is_the_documented_one() -> None:
    docs = json.loads((ROOT / "docs" / "prompt-package.schema.json").read_text("utf-8"))
    shipped = (ROOT / "gradercal" / "schemas" / "prompt-package.schema.json").read_bytes()
    assert (ROOT / "docs" / "prompt-package.schema.json").read_bytes() == shipped
    assert load_schema() == docs
    jsonschema.Draft202012Validator.check_schema(docs)


def test_exported_json_validates_and_reads_back(calibrated_db: str, tmp_path: Path) -> None:
    out = tmp_path / "judge.json"
    summary = export(calibrated_db, out)
    data = json.loads(out.read_text("utf-8"))
    jsonschema.Draft202012Validator(load_schema()).validate(data)  # independent of our reader
    assert data["format_version"] == 1
    assert data["prompt_version"] == summary["prompt_version"]
    # the prompt version is the sha256 of the canonical JSON of what the model is sent
    content = {k: data["prompt"][k] for k in ("system", "user", "few_shot", "options")}
    assert data["prompt_version"] == stable_hash(content)
    package = package_from_dict(data)
    assert package.prompt_version == data["prompt_version"]
    assert to_json(package) == out.read_text("utf-8")  # canonical: a fixed point
    # decision rule and held-out card come from the saved (active) calibration
    assert data["decision"]["rule"] == "threshold"
    assert 0 <= data["decision"]["params"]["threshold"] <= 1
    held = data["card"]["held_out"]
    kappa = held["criterion"]["raw"]["cohen_kappa"]
    assert kappa["ci"][0] <= kappa["value"] <= kappa["ci"][1]
    assert data["card"]["alt_test"]["n_humans"] == 3
    prov = data["card"]["provenance"]
    assert prov["experts"] == list(EXPERTS)
    assert prov["counts"]["adjudications"] > 0 and prov["counts"]["unclear_flags"] == 2
    assert len(prov["date_range"]) == 2
    # guidance: both unclear notes of the demo, and the adjudication notes
    crits = {f"{c['task_id']}/{c['criterion_id']}": c for c in data["guidance"]["criteria"]}
    assert crits["T05/c1"]["n_unclear"] == 1 and crits["T08/c6"]["n_unclear"] == 1
    assert "{{guidance}}" in data["prompt"]["user"]


def test_agreement_card_matches_the_agreement_engine(calibrated_db: str) -> None:
    from gradercal.analysis.agreement import judge_agreement

    db = open_database(calibrated_db)
    try:
        src = gather(db, None, JUDGE)
    finally:
        db.dispose()
    card = agreement_card(src.frames, JUDGE, src.calibration, n_boot=0)
    ja = judge_agreement(src.frames, JUDGE, list(EXPERTS), n_boot=0)
    assert card["all_data"]["metrics"]["cohen_kappa"]["value"] == pytest.approx(
        ja.headline.metrics["cohen_kappa"].value
    )
    lo, hi = ja.human_range["cohen_kappa"]  # type: ignore[misc]
    assert card["expert_range"]["cohen_kappa"]["experts"] == pytest.approx([lo, hi])
    # the held-out figures are the calibration's test figures on its held-out tasks
    assert src.calibration is not None
    test = src.calibration["metrics"]["test"]
    held = card["held_out"]
    assert held["kind"] == "held_out_tasks" and held["examples_may_overlap"] is False
    for side, tag in (("raw", "before"), ("calibrated", "after")):
        for k in ("cohen_kappa", "percent_agreement", "balanced_f1", "leniency_bias"):
            assert held["criterion"][side][k] == test["criterion"][tag][k]
        for k in ("mean_score_bias", "mae", "pass_kappa"):
            assert held["response"][side][k] == test["response"][tag][k]
    assert card["leniency"]["held_out_raw"] == test["criterion"]["before"]["leniency_bias"]
    assert (held["n_tasks"], held["n_items"]) == (test["n_tasks"], test["n_items"])
    # the out-of-fold figures of the calibration tasks come along, labelled as such
    oof = src.calibration["metrics"]["criterion"]
    assert (
        held["out_of_fold"]["criterion"]["calibrated"]["cohen_kappa"]
        == (oof["after"]["cohen_kappa"])
    )
    # the split is named: which tasks are held out, how many on each side
    tasks = src.calibration["split"]["held_out"]
    assert len(tasks) == 3  # ceil(0.3 · 10)
    assert held["split"]["held_out_tasks"] == tasks
    prov = card["provenance"]["split"]
    assert prov["held_out_tasks"] == tasks and prov["n_held_out_tasks"] == 3
    assert prov["n_calibration_tasks"] == 7 and prov["kind"] == "held_out_tasks"
    assert not any("holds no task out" in n for n in card["notes"])


# ----------------------------------------------------------------------- examples


def test_examples_come_only_from_the_calibration_split(demo_db: str, tmp_path: Path) -> None:
    # a real held-out split: `gradercal calibrate --holdout` on the adjudicated demo
    result = cli(
        "calibrate", "--db", demo_db, "--judge", JUDGE, "--holdout", "0.4", "--seed", "5",
        "--bootstrap", "30", "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    cal = json.loads(result.stdout)
    held, calib = cal["split"]["held_out"], sorted(cal["split"]["folds"])
    assert len(held) == 4 and not set(held) & set(calib)
    out = tmp_path / "judge.json"
    summary = export(demo_db, out, "--examples", "8", "--seed", "3")
    data = json.loads(out.read_text("utf-8"))
    assert summary["held_out"] == "held_out_tasks" and summary["held_out_tasks"] == held
    used = {e["task_id"] for e in data["examples"]}
    assert used and used <= set(calib) and not used & set(held)
    assert data["example_pool"]["held_out_tasks"] == held
    assert data["example_pool"]["calibration_tasks"] == calib
    assert summary["examples"] == 8 and summary["examples_met"] == 4  # balanced
    db = open_database(demo_db)
    try:
        src = gather(db, None, JUDGE)
    finally:
        db.dispose()
    # held-out adjudication notes stay out of the guidance; unclear notes stay in
    held_notes = [n for n in src.notes if n.source == "adjudication" and n.task_id in held]
    assert held_notes  # the check below has something to leave out
    assert data["example_pool"]["adjudication_notes_left_out"] == len(held_notes)
    guided = {c["task_id"] for c in data["guidance"]["criteria"] if c["n_adjudication_notes"]}
    assert guided and guided <= set(calib)
    assert any(c["task_id"] == "T08" and c["n_unclear"] for c in data["guidance"]["criteria"])
    # the per-tag counts are those of the calibration tasks' adjudications only
    expected: dict[str, int] = {}
    for a in src.adjudicated:
        if a.task_id in calib and a.judge_met is not None:
            for tag in set(a.tags):
                expected[tag] = expected.get(tag, 0) + 1
    assert {t["tag"]: t["n_adjudicated"] for t in data["guidance"]["tags"]} == expected
    # the card's held-out figures are the test figures on exactly those tasks
    card = data["card"]
    assert card["held_out"]["kind"] == "held_out_tasks"
    assert card["held_out"]["split"]["held_out_tasks"] == held
    assert card["provenance"]["split"]["n_held_out_tasks"] == 4
    test = cal["metrics"]["test"]["criterion"]
    assert (
        card["held_out"]["criterion"]["calibrated"]["cohen_kappa"] == (test["after"]["cohen_kappa"])
    )
    assert not any("holds no task out" in w for w in data["warnings"])
    # the few-shot messages are those items: criterion and verdict match the adjudication
    final = {(a.response_id, a.criterion_id): a for a in src.adjudicated}
    for ex, shot in zip(data["examples"], data["prompt"]["few_shot"], strict=True):
        item = final[(ex["response_id"], ex["criterion_id"])]
        assert shot["criteria_met"] is item.met is ex["criteria_met"]
        assert shot["criterion"] == item.criterion and shot["response"] == item.response
    # deterministic for a seed
    again = tmp_path / "again.json"
    export(demo_db, again, "--examples", "8", "--seed", "3")
    assert json.loads(again.read_text("utf-8"))["examples"] == data["examples"]


def test_calibration_without_held_out_tasks_says_so(demo_db: str, tmp_path: Path) -> None:
    # a calibration saved before held-out splits existed
    saved = calibrate(demo_db, 0.0, legacy=True)
    assert "held_out" not in saved["split"] and "test" not in saved["metrics"]
    out = tmp_path / "judge.json"
    result = cli(
        "export-prompt", "--db", demo_db, "--judge", JUDGE, "--n-boot", "0", "-o", str(out)
    )
    assert result.exit_code == 0, result.output
    assert "warning: the calibration holds no task out" in result.stderr
    assert "gradercal calibrate --judge NAME --holdout 0.25" in result.stderr
    data = json.loads(out.read_text("utf-8"))
    validate_package(data)
    held = data["card"]["held_out"]
    assert held["kind"] == "out_of_fold" and held["examples_may_overlap"] is True
    assert held["split"]["n_held_out_tasks"] == 0 and held["n_tasks"] == 10
    oof = saved["metrics"]["criterion"]
    assert held["criterion"]["raw"]["cohen_kappa"] == oof["before"]["cohen_kappa"]
    assert NO_HOLDOUT_NOTE in data["card"]["notes"] and NO_HOLDOUT_NOTE in data["warnings"]
    # examples may come from any task of the folds — the overlap the card warns about
    assert {e["task_id"] for e in data["examples"]} <= set(saved["split"]["folds"])
    # the same with a new calibration fitted with --holdout 0, in Markdown
    r = cli("calibrate", "--db", demo_db, "--judge", JUDGE, "--holdout", "0", "--bootstrap", "0")
    assert r.exit_code == 0, r.output
    md = tmp_path / "judge.md"
    result = cli(
        "export-prompt", "--db", demo_db, "--judge", JUDGE, "--n-boot", "0", "--format",
        "markdown", "-o", str(md),
    )  # fmt: skip
    assert "warning: the calibration holds no task out" in result.stderr
    text = md.read_text("utf-8")
    assert "### Out-of-fold agreement with the experts" in text
    assert "**No task was held out**" in text and "--holdout 0.25" in text


def _item(i: int, task: str, met: bool, tags: tuple[str, ...], judge: bool | None) -> Any:
    return AdjudicatedItem(
        task_id=task,
        response_id=f"{task}-r{i}",
        criterion_id=f"c{i}",
        criterion=f"criterion {i}",
        points=5,
        tags=tags,
        task_prompt="p",
        response=f"response {i}",
        met=met,
        experts={"a": met, "b": not met},
        judge_met=judge,
    )


def test_select_examples_is_balanced_diverse_and_never_held_out() -> None:
    rng = random.Random(7)
    tags = [f"axis:{x}" for x in "abcdef"]
    for trial in range(200):
        items = [
            _item(
                i,
                f"T{rng.randrange(12)}",
                rng.random() < rng.choice([0.2, 0.5, 0.8]),
                tuple(rng.sample(tags, rng.randrange(0, 3))),
                rng.choice([True, False, None]),
            )
            for i in range(rng.randrange(0, 40))
        ]
        allowed = {f"T{k}" for k in range(12) if rng.random() < 0.6}
        n = rng.randrange(0, 12)
        got = select_examples(items, n, seed=trial, allowed_tasks=allowed)
        assert got == select_examples(list(reversed(items)), n, seed=trial, allowed_tasks=allowed)
        assert all(a.task_id in allowed for a in got)
        n_met = sum(a.met for a in got)
        n_not = len(got) - n_met
        assert len(got) <= n and abs(n_met - n_not) <= 1
        pool = [a for a in items if a.task_id in allowed]
        avail = {v: sum(a.met is v for a in pool) for v in (True, False)}
        # as many as balance allows: min(n, 2·scarcer + (1 if the richer has one to spare))
        scarce = min(avail.values())
        best = min(
            n, 2 * min(scarce, n // 2) + (1 if max(avail.values()) > min(scarce, n // 2) else 0)
        )
        assert len(got) == best, (n, avail, len(got))
    # diversity: with one candidate per tag in each class, 4 picks cover 4 different tags
    items = [_item(i, f"T{i}", i % 2 == 0, (tags[i // 2],), None) for i in range(12)]
    got = select_examples(items, 4, seed=0)
    assert len({a.tags[0] for a in got}) == 4


def test_split_tasks_reads_folds_and_held_out() -> None:
    split = {"folds": {"A": 0, "B": 1, "C": 2, "D": 2}, "held_out": ["B"], "held_out_folds": [2]}
    calib, held = split_tasks(split)
    assert calib == {"A"} and held == {"B", "C", "D"}
    assert split_tasks(None) == (frozenset(), frozenset())


# ----------------------------------------------------------------------- guidance


def test_distill_guidance_groups_dedupes_counts_and_derives_tag_rules() -> None:
    def note(src: str, crit: str, resp: str, who: str, text: str) -> ExpertNote:
        return ExpertNote(src, "T1", crit, resp, f"criterion {crit}", ("axis:x",), who, text)  # type: ignore[arg-type]

    notes = [
        note("unclear", "c1", "r1", "ana", "Does  it count units?"),
        note("unclear", "c1", "r2", "ben", "does it count units? "),
        note("adjudication", "c1", "r3", "lead", "Units must be stated."),
        note("unclear", "c2", "r1", "ana", "   "),  # empty: ignored
    ]
    # judge said met, experts not met, on 3 of 4 adjudicated axis:x items: a lenient rule
    adj = [_item(i, "T1", False, ("axis:x",), True) for i in range(3)]
    adj.append(_item(3, "T1", True, ("axis:x", "axis:y"), True))
    g = distill_guidance(notes, adj)
    assert [c["criterion_id"] for c in g["criteria"]] == ["c1"]
    c1 = g["criteria"][0]
    assert (c1["n_unclear"], c1["n_adjudication_notes"]) == (2, 1)
    first = c1["notes"][0]
    assert first["text"] == "Does it count units?" and first["count"] == 2
    assert first["authors"] == ["ana", "ben"] and first["n_responses"] == 2
    tag = {t["tag"]: t for t in g["tags"]}
    assert (tag["axis:x"]["judge_overruled_met"], tag["axis:x"]["n_adjudicated"]) == (3, 4)
    assert "3 of 4" in tag["axis:x"]["rules"][0] and tag["axis:y"]["rules"] == []
    assert "3 of 4" in g["general"][0]


def test_guidance_reaches_only_its_criterion() -> None:
    user = DEFAULT_USER + "\n<guidance>\n{{guidance}}\n</guidance>"
    p = PromptTemplate(
        DEFAULT_SYSTEM,
        user,
        options={"guidance": {"criteria": {"Names the  gene": ["Synonyms count."]},
                              "tags": {"axis:x": ["Be strict."]}}},
    )  # fmt: skip
    own = p.render(
        PromptContext(response="r", criterion="Names the gene", criterion_tags=("axis:x",))
    )
    other = p.render(PromptContext(response="r", criterion="Other", criterion_tags=("axis:y",)))
    assert "Synonyms count." in own[-1]["content"] and "Be strict." in own[-1]["content"]
    assert "Synonyms count." not in other[-1]["content"] and "(none)" in other[-1]["content"]
    assert p.content_hash != PromptTemplate(DEFAULT_SYSTEM, user).content_hash
    with pytest.raises(ValidationError, match="no template uses"):
        PromptTemplate(DEFAULT_SYSTEM, DEFAULT_USER, options={"guidance": {"general": ["x"]}})
    with pytest.raises(ValidationError, match="must be a list of text"):
        PromptTemplate(DEFAULT_SYSTEM, user, options={"guidance": {"general": "x"}})
    # prompts without guidance hash as before the option existed
    assert DEFAULT_PROMPT.content_hash == stable_hash(
        {"system": DEFAULT_SYSTEM, "user": DEFAULT_USER, "few_shot": [],
         "options": {"artifact_budget_tokens": 2000}}
    )  # fmt: skip


# ------------------------------------------------------------ import and re-run


def test_export_import_and_rerun_the_judge(
    calibrated_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "judge.json"
    summary = export(calibrated_db, out, "--examples", "4")
    digest = summary["prompt_version"]
    first = cli("import-prompt", str(out), "--db", calibrated_db, "--json")
    assert first.exit_code == 0, first.output
    got = json.loads(first.stdout)
    assert got["prompt_version"] == digest and got["created"] is True
    again = json.loads(cli("import-prompt", str(out), "--db", calibrated_db, "--json").stdout)
    assert again["created"] is False and again["id"] == got["id"]  # idempotent
    db = open_database(calibrated_db)
    try:
        stored = JudgeStore(db).load_prompt(digest[:12])
        assert stored.content_hash == digest and len(stored.few_shot) == 4
        assert stored.parent_hash == DEFAULT_PROMPT.content_hash  # the judge's base prompt
    finally:
        db.dispose()
    monkeypatch.setenv("GC_PP_KEY", "sk-test")
    with JudgeServer(ServerConfig()) as srv:
        result = cli(
            "judge", "run", "--db", calibrated_db, "--judge", "judge-v2", "--model",
            "gpt-4o-mini", "--base-url", srv.base_url, "--api-key-env", "GC_PP_KEY",
            "--prompt", digest[:12], "--scope", "tasks:T05,T08", "--json",
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        run = json.loads(result.stdout)
        assert run["prompt_version"] == digest and run["ok"] == run["items"] > 0
        bodies = list(srv.stats.bodies)
    # every request carried the system message, 4 few-shot pairs and the question
    assert all(len(b["messages"]) == 1 + 2 * 4 + 1 for b in bodies)
    # the demo's unclear note on T05/c1 reaches the requests about that criterion only
    data = json.loads(out.read_text("utf-8"))
    t05 = next(c for c in data["guidance"]["criteria"] if c["task_id"] == "T05")
    with_note = [
        b for b in bodies if split_prompt(b["messages"][-1]["content"])[1] == t05["criterion"]
    ]
    assert with_note
    assert all(t05["notes"][0]["text"] in b["messages"][-1]["content"] for b in with_note)
    others = [b for b in bodies if b not in with_note]
    assert others and not any(
        t05["notes"][0]["text"] in b["messages"][-1]["content"] for b in others
    )
    db = open_database(calibrated_db)
    try:
        info = JudgeStore(db).judge("judge-v2")
        assert info is not None and info.prompt_hash == digest
        frames = Repository(db).load_frames()
        assert (frames.judgments["grader"] == "judge-v2").sum() == run["ok"]
    finally:
        db.dispose()


def test_tampered_or_invalid_package_is_refused(calibrated_db: str, tmp_path: Path) -> None:
    out = tmp_path / "judge.json"
    export(calibrated_db, out)
    good = json.loads(out.read_text("utf-8"))
    before = fingerprint(calibrated_db)

    def refused(data: Any, *fragments: str) -> None:
        path = tmp_path / "bad.json"
        path.write_text(json.dumps(data) if not isinstance(data, str) else data, "utf-8")
        result = cli("import-prompt", str(path), "--db", calibrated_db)
        assert result.exit_code == 1
        for f in fragments:
            assert f in result.stderr, result.stderr
        assert fingerprint(calibrated_db) == before  # nothing written

    edited = json.loads(json.dumps(good))
    edited["prompt"]["user"] = edited["prompt"]["user"].replace("criterion", "criteria", 1)
    refused(edited, "$.prompt_version", "hash mismatch", "$.integrity.package_hash")
    card = json.loads(json.dumps(good))
    card["card"]["alt_test"]["passed"] = not card["card"]["alt_test"].get("passed")
    refused(card, "$.integrity.package_hash", "hash mismatch")
    wrong_type = json.loads(json.dumps(good))
    wrong_type["prompt"]["few_shot"] = [{"response": "r", "criterion": "c", "criteria_met": "yes"}]
    refused(wrong_type, "$.prompt.few_shot[0].criteria_met", "is not of type 'boolean'")
    future = dict(good, format_version=2)
    refused(future, "$.format_version")
    refused("{not json", "bad.json:1", "invalid JSON")


def test_import_into_another_database(calibrated_db: str, tmp_path: Path) -> None:
    out = tmp_path / "judge.json"
    export(calibrated_db, out)
    package = package_from_dict(json.loads(out.read_text("utf-8")))
    other = open_database(str(tmp_path / "other.sqlite"))
    try:
        res = import_package(other, package)
        assert res.created and res.content_hash == package.prompt_version
        # the shipped default is the parent: it is stored on first use, so it is linked
        assert res.parent_hash == DEFAULT_PROMPT.content_hash and not res.parent_missing
        assert import_package(other, package).created is False
    finally:
        other.dispose()


# ------------------------------------------------------------------- other forms


def test_markdown_holds_the_card(calibrated_db: str, tmp_path: Path) -> None:
    out = tmp_path / "judge.md"
    summary = export(calibrated_db, out, "--format", "markdown")
    text = out.read_text("utf-8")
    for heading in (
        "## Agreement card",
        "### Held-out agreement with the experts",
        "### Expert–expert range",
        "### Alternative annotator test",
        "### Leniency",
        "## Rubric guidance",
        "## Few-shot examples",
        "## System template",
    ):
        assert heading in text
    assert summary["prompt_version"] in text
    assert "Cohen's kappa" in text and "Does 'at most one missing or extra residue'" in text
    data = json.loads(
        cli(
            "calibrate",
            "--db",
            calibrated_db,
            "--judge",
            JUDGE,
            "--no-save",
            "--holdout",
            "0.3",
            "--seed",
            "1",
            "--bootstrap",
            "0",
            "--json",
        ).stdout
    )
    assert f"Held-out tasks: {', '.join(data['split']['held_out'])}." in text
    assert "For reference, out of fold on the 7 calibration tasks" in text


def test_promptfoo_export_is_a_config_an_assertion_and_tests(
    calibrated_db: str, tmp_path: Path
) -> None:
    out = tmp_path / "promptfooconfig.yaml"
    export(calibrated_db, out, "--format", "promptfoo", "--examples", "2", "--model", "m")
    config = yaml.safe_load(out.read_text("utf-8"))
    assert config["prompts"] == ["{{ sample.response }}"] and config["providers"] == ["echo"]
    (check,) = config["defaultTest"]["assert"]
    assert check["type"] == "python"
    assert check["value"] == "file://promptfooconfig_assert.py:get_assert"
    assert config["tests"] == "file://promptfooconfig_tests.json"
    tests = json.loads((tmp_path / "promptfooconfig_tests.json").read_text("utf-8"))
    db = open_database(calibrated_db)
    try:
        frames = Repository(db).load_frames()
    finally:
        db.dispose()
    assert len(tests) == len(frames.responses)
    # The whole rubric, auto criteria included, inside the one object variable.
    first = tests[0]["vars"]["sample"]
    rubric = frames.criteria.loc[frames.criteria["task_id"] == first["task_id"]]
    assert [c["id"] for c in first["rubric"]] == rubric.sort_values("position")[
        "criterion_id"
    ].tolist()
    assert any(c["auto"] for t in tests for c in t["vars"]["sample"]["rubric"])
    # The assertion is standalone gradercal code with the calibration embedded.
    source = (tmp_path / "promptfooconfig_assert.py").read_text("utf-8")
    assert "def rubric_score(" in source and "def get_assert(" in source
    assert "import gradercal" not in source and "from gradercal" not in source
    # Its decision is the saved calibration's (the file changes with the calibration).
    namespace: dict[str, Any] = {"__name__": "promptfooconfig_assert"}
    exec(compile(source, "promptfooconfig_assert.py", "exec", dont_inherit=True), namespace)
    assert namespace["_DECISION"]["rule"] == "threshold"
    assert namespace["_DECISION"]["params"]["threshold"] == pytest.approx(
        _package_json(calibrated_db, tmp_path)["decision"]["params"]["threshold"]
    )
    # No stdout form for three files.
    res = cli(
        "export-prompt", "--db", calibrated_db, "--judge", JUDGE, "--format", "promptfoo",
        "-o", "-", "--n-boot", "0",
    )  # fmt: skip
    assert res.exit_code == 1 and "three files" in res.output


def test_promptfoo_texts_reach_the_judge_as_written(tmp_path: Path) -> None:
    """Criterion and response texts with template syntax stay literal: they travel in an
    object variable that promptfoo does not render, and the assertion builds the
    messages itself."""
    from gradercal.prompt_package import to_promptfoo

    package = build_package(
        judge={"name": "j", "model": "m"},
        base_prompt=DEFAULT_PROMPT,
        benchmark="b",
        notes=[],
        adjudicated=[],
        calibration=None,
        card={"notes": []},
        pass_threshold=0.7,
        n_examples=0,
    )
    tricky = "Uses {{ dose }} and {% if unsafe %}warns{% endif %} {# note #}"
    sample = {
        "id": "r1",
        "input": "Task {{ x }}",
        "target": "",
        "metadata": {
            "task_id": "t1", "response_id": "r1", "model": "m", "response": tricky,
            "answer": None, "artifacts": "",
            "rubric": [{"id": "c1", "criterion": tricky, "points": 2, "tags": [], "levels": 2,
                        "auto": None}],
        },
    }  # fmt: skip
    files = to_promptfoo(package, [sample], stem="pf")
    tests = json.loads(files["pf_tests.json"])
    assert tests[0]["vars"]["sample"]["rubric"][0]["criterion"] == tricky
    assert "{{" not in yaml.safe_load(files["pf.yaml"])["description"]
    namespace: dict[str, Any] = {"__name__": "pf_assert"}
    exec(compile(files["pf_assert.py"], "pf_assert.py", "exec", dont_inherit=True), namespace)
    msgs = namespace["build_messages"](
        namespace["_PROMPT"],
        response=tricky,
        criterion=tricky,
        points=2,
        task_prompt="Task {{ x }}",
    )
    assert tricky in msgs[-1]["content"] and "Task {{ x }}" in msgs[-1]["content"]


def test_export_without_calibration_says_so(demo_db: str, tmp_path: Path) -> None:
    out = tmp_path / "judge.json"
    result = cli(
        "export-prompt", "--db", demo_db, "--judge", JUDGE, "--n-boot", "0", "-o", str(out)
    )
    assert result.exit_code == 0, result.output
    assert "warning: no calibration" in result.stderr
    data = json.loads(out.read_text("utf-8"))
    validate_package(data)
    assert data["decision"]["rule"] == "verdict" and data["card"]["held_out"] is None
    assert any("no calibration" in n for n in data["card"]["notes"])
    assert data["example_pool"]["calibration_tasks"] is None


def test_unknown_judge_and_human_are_refused(demo_db: str, tmp_path: Path) -> None:
    r = cli("export-prompt", "--db", demo_db, "--judge", "nobody", "-o", str(tmp_path / "x"))
    assert r.exit_code == 1 and "no judge named 'nobody'; judges: judge-gpt" in r.stderr
    r = cli("export-prompt", "--db", demo_db, "--judge", "expert-ana", "-o", str(tmp_path / "x"))
    assert r.exit_code == 1 and "is a human, not a judge" in r.stderr
    assert not (tmp_path / "x").exists()


def test_unclear_notes_saved_in_the_grading_app_become_guidance(demo_db: str) -> None:
    from gradercal.db.grading import JudgmentValue

    db = open_database(demo_db)
    try:
        store = GradingStore(db)
        store.create_grader("expert-dan")
        item = store.ensure_queue("expert-dan")[0]
        loaded = store.load_item("expert-dan", item.assignment_id)
        crit = next(c for c in loaded.task.criteria if c.auto is None)
        store.save_judgment(
            item.assignment_id,
            crit.id,
            JudgmentValue(True, None, None, True, "Is a paraphrase enough here?"),
        )
        src = gather(db, None, JUDGE)
    finally:
        db.dispose()
    package = build_package(
        judge=src.judge_dict(),
        base_prompt=src.base_prompt,
        benchmark=src.benchmark,
        notes=src.notes,
        adjudicated=src.adjudicated,
        calibration=None,
        card={"notes": []},
        pass_threshold=src.pass_threshold,
        n_examples=0,
    )
    texts = [n["text"] for c in package.guidance["criteria"] for n in c["notes"]]
    assert "Is a paraphrase enough here?" in texts
    assert "Is a paraphrase enough here?" in json.dumps(package.prompt.options["guidance"])
    assert "## Rubric guidance" in to_markdown(package)
    assert to_promptfoo(package)["gradercal_judge.yaml"].startswith("# promptfoo evaluation")


def test_export_does_not_import_the_openai_sdk(tmp_path: Path) -> None:
    """The export path needs no HTTP client: importing openai cost seconds."""
    path = tmp_path / "demo.sqlite"
    assert cli("import", str(DEMO), "--db", str(path)).exit_code == 0
    calibrate(str(path))
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from gradercal.cli import main\n"
        f"r = CliRunner().invoke(main, ['export-prompt', '--db', {str(path)!r}, '--judge', "
        f"{JUDGE!r}, '--n-boot', '0', '-o', {str(tmp_path / 'judge.json')!r}, '--json'])\n"
        "assert r.exit_code == 0, r.output\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'openai'))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
    assert json.loads((tmp_path / "judge.json").read_text("utf-8"))["card"]["held_out"]


def test_markdown_shows_html_from_notes_and_names_as_text(tmp_path: Path) -> None:
    """Adjudication notes and names are the experts' text: HTML in them is escaped in the
    Markdown export (renderers pass raw HTML through), and nothing else changes."""
    from gradercal.db.repo import Repository
    from gradercal.db.session import open_database

    db = str(tmp_path / "html.sqlite")
    cli("import", str(DEMO), "--db", db)
    note = '<script>alert(1)</script> & <img src=x onerror="alert(2)">'
    database = open_database(db)
    try:
        repo = Repository(database)
        for a in repo.adjudication_records():
            repo.adjudicate(
                None, a["response_id"], a["criterion_id"], met=a["met"], level=a.get("level"),
                adjudicator="<b>lead</b>", note=f"{a['note']} {note}",
            )  # fmt: skip
    finally:
        database.dispose()
    out = tmp_path / "judge.md"
    cli("export-prompt", "--db", db, "--judge", JUDGE, "--format", "markdown", "-o", str(out))
    text = out.read_text("utf-8")
    outside_fences = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; &lt;img" in outside_fences
    for raw in ("<script", "<img", "<b>"):
        assert raw not in outside_fences, raw
