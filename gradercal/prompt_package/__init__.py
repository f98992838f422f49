"""The calibrated judge-prompt package: what a team ships after checking its judge.

A :class:`PromptPackage` bundles, for one judge grader:

* **prompt** — the judge's system and user templates, extended with the rubric guidance
  (the ``guidance`` option, rendered per request into ``{{guidance}}``) and few-shot
  examples; its content hash is the **prompt version** (sha256 of the canonical JSON of
  templates, examples and options, :attr:`PromptTemplate.content_hash`), the id the
  database stores it under;
* **guidance** — rubric guidance distilled from the experts, deterministically (no
  LLM): the coordinators' answers to clarification questions (first), the notes of
  "criterion unclear" flags and of adjudications, whitespace-normalised, deduplicated case-insensitively, grouped per criterion with counts and
  authors; per criterion tag, the counts of adjudicated items where the judge said
  met / not met against the final verdict and, when one direction dominates, one rule
  (:func:`distill_guidance`);
* **examples** — few-shot examples chosen from adjudicated disagreements
  (:func:`select_examples`): balanced met / not met, spread over criterion tags,
  deterministic for a seed, and drawn only from the tasks of the calibration split
  (:func:`split_tasks`), never from a held-out task (adjudication notes and the
  per-tag counts are limited to those tasks too: they reveal final verdicts);
* **decision** — the threshold or score mapping of the judge's calibration
  (:func:`decision_from_calibration`);
* **card** — the agreement card: held-out agreement with the experts (with CIs) from the
  calibration — its test figures on the tasks it held out (``gradercal calibrate
  --holdout``), which nothing in the package has seen, or, for a calibration without
  held-out tasks, its out-of-fold figures with a plain warning that the examples may
  come from the same tasks — judge-vs-experts agreement on all data, the expert–expert
  range, the alt-test, leniency, provenance with the split (:func:`agreement_card`).

Renderers: :func:`to_json` (canonical, versioned by ``format_version``; validated by
``gradercal/schemas/prompt-package.schema.json``), :func:`to_markdown` (for people),
:func:`to_inspect` (a scorer module for Inspect AI), :func:`to_promptfoo` (an
``llm-rubric`` configuration). :func:`package_from_dict` reads JSON back and refuses a
package that fails the schema (with the JSON path) or whose hashes do not match.

Modules: :mod:`~gradercal.prompt_package.inputs` (the input records),
:mod:`~gradercal.prompt_package.guidance`, :mod:`~gradercal.prompt_package.examples`,
:mod:`~gradercal.prompt_package.card` (decision rule and agreement card),
:mod:`~gradercal.prompt_package.package` (:class:`PromptPackage`, :func:`build_package`,
JSON, schema, reading back), :mod:`~gradercal.prompt_package.render_markdown`,
:mod:`~gradercal.prompt_package.render_inspect`,
:mod:`~gradercal.prompt_package.render_promptfoo` and
:mod:`~gradercal.prompt_package.rendering` (:func:`render`, the format dispatcher). This
package re-exports their public names.

Core module: no Qt, no SQL; the database side is :mod:`gradercal.db.prompt_sources`.
"""

from __future__ import annotations

from gradercal.prompt_package.card import (
    NO_HOLDOUT_NOTE,
    agreement_card,
    decision_from_calibration,
    has_held_out_figures,
)
from gradercal.prompt_package.examples import select_examples, split_tasks
from gradercal.prompt_package.guidance import distill_guidance, guidance_option, with_guidance_slot
from gradercal.prompt_package.inputs import AdjudicatedItem, ExpertNote
from gradercal.prompt_package.package import (
    FORMAT_VERSION,
    PromptPackage,
    build_package,
    load_schema,
    package_from_dict,
    to_json,
    validate_package,
)
from gradercal.prompt_package.render_inspect import to_inspect
from gradercal.prompt_package.render_markdown import to_markdown
from gradercal.prompt_package.render_promptfoo import to_promptfoo
from gradercal.prompt_package.rendering import (
    MULTI_FILE_FORMATS,
    PackageFormat,
    render,
    render_files,
)

__all__ = [
    "FORMAT_VERSION",
    "MULTI_FILE_FORMATS",
    "NO_HOLDOUT_NOTE",
    "AdjudicatedItem",
    "ExpertNote",
    "PackageFormat",
    "PromptPackage",
    "agreement_card",
    "build_package",
    "decision_from_calibration",
    "distill_guidance",
    "guidance_option",
    "has_held_out_figures",
    "load_schema",
    "package_from_dict",
    "render",
    "render_files",
    "select_examples",
    "split_tasks",
    "to_inspect",
    "to_json",
    "to_markdown",
    "to_promptfoo",
    "validate_package",
    "with_guidance_slot",
]
