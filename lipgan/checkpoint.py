"""Checkpoints of a run: everything needed to continue it exactly where it stopped.

A checkpoint holds both models, both optimizers (moments and step counts), the iteration counter, the
seed and the position of the input pipeline (the tf.data iterator, shuffle buffer included). That is
the whole random state of training: every random draw of the step (noise, interpolation factors) is
a counter-based function of ``(seed, iteration, phase)`` (:mod:`lipgan.rng`), so a resumed run draws
exactly what the uninterrupted one would have.

Writes are atomic the way TensorFlow makes them: ``CheckpointManager.save`` writes the data and the
index under a temporary name, renames them into place, and only then rewrites the small
``checkpoint`` state file (itself written to a temporary file and renamed). A process killed during a
save leaves the previous checkpoint as the latest. A checkpoint that cannot be read anyway (a disk
error, a truncated copy) is skipped with a warning in favour of the one before it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import tensorflow as tf

from lipgan.errors import CheckpointError, first_line

CHECKPOINT_DIR = "checkpoints"


class RunCheckpoint:
    """Save and restore one run's training state under ``<run_dir>/checkpoints``.

    ``iterator`` is the distributed input iterator, when it may be checkpointed (see
    :func:`checkpointable`); if writing its state fails later (a ``py_function`` in the pipeline
    only fails once it has run), checkpoints continue without it and :attr:`input_restored` tells
    the loop to replay the input on resume. ``training`` demands that every object exist in the
    checkpoint; evaluation and sampling (``training=False``) restore only the models. Only the chief
    of a multi-worker job should :meth:`save`; every worker restores.
    """

    def __init__(
        self, run_dir: str | Path, wgan, iterator=None, max_to_keep: int = 3, training: bool = True
    ):
        self.directory = Path(run_dir) / CHECKPOINT_DIR
        self.wgan = wgan
        self.max_to_keep = max_to_keep
        self.seed = tf.Variable(wgan.config.seed, dtype=tf.int64, trainable=False, name="seed")
        self.state = {
            "critic": wgan.critic,
            "generator": wgan.generator,
            "critic_optimizer": wgan.critic_optimizer,
            "generator_optimizer": wgan.generator_optimizer,
            "iteration": wgan.iteration,
            "seed": self.seed,
        }
        self.training = training
        self.iterator = iterator
        self._use(iterator)
        #: The checkpoint the models now hold: the one restored, then each one saved.
        self.current: str | None = None
        #: Whether the restored checkpoint also restored the input position.
        self.input_restored = False

    def _use(self, iterator) -> None:
        objects = dict(self.state, data=iterator) if iterator is not None else self.state
        self.checkpoint = tf.train.Checkpoint(**objects)
        self.manager = tf.train.CheckpointManager(
            self.checkpoint, str(self.directory), self.max_to_keep
        )

    @property
    def latest(self) -> str | None:
        """The last good checkpoint: the one restored or saved in this process."""
        return self.current

    def available(self) -> list[str]:
        """Checkpoint prefixes on disk, newest first."""
        return list(reversed(self.manager.checkpoints))

    def _restore(self, path: str) -> bool:
        """Restore ``path``; whether it held (and restored) the input position."""
        names = {name.split("/")[0] for name, _ in tf.train.list_variables(path)}
        with_input = self.iterator is not None and "data" in names
        checkpoint = self.checkpoint if with_input else tf.train.Checkpoint(**self.state)
        status = checkpoint.restore(path)
        if self.training:
            status.assert_existing_objects_matched()
        else:
            status.expect_partial()
        return with_input

    def restore(self, warn: Callable[[str], None]) -> int:
        """Restore the newest readable checkpoint; its iteration (0 when there is none).

        An unreadable checkpoint is reported with ``warn`` and the previous one is tried. When all
        fail, :class:`CheckpointError` says why; nothing on disk is changed either way.
        """
        candidates = self.available()
        errors = []
        for path in candidates:
            try:
                self.input_restored = self._restore(path)
            except Exception as exc:  # noqa: BLE001 - a damaged file fails in many ways (OpError,
                # IndexError "Read less bytes than requested", ValueError...); each means "unusable"
                reason = first_line(exc, 200)
                errors.append(f"{Path(path).name}: {reason}")
                warn(f"warning: cannot restore {path} ({reason}); trying the previous checkpoint")
                continue
            if int(self.seed.numpy()) != self.wgan.config.seed:
                raise CheckpointError(
                    f"{path} was written with train.seed={int(self.seed.numpy())} but the config says "
                    f"{self.wgan.config.seed}; use the run's own config.gin or a new --run-dir"
                )
            self.current = path
            return int(self.wgan.iteration.numpy())
        if candidates:
            raise CheckpointError(
                f"no readable checkpoint in {self.directory} ({'; '.join(errors)}); "
                "start a new run with another --run-dir"
            )
        return 0

    def save(self, iteration: int, warn: Callable[[str], None] = print) -> None:
        """Write a checkpoint for ``iteration`` unless the latest one already is for it."""
        if self.current is not None and self.current.endswith(f"-{iteration}"):
            return
        try:
            self.current = self.manager.save(checkpoint_number=iteration)
        except (tf.errors.FailedPreconditionError, tf.errors.UnimplementedError) as exc:
            if self.iterator is None:
                raise
            warn(
                f"warning: the input pipeline's position cannot be checkpointed ({first_line(exc, 200)}); "
                "a resumed run will replay the input instead"
            )
            self.iterator = None
            self._use(None)
            self.current = self.manager.save(checkpoint_number=iteration)


def checkpointable(iterator) -> bool:
    """Whether TensorFlow can checkpoint this input iterator.

    The iterators of the default strategy (one device) can; those of ``MirroredStrategy`` and
    ``MultiWorkerMirroredStrategy`` (``DistributedIterator`` over multi-device iterators) cannot in
    TF 2.21, nor can any pipeline with a ``py_function``. For those the loop re-creates the
    pipeline and skips the consumed batches instead.
    """
    try:
        tf.train.Checkpoint(data=iterator)
        # A pipeline with a py_function (tfds.testing.mock_data) is trackable but refuses to be
        # serialized; find out now, while the state is still empty and cheap to serialize.
        serialize = getattr(iterator, "_serialize_to_tensors", None)
        if serialize is not None:
            serialize()
    except (ValueError, TypeError, tf.errors.OpError):
        return False
    return True
