"""A counter-based random number generator that gives the same numbers everywhere.

TensorFlow's stateless RNG ops are not reproducible across execution modes: under XLA (``jit_compile``,
and everything on a TPU) ``stateless_uniform``/``stateless_normal`` return different numbers than the
CPU/GPU kernels for the same seed and algorithm (different draws altogether, not a rounding
difference). lipgan promises the same losses with and without XLA, so its noise is computed here
from plain 32-bit integer arithmetic, which every backend evaluates identically:

    bits(i) = mix(mix(i XOR k0) XOR k1)          for element counter i and a 64-bit key (k0, k1)

``mix`` is the "lowbias32" integer hash (Chris Wellons' hash-prospector), a bijection on 32 bits with
excellent avalanche. Uniforms use the top 24 bits; normals use the Box-Muller transform (its
``log``/``cos`` may differ between backends in the last ulp, nothing more). Values are held in int64
tensors masked to 32 bits, so no backend needs unsigned multiplication.
"""

from __future__ import annotations

import math

import tensorflow as tf

_MASK = 0xFFFFFFFF


def mix32(x: tf.Tensor) -> tf.Tensor:
    """lowbias32: a 32-bit integer hash; ``x`` is int64 holding values in [0, 2^32)."""
    x = tf.bitwise.bitwise_xor(x, tf.bitwise.right_shift(x, 16))
    x = tf.bitwise.bitwise_and(x * 0x7FEB352D, _MASK)
    x = tf.bitwise.bitwise_xor(x, tf.bitwise.right_shift(x, 15))
    x = tf.bitwise.bitwise_and(x * 0x846CA68B, _MASK)
    return tf.bitwise.bitwise_xor(x, tf.bitwise.right_shift(x, 16))


def fold_in(key: tf.Tensor, data) -> tf.Tensor:
    """A new key ``[2]`` (int64, 32-bit values) derived from ``key`` and an integer ``data``."""
    data = tf.bitwise.bitwise_and(tf.cast(data, tf.int64), _MASK)
    k0 = mix32(tf.bitwise.bitwise_xor(key[0], data))
    k1 = mix32(tf.bitwise.bitwise_xor(key[1], mix32(tf.bitwise.bitwise_xor(data, 0x5BD1E995))))
    return tf.stack([k0, mix32(tf.bitwise.bitwise_xor(k1, k0))])


def root_key(seed: int) -> tf.Tensor:
    seed = int(seed)
    return fold_in(tf.constant([seed & _MASK, (seed >> 32) & _MASK], tf.int64), 0x11F6A)


def random_bits(key: tf.Tensor, n: int) -> tf.Tensor:
    """``n`` pseudo-random 32-bit values (int64) for counters 0..n-1 under ``key``."""
    i = tf.range(n, dtype=tf.int64)
    return mix32(tf.bitwise.bitwise_xor(mix32(tf.bitwise.bitwise_xor(i, key[0])), key[1]))


def uniform(key: tf.Tensor, shape, dtype=tf.float32) -> tf.Tensor:
    """U[0, 1) with 24-bit resolution, in ``dtype``."""
    n = math.prod(shape)
    top24 = tf.bitwise.right_shift(random_bits(key, n), 8)
    values = tf.cast(top24, tf.float32) * (1.0 / (1 << 24))
    return tf.cast(tf.reshape(values, shape), dtype)


def normal(key: tf.Tensor, shape, dtype=tf.float32) -> tf.Tensor:
    """N(0, 1) by Box-Muller on two independent uniform streams."""
    n = math.prod(shape)
    bits = random_bits(key, 2 * n)
    u1 = (tf.cast(tf.bitwise.right_shift(bits[:n], 8), tf.float32) + 1.0) * (1.0 / (1 << 24))
    u2 = tf.cast(tf.bitwise.right_shift(bits[n:], 8), tf.float32) * (1.0 / (1 << 24))
    values = tf.sqrt(-2.0 * tf.math.log(u1)) * tf.cos((2.0 * math.pi) * u2)
    return tf.cast(tf.reshape(values, shape), dtype)
