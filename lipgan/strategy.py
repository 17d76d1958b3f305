"""The StrategyPlugin base class: how lipgan obtains a ``tf.distribute.Strategy``.

The engine runs one step function on whatever strategy a plugin creates; a strategy plugin only knows
how to *connect* (split CPUs, find a TPU, read ``TF_CONFIG``) and how to say, in one line, why it cannot.
"""

from __future__ import annotations

from typing import ClassVar

import tensorflow as tf

from lipgan.errors import LipganError


class StrategyUnavailable(LipganError):
    """The requested strategy cannot be created here; the message says what to do instead."""


class StrategyPlugin:
    """Base class of every strategy plugin. Constructor keyword arguments are gin parameters."""

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""

    def is_available(self) -> bool:
        """Cheap check (never connects, never hangs) whether :meth:`create` can succeed here."""
        return True

    def create(self) -> tf.distribute.Strategy:
        """Create the strategy, or raise :class:`StrategyUnavailable` with an actionable message."""
        raise NotImplementedError

    def is_chief(self, strategy: tf.distribute.Strategy) -> bool:
        """Whether this process writes checkpoints, summaries and configs (overridden by multi-worker)."""
        return True

    def __repr__(self) -> str:
        params = {k: v for k, v in vars(self).items() if not k.startswith("_")}
        args = ", ".join(f"{k}={v!r}" for k, v in params.items())
        return f"{type(self).__name__}({args})"
