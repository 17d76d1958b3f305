"""Diagnostics on critics whose Lipschitz behaviour is known analytically."""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from lipgan.core import lipschitz
from lipgan.metrics import diagnostics


def linear_critic(w, b=0.0):
    critic = keras.Sequential([keras.Input(shape=(len(w),)), keras.layers.Dense(1)])
    critic.layers[0].set_weights(
        [np.asarray(w, np.float32).reshape(-1, 1), np.array([b], np.float32)]
    )
    return critic


def points(n, seed, d=2):
    return np.random.default_rng(seed).normal(size=(n, d)).astype(np.float32)


def test_linear_critic_gradient_norm_is_norm_of_w_everywhere():
    critic = linear_critic([3.0, 4.0], b=0.7)
    stats = diagnostics.gradient_norm_stats(critic, points(64, 0), points(64, 1))
    for where in ("real", "fake", "interp"):
        assert stats[f"{where}/mean"] == pytest.approx(5.0, rel=1e-5)
        assert stats[f"{where}/max"] == pytest.approx(5.0, rel=1e-5)
        assert stats[f"{where}/frac_above_1"] == 1.0
    small = diagnostics.gradient_norm_stats(linear_critic([0.3, 0.4]), points(64, 0), points(64, 1))
    assert small["interp/mean"] == pytest.approx(0.5, rel=1e-5)
    assert small["interp/frac_above_1"] == 0.0


def test_interpolates_lie_on_the_segments():
    real, fake = points(32, 0), points(32, 1)
    x = np.asarray(diagnostics.interpolates(real, fake, seed=3))
    # x = real + eps (fake - real) with one eps in [0, 1] per row
    eps = np.sum((x - real) * (fake - real), axis=1) / np.sum((fake - real) ** 2, axis=1)
    np.testing.assert_allclose(x, real + eps[:, None] * (fake - real), atol=1e-5)
    assert ((eps >= 0) & (eps <= 1)).all() and eps.std() > 0.1


def test_empirical_lipschitz_is_a_lower_bound_reached_along_w():
    w = np.array([3.0, 4.0])
    critic = linear_critic(w)
    x, y = points(100, 0), points(100, 1)
    assert diagnostics.empirical_lipschitz(critic, x, y) <= 5.0 + 1e-4
    along = x + np.outer(np.linspace(0.1, 2, 100), w / 5.0).astype(np.float32)
    assert diagnostics.empirical_lipschitz(critic, x, along) == pytest.approx(5.0, rel=1e-4)
    with pytest.raises(ValueError):
        diagnostics.empirical_lipschitz(critic, x, x)


def test_lipschitz_upper_bound_of_known_matrices():
    assert diagnostics.lipschitz_upper_bound(linear_critic([3.0, 4.0])) == pytest.approx(
        5.0, rel=1e-6
    )
    critic = keras.Sequential(
        [keras.Input(shape=(2,)), keras.layers.Dense(3, activation="relu"), keras.layers.Dense(1)]
    )
    critic.layers[0].set_weights(
        [np.array([[2, 0, 0], [0, 1, 0]], np.float32), np.zeros(3, np.float32)]
    )
    critic.layers[1].set_weights(
        [np.array([[0.5], [0], [-1.5]], np.float32), np.zeros(1, np.float32)]
    )
    # sigma_max(W1) = 2, sigma_max(W2) = ||(0.5, 0, -1.5)|| = sqrt(2.5)
    assert diagnostics.lipschitz_upper_bound(critic) == pytest.approx(2 * np.sqrt(2.5), rel=1e-6)
    # a nested model counts with its own bound
    inputs = keras.Input(shape=(2,))
    nested = keras.Model(inputs, keras.layers.Dense(1)(critic(2 * inputs)))
    nested.layers[-1].set_weights([np.array([[-3.0]], np.float32), np.zeros(1, np.float32)])
    assert (
        diagnostics.lipschitz_upper_bound(nested) is None
    )  # 2 * inputs: an op lipgan cannot bound
    nested = keras.Model(inputs, keras.layers.Dense(1)(critic(inputs)))
    nested.layers[-1].set_weights([np.array([[-3.0]], np.float32), np.zeros(1, np.float32)])
    assert diagnostics.lipschitz_upper_bound(nested) == pytest.approx(6 * np.sqrt(2.5), rel=1e-6)


def test_lipschitz_upper_bound_counts_groupsort_as_one():
    """A MaxMin/GroupSort critic is bounded by its kernels alone, and the bound holds."""
    from lipgan.models import mlp_critic

    keras.utils.set_random_seed(0)
    for activation in ("maxmin", "groupsort"):
        critic = mlp_critic((3,), width=8, depth=2, activation=activation)
        kernels = [layer.kernel.numpy() for layer in critic.layers if hasattr(layer, "kernel")]
        product = np.prod([np.linalg.norm(k, ord=2) for k in kernels])
        bound = diagnostics.lipschitz_upper_bound(critic)
        assert bound == pytest.approx(product, rel=1e-5)
        assert bound >= empirical_lipschitz_estimate(critic, (3,))


def empirical_lipschitz_estimate(critic, shape, n=256, seed=0):
    """max of the input-gradient norm over many points and of the pairwise difference quotients."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, *shape)).astype(np.float32)
    y = rng.normal(size=(n, *shape)).astype(np.float32)
    near = x + 1e-2 * rng.normal(size=x.shape).astype(np.float32)
    return max(
        float(diagnostics.gradient_norms(critic, np.concatenate([x, y])).max()),
        diagnostics.empirical_lipschitz(critic, x, y),
        diagnostics.empirical_lipschitz(critic, x, near),
    )


def residual_counter_example():
    """x + f(x) with a tiny branch: a chain product of the norms says 0.01, the truth is ~1.01."""
    inputs = keras.Input(shape=(2,))
    h = keras.layers.Dense(2, activation="relu", name="branch_1")(inputs)
    h = keras.layers.Dense(2, name="branch_2")(h)
    h = keras.layers.Add()([inputs, h])
    critic = keras.Model(inputs, keras.layers.Dense(1, name="out")(h))
    eye = 0.1 * np.eye(2, dtype=np.float32)
    critic.get_layer("branch_1").set_weights([eye, np.zeros(2, np.float32)])
    critic.get_layer("branch_2").set_weights([eye, np.zeros(2, np.float32)])
    critic.get_layer("out").set_weights([np.array([[1.0], [0.0]], np.float32), np.zeros(1)])
    return critic


@pytest.mark.parametrize("kind", ["chain_mlp", "residual", "resnet_critic", "dcgan_critic"])
def test_lipschitz_upper_bound_is_above_the_empirical_estimate(kind):
    from lipgan.models import dcgan_critic, mlp_critic, resnet_critic

    keras.utils.set_random_seed(0)
    critic, shape = {
        "chain_mlp": lambda: (mlp_critic((2,), width=32, depth=3), (2,)),
        "residual": lambda: (residual_counter_example(), (2,)),
        "resnet_critic": lambda: (resnet_critic((32, 32, 3), dim=4), (32, 32, 3)),
        "dcgan_critic": lambda: (dcgan_critic((16, 16, 1), dim=4), (16, 16, 1)),
    }[kind]()
    bound = diagnostics.lipschitz_upper_bound(critic)
    estimate = empirical_lipschitz_estimate(critic, shape, n=256 if shape == (2,) else 32)
    assert bound is not None and bound >= estimate * (1 - 1e-5)
    if kind == "residual":
        assert estimate == pytest.approx(1.01, rel=1e-3)  # the old product said 0.01


def explicit_matrix(layer, in_shape):
    """The linear map of a bias-free layer on a tiny input, as a dense matrix (its Jacobian)."""
    x = tf.zeros([1, *in_shape])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reshape(layer(x), [-1])
    return tape.jacobian(y, x).numpy().reshape(y.shape[0], -1)


@pytest.mark.parametrize(
    "make, in_shape",
    [
        (lambda: keras.layers.Conv2D(3, 3, padding="same", use_bias=False), (5, 5, 2)),
        (lambda: keras.layers.Conv2D(4, 5, strides=2, padding="same", use_bias=False), (8, 8, 3)),
        (lambda: keras.layers.Conv2D(2, 3, padding="valid", use_bias=False), (6, 6, 1)),
        (
            lambda: keras.layers.Conv2DTranspose(2, 5, strides=2, padding="same", use_bias=False),
            (4, 4, 3),
        ),
        (lambda: keras.layers.Conv1D(3, 3, padding="same", use_bias=False), (7, 2)),
    ],
    ids=["same", "strided", "valid", "transposed", "conv1d"],
)
def test_conv_operator_bound_against_the_explicit_matrix(make, in_shape):
    keras.utils.set_random_seed(5)
    layer = make()
    critic = keras.Sequential([keras.Input(shape=in_shape), layer, keras.layers.Flatten()])
    sigma = np.linalg.svd(explicit_matrix(layer, in_shape), compute_uv=False).max()
    out_shape = layer.compute_output_shape((1, *in_shape))[1:-1]
    spatial = tuple(max(a, b) for a, b in zip(in_shape[:-1], out_shape))
    bound = lipschitz.conv_operator_norm_bound(np.asarray(layer.kernel), spatial, layer.strides)
    assert sigma <= bound * (1 + 1e-6)
    assert bound <= 1.5 * sigma  # a bound on the operator, not the loose reshaped-kernel one
    # and the whole-critic bound is that same number (Flatten is an isometry)
    assert diagnostics.lipschitz_upper_bound(critic) == pytest.approx(bound, rel=1e-9)


def test_lipschitz_upper_bound_is_about_one_under_spectral_normalization():
    from lipgan.models import mlp_critic
    from lipgan_plugins.spectral_norm import SpectralNorm

    keras.utils.set_random_seed(0)
    critic = SpectralNorm().wrap_critic(mlp_critic((2,), width=16, depth=2))
    for _ in range(30):  # power iteration advances once per training call
        critic(points(8, 0), training=True)
    bound = diagnostics.lipschitz_upper_bound(critic)
    assert 0.5 < bound <= 1.05
    assert bound >= empirical_lipschitz_estimate(critic, (2,)) * (1 - 1e-5)


def test_no_bound_where_none_is_known():
    def capped_relu(x):
        return tf.minimum(tf.nn.relu(x), 0.5)

    def critic_with(*layers):
        return keras.Sequential([keras.Input(shape=(4,)), *layers, keras.layers.Dense(1)])

    assert diagnostics.lipschitz_upper_bound(critic_with(keras.layers.Dense(4))) is not None
    for layer in (
        keras.layers.BatchNormalization(),
        keras.layers.LayerNormalization(),
        keras.layers.Lambda(lambda x: 10 * x),
        keras.layers.Dense(4, activation=capped_relu),
    ):
        assert diagnostics.lipschitz_upper_bound(critic_with(layer)) is None, layer.name
    inputs = keras.Input(shape=(4,))
    product = keras.layers.Multiply()([inputs, inputs])
    assert diagnostics.lipschitz_upper_bound(keras.Model(inputs, product)) is None


def test_probe_reports_no_bound_for_a_batch_norm_critic():
    critic = keras.Sequential(
        [keras.Input(shape=(2,)), keras.layers.BatchNormalization(), keras.layers.Dense(1)]
    )
    generator = keras.Sequential([keras.Input(shape=(2,)), keras.layers.Dense(2)])
    wgan = type("W", (), {"critic": critic, "generator": generator, "latent_shape": (2,)})()
    wgan.data_shape = (2,)
    data = iter([points(16, 0)] * 4)
    out = diagnostics.Probe(wgan, data, seed=0)(step=1)
    assert "diag/lipschitz_upper_bound" not in out and "diag/lipschitz_estimate" in out
    wgan.critic = linear_critic([3.0, 4.0])
    out = diagnostics.Probe(wgan, iter([points(16, 0)] * 4), seed=0)(step=1)
    assert out["diag/lipschitz_upper_bound"] == pytest.approx(5.0, rel=1e-6)


def test_layer_gradient_norms_match_the_analytic_value():
    # L = mean D(fake) - mean D(real); dL/dh for the hidden output h is -w2/n on real rows and
    # +w2/n on fake rows, so its norm over the batch is ||w2|| * sqrt(2/n).
    n = 16
    critic = keras.Sequential(
        [keras.Input(shape=(2,)), keras.layers.Dense(3, activation="relu"), keras.layers.Dense(1)]
    )
    w2 = np.array([[1.0], [2.0], [-2.0]], np.float32)
    critic.layers[1].set_weights([w2, np.zeros(1, np.float32)])
    norms = diagnostics.layer_gradient_norms(critic, points(n, 0), points(n, 1))
    assert len(norms) == 1
    assert norms[0] == pytest.approx(3.0 * np.sqrt(2 / n), rel=1e-5)


def test_layer_gradient_norms_need_a_sequential_critic():
    inputs = keras.Input(shape=(2,))
    functional = keras.Model(inputs, keras.layers.Dense(1)(inputs))
    with pytest.raises(ValueError, match="Sequential"):
        diagnostics.layer_gradient_norms(functional, points(4, 0), points(4, 1))


@pytest.mark.slow
def test_train_writes_diagnostics_and_toy_metrics(tmp_path):
    from lipgan.config.train_root import train
    from lipgan.data.pipeline import dataset
    from lipgan.models import mlp_critic, mlp_generator
    from lipgan_plugins.default_strategy import Default
    from lipgan_plugins.gradient_penalty import GradientPenalty

    def run(run_dir, diagnostics_every):
        # train() builds its shuffled dataset before seeding TF, so the shuffle order depends on the
        # process's global seed state; reset it so that both runs see the same data.
        keras.utils.set_random_seed(0)
        return train(
            data=dataset("lipgan_toy/8gaussians"),
            critic=lambda s: mlp_critic(s, width=16, depth=2),
            generator=lambda s: mlp_generator(s, width=16, depth=2),
            constraint=GradientPenalty(weight=0.1),
            strategy=Default(),
            critic_optimizer=lambda: keras.optimizers.Adam(1e-4),
            generator_optimizer=lambda: keras.optimizers.Adam(1e-4),
            steps=5,
            global_batch_size=64,
            n_critic=1,
            steps_per_execution=5,
            log_every=5,
            diagnostics_every=diagnostics_every,
            plot_samples=0,
            jit_compile=False,  # plumbing (probes cut the compiled calls), not XLA
            run_dir=str(run_dir),
        )

    probed = run(tmp_path, 2).metrics
    # probing (its own data stream and noise, shorter compiled calls) leaves training unchanged
    assert probed == pytest.approx(run(tmp_path / "plain", 0).metrics, rel=1e-5)
    records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    diag = [r for r in records if "diag/lipschitz_upper_bound" in r]
    assert [r["step"] for r in diag] == [2, 4]  # the chunks were cut at the diagnostics interval
    assert any("critic_loss" in r and r["step"] == 5 for r in records)
    last = diag[-1]
    for key in (
        "diag/grad_norm/real/mean",
        "diag/grad_norm/fake/max",
        "diag/grad_norm/interp/frac_above_1",
        "diag/lipschitz_estimate",
        "diag/layer_grad_norm/0",
        "diag/layer_grad_norm/1",
        "toy/w1",
        "toy/modes_covered",
        "toy/high_quality_fraction",
    ):
        assert np.isfinite(last[key]), key
    assert last["diag/lipschitz_estimate"] <= last["diag/lipschitz_upper_bound"]
    assert last["toy/num_modes"] == 8
    assert list((tmp_path / "tensorboard").iterdir())


def test_train_rejects_negative_diagnostics_interval():
    from lipgan.config.train_root import train
    from lipgan.core.errors import ConfigError

    with pytest.raises(ConfigError, match="diagnostics_every"):
        train(
            data=None,
            critic=None,
            generator=None,
            constraint=None,
            strategy=None,
            critic_optimizer=None,
            generator_optimizer=None,
            diagnostics_every=-1,
        )
