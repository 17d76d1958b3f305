"""Shared math of the gradient-based constraints: per-example gradient norms and interpolates.

It lives in the core so that the built-in plugins (``gradient_penalty``, ``lipschitz_penalty``,
``dragan``, ``r1``), the diagnostics and third-party plugins all use one implementation, imported
from a public module as any plugin would.
"""

from __future__ import annotations

import tensorflow as tf

#: Added under the square root of ‖g‖²: ``sqrt`` has infinite slope at 0, which would turn a zero
#: gradient into NaN in the second derivative (double backprop).
NORM_EPSILON = 1e-12


def per_example_gradient_norm(critic, x: tf.Tensor) -> tf.Tensor:
    """‖∇ₓD(x)‖₂ per example, in float32, differentiable w.r.t. the critic's weights.

    The inner ``GradientTape`` watches ``x`` and wraps only the critic call; taken inside the
    engine's outer tape, its result can be differentiated again (the WGAN-GP double backprop).
    """
    with tf.GradientTape() as tape:
        tape.watch(x)
        d = critic(x, training=False)
    g = tf.cast(tape.gradient(d, x), tf.float32)
    axes = list(range(1, len(g.shape)))
    return tf.sqrt(tf.reduce_sum(tf.square(g), axis=axes) + NORM_EPSILON)


def interpolate(real: tf.Tensor, fake: tf.Tensor, ctx) -> tf.Tensor:
    """Random points on the segments between paired real and fake examples.

    ε ~ U[0, 1] per example (shape ``[b, 1, ..., 1]``), drawn through the step context so that an
    example gets the same ε on any replica count.
    """
    eps = ctx.uniform([1] * (len(real.shape) - 1), dtype=real.dtype)
    return real + eps * (fake - real)
