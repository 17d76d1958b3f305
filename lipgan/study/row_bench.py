"""Seconds per iteration of a tuned study's chosen rows, measured side by side in one process.

A study's cells run for hours beside whatever else the machine does, so their own clocks do not
compare rows (one GP cell took 1,315 s under load and 118 s on quiet cores). Here every chosen row
(data set × constraint, its chosen config, EMA on as in the replicates) is built as a
:class:`lipgan.Trainer` from the same gin a replicate uses (by the caller's ``build``), warmed up
(tracing and compilation), then timed in ``rounds`` rounds that visit the rows in turn, each round
training ``iterations`` more iterations per row; a row's figure is the median of its rounds.
Interleaving puts every row under the same machine conditions; the median drops a round a background
job disturbed.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from lipgan.core.machine import cores, cpu

#: The measurement's file in the tuned study's dir (read back by
#: :func:`lipgan.study.tune.load_bench`).
BENCH_FILE = "bench.json"

#: Rounds per row and iterations per round (a few seconds per row and round on a toy MLP).
ROUNDS = 5
ITERATIONS = 100


def machine() -> str:
    """CPU model, core count and the instruction sets that decide TF's kernels, in one line."""
    model, flags = cpu()
    simd = "AVX-512" if "avx512f" in flags else ("AVX2" if "avx2" in flags else "")
    return f"{model}, {cores()} cores{', ' + simd if simd else ''}"


def measure(
    cells: list,
    *,
    build: Callable,
    rounds: int = ROUNDS,
    iterations: int = ITERATIONS,
    log: Callable[[str], None] | None = None,
) -> dict:
    """``{'rows': [{'dataset', 'constraint', 'seconds_per_iteration', 'rounds'}], ...}``.

    One row per cell of ``cells`` (each chosen row's replicate of seed 0). ``build(cell)`` makes
    the Trainer a replicate cell trains, untrained (the gin edge's
    :func:`lipgan.config.cells.cell_trainer`, which finds a user data set's frozen copy where the
    caller says: ``OUT/data`` in a tuned study, :mod:`lipgan.study.own_data`)."""
    from lipgan.run.progress import Progress

    log = log or (lambda line: None)
    quiet = Progress(lambda line: None)
    trainers = []
    for cell in cells:
        trainer = build(cell)
        trainer.fit(iterations, progress=quiet)  # warm-up: tracing, compilation, first batches
        trainers.append(trainer)
        log(f"bench: built and warmed up {cell.dataset} {cell.constraint}")
    times: list[list[float]] = [[] for _ in cells]
    for r in range(rounds):
        for i, trainer in enumerate(trainers):
            target = trainer.step + iterations
            started = time.perf_counter()
            trainer.fit(target, progress=quiet)
            times[i].append((time.perf_counter() - started) / iterations)
        log(f"bench: round {r + 1} of {rounds}")
    rows = [
        {
            "dataset": cell.dataset,
            "constraint": cell.constraint,
            "seconds_per_iteration": statistics.median(t),
            "rounds": t,
        }
        for cell, t in zip(cells, times, strict=True)
    ]
    return {"rows": rows, "machine": machine(), "rounds": rounds, "iterations": iterations}


def write(out: Path, bench: dict) -> Path:
    path = Path(out) / BENCH_FILE
    path.write_text(json.dumps(bench, indent=2))
    return path
