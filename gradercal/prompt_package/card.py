"""The decision rule of the judge's calibration and the agreement card.

* **decision** — the threshold or score mapping of the judge's calibration
  (:func:`decision_from_calibration`);
* **card** — the agreement card: held-out agreement with the experts (with CIs) from the
  calibration — its test figures on the tasks it held out (``gradercal calibrate
  --holdout``), which nothing in the package has seen, or, for a calibration without
  held-out tasks, its out-of-fold figures with a plain warning that the examples may
  come from the same tasks — judge-vs-experts agreement on all data, the expert–expert
  range, the alt-test, leniency, provenance with the split (:func:`agreement_card`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gradercal._util.jsonsafe import json_safe
from gradercal.frames import Frames
from gradercal.prompt_package.examples import split_tasks

__all__ = [
    "NO_HOLDOUT_NOTE",
    "agreement_card",
    "decision_from_calibration",
    "has_held_out_figures",
]


def decision_from_calibration(
    calibration: Mapping[str, Any] | None, pass_threshold: float
) -> dict[str, Any]:
    """The decision rule of a saved calibration (``SavedCalibration.to_dict(full=True)``).

    ``rule`` is ``"verdict"`` (no calibration: the judge's verdict is used as given),
    ``"threshold"`` (met iff P(met) ≥ threshold, per tag when ``group_thresholds``
    names the criterion's first tag), ``"leniency"`` (a verdict counts as the
    probability ``leniency[tag][verdict]``), ``"isotonic"`` or ``"platt"`` (the judge's
    rubric score of a response mapped by the fitted curve).
    """
    if not calibration:
        return {
            "rule": "verdict",
            "calibration": None,
            "pass_threshold": float(pass_threshold),
            "description": "No calibration: the judge's met / not met verdict is used as is.",
        }
    params = dict(calibration.get("params") or {})
    method = str(calibration.get("method") or params.get("method"))
    keep = {
        "threshold": ("threshold", "group_thresholds", "tag_prefix", "metric"),
        "leniency": ("threshold", "group_thresholds", "leniency", "tag_prefix"),
        "isotonic": ("x_thresholds", "y_thresholds", "y_low", "y_high"),
        "platt": ("coef", "intercept", "constant", "y_low", "y_high"),
    }.get(method, ())
    out: dict[str, Any] = {
        "rule": method,
        "calibration": {
            "id": calibration.get("id"),
            "method": method,
            "version": calibration.get("version"),
            "active": calibration.get("active"),
            "created_at": calibration.get("created_at"),
            "level": (calibration.get("metrics") or {}).get("level"),
        },
        "pass_threshold": float(pass_threshold),
        "params": {k: params.get(k) for k in keep if k in params},
        "groups": list(params.get("groups") or []),
    }
    if method == "threshold":
        desc = f"met iff P(met) ≥ {params.get('threshold')}"
        if params.get("group_thresholds"):
            desc += " (per tag: " + ", ".join(
                f"{g} {t:.4g}" for g, t in params["group_thresholds"].items()
            )
            desc += ")"
        desc += "; P(met) is the judge's confidence in 'met' (1 or 0 when it gives no confidence)."
    elif method == "leniency":
        desc = "each verdict counts as the share of such verdicts the experts call met, per tag."
    elif method in ("isotonic", "platt"):
        desc = f"the judge's rubric score of a response is mapped by the fitted {method} curve."
    else:
        desc = f"calibration method {method}."
    out["description"] = desc
    return out


def _fig(block: Mapping[str, Any] | None, names: Sequence[str]) -> dict[str, Any]:
    if not block:
        return {}
    return {k: dict(block[k]) for k in names if k in block}


_CRITERION_FIGURES = ("cohen_kappa", "percent_agreement", "balanced_f1", "leniency_bias")
_RESPONSE_FIGURES = ("mean_score_bias", "mae", "pass_kappa", "pass_agreement", "pass_rate_bias")


#: Said on the card and printed by ``export-prompt`` when the calibration holds no task out.
NO_HOLDOUT_NOTE = (
    "the calibration holds no task out: its figures are out-of-fold figures on the same "
    "tasks the few-shot examples and adjudication notes come from, so they may overstate "
    "this prompt's agreement; run `gradercal calibrate --judge NAME --holdout 0.25` and "
    "export again"
)


def has_held_out_figures(calibration: Mapping[str, Any] | None) -> bool:
    """Whether a saved calibration holds tasks out and has its test figures on them."""
    if not calibration:
        return False
    held = split_tasks(calibration.get("split"))[1]
    return bool(held) and bool((calibration.get("metrics") or {}).get("test"))


def _held_out_block(calibration: Mapping[str, Any]) -> dict[str, Any]:
    """The card's ``held_out`` block of a saved calibration (see :func:`agreement_card`)."""
    m = dict(calibration.get("metrics") or {})
    split = dict(calibration.get("split") or {})
    calib_tasks, held_tasks = split_tasks(split)

    def figures(source: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "n_tasks": source.get("n_tasks"),
            "n_items": source.get("n_items"),
            "n_responses": source.get("n_responses"),
            "criterion": {
                "raw": _fig((source.get("criterion") or {}).get("before"), _CRITERION_FIGURES),
                "calibrated": _fig(
                    (source.get("criterion") or {}).get("after"), _CRITERION_FIGURES
                ),
            },
            "response": {
                "raw": _fig((source.get("response") or {}).get("before"), _RESPONSE_FIGURES),
                "calibrated": _fig((source.get("response") or {}).get("after"), _RESPONSE_FIGURES),
            },
        }

    folds = (
        f"{split.get('scheme', '?')} by {split.get('group', 'task')}, "
        f"{split.get('n_splits', '?')} folds"
    )
    test = m.get("test")
    block: dict[str, Any] = {
        "source": (
            f"calibration {calibration.get('id')} ({calibration.get('method')} "
            f"version {calibration.get('version')})"
        ),
        "split": {
            "n_calibration_tasks": len(calib_tasks),
            "n_held_out_tasks": len(held_tasks),
            "held_out_tasks": sorted(held_tasks),
            "holdout": split.get("holdout"),
            "seed": split.get("seed"),
            "n_splits": split.get("n_splits"),
        },
    }
    if test and has_held_out_figures(calibration):
        block |= {
            "kind": "held_out_tasks",
            "scheme": (
                f"{len(held_tasks)} of {len(held_tasks) + len(calib_tasks)} human-graded tasks "
                f"held out at random (seed {split.get('seed')}): never used to fit the "
                f"calibration, nor for examples or adjudication notes; the calibrator was "
                f"fitted on the other {len(calib_tasks)} tasks"
            ),
            "examples_may_overlap": False,
            **figures(test),
            "out_of_fold": {"scheme": f"{folds} on the calibration tasks", **figures(m)},
        }
    else:
        block |= {
            "kind": "out_of_fold",
            "scheme": f"{folds} (out-of-fold figures); no task held out",
            "examples_may_overlap": True,
            **figures(m),
        }
    return block


def agreement_card(
    frames: Frames,
    judge: str,
    calibration: Mapping[str, Any] | None,
    *,
    provenance: Mapping[str, Any] | None = None,
    humans: Sequence[str] | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    ci: float = 0.95,
) -> dict[str, Any]:
    """The agreement card of a judge (JSON-able).

    * ``held_out``: None without a calibration. With a calibration that holds tasks out
      (``gradercal calibrate --holdout``; ``kind: "held_out_tasks"``): its test figures
      on those tasks — raw judge and calibrated, with their CIs — which neither the
      calibrator nor the examples and adjudication notes of the package have seen,
      ``split`` (how many tasks on each side, which are held out, share, seed) and, for
      reference, the calibration tasks' out-of-fold figures (``out_of_fold``). Without
      held-out tasks (older calibrations; ``kind: "out_of_fold"``): the out-of-fold
      figures, and ``examples_may_overlap`` is true — the card's notes say so;
    * ``all_data``: the judge against the expert consensus on every unit (in-sample;
      :func:`gradercal.analysis.agreement.judge_agreement`);
    * ``expert_range``: per figure, the (min, max) of each expert against the other
      experts' consensus, the judge's mean on the same comparisons, and whether it lies
      within the experts' range;
    * ``alt_test``: :func:`gradercal.analysis.alt_test.alt_test_frames` (or why it was refused);
    * ``leniency``: the leniency bias (judge met rate − experts' met rate), held out
      (raw and calibrated, from ``held_out``) and on all data;
    * ``provenance``: as given (graders, counts, dates), plus ``split`` with a
      calibration: which calibration, the kind of held-out figures, the numbers of
      calibration and held-out tasks and the held-out task ids.
    """
    from gradercal.analysis.agreement import judge_agreement
    from gradercal.analysis.alt_test import AltTestRefused, alt_test_frames
    from gradercal.analysis.verdicts import human_graders

    names = [
        h for h in (list(humans) if humans is not None else human_graders(frames)) if h != judge
    ]
    notes: list[str] = []
    held: dict[str, Any] | None = None
    prov = dict(provenance or {})
    if calibration:
        held = _held_out_block(calibration)
        prov["split"] = {"calibration": held["source"], "kind": held["kind"], **held["split"]}
        if held["examples_may_overlap"]:
            notes.append(NO_HOLDOUT_NOTE)
    else:
        notes.append(
            "no calibration: there are no held-out figures and no threshold; run "
            "`gradercal calibrate --judge NAME` and export again"
        )
    all_data: dict[str, Any] | None = None
    expert_range: dict[str, Any] = {}
    try:
        ja = judge_agreement(frames, judge, names, n_boot=n_boot, seed=seed, ci=ci)
    except ValueError as exc:
        notes.append(f"judge agreement unavailable: {exc}")
    else:
        head = ja.headline.to_dict()
        all_data = {
            "reference": head["reference"],
            "n_units": head["n_units"],
            "n_tasks": head["n_tasks"],
            "metrics": _fig(head["metrics"], _CRITERION_FIGURES),
        }
        for k in ("cohen_kappa", "percent_agreement"):
            rng = ja.human_range.get(k)
            expert_range[k] = {
                "experts": None if rng is None else [rng[0], rng[1]],
                "judge": ja.judge_loo_mean.get(k),
                "within": ja.within_human_range.get(k),
            }
    try:
        at = alt_test_frames(frames, judge, names).to_dict()
        alt = {
            k: at[k]
            for k in (
                "passed",
                "winning_rate",
                "advantage_probability",
                "epsilon",
                "alpha",
                "n_items",
                "n_humans",
                "warnings",
            )
        }
    except AltTestRefused as exc:
        alt = {"refused": str(exc)}
    leniency: dict[str, Any] = {
        "held_out_raw": (held or {}).get("criterion", {}).get("raw", {}).get("leniency_bias"),
        "held_out_calibrated": (held or {})
        .get("criterion", {})
        .get("calibrated", {})
        .get("leniency_bias"),
        "all_data": None if all_data is None else all_data["metrics"].get("leniency_bias"),
    }
    card: dict[str, Any] = json_safe(
        {
            "judge": judge,
            "experts": names,
            "held_out": held,
            "all_data": all_data,
            "expert_range": expert_range,
            "alt_test": alt,
            "leniency": leniency,
            "provenance": prov,
            "notes": notes,
        },
        iso_datetimes=True,
    )
    return card
