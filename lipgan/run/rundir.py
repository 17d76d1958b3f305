"""The run directory: what a run leaves on disk, and the rules for reusing one.

Layout (also in docs/usage.md)::

    run.json              the run's record (lipgan.run.record): its settings, compared when the dir
    is
                          reused; what rebuilds it (`lipgan eval/sample/audit/run --resume DIR`);
                          for a CLI run the gin config as parsed and, at the end, the operative one
    run-before-<k>.json   the record replaced with --force at step k (-2, -3, ... if replaced again)
    data/                 a copy of a Dataset given as Trainer(data=...) (lipgan.run.description)
    .lock                 flock held by the live run: one writer at a time
    operative_config.gin  a CLI run's parameters actually used, defaults included: a copy of the
                          record's for people to read (nothing compares it)
    metrics.jsonl         one JSON object per logged step (losses, diagnostics, evaluation metrics)
    checkpoints/          CheckpointManager: models, optimizers, iteration, seed, input position
    tensorboard/          scalars, weight histograms, sample images
    samples.png           final samples: critic contour + points (2-D) or an image grid

Reusing a directory resumes it, so the settings must be the same: only those in
:data:`lipgan.run.spec.RESUMABLE` (how long and how often to train) may change without
``force``, and :func:`lipgan.run.spec.settings_differences` is the one comparison. A dir holds a run once it
holds a checkpoint: a run that failed before its first checkpoint left nothing to resume, so its
record does not bind the next attempt. Checkpoints without a record are refused unless ``force``
(nothing says what they were trained with); a dir written by an older lipgan is refused in one line.

One writer at a time: a run holds an exclusive ``flock`` on ``.lock`` in the dir for its whole
life. The kernel drops it when the process ends, however it ends, so a killed run never leaves a
stale lock behind. The check functions take plain values so that every front end (CLI, Python API)
shares them.
"""

from __future__ import annotations

import errno
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows: no flock; runs are then not protected against a second writer
    fcntl = None

from lipgan.core.errors import RunDirError, first_line
from lipgan.run import record
from lipgan.run.record import RECORD

OPERATIVE_CONFIG = "operative_config.gin"
METRICS_FILE = "metrics.jsonl"
TENSORBOARD = "tensorboard"
SAMPLES = "samples.png"
CHECKPOINT_DIR = "checkpoints"
LOCK = ".lock"


def check_location(path: Path) -> None:
    """Raise :class:`RunDirError` unless ``path`` is (or can be created as) a writable directory."""
    path = Path(path)
    if path.is_symlink() and not path.exists():
        raise RunDirError(
            f"run dir {path} is a symbolic link to {os.readlink(path)!r}, which leads nowhere "
            "(a loop or a missing target); remove the link or choose another --run-dir"
        )
    if path.exists() and not path.is_dir():
        raise RunDirError(f"run dir {path} exists and is not a directory; choose another --run-dir")
    existing = path
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise RunDirError(
            f"run dir {path} cannot be created: {existing} is a file; choose another --run-dir"
        )
    try:
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as exc:
        raise RunDirError(
            f"run dir {path} is not writable ({exc.strerror or exc} in {existing}); choose another --run-dir"
        ) from None


def checkpoint_steps(checkpoint_dir: str | Path) -> list[int]:
    """Steps of the complete checkpoints in ``checkpoint_dir`` (``ckpt-<N>.index``), ascending.

    The index is written last (after the data shards are in place), so its presence marks a
    checkpoint that was saved completely; this needs no TensorFlow and no state file.
    """
    folder = Path(checkpoint_dir)
    if not folder.is_dir():
        return []
    steps = []
    for index in folder.glob("ckpt-*.index"):
        number = index.name[len("ckpt-") : -len(".index")]
        if number.isdigit():
            steps.append(int(number))
    return sorted(steps)


def lock_holder(lock_file: Path) -> int | None:
    """The pid holding a ``flock`` on ``lock_file``, from ``/proc/locks`` (Linux; else ``None``)."""
    try:
        inode = lock_file.stat().st_ino
        lines = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        fields = line.split()
        # "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF" (blocked waiters have a "->" field)
        if len(fields) >= 6 and fields[1] == "FLOCK" and fields[2] != "->":
            if fields[5].rsplit(":", 1)[-1] == str(inode):
                return int(fields[4])
    return None


def reuse_problem(has_record: bool, has_checkpoints: bool) -> str | None:
    """Why a dir with these contents cannot be continued without ``force`` regardless of settings:
    checkpoints without a record of their settings are of an unknown config."""
    if has_checkpoints and not has_record:
        return (
            f"holds checkpoints but no {RECORD}, so nothing says which settings trained them; "
            "restore it, pick a new --run-dir, or pass --force (fit(force=True)) to continue "
            "with these settings"
        )
    return None


class RunDir:
    """One run's directory. :meth:`check` reads only; :meth:`begin` is the first write."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.summary = None
        self._metrics = None
        self._lock = None
        #: The record :meth:`check` found (None: none, or not checked).
        self.recorded: dict | None = None

    def checkpoint_steps(self) -> list[int]:
        return checkpoint_steps(self.path / CHECKPOINT_DIR)

    def lock(self) -> None:
        """Take the run dir's exclusive lock (idempotent), or raise naming the process holding it.

        The dir must exist: :meth:`check` locks an existing dir before reading it, :meth:`begin`
        a new one right after creating it, so two runs racing for a new dir still get one writer.
        """
        if self._lock is not None or fcntl is None:
            return
        lock_file = self.file(LOCK)
        fd = os.open(lock_file, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise RunDirError(f"run dir {self.path} cannot be locked ({exc})") from None
            holder = lock_holder(lock_file)
            who = f"process {holder}" if holder else "another process"
            raise RunDirError(
                f"run dir {self.path} is in use by {who} (lock {lock_file}); wait for it to "
                "finish or stop it, or pick another --run-dir"
            ) from None
        self._lock = fd

    def unlock(self) -> None:
        if self._lock is not None:
            os.close(self._lock)  # closing the descriptor releases the flock
            self._lock = None

    def file(self, name: str) -> Path:
        return self.path / name

    def check(self, settings: dict, force: bool, differences: Callable) -> list[str]:
        """Refuse a reused dir whose settings differ by ``differences(old, new)`` (the run's one
        comparison, :func:`lipgan.run.spec.settings_differences`, which the trainer hands down:
        the run dir imports no spec) unless ``force``; returns the differences.

        Locks an existing dir first (see :meth:`lock`): the caller must :meth:`close` it. A dir
        written by an older lipgan is refused even with ``force`` (:func:`lipgan.run.record.read`).
        """
        check_location(self.path)
        older = record.older_problem(self.path)
        if older:  # before the lock file is made: an older lipgan's dir is left as it was
            raise RunDirError(older)
        if self.path.is_dir():
            self.lock()
        old = self.recorded = record.read(self.path)
        has_checkpoints = bool(self.checkpoint_steps())
        problem = reuse_problem(old is not None, has_checkpoints)
        if problem and not force:
            raise RunDirError(f"run dir {self.path} {problem}")
        if old is None or not has_checkpoints:
            return []  # no run to continue: whatever it recorded gets replaced
        diffs = differences(old["settings"], settings)
        if diffs and not force:
            raise record.different_config(self.path, diffs)
        return diffs

    def begin(self, run_record: dict, start: int, replaced: bool, warn=print) -> None:
        """Create the dir, write the record and drop metrics after ``start``.

        Also removes what a killed run or a full disk leaves behind (:meth:`clean_debris`).
        """
        import tensorflow as tf

        self.path.mkdir(parents=True, exist_ok=True)
        self.lock()
        metrics = self.file(METRICS_FILE)
        # Read before the first write: a damaged metrics.jsonl stops the run with nothing changed.
        kept = None
        if metrics.is_file():
            kept = [ln for ln, row in self.metric_rows(warn) if row.get("step", 0) <= start]
        self.clean_debris(warn)
        self.write_record(run_record, start, replaced)
        if kept is not None:
            _atomic_write(metrics, "".join(f"{ln}\n" for ln in kept))
        self._metrics = open(metrics, "a")  # noqa: SIM115 - closed in close()
        self.summary = tf.summary.create_file_writer(str(self.file(TENSORBOARD)))

    def metric_rows(self, warn=print) -> list[tuple[str, dict]]:
        """``(line, row)`` of every row in ``metrics.jsonl``.

        A crash can cut the last line short (the row was being written): it is dropped with a
        warning, since the step it belongs to is trained again. A damaged line before the last is
        not a crash's doing and stops the run, naming the file and the line.
        """
        path = self.file(METRICS_FILE)
        lines = [ln for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
        rows = []
        for number, line in enumerate(lines, 1):
            try:
                row = json.loads(line)
                if not isinstance(row, dict):
                    raise ValueError("not a JSON object")
            except ValueError as exc:
                if number == len(lines):
                    warn(
                        f"warning: {path}: dropped its last line, cut short by a crash "
                        f"({first_line(exc)}): {line[:60]!r}"
                    )
                    break
                raise RunDirError(
                    f"{path}:{number} is not a metrics row ({first_line(exc)}); fix or "
                    "delete that line, or pick a new --run-dir"
                ) from None
            rows.append((line, row))
        return rows

    def has_row(self, step: int) -> bool:
        """Whether ``metrics.jsonl`` holds a row for ``step``."""
        if not self.file(METRICS_FILE).is_file():
            return False
        return any(row.get("step") == step for _, row in self.metric_rows(lambda _: None))

    def sync_metrics(self) -> None:
        """Flush ``metrics.jsonl`` to the disk (before a checkpoint that must not outlive a row)."""
        if self._metrics is not None:
            self._metrics.flush()
            os.fsync(self._metrics.fileno())

    def clean_debris(self, warn=print) -> None:
        """Remove what a killed run or a full disk leaves: ``ckpt-*_temp`` folders (a save cut
        short) and ``*.tmp`` files (an atomic write cut short). Never a complete checkpoint."""
        import shutil

        records = (RECORD, METRICS_FILE, OPERATIVE_CONFIG)
        found = [self.file(f"{name}.tmp") for name in records if self.file(f"{name}.tmp").is_file()]
        folder = self.path / CHECKPOINT_DIR
        if folder.is_dir():
            found += [p for p in folder.glob("ckpt-*_temp*") if p.is_dir()]
            found += [p for p in folder.glob("checkpoint.tmp*") if p.is_file()]
        for path in found:
            shutil.rmtree(path, ignore_errors=True) if path.is_dir() else path.unlink(
                missing_ok=True
            )
        if found:
            warn(
                f"removed {len(found)} leftover(s) of an interrupted write in {self.path}: "
                + ", ".join(p.name for p in found[:4])
            )

    def write_record(self, run_record: dict, start: int = 0, replaced: bool = False) -> None:
        """Write ``run.json`` atomically; when ``replaced`` (the settings were changed with
        ``force`` at step ``start``), the old one is kept as ``run-before-<start>.json``
        (``-2``, ``-3``... when replaced again at that step)."""
        path = self.file(RECORD)
        if replaced and path.is_file():
            os.replace(path, self._unused(f"run-before-{start}", ".json"))
        _atomic_write(path, record.dumps(run_record))

    def _unused(self, stem: str, suffix: str) -> Path:
        """``stem + suffix`` in the dir, or ``stem-2 + suffix``, ... : never an existing file."""
        candidate, n = self.file(stem + suffix), 1
        while candidate.exists():
            n += 1
            candidate = self.file(f"{stem}-{n}{suffix}")
        return candidate

    def log_metrics(self, step: int, metrics: dict) -> None:
        import tensorflow as tf

        self._metrics.write(json.dumps({"step": step, **metrics}) + "\n")
        self._metrics.flush()
        with self.summary.as_default(step=step):
            for name, value in metrics.items():
                tf.summary.scalar(name, value)

    def log_histograms(self, step: int, models: dict) -> None:
        """Weight histograms of every variable, as ``weights/<model>/<variable path>``."""
        import tensorflow as tf

        with self.summary.as_default(step=step):
            for model_name, model in models.items():
                for variable in model.weights:
                    tf.summary.histogram(f"weights/{model_name}/{variable.path}", variable)

    def log_image(self, step: int, name: str, png: bytes) -> None:
        import tensorflow as tf

        with self.summary.as_default(step=step):
            tf.summary.image(name, tf.image.decode_png(png)[None], step=step)

    def write_operative_config(self, text: str) -> None:
        """``operative_config.gin``: a copy of the record's operative config, for people."""
        _atomic_write(self.file(OPERATIVE_CONFIG), text)

    def close(self) -> None:
        if self.summary is not None:
            self.summary.close()
            self.summary = None
        if self._metrics is not None:
            self._metrics.close()
            self._metrics = None
        self.unlock()


def _atomic_write(path: Path, text: str) -> None:
    """Write ``path`` through ``path.tmp`` and a rename; a failed write leaves no ``.tmp``."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_text(text)
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise RunDirError(
            f"cannot write {path} ({exc.strerror or exc}); it is left as it was"
        ) from None
