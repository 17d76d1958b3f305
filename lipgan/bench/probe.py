"""The machine's limit, measured in the same run as the benchmark rows: float32 matmul GFLOP/s.

Two figures: :func:`layer_matmul_flops_per_s`, the forward and both backward matmuls of the critic's own
dense layers at the benchmark's batch (what a perfectly fused step of that model could reach:
small matmuls run below the machine's peak), and :func:`peak_matmul_flops_per_s`, a large square
matmul (the machine's float32 peak as TensorFlow reaches it). Each row's achieved GFLOP/s is then
reported as a fraction of both. Convolutions are not probed: a model with convolutions gets only
the peak figure.
"""

from __future__ import annotations

import functools
import time

import tensorflow as tf


def _flops_per_s(fn, flops_per_call: float, min_seconds: float, repetitions: int = 5) -> float:
    """The best of ``repetitions`` timed windows: a limit, and on a shared machine noise only
    ever lowers a rate (the bench rows themselves are medians)."""
    fn().numpy()  # compile and warm up
    rates = []
    for _ in range(repetitions):
        calls, start = 0, time.perf_counter()
        while True:
            out = fn()
            calls += 1
            if time.perf_counter() - start >= min_seconds / repetitions:
                break
        out.numpy()  # wait for the last call
        rates.append(flops_per_call * calls / (time.perf_counter() - start))
    return max(rates)


def layer_matmul_flops_per_s(kernels, batch: int, min_seconds: float = 1.0) -> float | None:
    """GFLOP/s·1e9 of ``x@W``, ``dy@Wᵀ`` and ``xᵀ@dy`` for every 2-D kernel shape ``(k, n)``.

    Timed as plain ``tf.function`` (TensorFlow's own MatMul kernels) on variables (nothing to
    constant-fold), each product materialized and one element of it read. Not as whole products
    summed inside one XLA cluster: XLA fuses the sums into the dots, and such a probe ran far below
    what the toy GP iteration itself reached, so it was no limit (benchmarks/RESULTS.md). (No XLA
    variant: its simplifier may rewrite a slice of a dot into a smaller dot.)

    None when the model has other kernels too (convolutions): the probe would then time only part
    of its work, and a row's "fraction of probe" would not mean what its name says.
    """
    if not kernels or any(len(k) != 2 for k in kernels):
        return None
    kernels = [tuple(int(d) for d in k) for k in kernels]
    rng = tf.random.Generator.from_seed(0)
    xs = [tf.Variable(rng.normal([batch, k])) for k, _ in kernels]
    ws = [tf.Variable(rng.normal([k, n])) for k, n in kernels]
    dys = [tf.Variable(rng.normal([batch, n])) for _, n in kernels]

    def step():
        products = []
        for x, w, dy in zip(xs, ws, dys):
            products.append(x @ w)  # forward
            products.append(tf.matmul(dy, w, transpose_b=True))  # input gradient
            products.append(tf.matmul(x, dy, transpose_a=True))  # kernel gradient
        return tf.add_n([p[0, 0] for p in products])

    flops = sum(3 * 2 * batch * k * n for k, n in kernels)
    return _flops_per_s(tf.function(step), flops, min_seconds)


@functools.cache
def peak_matmul_flops_per_s(size: int = 2048, min_seconds: float = 0.5) -> float:
    """FLOP/s of a ``size``×``size`` float32 matmul (cached: measured once per process)."""
    rng = tf.random.Generator.from_seed(1)
    a, b = tf.Variable(rng.normal([size, size])), tf.Variable(rng.normal([size, size]))
    step = tf.function(lambda: (a @ b)[0, 0])
    return _flops_per_s(step, 2 * size**3, min_seconds)
