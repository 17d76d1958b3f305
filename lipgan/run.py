"""``train``: the gin root. Builds the WGAN on a strategy, runs the host loop, keeps the run dir.

Order matters for "nothing half-written": the strategy, the data and the models are created and the
run dir is checked (location, config, checkpoints) before anything is written, so a configuration
error leaves no trace on disk and a refused run dir is left as it was.

The loop between compiled calls is where the lifecycle lives: the non-finite guard (in-graph, every
iteration), interval checkpoints, logging, diagnostics, evaluation, weight histograms, and graceful
SIGINT/SIGTERM stops. Each compiled call ends exactly on the next interval boundary, so none of this
depends on ``steps_per_execution``.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

import gin
from lipgan import evaluation
from lipgan.checkpoint import RunCheckpoint, checkpointable
from lipgan.constraint import Constraint
from lipgan.engine import METRICS, WGAN, StepConfig
from lipgan.errors import CheckpointError, ConfigError, Interrupted, NonFiniteLossError
from lipgan.interrupt import StopRequests
from lipgan.progress import Progress
from lipgan.rundir import SAMPLES, RunDir
from lipgan.strategy import StrategyPlugin


def warn(message: str) -> None:
    """Warnings go to stderr whatever the progress display (even with --quiet)."""
    print(message, file=sys.stderr, flush=True)


def _check(value, name: str, predicate, requirement: str):
    if not predicate(value):
        raise ConfigError(f"train.{name}={value!r} is invalid: {requirement}")


@dataclasses.dataclass
class Experiment:
    """What ``train`` builds before the first step: enough to train, evaluate or sample."""

    wgan: WGAN
    dataset: Callable
    strategy: StrategyPlugin
    tf_strategy: tf.distribute.Strategy
    seed: int
    global_batch_size: int
    eval_samples: int
    inception_weights: str | None

    @property
    def chief(self) -> bool:
        return self.strategy.is_chief(self.tf_strategy)

    def evaluate(self, num_samples: int | None = None) -> dict:
        return evaluation.evaluate(
            self.wgan,
            self.dataset,
            seed=self.seed,
            batch_size=self.global_batch_size,
            num_samples=num_samples or self.eval_samples,
            inception_weights=self.inception_weights,
        )

    def samples(self, n: int) -> np.ndarray:
        return evaluation.generate(self.wgan, n, self.seed)

    def render(self, n: int) -> bytes | None:
        real = None
        if self.wgan.data_shape == (2,):
            real = evaluation.real_samples(self.dataset, n, self.global_batch_size, self.seed)
        return evaluation.render(
            self.wgan, self.samples(n), real, title=f"step {int(self.wgan.iteration.numpy())}"
        )

    def restore(self, run_dir: str | Path, warn: Callable[[str], None]) -> int:
        """Load the latest readable checkpoint of ``run_dir`` (models only) for eval/sample."""
        checkpoint = RunCheckpoint(run_dir, self.wgan, training=False)
        if not checkpoint.available():
            raise CheckpointError(
                f"no checkpoint in {Path(run_dir) / 'checkpoints'}; train first with "
                f"`lipgan run --run-dir {run_dir}`"
            )
        return checkpoint.restore(warn)


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
    jit_compile: bool | str = "auto",
    mixed_precision: str | None = None,
    log_every: int = 100,
    checkpoint_every: int = 1000,
    max_checkpoints: int = 3,
    plot_samples: int = 1024,
    diagnostics_every: int = 0,
    eval_every: int = 0,
    eval_samples: int = 2048,
    histogram_every: int = 0,
    inception_weights: str | None = None,
    checkpoint_input: bool = True,
    run_dir: str | None = None,
    force: bool = False,
    progress: Progress | None = None,
    log: Callable[[str], None] | None = None,
    build_only: bool = False,
):
    """Train a WGAN and return the last logged metrics (or, with ``build_only``, the Experiment).

    ``steps`` counts generator updates (each preceded by ``n_critic`` critic updates); the compiled
    loop runs up to ``steps_per_execution`` of them per call. Models and optimizers are *factories*
    (``@mlp_critic``, ``@critic/Adam``), called inside ``strategy.scope()``. Intervals (0 = never):
    ``log_every`` (metrics.jsonl, TensorBoard), ``checkpoint_every``, ``diagnostics_every``
    (:class:`lipgan.diagnostics.Probe`), ``eval_every`` (:func:`lipgan.evaluation.evaluate` and a
    sample image), ``histogram_every`` (weight histograms). A run dir that holds checkpoints is
    resumed; its config must match unless ``force``. ``checkpoint_input`` stores the input
    pipeline's position in checkpoints (its in-memory cache and shuffle buffer included: turn it
    off for large cached datasets, and resume replays the input stream instead, equally exact).
    """
    _check(steps, "steps", lambda v: v >= 1, "must be >= 1")
    _check(steps_per_execution, "steps_per_execution", lambda v: v >= 1, "must be >= 1")
    _check(log_every, "log_every", lambda v: v >= 1, "must be >= 1")
    for name, value in [
        ("checkpoint_every", checkpoint_every),
        ("diagnostics_every", diagnostics_every),
        ("eval_every", eval_every),
        ("histogram_every", histogram_every),
    ]:
        _check(value, name, lambda v: v >= 0, "must be >= 0 (0 = off)")
    _check(eval_samples, "eval_samples", lambda v: v >= 2, "must be >= 2")
    if not isinstance(constraint, Constraint):
        raise ConfigError(
            f"train.constraint must be a constraint, e.g. @gradient_penalty(); got {constraint!r}"
        )
    if not isinstance(strategy, StrategyPlugin):
        raise ConfigError(f"train.strategy must be a strategy, e.g. @default(); got {strategy!r}")

    config = StepConfig(global_batch_size, n_critic, seed, jit_compile, mixed_precision)
    tf_strategy = strategy.create()
    # Seed first: TF ops without their own seed (and the data pipeline's defaults) then behave the
    # same in every call of train(), and initial weights are identical on any replica count.
    keras.utils.set_random_seed(seed)
    data = dataset(global_batch_size, seed)
    # And again: building a dataset the first time on a machine consumes global random state (TFDS
    # runs TF ops), which must not change the initial weights of the first run against later ones.
    keras.utils.set_random_seed(seed)
    wgan = WGAN(
        tf_strategy,
        critic=critic,
        generator=generator,
        critic_optimizer=critic_optimizer,
        generator_optimizer=generator_optimizer,
        constraint=constraint,
        data_shape=data.element_spec.shape[1:],
        config=config,
    )
    experiment = Experiment(
        wgan,
        dataset,
        strategy,
        tf_strategy,
        seed,
        global_batch_size,
        eval_samples,
        inception_weights,
    )
    if build_only:
        return experiment
    progress = progress or Progress(log or print)
    loop = TrainingLoop(
        experiment,
        data,
        progress,
        steps=steps,
        steps_per_execution=steps_per_execution,
        log_every=log_every,
        checkpoint_every=checkpoint_every,
        diagnostics_every=diagnostics_every,
        eval_every=eval_every,
        histogram_every=histogram_every,
        checkpoint_input=checkpoint_input,
    )
    return loop.run(
        run_dir,
        force=force,
        max_checkpoints=max_checkpoints,
        plot_samples=plot_samples,
        config_text=gin.config_str(),
        operative_config=gin.operative_config_str,
    )


@dataclasses.dataclass
class TrainingLoop:
    """The host loop of one ``train`` call and everything it does between compiled calls."""

    experiment: Experiment
    data: tf.data.Dataset
    progress: Progress
    steps: int
    steps_per_execution: int
    log_every: int
    checkpoint_every: int
    diagnostics_every: int
    eval_every: int
    histogram_every: int
    checkpoint_input: bool = True

    def __post_init__(self):
        self.wgan = self.experiment.wgan
        self.iterator = self.wgan.distribute(self.data)
        self.rundir: RunDir | None = None
        self.checkpoint: RunCheckpoint | None = None
        self.probe = None

    def next_chunk(self, done: int) -> int:
        """Iterations until the next interval boundary (or the end), at most steps_per_execution."""
        chunk = min(self.steps_per_execution, self.steps - done)
        for every in (
            self.log_every,
            self.checkpoint_every,
            self.diagnostics_every,
            self.eval_every,
            self.histogram_every,
        ):
            if every:
                chunk = min(chunk, every - done % every)
        return chunk

    def open(self, run_dir, force: bool, max_checkpoints: int, config_text: str) -> int:
        """Check and restore the run dir (no writes), then start writing; the step to start from."""
        if run_dir is None:
            return 0
        chief = self.experiment.chief
        rundir = RunDir(run_dir)
        differences = rundir.check(config_text, force) if chief else []
        saved_input = self.checkpoint_input and checkpointable(self.iterator)
        self.checkpoint = RunCheckpoint(
            run_dir, self.wgan, self.iterator if saved_input else None, max_checkpoints
        )
        start = self.checkpoint.restore(warn)
        if start and not self.checkpoint.input_restored:
            # The input stream is a deterministic function of the seed: replaying it to where the
            # checkpoint was taken is exact, at the cost of reading the skipped batches once.
            consumed = start * self.wgan.config.n_critic
            self.progress.message(
                f"fast-forwarding the input pipeline by {consumed} batches (this "
                "strategy's input iterator cannot be checkpointed)"
            )
            # A new pipeline, not a second iterator over ``self.data``: with
            # reshuffle_each_iteration, every iterator of one dataset object shuffles differently.
            exp = self.experiment
            fresh = exp.dataset(exp.global_batch_size, exp.seed)
            self.iterator = self.wgan.distribute(fresh.skip(consumed))
        if self.wgan.workers_disagree(start):
            raise CheckpointError(
                f"the workers resumed {run_dir} from different steps; the run dir must be on a "
                "filesystem that every worker reads"
            )
        if chief:
            rundir.begin(config_text, start, replaced=bool(differences))
            self.rundir = rundir
            if differences:
                self.progress.message(
                    f"--force: continuing with a changed config ({differences[0]}, ...)"
                )
        if start:
            self.progress.message(f"resumed from {self.checkpoint.latest} at step {start}")
        return start

    def save(self, done: int) -> None:
        if self.rundir is not None:
            self.checkpoint.save(done, warn)

    def run(
        self,
        run_dir,
        *,
        force: bool,
        max_checkpoints: int,
        plot_samples: int,
        config_text: str,
        operative_config: Callable[[], str],
    ) -> dict:
        start = self.open(run_dir, force, max_checkpoints, config_text)
        done, last = start, {}
        if start >= self.steps:
            self.progress.message(
                f"already trained to step {start} (train.steps={self.steps}); "
                "raise train.steps to continue"
            )
        try:
            with StopRequests(self.progress.message) as stop:
                self.progress.start(self.steps, start)
                while done < self.steps:
                    done, last = self.advance(done)
                    if self.wgan.any_worker(stop.requested):
                        self.save(done)
                        where = (
                            f"; resume with `lipgan run --resume {run_dir}`" if self.rundir else ""
                        )
                        raise Interrupted(
                            f"{stop.name or 'a signal'} at step {done}: checkpoint saved{where}",
                            128 + (stop.signum or 2),
                        )
                self.progress.close()
            self.save(done)
            if self.rundir is not None:
                self.rundir.write_operative_config(operative_config())
                if plot_samples:
                    png = self.experiment.render(plot_samples)
                    if png:
                        self.rundir.file(SAMPLES).write_bytes(png)
                        self.rundir.log_image(done, "samples", png)
                self.progress.message(f"run dir: {run_dir}")
        finally:
            self.progress.close()
            if self.rundir is not None:
                self.rundir.close()
        return last

    def advance(self, done: int) -> tuple[int, dict]:
        """One compiled call, then whatever falls due at the step it ends on."""
        result = self.wgan.run_checked(self.iterator, self.next_chunk(done))
        done += int(result.completed)
        bad = result.first_nonfinite()
        if bad:
            kept = self.checkpoint.latest if self.rundir is not None else None
            raise NonFiniteLossError(
                f"non-finite {bad} at step {done}; "
                + (
                    f"the last good checkpoint {kept} is kept; "
                    if kept
                    else "no checkpoint was written; "
                )
                + "lower the learning rate or check the data and the constraint"
            )
        metrics = {k: float(v) for k, v in result.metrics.items()}
        self.progress.update(done, {k: metrics[k] for k in ("critic_loss", "wasserstein")})
        due = lambda every: every and done % every == 0  # noqa: E731
        logged = {}
        if due(self.log_every) or done == self.steps:
            self.progress.log(done, metrics, METRICS)
            logged.update(metrics)
        if due(self.checkpoint_every):
            self.save(done)
        if self.rundir is not None:
            if due(self.diagnostics_every):
                logged.update(self.diagnostics(done))
            if due(self.eval_every):
                logged.update(self.experiment.evaluate())
                png = self.experiment.render(min(1024, self.experiment.eval_samples))
                if png:
                    self.rundir.log_image(done, "samples", png)
            if due(self.histogram_every):
                self.rundir.log_histograms(
                    done, {"critic": self.wgan.critic, "generator": self.wgan.generator}
                )
            if logged:
                self.rundir.log_metrics(done, logged)
        return done, metrics

    def diagnostics(self, done: int) -> dict:
        if self.probe is None:
            from lipgan.diagnostics import Probe

            exp = self.experiment
            # Its own data stream (another seed): probing must not consume training batches.
            data = exp.dataset(exp.global_batch_size, exp.seed + 1)
            self.probe = Probe(
                self.wgan, data, exp.seed, getattr(exp.dataset, "dataset_name", None)
            )
        return self.probe(done)
