"""Where the Gram scale's cost goes on one SOC Dense layer (exploratory; benchmarks/ANALYSIS.md,
"SOC's scale"): a 512x512 skew layer, 4 Taylor terms, batch 256, forward and weight gradient
under XLA, scaled by Hoelder's bound, by the Gram bound (lipgan.core.skew_series.gram_bound) with
its exact gradient (by autodiff through the squarings, and in closed form: the default since
2026-12-07), by its value with no gradient, and by its value with the gradient of sigma_1 alone
(gradient="top": ||A v|| at a top right singular vector v read off the last Gram iterate, the
reference SOC's ``sigma = sum(W * u * v)``; soc.bound='gram_top'). Every "gram" row has the same
forward value, so the layer computes the same function; only training's gradient differs, and
the first two differ only by rounding. Interleaved, median of 9 x 10 calls.

    python benchmarks/gram_gradient/ab.py
"""

import time

import numpy as np
import tensorflow as tf

from lipgan.core.skew_series import gram_bound

N, BATCH, TERMS = 512, 256, 4
weights = tf.Variable(tf.random.normal((N, N)) / np.sqrt(N))
inputs = tf.random.normal((BATCH, N))


def skew(w):
    return w - tf.transpose(w)


def holder(matrix):
    rows = tf.reduce_max(tf.reduce_sum(tf.abs(matrix), 0))
    return tf.sqrt(rows * tf.reduce_max(tf.reduce_sum(tf.abs(matrix), 1)))


BOUNDS = {
    "holder": holder,
    "gram, autodiff": lambda m: gram_bound(m, gradient="autodiff"),
    "gram, closed form": gram_bound,
    "gram, no gradient": lambda m: tf.stop_gradient(gram_bound(m)),
    "gram, sigma_1 gradient": lambda m: gram_bound(m, gradient="top"),
}


def step(bound):
    def run():
        with tf.GradientTape() as tape:
            operator = skew(weights)
            operator = operator * (0.5 / bound(operator))
            term, out = inputs, inputs
            for k in range(1, TERMS + 1):
                term = tf.matmul(term, operator) / k
                out = out + term
            loss = tf.reduce_sum(out**2)
        return tape.gradient(loss, weights)

    return tf.function(run, jit_compile=True, autograph=False)


def main():
    steps = {name: step(bound) for name, bound in BOUNDS.items()}
    for run in steps.values():
        run()
    times = {name: [] for name in steps}
    for _ in range(9):
        for name, run in steps.items():
            start = time.perf_counter()
            for _ in range(10):
                gradient = run()
            gradient.numpy()
            times[name].append((time.perf_counter() - start) / 10)
    base = np.median(times["holder"])
    for name, seen in times.items():
        median = np.median(seen)
        print(
            f"{name:24s} {1000 * median:7.2f} ms  (min {1000 * min(seen):.2f})  {median / base:.2f}x holder"
        )


if __name__ == "__main__":
    main()
