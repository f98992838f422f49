"""The judge's operations of the coordinator window, without Qt (issue #33).

:func:`calibrate` is ``gradercal calibrate`` (held-out figures returned as lines),
:func:`export_prompt` is ``gradercal export-prompt``, and :func:`count_judge_verdicts` /
:func:`remove_judge` remove a (test) judge with its verdicts. They run in a worker thread
and use the same ``gradercal.db`` / engine functions as the commands.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, get_args

from gradercal.errors import GradercalError
from gradercal.ui.coordinator_ops import Outcome, Progress, _no_progress

if TYPE_CHECKING:
    from gradercal.db.session import Database

METHODS = ("threshold", "leniency", "isotonic", "platt")
#: The share of human-graded tasks held out, as ``gradercal calibrate`` holds out.
DEFAULT_HOLDOUT = 0.25


def judges(db: Database, benchmark: str | None) -> list[str]:
    """The judge graders with verdicts in the benchmark."""
    from gradercal.analysis.verdicts import judge_graders
    from gradercal.db.repo import Repository

    repo = Repository(db)
    return list(judge_graders(repo.load_frames(repo.benchmark(benchmark).name)))


def _figure(fig: dict[str, Any] | None) -> str:
    if fig is None or fig.get("value") is None:
        return "—"
    text = f"{fig['value']:.3f}"
    if fig.get("ci"):
        lo, hi = fig["ci"]
        text += f" [{lo:.3f}, {hi:.3f}]"
    return text


def figure_lines(metrics: dict[str, Any], title: str) -> list[str]:
    """``metrics``' before → after figures at each level, one line each."""
    from gradercal.analysis.calibration import FIGURE_LABELS

    out: list[str] = []
    for level in ("criterion", "response"):
        block = metrics.get(level)
        if not block:
            continue
        out.append(f"{level} level, {title}:")
        for key, before in block["before"].items():
            after = block["after"].get(key)
            out.append(
                f"  {FIGURE_LABELS.get(key, key)}: raw {_figure(before)} → calibrated {_figure(after)}"
            )
    return out


def calibrate(
    db: Database,
    benchmark: str | None,
    judge: str,
    method: str,
    *,
    holdout: float = DEFAULT_HOLDOUT,
    n_boot: int = 200,
    seed: int = 0,
    progress: Progress | None = None,
) -> Outcome:
    """Fit ``method`` for ``judge`` on the calibration tasks, measure it on the held-out
    ones, and save it as the judge's active calibration (a new version).

    Raises:
        GradercalError: no such judge or method, too few human verdicts.
    """
    from gradercal._util.jsonsafe import json_safe
    from gradercal.analysis.calibration import fit_calibration
    from gradercal.analysis.verdicts import human_graders, judge_graders
    from gradercal.db.calibrations import save_calibration
    from gradercal.db.repo import Repository

    if method not in METHODS:
        raise GradercalError(f"no calibration method {method!r}: {', '.join(METHODS)}")
    notify = progress or _no_progress
    notify("reading", 0, 1)
    repo = Repository(db)
    name = repo.benchmark(benchmark).name
    frames = repo.load_frames(name)
    known = judge_graders(frames)
    if judge not in known:
        raise GradercalError(
            f"no judge {judge!r} in benchmark {name!r}; judges: {', '.join(known) or 'none'}"
        )
    notify("calibrating", 0, 1)
    try:
        res = fit_calibration(
            frames,
            judge,
            method,  # type: ignore[arg-type]
            [h for h in human_graders(frames) if h != judge],
            n_boot=n_boot,
            seed=seed,
            benchmark=name,
            holdout=holdout,
            strict_holdout=False,
        )
    except ValueError as exc:
        raise GradercalError(str(exc)) from exc
    saved = save_calibration(
        repo,
        name,
        judge,
        method,
        params=json_safe(res.params),
        split=json_safe(res.split),
        metrics=json_safe(res.metrics),
        provenance=json_safe(res.provenance),
    )
    notify("calibrating", 1, 1)
    held = list(res.split.get("held_out") or [])
    lines = [f"Warning: {w}" for w in res.warnings]
    test = res.metrics.get("test")
    if held and test:
        lines.append(f"Held out (never fitted on): {len(held)} tasks ({', '.join(held)}).")
        lines += figure_lines(test, "held-out tasks")
    else:
        lines.append("No task held out: the out-of-fold figures are the only check.")
    lines += figure_lines(res.metrics, "out of fold, calibration tasks")
    return Outcome(
        f"Saved the {method} calibration of {judge} as version {saved.version} (active).",
        lines,
        {"saved": saved.to_dict(), **json_safe(res.to_dict())},
    )


def export_prompt(
    db: Database,
    benchmark: str | None,
    judge: str,
    fmt: str,
    output: str | Path,
    *,
    n_examples: int = 6,
    seed: int = 0,
    n_boot: int = 200,
    progress: Progress | None = None,
) -> Outcome:
    """Write the judge's calibrated prompt package as ``fmt`` (json, markdown, inspect,
    promptfoo) to ``output`` (promptfoo writes three files beside it).

    Raises:
        GradercalError: no such judge, a prompt that is not text only, a file not written.
    """
    from dataclasses import replace

    from gradercal.db.prompt_sources import export_samples, gather, package_from
    from gradercal.prompt_package import MULTI_FILE_FORMATS, PackageFormat, render_files
    from gradercal.prompt_package.standalone import require_text_only

    if fmt not in get_args(PackageFormat):
        raise GradercalError(f"no package format {fmt!r}")
    if not str(output).strip():
        raise GradercalError("choose the file to write the package to")
    target = Path(output)
    notify = progress or _no_progress
    notify("reading", 0, 3)
    src = gather(db, benchmark, judge)
    if fmt in ("inspect", "promptfoo"):
        require_text_only(src.base_prompt, f"the exported {fmt} judge")
    package = package_from(
        db, src, n_examples=n_examples, seed=seed, n_boot=n_boot, progress=notify
    )
    samples = None
    if fmt in MULTI_FILE_FORMATS:
        samples = export_samples(db, src.benchmark, src.frames, package.prompt)
    warnings = [*src.warnings, *package.warnings]
    package = replace(package, warnings=warnings)
    files = render_files(package, fmt, target.name, samples or [])  # type: ignore[arg-type]
    written = []
    for name, text in files.items():
        path = target.with_name(name)
        try:
            path.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise GradercalError(f"cannot write {path}: {exc.strerror}") from exc
        written.append(str(path))
    notify("examples", 3, 3)
    return Outcome(
        f"Wrote the prompt package of {judge} ({fmt}): "
        + ", ".join(Path(p).name for p in written)
        + ".",
        [
            f"{len(package.examples)} examples, guidance for "
            f"{len(package.guidance.get('criteria', []))} criteria, rule "
            f"{package.decision.get('rule')}.",
            *(f"Warning: {w}" for w in warnings),
        ],
        {"files": written, "format": fmt, "judge": judge},
    )
