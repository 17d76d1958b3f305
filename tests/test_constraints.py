"""Each built-in constraint against an analytic or reference value."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from lipgan.core.constraint import StepContext
from lipgan.core.step_config import StepConfig
from lipgan.models import mlp_critic
from lipgan_plugins.gradient_penalty import GradientPenalty
from lipgan_plugins.spectral_norm import SpectralNorm
from lipgan_plugins.weight_clip import WeightClip
from tests.helpers import toy_wgan


def linear_critic(w, b):
    critic = keras.Sequential([keras.Input((len(w),)), keras.layers.Dense(1)])
    critic.layers[-1].set_weights([np.asarray(w, np.float32)[:, None], np.array([b], np.float32)])
    return critic


def ctx_for(batch, step=0):
    return StepContext(seed=0, step=step, phase=0, global_batch_size=batch, num_replicas=1)


@pytest.mark.parametrize("weight", [0.1, 10.0])
@pytest.mark.parametrize("w", [[3.0, 4.0, 0.0], [0.1, -0.2, 0.3], [1.0, 0.0, 0.0]])
def test_gradient_penalty_of_linear_critic_is_analytic(weight, w):
    """f(x) = w·x + b has ∇f = w everywhere: GP = λ(‖w‖−1)² and ∂GP/∂w = 2λ(‖w‖−1)·w/‖w‖."""
    critic = linear_critic(w, 0.7)
    rng = np.random.default_rng(1)
    real = tf.constant(rng.normal(size=(6, 3)), tf.float32)
    fake = tf.constant(rng.normal(size=(6, 3)), tf.float32)
    gp = GradientPenalty(weight=weight)
    kernel = critic.layers[-1].kernel
    with tf.GradientTape() as tape:
        penalty = gp.penalty(critic, real, fake, ctx_for(6))
        total = tf.reduce_mean(penalty)
    grad_w = tape.gradient(total, kernel.value)
    norm = np.linalg.norm(w)
    assert penalty.shape == (6,)
    np.testing.assert_allclose(penalty.numpy(), weight * (norm - 1) ** 2, rtol=1e-5, atol=1e-7)
    expected = 2 * weight * (norm - 1) * np.asarray(w) / norm
    np.testing.assert_allclose(grad_w.numpy()[:, 0], expected, rtol=1e-5, atol=1e-7)


def test_gradient_penalty_uses_per_example_uniform_interpolates():
    """For f(x) = ½‖x‖², ∇f(x̂) = x̂: with real = 0 and fake = (2, 0), ‖∇f(x̂)‖ = 2ε exactly."""

    class Quadratic(keras.Model):
        def call(self, x, training=False):
            return 0.5 * tf.reduce_sum(tf.square(x), axis=1, keepdims=True)

    real = tf.zeros((512, 2))
    fake = tf.constant([[2.0, 0.0]] * 512)
    penalty = GradientPenalty(weight=1.0).penalty(Quadratic(), real, fake, ctx_for(512)).numpy()
    eps = ctx_for(512).uniform([1]).numpy()[:, 0]  # the same stateless draw the penalty made
    np.testing.assert_allclose(penalty, (2 * eps - 1) ** 2, rtol=1e-5, atol=1e-6)
    assert eps.min() >= 0 and eps.max() < 1 and len(np.unique(eps)) == 512  # one ε per example
    assert 0.4 < eps.mean() < 0.6


def test_gradient_penalty_is_finite_when_the_gradient_is_zero():
    """sqrt has infinite slope at 0; the ε inside the norm keeps the double-backward finite."""
    critic = linear_critic([0.0, 0.0], 0.0)
    real = tf.ones((4, 2))
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(GradientPenalty().penalty(critic, real, -real, ctx_for(4)))
    kernel, bias = critic.layers[-1].kernel, critic.layers[-1].bias
    kernel_grad, bias_grad = tape.gradient(loss, [kernel, bias])
    # The kernel is what the norm depends on: its gradient must exist and be finite (an all-None
    # list would pass an all(...) check). The bias gets none from the penalty alone.
    assert kernel_grad is not None and bias_grad is None
    assert np.isfinite(kernel_grad.numpy()).all()


def tiny_wgan(constraint, critic_lr=0.5, optimizer=keras.optimizers.SGD):
    return toy_wgan(
        constraint,
        critic_optimizer=lambda: optimizer(critic_lr),
        generator_optimizer=lambda: keras.optimizers.SGD(0.01),
        config=StepConfig(global_batch_size=16, n_critic=2, seed=0, jit_compile=False),
    )


def toy_iterator(wgan):
    data = np.random.default_rng(0).normal(size=(256, 2)).astype(np.float32) * 3
    ds = tf.data.Dataset.from_tensor_slices(data).batch(16, drop_remainder=True).repeat()
    return wgan.distribute(ds)


def test_weight_clip_keeps_every_critic_variable_in_range():
    c = 0.01
    wgan = tiny_wgan(WeightClip(c=c), critic_lr=1.0)
    wgan.iterate(toy_iterator(wgan), 3)
    values = np.concatenate([v.numpy().ravel() for v in wgan.critic.trainable_variables])
    assert np.abs(values).max() <= c + 1e-9
    # The clip was active: with lr 1.0 many parameters hit the bound (biases included).
    assert np.isclose(np.abs(values), c).mean() > 0.1
    biases = [v for v in wgan.critic.trainable_variables if len(v.shape) == 1]
    assert all(np.abs(b.numpy()).max() <= c + 1e-9 for b in biases)


def test_weight_clip_matches_keras_kernel_constraint():
    """A manual clip after apply_gradients equals Keras' kernel/bias constraints."""
    clip = WeightClip(c=0.05)
    x = tf.constant(np.random.default_rng(0).normal(size=(8, 3)), tf.float32)

    def build(constrained):
        keras.utils.set_random_seed(3)
        kw = {}
        if constrained:
            kw = dict(
                kernel_constraint=lambda w: tf.clip_by_value(w, -0.05, 0.05),
                bias_constraint=lambda w: tf.clip_by_value(w, -0.05, 0.05),
            )
        return keras.Sequential(
            [keras.Input((3,)), keras.layers.Dense(4, **kw), keras.layers.Dense(1, **kw)]
        )

    results = []
    for constrained in (False, True):
        model, opt = build(constrained), keras.optimizers.SGD(0.3)
        for _ in range(3):
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(tf.square(model(x)))
            opt.apply_gradients(
                zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables)
            )
            if not constrained:
                clip.after_update(model)
        results.append([v.numpy() for v in model.trainable_variables])
    for manual, keras_constrained in zip(*results):
        np.testing.assert_allclose(manual, keras_constrained, rtol=1e-6, atol=1e-7)


def spectral_norms(critic):
    wrapped = [
        layer for layer in critic.layers if isinstance(layer, keras.layers.SpectralNormalization)
    ]
    return [
        np.linalg.svd(w.kernel.numpy().reshape(-1, w.kernel.shape[-1]), compute_uv=False)[0]
        for w in wrapped
    ]


def test_spectral_norm_wraps_every_dense_layer_and_normalizes_it():
    critic = SpectralNorm(power_iterations=5).wrap_critic(mlp_critic((2,), width=32, depth=3))
    assert len(spectral_norms(critic)) == 4  # 3 hidden + output
    x = tf.random.stateless_normal((64, 2), seed=[0, 1])
    for _ in range(10):  # each training call runs power iterations and renormalizes the kernel
        critic(x, training=True)
    for sigma in spectral_norms(critic):
        assert abs(sigma - 1.0) < 0.05, sigma


def test_spectral_norm_holds_during_training():
    wgan = tiny_wgan(
        SpectralNorm(power_iterations=1), critic_lr=1e-3, optimizer=keras.optimizers.Adam
    )
    wgan.iterate(toy_iterator(wgan), 20)
    sigmas = spectral_norms(wgan.critic)
    assert len(sigmas) == 3
    for sigma in sigmas:
        assert abs(sigma - 1.0) < 0.05, sigmas


def test_unconstrained_critic_is_not_normalized():
    """The SVD check above can fail: an unwrapped critic's layers are far from σ = 1."""
    critic = mlp_critic((2,), width=32, depth=3)
    sigmas = [np.linalg.svd(layer.kernel.numpy(), compute_uv=False)[0] for layer in critic.layers]
    assert max(abs(s - 1) for s in sigmas) > 0.05
