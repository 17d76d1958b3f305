"""How far a Fig. 1a critic is from its own step-N self along the way (why 600 critic steps per 1a
row: docs/fig1.md; the measurements: benchmarks/RESULTS.md, "`lipgan reproduce fig1`").

    python benchmarks/fig1_rows/convergence.py 25gaussians gradient_penalty,bjorck,aol \\
        300,400,500,600,700,800,1000

One run per row, the full run's settings (``--jit 1`` for XLA; the docs' numbers used 0), the
surface taken at each checkpoint: relative L2 distance of the mean-centred 128×128 surface to the
last checkpoint's, their correlation, mean ‖∇D‖ at the interpolates and the Lipschitz estimate.
"""

from __future__ import annotations

import argparse
import dataclasses
import json


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("toy_set")
    parser.add_argument("kinds", help="comma-separated 1a rows")
    parser.add_argument("checkpoints", help="comma-separated step counts, ascending")
    parser.add_argument("--jit", type=int, default=0)
    args = parser.parse_args()

    import numpy as np
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    from lipgan.core.plugins import load_registry
    from lipgan.data.toy import SAMPLERS
    from lipgan.metrics import diagnostics
    from lipgan.plots.toy import critic_surface
    from lipgan.reproduce import fig1_setup, fig1a

    load_registry()
    checkpoints = [int(x) for x in args.checkpoints.split(",")]
    s = dataclasses.replace(fig1_setup.FULL, a_steps=checkpoints[-1], a_jit_compile=bool(args.jit))
    real_all, fake_all = fig1a.fixed_generator_batches(args.toy_set, s)
    rng = np.random.default_rng(s.seed + 1)
    real = SAMPLERS[args.toy_set](s.points, rng)
    fake = fig1a.fixed_generator(real, rng)
    for kind in args.kinds.split(","):
        critic, train = fig1a.critic_trainer(kind, s)
        done, seen = 0, {}
        for k in checkpoints:
            train(real_all[done:k], fake_all[done:k], start=done)
            done = k
            surface = critic_surface(critic, s.lim, s.grid)[2].astype(np.float64)
            grads = diagnostics.gradient_norm_stats(critic, real, fake, seed=s.seed)
            estimate = diagnostics.empirical_lipschitz(critic, real, fake)
            seen[k] = (surface - surface.mean(), grads["interp/mean"], estimate)
        last = seen[checkpoints[-1]][0]
        for k in checkpoints:
            surface, interp, estimate = seen[k]
            row = {
                "toy_set": args.toy_set,
                "kind": kind,
                "step": k,
                "rel_l2_to_last": round(
                    float(np.linalg.norm(surface - last) / np.linalg.norm(last)), 4
                ),
                "corr_to_last": round(float(np.corrcoef(surface.ravel(), last.ravel())[0, 1]), 5),
                "interp_mean_grad_norm": round(interp, 4),
                "lipschitz_estimate": round(estimate, 4),
            }
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
