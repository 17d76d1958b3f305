"""The closed-form test beds of lipgan.testing.testbeds, every constraint × activation: prints docs
tables.

    python docs/dual_problems.py [--iterations 300] [--problem cone ...]

One row per (problem, constraint, activation): the critic gap E D(real) − E D(fake) on 4,096 fresh
samples beside the exact W1 of those samples, the mean ‖∇D‖ at interpolates, and the audit's lower
and (where the construction has one) upper Lipschitz bound. docs/plugins.md quotes its output.
"""

import argparse

import numpy as np

ROWS = [
    ("gradient_penalty", "relu"),
    ("spectral_norm", "relu"),
    ("spectral_norm", "maxmin"),
    ("bjorck", "maxmin"),
    ("bjorck", "relu"),
    ("aol", "maxmin"),
    ("aol", "relu"),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problem", action="append", help="fixed_pair, absolute_value, cone")
    parser.add_argument("--iterations", type=int, default=300)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--threads", type=int, default=0, help="TF threads (0: TF's default)")
    parser.add_argument("--constraint", action="append", help="only these rows' constraints")
    args = parser.parse_args()
    if args.threads:
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(args.threads)
        tf.config.threading.set_inter_op_parallelism_threads(args.threads)

    from lipgan import constraints
    from lipgan.metrics import audit
    from lipgan.models import mlp_critic
    from lipgan.testing import testbeds

    make = {
        "gradient_penalty": lambda: constraints.GradientPenalty(weight=10.0),
        "spectral_norm": constraints.SpectralNorm,
        "bjorck": constraints.Bjorck,
        "aol": constraints.AOL,
    }
    print(
        f"mlp_critic width {args.width}, depth 2; {args.iterations} iterations × 5 critic steps, "
        "batch 256, Adam(1e-3, 0.5, 0.9); gap on 4,096 fresh samples\n"
    )
    print(
        "| problem | constraint | activation | critic gap | W1 | error | mean ‖∇D‖ | lower / upper bound |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name in args.problem or ["absolute_value", "cone"]:
        problem = testbeds.PROBLEMS[name]
        for kind, activation in ROWS:
            if args.constraint and kind not in args.constraint:
                continue
            constraint = make[kind]()
            result = testbeds.fit_critic(
                constraint,
                problem=problem,
                iterations=args.iterations,
                critic=lambda s, a=activation: mlp_critic(
                    s, width=args.width, depth=2, activation=a
                ),
            )
            real, fake = problem.sample(1024, np.random.default_rng(3))
            bounds = audit.audit(result.wgan, real, fake)
            upper = bounds["upper_bound"]
            print(
                f"| {name} | `{kind}` | {activation} | {result.critic_gap:.4f} | {result.w1:.4f} | "
                f"{100 * (result.critic_gap / result.w1 - 1):+.1f} % | {result.grad_norm:.3f} | "
                f"{bounds['lower_bound']:.4f} / {'–' if upper is None else f'{upper:.4f}'} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
