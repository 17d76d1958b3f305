"""Shared math of the gradient-based constraints: per-example gradient norms, interpolates, and
the base class of the constraints that penalize a gradient norm.

It lives in the core so that the built-in plugins (``gradient_penalty``, ``lipschitz_penalty``,
``dragan``, ``r1``), the diagnostics and third-party plugins all use one implementation, imported
from a public module as any plugin would.
"""

from __future__ import annotations

import tensorflow as tf

from lipgan.core.constraint import Constraint
from lipgan.core.pruned_relu import check_fast_relu, maybe_prune

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


class GradientNormPenalty(Constraint):
    """Base of the constraints whose penalty differentiates ‖∇ₓD‖ (double backprop).

    It holds the one option they share, ``fast_relu``: the critic's (leaky) ReLUs are swapped at
    wrap time for ones whose second derivative is declared zero, an exact speed-up of the double
    backprop (:mod:`lipgan.core.pruned_relu`; ``'auto'``, ``True`` or ``False``, see
    :func:`lipgan.core.pruned_relu.maybe_prune`). A subclass validates its own parameters, then
    calls ``super().__init__(fast_relu)``, and implements :meth:`penalty`.
    """

    def __init__(self, fast_relu: bool | str = "auto"):
        self.fast_relu = check_fast_relu(fast_relu, self.name)

    def wrap_critic(self, critic):
        return maybe_prune(critic, self.fast_relu, self.name)
