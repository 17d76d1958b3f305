"""The Python API as a researcher meets it: data as people have it, validation, Keras habits."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import lipgan
from lipgan.core.errors import ConfigError


def ring(n=256, dtype="float32"):
    angles = np.random.default_rng(0).uniform(0, 2 * np.pi, n)
    return np.stack([np.cos(angles), np.sin(angles)], axis=1).astype(dtype)


def critic(shape, outputs=1):
    inputs = keras.Input(shape=shape)
    x = keras.layers.Flatten()(inputs)
    x = keras.layers.Dense(8, activation="relu")(x)
    return keras.Model(inputs, keras.layers.Dense(outputs)(x))


def generator(shape):
    inputs = keras.Input(shape=(4,))
    x = keras.layers.Dense(int(np.prod(shape)), activation="tanh")(inputs)
    return keras.Model(inputs, keras.layers.Reshape(shape)(x))


def trainer(data, **kwargs):
    args = {
        "critic": critic,
        "generator": generator,
        "constraint": lipgan.constraints.GradientPenalty(fast_relu=False),
        "step_config": lipgan.StepConfig(
            global_batch_size=8, n_critic=1, seed=0, jit_compile=False
        ),
        "intervals": lipgan.Intervals(log_every=1, checkpoint_every=0, plot_samples=0),
        **kwargs,
    }
    return lipgan.Trainer(data=data, **args)


def first_batch(t):
    return next(iter(t.batches)).numpy()


# -- 1. data adapters ------------------------------------------------------------------------------
def test_a_tfds_style_dataset_of_dicts_trains_on_its_image_feature():
    images = np.random.default_rng(0).integers(0, 256, (16, 4, 4, 1), dtype=np.uint8)
    ds = tf.data.Dataset.from_tensor_slices({"image": images, "label": np.arange(16)})
    t = trainer(ds)
    batch = first_batch(t)
    assert batch.dtype == np.float32 and batch.shape == (8, 4, 4, 1)
    np.testing.assert_allclose(batch, images[:8] / 127.5 - 1.0, atol=1e-6)  # [0, 255] -> [-1, 1]
    assert t.fit(1, verbose=0).step == 1


def test_data_key_names_the_feature_and_a_single_key_is_the_default():
    points = ring(16)
    one = tf.data.Dataset.from_tensor_slices({"x": points})
    np.testing.assert_array_equal(first_batch(trainer(one)), points[:8])
    two = tf.data.Dataset.from_tensor_slices({"x": points, "y": points + 5})
    np.testing.assert_array_equal(first_batch(trainer(two, data_key="y")), points[:8] + 5)
    with pytest.raises(ConfigError, match=r"keys \['x', 'y'\]; pass data_key="):
        trainer(two)


def test_an_already_batched_dataset_is_unbatched():
    points = ring(64)
    for batched in (
        tf.data.Dataset.from_tensor_slices(points).batch(5),
        tf.data.Dataset.from_tensor_slices(points).batch(5, drop_remainder=True),
    ):
        np.testing.assert_array_equal(first_batch(trainer(batched)), points[:8])


def test_float64_arrays_and_datasets_are_cast_to_float32():
    points = ring(32, "float64")
    for data in (points, tf.data.Dataset.from_tensor_slices(points)):
        t = trainer(data)
        assert first_batch(t).dtype == np.float32
        assert t.fit(1, verbose=0).step == 1


@pytest.mark.parametrize(
    "data, match",
    [
        (tf.data.Dataset.from_tensor_slices(["a", "b"]), "examples of dtype string"),
        (tf.data.Dataset.from_tensor_slices((ring(4), ring(4))), "expected a tf.data.Dataset"),
        (np.zeros(5), r"NumPy array of shape \(5,\)"),
        ([[0.0, 1.0]], "got list"),
    ],
)
def test_other_data_gets_one_line_saying_what_was_expected(data, match):
    with pytest.raises(ConfigError, match=match) as info:
        trainer(data)
    assert "\n" not in str(info.value)


def test_a_critic_with_two_outputs_and_a_sequential_without_input_get_one_line():
    data = ring(32)
    with pytest.raises(ConfigError, match=r"one score per example.*Dense\(1\)"):
        trainer(data, critic=lambda shape: critic(shape, outputs=2))
    no_input = keras.Sequential([keras.layers.Dense(2)])
    with pytest.raises(ConfigError, match=r"generator: .*keras.Input\(shape=...\).*latent size"):
        trainer(data, generator=no_input)


# -- 2. validation ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "optimizer, match",
    [
        (keras.optimizers.Adam(-1e-3), r"critic_optimizer\.learning_rate=-0\.001 must be >= 0"),
        (
            keras.optimizers.Adam(keras.optimizers.schedules.PolynomialDecay(-5e-4, 10)),
            r"initial_learning_rate=-0\.0005 must be >= 0",
        ),
        (keras.optimizers.Adam(1e-3, beta_1=1.5), r"beta_1=1\.5 must be in \[0, 1\)"),
    ],
)
def test_bad_optimizer_settings_are_refused_from_python_before_anything_is_written(
    tmp_path, optimizer, match
):
    with pytest.raises(ConfigError, match=match) as info:
        trainer(ring(32), critic_optimizer=optimizer).fit(1, run_dir=tmp_path / "run", verbose=0)
    assert "\n" not in str(info.value)
    assert not (tmp_path / "run").exists()


def test_a_negative_learning_rate_is_refused_from_the_cli(tmp_path):
    from click.testing import CliRunner

    from lipgan.cli.main import cli

    result = CliRunner().invoke(
        cli,
        [
            "run",
            "--gin",
            "gin/sngan_toy.gin",
            "--run-dir",
            str(tmp_path / "run"),
            "--bind",
            "critic/linear_decay.initial_learning_rate=-5e-4",
        ],
    )
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code != 0 and len(lines) == 1, result.output
    assert "initial_learning_rate = -0.0005 is invalid: it must be >= 0" in lines[0]
    assert not (tmp_path / "run").exists()


# -- 3. Keras habits -------------------------------------------------------------------------------
def test_fit_verbose_0_prints_nothing_and_callbacks_see_every_hook(tmp_path, capsys):
    seen = []

    class Record(lipgan.Callback):
        def on_train_begin(self, step, steps):
            seen.append(("begin", step, steps))

        def on_log(self, step, metrics):
            seen.append(("log", step))

        def on_evaluate(self, step, metrics):
            seen.append(("evaluate", step, sorted(metrics)[0]))

        def on_checkpoint(self, step, path):
            seen.append(("checkpoint", step))

        def on_train_end(self, state):
            seen.append(("end", state.step))

    t = trainer(
        ring(64),
        intervals=lipgan.Intervals(
            log_every=2, checkpoint_every=2, eval_every=2, eval_samples=16, plot_samples=0
        ),
    )
    capsys.readouterr()
    t.fit(2, run_dir=tmp_path, callbacks=[Record()], verbose=0)
    assert capsys.readouterr().out == ""
    assert seen[0] == ("begin", 0, 2) and seen[-1] == ("end", 2)
    assert ("log", 2) in seen and ("checkpoint", 2) in seen
    assert ("evaluate", 2, "eval/critic_wasserstein") in seen
    t.fit(3, verbose=2)
    assert capsys.readouterr().out.startswith("step 3/3  critic_loss")
    t.fit(4, progress=False)  # the old spelling is silent too
    assert capsys.readouterr().out == ""
    with pytest.raises(ConfigError, match="verbose=3 is invalid"):
        t.fit(5, verbose=3)


def test_dir_lipgan_lists_the_lazy_public_names():
    names = dir(lipgan)
    for name in ("Trainer", "Callback", "StepConfig", "Intervals", "constraints", "models"):
        assert name in names


# -- 4. seeds with model objects -------------------------------------------------------------------
def test_given_models_keep_their_weights_factories_are_seeded_and_the_note_is_said_once(capsys):
    """The note is a LipganWarning (a user filters it the Python way), never printed to stdout."""
    from lipgan.core import factories
    from lipgan.core.errors import LipganWarning

    factories._noted.clear()
    keras.utils.set_random_seed(123)
    model = critic((2,))
    given = [w.numpy().copy() for w in model.weights]
    capsys.readouterr()
    with pytest.warns(LipganWarning) as caught:
        first = trainer(ring(32), critic=model)
        trainer(ring(32), critic=model)
    notes = [w for w in caught if str(w.message) == factories.GIVEN_WEIGHTS_NOTE]
    assert len(notes) == 1  # once per process
    assert capsys.readouterr().out == ""
    for a, w in zip(given, first.critic.weights, strict=True):
        np.testing.assert_array_equal(a, w.numpy())  # used as they are, not re-drawn
    # a factory's weights come from the seed: the same in every trainer of this seed
    a, b = trainer(ring(32)), trainer(ring(32))
    for x, y in zip(a.critic.weights, b.critic.weights, strict=True):
        np.testing.assert_array_equal(x.numpy(), y.numpy())


# -- 5. pictures -----------------------------------------------------------------------------------
def test_the_2d_plot_takes_its_extent_from_the_data_and_draws_real_points_on_top():
    from lipgan.plots import pyplot
    from lipgan.plots.toy import draw_samples, title_size

    real = ring(200) * 10 + 40  # std ~7, far from the old fixed [-3, 3]²
    fake = ring(100) * 9 + 40
    fig, ax = pyplot().subplots()
    draw_samples(ax, critic((2,)), real, fake)
    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    assert x0 < real[:, 0].min() and x1 > real[:, 0].max()
    assert y0 < real[:, 1].min() and y1 > real[:, 1].max()
    generated, drawn_real = ax.collections[-2:]  # the real points come last: on top
    assert drawn_real.get_label() == "real" and generated.get_label() == "generated"
    assert drawn_real.get_sizes()[0] < generated.get_sizes()[0]
    assert drawn_real.get_alpha() < 1
    pyplot().close(fig)
    assert title_size("run step 10") == 10
    assert title_size("x" * 96) == 5  # a long run dir name shrinks to fit


# -- 6. evaluate() ---------------------------------------------------------------------------------
def test_evaluate_refuses_fewer_than_two_samples_and_gives_w1_with_its_floor_on_own_data(
    monkeypatch,
):
    from lipgan.metrics import evaluation

    t = trainer(ring(256) * 10)
    for bad in (0, 1):
        with pytest.raises(ConfigError, match=f"num_samples={bad} is invalid.*>= 2"):
            t.evaluate(num_samples=bad)
    exact = t.evaluate(num_samples=64)
    assert exact["eval/w1"] > exact["eval/w1_floor"] > 0  # an untrained generator is far away
    monkeypatch.setattr(evaluation, "EXACT_W1_MAX_TERMS", 0)
    sliced = t.evaluate(num_samples=64)
    assert "eval/w1" not in sliced
    assert sliced["eval/sliced_w1"] > sliced["eval/sliced_w1_floor"] > 0
