"""The catalogue of figures and its views, checked against the engines that report them.

Every figure gradercal reports has one entry; every list of figures a part of gradercal
uses is a view of the catalogue. These tests iterate the catalogue and its views (never a
list of keys), so a figure added to the catalogue is checked here without editing them.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from gradercal.stats import ICC_KINDS, LEVELS, STATISTICS
from gradercal.stats import catalogue as cat
from gradercal.stats.catalogue import FIGURES, VIEWS, in_view, view


def test_the_catalogue_is_the_registry_and_restates_the_levels_right() -> None:
    assert STATISTICS is FIGURES
    assert cat._LEVELS == LEVELS and cat._ICC_KINDS == ICC_KINDS


def test_every_view_is_nonempty_ranked_and_known() -> None:
    for name in VIEWS:
        keys = view(name)
        assert keys and len(set(keys)) == len(keys), name
        ranks = [FIGURES[k].rank(name) for k in keys]
        assert ranks == sorted(ranks), name  # type: ignore[type-var]
        assert tuple(f.key for f in in_view(name)) == keys
    with pytest.raises(KeyError, match="unknown view"):
        view("no_such_view")
    with pytest.raises(ValueError, match="unknown views"):
        cat._in(no_such_view=1)
    for f in FIGURES.values():
        assert {v for v, _ in f.views} <= set(VIEWS), f.key


def test_the_comparison_view_is_what_the_agreement_engine_computes() -> None:
    from gradercal.analysis.agreement import compare, comparison_metrics

    assert set(comparison_metrics(np.array([3.0, 1.0, 2.0, 4.0]))) == set(view("comparison"))
    c = compare([True, False], [False, False], ["t", "t"], n_boot=0)
    assert tuple(c.metrics) == view("comparison")
    for f in in_view("comparison"):
        assert f.undefined, f.key  # a ratio whose denominator can be zero says why


def test_the_views_fit_together() -> None:
    # the experts' statistics are resampled by the bootstrap and computed directly
    for f in in_view("human"):
        assert f.compute is not None and f.resample is not None and f.levels, f.key
    for name in ("acceptance", "version"):
        for f in in_view(name):
            assert f.compute is not None and "nominal" in f.levels, (name, f.key)
    assert set(view("wilson")) <= set(view("acceptance"))
    assert set(view("judge")) <= set(view("comparison"))
    assert set(view("version_judge")) <= set(view("comparison"))
    assert set(view("version")) <= set(view("human"))
    assert set(view("headline")) <= set(view("human"))
    # every statistic the dashboard's agreement table shows has a column rank
    assert set(view("columns")) == set(view("human")) | set(view("judge"))


def test_every_subset_of_gradercal_is_a_view() -> None:
    from gradercal.analysis import agreement, versions
    from gradercal.cli import tasks
    from gradercal.dashboard import result
    from gradercal.ops import acceptance
    from gradercal.stats import bootstrap
    from gradercal.ui.dashboard import data

    assert agreement.HUMAN_STATISTICS == view("human") == bootstrap.DEFAULT_STATISTICS
    assert view("comparison") == agreement.COMPARISON_METRICS
    assert [f.label for f in agreement.COMPARISON_FIGURES] == [
        f.comparison_label or f.phrase for f in in_view("comparison")
    ]
    assert view("judge") == result.JUDGE_STATISTICS
    assert view("columns") == data.STAT_ORDER and view("headline") == data.EXPERT_HEADLINE
    assert acceptance.STATISTICS == view("acceptance") == tasks._ACCEPT_STATISTICS
    assert view("wilson") == acceptance._WILSON_STATISTICS
    assert view("version") == versions.VERSION_STATISTICS
    assert view("version_judge") == versions.JUDGE_FIGURES


def test_the_rendered_comparison_labels_are_unchanged() -> None:
    from gradercal.analysis.agreement import COMPARISON_FIGURES

    labels = {f.key: f.label for f in COMPARISON_FIGURES}
    assert labels["percent_agreement"] == "agreement"
    assert labels["candidate_met_rate"] == "met rate"
    assert labels["precision_not_met"] == "precision (not met)"
    assert {f.key: f.undefined for f in COMPARISON_FIGURES}["cohen_kappa"] == (
        "no variation: chance agreement is 1 (both used a single category)"
    )


def test_the_catalogue_and_the_accept_command_load_no_numpy() -> None:
    code = (
        "import sys, gradercal.stats.catalogue, gradercal.cli.tasks\n"
        "print(sorted(m for m in ('pandas', 'numpy', 'scipy') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
