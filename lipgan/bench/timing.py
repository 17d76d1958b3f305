"""Timing with warm-up and interleaved repetitions: the harness reports only medians and spreads.

The machine may be shared and its load drifts over minutes, so timing configuration A fully and then
B would fold the drift into the A/B ratio. :func:`measure_interleaved` first compiles and warms every
case, then runs repetition 1 of every case, repetition 2 of every case, and so on: drift then hits all
cases alike and the ratios measured in one run stay meaningful. Each repetition times enough calls
to last at least ``min_rep_seconds`` (at least ``min_calls``, so a periodic cost such as a lazy penalty
every k steps is amortized over whole periods). The first call is timed on its own: it is the
compile/trace time a user waits for before training starts.
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from collections.abc import Callable


@dataclasses.dataclass
class Timing:
    first_call_s: float
    seconds_per_call: list[float]  # one entry per repetition (mean over its calls)

    @property
    def median(self) -> float:
        return statistics.median(self.seconds_per_call)

    def as_dict(self, work_per_call: float) -> dict:
        """Throughput (``work_per_call`` units/s) as median and [min, max] over repetitions."""
        lo, hi = min(self.seconds_per_call), max(self.seconds_per_call)
        return {
            "first_call_s": self.first_call_s,
            "seconds_per_call": self.median,
            "throughput": work_per_call / self.median,
            "throughput_min": work_per_call / hi,
            "throughput_max": work_per_call / lo,
            "repetitions": len(self.seconds_per_call),
        }


def _identity(out):
    return out


@dataclasses.dataclass
class Case:
    """One thing to time. ``call()`` does one unit of work; ``sync`` forces its result (``.numpy()``)
    so asynchronous dispatch is not mistaken for speed. ``rep`` (optional) times ``calls`` calls
    itself and returns the seconds per call (used for Keras ``fit``)."""

    call: Callable[[], object]
    sync: Callable[[object], object] = _identity
    min_calls: int = 1
    rep: Callable[[int], float] | None = None
    first_call_s: float = 0.0
    calls: int = 1
    seconds: list = dataclasses.field(default_factory=list)

    def prepare(self, warmup: int, min_rep_seconds: float) -> None:
        start = time.perf_counter()
        self.sync(self.call())
        self.first_call_s = probe = time.perf_counter() - start
        for _ in range(warmup):
            start = time.perf_counter()
            self.sync(self.call())
            probe = time.perf_counter() - start
        self.calls = max(self.min_calls, int(min_rep_seconds / max(probe, 1e-9)))

    def repetition(self) -> None:
        if self.rep is not None:
            self.seconds.append(self.rep(self.calls))
            return
        start = time.perf_counter()
        for _ in range(self.calls):
            out = self.call()
        self.sync(out)
        self.seconds.append((time.perf_counter() - start) / self.calls)

    def timing(self) -> Timing:
        return Timing(self.first_call_s, list(self.seconds))


def measure_interleaved(
    cases: list[Case],
    *,
    repetitions: int = 5,
    warmup: int = 1,
    min_rep_seconds: float = 0.2,
    before_prepare: Callable[[Case], None] = lambda case: None,
    after_prepare: Callable[[Case], None] = lambda case: None,
    log: Callable[[str], None] = lambda line: None,
) -> list[Timing]:
    """Prepare every case, then run ``repetitions`` rounds, each timing every case once."""
    if repetitions < 1:
        raise ValueError(f"repetitions must be >= 1, got {repetitions}")
    for case in cases:
        before_prepare(case)
        case.prepare(warmup, min_rep_seconds)
        after_prepare(case)
    for round_ in range(repetitions):
        for case in cases:
            case.repetition()
        log(f"repetition {round_ + 1}/{repetitions} of {len(cases)} cases done")
    return [case.timing() for case in cases]
