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
    return sorted(rates)[len(rates) // 2]


def layer_matmul_flops_per_s(kernels, batch: int, min_seconds: float = 0.5) -> float | None:
    """GFLOP/s·1e9 of ``x@W``, ``dy@Wᵀ`` and ``xᵀ@dy`` for every 2-D kernel shape ``(k, n)``.

    None when the model has other kernels too (convolutions): the probe would then time only part
    of its work, and a row's "fraction of probe" would not mean what its name says.
    """
    if not kernels or any(len(k) != 2 for k in kernels):
        return None
    kernels = [tuple(int(d) for d in k) for k in kernels]
    rng = tf.random.Generator.from_seed(0)
    xs = [rng.normal([batch, k]) for k, _ in kernels]
    ws = [rng.normal([k, n]) for k, n in kernels]
    dys = [rng.normal([batch, n]) for _, n in kernels]

    @tf.function(jit_compile=True)
    def step():
        total = tf.constant(0.0)
        for x, w, dy in zip(xs, ws, dys):
            total += tf.reduce_sum(x @ w)  # forward
            total += tf.reduce_sum(tf.matmul(dy, w, transpose_b=True))  # input gradient
            total += tf.reduce_sum(tf.matmul(x, dy, transpose_a=True))  # kernel gradient
        return total

    flops = sum(3 * 2 * batch * k * n for k, n in kernels)
    return _flops_per_s(step, flops, min_seconds)


@functools.cache
def peak_matmul_flops_per_s(size: int = 2048, min_seconds: float = 0.5) -> float:
    """FLOP/s of a ``size``×``size`` float32 matmul (cached: measured once per process)."""
    rng = tf.random.Generator.from_seed(1)
    a, b = rng.normal([size, size]), rng.normal([size, size])
    step = tf.function(lambda: tf.reduce_sum(a @ b))
    return _flops_per_s(step, 2 * size**3, min_seconds)
