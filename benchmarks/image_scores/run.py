"""Seconds the image scores themselves take (no network): FID, KID, PRDC and IS on 10k samples.

Random float32 features stand in for pool3 (2,048-d) and the 1,008 logits; only the shapes matter
for the cost. Each score runs ``--repetitions`` times and keeps its best wall and process-CPU time
(the machine is shared: the best time is the one least disturbed). Usage:

    python benchmarks/image_scores/run.py [--n 10000] [--dim 2048] [--repetitions 1]
"""

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

from lipgan.metrics import image_scores as s


def timed(fn, repetitions: int):
    best_wall = best_cpu = float("inf")
    for _ in range(repetitions):
        wall, cpu = time.perf_counter(), time.process_time()
        value = fn()
        best_wall = min(best_wall, time.perf_counter() - wall)
        best_cpu = min(best_cpu, time.process_time() - cpu)
    return value, best_wall, best_cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--dim", type=int, default=2048)
    parser.add_argument("--repetitions", type=int, default=1)
    parser.add_argument("--out", default=str(Path(__file__).with_name("timings.json")))
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    real = rng.standard_normal((args.n, args.dim), dtype=np.float32)
    fake = (rng.standard_normal((args.n, args.dim), dtype=np.float32) * 1.1 + 0.05).astype(
        np.float32
    )
    logits = rng.standard_normal((args.n, 1008), dtype=np.float32) * 3
    stats = {}
    cases = {
        "stats (mean + covariance of one set)": lambda: s.feature_stats(real),
        "fid_from_stats (sqrtm)": lambda: s.fid_from_stats(*stats["real"], *stats["fake"]),
        "kid (100 subsets of 1000)": lambda: s.kid(real, fake),
        "prdc (k=5, chunks of 1000 rows)": lambda: s.prdc(real, fake),
        "inception_score (10 splits)": lambda: s.inception_score(logits),
    }
    stats["real"], stats["fake"] = s.feature_stats(real), s.feature_stats(fake)
    results = {
        "n": args.n,
        "dim": args.dim,
        "cpus": os.cpu_count(),
        "load_before": os.getloadavg()[0],
    }
    for name, fn in cases.items():
        value, wall, cpu = timed(fn, args.repetitions)
        scalar = isinstance(value, float) or (
            isinstance(value, (tuple, dict)) and not any(isinstance(v, np.ndarray) for v in value)
        )
        shown = value if scalar else None
        results[name] = {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "value": shown}
        print(f"{name}: {wall:.2f} s wall, {cpu:.2f} s CPU -> {shown}", flush=True)
    results["load_after"] = os.getloadavg()[0]
    Path(args.out).write_text(json.dumps(results, indent=1, default=str) + "\n")


if __name__ == "__main__":
    main()
