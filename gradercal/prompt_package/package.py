"""The :class:`PromptPackage`: assembly, canonical JSON, schema check, reading back.

A package bundles, for one judge grader, the **prompt**, the **guidance**
(:mod:`~gradercal.prompt_package.guidance`), the few-shot **examples**
(:mod:`~gradercal.prompt_package.examples`), the **decision** rule and the agreement
**card** (:mod:`~gradercal.prompt_package.card`). The prompt is the judge's system and
user templates, extended with the rubric guidance (the ``guidance`` option, rendered per
request into ``{{guidance}}``) and few-shot examples; its content hash is the **prompt
version** (sha256 of the canonical JSON of templates, examples and options,
:attr:`PromptTemplate.content_hash`), the id the database stores it under.
:func:`build_package` assembles it from plain inputs.

:func:`to_json` gives the canonical form (versioned by ``format_version``; validated by
``gradercal/schemas/prompt-package.schema.json``, :func:`validate_package`).
:func:`package_from_dict` reads JSON back and refuses a package that fails the schema
(with the JSON path) or whose hashes do not match.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from typing import Any

from gradercal._util.jsonsafe import json_safe
from gradercal.errors import Problem, ValidationError
from gradercal.judge.prompts import PromptTemplate, prompt_from_dict
from gradercal.model import stable_hash
from gradercal.prompt_package.card import (
    NO_HOLDOUT_NOTE,
    decision_from_calibration,
    has_held_out_figures,
)
from gradercal.prompt_package.examples import (
    DEFAULT_EXAMPLES,
    example_record,
    few_shot_entry,
    select_examples,
    split_tasks,
)
from gradercal.prompt_package.guidance import distill_guidance, guidance_option, with_guidance_slot
from gradercal.prompt_package.inputs import AdjudicatedItem, ExpertNote

__all__ = [
    "FORMAT_VERSION",
    "PromptPackage",
    "build_package",
    "load_schema",
    "package_from_dict",
    "to_json",
    "validate_package",
]

#: Version of the package format; readers refuse other versions.
FORMAT_VERSION = 1


@dataclass(frozen=True)
class PromptPackage:
    """A calibrated judge-prompt package (see the module docstring).

    Attributes:
        prompt: The calibrated prompt (guidance option and few-shot examples included).
        judge: ``{"name", "model", "prompt_version" (the judge's own prompt),
            "parameters"}``.
        benchmark: The benchmark's name.
        guidance: Distilled guidance (:func:`distill_guidance`).
        examples: Provenance of each few-shot example, aligned with ``prompt.few_shot``.
        example_pool: ``{"calibration_tasks", "held_out_tasks", "candidates",
            "seed", "requested"}``: where examples could come from.
        decision: :func:`decision_from_calibration`.
        card: :func:`agreement_card` (plus ``prompt_version``).
        warnings: What the exporter wants the reader to know.
        created_at: ISO time of the export.
        certificate: The judge's newest stored certificate of ``gradercal judge align``
            for this benchmark (``{"id", "judge", "proven_better", "created_at",
            "certificate"}``, as ``JudgeStore.certificates`` reads it), or None. It is a
            record of what was proven, not part of the prompt: the exported judges grade
            the same with or without it. The key is absent from the JSON when None (so a
            package written before it existed keeps its hash).
        format_version: :data:`FORMAT_VERSION`.
    """

    prompt: PromptTemplate
    judge: Mapping[str, Any]
    benchmark: str | None
    guidance: Mapping[str, Any]
    examples: Sequence[Mapping[str, Any]]
    example_pool: Mapping[str, Any]
    decision: Mapping[str, Any]
    card: Mapping[str, Any]
    warnings: Sequence[str] = ()
    created_at: str = ""
    format_version: int = FORMAT_VERSION
    certificate: Mapping[str, Any] | None = None

    @property
    def prompt_version(self) -> str:
        """The prompt version hash (content hash of the calibrated prompt)."""
        return self.prompt.content_hash

    def body(self) -> dict[str, Any]:
        """Everything but the integrity block, JSON-able."""
        body: dict[str, Any] = json_safe(
            {
                "format_version": self.format_version,
                "kind": "gradercal.prompt-package",
                "created_at": self.created_at,
                "benchmark": self.benchmark,
                "judge": dict(self.judge),
                "prompt_version": self.prompt_version,
                "prompt": {
                    "name": self.prompt.name,
                    "parent_hash": self.prompt.parent_hash,
                    "system": self.prompt.system,
                    "user": self.prompt.user,
                    "few_shot": [dict(x) for x in self.prompt.few_shot],
                    "options": dict(self.prompt.options),
                },
                "guidance": dict(self.guidance),
                "examples": [dict(x) for x in self.examples],
                "example_pool": dict(self.example_pool),
                "decision": dict(self.decision),
                "card": dict(self.card),
                "warnings": list(self.warnings),
                **({} if self.certificate is None else {"certificate": dict(self.certificate)}),
            },
            iso_datetimes=True,
        )
        return body

    def to_dict(self) -> dict[str, Any]:
        """The canonical JSON form, with ``integrity.package_hash`` over the rest."""
        body = self.body()
        body["integrity"] = {"algorithm": "sha256", "package_hash": stable_hash(body)}
        return body


def build_package(
    *,
    judge: Mapping[str, Any],
    base_prompt: PromptTemplate,
    benchmark: str | None,
    notes: Sequence[ExpertNote],
    adjudicated: Sequence[AdjudicatedItem],
    calibration: Mapping[str, Any] | None,
    card: Mapping[str, Any],
    pass_threshold: float,
    n_examples: int = DEFAULT_EXAMPLES,
    seed: int = 0,
    name: str | None = None,
    created_at: datetime | None = None,
) -> PromptPackage:
    """Assemble the package from plain inputs (see the module docstring).

    The calibrated prompt derives from ``base_prompt`` (its parent): the ``guidance``
    option is set from the distilled guidance (and a ``{{guidance}}`` block added to the
    user template when it has none); with ``n_examples > 0`` the few-shot examples are
    the selected ones (else the base prompt's are kept).
    """
    warnings: list[str] = []
    calib_tasks, held_out = split_tasks((calibration or {}).get("split"))
    allowed: frozenset[str] | None = calib_tasks if calibration else None
    # Adjudications reveal final verdicts: outside the calibration split they would
    # leak held-out answers into the prompt. Unclear notes and clarification answers are
    # about wording: all kept.
    used_notes = [
        n
        for n in notes
        if n.source in ("unclear", "clarification") or allowed is None or n.task_id in allowed
    ]
    used_adjudicated = [a for a in adjudicated if allowed is None or a.task_id in allowed]
    guidance = distill_guidance(used_notes, used_adjudicated)
    option = guidance_option(guidance)
    if not calibration:
        allowed = None
        if n_examples > 0:
            warnings.append(
                "no calibration: few-shot examples are drawn from every adjudicated task; "
                "leave their tasks (examples[].task_id) out when you measure this prompt"
            )
        warnings.append("no calibration: the package has no threshold and no held-out figures")
    chosen = select_examples(adjudicated, n_examples, seed=seed, allowed_tasks=allowed)
    if calibration and not has_held_out_figures(calibration):
        warnings.append(NO_HOLDOUT_NOTE)
    if n_examples > 0 and len(chosen) < n_examples:
        warnings.append(
            f"{len(chosen)} few-shot example(s) of {n_examples} asked: not enough adjudicated "
            "disagreements of each verdict in the calibration split"
        )
    options = dict(base_prompt.options)
    options.pop("guidance", None)
    user = base_prompt.user
    if option:
        options["guidance"] = option
        user = with_guidance_slot(user)
    few_shot = tuple(few_shot_entry(a) for a in chosen) if n_examples > 0 else base_prompt.few_shot
    prompt = PromptTemplate(
        system=base_prompt.system,
        user=user,
        few_shot=few_shot,
        options=options,
        name=name or f"{judge.get('name')}-calibrated",
        parent_hash=base_prompt.content_hash,
    )
    examples = [example_record(a) for a in chosen] if n_examples > 0 else []
    pool = {
        "calibration_tasks": sorted(calib_tasks) if calibration else None,
        "held_out_tasks": sorted(held_out),
        "candidates": sum(
            1 for a in adjudicated if a.disagreement and (allowed is None or a.task_id in allowed)
        ),
        "requested": int(n_examples),
        "seed": int(seed),
        "tasks_used": sorted({a.task_id for a in chosen}) if n_examples > 0 else [],
        "adjudication_notes_left_out": len(notes) - len(used_notes),
    }
    card_out = dict(card)
    card_out["prompt_version"] = prompt.content_hash
    card_out["base_prompt_version"] = base_prompt.content_hash
    warnings.extend(str(n) for n in card.get("notes", []) if str(n) not in warnings)
    stamp = (created_at or datetime.now(UTC)).isoformat(timespec="seconds")
    return PromptPackage(
        prompt=prompt,
        judge=dict(judge),
        benchmark=benchmark,
        guidance=guidance,
        examples=examples,
        example_pool=pool,
        decision=decision_from_calibration(calibration, pass_threshold),
        card=card_out,
        warnings=warnings,
        created_at=stamp,
    )


# ---------------------------------------------------------------------------------------
# Schema, reading back
# ---------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def load_schema() -> dict[str, Any]:
    """The package's JSON Schema (``gradercal/schemas/prompt-package.schema.json``)."""
    text = (
        resources.files("gradercal")
        .joinpath("schemas/prompt-package.schema.json")
        .read_text("utf-8")
    )
    schema: dict[str, Any] = json.loads(text)
    return schema


def validate_package(obj: Any, *, source: str = "package") -> None:
    """Check ``obj`` against the JSON Schema and the package's hashes.

    Raises:
        ValidationError: Every schema violation (field = its JSON path, e.g.
            ``$.prompt.few_shot[0].criteria_met``); else a wrong ``prompt_version`` or
            ``integrity.package_hash`` (the package was edited after export).
    """
    import jsonschema

    validator = jsonschema.Draft202012Validator(load_schema())
    errors = sorted(validator.iter_errors(obj), key=lambda e: (list(e.absolute_path), e.message))
    if errors:
        raise ValidationError(Problem(source, None, e.json_path, e.message) for e in errors)
    problems = []
    try:
        prompt = prompt_from_dict(
            {k: obj["prompt"][k] for k in ("name", "parent_hash", "system", "user")}
            | {"few_shot": obj["prompt"]["few_shot"], "options": obj["prompt"]["options"]},
            source=source,
        )
    except ValidationError as exc:
        raise ValidationError(
            Problem(source, None, f"$.prompt.{p.field}" if p.field else "$.prompt", p.message)
            for p in exc.problems
        ) from None
    if prompt.content_hash != obj["prompt_version"]:
        problems.append(
            Problem(
                source,
                None,
                "$.prompt_version",
                f"hash mismatch: the prompt hashes to {prompt.content_hash[:12]}, the package "
                f"says {str(obj['prompt_version'])[:12]} (edited after export?)",
            )
        )
    body = {k: v for k, v in obj.items() if k != "integrity"}
    digest = stable_hash(body)
    if digest != obj["integrity"]["package_hash"]:
        problems.append(
            Problem(
                source,
                None,
                "$.integrity.package_hash",
                f"hash mismatch: the package hashes to {digest[:12]}, it says "
                f"{str(obj['integrity']['package_hash'])[:12]} (edited after export?)",
            )
        )
    if problems:
        raise ValidationError(problems)


def package_from_dict(obj: Any, *, source: str = "package") -> PromptPackage:
    """Read a package (the JSON form) after :func:`validate_package`."""
    validate_package(obj, source=source)
    p = obj["prompt"]
    prompt = PromptTemplate(
        system=p["system"],
        user=p["user"],
        few_shot=tuple(p["few_shot"]),
        options=p["options"],
        name=p.get("name"),
        parent_hash=p.get("parent_hash"),
    )
    return PromptPackage(
        prompt=prompt,
        judge=obj["judge"],
        benchmark=obj.get("benchmark"),
        guidance=obj["guidance"],
        examples=obj["examples"],
        example_pool=obj["example_pool"],
        decision=obj["decision"],
        card=obj["card"],
        warnings=obj.get("warnings", []),
        created_at=obj["created_at"],
        format_version=obj["format_version"],
        certificate=obj.get("certificate"),
    )


def to_json(package: PromptPackage) -> str:
    """The canonical JSON text (sorted keys, 2-space indent, UTF-8, final newline)."""
    return json.dumps(package.to_dict(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
