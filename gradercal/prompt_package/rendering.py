"""One entry point for every output format of a package (:func:`render_files`).

:func:`~gradercal.prompt_package.package.to_json` (canonical),
:func:`~gradercal.prompt_package.render_markdown.to_markdown` (for people),
:func:`~gradercal.prompt_package.render_inspect.to_inspect` (Inspect AI scorer module),
:func:`~gradercal.prompt_package.render_promptfoo.to_promptfoo` (promptfoo configuration,
assertion and tests: three files).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, get_args

from gradercal.errors import GradercalError
from gradercal.prompt_package.package import PromptPackage, to_json
from gradercal.prompt_package.render_inspect import to_inspect
from gradercal.prompt_package.render_markdown import to_markdown
from gradercal.prompt_package.render_promptfoo import to_promptfoo

__all__ = ["MULTI_FILE_FORMATS", "PACKAGE_FORMATS", "PackageFormat", "render", "render_files"]

PackageFormat = Literal["json", "markdown", "inspect", "promptfoo"]
#: Every format a package renders to (``gradercal export-prompt --format``).
PACKAGE_FORMATS: tuple[PackageFormat, ...] = get_args(PackageFormat)
#: Formats written as several files beside the output (they cannot go to stdout).
MULTI_FILE_FORMATS: frozenset[str] = frozenset({"promptfoo"})


def render(package: PromptPackage, fmt: PackageFormat) -> str:
    """The package in one of the single-file formats."""
    if fmt == "json":
        return to_json(package)
    if fmt == "markdown":
        return to_markdown(package)
    if fmt == "inspect":
        return to_inspect(package)
    if fmt == "promptfoo":
        raise GradercalError("promptfoo is written as three files: use render_files")
    raise GradercalError(f"unknown format {fmt!r}; use json, markdown, inspect or promptfoo")


def render_files(
    package: PromptPackage,
    fmt: PackageFormat,
    name: str,
    samples: Sequence[Mapping[str, Any]] = (),
    *,
    model: str | None = None,
) -> dict[str, str]:
    """The files of the package in ``fmt``, by file name; ``name`` is the output's file
    name (its stem names the promptfoo files); ``model`` is the promptfoo judge's model
    (default: the judge's recorded one)."""
    if fmt == "promptfoo":
        stem = name.rsplit(".", 1)[0] if "." in name else name
        files = to_promptfoo(package, samples, stem=stem, model=model)
        return {name if n == f"{stem}.yaml" else n: text for n, text in files.items()}
    return {name: render(package, fmt)}
