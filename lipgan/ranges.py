"""The ranges optimizer settings must lie in, checked before a run writes anything.

One table for both entry points: :class:`lipgan.Trainer` checks its optimizers' Keras configs,
``lipgan run`` checks the gin bindings (``--bind 'critic/linear_decay.initial_learning_rate=-5e-4'``)
in :func:`lipgan.config.check_finite`. No TensorFlow import: the CLI checks before building anything.
"""

from __future__ import annotations

import math

#: Optimizer settings (by their Keras config names) and the range each must lie in: a negative
#: learning rate trains the critic *away* from the Wasserstein estimate without any error. A learning
#: rate of 0 is allowed: it freezes a network, a control the study uses (an untrained generator).
OPTIMIZER_RANGES = {
    "learning_rate": (None, None, ">= 0"),
    "initial_learning_rate": (None, None, ">= 0"),
    "end_learning_rate": (None, None, ">= 0"),
    "decay_steps": (0.0, None, "> 0"),
    "beta_1": (None, 1.0, "in [0, 1)"),
    "beta_2": (None, 1.0, "in [0, 1)"),
    "ema_momentum": (None, 1.0, "in [0, 1)"),
    "rho": (None, 1.0, "in [0, 1)"),
    "momentum": (None, None, ">= 0"),
    "epsilon": (None, None, ">= 0"),
    "weight_decay": (None, None, ">= 0"),
    "clipnorm": (0.0, None, "> 0"),
    "global_clipnorm": (0.0, None, "> 0"),
    "clipvalue": (0.0, None, "> 0"),
}


def out_of_range(name: str, value) -> str | None:
    """The rule ``value`` breaks (``'> 0'``) when ``name`` is a known optimizer setting, else None."""
    if (
        name not in OPTIMIZER_RANGES
        or isinstance(value, bool)
        or not isinstance(value, (int, float))
    ):
        return None
    if not math.isfinite(value):
        return None  # reported as not finite
    above, below, rule = OPTIMIZER_RANGES[name]
    too_low = value <= above if above is not None else value < 0
    return rule if too_low or (below is not None and value >= below) else None
