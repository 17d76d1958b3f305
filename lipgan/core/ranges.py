"""The ranges settings must lie in, checked before a run writes anything.

One table for both entry points: :class:`lipgan.Trainer` checks its optimizers' Keras configs,
``lipgan run`` checks the gin bindings (``--bind 'critic/linear_decay.initial_learning_rate=-5e-4'``)
in :func:`lipgan.config.gin_binding.check_finite`. The run's own integer and boolean settings are
checked where they are defined (:class:`lipgan.StepConfig`, :class:`lipgan.Intervals`,
:meth:`lipgan.Trainer.fit`) with :func:`check_int` and :func:`check_bool`, so Python and gin get the
same one-line error. No TensorFlow import: the CLI checks before building anything.
"""

from __future__ import annotations

import math
import numbers

from lipgan.core.errors import ConfigError

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


#: The integers TensorFlow keeps the run's counters in (``int64`` variables): a larger setting
#: passes Python's checks, then overflows inside a compiled step.
INT64_RANGE = (-(2**63), 2**63 - 1)


def check_int(value, name: str, minimum: int | None = None, note: str = "") -> None:
    """Raise :class:`ConfigError` unless ``value`` is an integer (>= ``minimum``) that fits in
    :data:`INT64_RANGE`, named as the gin binding that sets it (``train.n_critic=2.5 is invalid:
    ...``)."""
    is_int = isinstance(value, numbers.Integral) and not isinstance(value, bool)
    low, high = INT64_RANGE
    if is_int and (minimum is None or value >= minimum) and low <= value <= high:
        return
    rule = "must be an integer" + (f" >= {minimum}" if minimum is not None else "") + note
    if is_int and not low <= value <= high:
        rule = f"must fit in 64 bits (at most {high}): TensorFlow keeps it as an int64"
    given = "" if is_int else f" (a {type(value).__name__} was given)"
    raise ConfigError(f"train.{name}={value!r} is invalid: {rule}{given}")


def check_bool(value, name: str) -> None:
    """Raise :class:`ConfigError` unless ``value`` is True or False (``1`` is not)."""
    if not isinstance(value, bool) and type(value).__name__ != "bool_":  # NumPy's bool too
        raise ConfigError(f"train.{name}={value!r} is invalid: must be True or False")
