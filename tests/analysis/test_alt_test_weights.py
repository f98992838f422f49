"""The task-clustered alt-test p-value with kept resampling weights equals the reference
that draws them on every call (issue #18: same seed → exactly the same numbers)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gradercal.analysis.alt_test import clustered_p_value


def reference_p_value(
    d: np.ndarray, cluster: np.ndarray, epsilon: float, n_boot: int, seed: int
) -> tuple[float | None, float | None, str | None]:
    """The p-value as computed before the weights were kept (drawn here every call)."""
    g = int(cluster.max()) + 1
    sums = np.bincount(cluster, weights=d, minlength=g)
    counts = np.bincount(cluster, minlength=g).astype(np.float64)
    total = float(counts.sum())
    mean = float(sums.sum()) / total
    resid = sums - mean * counts
    se = math.sqrt(g / (g - 1) * float(np.sum(resid * resid))) / total
    assert se > 1e-15
    t = (mean - epsilon) / se
    rng = np.random.default_rng(seed)
    # each resample: g cluster indices drawn with replacement (32-bit), counted
    drawn = rng.integers(0, g, size=(n_boot, g), dtype=np.int32)
    w = np.zeros((n_boot, g))
    np.add.at(w, (np.repeat(np.arange(n_boot), g), drawn.ravel()), 1.0)
    s_b = w @ sums
    n_b = w @ counts
    m_b = s_b / n_b
    q = w @ (sums * sums) - 2.0 * m_b * (w @ (sums * counts)) + m_b * m_b * (w @ (counts * counts))
    se_b = np.sqrt(np.maximum(g / (g - 1) * q, 0.0)) / n_b
    ok = se_b > 1e-15
    t_b = (m_b[ok] - mean) / se_b[ok]
    p = (1.0 + float(np.sum(t_b <= t))) / (1.0 + float(len(t_b)))
    note = None
    if len(t_b) < n_boot:
        note = f"{n_boot - len(t_b)} of {n_boot} resamples without spread dropped"
    return t, p, note


@pytest.mark.parametrize(("g", "seed", "n_boot"), [(3, 3, 4999), (40, 0, 1999), (750, 7, 999)])
def test_kept_weights_give_exactly_the_reference_p_value(g: int, seed: int, n_boot: int) -> None:
    rng = np.random.default_rng(g)
    # Several "experts" on the same clusters (what the alt-test does), each twice.
    cluster = np.sort(rng.integers(0, g, size=6 * g)).astype(np.intp)
    cluster[:g] = np.arange(g)  # every code present
    cluster.sort()
    for expert in range(3):
        d = rng.normal(0.1 * expert, 1.0, size=len(cluster))
        want = reference_p_value(d, cluster, 0.1, n_boot, seed)
        assert clustered_p_value(d, cluster, 0.1, n_boot=n_boot, seed=seed) == want
        assert clustered_p_value(d, cluster, 0.1, n_boot=n_boot, seed=seed) == want
    # another seed: other resamples
    d = rng.normal(0.0, 1.0, size=len(cluster))
    assert clustered_p_value(d, cluster, 0.1, n_boot=n_boot, seed=seed + 1) == reference_p_value(
        d, cluster, 0.1, n_boot, seed + 1
    )
