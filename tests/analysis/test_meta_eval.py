"""HealthBench's pairwise balanced F1, checked three ways: a worked example by hand, a
direct re-statement of the meta-evaluation's pair loop on random data, and
scikit-learn's macro F1 on the expanded pairs (where every class is present)."""

from __future__ import annotations

import json
import random
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from sklearn.metrics import f1_score

from gradercal.analysis.meta_eval import meta_eval_report, pairwise_f1
from gradercal.formats import read_path
from gradercal.frames import frames_from_data
from gradercal.model import GraderKind, Judgment
from tests.conftest import DATA


def test_worked_example() -> None:
    # TP 1, FP 1, FN 1, TN 0: met P = R = 1/2 → F1 1/2; not met P = R = 0 → F1 0.
    res = pairwise_f1([1, 1, 1, 0])
    assert (res["f1_met"], res["f1_not_met"], res["balanced_f1"]) == (0.5, 0.0, 0.25)
    # No pair where the grader says met: precision of met undefined, so F1 of met and
    # the balanced F1 are undefined (2TP/(2TP+FP+FN) would say 0).
    res = pairwise_f1([0, 0, 3, 5])
    assert res["precision_met"] is None and res["f1_met"] is None
    assert res["balanced_f1"] is None and res["note"] == "one class absent from the pairs"


def _loop_reference(rows: list[tuple[bool, list[bool], str]]) -> dict[str, Any]:
    """The meta-evaluation's definition, stated directly: for every (own verdict, other
    label) pair, record agreement under precision of the own class and under recall of
    the other's class; F1 per class from those rates; balanced = their mean."""
    lists: dict[tuple[str, str, str], list[bool]] = defaultdict(list)
    for own, others, cat in rows:
        for other in others:
            for scope in ("all", cat):
                lists[(scope, "precision", "pos" if own else "neg")].append(own == other)
                lists[(scope, "recall", "pos" if other else "neg")].append(own == other)

    def rate(key: tuple[str, str, str]) -> float | None:
        xs = lists.get(key, [])
        return sum(xs) / len(xs) if xs else None

    def f1(scope: str, cls: str) -> float | None:
        p, r = rate((scope, "precision", cls)), rate((scope, "recall", cls))
        if p is None or r is None:
            return None
        return 0.0 if p == 0 and r == 0 else 2 * p * r / (p + r)

    out: dict[str, Any] = {}
    for scope in {k[0] for k in lists}:
        a, b = f1(scope, "pos"), f1(scope, "neg")
        out[scope] = None if a is None or b is None else (a + b) / 2
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_equals_the_meta_evaluation_loop_and_sklearn(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    physicians = [f"d{i}" for i in range(6)]
    lines, judge_labels = [], {}
    for q in range(12):
        for k in range(rng.randint(1, 4)):
            cid = f"q{q}-{k}"
            for c in range(rng.randint(1, 3)):
                raters = rng.sample(physicians, rng.randint(1, 4))
                truth = rng.random() < 0.6
                labels = [truth if rng.random() < 0.8 else not truth for _ in raters]
                rubric = f"criterion {q}.{c}"
                lines.append(
                    {
                        "prompt_id": f"q{q}", "prompt": f"question {q}", "completion_id": cid,
                        "completion": f"answer {cid}", "rubric": rubric,
                        "category": rng.choice(["emergency", "context", "hedging"]),
                        "binary_labels": labels, "anonymized_physician_ids": raters,
                    }
                )  # fmt: skip
                judge_labels[(cid, rubric)] = truth if rng.random() < 0.75 else not truth
    # one category per (prompt, criterion): the first line's
    first_cat: dict[tuple[str, str], str] = {}
    for x in lines:
        x["category"] = first_cat.setdefault((x["prompt_id"], x["rubric"]), x["category"])
    path = tmp_path / "meta.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), "utf-8")
    data = read_path(path)
    crit_id = {(t.id, c.text): c.id for t in data.tasks for c in t.criteria}
    data.judgments.extend(
        Judgment(cid, crit_id[(cid.split("-")[0], rubric)], "judge-x", GraderKind.JUDGE, met=m)
        for (cid, rubric), m in judge_labels.items()
    )
    rep = meta_eval_report(frames_from_data(data))
    # The judge: each of its verdicts against every physician's label of the item.
    by_item: dict[tuple[str, str], list[tuple[str, bool]]] = defaultdict(list)
    cat_of = {}
    for x in lines:
        key = (x["completion_id"], x["rubric"])
        cat_of[key] = x["category"]
        for d, lab in zip(x["anonymized_physician_ids"], x["binary_labels"], strict=True):
            by_item[key].append((d, lab))
    rows = [(judge_labels[k], [lab for _d, lab in v], cat_of[k]) for k, v in by_item.items()]
    ref = _loop_reference(rows)
    (j,) = rep["judges"]
    assert j["balanced_f1"] == pytest.approx(ref["all"])
    assert set(j["by_category"]) == {"emergency", "context", "hedging"}
    for cat, fig in j["by_category"].items():
        want = ref.get(cat)
        assert fig["balanced_f1"] == (None if want is None else pytest.approx(want))
    # sklearn on the expanded pairs (both classes present here)
    own = [r[0] for r in rows for _ in r[1]]
    other = [o for r in rows for o in r[1]]
    assert j["balanced_f1"] == pytest.approx(f1_score(other, own, average="macro"))
    # A physician: against the other physicians only.
    d0 = "physician:d0"
    mine = [
        (lab, [o for d2, o in v if d2 != d], cat_of[k])
        for k, v in by_item.items()
        for d, lab in v
        if d == "d0"
    ]
    (h,) = [r for r in rep["humans"] if r["grader"] == d0]
    assert h["balanced_f1"] == pytest.approx(_loop_reference(mine)["all"])
    defined = [r["balanced_f1"] for r in rep["humans"] if r["balanced_f1"] is not None]
    assert rep["humans_mean"]["balanced_f1"] == pytest.approx(sum(defined) / len(defined))


def test_agreement_reports_it_for_meta_evaluation_imports(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from gradercal.cli import main

    db = str(tmp_path / "m.sqlite")
    sample = DATA / "healthbench_meta" / "meta_eval_sample.jsonl"
    assert CliRunner().invoke(main, ["import", str(sample), "--db", db]).exit_code == 0
    out = CliRunner().invoke(main, ["agreement", "--db", db, "--json"])
    meta = json.loads(out.stdout)["healthbench_meta"]
    (p1,) = [r for r in meta["humans"] if r["grader"] == "physician:p1"]
    assert p1["counts"] == {"tp": 1, "fp": 1, "fn": 1, "tn": 0} and p1["balanced_f1"] == 0.25
    text = CliRunner().invoke(main, ["agreement", "--db", db]).output
    assert "pairwise balanced F1 against each physician" in text
