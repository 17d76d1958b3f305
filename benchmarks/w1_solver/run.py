"""Exact W1 at the PacGAN protocol's n = 2,500: POT's network simplex against scipy's assignment.

``lipgan.metrics.toy.wasserstein1`` solves the transport problem with ``ot.emd2``; before, it
solved the assignment problem with ``scipy.optimize.linear_sum_assignment``. Both give the same
optimum; this measures their cost on the pairs an evaluation meets: a sample near the data (a
trained generator, or the real-vs-real floor), a translated copy, a collapsed blob (an untrained
or collapsed generator) and uniform noise on the bounding box (a study's reference row). Each
solver keeps its best process-CPU time over ``--repetitions`` on the same cost matrix, the solvers
alternating, so load that comes and goes hits both alike. Usage:
python benchmarks/w1_solver/run.py [--n 2500] [--repetitions 3]
"""

import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import ot  # noqa: E402
from scipy.optimize import linear_sum_assignment  # noqa: E402
from scipy.spatial.distance import cdist  # noqa: E402

from lipgan.data.toy import SAMPLERS  # noqa: E402
from lipgan.metrics.toy import W1_MAX_PIVOTS  # noqa: E402


def assignment(cost):
    rows, cols = linear_sum_assignment(cost)
    return float(cost[rows, cols].mean())


def network_simplex(cost):
    weights = np.full(len(cost), 1.0 / len(cost))
    return float(ot.emd2(weights, weights, cost, numItermax=W1_MAX_PIVOTS))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2500)
    parser.add_argument("--repetitions", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    real = SAMPLERS["8gaussians"](args.n, rng)
    pairs = {
        "near (real vs real)": SAMPLERS["8gaussians"](args.n, rng),
        "translated by (3, -1)": SAMPLERS["8gaussians"](args.n, rng) + [3.0, -1.0],
        "collapsed blob (std 0.05)": rng.normal(0.0, 0.05, size=(args.n, 2)),
        "uniform on the bounding box": rng.uniform(-2.5, 2.5, size=(args.n, 2)),
    }
    solvers = {"scipy linear_sum_assignment": assignment, "POT emd2": network_simplex}
    print(f"n = {args.n}, best of {args.repetitions}, process CPU seconds; load {os.getloadavg()}")
    print("| pair | W1 | scipy assignment (s) | POT network simplex (s) | ratio |")
    print("|---|---|---|---|---|")
    for label, fake in pairs.items():
        cost = cdist(fake, real)
        best, values = {}, {}
        for _ in range(args.repetitions):
            for name, solve in solvers.items():
                start = time.process_time()
                values[name] = solve(cost)
                best[name] = min(best.get(name, np.inf), time.process_time() - start)
        a, b = values.values()
        assert abs(a - b) <= 1e-12 * max(a, 1.0), (label, a, b)
        t_lsa, t_pot = best.values()
        print(f"| {label} | {a:.6f} | {t_lsa:.2f} | {t_pot:.2f} | {t_lsa / t_pot:.1f}x |")


if __name__ == "__main__":
    main()
