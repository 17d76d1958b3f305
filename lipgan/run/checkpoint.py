"""Checkpoints of a run: everything needed to continue it exactly where it stopped.

A checkpoint holds both models, both optimizers (moments and step counts), the iteration counter, the
seed and the position of the input pipeline (the tf.data iterator, shuffle buffer included). That is
the whole random state of training: every random draw of the step (noise, interpolation factors) is
a counter-based function of ``(seed, iteration, phase)`` (:mod:`lipgan.core.rng`), so a resumed run
draws exactly what the uninterrupted one would have.

Writes are atomic the way TensorFlow makes them: ``CheckpointManager.save`` writes the data and the
index under a temporary name, renames them into place, and only then rewrites the small
``checkpoint`` state file (itself written to a temporary file and renamed). A process killed during a
save leaves the previous checkpoint as the latest. A checkpoint that cannot be read anyway (a disk
error, a truncated copy) is skipped with a warning in favour of the one before it.

The checkpoints of a run are found from the files themselves (``ckpt-<N>.index``) as well as from
the state file: TensorFlow treats a damaged state file as "no checkpoints" (and an empty one as an
error), which would restart a run from step 0 over its own checkpoints. A damaged state file is
rewritten from the files at the first save, never before (checking a run dir writes nothing).

A checkpoint also holds a digest of the settings that trained it (:func:`lipgan.run.spec.settings_digest`),
which binds it to the run's record: a resume whose ``run.json`` was replaced by another run's (a copy
passes every other check) is refused. State added to a run with ``--force`` (the generator's EMA
turned on) is not in its older checkpoints: those are restored without it
(:data:`OPTIONAL_STATE`), the EMA starting from the restored generator.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import tensorflow as tf

from lipgan.core.errors import CheckpointError, NonFiniteLossError, first_line
from lipgan.run.rundir import CHECKPOINT_DIR, checkpoint_steps

STATE_FILE = "checkpoint"
#: Entries of a checkpoint that older checkpoints of the same run may lack: the settings digest
#: (checkpoints written before it was stored) and the generator's EMA (turned on with --force).
OPTIONAL_STATE = ("settings", "generator_ema")


def ema_state_name(decay: float, decays: tuple[float, ...]) -> str:
    """The checkpoint's name for the generator's averaged copy at ``decay``: ``generator_ema``
    for the first (sampling) one, as a run with one decay has always saved it, and
    ``generator_ema_<decay>`` (the decay's digits, e.g. ``generator_ema_0_99``) for the others."""
    if decay == decays[0]:
        return "generator_ema"
    return "generator_ema_" + repr(float(decay)).replace(".", "_").replace("-", "m")


def _optional(name: str) -> bool:
    return name in OPTIONAL_STATE or name.startswith("generator_ema_")


_STATE_LINE = re.compile(
    r'^(model_checkpoint_path|all_model_checkpoint_paths): "(?P<path>[^"]+)"$'
    r"|^(all_model_checkpoint_timestamps|last_preserved_timestamp): [0-9.eE+-]+$"
)


def read_state(directory: str | Path) -> tuple[list[str], str | None]:
    """The prefixes listed by ``directory``'s state file, oldest first, and what is wrong with it.

    Parsed here rather than by TensorFlow, which logs a parse error and then reports no
    checkpoints at all. ``([], None)`` when there is no state file; ``([], reason)`` when it is
    damaged (not the text format ``CheckpointManager`` writes, or naming no checkpoint).
    """
    state = Path(directory) / STATE_FILE
    if not state.exists():
        return [], None
    try:
        text = state.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        return [], f"unreadable ({exc})"
    paths, latest = [], None
    for line in text.splitlines():
        if not line.strip():
            continue
        match = _STATE_LINE.match(line.strip())
        if match is None:
            return [], f"line {line.strip()[:40]!r} is not a checkpoint state"
        if match.group(1) == "model_checkpoint_path":
            latest = match.group("path")
        elif match.group("path"):
            paths.append(match.group("path"))
    if latest is None:
        return [], "it is empty" if not text.strip() else "it names no checkpoint"
    if latest not in paths:
        paths.append(latest)
    return [str(Path(directory) / p) if not Path(p).is_absolute() else p for p in paths], None


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
        self,
        run_dir: str | Path,
        wgan,
        iterator=None,
        max_to_keep: int = 3,
        training: bool = True,
        digest: str | None = None,
        expected_digest: str | None = None,
    ):
        self.directory = Path(run_dir) / CHECKPOINT_DIR
        #: The digest of the settings saved checkpoints are trained with, and the one a restored
        #: checkpoint must hold (its record's; None: not checked).
        self.digest, self.expected_digest = digest, expected_digest
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
        for decay, copy in wgan.generator_emas.items():  # training state: resume continues it
            self.state[ema_state_name(decay, wgan.config.ema_decays)] = copy
        if digest is not None:
            self.settings = tf.Variable(digest, dtype=tf.string, trainable=False, name="settings")
            self.state["settings"] = self.settings
        self.training = training
        self.iterator = iterator
        self.manager = None
        self._use(iterator)
        #: The checkpoint the models now hold: the one restored, then each one saved.
        self.current: str | None = None
        #: Whether the restored checkpoint also restored the input position.
        self.input_restored = False
        #: The settings digest the restored checkpoint held (None: none, or not asked for).
        self.restored_digest: str | None = None

    def track_input(self, iterator) -> None:
        """Checkpoint ``iterator`` from now on: the loop replaced its iterator (a fast-forward).

        The checkpoint must hold the position of the iterator that training reads, or a later
        resume restores a stream that was never advanced.
        """
        self.iterator = iterator
        self._use(iterator)

    def _use(self, iterator) -> None:
        objects = dict(self.state, data=iterator) if iterator is not None else self.state
        self.checkpoint = tf.train.Checkpoint(**objects)
        if self.manager is not None:
            self.manager = self._manager()

    def _manager(self) -> tf.train.CheckpointManager:
        """The manager for saving, made on the first save: a damaged state file is rewritten from
        the checkpoint files first, so the manager keeps and later deletes the right ones."""
        listed, problem = read_state(self.directory)
        found = checkpoint_steps(self.directory)
        if problem is not None or {_step_of(p) for p in listed} != set(found):
            # Also when a save was killed after its files were renamed into place but before the
            # state file listed them: listed now, they are pruned beyond max_to_keep as usual.
            write_state(self.directory, found)
        return tf.train.CheckpointManager(self.checkpoint, str(self.directory), self.max_to_keep)

    @property
    def latest(self) -> str | None:
        """The last good checkpoint: the one restored or saved in this process."""
        return self.current

    def available(self) -> list[str]:
        """Checkpoint prefixes, newest first: those in the state file and those on disk."""
        listed, _ = read_state(self.directory)
        found = [str(self.directory / f"ckpt-{n}") for n in checkpoint_steps(self.directory)]
        return sorted(set(listed) | set(found), key=_step_of, reverse=True)

    def state_problem(self) -> str | None:
        """What is wrong with the state file (``None``: nothing, or there is none)."""
        return read_state(self.directory)[1]

    def _restore(self, path: str) -> bool:
        """Restore ``path``; whether it held (and restored) the input position.

        What :data:`OPTIONAL_STATE` the checkpoint lacks is left out: the settings digest is then
        not checked, and the generator's EMA starts from the restored generator.
        """
        names = {name.split("/")[0] for name, _ in tf.train.list_variables(path)}
        with_input = self.iterator is not None and "data" in names
        state = {k: v for k, v in self.state.items() if k in names or not _optional(k)}
        if with_input:
            state["data"] = self.iterator
        status = tf.train.Checkpoint(**state).restore(path)
        if self.training:
            status.assert_existing_objects_matched()
        else:
            status.expect_partial()
        for decay in self.wgan.generator_emas:
            if ema_state_name(decay, self.wgan.config.ema_decays) not in names:
                self.wgan.reset_ema(decay)
        self.restored_digest = None
        if "settings" in self.state and "settings" in names:
            self.restored_digest = self.settings.numpy().decode()
            self.settings.assign(self.digest)  # what the next save records
        return with_input

    def restore(self, warn: Callable[[str], None]) -> int:
        """Restore the newest readable checkpoint; its iteration (0 when there is none).

        An unreadable checkpoint is reported with ``warn`` and the previous one is tried. When all
        fail, :class:`CheckpointError` says why; nothing on disk is changed either way.
        """
        candidates = self.available()
        problem = self.state_problem()
        if problem is not None and candidates:
            warn(
                f"warning: {self.directory / STATE_FILE} is damaged ({problem}); using the "
                f"checkpoint files themselves (newest: {Path(candidates[0]).name}); the state "
                "file is rewritten at the next save"
            )
        errors = []
        for path in candidates:
            try:
                self.input_restored = self._restore(path)
            except Exception as exc:  # noqa: BLE001 - a damaged file fails in many ways (OpError,
                # IndexError "Read less bytes than requested", ValueError...); each means "unusable"
                reason = first_line(exc, 200)
                if _model_mismatch(exc):
                    # Readable, but written for other models: older checkpoints are no better.
                    raise CheckpointError(
                        f"{path} was written for other models or optimizers ({reason}); a run's "
                        "models cannot change, not even with --force: train them in a new "
                        "--run-dir"
                    ) from None
                errors.append(f"{Path(path).name}: {reason}")
                warn(f"warning: cannot restore {path} ({reason}); trying the previous checkpoint")
                continue
            if int(self.seed.numpy()) != self.wgan.config.seed:
                raise CheckpointError(
                    f"{path} was written with train.seed={int(self.seed.numpy())} but the config says "
                    f"{self.wgan.config.seed}; resume with `lipgan run --resume DIR` (the run's own config) or a new --run-dir"
                )
            if self.expected_digest and self.restored_digest not in (None, self.expected_digest):
                record = self.directory.parent / "run.json"
                raise CheckpointError(
                    f"{record} does not describe {path}: the checkpoint was trained with other "
                    "settings than the record holds (was run.json replaced by, or copied from, "
                    "another run's?); restore the run's own run.json, pick a new --run-dir, or "
                    "pass --force to continue these checkpoints with the settings given"
                )
            bad = self.wgan.nonfinite_weight()
            if bad is not None:
                # Saved before lipgan checked weights: training would only stop again at once.
                if not self.training:
                    raise CheckpointError(
                        f"{path} holds a non-finite {bad}, so its samples and metrics would be "
                        "NaN; it was saved before lipgan checked weights: resume training from an "
                        f"earlier checkpoint (delete {Path(path).name}.*) or retrain"
                    )
                errors.append(f"{Path(path).name}: non-finite {bad}")
                warn(f"warning: {path} holds a non-finite {bad}; trying the previous checkpoint")
                continue
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
        bad = self.wgan.nonfinite_weight()
        if bad is not None:
            # The in-graph guard stops before this; this keeps any other path (a plugin's
            # after_update, a Python caller) from turning NaN weights into "the last good checkpoint".
            kept = (
                f"the last good checkpoint {Path(self.current).name} is kept"
                if self.current
                else "no checkpoint was written"
            )
            raise NonFiniteLossError(
                f"non-finite {bad} at step {iteration}; checkpoint {iteration} is not written and "
                f"{kept}; lower the learning rate or check the data and the constraint"
            )
        if self.manager is None:
            self.manager = self._manager()
        try:
            self._save(iteration, warn)
        except (OSError, tf.errors.OpError) as exc:
            # A full disk or a vanished mount: no half-written checkpoint may stay behind to be
            # mistaken for one, and the previous one is still the latest.
            for partial in self.directory.glob(f"ckpt-{iteration}_temp*"):
                shutil.rmtree(partial, ignore_errors=True)
            kept = (
                f"the previous checkpoint {Path(self.current).name} is kept"
                if self.current
                else "no checkpoint was written before"
            )
            raise CheckpointError(
                f"cannot save checkpoint {iteration} in {self.directory} ({first_line(exc, 200)}); "
                f"{kept}; a checkpoint needs about "
                f"{_megabytes(self._size())} free there"
            ) from None

    def _size(self) -> int:
        """Bytes of one checkpoint: the last one written, else the variables' own size."""
        if self.current:
            files = Path(self.current).parent.glob(Path(self.current).name + ".*")
            size = sum(f.stat().st_size for f in files if f.is_file())
            if size:
                return size
        variables = [v for obj in self.state.values() for v in _variables(obj)]
        # Keras 3 variables name their dtype as a string ("float32"): tf.as_dtype reads both.
        return sum(int(np.prod(v.shape)) * tf.as_dtype(v.dtype).size for v in variables)

    def _save(self, iteration: int, warn: Callable[[str], None]) -> None:
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


def write_state(directory: Path, steps: list[int]) -> None:
    """Rewrite the state file to list ``ckpt-<step>`` for ``steps`` (ascending), newest latest.

    The timestamps are the files' own, all newer than ``last_preserved_timestamp``, so the
    manager deletes the oldest beyond ``max_to_keep`` as it would have. Written to a temporary
    file and renamed, as TensorFlow writes it.
    """
    state = directory / STATE_FILE
    if not steps:
        state.unlink(missing_ok=True)
        return
    times = [(directory / f"ckpt-{n}.index").stat().st_mtime for n in steps]
    lines = [f'model_checkpoint_path: "ckpt-{steps[-1]}"']
    lines += [f'all_model_checkpoint_paths: "ckpt-{n}"' for n in steps]
    lines += [f"all_model_checkpoint_timestamps: {t!r}" for t in times]
    lines.append(f"last_preserved_timestamp: {min(times) - 1.0!r}")
    tmp = state.with_name(STATE_FILE + ".tmp")
    tmp.write_text("\n".join(lines) + "\n")
    tmp.replace(state)


def _model_mismatch(exc: BaseException) -> bool:
    """Whether a failed restore means "another model" rather than "a damaged file"."""
    text = str(exc)
    return isinstance(exc, (ValueError, AssertionError)) and (
        "incompatible tensor with shape" in text or "Unresolved object in checkpoint" in text
    )


def _variables(obj) -> list:
    if isinstance(obj, tf.Variable):
        return [obj]
    return list(getattr(obj, "variables", []))


def _megabytes(size: int) -> str:
    return f"{size / 1e6:.1f} MB" if size >= 1e5 else f"{size / 1e3:.0f} kB"


def _step_of(prefix: str) -> int:
    match = re.search(r"-(\d+)$", prefix)
    return int(match.group(1)) if match else -1


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
