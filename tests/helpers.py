"""Builders shared by the tests: a tiny WGAN on 2-D data, the CLI in-process, tiny-run bindings."""

from __future__ import annotations

import keras
import tensorflow as tf
from click.testing import CliRunner

#: ``python -c CLI run ...`` runs the CLI in a fresh process.
CLI = "import sys; from lipgan.cli import cli; cli(prog_name='lipgan')"

#: Bindings for a tiny ``lipgan run`` of the toy config (small MLPs, short intervals).
TINY = [
    "--bind",
    "mlp_critic.width=16",
    "--bind",
    "mlp_generator.width=16",
    "--bind",
    "train.global_batch_size=32",
    "--bind",
    "train.log_every=5",
    "--bind",
    "train.checkpoint_every=5",
    "--bind",
    "train.steps_per_execution=5",
    "--bind",
    "train.plot_samples=0",
    "--bind",
    "train.n_critic=1",
    "--bind",
    "dataset.shuffle_buffer=1000",
]

#: A 3-iteration ``lipgan run`` with SGD for both players (the multi-worker runs).
TINY_SGD = [
    "--bind",
    "train.steps=3",
    "--bind",
    "train.log_every=1",
    "--bind",
    "train.global_batch_size=16",
    "--bind",
    "mlp_critic.width=16",
    "--bind",
    "mlp_generator.width=16",
    "--bind",
    "train.critic_optimizer=@critic/SGD",
    "--bind",
    "critic/SGD.learning_rate=0.01",
    "--bind",
    "train.generator_optimizer=@generator/SGD",
    "--bind",
    "generator/SGD.learning_rate=0.01",
]

#: Options for a tiny ``lipgan bench`` (toy model, batch 8, one short repetition).
TINY_BENCH = [
    "--model",
    "toy",
    "--batch",
    "toy=8",
    "--repetitions",
    "1",
    "--min-rep-seconds",
    "0",
    "--steps-per-execution",
    "1",
    "--n-critic",
    "1",
]


def invoke(*args):
    """``lipgan ARGS`` in-process; exceptions propagate, so a crash shows its traceback."""
    from lipgan.cli import cli

    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def toy_wgan(
    constraint,
    *,
    strategy=None,
    config=None,
    n_critic: int = 1,
    width: int = 16,
    critic_depth: int = 2,
    generator_depth: int = 2,
    critic_optimizer=None,
    generator_optimizer=None,
):
    """A WGAN of small ReLU MLPs on 2-D data; Keras' global seed is reset first, so two calls with
    the same arguments build the same weights.

    Defaults: SGD(0.1) for both players, ``StepConfig(global_batch_size=8, n_critic, seed=5,
    jit_compile=False)`` (plumbing, not XLA; pass ``config`` to test XLA or other settings).
    """
    from lipgan.engine import WGAN, StepConfig
    from lipgan.models import mlp_critic, mlp_generator

    keras.utils.set_random_seed(0)
    return WGAN(
        strategy or tf.distribute.get_strategy(),
        critic=lambda s: mlp_critic(s, width=width, depth=critic_depth),
        generator=lambda s: mlp_generator(s, width=width, depth=generator_depth),
        critic_optimizer=critic_optimizer or (lambda: keras.optimizers.SGD(0.1)),
        generator_optimizer=generator_optimizer or (lambda: keras.optimizers.SGD(0.1)),
        constraint=constraint,
        data_shape=(2,),
        config=config
        or StepConfig(global_batch_size=8, n_critic=n_critic, seed=5, jit_compile=False),
    )
