"""Run a function with a bounded number of BLAS threads.

The engines' matrix products are small (resamples × tasks): a second BLAS thread buys
nothing, and on a busy machine its spinning workers cost time. :func:`blas_limited`
caps the BLAS thread pools while the decorated function runs (threadpoolctl, a dependency
of scikit-learn; without it, the function runs unchanged). The numbers do not depend on
the thread count when the products are sums of counts.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

__all__ = ["blas_limited"]

_P = ParamSpec("_P")
_R = TypeVar("_R")


def blas_limited(threads: int | None) -> Callable[[Callable[_P, _R]], Callable[_P, _R]]:
    """A decorator: ``fn`` run with at most ``threads`` BLAS threads (None: leave the
    library's default; without threadpoolctl, unchanged)."""

    def decorate(fn: Callable[_P, _R]) -> Callable[_P, _R]:
        @functools.wraps(fn)
        def run(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            if threads is None:
                return fn(*args, **kwargs)
            try:
                from threadpoolctl import (  # type: ignore[import-untyped, unused-ignore]
                    threadpool_limits,
                )
            except ImportError:  # pragma: no cover - installed with scikit-learn
                return fn(*args, **kwargs)
            with threadpool_limits(limits=threads, user_api="blas"):
                return fn(*args, **kwargs)

        return run

    return decorate
