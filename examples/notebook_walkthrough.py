"""A researcher's notebook, as a script: your own data and models in lipgan, then the CLI on the run.

    python examples/notebook_walkthrough.py [OUT_DIR]      (about a minute on a CPU)

Each ``# %%`` block is one notebook cell (VS Code and Jupytext run them as cells); in a notebook the
``cli(...)`` calls are ``!lipgan ...`` lines. What it shows:

1. data as ``tfds.load`` returns it: a dataset of dicts with uint8 images (lipgan takes the
   ``'image'`` feature and scales it to [-1, 1]; ``data_key=`` names another);
2. your own Keras models, as factories ``data_shape -> keras.Model`` (the seed then draws their
   initial weights); the generator's ``keras.Input`` shape sets the latent size;
3. ``fit(verbose=0)``, which prints nothing, into a run dir;
4. ``evaluate()``, ``audit()`` and ``sample()`` from Python;
5. ``lipgan eval / audit / sample`` on that run dir, and ``lipgan run --resume`` to train it on:
   the run dir describes itself (its record ``run.json`` holds the models' Keras configs and the
   rest of the trainer, ``data/`` a copy of the data: ``lipgan/run/description.py``), no script
   needed;
6. bad inputs, each refused with one line that says what to do.

A custom layer works the same once it is registered (``@keras.saving.register_keras_serializable()``)
in a module the CLI can import; one defined in the notebook itself is named in a note instead.
``tests/test_notebook_walkthrough.py`` runs this file and checks every cell's output.
"""

import subprocess
import sys
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

import lipgan
from lipgan.constraints import GradientPenalty
from lipgan.core.errors import LipganError, first_line

OUT = Path(sys.argv[1] if len(sys.argv) > 1 else "notebook_out")
RUN_DIR = OUT / "run"


def cli(*args) -> subprocess.CompletedProcess:
    """``!lipgan ARGS`` in a notebook: the same interpreter's lipgan, output captured."""
    command = [sys.executable, "-m", "lipgan.cli.main", *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True)


def show(title: str, result: subprocess.CompletedProcess) -> None:
    print(f"$ lipgan {title} -> exit {result.returncode}")
    print(result.stdout.strip() or result.stderr.strip())


# %% 1. Data as tfds.load gives it: {'image': uint8 [8, 8, 1], 'label': int}
# (with TFDS: data = tfds.load("mnist", split="train"); here 512 blobs made in memory)
rng = np.random.default_rng(0)
centers = rng.integers(2, 6, size=(512, 2))
grid = np.stack(np.meshgrid(np.arange(8), np.arange(8), indexing="ij"), -1)
blobs = np.exp(-((grid[None] - centers[:, None, None]) ** 2).sum(-1) / 2.0)
images = (255 * blobs[..., None]).astype(np.uint8)
data = tf.data.Dataset.from_tensor_slices({"image": images, "label": centers[:, 0]})
print("cell 1: data", data.element_spec["image"])


# %% 2. Your own models: factories data_shape -> keras.Model
def my_critic(data_shape):
    inputs = keras.Input(shape=data_shape)
    x = keras.layers.Flatten()(inputs)
    x = keras.layers.Dense(64, activation="relu")(x)
    return keras.Model(inputs, keras.layers.Dense(1)(x), name="my_critic")  # one score each


def my_generator(data_shape):
    inputs = keras.Input(shape=(16,))  # this Input shape sets the latent size: N(0, 1) noise
    x = keras.layers.Dense(64, activation="relu")(inputs)
    x = keras.layers.Dense(int(np.prod(data_shape)), activation="tanh")(x)  # images in [-1, 1]
    return keras.Model(inputs, keras.layers.Reshape(data_shape)(x), name="my_generator")


trainer = lipgan.Trainer(
    data=data,
    critic=my_critic,
    generator=my_generator,
    constraint=GradientPenalty(weight=10.0),
    critic_optimizer=keras.optimizers.Adam(1e-3, beta_1=0.5, beta_2=0.9),
    generator_optimizer=keras.optimizers.Adam(1e-3, beta_1=0.5, beta_2=0.9),
    step_config=lipgan.StepConfig(global_batch_size=32, n_critic=2, seed=0),
    intervals=lipgan.Intervals(log_every=5, eval_every=10, eval_samples=64, checkpoint_every=10),
)
print("cell 2: latent shape", trainer.wgan.latent_shape)

# %% 3. Train quietly into a run dir (run it again to resume; a different setting is refused)
print("cell 3: fit(verbose=0) begins")
state = trainer.fit(10, run_dir=RUN_DIR, verbose=0)
print(f"cell 3: trained to step {state.step}; last evaluation {state.history[-1]['eval/w1']:.3f}")

# %% 4. Measure from Python
metrics = trainer.evaluate(num_samples=64)
print(f"cell 4: W1 {metrics['eval/w1']:.3f} (floor {metrics['eval/w1_floor']:.3f})")
bounds = trainer.audit(points=64)
print(f"cell 4: Lipschitz constant >= {bounds['lower_bound']:.3f}")
print("cell 4: samples", trainer.sample(4).shape)

# %% 5. The CLI on the same run dir: no script, no gin config needed
show("eval", cli("eval", RUN_DIR, "--samples", "64"))
show("audit", cli("audit", RUN_DIR, "--points", "64"))
show("sample", cli("sample", RUN_DIR, "-n", "16", "--out", OUT / "samples"))
show("run --resume", cli("run", "--resume", RUN_DIR, "--bind", "train.steps=20"))

# %% 6. Bad inputs: one line each, saying what to do
bad = {
    "a list as data": lambda: lipgan.Trainer(
        data=[1, 2, 3], critic=my_critic, generator=my_generator, constraint=GradientPenalty()
    ),
    "dicts without an 'image' feature": lambda: lipgan.Trainer(
        data=tf.data.Dataset.from_tensor_slices({"x": images, "y": images}),
        critic=my_critic,
        generator=my_generator,
        constraint=GradientPenalty(),
    ),
    "a critic with two outputs": lambda: lipgan.Trainer(
        data=data,
        critic=lambda shape: keras.Sequential(
            [keras.Input(shape), keras.layers.Flatten(), keras.layers.Dense(2)]
        ),
        generator=my_generator,
        constraint=GradientPenalty(),
    ),
    "a generator without an Input": lambda: lipgan.Trainer(
        data=data,
        critic=my_critic,
        generator=keras.Sequential([keras.layers.Dense(64)]),
        constraint=GradientPenalty(),
    ),
    "a negative learning rate": lambda: lipgan.Trainer(
        data=data,
        critic=my_critic,
        generator=my_generator,
        constraint=GradientPenalty(),
        critic_optimizer=keras.optimizers.Adam(-1e-3),
    ),
    "evaluate(num_samples=1)": lambda: trainer.evaluate(num_samples=1),
    "fit(verbose=3)": lambda: trainer.fit(20, verbose=3),
}
for what, call in bad.items():
    try:
        call()
        print(f"cell 6: {what}: ACCEPTED")
    except LipganError as exc:
        print(f"cell 6: {what}: {first_line(exc)}")
show("eval of a folder that is no run dir", cli("eval", OUT / "nothing-here"))
show(
    "run --resume with a setting that is not resumable",
    cli("run", "--resume", RUN_DIR, "--bind", "train.n_critic=5"),
)
