"""Train WGAN-GP on the 8-Gaussians toy set from Python, then sample and plot (about a minute on CPU).

    python examples/python_api.py [OUT_DIR]

Everything `lipgan run` does is available here: the run dir below is resumed if you run the script
again (with more steps it trains on), checkpoints and metrics.jsonl are written as by the CLI, and a
NaN stops training with lipgan.errors.NonFiniteLossError naming the term and the step.
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


class PrintW1(lipgan.Callback):
    def on_log(self, step, metrics):
        if "eval/w1" in metrics:
            print(f"step {step}: W1 to the data {metrics['eval/w1']:.3f}")


def main(out: Path, steps: int = 600) -> lipgan.TrainState:
    trainer = lipgan.Trainer(
        data="lipgan_toy/8gaussians",
        critic=critic,
        generator=lambda shape: lipgan.models.mlp_generator(shape, width=128, depth=3),
        constraint=GradientPenalty(weight=0.1),  # λ for the toy sets (official gan_toy.py)
        critic_optimizer=keras.optimizers.Adam(5e-4, beta_1=0.5, beta_2=0.9),
        generator_optimizer=keras.optimizers.Adam(5e-4, beta_1=0.5, beta_2=0.9),
        step=lipgan.StepConfig(global_batch_size=256, n_critic=5, seed=0),
        intervals=lipgan.Intervals(
            log_every=steps // 3,
            eval_every=steps // 2,
            checkpoint_every=steps // 2,
            steps_per_execution=50,
            plot_samples=0,
        ),
    )
    state = trainer.fit(steps, run_dir=out / "run", callbacks=[PrintW1()])
    points = trainer.sample(2048)
    plt.figure(figsize=(4, 4))
    plt.scatter(points[:, 0], points[:, 1], s=2)
    plt.title(f"lipgan, step {state.step}")
    plt.savefig(out / "samples.png", dpi=100)
    print(f"{out / 'samples.png'}; metrics: {trainer.evaluate()}")
    return state


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "python_api_out"))
