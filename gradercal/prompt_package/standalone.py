"""The exported judge's kernel as standalone Python source (:func:`kernel_source`).

The exported Inspect AI module and promptfoo assertion must grade as gradercal does
without gradercal installed. Rather than a second implementation, they carry gradercal's
own code: :func:`kernel_source` concatenates the sources of the criterion types
(``AutoRule``, ``Criterion``, ``CriterionKind`` and ``stable_hash`` of
:mod:`gradercal.model`), of the message rendering of :mod:`gradercal.judge.prompts`
(``PromptContext``, ``render_messages``, ``substitute``, ``guidance_text``), of
:mod:`gradercal.rubric` (auto rules, credit, rubric score), of
:mod:`gradercal.judge.parse` (the reply and its log-probabilities), of
:mod:`gradercal.judge.request` (the request body and what a refusal drops) and of
:mod:`gradercal.prompt_package.kernel` (messages, request, decision), dropping the ``gradercal`` imports that the
concatenation makes local. Every name stays as gradercal defines it, so a test can
import the generated module and compare it with gradercal's functions directly.

The exported judges send text only: a prompt version with the ``vision`` option (a judge
that sees the tasks' figures) is refused (:func:`require_text_only`), never exported
with its figures silently dropped.
"""

from __future__ import annotations

import ast
import inspect
import re
import textwrap
from types import ModuleType
from typing import TYPE_CHECKING

from gradercal.errors import GradercalError

if TYPE_CHECKING:
    from gradercal.judge.prompts import PromptTemplate
    from gradercal.prompt_package.package import PromptPackage

__all__ = ["exported_judge", "glue_source", "kernel_source", "require_text_only", "strip_source"]

#: The tool each glue module runs in.
_TOOLS = {"inspect_judge": "Inspect AI", "promptfoo_assert": "promptfoo"}


def require_text_only(prompt: PromptTemplate, what: str) -> None:
    """Refuse ``what`` (e.g. ``the exported Inspect AI judge``) for a prompt that sends
    the tasks' figures: the exported judges send text only, and a judge without its
    figures would not grade as gradercal does.

    Raises:
        GradercalError: The prompt has the ``vision`` option (one line, saying what to do).
    """
    if prompt.vision is not None:
        raise GradercalError(
            f"prompt version {prompt.short_hash} sends the tasks' figures to the judge "
            f"(option vision), which {what} cannot do: export --format json or markdown, "
            "or a judge whose prompt version has no vision"
        )


def _body(module: ModuleType) -> tuple[list[str], str]:
    """A module's imports (``import …`` / ``from … import …`` lines of the standard
    library) and its source without them, its docstring, ``__future__`` import,
    ``__all__`` and imports of gradercal."""
    return _split(inspect.getsource(module), hoist=True)


def strip_source(source: str) -> str:
    """``source`` without its docstring, ``__future__`` import, ``__all__``, imports of
    gradercal and ``# ruff:`` file directives (other imports stay in place)."""
    return _split(source, hoist=False)[1]


def _split(source: str, *, hoist: bool) -> tuple[list[str], str]:
    source = "".join(
        line for line in source.splitlines(keepends=True) if not line.startswith("# ruff:")
    )
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    drop: set[int] = set()
    imports: list[str] = []
    for node in tree.body:
        first, last = node.lineno, node.end_lineno or node.lineno
        is_doc = (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
            and node is tree.body[0]
        )
        is_future = isinstance(node, ast.ImportFrom) and node.module == "__future__"
        is_ours = isinstance(node, ast.ImportFrom) and (node.module or "").startswith("gradercal")
        is_all = isinstance(node, ast.Assign | ast.AnnAssign) and any(
            isinstance(t, ast.Name) and t.id == "__all__"
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
        )
        is_import = isinstance(node, ast.Import | ast.ImportFrom) and not (is_future or is_ours)
        if hoist and is_import:
            imports.append(ast.unparse(node))
        if is_doc or is_future or is_ours or is_all or (hoist and is_import):
            drop.update(range(first, last + 1))
    kept = "".join(line for i, line in enumerate(lines, start=1) if i not in drop)
    return imports, re.sub(r"\n{3,}", "\n\n\n", kept).strip() + "\n"


def _definitions() -> tuple[list[str], str]:
    """The criterion types and ``stable_hash`` of :mod:`gradercal.model`, and the message
    rendering of :mod:`gradercal.judge.prompts`."""
    from gradercal import model
    from gradercal.judge import prompts

    parts = [
        inspect.getsource(model.CriterionKind),
        inspect.getsource(model.AutoRule),
        inspect.getsource(model.Criterion),
        inspect.getsource(model.stable_hash),
        f"_PLACEHOLDER = re.compile({prompts._PLACEHOLDER.pattern!r})\n",
        f"NO_GUIDANCE = {prompts.NO_GUIDANCE!r}\n",
        inspect.getsource(prompts.PromptContext),
        inspect.getsource(prompts.substitute),
        inspect.getsource(prompts.normalize_text),
        inspect.getsource(prompts.guidance_text),
        inspect.getsource(prompts.render_messages),
    ]
    imports = [
        "import hashlib",
        "import json",
        "import re",
        "from collections.abc import Mapping, Sequence",
        "from dataclasses import dataclass",
        "from enum import StrEnum",
        "from typing import Any",
    ]
    return imports, "\n\n".join(textwrap.dedent(p).strip() + "\n" for p in parts)


def _merged(imports: list[str]) -> list[str]:
    """The import lines, each ``from`` module once with its names merged and sorted."""
    plain: set[str] = set()
    names: dict[str, set[str]] = {}
    for line in imports:
        node = ast.parse(line).body[0]
        if isinstance(node, ast.Import):
            plain.update(f"import {a.name}" for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.setdefault(node.module, set()).update(a.name for a in node.names)
    froms = [f"from {mod} import {', '.join(sorted(ns))}" for mod, ns in sorted(names.items())]
    return sorted(plain) + froms


def kernel_source() -> str:
    """Standalone Python source of the judge kernel (standard library only).

    It has no ``from __future__ import annotations``: its annotations are evaluated
    (Python ≥ 3.10), so its dataclasses work in a module that a tool executes without
    registering it in ``sys.modules`` (as Inspect AI loads task files). Its imports come
    first; it defines, with gradercal's own code: ``Criterion``, ``AutoRule``,
    ``rubric_score``, ``evaluate_auto``, ``passes``, ``parse_reply``,
    ``p_met_from_logprobs``, ``substitute`` and the functions of
    :mod:`gradercal.prompt_package.kernel` (``build_messages``, ``request_body``,
    ``read_reply``, ``criteria_of``, ``decide``, …).
    """
    from gradercal import rubric
    from gradercal.judge import parse, request
    from gradercal.prompt_package import kernel

    sections = [
        (
            "criterion types and messages (gradercal.model, gradercal.judge.prompts)",
            _definitions(),
        ),
        ("auto rules and rubric scores (gradercal.rubric)", _body(rubric)),
        ("the judge's reply (gradercal.judge.parse)", _body(parse)),
        ("the judge's request (gradercal.judge.request)", _body(request)),
        ("messages, request and decision (gradercal.prompt_package.kernel)", _body(kernel)),
    ]
    imports = [line for _title, (lines, _text) in sections for line in lines]
    out = ["\n".join(_merged(imports)) + "\n"]
    for title, (_lines, text) in sections:
        out.append(f"# {'-' * 8} {title}\n")
        out.append(text)
    return "\n\n".join(out)


def glue_source(name: str) -> str:
    """The stripped source of glue module ``name`` of
    :mod:`gradercal.prompt_package.exported`, read as text (never imported: it imports
    the tool it runs in)."""
    from importlib.resources import files

    text = (files("gradercal.prompt_package.exported") / f"{name}.py").read_text("utf-8")
    return strip_source(text)


def _literal(text: str, indent: str = "    ") -> str:
    """``text`` as a parenthesised run of short string literals."""
    chunks = [text[i : i + 72] for i in range(0, len(text), 72)] or [""]
    return "(\n" + "".join(f"{indent}{c!r}\n" for c in chunks) + ")"


def exported_judge(package: PromptPackage, glue: str, header: str) -> str:
    """The whole exported file: ``header`` (a docstring), the kernel, then glue module
    ``glue`` of :mod:`gradercal.prompt_package.exported` with the package's prompt
    version, prompt, decision and judge settings (and, when the package has one, the
    judge's alignment certificate under ``"certificate"``, which the glue never reads)
    embedded in place of its ``PACKAGE_JSON = "{}"`` placeholder."""
    import json

    require_text_only(package.prompt, f"the exported {_TOOLS.get(glue, glue)} judge")
    body = package.to_dict()
    embedded = json.dumps(
        {
            "prompt_version": package.prompt_version,
            "prompt": body["prompt"],
            "decision": body["decision"],
            "judge": {
                "name": package.judge.get("name"),
                "model": package.judge.get("model"),
                "parameters": dict(package.judge.get("parameters") or {}),
            },
            # a record only: the glue never reads it, so the judge grades as without it
            **({} if "certificate" not in body else {"certificate": body["certificate"]}),
        },
        sort_keys=True,
        ensure_ascii=False,
    )
    text = glue_source(glue)
    marker = 'PACKAGE_JSON = "{}"'
    if marker not in text:  # pragma: no cover - every glue module defines it
        raise RuntimeError(f"the {glue} glue lost its PACKAGE_JSON placeholder")
    text = text.replace(marker, f"PACKAGE_JSON = {_literal(embedded)}", 1)
    return header + kernel_source() + f"\n\n# -------- {glue}\n\n" + text
