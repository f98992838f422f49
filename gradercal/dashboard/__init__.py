"""The coordinator's dashboard: every figure of the agreement view, computed at once.

:func:`compute_dashboard` reads :class:`~gradercal.frames.Frames` and returns a
:class:`Dashboard` — plain pandas tables and dicts that the Qt dashboard shows, the HTML /
PDF report (:mod:`gradercal.dashboard.report`) prints and ``--json`` serialises. Nothing here is new
statistics: every number comes from the engines the CLI uses, called with the same
arguments, so the dashboard shows what ``gradercal agreement``, ``alttest``, ``impact``,
``estimate``, ``calibrate`` and ``health`` print.

The package, in the order a computation goes through it:

* :mod:`gradercal.dashboard.filters` — :class:`DashboardFilters`: which models, workflows,
  domains and experts the dashboard looks at, and the values each filter can take;
* :mod:`gradercal.dashboard.inputs` — :class:`DashboardInputs`: the data
  (:class:`DashboardData`, read by one loader, ``gradercal.db.dashboard_data``) and the
  request (:class:`DashboardRequest`: judge, filters, calibration, bootstrap…);
* :mod:`gradercal.dashboard.compute` — :func:`compute_dashboard`: the primary judge, the
  order of the sections, progress and cancellation, the forked child of ``processes=2``,
  :func:`preload`;
* :mod:`gradercal.dashboard.sections` — one function per section: what it computes from
  the frames, and with which engine;
* :mod:`gradercal.dashboard.result` — the :class:`Dashboard` result, the labels and
  columns of its tables and its JSON form;
* :mod:`gradercal.dashboard.charts` — the matplotlib figures of a :class:`Dashboard`;
* :mod:`gradercal.dashboard.report` — the self-contained HTML / PDF report.

Every public name of the computation is importable from this package. Importing it loads
pandas, numpy and gradercal's core only (no SQL, no Qt, no matplotlib).
"""

from __future__ import annotations

from gradercal.dashboard.compute import (
    DEFAULT_CALIBRATION_METHOD,
    DEFAULT_N_BOOT,
    HEADLINE_FIELDS,
    Cancelled,
    ProgressCallback,
    compute_dashboard,
    headline_of,
    preload,
    primary_judge,
)
from gradercal.dashboard.filters import NO_VALUE, DashboardFilters, filter_frames, filter_options
from gradercal.dashboard.inputs import DashboardData, DashboardInputs, DashboardRequest
from gradercal.dashboard.result import (
    AGREEMENT_COLUMNS,
    EXPERTS,
    GROUP_BYS,
    JUDGE_STATISTICS,
    MODEL_SOURCES,
    UNTAGGED,
    Dashboard,
    pairwise_matrix,
)

__all__ = [
    "AGREEMENT_COLUMNS",
    "DEFAULT_CALIBRATION_METHOD",
    "DEFAULT_N_BOOT",
    "EXPERTS",
    "GROUP_BYS",
    "HEADLINE_FIELDS",
    "JUDGE_STATISTICS",
    "MODEL_SOURCES",
    "NO_VALUE",
    "UNTAGGED",
    "Cancelled",
    "Dashboard",
    "DashboardData",
    "DashboardFilters",
    "DashboardInputs",
    "DashboardRequest",
    "ProgressCallback",
    "compute_dashboard",
    "filter_frames",
    "filter_options",
    "headline_of",
    "pairwise_matrix",
    "preload",
    "primary_judge",
]
