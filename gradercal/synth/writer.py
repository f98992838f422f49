"""Writing a synthetic benchmark folder: :func:`generate` plans, simulates and writes the
files of format v1 plus the truth, and the graders' judgment lines.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from gradercal.model import FORMAT_VERSION, stable_hash
from gradercal.synth.artifacts import write_artifacts
from gradercal.synth.config import ENCODER, SynthConfig, SynthSummary, dumps
from gradercal.synth.plan import plan_tasks
from gradercal.synth.simulate import Simulation, simulate_responses
from gradercal.synth.vocabulary import (
    HUMAN_RATIONALES,
    JUDGE_MET_RATIONALES,
    JUDGE_UNMET_RATIONALES,
)


def _prepare_out_dir(out: Path, overwrite: bool) -> None:
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"{out} exists and is not a directory")
    if out.is_dir() and any(out.iterdir()):
        if not overwrite:
            raise FileExistsError(f"{out} is not empty")
        if not (out / "truth.json").is_file():
            raise FileExistsError(
                f"{out} is not empty and holds no synthetic benchmark (truth.json); "
                "refusing to overwrite it"
            )
        for name in _WRITTEN_FILES:
            (out / name).unlink(missing_ok=True)
        shutil.rmtree(out / "artifacts", ignore_errors=True)
    out.mkdir(parents=True, exist_ok=True)


_WRITTEN_FILES = (
    "benchmark.json",
    "tasks.jsonl",
    "responses.jsonl",
    "judgments.jsonl",
    "truth.jsonl",
    "truth.json",
)


def generate(
    out_dir: str | Path, config: SynthConfig | None = None, *, overwrite: bool = False
) -> SynthSummary:
    """Write a synthetic benchmark folder (format v1) with its ground truth.

    Args:
        out_dir: Folder to write; created when missing. It must be empty unless
            ``overwrite`` is set.
        config: The parameters; ``SynthConfig()`` when omitted.
        overwrite: Replace a previous synthetic benchmark in ``out_dir`` (a folder holding
            ``truth.json``). Other non-empty folders are never touched.

    Returns:
        Counts of what was written.

    Raises:
        FileExistsError: ``out_dir`` is not empty (and not a synthetic benchmark to
            overwrite).
        NotADirectoryError: ``out_dir`` is a file.
    """
    config = config if config is not None else SynthConfig()
    out = Path(out_dir)
    _prepare_out_dir(out, overwrite)
    (
        struct_rng,
        text_rng,
        truth_rng,
        answer_rng,
        human_rng,
        judge_rng,
        artifact_rng,
    ) = np.random.default_rng(config.seed).spawn(7)

    plans = plan_tasks(config, struct_rng, text_rng)
    n_files, n_urls = write_artifacts(out, config, plans, artifact_rng)

    sim = simulate_responses(config, plans, truth_rng, answer_rng)
    judgment_lines = _judgment_lines(config, sim, human_rng, judge_rng)
    models, quality, scores = sim.models, sim.quality, sim.scores
    response_lines, truth_lines = sim.response_lines, sim.truth_lines

    # ---- write
    name = (
        f"Synthetic benchmark (seed {config.seed}, {config.tasks} tasks, "
        f"config {stable_hash(config.to_dict())[:8]})"
    )
    benchmark = {
        "name": name,
        "pass_threshold": config.pass_threshold,
        "format_version": FORMAT_VERSION,
    }
    _write_text(out / "benchmark.json", json.dumps(benchmark, ensure_ascii=False, indent=2) + "\n")
    _write_lines(out / "tasks.jsonl", [dumps(p.record) for p in plans])
    _write_lines(out / "responses.jsonl", response_lines)
    _write_lines(out / "judgments.jsonl", judgment_lines)
    truth_path = out / "truth.jsonl"
    _write_lines(truth_path, truth_lines)

    graders: list[dict[str, Any]] = [
        {
            "name": _human_name(h),
            "kind": "human",
            "sensitivity": config.human_sensitivity,
            "specificity": config.human_specificity,
            "leniency": {},
        }
        for h in range(config.human_graders)
    ]
    if config.judge:
        graders.append(
            {
                "name": "judge",
                "kind": "judge",
                "sensitivity": config.judge_sensitivity,
                "specificity": config.judge_specificity,
                "leniency": dict(sorted(config.judge_leniency.items())),
            }
        )
    n_criteria = sum(len(p.record["rubric"]) for p in plans)
    truth_doc = {
        "generator": "gradercal.synth",
        "truth_version": 1,
        "config": config.to_dict(),
        "benchmark": benchmark,
        "graders": graders,
        "models": [
            {
                "name": model,
                "quality": round(float(quality[r]), 6),
                "true_mean_score": round(float(np.mean(scores[r])), 6),
                "true_pass_rate": round(
                    float(np.mean(np.array(scores[r]) >= config.pass_threshold - 1e-9)), 6
                ),
            }
            for r, model in enumerate(models)
        ],
        "score_rule": (
            "credit = points * true level / (levels - 1) (points when met, 0 when not); "
            "score = clip(sum of credits / sum of positive points, 0, 1); "
            "pass when score >= pass_threshold - 1e-9"
        ),
        "counts": {
            "tasks": len(plans),
            "criteria": n_criteria,
            "artifacts": n_files,
            "url_artifacts": n_urls,
            "responses": len(response_lines),
            "judgments": len(judgment_lines),
            "truth_lines": len(truth_lines),
        },
    }
    _write_text(out / "truth.json", json.dumps(truth_doc, ensure_ascii=False, indent=2) + "\n")
    return SynthSummary(
        out_dir=out,
        tasks=len(plans),
        criteria=n_criteria,
        artifacts=n_files,
        responses=len(response_lines),
        judgments=len(judgment_lines),
        truth_path=truth_path,
        url_artifacts=n_urls,
    )


def _human_name(h: int) -> str:
    return f"expert-{h + 1:02d}"


def _judgment_lines(
    config: SynthConfig,
    sim: Simulation,
    human_rng: np.random.Generator,
    judge_rng: np.random.Generator,
) -> list[str]:
    """Simulate every grader's verdicts and render them as ``judgments.jsonl`` lines.

    On a 3-level criterion a "met" verdict has the top level; a "not met" verdict is
    "partial" (level 1) mostly when the truth is partial or met, rarely otherwise.
    """
    truth, ambiguous, leniency, levels = sim.truth, sim.ambiguous, sim.leniency, sim.levels
    response_ids, row_resp, row_crit = sim.response_ids, sim.row_resp, sim.row_crit
    p_partial = np.where(sim.partial_or_met, 0.75, 0.1)
    n_rows = truth.size
    n_humans = config.human_graders
    k = config.overlap if config.overlap is not None else n_humans

    # humans: one column of draws per human, used only where the human is assigned
    u_met = human_rng.random((n_rows, n_humans))
    human_met = np.where(
        truth[:, None], u_met < config.human_sensitivity, u_met >= config.human_specificity
    )
    human_partial = human_rng.random((n_rows, n_humans)) < p_partial[:, None]
    u_unclear = human_rng.random((n_rows, n_humans))
    human_unclear = u_unclear < np.where(ambiguous, 0.4, 0.002)[:, None]
    human_note = human_rng.random((n_rows, n_humans)) < 0.03
    note_pick = human_rng.integers(0, len(HUMAN_RATIONALES), size=(n_rows, n_humans))

    # judge
    u_judge = judge_rng.random(n_rows)
    judge_fpr = np.clip(1.0 - config.judge_specificity + leniency, 0.0, 1.0)
    judge_met = np.where(truth, u_judge < config.judge_sensitivity, u_judge < judge_fpr)
    judge_right = judge_met == truth
    conf_right = 0.55 + 0.44 * judge_rng.beta(4.0, 1.5, size=n_rows)
    conf_wrong = 0.5 + 0.4 * judge_rng.beta(1.5, 3.0, size=n_rows)
    judge_conf = np.round(np.where(judge_right, conf_right, conf_wrong), 3)
    judge_partial = judge_rng.random(n_rows) < p_partial
    rationale_pick = judge_rng.integers(0, 4, size=n_rows)

    # Lines are assembled from pre-encoded pieces: json.dumps per line would dominate the
    # run time at scale. The result is exactly what ``dumps`` gives for the same dict.
    enc = ENCODER.encode
    rid_json = [enc(r) for r in response_ids]
    human_heads = [
        f', "grader": {enc(_human_name(h))}, "grader_kind": "human", "met": '
        for h in range(n_humans)
    ]
    human_notes = [f', "rationale": {enc(r)}' for r in HUMAN_RATIONALES]
    unclear_part = ', "unclear": true, "unclear_note": ' + enc(
        "The criterion could be read more than one way."
    )
    judge_notes = (
        [f', "rationale": {enc(r)}' for r in JUDGE_UNMET_RATIONALES],
        [f', "rationale": {enc(r)}' for r in JUDGE_MET_RATIONALES],
    )
    assigned = [
        sorted((resp * k + j) % n_humans for j in range(k)) if n_humans else []
        for resp in range(len(response_ids))
    ]
    h_met = human_met.tolist()
    h_partial = human_partial.tolist()
    h_note = human_note.tolist()
    h_note_pick = note_pick.tolist()
    h_unclear = human_unclear.tolist()
    j_met = judge_met.tolist()
    j_conf = judge_conf.tolist()
    j_partial = judge_partial.tolist()
    j_pick = rationale_pick.tolist()
    three_level = (levels == 3).tolist()
    lines: list[str] = []
    for row in range(n_rows):
        resp = row_resp[row]
        head = f'{{"response_id": {rid_json[resp]}, "criterion_id": {enc(row_crit[row])}'
        three = three_level[row]
        for h in assigned[resp]:
            met = h_met[row][h]
            line = head + human_heads[h] + ("true" if met else "false")
            if three:
                line += f', "level": {2 if met else int(h_partial[row][h])}'
            if h_note[row][h]:
                line += human_notes[h_note_pick[row][h]]
            if h_unclear[row][h]:
                line += unclear_part
            lines.append(line + "}")
        if config.judge:
            met = j_met[row]
            line = (
                f'{head}, "grader": "judge", "grader_kind": "judge", "met": '
                f'{"true" if met else "false"}, "confidence": {float(j_conf[row])!r}'
                + judge_notes[int(met)][j_pick[row]]
            )
            if three:
                line += f', "level": {2 if met else int(j_partial[row])}'
            lines.append(line + "}")
    return lines


def _write_lines(path: Path, lines: list[str]) -> None:
    _write_text(path, "".join(line + "\n" for line in lines))


def _write_text(path: Path, text: str) -> None:
    path.write_bytes(text.encode("utf-8"))
