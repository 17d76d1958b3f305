"""Analytic test beds: problems whose optimal critic is known in closed form.

**The fixed pair.** real ~ N((0, 0), 0.1²I), fake ~ N((3, 0), 0.1²I), the generator held fixed (a
frozen affine map of N(0, I) noise, trained with a zero learning rate). The true W1 is 3 (a
translation by 3). The optimal 1-Lipschitz critic is linear along x with slope 1. Under a gradient
penalty λ·(‖∇D‖ − 1)², a linear critic of slope s earns 3s − λ(s − 1)², maximal at
s = 1 + 3/(2λ): with λ = 10, ‖∇D‖ ≈ 1.15 and a critic gap E D(real) − E D(fake) ≈ 3.45 (more
generally, any constraint reports how far it lets the slope leave 1). It runs through the real
engine (:class:`lipgan.engine.WGAN`), so schedules, replication and XLA are exercised as in training.
"""

from __future__ import annotations

import dataclasses

import keras
import numpy as np
import tensorflow as tf

from lipgan import rng
from lipgan.constraint import Constraint
from lipgan.engine import WGAN, StepConfig

#: Means and std of the fixed pair, and its true Wasserstein-1 distance.
REAL_MEAN = (0.0, 0.0)
FAKE_MEAN = (3.0, 0.0)
STD = 0.1
TRUE_W1 = 3.0


def gp_optimum(weight: float, target: float = 1.0) -> tuple[float, float]:
    """(‖∇D‖, critic gap) of the best linear critic under weight·(‖∇D‖ − γ)²/γ² on the pair.

    That is ``gradient_penalty``'s convention (ProGAN's and TF-GAN's): a slope s earns
    d·s − (λ/γ²)(s − γ)², maximal at s = γ + d·γ²/(2λ), with d the distance between the means.
    """
    distance = FAKE_MEAN[0] - REAL_MEAN[0]
    slope = target + distance * target**2 / (2.0 * weight)
    return slope, slope * distance


def real_data(global_batch_size: int, seed: int = 0) -> tf.data.Dataset:
    """An endless stream of global batches of N(REAL_MEAN, STD²I) from lipgan's counter RNG."""
    key = rng.root_key(seed)

    def batch(i):
        noise = rng.normal(rng.fold_in(key, i), [global_batch_size, 2], tf.float32)
        return tf.constant(REAL_MEAN, tf.float32) + STD * noise

    return tf.data.Dataset.range(2**62).map(batch)


def fixed_generator(data_shape, latent_dim: int = 2) -> keras.Model:
    """z ~ N(0, I) ↦ FAKE_MEAN + STD·z: the fake distribution, as a model the engine can run."""
    del data_shape
    return keras.Sequential(
        [
            keras.Input(shape=(latent_dim,)),
            keras.layers.Dense(
                2,
                kernel_initializer=keras.initializers.Constant(np.eye(latent_dim, 2) * STD),
                bias_initializer=keras.initializers.Constant(FAKE_MEAN),
                name="fixed",
            ),
        ],
        name="generator",
    )


def small_critic(data_shape, width: int = 64, depth: int = 2) -> keras.Model:
    """A small ReLU MLP critic, enough to express the (linear) optimum."""
    from lipgan.models import mlp_critic

    return mlp_critic(data_shape, width=width, depth=depth)


@dataclasses.dataclass
class FixedPairResult:
    """What a critic learned on the fixed pair, measured on fresh samples after training."""

    grad_norm: float  # mean ‖∇D‖ at interpolates between fresh real and fake samples
    critic_gap: float  # E D(real) − E D(fake) on fresh samples
    wgan: WGAN


def fit_critic(
    constraint: Constraint,
    *,
    iterations: int = 300,
    n_critic: int = 5,
    global_batch_size: int = 256,
    learning_rate: float = 1e-3,
    critic=small_critic,
    seed: int = 0,
    strategy: tf.distribute.Strategy | None = None,
    jit_compile: bool = False,
    critic_optimizer=None,
    eval_size: int = 4096,
) -> FixedPairResult:
    """Train a critic under ``constraint`` against the fixed pair and measure what it learned."""
    from lipgan.penalties import per_example_gradient_norm

    keras.utils.set_random_seed(seed)
    wgan = WGAN(
        strategy or tf.distribute.get_strategy(),
        critic=critic,
        generator=fixed_generator,
        critic_optimizer=critic_optimizer
        or (lambda: keras.optimizers.Adam(learning_rate, beta_1=0.5, beta_2=0.9)),
        generator_optimizer=lambda: keras.optimizers.SGD(0.0),
        constraint=constraint,
        data_shape=(2,),
        config=StepConfig(global_batch_size, n_critic, seed, jit_compile),
    )
    wgan.run(wgan.distribute(real_data(global_batch_size, seed)), iterations)

    probe = np.random.default_rng(seed + 1)
    real = (np.asarray(REAL_MEAN) + STD * probe.standard_normal((eval_size, 2))).astype("float32")
    fake = (np.asarray(FAKE_MEAN) + STD * probe.standard_normal((eval_size, 2))).astype("float32")
    eps = probe.uniform(size=(eval_size, 1)).astype("float32")
    x_hat = tf.constant(real + eps * (fake - real))
    scores = lambda x: float(tf.reduce_mean(wgan.critic(x, training=False)))  # noqa: E731
    return FixedPairResult(
        grad_norm=float(tf.reduce_mean(per_example_gradient_norm(wgan.critic, x_hat))),
        critic_gap=scores(real) - scores(fake),
        wgan=wgan,
    )


def critic_gaps(critic, n: int = 256, seed: int = 5) -> dict:
    """E D(real) − E D(fake) on fresh fixed-pair samples, read three ways.

    ``concat``: one ``training=True`` call on ``concat(real, fake)``, as the engine's critic loss
    makes it; ``separate``: two ``training=True`` calls; ``inference``: ``training=False``, as the
    penalties and the generator see the critic. A critic without batch statistics gives one number
    three times; a batch-norm critic does not (``docs/plugins.md``, "no batch norm").
    """
    probe = np.random.default_rng(seed)
    real = (np.asarray(REAL_MEAN) + STD * probe.standard_normal((n, 2))).astype("float32")
    fake = (np.asarray(FAKE_MEAN) + STD * probe.standard_normal((n, 2))).astype("float32")

    def mean(x, training):
        return float(tf.reduce_mean(critic(x, training=training)))

    both = np.asarray(critic(np.concatenate([real, fake]), training=True)).reshape(-1)
    return {
        "concat": float(both[:n].mean() - both[n:].mean()),
        "separate": mean(real, True) - mean(fake, True),
        "inference": mean(real, False) - mean(fake, False),
    }


def normalized_critic(kind: str, width: int = 64, depth: int = 2):
    """``data_shape -> keras.Model``: a ReLU MLP with ``kind`` ('batch' or 'layer') normalization
    after each hidden Dense layer, for measuring what normalization does to a critic."""
    norm = {"batch": keras.layers.BatchNormalization, "layer": keras.layers.LayerNormalization}[
        kind
    ]

    def build(data_shape):
        layers = [keras.Input(tuple(data_shape))]
        for _ in range(depth):
            layers += [keras.layers.Dense(width), norm(), keras.layers.ReLU()]
        return keras.Sequential([*layers, keras.layers.Dense(1)], name="critic")

    return build
