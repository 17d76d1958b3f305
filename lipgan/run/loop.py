"""The host loop of :meth:`lipgan.Trainer.fit`: everything a run does between compiled calls.

Below :mod:`lipgan.run.trainer` (which imports it; it imports no trainer): the loop is given narrow
inputs, not the trainer: the WGAN it steps, the input state it reads and moves
(:class:`lipgan.run.training_input.TrainingInput`), the intervals, and the trainer's evaluate,
render and describe functions.

Order matters for "nothing half-written": the trainer has already created the strategy, the data and
the models; the run dir is checked (location, settings, checkpoints) before anything is written, so a
configuration error leaves no trace on disk and a refused run dir is left as it was.

The loop between compiled calls is where the lifecycle lives: the non-finite guard (in-graph, every
iteration), interval checkpoints, logging, diagnostics, evaluation, weight histograms, callbacks and
graceful SIGINT/SIGTERM stops. Each compiled call ends exactly on the next interval boundary, so none
of this depends on ``steps_per_execution``.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import keras
import tensorflow as tf

from lipgan.core.callbacks import Callback
from lipgan.core.errors import (
    CheckpointError,
    DatasetError,
    Interrupted,
    LipganError,
    NonFiniteLossError,
    op_error_cause,
)
from lipgan.core.step_config import Intervals, StepConfig
from lipgan.core.train_state import TrainState
from lipgan.run import record
from lipgan.run.checkpoint import RunCheckpoint, checkpointable
from lipgan.run.interrupt import StopRequests
from lipgan.run.progress import Progress
from lipgan.run.rundir import SAMPLES, RunDir
from lipgan.run.training_input import TrainingInput


def warn(message: str) -> None:
    """Warnings go to stderr whatever the progress display (even with --quiet)."""
    print(message, file=sys.stderr, flush=True)


def runtime_error(exc: tf.errors.OpError, done: int, kept: str | None) -> LipganError:
    """One line for a data or cluster failure in the middle of training (was only "Graph
    execution error"): what failed, and what to do."""
    cause = op_error_cause(exc)
    resume = f"the last checkpoint {kept} is kept" if kept else "no checkpoint was written"
    if isinstance(exc, tf.errors.DataLossError):
        return DatasetError(
            f"the input data is damaged ({cause}) after step {done}; {resume}; rebuild or "
            "re-download the dataset (a truncated TFDS shard: delete its folder and prepare it "
            "again), then run the same command to resume"
        )
    if isinstance(exc, tf.errors.OutOfRangeError):
        return DatasetError(
            f"the input data ran out after step {done} ({cause}): the dataset gives no batch of "
            f"train.global_batch_size examples (empty, or a factory's dataset that ends: end "
            f"it with .repeat()); {resume}"
        )
    if isinstance(exc, (tf.errors.InvalidArgumentError, tf.errors.UnknownError)):
        return DatasetError(
            f"training failed after step {done}: {cause} (raised by the input pipeline or the "
            f"step; a Python error in a tf.data map or py_function shows here); {resume}"
        )
    return LipganError(
        f"the cluster failed after step {done} ({cause}): a worker died or became unreachable; "
        f"{resume}; restart every worker with the same command to resume"
    )


class SteppedGan(Protocol):
    """What the loop calls on the model it trains (:class:`lipgan.core.engine.WGAN` provides it):
    the compiled step and the few host-side facts around it, nothing else of the engine."""

    critic: keras.Model
    generator: keras.Model
    iteration: tf.Variable
    num_replicas: int
    config: StepConfig

    def distribute(self, dataset: tf.data.Dataset): ...

    def iterate_checked(self, iterator, num_iterations: int): ...

    def advance(self, iterator, batches: int) -> None: ...

    def replica_drift(self) -> tuple[float, str | None]: ...

    def any_worker(self, flag: bool) -> bool: ...

    def workers_disagree(self, value: int) -> bool: ...


@dataclasses.dataclass
class TrainingLoop:
    """The host loop of one :meth:`Trainer.fit` call and everything it does between compiled calls.

    Attributes:
        wgan: what it steps (:class:`SteppedGan`, which :class:`lipgan.core.engine.WGAN` provides).
        inputs: the data stream and its position, moved as training reads it.
        intervals: when to log, checkpoint, measure and evaluate.
        progress: the progress display (also one of ``callbacks``).
        steps: the iteration to train until.
        chief: whether this process writes the run dir and measures.
        checkpoint_input: store the input position in checkpoints.
        evaluate: ``() -> {'eval/...': float}`` at ``intervals.eval_every``.
        render: ``n -> PNG bytes | None`` of ``n`` samples.
        describe: ``(run_dir, warn) -> dict``, the record's ``rebuild`` section (it may save the
            data in the run dir); called by the chief once the dir is checked.
        differences: ``(old, new) -> [str]``, the one comparison of two recorded settings
            (:func:`lipgan.run.spec.settings_differences`).
        digest: ``settings -> str``, the settings' hash a checkpoint holds
            (:func:`lipgan.run.spec.settings_digest`).
        callbacks: see every logged step; a :class:`lipgan.run.record.RecordPart` adds a section
            to the record.
    """

    wgan: SteppedGan
    inputs: TrainingInput
    intervals: Intervals
    progress: Progress
    steps: int
    chief: bool
    checkpoint_input: bool
    evaluate: Callable[[], dict]
    render: Callable[[int], bytes | None]
    describe: Callable[[Path, Callable[[str], None]], dict]
    differences: Callable[[dict, dict], list[str]]
    digest: Callable[[dict], str]
    callbacks: list[Callback] = dataclasses.field(default_factory=list)

    def __post_init__(self):
        intervals = self.intervals
        self.steps_per_execution = intervals.steps_per_execution
        self.log_every = intervals.log_every
        self.checkpoint_every = intervals.checkpoint_every
        self.diagnostics_every = intervals.diagnostics_every
        self.eval_every = intervals.eval_every
        self.histogram_every = intervals.histogram_every
        #: Every row logged by this call (what metrics.jsonl receives), for the TrainState.
        self.history: list[dict] = []
        self.rundir: RunDir | None = None
        self.run_record: dict | None = None
        self.checkpoint: RunCheckpoint | None = None
        self.probe = None

    def iterator(self):
        """The distributed iterator training reads, made on first use (kept by :attr:`inputs`
        across fit calls)."""
        if self.inputs.iterator is None:
            self.inputs.at(self.wgan.distribute(self.inputs.batches), 0)
        return self.inputs.iterator

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

    def open(self, run_dir, force: bool, settings: dict) -> int:
        """Lock, check and restore the run dir (no writes), then start writing; the start step.

        The lock is held from before the first read until :meth:`fit` ends (or this fails), so
        a second run on the same dir stops at once instead of interleaving its writes.
        """
        if run_dir is None:
            return int(self.wgan.iteration.numpy())  # fit(steps) counts steps in total
        rundir = RunDir(run_dir)
        try:
            return self._open(rundir, run_dir, force, settings)
        except BaseException:
            rundir.close()
            raise

    def _open(self, rundir, run_dir, force, settings) -> int:
        chief = self.chief
        differences = rundir.check(settings, force, self.differences) if chief else []
        iterator = self.iterator()
        saved_input = self.checkpoint_input and checkpointable(iterator)
        recorded = rundir.recorded if chief and not force else None
        self.checkpoint = RunCheckpoint(
            run_dir,
            self.wgan,
            iterator if saved_input else None,
            self.intervals.max_checkpoints,
            digest=self.digest(settings),
            # Checkpoints are bound to their record: a record copied from another run is refused.
            expected_digest=self.digest(recorded["settings"]) if recorded else None,
        )
        start = self.checkpoint.restore(warn)
        if self.checkpoint.latest is None:
            start = int(self.wgan.iteration.numpy())  # nothing restored: continue in memory
        if self.checkpoint.input_restored:
            self.inputs.at(iterator, start)
        else:
            self.fast_forward(start, saved_input)
        if self.wgan.workers_disagree(start):
            raise CheckpointError(
                f"the workers resumed {run_dir} from different steps; the run dir must be on a "
                "filesystem that every worker reads"
            )
        if chief:
            parts = record.sections(self.callbacks, final=False)
            # A CLI run is rebuilt from its gin config: notes on what the description lacks
            # would be about a rebuild that never happens.
            notes = warn if "gin" not in parts else (lambda _: None)
            rundir.path.mkdir(parents=True, exist_ok=True)
            rundir.lock()  # before describe() may copy the data in: one writer from here on
            self.run_record = record.make(settings, self.describe(Path(run_dir), notes), parts)
            rundir.begin(self.run_record, start, replaced=bool(differences), warn=warn)
            self.rundir = rundir
            if differences:
                self.progress.message(
                    f"force: continuing with changed settings ({differences[0]}, ...)"
                )
        if self.checkpoint.latest is not None:
            self.progress.message(f"resumed from {self.checkpoint.latest} at step {start}")
        return start

    def fast_forward(self, start: int, saved_input: bool) -> None:
        """Put the input iterator at iteration ``start`` if it is not there already.

        The input stream is a deterministic function of the seed: replaying it to where the
        checkpoint was taken is exact, at the cost of reading the skipped batches once. A new
        pipeline, not a second iterator over ``inputs.batches``: with reshuffle_each_iteration, every
        iterator of one dataset object shuffles differently. When the input position is
        checkpointed, the checkpoint tracks the new iterator from now on (it is the one training
        reads), and the batches are dropped through it so that its structure, and so its saved
        position, is the same as a fresh run's.
        """
        if self.inputs.step == start:
            return
        consumed = start * self.wgan.config.n_critic
        latest = self.checkpoint.latest
        if latest is None:
            why = "the input position was lost when an earlier call failed"
        elif not self.checkpoint_input:
            why = "train.checkpoint_input=False"
        elif not saved_input:
            why = "this strategy's input iterator cannot be checkpointed"
        else:
            why = (
                f"{Path(latest).name} holds no input position: it was written with "
                "train.checkpoint_input=False or by a strategy whose input cannot be checkpointed"
            )
        self.progress.message(f"fast-forwarding the input pipeline by {consumed} batches ({why})")
        fresh = self.inputs.fresh()
        if saved_input:
            iterator = self.wgan.distribute(fresh)
            self.wgan.advance(iterator, consumed)
            self.checkpoint.track_input(iterator)
        else:
            iterator = self.wgan.distribute(fresh.skip(consumed))
        self.inputs.at(iterator, start)

    def finish_record(self) -> None:
        """Rewrite the record with its sections' final content (a CLI run's operative config),
        once training has ended normally."""
        final = record.sections(self.callbacks, final=True)
        if final and self.run_record is not None:
            self.run_record = {**self.run_record, **final}
            self.rundir.write_record(self.run_record)

    def save(self, done: int) -> None:
        if self.rundir is not None:
            self.rundir.sync_metrics()  # row N on disk before ckpt-N can exist
            self.checkpoint.save(done, warn)
            for callback in self.callbacks:
                callback.on_checkpoint(done, self.checkpoint.latest)

    def fit(
        self,
        run_dir,
        *,
        force: bool,
        settings: dict,
    ) -> TrainState:
        start = self.open(run_dir, force, settings)
        plot_samples = self.intervals.plot_samples
        done, last = start, {}
        if start >= self.steps:
            self.progress.message(
                f"already trained to step {start} (train.steps={self.steps}); "
                "raise train.steps to continue"
            )
        try:
            with StopRequests(self.progress.message) as stop:
                for callback in self.callbacks:
                    callback.on_train_begin(start, self.steps)
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
                if plot_samples:
                    png = self.render(plot_samples)
                    if png:
                        self.rundir.file(SAMPLES).write_bytes(png)
                        self.rundir.log_image(done, "samples", png)
                self.finish_record()
                self.progress.message(f"run dir: {run_dir}")
        finally:
            self.progress.close()
            if self.rundir is not None:
                self.rundir.close()
        state = TrainState(
            critic=self.wgan.critic,
            generator=self.wgan.generator,
            step=done,
            metrics=last,
            history=self.history,
            run_dir=Path(run_dir) if run_dir is not None else None,
        )
        for callback in self.callbacks:
            callback.on_train_end(state)
        return state

    def advance(self, done: int) -> tuple[int, dict]:
        """One compiled call, then whatever falls due at the step it ends on.

        The row of a step is logged before its checkpoint is saved: a checkpoint at step N then
        always has its row N in ``metrics.jsonl`` (a kill between the two only repeats the step),
        and an evaluation that fails at step N leaves neither.
        """
        iterator = self.iterator()
        self.inputs.at(iterator, None)  # unknown until the call returns
        try:
            result = self.wgan.iterate_checked(iterator, self.next_chunk(done))
        except (
            tf.errors.DataLossError,
            tf.errors.UnavailableError,
            tf.errors.CancelledError,
            tf.errors.OutOfRangeError,
            tf.errors.InvalidArgumentError,
            tf.errors.UnknownError,
        ) as exc:
            raise runtime_error(
                exc, done, self.checkpoint.latest if self.rundir else None
            ) from None
        done += int(result.completed)
        self.inputs.at(iterator, done)
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
            logged.update(metrics)
        logged.update(self.measurements(done, due))
        if logged:
            self.record(done, logged)
        if due(self.checkpoint_every):
            self.save(done)
        return done, metrics

    def measurements(self, done: int, due) -> dict:
        """Diagnostics, evaluation and histograms due at ``done`` (one process measures)."""
        logged = {}
        if self.chief:  # the other workers would only repeat it
            if due(self.diagnostics_every):
                logged.update(self.diagnostics(done))
            if due(self.eval_every):
                evaluated = self.evaluate()
                logged.update(evaluated)
                for callback in self.callbacks:
                    callback.on_evaluate(done, evaluated)
                if self.rundir is not None:
                    png = self.render(min(1024, self.intervals.eval_samples))
                    if png:
                        self.rundir.log_image(done, "samples", png)
        if self.rundir is not None and due(self.histogram_every):
            self.rundir.log_histograms(
                done, {"critic": self.wgan.critic, "generator": self.wgan.generator}
            )
        return logged

    def record(self, done: int, logged: dict) -> None:
        if self.rundir is not None:
            self.rundir.log_metrics(done, logged)
        self.history.append({"step": done, **logged})
        for callback in self.callbacks:
            callback.on_log(done, logged)

    def diagnostics(self, done: int) -> dict:
        if self.probe is None:
            from lipgan.metrics.diagnostics import Probe

            # Its own data stream (another seed): probing must not consume training batches.
            data = self.inputs.fresh(seed_offset=1)
            self.probe = Probe(self.wgan, data, self.inputs.seed, self.inputs.dataset_name)
        measured = self.probe(done)
        if self.wgan.num_replicas > 1:
            measured.update(self.replica_drift(done))
        return measured

    def replica_drift(self, done: int) -> dict:
        """``replica_drift``: how far the replicas' copies of the weights are apart (0 when sound).

        Mirrored weights stay equal only while every replica computes the same update; a warning
        names the first variable that drifted (an ``after_update`` that used the
        replica id left replicas at 0.0 and 0.01 without a word).
        """
        drift, where = self.wgan.replica_drift()
        if drift > 0 and not getattr(self, "_drift_warned", False):
            self._drift_warned = True
            warn(
                f"warning: the replicas' weights differ at step {done} ({where}: by {drift:.3g}); "
                "a constraint's after_update (or another update) depends on the replica: check "
                "it with lipgan.testing.check_replica_invariance"
            )
        return {"replica_drift": drift}
