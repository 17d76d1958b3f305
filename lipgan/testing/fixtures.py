"""What every conformance check runs a constraint on: a small critic and generator for any data
shape, a fixed pair of real and fake batches, a one-replica step context, and the critic wrapped by
the constraint under test. One place, so that every check (:mod:`lipgan.testing.checks`,
:mod:`lipgan.testing.replicas`) sees the same critic and data.
"""

from __future__ import annotations

import math

BATCH = 8


def small_critic(data_shape) -> keras.Model:  # noqa: F821 - keras imported lazily
    """A small ReLU critic for any input shape (flatten, 2 hidden layers of 16, 1 output)."""
    import keras

    return keras.Sequential(
        [
            keras.Input(shape=tuple(data_shape)),
            keras.layers.Flatten(),
            keras.layers.Dense(16, activation="relu"),
            keras.layers.Dense(16, activation="relu"),
            keras.layers.Dense(1, dtype="float32"),
        ],
        name="critic",
    )


def small_generator(data_shape, latent_dim: int = 2) -> keras.Model:  # noqa: F821
    """A one-hidden-layer generator producing examples of ``data_shape``."""
    import keras

    return keras.Sequential(
        [
            keras.Input(shape=(latent_dim,)),
            keras.layers.Dense(16, activation="relu"),
            keras.layers.Dense(math.prod(data_shape)),
            keras.layers.Reshape(tuple(data_shape)),
        ],
        name="generator",
    )


def _batch(data_shape, seed: int, batch: int = BATCH):
    import tensorflow as tf

    real = tf.random.stateless_normal([batch, *data_shape], seed=[seed, 1])
    fake = tf.random.stateless_normal([batch, *data_shape], seed=[seed, 2]) * 2.0 + 0.5
    return real, fake


def _context(batch: int = BATCH, step: int = 0):
    from lipgan.core.constraint import StepContext

    return StepContext(seed=0, step=step, phase=0, global_batch_size=batch, num_replicas=1)


def _built_critic(constraint, data_shape, critic_factory=small_critic):
    import keras

    keras.utils.set_random_seed(0)
    return constraint.wrap_critic(critic_factory(tuple(data_shape)))
