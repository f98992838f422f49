"""One entry point for every output format of a package (:func:`render`).

:func:`~gradercal.prompt_package.package.to_json` (canonical),
:func:`~gradercal.prompt_package.render_markdown.to_markdown` (for people),
:func:`~gradercal.prompt_package.render_inspect.to_inspect` (Inspect AI scorer module),
:func:`~gradercal.prompt_package.render_promptfoo.to_promptfoo` (promptfoo ``llm-rubric``
configuration).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from gradercal.errors import GradercalError
from gradercal.prompt_package.package import PromptPackage, to_json
from gradercal.prompt_package.render_inspect import to_inspect
from gradercal.prompt_package.render_markdown import to_markdown
from gradercal.prompt_package.render_promptfoo import to_promptfoo

__all__ = ["PackageFormat", "render"]

PackageFormat = Literal["json", "markdown", "inspect", "promptfoo"]


def render(
    package: PromptPackage, fmt: PackageFormat, tests: Sequence[Mapping[str, Any]] = ()
) -> str:
    """The package in one of the formats."""
    if fmt == "json":
        return to_json(package)
    if fmt == "markdown":
        return to_markdown(package)
    if fmt == "inspect":
        return to_inspect(package)
    if fmt == "promptfoo":
        return to_promptfoo(package, tests)
    raise GradercalError(f"unknown format {fmt!r}; use json, markdown, inspect or promptfoo")
