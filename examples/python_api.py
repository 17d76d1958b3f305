"""Train WGAN-GP on the 8-Gaussians toy set from Python, then sample and plot (about a minute on CPU).

    python examples/python_api.py [OUT_DIR]

Everything `lipgan run` does is available here: the run dir below is resumed if you run the script
again (with more steps it trains on), checkpoints and metrics.jsonl are written as by the CLI, and a
NaN stops training with lipgan.core.errors.NonFiniteLossError naming the term and the step.

The habits shown: a factory for each model (the seed then draws the initial weights; a model given
as an object keeps its own), the generator's keras.Input shape setting the latent size, Keras-style
callbacks (on_evaluate), fit(verbose=0), which prints nothing, evaluate() and audit() beside
sample(), and a run dir that describes itself: `lipgan eval/sample/audit OUT_DIR/run` and
`lipgan run --resume OUT_DIR/run --bind train.steps=N` work on it without this script.
A notebook session step by step, with tfds-style data: examples/notebook_walkthrough.py.
"""

import sys
from pathlib import Path

import keras
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import lipgan  # noqa: E402
from lipgan.constraints import GradientPenalty  # noqa: E402


def critic(data_shape):
    """Any Keras model mapping a batch of examples to one score each will do."""
    inputs = keras.Input(shape=data_shape)
    x = inputs
    for _ in range(3):
        x = keras.layers.Dense(128, activation="relu")(x)
    return keras.Model(inputs, keras.layers.Dense(1)(x), name="critic")


def generator(data_shape, latent_size: int = 2):
    """The Input shape sets the latent size: lipgan feeds it N(0, 1) noise of that shape."""
    inputs = keras.Input(shape=(latent_size,))
    x = inputs
    for _ in range(3):
        x = keras.layers.Dense(128, activation="relu")(x)
    return keras.Model(inputs, keras.layers.Dense(data_shape[-1])(x), name="generator")


class PrintW1(lipgan.Callback):
    def on_evaluate(self, step, metrics):
        print(f"step {step}: W1 to the data {metrics['eval/w1']:.3f}")


def main(out: Path, steps: int = 600) -> lipgan.TrainState:
    trainer = lipgan.Trainer(
        data="lipgan_toy/8gaussians",
        critic=critic,
        generator=generator,
        constraint=GradientPenalty(weight=0.1),  # λ for the toy sets (official gan_toy.py)
        critic_optimizer=keras.optimizers.Adam(5e-4, beta_1=0.5, beta_2=0.9),
        generator_optimizer=keras.optimizers.Adam(5e-4, beta_1=0.5, beta_2=0.9),
        step_config=lipgan.StepConfig(global_batch_size=256, n_critic=5, seed=0),
        intervals=lipgan.Intervals(
            log_every=steps // 3,
            eval_every=steps // 2,
            checkpoint_every=steps // 2,
            steps_per_execution=50,
            plot_samples=0,
        ),
    )
    state = trainer.fit(steps, run_dir=out / "run", callbacks=[PrintW1()], verbose=0)
    points = trainer.sample(2048)
    plt.figure(figsize=(4, 4))
    plt.scatter(points[:, 0], points[:, 1], s=2)
    plt.title(f"lipgan, step {state.step}")
    plt.savefig(out / "samples.png", dpi=100)
    print(f"{out / 'samples.png'}; metrics: {trainer.evaluate()}")
    bounds = trainer.audit()
    print(
        f"Lipschitz constant of the critic: >= {bounds['lower_bound']:.2f} (lipgan audit's bound)"
    )
    print(f"the CLI takes it from here: lipgan eval {out / 'run'}")
    return state


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "python_api_out"))
