"""The Python API: lipgan.Trainer trains, resumes, evaluates and samples without gin or the CLI."""

import importlib.util
import json
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

import lipgan
from lipgan.core.errors import NonFiniteLossError, RunDirError

REPO_ROOT = Path(__file__).resolve().parents[1]


def user_critic(data_shape):
    """A user's own Keras critic (functional, not one of lipgan's model families)."""
    inputs = keras.Input(shape=data_shape)
    x = keras.layers.Dense(24, activation="tanh")(inputs)
    x = keras.layers.Dense(24, activation="relu")(x)
    return keras.Model(inputs, keras.layers.Dense(1)(x))


def user_data() -> tf.data.Dataset:
    """A user's own tf.data pipeline of single 2-D examples (a ring of points).

    tf.data's shuffle seeds itself from TF's global seed *at build time*: a user who wants the same
    order in every process seeds before building the pipeline, as here.
    """
    tf.random.set_seed(7)
    angles = np.random.default_rng(0).uniform(0, 2 * np.pi, 512)
    points = np.stack([np.cos(angles), np.sin(angles)], axis=1).astype("float32")
    return tf.data.Dataset.from_tensor_slices(points).shuffle(512, seed=1)


def make_trainer(learning_rate=1e-3, weight=1.0, **intervals):
    from lipgan.constraints import GradientPenalty

    return lipgan.Trainer(
        data=user_data(),
        critic=user_critic,
        generator=lambda shape: lipgan.models.mlp_generator(shape, width=16, depth=1),
        constraint=GradientPenalty(weight=weight),
        critic_optimizer=keras.optimizers.Adam(learning_rate),
        generator_optimizer=keras.optimizers.Adam(1e-3),
        step_config=lipgan.StepConfig(global_batch_size=32, n_critic=2, seed=3, jit_compile=False),
        intervals=lipgan.Intervals(
            **{"log_every": 2, "checkpoint_every": 3, "plot_samples": 0, **intervals}
        ),
    )


@pytest.mark.slow
def test_train_resume_evaluate_and_sample_through_the_python_api(tmp_path):
    logged = []

    class Record(lipgan.Callback):
        def on_log(self, step, metrics):
            logged.append(step)

    straight = make_trainer().fit(6, progress=lipgan_quiet())
    assert straight.step == 6 and straight.run_dir is None
    assert [row["step"] for row in straight.history] == [2, 4, 6]

    first = make_trainer().fit(3, run_dir=tmp_path, progress=lipgan_quiet())
    assert first.step == 3
    resumed_trainer = make_trainer()
    resumed = resumed_trainer.fit(
        6, run_dir=tmp_path, callbacks=[Record()], progress=lipgan_quiet()
    )
    assert resumed.step == 6
    assert logged == [4, 6]  # only this call's steps
    # exact resume: the same weights as the uninterrupted run, bit for bit
    for a, b in zip(
        straight.critic.weights + straight.generator.weights,
        resumed.critic.weights + resumed.generator.weights,
        strict=True,
    ):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    record = json.loads((tmp_path / "run.json").read_text())
    assert record["settings"] == resumed_trainer.settings() and "gin" not in record

    # evaluate and sample a restored run, as `lipgan eval` / `lipgan sample` do
    reader = make_trainer()
    assert reader.restore(tmp_path, warn=lambda line: None) == 6
    np.testing.assert_array_equal(reader.sample(16), resumed_trainer.sample(16))
    metrics = reader.evaluate(num_samples=64)
    assert np.isfinite(metrics["eval/critic_wasserstein"])


def lipgan_quiet():
    from lipgan.run.progress import Progress

    return Progress(lambda line: None)


@pytest.mark.slow
def test_a_run_dir_with_different_settings_is_refused_from_python(tmp_path):
    make_trainer().fit(1, run_dir=tmp_path, progress=lipgan_quiet())
    with pytest.raises(
        RunDirError, match=r"different config \(critic_optimizer\.learning_rate: 0\.001 -> 0\.0005"
    ):
        make_trainer(learning_rate=5e-4).fit(2, run_dir=tmp_path, progress=lipgan_quiet())
    with pytest.raises(RunDirError, match=r"constraint\.weight: 1\.0 -> 2\.0"):
        make_trainer(weight=2.0).fit(2, run_dir=tmp_path, progress=lipgan_quiet())
    # intervals and the step count may change when resuming ...
    assert make_trainer(log_every=1).fit(2, run_dir=tmp_path, progress=lipgan_quiet()).step == 2
    # ... and force continues with new settings, keeping the old record
    state = make_trainer(weight=2.0).fit(3, run_dir=tmp_path, force=True, progress=lipgan_quiet())
    assert state.step == 3
    assert (
        json.loads((tmp_path / "run-before-2.json").read_text())["settings"]["constraint"]["weight"]
        == 1.0
    )


@pytest.mark.slow
def test_a_keras_model_instance_is_trained_in_place_on_one_device():
    """Unless a constraint wraps it (spectral norm; the penalties' default ReLU pruning makes an
    exact copy): the model trained is always ``trainer.critic``."""
    model = user_critic((2,))
    before = [w.numpy().copy() for w in model.weights]
    trainer = lipgan.Trainer(
        data=user_data(),
        critic=model,
        generator=lambda shape: lipgan.models.mlp_generator(shape, width=8, depth=1),
        constraint=lipgan.constraints.GradientPenalty(fast_relu=False),
        step_config=lipgan.StepConfig(global_batch_size=16, n_critic=1, jit_compile=False),
    )
    assert trainer.critic is model
    trainer.fit(1, progress=lipgan_quiet())
    assert any(not np.array_equal(a, w.numpy()) for a, w in zip(before, model.weights))


class NaNPenalty(lipgan.Constraint):
    name = "nan_penalty_for_tests"

    def penalty(self, critic, real, fake, ctx):
        return tf.fill([tf.shape(real)[0]], float("nan"))


@pytest.mark.slow
def test_the_non_finite_guard_holds_from_python():
    trainer = lipgan.Trainer(
        data=user_data(),
        critic=user_critic,
        generator=lambda shape: lipgan.models.mlp_generator(shape, width=8, depth=1),
        constraint=NaNPenalty(),
        step_config=lipgan.StepConfig(global_batch_size=16, n_critic=1),
    )
    with pytest.raises(NonFiniteLossError, match=r"non-finite penalty \(critic update 1 of 1\)"):
        trainer.fit(3, progress=lipgan_quiet())
    # and the engine's own run() no longer drops it
    with pytest.raises(NonFiniteLossError, match="penalty"):
        trainer.wgan.iterate(trainer.wgan.distribute(trainer.batches), 1)


def test_public_names_are_the_registered_classes():
    from lipgan.constraints import GradientPenalty, WeightClip
    from lipgan.core.plugins import load_registry
    from lipgan.strategies import Default, Mirrored

    registry = load_registry().registry
    assert registry.get("constraint", "gradient_penalty") is GradientPenalty
    assert registry.get("constraint", "weight_clip") is WeightClip
    assert registry.get("strategy", "default") is Default
    assert registry.get("strategy", "mirrored") is Mirrored
    assert "SpectralNorm" in dir(lipgan.constraints)
    with pytest.raises(AttributeError, match="registered constraint classes: .*GradientPenalty"):
        lipgan.constraints.GradientPenality  # noqa: B018


@pytest.mark.heavy
@pytest.mark.slow
def test_the_python_api_example_runs(tmp_path):
    spec = importlib.util.spec_from_file_location(
        "python_api", REPO_ROOT / "examples" / "python_api.py"
    )
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    state = example.main(tmp_path, steps=100)
    assert state.step == 100
    assert any("eval/w1" in row for row in state.history)
    assert (tmp_path / "samples.png").stat().st_size > 0
    assert (tmp_path / "run" / "checkpoints").is_dir()
