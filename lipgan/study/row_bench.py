"""Seconds per iteration of a tuned study's chosen rows, measured side by side in one process.

A study's cells run for hours beside whatever else the machine does, so their own clocks do not
compare rows (one GP cell took 1,315 s under load and 118 s on quiet cores). Here every chosen row
(data set × constraint, its chosen config, EMA on as in the replicates) is built as a
:class:`lipgan.Trainer` from the same gin a replicate uses (``build``:
:func:`lipgan.cell_process.cell_trainer`, the gin edge, which ``lipgan tune --bench`` passes), warmed up (tracing and compilation),
then timed in ``rounds`` rounds that visit the rows in turn, each round training ``iterations``
more iterations per row; a row's figure is the median of its rounds. Interleaving puts every row
under the same machine conditions; the median drops a round a background job disturbed.
"""

from __future__ import annotations

import json
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path

#: Rounds per row and iterations per round (a few seconds per row and round on a toy MLP).
ROUNDS = 5
ITERATIONS = 100


def machine() -> str:
    """CPU model, core count and the instruction sets that decide TF's kernels."""
    model, flags = platform.processor() or "?", ""
    try:
        text = Path("/proc/cpuinfo").read_text()
        model = next(ln.split(":", 1)[1].strip() for ln in text.splitlines() if "model name" in ln)
        flags = "AVX-512" if " avx512f" in text else ("AVX2" if " avx2" in text else "")
    except (OSError, StopIteration):
        pass
    import os

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{model}, {cores} cores{', ' + flags if flags else ''}"


def measure(
    spec,
    chosen: dict,
    *,
    rounds: int = ROUNDS,
    iterations: int = ITERATIONS,
    log: Callable[[str], None] | None = None,
    build: Callable,
) -> dict:
    """``{'rows': [{'dataset', 'constraint', 'seconds_per_iteration', 'rounds'}], ...}``;
    ``data_dir``: where a tuned study keeps its user data sets' frozen copies (``OUT/data``)."""
    from lipgan.progress import Progress
    from lipgan.study.tune import replicate_cells

    log = log or (lambda line: None)
    quiet = Progress(lambda line: None)
    cells = [c for c in replicate_cells(spec, chosen) if c.seed == 0]
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
    from lipgan.study.tune import BENCH_FILE

    path = Path(out) / BENCH_FILE
    path.write_text(json.dumps(bench, indent=2))
    return path
