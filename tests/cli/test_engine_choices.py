"""Options that name one of an engine's choices take the engine's own list.

``--method``/``--calibration`` (calibration methods), ``export-prompt --format`` (package
formats), ``judge run --response-format`` and ``stats --ci-method``: a name added to the
engine is offered, listed in ``--help`` and accepted with no edit of the command line —
and importing the command modules still loads no engine.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable

import click
import pytest

from gradercal.analysis import calibration
from gradercal.cli import analysis, judge, prompt, stats
from gradercal.judge import client
from gradercal.prompt_package import rendering
from gradercal.stats import bootstrap


def _choices(command: click.Command, option: str) -> tuple[str, ...]:
    (param,) = [p for p in command.params if p.name == option]
    assert isinstance(param.type, click.Choice)
    return tuple(param.type.choices)


def _run_command() -> click.Command:
    assert isinstance(judge.judge, click.Group)
    return judge.judge.commands["run"]


# (command, option, the engine module, its list, what the option adds around it)
OPTIONS: list[tuple[Callable[[], click.Command], str, object, str, tuple[str, ...]]] = [
    (lambda: analysis.calibrate, "method", calibration, "METHODS", ()),
    (lambda: analysis.impact, "calibration", calibration, "METHODS", ("active", "none")),
    (lambda: prompt.export_prompt, "fmt", rendering, "PACKAGE_FORMATS", ()),
    (_run_command, "response_format", client, "RESPONSE_FORMATS", ()),
]


@pytest.mark.parametrize(("command", "option", "engine", "name", "around"), OPTIONS)
def test_an_option_offers_what_its_engine_lists(
    monkeypatch: pytest.MonkeyPatch,
    command: Callable[[], click.Command],
    option: str,
    engine: object,
    name: str,
    around: tuple[str, ...],
) -> None:
    listed = tuple(getattr(engine, name))
    assert _choices(command(), option) == (*around, *listed)
    monkeypatch.setattr(engine, name, (*listed, "added-by-the-engine"))
    assert _choices(command(), option) == (*around, *listed, "added-by-the-engine")


def test_stats_ci_methods_are_the_bootstraps() -> None:
    assert _choices(stats.stats, "ci_method") == bootstrap.CI_METHODS


def test_importing_the_command_modules_loads_no_engine() -> None:
    code = (
        "import sys, gradercal.cli.analysis, gradercal.cli.prompt, gradercal.cli.judge\n"
        "print(sorted(m for m in ('pandas', 'numpy', 'sklearn', 'aiohttp') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
