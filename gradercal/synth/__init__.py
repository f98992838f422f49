"""Synthetic benchmarks with known ground truth.

:func:`generate` writes a complete benchmark folder in format v1 (see ``docs/formats.md``):
tasks with weighted rubrics and artifact files, one response per model and task, and the
verdicts of simulated human experts and an LLM judge. Alongside it writes the truth the
graders were simulated from, so statistics computed from the folder can be checked
against it:

* ``truth.jsonl``: one line per (response, criterion), ``auto`` criteria included:
  ``{"response_id", "criterion_id", "met", "task_id", "model"}``, plus ``"level"`` (the
  true ordinal level) on 3-level criteria.
* ``truth.json``: the configuration, each grader's true sensitivity, specificity and
  per-tag leniency, each model's latent quality, true mean score and true pass rate.

The generative model:

* Every model ``model-a``, ``model-b``, … has a latent quality (``model-a`` is the best);
  every criterion a latent difficulty (task effect included). A positive criterion is
  truly met with probability ``sigmoid(quality - difficulty + 1)``; a penalty (negative
  points) truly applies with probability ``sigmoid(-1 - 0.8 * quality + 0.5 * difficulty)``,
  so good models incur fewer penalties.
* On a 3-level criterion (``"levels": 3``) the true level is 2 when met; when not met it
  is 1 ("partial") with probability 0.4, else 0. True scores credit
  ``points * level / (levels - 1)``, as :mod:`gradercal.analysis.scoring` does.
* A human says "met" with probability ``human_sensitivity`` when the criterion is truly
  met and ``1 - human_specificity`` when it is not; the judge likewise with its own
  rates, plus ``judge_leniency[tag]`` (the largest over the criterion's tags) on truly
  unmet criteria. Verdicts are independent given the truth. A "met" verdict on a
  3-level criterion has level 2; a "not met" one is partial mostly when the truth is
  partial or met. The judge's ``confidence`` is higher when its verdict is right.
  Humans occasionally add a rationale, and flag ambiguous criteria as unclear.
* ``auto`` criteria are never judged; the response's ``answer`` lands inside the
  tolerance exactly when the criterion is truly met (or lacks the key, 10% of misses).

Generation is deterministic: the same :class:`SynthConfig` writes byte-identical files.
Random numbers come from independent streams spawned from
``numpy.random.default_rng(seed)``, so tasks, responses and truth do not change when only
the graders (``human_graders``, ``judge``, ``overlap``, their rates) change.

The package is split by step: :mod:`~gradercal.synth.config` (what is asked for),
:mod:`~gradercal.synth.vocabulary` (the words), :mod:`~gradercal.synth.plan` (tasks and
rubrics), :mod:`~gradercal.synth.simulate` (responses and truth),
:mod:`~gradercal.synth.artifacts` (artifact files) and :mod:`~gradercal.synth.writer`
(:func:`generate`). It is core code: it needs numpy and the standard library only.
"""

from __future__ import annotations

from gradercal.synth.config import SynthConfig, SynthSummary, model_name
from gradercal.synth.vocabulary import AXIS_TAGS, DOMAINS, WORKFLOWS
from gradercal.synth.writer import generate

__all__ = [
    "AXIS_TAGS",
    "DOMAINS",
    "WORKFLOWS",
    "SynthConfig",
    "SynthSummary",
    "generate",
    "model_name",
]
