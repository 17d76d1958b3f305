"""``max_gradient_norm``: a one-sided gradient penalty at the real and fake samples themselves.

λ·[max(0, ‖∇D(x)‖ − K)² + max(0, ‖∇D(G(z))‖ − K)²] per example. Unlike WGAN-GP it needs no
interpolates and no randomness: it bounds the critic's slope (by K) exactly where the losses look at
it. It is small on purpose: this package exists to show what a third-party lipgan plugin needs (one
``Constraint`` subclass, one ``@hookimpl``, one entry point) and how to test it with ``lipgan.testing``.
"""

import tensorflow as tf

from lipgan import Constraint, hookimpl

# The shared, numerically safe ‖∇ₓD(x)‖ (nested tape, sqrt(Σg² + 1e-12)) from lipgan's own plugins.
from lipgan.core.penalties import per_example_gradient_norm
from lipgan.core.search_space import ADAM, LogUniform

__version__ = "0.1.0"


class MaxGradientNorm(Constraint):
    """weight·Σ max(0, ‖∇D‖ − max_norm)² over each example's real and fake sample."""

    name = "max_gradient_norm"
    description = "weight·max(0, ‖∇D‖ − max_norm)² at real and fake samples (example plugin)."
    #: What makes it tunable: ``lipgan tune`` draws configs from these ranges (the optimizer's
    #: shared ones plus this constraint's own constructor arguments).
    search_space = {**ADAM, "weight": LogUniform(0.1, 100.0), "max_norm": LogUniform(0.5, 2.0)}

    def __init__(self, weight: float = 10.0, max_norm: float = 1.0):
        if weight < 0 or max_norm <= 0:
            raise ValueError(
                f"max_gradient_norm needs weight >= 0 and max_norm > 0, got {weight}, {max_norm}"
            )
        self.weight = float(weight)
        self.max_norm = float(max_norm)

    def penalty(self, critic, real, fake, ctx):
        excess = [
            tf.nn.relu(per_example_gradient_norm(critic, x) - self.max_norm) for x in (real, fake)
        ]
        return self.weight * (tf.square(excess[0]) + tf.square(excess[1]))


@hookimpl
def lipgan_register_constraints(register):
    register(MaxGradientNorm)
