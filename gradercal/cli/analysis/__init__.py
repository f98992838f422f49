"""CLI commands of the agreement and calibration engine.

``gradercal agreement``, ``alttest``, ``calibrate``, ``estimate``, ``health``, ``impact``
and ``surveys``: each reads a benchmark from the database (``--db``, ``--benchmark``),
prints readable tables, or with ``--json`` the stable shapes documented in
``docs/agreement.md``. They are registered lazily on the main group
(:class:`gradercal.cli.LazyGroup`), so importing this module costs nothing until one of
them runs; the statistics live in the core modules (:mod:`gradercal.analysis.agreement`,
:mod:`gradercal.analysis.alt_test`, :mod:`gradercal.analysis.calibration`, :mod:`gradercal.analysis.estimate`,
:mod:`gradercal.analysis.health`, :mod:`gradercal.analysis.impact`, :mod:`gradercal.analysis.surveys`).

Refusals (unknown judge, too little data, …) print ``error: …`` on stderr with exit
status 1; bad options exit with status 2.

One module per theme, on what they share (:mod:`gradercal.cli.analysis.common`):
:mod:`~gradercal.cli.analysis.reliability` (``agreement``, ``health``, ``surveys``),
:mod:`~gradercal.cli.analysis.judge_fit` (``alttest``, ``calibrate``, ``impact``) and
:mod:`~gradercal.cli.analysis.estimation` (``estimate``).
"""

from __future__ import annotations

from gradercal.cli.analysis.estimation import estimate
from gradercal.cli.analysis.judge_fit import alttest, calibrate, impact
from gradercal.cli.analysis.reliability import agreement, health, surveys

__all__ = ["agreement", "alttest", "calibrate", "estimate", "health", "impact", "surveys"]
