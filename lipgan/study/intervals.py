"""Spreads and intervals over a row's seeds, one convention for every report.

* A **spread** is the standard deviation over seeds (ddof 1) printed with the number of seeds:
  how much one seed differs from the next.
* An **interval** is a 95 % percentile-bootstrap confidence interval of the seeds' mean
  (Efron & Tibshirani 1993, ch. 13): the seeds' values, sorted, are resampled with replacement
  :data:`RESAMPLES` times from a fixed RNG seed, and the interval runs from the 2.5 % to the
  97.5 % order statistic of the resampled means (no interpolation, so that a seed with an
  infinite reverse KL gives an infinite end rather than NaN). numpy only.

With one seed there is no spread and no interval: :func:`bootstrap_interval` returns None and
the reports say "one seed", never a made-up width. With few seeds (5) a percentile interval is
narrow (it never leaves the seeds' own range, and it covers the true mean less often than 95 %),
which the reports state beside it.
"""

from __future__ import annotations

import math

import numpy as np

#: Bootstrap resamples per interval, and the fixed seed of their RNG (same data, same interval).
RESAMPLES = 10_000
SEED = 0xB007  # fixed, so that the same seeds give the same interval; any value would do
LEVEL = 0.95


def bootstrap_interval(
    values, resamples: int = RESAMPLES, level: float = LEVEL, seed: int = SEED
) -> tuple[float, float] | None:
    """(low, high) of the percentile-bootstrap ``level`` interval of the mean of ``values``;
    None for fewer than two values (one seed has no interval). Infinite values are kept: a
    resample that draws one has an infinite mean."""
    # sorted: the interval is a function of the seeds' values, not of the order they were read in
    x = np.sort(np.asarray([float(v) for v in values], np.float64))
    if x.size < 2:
        return None
    if np.isnan(x).any():
        raise ValueError("bootstrap_interval: NaN among the values")
    rng = np.random.default_rng(seed)
    means = np.sort(x[rng.integers(0, x.size, size=(resamples, x.size))].mean(axis=1))
    tail = (1.0 - level) / 2
    low = means[max(math.ceil(tail * resamples) - 1, 0)]
    high = means[min(math.ceil((1.0 - tail) * resamples) - 1, resamples - 1)]
    return float(low), float(high)


def spread(values) -> float:
    """The standard deviation over seeds (ddof 1) of the finite ``values``; NaN below two."""
    finite = [float(v) for v in values if math.isfinite(float(v))]
    return float(np.std(finite, ddof=1)) if len(finite) > 1 else math.nan


def mean_of(values) -> float:
    """The plain mean (infinite when any value is: a seed without high-quality sample)."""
    return float(np.mean([float(v) for v in values]))


def fmt_interval(interval: tuple[float, float] | None, scale: float, digits: int) -> str:
    """``[low, high]`` scaled, ∞ where infinite; "one seed: no interval" for None."""
    if interval is None:
        return "one seed: no interval"

    def one(v: float) -> str:
        return "∞" if math.isinf(v) else f"{v * scale:.{digits}f}"

    return f"[{one(interval[0])}, {one(interval[1])}]"
