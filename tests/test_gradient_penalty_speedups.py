"""gradient_penalty.fast_relu (pruned activation second derivative) and .every (lazy regularization).

Both are speed options: they must not change what is computed. fast_relu (on by default, 'auto')
must give penalty gradients equal to the standard double-backprop ones (``fast_relu=False``);
every=k must give k·λ·GP on critic updates divisible by k (here n_critic = 1, so updates are
iterations; tests/test_lazy_regularization.py covers n_critic > 1) and no penalty elsewhere.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

from lipgan.core.constraint import StepContext
from lipgan.core.engine import WGAN, zeros_for_none
from lipgan.core.pruned_relu import PrunedLeakyReLU, prune_activation_hessians, pruned_leaky_relu
from lipgan.core.step_config import StepConfig
from lipgan.models import dcgan_critic, dcgan_generator, mlp_critic
from lipgan_plugins.gradient_penalty import GradientPenalty
from lipgan_plugins.no_constraint import NoConstraint
from tests.helpers import toy_wgan


def _penalty_grads(constraint, critic, real, fake):
    ctx = StepContext(seed=3, step=0, phase=0, global_batch_size=real.shape[0], num_replicas=1)
    with tf.GradientTape() as tape:
        penalty = tf.reduce_mean(constraint.penalty(critic, real, fake, ctx))
    variables = critic.trainable_variables
    return penalty, zeros_for_none(tape.gradient(penalty, variables), variables)


@pytest.mark.parametrize(
    "make_critic, shape",
    [
        (lambda s: mlp_critic(s, width=16, depth=3), (2,)),
        (lambda s: dcgan_critic(s, dim=4), (32, 32, 3)),
    ],
    ids=["mlp_relu", "dcgan_leaky_relu"],
)
def test_fast_relu_penalty_gradients_match_standard(make_critic, shape):
    keras.utils.set_random_seed(1)
    critic = make_critic(shape)
    fast = GradientPenalty()  # the default prunes whenever it is exact
    assert fast.fast_relu == "auto"
    pruned = fast.wrap_critic(critic)
    assert pruned is not critic
    assert any(isinstance(layer, PrunedLeakyReLU) for layer in pruned.layers) or any(
        getattr(layer, "activation", None) is not None
        and getattr(layer.activation, "__name__", "") == "pruned_relu"
        for layer in pruned.layers
    )
    real = tf.random.stateless_normal([8, *shape], seed=[1, 2])
    fake = tf.random.stateless_normal([8, *shape], seed=[3, 4])
    p_std, g_std = _penalty_grads(GradientPenalty(fast_relu=False), critic, real, fake)
    p_fast, g_fast = _penalty_grads(fast, pruned, real, fake)
    np.testing.assert_allclose(p_fast.numpy(), p_std.numpy(), rtol=1e-6)
    for a, b in zip(g_fast, g_std):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-7)
    # and the pruned gradients are not trivially zero
    assert max(float(tf.reduce_max(tf.abs(g))) for g in g_fast) > 0


def test_pruned_leaky_relu_second_derivative_is_pruned_not_zero_tensor():
    x = tf.constant([-2.0, -0.5, 0.5, 3.0])
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = pruned_leaky_relu(x, 0.2)
        dydx = inner.gradient(y, x)
    np.testing.assert_allclose(y.numpy(), tf.nn.leaky_relu(x, 0.2).numpy())
    np.testing.assert_allclose(dydx.numpy(), [0.2, 0.2, 1.0, 1.0])
    # No path from the derivative back to x: None, i.e. no zeros back-propagated.
    assert outer.gradient(dydx, x) is None


def test_prune_keeps_weights_and_outputs():
    keras.utils.set_random_seed(0)
    critic = dcgan_critic((32, 32, 1), dim=4)
    pruned = prune_activation_hessians(critic)
    x = tf.random.stateless_uniform([3, 32, 32, 1], seed=[0, 1])
    np.testing.assert_allclose(pruned(x).numpy(), critic(x).numpy(), rtol=1e-6)


def _close(a, b):
    grads_a, loss_a = a
    grads_b, loss_b = b
    np.testing.assert_allclose(loss_a.numpy(), loss_b.numpy(), rtol=1e-5)
    for x, y in zip(grads_a, grads_b):
        np.testing.assert_allclose(x.numpy(), y.numpy(), rtol=1e-5, atol=1e-7)


@pytest.mark.slow
def test_lazy_gradient_penalty_scales_on_active_steps_and_skips_others():
    real = tf.random.stateless_normal([8, 2], seed=[7, 7])
    lazy = toy_wgan(GradientPenalty(weight=0.5, every=4))
    scaled = toy_wgan(GradientPenalty(weight=2.0))
    plain = toy_wgan(NoConstraint())
    for step in (0, 8):
        _close(lazy.critic_gradients(real, step=step), scaled.critic_gradients(real, step=step))
    for step in (1, 3, 5):
        _close(lazy.critic_gradients(real, step=step), plain.critic_gradients(real, step=step))
    # the penalty really is non-zero on the active step, so the comparison above means something
    with pytest.raises(AssertionError):
        _close(scaled.critic_gradients(real, step=0), plain.critic_gradients(real, step=0))


@pytest.mark.slow
def test_fast_relu_engine_gradients_match_standard_on_dcgan():
    def build(constraint):
        keras.utils.set_random_seed(0)
        return WGAN(
            tf.distribute.get_strategy(),
            critic=lambda s: dcgan_critic(s, dim=4),
            generator=lambda s: dcgan_generator(s, latent_dim=8, dim=4),
            critic_optimizer=lambda: keras.optimizers.SGD(0.1),
            generator_optimizer=lambda: keras.optimizers.SGD(0.1),
            constraint=constraint,
            data_shape=(32, 32, 3),
            config=StepConfig(global_batch_size=4, n_critic=1, seed=1),
        )

    real = tf.random.stateless_uniform([4, 32, 32, 3], seed=[2, 2], minval=-1, maxval=1)
    fast, standard = build(GradientPenalty()), build(GradientPenalty(fast_relu=False))
    assert any(isinstance(layer, PrunedLeakyReLU) for layer in fast.critic.layers)
    assert not any(isinstance(layer, PrunedLeakyReLU) for layer in standard.critic.layers)
    _close(fast.critic_gradients(real), standard.critic_gradients(real))


@pytest.mark.parametrize("every", [0, -1, 1.5])
def test_every_must_be_a_positive_integer(every):
    with pytest.raises(ValueError, match="every"):
        GradientPenalty(every=every)
