"""``weight_clip``: the original WGAN constraint (Arjovsky et al. 2017).

Every critic parameter, biases included (as in the WGAN reference code), is clipped to ``[-c, c]``
after each critic update. Fig. 1 of Gulrajani et al. shows why this biases the critic towards simple
functions; lipgan keeps it as the historical baseline.
"""

import tensorflow as tf

from lipgan import Constraint, hookimpl
from lipgan.core.search_space import RMSPROP, LogUniform


class WeightClip(Constraint):
    """Clip every critic variable to [-c, c] after each critic update.

    Args:
        c: the clipping bound, > 0.

    Raises:
        ValueError: ``c <= 0``.
    """

    name = "weight_clip"
    #: ``lipgan tune``'s ranges (compare_gan's; :mod:`lipgan.core.search_space`).
    search_space = {**RMSPROP, "c": LogUniform(1e-3, 1.0)}
    description = (
        "Clip every critic weight to [-c, c] after each update (WGAN, Arjovsky et al. 2017)."
    )

    def __init__(self, c: float = 0.01):
        if not c > 0:
            raise ValueError(f"weight_clip.c must be positive, got {c}")
        self.c = float(c)

    def after_update(self, critic) -> None:
        for variable in critic.trainable_variables:
            variable.assign(tf.clip_by_value(variable, -self.c, self.c))


@hookimpl
def lipgan_register_constraints(register):
    register(WeightClip)
