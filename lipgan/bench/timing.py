"""Timing with warm-up and repetitions: the only figures the harness reports are medians and spreads.

Each repetition times enough calls to last at least ``min_rep_seconds`` (chosen once from the first
timed call), so fast configurations are not dominated by timer and host jitter. The first call is
timed on its own: it is the compile/trace time a user waits for before training starts.
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from collections.abc import Callable


@dataclasses.dataclass
class Timing:
    first_call_s: float
    seconds_per_call: list[float]  # one entry per repetition (median over its calls)

    @property
    def median(self) -> float:
        return statistics.median(self.seconds_per_call)

    @property
    def spread(self) -> tuple[float, float]:
        return min(self.seconds_per_call), max(self.seconds_per_call)

    def as_dict(self, work_per_call: float) -> dict:
        """Throughput (``work_per_call`` units/s) as median and [min, max] over repetitions."""
        lo, hi = self.spread
        return {
            "first_call_s": self.first_call_s,
            "seconds_per_call": self.median,
            "throughput": work_per_call / self.median,
            "throughput_min": work_per_call / hi,
            "throughput_max": work_per_call / lo,
            "repetitions": len(self.seconds_per_call),
        }


def measure(
    call: Callable[[], object],
    *,
    repetitions: int = 5,
    warmup: int = 1,
    min_rep_seconds: float = 0.2,
    min_calls: int = 1,
    sync: Callable[[object], object] = lambda out: out,
) -> Timing:
    """Time ``call``: first call, ``warmup`` untimed calls, then ``repetitions`` timed groups.

    ``min_calls`` per repetition lets a periodic cost (a lazy penalty every k steps) be amortized.
    ``sync`` forces the result (e.g. ``.numpy()``) so asynchronous dispatch is not mistaken for speed.
    """
    if repetitions < 1:
        raise ValueError(f"repetitions must be >= 1, got {repetitions}")
    start = time.perf_counter()
    sync(call())
    first = time.perf_counter() - start
    probe = first
    for _ in range(warmup):
        start = time.perf_counter()
        sync(call())
        probe = time.perf_counter() - start
    calls = max(min_calls, int(min_rep_seconds / max(probe, 1e-9)))
    reps = []
    for _ in range(repetitions):
        start = time.perf_counter()
        for _ in range(calls):
            out = call()
        sync(out)
        reps.append((time.perf_counter() - start) / calls)
    return Timing(first, reps)
