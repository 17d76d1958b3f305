"""Micro-benchmark: the per-step price of an orthogonal conv on the DCGAN critic, bcop vs aoc.

For the DCGAN critic (32x32x3, dim 64) wrapped by ``bjorck`` (BCOP convs) and by ``aoc``, times
(1) forward + backward of ``Σ_layers sum(effective_kernel · g)`` over its conv layers (the kernel
assembly and its gradient, what a critic step adds before its convolutions), (2) the projection
after an update (``project()`` of every conv layer), each a tf.function. Candidates are called in
alternation, round after round, each keeping its best wall time per call, so load that
comes and goes hits all of them alike. Usage: python benchmarks/aoc/micro.py [--rounds N]
"""

import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tensorflow as tf  # noqa: E402

from lipgan.models import dcgan_critic  # noqa: E402
from lipgan_plugins.aoc import AOC, AOCConv2D  # noqa: E402
from lipgan_plugins.bcop import BCOPConv2D  # noqa: E402
from lipgan_plugins.bjorck import Bjorck  # noqa: E402


def timed_pair(convs):
    """(assembly fwd+bwd, projection) as tf.functions over ``convs``."""
    weights = [w for c in convs for w in c.trainable_variables if "bias" not in w.path]
    probes = [tf.random.normal(c.effective_kernel().shape) for c in convs]

    @tf.function
    def assemble():
        with tf.GradientTape() as tape:
            total = tf.add_n(
                [tf.reduce_sum(c.effective_kernel() * g) for c, g in zip(convs, probes)]
            )
        return total, tape.gradient(total, weights)

    @tf.function
    def project():
        for c in convs:
            c.project()
        return tf.constant(0.0)

    return assemble, project


def candidates():
    out = {}
    for name, constraint, kind in (("bcop", Bjorck(), BCOPConv2D), ("aoc", AOC(), AOCConv2D)):
        critic = constraint.wrap_critic(dcgan_critic((32, 32, 3), dim=64, activation="maxmin"))
        assemble, project = timed_pair([c for c in critic.layers if isinstance(c, kind)])
        out[f"{name} assembly fwd+bwd"] = assemble
        out[f"{name} projection"] = project
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=5)
    args = parser.parse_args()
    fns = candidates()
    best = {}
    for fn in fns.values():
        fn()  # trace
    for _ in range(args.rounds):
        for name, fn in fns.items():
            start = time.perf_counter()
            for _ in range(args.calls):
                fn()
            per_call = (time.perf_counter() - start) / args.calls
            best[name] = min(best.get(name, per_call), per_call)
    for name, seconds in best.items():
        print(f"{name:28s} {1e3 * seconds:8.2f} ms wall per call (best of {args.rounds})")


if __name__ == "__main__":
    main()
