"""CPU-seconds of the parts of `lipgan reproduce fig1`'s rows (lipgan/reproduce/fig1a.py and
fig1b.py), on one thread as in a `--jobs` worker: the 1a critic training per step and its fixed
cost (tracing or XLA compilation), the 1a evaluations, the 1b WGAN per iteration and its fixed
cost.

    python benchmarks/fig1_rows/run.py --part a --kind gradient_penalty --jit 0 --jit 1

A 1a training is run at two lengths (fresh model and function each time); per-step cost is the
difference over the difference in steps, the fixed cost what remains. A 1b WGAN is built, run for
one iteration (tracing or compiling included), then for ``--b-iterations`` more. Process CPU time
(``time.process_time``) is used because it is robust to other processes on shared cores. Run it
with another checkout's interpreter to time that checkout's code (settings it lacks are skipped).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time


def _cpu(fn, *args):
    """(process CPU seconds, result) of ``fn(*args)``."""
    started = time.process_time()
    out = fn(*args)
    return time.process_time() - started, out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--part", choices=("a", "b"), action="append")
    parser.add_argument("--kind", action="append", help="1a constraint(s); default all four")
    parser.add_argument("--b-config", action="append", help="1b row(s), e.g. gradient_penalty")
    parser.add_argument("--jit", type=int, action="append", help="0 = tf.function, 1 = XLA")
    parser.add_argument("--a-steps", type=int, nargs=2, default=(50, 250))
    parser.add_argument("--b-iterations", type=int, default=5)
    parser.add_argument("--toy-set", default="8gaussians")
    args = parser.parse_args()

    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    from lipgan.core.plugins import load_registry
    from lipgan.metrics import diagnostics
    from lipgan.plots.toy import critic_surface
    from lipgan.reproduce import fig1_setup, fig1a, fig1b

    load_registry()
    fields = {f.name for f in dataclasses.fields(fig1_setup.Settings)}
    full = fig1_setup.FULL

    def settings(jit, **changes):
        for key in ("a_jit_compile", "b_jit_compile"):
            if key in fields:
                changes[key] = bool(jit)
        return dataclasses.replace(full, **changes)

    jits = args.jit or [0]
    for part in args.part or ("a", "b"):
        if part == "a":
            for kind in args.kind or fig1a.FIG1A_KINDS:
                for jit in jits:
                    n1, n2 = args.a_steps
                    train = fig1a.train_critic_against_fixed_generator
                    t1, _ = _cpu(train, args.toy_set, kind, settings(jit, a_steps=n1))
                    s = settings(jit, a_steps=n2)
                    t2, (critic, _) = _cpu(train, args.toy_set, kind, s)
                    per_step = (t2 - t1) / (n2 - n1)
                    import numpy as np

                    from lipgan.data.toy import SAMPLERS

                    rng = np.random.default_rng(1)
                    real = SAMPLERS[args.toy_set](s.points, rng)
                    fake = fig1a.fixed_generator(real, rng)
                    row = {
                        "part": "a",
                        "kind": kind,
                        "jit": jit,
                        "ms_per_step": round(1e3 * per_step, 2),
                        "fixed_s": round(t1 - n1 * per_step, 2),
                        f"row_cpu_s_at_{full.a_steps}": round(
                            t1 + (full.a_steps - n1) * per_step, 1
                        ),
                        "surface_s": _cpu(critic_surface, critic, s.lim, s.grid)[0],
                        "grad_stats_s": _cpu(diagnostics.gradient_norm_stats, critic, real, fake)[
                            0
                        ],
                        "lipschitz_estimate_s": _cpu(
                            diagnostics.empirical_lipschitz, critic, real, fake
                        )[0],
                        "bound_s": _cpu(
                            fig1_setup._constraint(kind, s.a_clip_c).lipschitz_bound, critic
                        )[0],
                    }
                    print(json.dumps(row), flush=True)
        else:
            for kind, c in fig1b.FIG1B_CONFIGS:
                if args.b_config and fig1b._config_name(kind, c) not in args.b_config:
                    continue
                for jit in jits:
                    # build (b_iterations=0 trains nothing), one iteration (tracing or XLA
                    # compilation included), then more iterations through the same function
                    t_build, (wgan, data) = _cpu(
                        fig1b.train_deep_wgan, kind, c, settings(jit, b_iterations=0)
                    )
                    iterator = wgan.distribute(data)
                    t_first, _ = _cpu(wgan.iterate, iterator, 1)
                    n = args.b_iterations
                    t_more, _ = _cpu(wgan.iterate, iterator, n)
                    per_it = t_more / n
                    row = {
                        "part": "b",
                        "kind": fig1b._config_name(kind, c),
                        "jit": jit,
                        "s_per_iteration": round(per_it, 3),
                        "build_s": round(t_build, 2),
                        "first_call_s": round(t_first, 2),
                        f"row_cpu_s_at_{full.b_iterations}": round(
                            t_build + t_first + (full.b_iterations - 1) * per_it, 1
                        ),
                    }
                    print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
