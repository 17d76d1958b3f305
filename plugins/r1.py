"""``r1``: the R1 regularizer (Mescheder, Geiger & Nowozin 2018), γ/2·‖∇D(x)‖² on real data only.

Mescheder et al. show that penalizing the critic's gradient on the *real* distribution makes the
GAN game locally convergent where unregularized and WGAN-GP training can oscillate. It has no target
norm: it pushes the gradient at real data to zero. ‖∇D‖² is taken as the square of the shared
``per_example_gradient_norm`` (whose 1e-12 guard only matters for the square root it undoes).

R1 does not make the critic 1-Lipschitz, so the engine's ``wasserstein`` metric is only a critic gap
E D(real) − E D(fake) under it, not a W1 estimate: on the fixed pair of
:mod:`lipgan.testing.testbeds` (true W1 = 3) it ends far below 3 (``docs/plugins.md``, "What the
``wasserstein`` metric means").
"""

import tensorflow as tf

from lipgan import hookimpl
from lipgan.core.penalties import GradientNormPenalty, per_example_gradient_norm
from lipgan.core.search_space import ADAM, PENALTY_WEIGHT


class R1(GradientNormPenalty):
    """γ/2·‖∇D(x)‖² at the real examples.

    Args:
        gamma: γ, >= 0.
        fast_relu: ``'auto'`` (default), True or False: swap the critic's (leaky) ReLUs for ones
            whose second derivative is declared zero, an exact speed-up of the double backprop
            (:class:`lipgan.core.penalties.GradientNormPenalty`).

    Raises:
        ValueError: a negative gamma.
    """

    name = "r1"
    #: ``lipgan tune``'s ranges (compare_gan's; :mod:`lipgan.core.search_space`).
    search_space = {**ADAM, "gamma": PENALTY_WEIGHT}
    description = "R1: gamma/2·‖∇D(x)‖² on real data (Mescheder et al. 2018)."

    def __init__(self, gamma: float = 10.0, fast_relu: bool | str = "auto"):
        if gamma < 0:
            raise ValueError(f"r1.gamma must be >= 0, got {gamma}")
        self.gamma = float(gamma)
        super().__init__(fast_relu)

    def penalty(self, critic, real, fake, ctx):
        return 0.5 * self.gamma * tf.square(per_example_gradient_norm(critic, real))


@hookimpl
def lipgan_register_constraints(register):
    register(R1)
