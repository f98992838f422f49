"""The package as a promptfoo configuration (YAML) grading with ``llm-rubric``.

See :func:`to_promptfoo`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from gradercal.judge.prompts import PromptTemplate
from gradercal.prompt_package.package import PromptPackage

__all__ = ["to_promptfoo"]


def _raw(text: str) -> str:
    """Literal text inside a promptfoo (Nunjucks) template."""
    return "{% raw %}" + text.replace("{% endraw %}", "{ % endraw % }") + "{% endraw %}"


def _escape_template(text: str) -> str:
    """A gradercal template with Nunjucks' own ``{%``/``{#`` made literal."""
    return text.replace("{%", "{{ '{%' }}").replace("{#", "{{ '{#' }}")


_PROMPTFOO_FORMAT = (
    "\n\nOutput format for this harness (it replaces the one above): return only a JSON "
    'object {"reason": string, "pass": boolean, "score": number}, where "reason" is your '
    'explanation, "pass" is what "criteria_met" would be, and "score" is 1 when "pass" '
    "is true and 0 otherwise."
)


def _shot_values(p: PromptTemplate, ex: Mapping[str, Any]) -> dict[str, str]:
    tags = tuple(str(t) for t in ex.get("criterion_tags", ()))
    return {
        "task_prompt": str(ex.get("task_prompt", "")),
        "response": str(ex["response"]),
        "criterion": str(ex["criterion"]),
        "points": f"{int(ex.get('points', 0)):+d}",
        "criterion_tags": ", ".join(tags) or "(none)",
        "artifacts": "(none)",
        "guidance": p.guidance_for(str(ex["criterion"]), tags),
    }


def to_promptfoo(
    package: PromptPackage,
    tests: Sequence[Mapping[str, Any]] = (),
    *,
    provider: str | None = None,
) -> str:
    """A promptfoo configuration (YAML) grading with ``llm-rubric`` and this prompt.

    Each test (``{"task_id", "prompt", "rubric": [{"criterion", "points", "tags"}]}``)
    asks every criterion: ``llm-rubric`` for positive points, ``not-llm-rubric`` for
    negative ones (the test should fail when the undesirable thing happens), weighted by
    the points, with the benchmark's pass threshold as the test's threshold. Each
    assertion's ``rubricPrompt`` is the judge's conversation (system, few-shot pairs,
    user) in promptfoo's variables — ``{{ output }}`` the response, ``{{ rubric }}`` the
    criterion, ``{{ task_prompt }}`` a test variable — with the criterion's points, tags
    and guidance written in, asking for promptfoo's ``{reason, pass, score}`` reply. The
    shared messages are YAML anchors, so the file stays small.
    """
    import yaml

    from gradercal.judge.prompts import substitute

    p = package.prompt
    live = {
        "response": "{{ output }}",
        "criterion": "{{ rubric }}",
        "task_prompt": "{{ task_prompt }}",
        "artifacts": "(none)",
    }
    system_values = live | {"points": "", "criterion_tags": "", "guidance": ""}
    shared: list[dict[str, str]] = [
        {
            "role": "system",
            "content": substitute(_escape_template(p.system), system_values) + _PROMPTFOO_FORMAT,
        }
    ]
    for ex in p.few_shot:
        user = _raw(substitute(p.user, _shot_values(p, ex)))
        answer = {
            "reason": str(ex.get("explanation", "")),
            "pass": bool(ex["criteria_met"]),
            "score": 1 if ex["criteria_met"] else 0,
        }
        shared.append({"role": "user", "content": user})
        shared.append({"role": "assistant", "content": json.dumps(answer, ensure_ascii=False)})
    user_template = _escape_template(p.user)

    def rubric_prompt(criterion: str, points: int, tags: Sequence[str]) -> list[dict[str, str]]:
        values = live | {
            "points": f"{points:+d}",
            "criterion_tags": _raw(", ".join(tags) or "(none)"),
            "guidance": _raw(p.guidance_for(criterion, tuple(tags))),
        }
        return [*shared, {"role": "user", "content": substitute(user_template, values)}]

    threshold = float(package.decision.get("pass_threshold", 0.7))
    model = provider or (
        f"openai:chat:{package.judge['model']}" if package.judge.get("model") else None
    )
    default: dict[str, Any] = {"options": {"rubricPrompt": rubric_prompt("", 1, [])}}
    if model:
        default["options"]["provider"] = model
    config: dict[str, Any] = {
        "description": (
            f"gradercal calibrated judge {package.judge.get('name')}, prompt version "
            f"{package.prompt_version}"
        ),
        "prompts": ["{{task_prompt}}"],
        "providers": ["echo"],
        "defaultTest": default,
        "tests": [],
    }
    for t in tests:
        asserts = []
        for c in t.get("rubric", []):
            points = int(c.get("points", 1))
            tags = [str(x) for x in c.get("tags", [])]
            asserts.append(
                {
                    "type": "llm-rubric" if points >= 0 else "not-llm-rubric",
                    "value": str(c["criterion"]),
                    "weight": abs(points) or 1,
                    "metric": tags[0] if tags else "untagged",
                    "rubricPrompt": rubric_prompt(str(c["criterion"]), points, tags),
                }
            )
        config["tests"].append(
            {
                "description": str(t.get("task_id", "")),
                "vars": {"task_prompt": str(t.get("prompt", ""))},
                "threshold": threshold,
                "assert": asserts,
            }
        )
    header = (
        "# promptfoo configuration generated by `gradercal export-prompt`\n"
        f"# judge prompt version {package.prompt_version}\n"
        "# `providers: [echo]` is a placeholder: list the models you evaluate.\n"
    )
    dumped: str = yaml.safe_dump(config, sort_keys=False, allow_unicode=True, width=100)
    return header + dumped
