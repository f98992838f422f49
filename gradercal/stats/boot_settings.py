"""The bootstrap settings of one analysis, as one value: :class:`BootSettings`.

An engine that reports task-clustered bootstrap intervals takes ``n_boot``, ``seed`` and
``ci``; a caller that runs several engines (the dashboard) carries the three as one
:class:`BootSettings` and hands each engine :meth:`BootSettings.kwargs`, instead of
forwarding three arguments through every layer.

This module imports nothing beyond the standard library.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

__all__ = ["BootKwargs", "BootSettings"]


class BootKwargs(TypedDict):
    """The keyword arguments of an engine's bootstrap (``**settings.kwargs()``)."""

    n_boot: int
    seed: int
    ci: float


@dataclass(frozen=True)
class BootSettings:
    """Task-clustered bootstrap settings.

    Attributes:
        n_boot: Resamples (0: no intervals).
        seed: The resampling seed.
        ci: Confidence level, in (0, 1).
    """

    n_boot: int
    seed: int = 0
    ci: float = 0.95

    def check(self) -> None:
        """Raise ``ValueError`` for an out-of-range setting (``ci`` first, then
        ``n_boot``, with the messages the engines use)."""
        if not 0.0 < self.ci < 1.0:
            raise ValueError("ci must be between 0 and 1")
        if self.n_boot < 0:
            raise ValueError("n_boot must be ≥ 0")

    def kwargs(self) -> BootKwargs:
        """``{"n_boot", "seed", "ci"}``, to pass to an engine."""
        return {"n_boot": self.n_boot, "seed": self.seed, "ci": self.ci}
