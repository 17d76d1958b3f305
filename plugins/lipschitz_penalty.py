"""``lipschitz_penalty``: WGAN-LP (Petzka, Fischer & Lukovnicov 2018), λ·max(0, ‖∇D(x̂)‖ − 1)².

The Kantorovich–Rubinstein duality only asks for ‖∇D‖ ≤ 1, so penalizing gradients *below* 1 (as
WGAN-GP does) adds a constraint the optimal critic need not satisfy; Petzka et al. show the one-sided
penalty is better behaved, especially for large λ. Sampling x̂ on real–fake segments and the norm are
shared with ``gradient_penalty`` so the two differ only in the one-sidedness they are named for.
"""

import tensorflow as tf

from lipgan import hookimpl
from lipgan.core.penalties import GradientNormPenalty, interpolate, per_example_gradient_norm
from lipgan.core.search_space import ADAM, PENALTY_WEIGHT


class LipschitzPenalty(GradientNormPenalty):
    """λ·max(0, ‖∇D(x̂)‖ − 1)² at random interpolates: only gradients steeper than 1 are penalized.

    Args:
        weight: λ, >= 0.
        fast_relu: ``'auto'`` (default), True or False: swap the critic's (leaky) ReLUs for ones
            whose second derivative is declared zero, an exact speed-up of the double backprop
            (:class:`lipgan.core.penalties.GradientNormPenalty`).

    Raises:
        ValueError: a negative weight.
    """

    name = "lipschitz_penalty"
    #: ``lipgan tune``'s ranges (compare_gan's; :mod:`lipgan.core.search_space`).
    search_space = {**ADAM, "weight": PENALTY_WEIGHT}
    description = "WGAN-LP: weight·max(0, ‖∇D(x̂)‖ − 1)², one-sided (Petzka et al. 2018)."

    def __init__(self, weight: float = 10.0, fast_relu: bool | str = "auto"):
        if weight < 0:
            raise ValueError(f"lipschitz_penalty.weight must be >= 0, got {weight}")
        self.weight = float(weight)
        super().__init__(fast_relu)

    def penalty(self, critic, real, fake, ctx):
        norm = per_example_gradient_norm(critic, interpolate(real, fake, ctx))
        return self.weight * tf.square(tf.nn.relu(norm - 1.0))


@hookimpl
def lipgan_register_constraints(register):
    register(LipschitzPenalty)
