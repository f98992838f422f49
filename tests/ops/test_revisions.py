"""The rules of task and rubric revisions (gradercal.ops.revisions), on hand-made tasks."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gradercal.model import Artifact, ArtifactKind, AutoRule, Criterion, Task
from gradercal.ops.revisions import (
    ChangeKind,
    diff_criterion,
    diff_task,
    is_stale,
    word_diff,
)

C1 = Criterion("c1", "Names the missing viability dye", 5, position=0, tags=("axis:accuracy",))
C2 = Criterion("c2", "Reports the gating strategy", 3, position=1)
C3 = Criterion("c3", "Gives the Kd", 2, position=2, auto=AutoRule("kd_nM", 4.2, abs_tol=0.1))
FIG = Artifact(ArtifactKind.IMAGE, "Figure 1", 0, path="fig1.png", sha256="a" * 64, size=10)
TASK = Task("T01", "Review the flow panel.", "analysis", "immunology", criteria=(C1, C2, C3),
            artifacts=(FIG,))  # fmt: skip


def _task(**changes: object) -> Task:
    values = {f: getattr(TASK, f) for f in TASK.__dataclass_fields__}
    values.update(changes)
    return Task(**values)  # type: ignore[arg-type]


def test_the_same_version_changes_nothing() -> None:
    rev = diff_task(TASK, _task())
    assert not rev.changed and rev.kind is None
    assert rev.stale_criteria(["c1", "c2", "c3"]) == set()


def test_each_criterion_field_has_its_kind() -> None:
    cases = [
        (Criterion("c1", "Names the missing live/dead dye", 5, 0, ("axis:accuracy",)),
         "text", ChangeKind.VERDICT),
        (Criterion("c1", C1.text, 5, 0, ("axis:accuracy",), levels=3), "levels",
         ChangeKind.VERDICT),
        (Criterion("c1", C1.text, 8, 0, ("axis:accuracy",)), "points", ChangeKind.SCORE),
        (Criterion("c1", C1.text, 5, 0, ("axis:completeness",)), "tags", ChangeKind.NOTE),
        (Criterion("c1", C1.text, 5, 4, ("axis:accuracy",)), "position", ChangeKind.NOTE),
    ]  # fmt: skip
    for new, field, kind in cases:
        change = diff_criterion(C1, new)
        assert change is not None
        assert [f.field for f in change.fields] == [field]
        assert change.kind is kind, field
    assert diff_criterion(C1, C1) is None
    tol = Criterion("c3", C3.text, 2, 2, auto=AutoRule("kd_nM", 4.2, abs_tol=0.5))
    change = diff_criterion(C3, tol)
    assert change is not None and change.kind is ChangeKind.VERDICT
    assert change.fields[0].before["abs_tol"] == 0.1 and change.fields[0].after["abs_tol"] == 0.5


def test_a_points_only_revision_rescales_without_regrading() -> None:
    rev = diff_task(TASK, _task(criteria=(C1, Criterion("c2", C2.text, 6, 1), C3)))
    assert rev.kind is ChangeKind.SCORE
    assert rev.stale_criteria(["c1", "c2", "c3"]) == set()
    assert rev.rescored_criteria() == {"c2"}


def test_a_reworded_criterion_makes_only_its_verdicts_stale() -> None:
    reworded = Criterion("c2", "Reports the gating strategy, including doublet exclusion", 3, 1)
    rev = diff_task(TASK, _task(criteria=(C1, reworded, C3)))
    assert rev.kind is ChangeKind.VERDICT and not rev.task_verdict_change
    assert rev.stale_criteria(["c1", "c2", "c3"]) == {"c2"}


def test_a_changed_prompt_or_artifact_makes_every_criterion_stale() -> None:
    ids = ["c1", "c2", "c3"]
    prompt = diff_task(TASK, _task(prompt="Review the flow panel and the controls."))
    assert prompt.task_verdict_change and prompt.stale_criteria(ids) == set(ids)
    new_file = Artifact(ArtifactKind.IMAGE, "Figure 1", 0, path="fig1.png", sha256="b" * 64)
    replaced = diff_task(TASK, _task(artifacts=(new_file,)))
    assert [f.field for f in replaced.task_fields] == ["artifacts"]
    assert replaced.stale_criteria(ids) == set(ids)
    retitled = Artifact(ArtifactKind.IMAGE, "Figure 1 (gating)", 0, path="fig1.png",
                        sha256="a" * 64, size=10)  # fmt: skip
    title = diff_task(TASK, _task(artifacts=(retitled,)))
    assert title.kind is ChangeKind.NOTE and title.stale_criteria(ids) == set()
    meta = diff_task(TASK, _task(domain="cell biology", metadata={"round": 2}))
    assert meta.kind is ChangeKind.NOTE
    assert sorted(f.field for f in meta.task_fields) == ["domain", "metadata"]


def test_added_and_removed_criteria() -> None:
    c4 = Criterion("c4", "Mentions compensation controls", 4, 3)
    rev = diff_task(TASK, _task(criteria=(C1, C3, c4)))
    by_id = {c.criterion_id: c for c in rev.criteria}
    assert by_id["c4"].added and by_id["c2"].removed
    assert rev.kind is ChangeKind.VERDICT
    # the new criterion needs verdicts; the removed one is not in the new rubric
    assert rev.stale_criteria(["c1", "c3", "c4"]) == {"c4"}
    with pytest.raises(ValueError, match="different tasks"):
        diff_task(TASK, Task("T02", "x"))


def test_staleness_follows_the_last_verdict_changing_version() -> None:
    # versions of c2: 1 (given), 2 reworded (verdict version 2), 3 points only (still 2)
    assert is_stale(given_under=1, verdict_version=2)
    assert not is_stale(given_under=2, verdict_version=2)  # re-given after the rewording
    assert not is_stale(given_under=3, verdict_version=2)


def test_word_diff_shows_what_changed() -> None:
    got = word_diff("Reports the gating strategy", "Reports the full gating strategy used")
    assert got == [
        ("same", "Reports the "),
        ("added", "full "),
        ("same", "gating strategy"),
        ("added", " used"),
    ]
    assert word_diff("", "new") == [("added", "new")]
    assert word_diff("same", "same") == [("same", "same")]


@given(st.text(max_size=60), st.text(max_size=60))
def test_word_diff_rebuilds_both_texts(before: str, after: str) -> None:
    runs = word_diff(before, after)
    assert "".join(t for k, t in runs if k != "added") == before
    assert "".join(t for k, t in runs if k != "removed") == after
    assert all(k in {"same", "added", "removed"} and t for k, t in runs)
