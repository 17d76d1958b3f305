"""Built-in penalties against closed forms on a linear critic f(x) = w·x + b, whose gradient is w
everywhere: GP = λ(‖w‖−t)²/t², one-sided = λ·max(0, ‖w‖−t)²/t², DRAGAN = λ(‖w‖−1)², R1 = γ/2·‖w‖²,
drift = ε·(w·x+b)²."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from lipgan import StepContext
from lipgan_plugins.dragan import Dragan, global_batch_std, perturb_real, perturb_real_reference
from lipgan_plugins.gradient_penalty import GradientPenalty
from lipgan_plugins.lipschitz_penalty import LipschitzPenalty
from lipgan_plugins.r1 import R1

BATCH, DIM = 6, 3


def linear_critic(w, b=0.5):
    critic = keras.Sequential([keras.Input(shape=(DIM,)), keras.layers.Dense(1)])
    critic.layers[-1].set_weights(
        [np.asarray(w, np.float32).reshape(DIM, 1), np.array([b], np.float32)]
    )
    return critic


def ctx(seed=0):
    return StepContext(seed=seed, step=3, phase=1, global_batch_size=BATCH, num_replicas=1)


def batches(seed=0):
    rng = np.random.default_rng(seed)
    return (
        tf.constant(rng.normal(size=(BATCH, DIM)), tf.float32),
        tf.constant(rng.normal(size=(BATCH, DIM)), tf.float32),
    )


# ‖w‖ = 0.5 (gentle) and 2.0 (steep) exercise both sides of the target.
GENTLE, STEEP = [0.3, 0.4, 0.0], [1.2, 0.0, 1.6]


@pytest.mark.parametrize("w", [GENTLE, STEEP])
def test_r1_is_half_gamma_squared_norm(w):
    real, fake = batches()
    got = R1(gamma=3.0).penalty(linear_critic(w), real, fake, ctx()).numpy()
    np.testing.assert_allclose(got, np.full(BATCH, 1.5 * np.sum(np.square(w))), rtol=1e-5)


@pytest.mark.parametrize("w", [GENTLE, STEEP])
def test_dragan_is_two_sided_unit_norm_penalty(w):
    real, fake = batches()
    got = Dragan(weight=4.0).penalty(linear_critic(w), real, fake, ctx()).numpy()
    np.testing.assert_allclose(got, np.full(BATCH, 4.0 * (np.linalg.norm(w) - 1) ** 2), rtol=1e-5)


def test_dragan_perturbs_real_data_within_its_noise_scale():
    real, _ = batches()
    moved = perturb_real(real, ctx(), 0.1).numpy() - real.numpy()
    assert np.all(np.abs(moved) > 0) and np.all(np.abs(moved) < 0.1 * 6)  # α·c·|δ|, |δ| < 6σ
    np.testing.assert_array_equal(perturb_real(real, ctx(), 0.0).numpy(), real.numpy())


def test_dragan_reference_noise_is_the_official_codes():
    """x̃ − x = α·c·σ·u with α, u ∈ [0, 1) and σ the std of all elements of the batch
    (kodalinaveen3/DRAGAN: ``x + 0.5 * x.std() * np.random.random(x.shape)``, then interpolated)."""
    real, _ = batches()
    sigma = float(np.std(real.numpy()))
    np.testing.assert_allclose(float(global_batch_std(real, ctx())), sigma, rtol=1e-6)
    moved = perturb_real_reference(real, ctx(), 0.5).numpy() - real.numpy()
    assert np.all(moved >= 0) and np.all(moved < 0.5 * sigma) and moved.max() > 0.1 * sigma
    # σ scales the step: data 10× wider moves 10× further, with the same random numbers
    wide = perturb_real_reference(real * 10, ctx(), 0.5).numpy() - 10 * real.numpy()
    np.testing.assert_allclose(wide, 10 * moved, rtol=1e-4, atol=1e-5)
    got = Dragan(weight=4.0, noise="reference").penalty(linear_critic(STEEP), real, real, ctx())
    np.testing.assert_allclose(got.numpy(), np.full(BATCH, 4.0 * (2.0 - 1) ** 2), rtol=1e-5)


def test_dragan_reference_noise_passes_the_kit_in_process():
    from lipgan import testing

    testing.check_penalty(Dragan(noise="reference"))
    testing.check_compiled(Dragan(noise="reference"))  # tf.function and XLA equal eager
    with pytest.raises(ValueError, match="noise"):
        Dragan(noise="uniform")


def test_dragan_penalizes_at_perturbed_real_points_not_fakes():
    # D(x) = ½‖x‖²-like critic has gradient x: the penalty depends on where it is evaluated.
    critic = keras.Sequential(
        [
            keras.Input(shape=(DIM,)),
            keras.layers.Lambda(lambda x: 0.5 * tf.reduce_sum(x * x, 1, keepdims=True)),
        ]
    )
    real, fake = batches()
    got = Dragan(weight=1.0, noise_scale=0.0).penalty(critic, real, fake * 100, ctx()).numpy()
    expected = (np.linalg.norm(real.numpy(), axis=1) - 1) ** 2
    np.testing.assert_allclose(got, expected, rtol=1e-5)


@pytest.mark.parametrize("w, expected", [(GENTLE, 0.0), (STEEP, 2.0 * (2.0 - 1.0) ** 2)])
def test_lipschitz_penalty_is_one_sided(w, expected):
    real, fake = batches()
    got = LipschitzPenalty(weight=2.0).penalty(linear_critic(w), real, fake, ctx()).numpy()
    np.testing.assert_allclose(got, np.full(BATCH, expected), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("w", [GENTLE, STEEP])
@pytest.mark.parametrize("one_sided", [False, True])
def test_gradient_penalty_target_and_one_sided(w, one_sided):
    real, fake = batches()
    excess = np.linalg.norm(w) - 0.75
    if one_sided:
        excess = max(excess, 0.0)
    constraint = GradientPenalty(weight=3.0, target=0.75, one_sided=one_sided)
    got = constraint.penalty(linear_critic(w), real, fake, ctx()).numpy()
    # The published convention for γ ≠ 1 (ProGAN, TF-GAN): λ(‖g‖ − γ)²/γ² = λ(‖g‖/γ − 1)².
    expected = 3.0 * excess**2 / 0.75**2
    np.testing.assert_allclose(got, np.full(BATCH, expected), rtol=1e-5, atol=1e-7)


def test_gradient_penalty_drift_adds_eps_times_squared_real_score():
    real, fake = batches()
    w, b = np.array(STEEP), 0.5
    critic = linear_critic(w, b)
    plain = GradientPenalty(weight=1.0).penalty(critic, real, fake, ctx()).numpy()
    drifted = GradientPenalty(weight=1.0, drift=0.01).penalty(critic, real, fake, ctx()).numpy()
    np.testing.assert_allclose(drifted - plain, 0.01 * (real.numpy() @ w + b) ** 2, rtol=1e-4)
    assert GradientPenalty().drift == 0.0


def test_r1_gradient_reaches_the_critic_weights():
    """R1's value depends on w, so its weight gradient is γ·w (d/dw of γ/2‖w‖²), not zero."""
    real, fake = batches()
    critic = linear_critic(GENTLE)
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(R1(gamma=2.0).penalty(critic, real, fake, ctx()))
    grad_w = tape.gradient(loss, critic.layers[-1].kernel)
    np.testing.assert_allclose(grad_w.numpy().ravel(), 2.0 * np.array(GENTLE), rtol=1e-5)


@pytest.mark.parametrize(
    "cls, kwargs",
    [
        (R1, {"gamma": -1}),
        (Dragan, {"noise_scale": -1}),
        (LipschitzPenalty, {"weight": -1}),
        (GradientPenalty, {"drift": -0.1}),
    ],
)
def test_negative_parameters_are_rejected(cls, kwargs):
    with pytest.raises(ValueError, match=">= 0"):
        cls(**kwargs)
