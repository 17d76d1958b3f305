"""Analytic test beds: problems whose optimal critic and true W1 are known in closed form.

Each :class:`DualProblem` pits a real distribution against a fixed fake one (the generator frozen:
an affine map of N(0, I) noise trained with a zero learning rate), and runs through the real engine
(:class:`lipgan.core.engine.WGAN`), so schedules, replication and XLA are exercised as in training.

**The fixed pair** (:data:`FIXED_PAIR`). real ~ N((0, 0), 0.1²I), fake ~ N((3, 0), 0.1²I). The true
W1 is 3 (a translation by 3); the optimal 1-Lipschitz critic is linear along x with slope 1. Under a
gradient penalty λ·(‖∇D‖ − 1)², a linear critic of slope s earns 3s − λ(s − 1)², maximal at
s = 1 + 3/(2λ): with λ = 10, ‖∇D‖ ≈ 1.15 and a critic gap E D(real) − E D(fake) ≈ 3.45 (more
generally, any constraint reports how far it lets the slope leave 1).

**The absolute value and the cone** (:data:`ABSOLUTE_VALUE`, :data:`CONE`): real = δ₀ (every real
sample at the origin), fake ~ N(0, I) in 1-D and 2-D. All mass moves to one point, so W1 is the mean
distance to the origin: √(2/π) ≈ 0.798 in 1-D and √(π/2) ≈ 1.253 in 2-D, and the optimal critic is
−|x| and −‖x‖ (plus a constant): a kink and a cone, with ‖∇D‖ = 1 everywhere but at 0. These are
the potentials LNets (Anil, Lucas & Grosse, "Sorting out Lipschitz function approximation", ICML
2019, Sections 3 and 6) use to show that norm-constrained ReLU networks cannot express them (with
1-Lipschitz layers, a ReLU network's D(1) + D(−1) − 2·D(0) is at most 1 where −|x| needs 2, so its
gap stays near half of W1), while GroupSort networks with orthonormal weights can. On a finite
evaluation sample the exact W1 is the sample's own mean norm (:meth:`DualProblem.w1_of`), and a
1-Lipschitz critic's gap can never exceed it: the gap is a certified lower bound.
"""

from __future__ import annotations

import dataclasses
import math

import keras
import numpy as np
import tensorflow as tf

from lipgan.core import rng
from lipgan.core.constraint import Constraint
from lipgan.core.engine import WGAN
from lipgan.core.step_config import StepConfig


@dataclasses.dataclass(frozen=True)
class DualProblem:
    """real ~ N(real_mean, real_std²I) against fake ~ N(fake_mean, fake_std²I) (std 0: a point mass)."""

    name: str
    real_mean: tuple[float, ...]
    real_std: float
    fake_mean: tuple[float, ...]
    fake_std: float
    true_w1: float
    optimal_critic: str

    @property
    def dim(self) -> int:
        return len(self.real_mean)

    def sample(self, n: int, generator: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """``n`` real and ``n`` fake samples (float32)."""
        shape = (n, self.dim)
        real = np.asarray(self.real_mean) + self.real_std * generator.standard_normal(shape)
        fake = np.asarray(self.fake_mean) + self.fake_std * generator.standard_normal(shape)
        return real.astype("float32"), fake.astype("float32")

    def w1_of(self, real: np.ndarray, fake: np.ndarray) -> float:
        """W1 between these two samples where it is exact in closed form, else :attr:`true_w1`.

        With a point-mass real side every fake sample moves to that point: the mean distance.
        """
        if self.real_std == 0.0:
            return float(np.linalg.norm(fake - np.asarray(self.real_mean), axis=1).mean())
        return self.true_w1


FIXED_PAIR = DualProblem(
    "fixed_pair", (0.0, 0.0), 0.1, (3.0, 0.0), 0.1, 3.0, "linear along x, slope 1"
)
ABSOLUTE_VALUE = DualProblem(
    "absolute_value", (0.0,), 0.0, (0.0,), 1.0, math.sqrt(2.0 / math.pi), "-|x|"
)
CONE = DualProblem("cone", (0.0, 0.0), 0.0, (0.0, 0.0), 1.0, math.sqrt(math.pi / 2.0), "-‖x‖")
PROBLEMS = {p.name: p for p in (FIXED_PAIR, ABSOLUTE_VALUE, CONE)}


def gp_optimum(weight: float, target: float = 1.0) -> tuple[float, float]:
    """(‖∇D‖, critic gap) of the best linear critic under weight·(‖∇D‖ − γ)²/γ² on the pair.

    That is ``gradient_penalty``'s convention (ProGAN's and TF-GAN's): a slope s earns
    d·s − (λ/γ²)(s − γ)², maximal at s = γ + d·γ²/(2λ), with d the distance between the means.
    """
    distance = FIXED_PAIR.fake_mean[0] - FIXED_PAIR.real_mean[0]
    slope = target + distance * target**2 / (2.0 * weight)
    return slope, slope * distance


def real_data(
    global_batch_size: int, seed: int = 0, problem: DualProblem = FIXED_PAIR
) -> tf.data.Dataset:
    """An endless stream of global batches of the problem's real side from lipgan's counter RNG."""
    key = rng.root_key(seed)

    def batch(i):
        noise = rng.normal(rng.fold_in(key, i), [global_batch_size, problem.dim], tf.float32)
        return tf.constant(problem.real_mean, tf.float32) + problem.real_std * noise

    return tf.data.Dataset.range(2**62).map(batch)


def fixed_generator(data_shape, latent_dim: int = 2, problem: DualProblem = FIXED_PAIR):
    """z ~ N(0, I) ↦ fake_mean + fake_std·z: the fake distribution, as a model the engine can run."""
    del data_shape
    dim = problem.dim
    return keras.Sequential(
        [
            keras.Input(shape=(dim,)),
            keras.layers.Dense(
                dim,
                kernel_initializer=keras.initializers.Constant(np.eye(dim) * problem.fake_std),
                bias_initializer=keras.initializers.Constant(problem.fake_mean),
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
    w1: float = (
        FIXED_PAIR.true_w1
    )  # the problem's W1 on those samples (exact for point-mass problems)


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
    problem: DualProblem = FIXED_PAIR,
) -> FixedPairResult:
    """Train a critic under ``constraint`` against ``problem`` and measure what it learned."""
    from lipgan.core.penalties import per_example_gradient_norm

    keras.utils.set_random_seed(seed)
    wgan = WGAN(
        strategy or tf.distribute.get_strategy(),
        critic=critic,
        generator=lambda shape: fixed_generator(shape, problem=problem),
        critic_optimizer=critic_optimizer
        or (lambda: keras.optimizers.Adam(learning_rate, beta_1=0.5, beta_2=0.9)),
        generator_optimizer=lambda: keras.optimizers.SGD(0.0),
        constraint=constraint,
        data_shape=(problem.dim,),
        config=StepConfig(global_batch_size, n_critic, seed, jit_compile),
    )
    wgan.iterate(wgan.distribute(real_data(global_batch_size, seed, problem)), iterations)

    probe = np.random.default_rng(seed + 1)
    real, fake = problem.sample(eval_size, probe)
    eps = probe.uniform(size=(eval_size, 1)).astype("float32")
    x_hat = tf.constant(real + eps * (fake - real))
    scores = lambda x: float(tf.reduce_mean(wgan.critic(x, training=False)))  # noqa: E731
    return FixedPairResult(
        grad_norm=float(tf.reduce_mean(per_example_gradient_norm(wgan.critic, x_hat))),
        critic_gap=scores(real) - scores(fake),
        wgan=wgan,
        w1=problem.w1_of(real, fake),
    )


def critic_gaps(critic, n: int = 256, seed: int = 5) -> dict:
    """E D(real) − E D(fake) on fresh fixed-pair samples, read three ways.

    ``concat``: one ``training=True`` call on ``concat(real, fake)``, as the engine's critic loss
    makes it; ``separate``: two ``training=True`` calls; ``inference``: ``training=False``, as the
    penalties and the generator see the critic. A critic without batch statistics gives one number
    three times; a batch-norm critic does not (``docs/plugins.md``, "no batch norm").
    """
    probe = np.random.default_rng(seed)
    pair = FIXED_PAIR
    real = (np.asarray(pair.real_mean) + pair.real_std * probe.standard_normal((n, 2))).astype(
        "float32"
    )
    fake = (np.asarray(pair.fake_mean) + pair.real_std * probe.standard_normal((n, 2))).astype(
        "float32"
    )

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
