"""A short XLA-compiled fit, for tests/test_notebook_walkthrough.py::test_a_compiled_fit_logs_no_assert_noise.

Run as a child (``python -m tests.xla_noise_probe``) with TensorFlow's C++ log on: XLA writes one
"Ignoring Assert operator" line for each Assert op in a compiled graph, at compile time.
"""

import keras
import numpy as np

import lipgan


def critic(shape):
    inputs = keras.Input(shape=shape)
    x = keras.layers.Dense(8, activation="relu")(inputs)
    return keras.Model(inputs, keras.layers.Dense(1)(x))


def generator(shape):
    inputs = keras.Input(shape=(2,))
    return keras.Model(inputs, keras.layers.Dense(shape[-1])(inputs))


if __name__ == "__main__":
    points = np.random.default_rng(0).normal(size=(64, 2)).astype("float32")
    trainer = lipgan.Trainer(
        data=points,
        critic=critic,
        generator=generator,
        constraint=lipgan.constraints.GradientPenalty(),
        step_config=lipgan.StepConfig(global_batch_size=8, n_critic=1, seed=0, jit_compile=True),
        intervals=lipgan.Intervals(log_every=1, checkpoint_every=0, plot_samples=0),
    )
    state = trainer.fit(2, verbose=0)
    print(f"trained to step {state.step}")
