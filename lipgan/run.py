"""``train``: the gin root. Builds the WGAN on a strategy, runs the host loop, writes the run dir.

Order matters for "nothing half-written": the strategy, the data and the models are all created
before the run directory is touched, so any configuration error leaves no trace on disk.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

import gin
from lipgan.constraint import Constraint
from lipgan.engine import METRICS, WGAN, StepConfig
from lipgan.errors import ConfigError, NonFiniteLossError
from lipgan.strategy import StrategyPlugin


def _check(value, name: str, predicate, requirement: str):
    if not predicate(value):
        raise ConfigError(f"train.{name}={value!r} is invalid: {requirement}")


def train(
    *,
    dataset: Callable,
    critic: Callable,
    generator: Callable,
    constraint: Constraint,
    strategy: StrategyPlugin,
    critic_optimizer: Callable,
    generator_optimizer: Callable,
    steps: int = 1000,
    global_batch_size: int = 256,
    n_critic: int = 5,
    seed: int = 0,
    steps_per_execution: int = 1,
    jit_compile: bool = False,
    mixed_precision: str | None = None,
    log_every: int = 100,
    checkpoint_every: int = 1000,
    max_checkpoints: int = 3,
    plot_samples: int = 1024,
    diagnostics_every: int = 0,
    run_dir: str | None = None,
    log: Callable[[str], None] = print,
) -> dict:
    """Train a WGAN and return the last logged metrics.

    ``steps`` counts generator updates (each preceded by ``n_critic`` critic updates); the compiled
    loop runs ``steps_per_execution`` of them per call. Models and optimizers are *factories*
    (``@mlp_critic``, ``@critic/Adam``), called inside ``strategy.scope()``. Every
    ``diagnostics_every`` steps (0 = never) :class:`lipgan.diagnostics.Probe` measures the critic's
    Lipschitz behaviour (and toy metrics) between compiled calls and logs it with the metrics.
    """
    _check(steps, "steps", lambda v: v >= 1, "must be >= 1")
    _check(steps_per_execution, "steps_per_execution", lambda v: v >= 1, "must be >= 1")
    _check(log_every, "log_every", lambda v: v >= 1, "must be >= 1")
    _check(diagnostics_every, "diagnostics_every", lambda v: v >= 0, "must be >= 0 (0 = off)")
    if not isinstance(constraint, Constraint):
        raise ConfigError(f"train.constraint must be a constraint, e.g. @gradient_penalty(); got {constraint!r}")
    if not isinstance(strategy, StrategyPlugin):
        raise ConfigError(f"train.strategy must be a strategy, e.g. @default(); got {strategy!r}")

    config = StepConfig(global_batch_size, n_critic, seed, jit_compile, mixed_precision)
    tf_strategy = strategy.create()
    # Seed first: TF ops without their own seed (and the data pipeline's defaults) then behave the
    # same in every call of train(), and initial weights are identical on any replica count.
    keras.utils.set_random_seed(seed)
    data = dataset(global_batch_size, seed)
    data_shape = data.element_spec.shape[1:]
    wgan = WGAN(
        tf_strategy,
        critic=critic,
        generator=generator,
        critic_optimizer=critic_optimizer,
        generator_optimizer=generator_optimizer,
        constraint=constraint,
        data_shape=data_shape,
        config=config,
    )
    iterator = wgan.distribute(data)

    chief = strategy.is_chief(tf_strategy)
    out = Path(run_dir) if run_dir else None
    writer = RunWriter(out, wgan, max_checkpoints) if (out and chief) else None
    if writer:
        start = writer.restore()
        if start:
            log(f"resumed from {writer.manager.latest_checkpoint} at step {start}")
    started, done = time.perf_counter(), int(wgan.iteration.numpy())
    first = done  # the rate counts this session's steps only, not resumed ones
    last = {}
    while done < steps:
        next_log = (done // log_every + 1) * log_every
        chunk = min(steps_per_execution, steps - done, next_log - done)
        if diagnostics_every:
            chunk = min(chunk, diagnostics_every - done % diagnostics_every)
        metrics = wgan.run(iterator, chunk)
        done += chunk
        if writer and diagnostics_every and done % diagnostics_every == 0:
            writer.log_diagnostics(done, dataset, global_batch_size, seed)
        if done % log_every == 0 or done == steps:
            last = {k: float(v) for k, v in metrics.items()}
            bad = [k for k in METRICS if not math.isfinite(last[k])]
            if bad:
                if writer:
                    writer.close()
                raise NonFiniteLossError(
                    f"non-finite {', '.join(bad)} at step {done}; lower the learning rate or "
                    "check the data and constraint (the last good checkpoint is kept)"
                )
            rate = (done - first) / max(time.perf_counter() - started, 1e-9)
            log(f"step {done}/{steps}  " + "  ".join(f"{k} {last[k]:+.4f}" for k in METRICS)
                + f"  {rate:.1f} it/s")
            if writer:
                writer.log_metrics(done, last)
        if writer and checkpoint_every and done % checkpoint_every == 0:
            writer.save(done)
    if writer:
        writer.save(done)
        writer.write_operative_config()
        if len(data_shape) == 1 and data_shape[0] == 2 and plot_samples:
            writer.plot(data, plot_samples, seed)
        elif len(data_shape) == 3 and plot_samples:
            writer.image_grid(min(plot_samples, 64), seed)
        writer.close()
        log(f"run dir: {out}")
    return last


class RunWriter:
    """Everything a run leaves on disk: checkpoints, TensorBoard events, metrics.jsonl, configs, PNG."""

    def __init__(self, run_dir: Path, wgan: WGAN, max_checkpoints: int):
        if run_dir.exists() and not run_dir.is_dir():
            raise ConfigError(f"run dir {run_dir} exists and is not a directory; choose --run-dir")
        run_dir.mkdir(parents=True, exist_ok=True)
        self.run_dir = run_dir
        self.wgan = wgan
        self.checkpoint = tf.train.Checkpoint(
            critic=wgan.critic,
            generator=wgan.generator,
            critic_optimizer=wgan.critic_optimizer,
            generator_optimizer=wgan.generator_optimizer,
            iteration=wgan.iteration,
        )
        self.manager = tf.train.CheckpointManager(
            self.checkpoint, str(run_dir / "checkpoints"), max_to_keep=max_checkpoints
        )
        (run_dir / "config.gin").write_text(gin.config_str())
        self.summary = tf.summary.create_file_writer(str(run_dir / "tensorboard"))
        self.metrics_file = open(run_dir / "metrics.jsonl", "a")  # noqa: SIM115 - closed in close()

    def restore(self) -> int:
        if self.manager.latest_checkpoint:
            self.checkpoint.restore(self.manager.latest_checkpoint).expect_partial()
        return int(self.wgan.iteration.numpy())

    def log_metrics(self, step: int, metrics: dict) -> None:
        self.metrics_file.write(json.dumps({"step": step, **metrics}) + "\n")
        self.metrics_file.flush()
        with self.summary.as_default(step=step):
            for name, value in metrics.items():
                tf.summary.scalar(name, value)

    def log_diagnostics(self, step: int, dataset: Callable, global_batch_size: int, seed: int) -> None:
        if getattr(self, "probe", None) is None:
            from lipgan.diagnostics import Probe

            # Its own data stream (another seed): probing must not consume training batches.
            data = dataset(global_batch_size, seed + 1)
            self.probe = Probe(self.wgan, data, seed, getattr(dataset, "dataset_name", None))
        self.log_metrics(step, self.probe(step))

    def save(self, step: int) -> None:
        if self.manager.latest_checkpoint is None or not self.manager.latest_checkpoint.endswith(f"-{step}"):
            self.manager.save(checkpoint_number=step)

    def write_operative_config(self) -> None:
        (self.run_dir / "operative_config.gin").write_text(gin.operative_config_str())

    def plot(self, data: tf.data.Dataset, n: int, seed: int) -> None:
        from lipgan.plots.toy import plot_samples

        real = np.concatenate([b.numpy() for b in data.take(max(1, n // data.element_spec.shape[0]))])
        z = tf.random.stateless_normal([len(real), *self.wgan.latent_shape], seed=[seed, 7])
        fake = self.wgan.generator(z, training=False).numpy()
        plot_samples(self.run_dir / "samples.png", self.wgan.critic, real, fake,
                     title=f"step {int(self.wgan.iteration.numpy())}")

    def image_grid(self, n: int, seed: int) -> None:
        """samples.png and a TensorBoard image: a grid of generated images from a fixed noise."""
        from lipgan.plots.images import save_grid, summary_grid

        z = tf.random.stateless_normal([n, *self.wgan.latent_shape], seed=[seed, 7])
        fake = self.wgan.generator(z, training=False).numpy()
        save_grid(self.run_dir / "samples.png", fake, scale=2)
        with self.summary.as_default():
            summary_grid("samples", fake, int(self.wgan.iteration.numpy()))

    def close(self) -> None:
        self.summary.close()
        self.metrics_file.close()
