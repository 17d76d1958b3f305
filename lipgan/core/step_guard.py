"""The step's guards: the non-finite check of every term and the plugin contract's penalty check.

The engine (:mod:`lipgan.core.engine`) runs them inside its compiled step: each update's terms are
tested for NaN/Inf where they are computed (:func:`nonfinite`, counted per replica and reported in
computation order by :class:`LoopResult`), and a constraint's penalty is checked for the shape and
dtype the contract asks (docs/plugins.md) when the step is traced (:func:`checked_penalty`).
"""

from __future__ import annotations

from typing import NamedTuple

import tensorflow as tf

from lipgan.core.errors import PluginError

#: What the non-finite guard watches in each critic update, then in the generator update, in the
#: order
#: they are computed. ``critic loss`` is the Wasserstein term alone, so a NaN penalty is blamed on
#: the
#: penalty, and a gradient is blamed only when the values it came from were finite. The weights are
#: checked after each update too: finite gradients times a huge learning rate overflow them, and
#: weights are what a checkpoint keeps (an Inf generator was once kept as "the last good one").
CRITIC_TERMS = ("critic loss", "penalty", "critic gradient", "critic weights")
GENERATOR_TERMS = ("generator loss", "generator gradient", "generator weights")


class LoopResult(NamedTuple):
    """What one compiled call of the host loop returns.

    ``metrics`` are those of the last iteration run; ``nonfinite`` counts, for every term of every
    update of that iteration (``n_critic`` times :data:`CRITIC_TERMS`, then
    :data:`GENERATOR_TERMS`), the replicas that saw a NaN/Inf; ``completed`` is the number of
    iterations run, fewer than asked when the loop stopped at a non-finite one (its updates were
    applied: the caller must not checkpoint these weights).
    """

    metrics: dict
    nonfinite: tf.Tensor
    completed: tf.Tensor

    def first_nonfinite(self) -> str | None:
        """The first non-finite term in computation order, e.g. ``penalty (critic update 2 of 5)``."""
        counts = self.nonfinite.numpy()
        n_critic = (len(counts) - len(GENERATOR_TERMS)) // len(CRITIC_TERMS)
        names = [
            f"{term} (critic update {u + 1} of {n_critic})"
            for u in range(n_critic)
            for term in CRITIC_TERMS
        ]
        names += list(GENERATOR_TERMS)
        return next((name for name, count in zip(names, counts) if count > 0), None)


def nonfinite(*tensors) -> tf.Tensor:
    """1 if any element of any tensor is NaN or Inf, else 0 (int32, for summing over replicas)."""
    finite = [tf.reduce_all(tf.math.is_finite(tf.cast(t, tf.float32))) for t in tensors]
    return 1 - tf.cast(tf.reduce_all(tf.stack(finite)), tf.int32)


def checked_penalty(constraint, penalty, real: tf.Tensor) -> tf.Tensor:
    """A constraint's penalty as float32 ``[b]``, or :class:`PluginError` at trace time.

    The contract (docs/plugins.md) asks for ``None`` or one floating value per example of this
    replica's batch. Anything else is not caught by TensorFlow in a useful way: a ``[b, 1]``
    penalty (the critic's own output shape) broadcasts against the ``[b]`` Wasserstein term to
    ``[b, b]`` and trains a wrong model silently; a scalar or ``[2b]`` one fails deep in the graph.
    """
    if penalty is None:
        return tf.zeros([tf.shape(real)[0]], tf.float32)
    batch = real.shape[0]
    shape = getattr(penalty, "shape", None)
    dtype = getattr(penalty, "dtype", None)
    floating = isinstance(dtype, tf.DType) and dtype.is_floating
    shape_ok = isinstance(shape, tf.TensorShape) and shape.is_compatible_with([batch])
    if not (isinstance(penalty, (tf.Tensor, tf.Variable)) and floating and shape_ok):
        cls = type(constraint)
        got = (
            f"shape {list(shape)} and dtype {dtype.name}"
            if isinstance(shape, tf.TensorShape) and isinstance(dtype, tf.DType)
            else f"a {type(penalty).__name__}"
        )
        raise PluginError(  # a LipganError: raised as is through tf.function (errors.py)
            f"constraint {getattr(constraint, 'name', cls.__name__)!r} "
            f"({cls.__module__}.{cls.__qualname__}) returned a penalty of {got}; the plugin "
            f"contract asks for None or a floating tensor of shape [{batch or 'b'}], one value "
            "per example of this replica's batch, already weighted and not averaged (the engine "
            "averages over the global batch); fix its penalty()"
        )
    return tf.cast(penalty, tf.float32)
