"""StepContext's noise: identical eagerly, in tf.function and under XLA, and statistically sound."""

import numpy as np
import pytest
import tensorflow as tf
from scipy import stats

from lipgan import StepContext
from lipgan.core import rng


def draws(step):
    ctx = StepContext(seed=3, step=step, phase=1, global_batch_size=8, num_replicas=2, replica_id=1)
    return ctx.uniform([2]), ctx.normal([3])


def test_draws_match_eager_graph_and_xla():
    """The step is a function *input*, so nothing is constant-folded before XLA sees it."""
    step = tf.constant(123456, tf.int64)
    eager = draws(step)
    for compiled in (tf.function(draws)(step), tf.function(draws, jit_compile=True)(step)):
        np.testing.assert_array_equal(eager[0].numpy(), compiled[0].numpy())
        np.testing.assert_allclose(eager[1].numpy(), compiled[1].numpy(), rtol=1e-6, atol=1e-6)


def test_tensorflows_own_stateless_ops_are_not_xla_invariant():
    """Why lipgan.core.rng exists: with a computed seed, XLA's stateless_uniform differs from the
    kernel's."""

    def draw(x):
        seed = tf.stack([x * 2654435761 + 17, x])
        return tf.random.stateless_uniform([64], seed=seed, alg="philox")

    x = tf.constant(987654321, tf.int64)
    assert not np.allclose(
        tf.function(draw)(x).numpy(), tf.function(draw, jit_compile=True)(x).numpy()
    )


def test_uniform_and_normal_have_the_right_distribution():
    key = rng.root_key(7)
    u = rng.uniform(key, [200_000]).numpy()
    z = rng.normal(rng.fold_in(key, 1), [200_000]).numpy()
    assert u.min() >= 0.0 and u.max() < 1.0
    assert stats.kstest(u, "uniform").pvalue > 1e-3
    assert stats.kstest(z, "norm").pvalue > 1e-3
    assert abs(np.corrcoef(u[:-1], u[1:])[0, 1]) < 0.01  # neighbouring counters are independent


@pytest.mark.parametrize("data", [1, 2, 10**6])
def test_fold_in_gives_unrelated_streams(data):
    key = rng.root_key(0)
    a = rng.uniform(key, [10_000]).numpy()
    b = rng.uniform(rng.fold_in(key, data), [10_000]).numpy()
    assert abs(np.corrcoef(a, b)[0, 1]) < 0.05
    assert not np.array_equal(rng.root_key(0).numpy(), rng.root_key(1).numpy())
