"""The run directory: what a run leaves on disk, and the rules for reusing one.

Layout (also in docs/usage.md)::

    settings.json         the run's settings (lipgan.Trainer.settings); compared when the dir is reused
    config.gin            the gin config as parsed (files + bindings), written by the CLI
                          (lipgan.config.GinRecord); a record for people and `--resume`
    settings-before-<k>.json, config-before-<k>.gin
                          the records replaced with --force at step k (-2, -3, ... if replaced again)
    .lock                 flock held by the live run: one writer at a time
    operative_config.gin  the parameters actually used, defaults included
    metrics.jsonl         one JSON object per logged step (losses, diagnostics, evaluation metrics)
    checkpoints/          CheckpointManager: models, optimizers, iteration, seed, input position
    tensorboard/          scalars, weight histograms, sample images
    samples.png           final samples: critic contour + points (2-D) or an image grid

Reusing a directory resumes it, so the settings must be the same: only those in
:data:`RESUMABLE_SETTINGS` (how long and how verbosely to train) may change without ``force``. The
record is ``settings.json``, written from :meth:`lipgan.Trainer.settings` whether the run was
started from Python or from gin, and :func:`settings_differences` is the one comparison. Only run
dirs written before ``settings.json`` existed are compared by their ``config.gin``
(:func:`legacy_config_differences`, called by the CLI, which has gin text to compare). A dir
holds a run once it holds a checkpoint: a run that failed before its first checkpoint left nothing
to resume, so its record does not bind the next attempt. Checkpoints without a record are refused
unless ``force`` (nothing says what they were trained with).

One writer at a time: a run holds an exclusive ``flock`` on ``.lock`` in the dir for its whole
life. The kernel drops it when the process ends, however it ends, so a killed run never leaves a
stale lock behind. The check functions take plain values so that every front end (CLI, Python API)
shares them.
"""

from __future__ import annotations

import dataclasses
import errno
import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

try:
    import fcntl
except ImportError:  # Windows: no flock; runs are then not protected against a second writer
    fcntl = None

from lipgan.errors import RunDirError

CONFIG = "config.gin"
SETTINGS = "settings.json"
OPERATIVE_CONFIG = "operative_config.gin"
METRICS = "metrics.jsonl"
TENSORBOARD = "tensorboard"
SAMPLES = "samples.png"
CHECKPOINT_DIR = "checkpoints"
LOCK = ".lock"

#: Bindings that may differ when a legacy run dir (``config.gin``, no ``settings.json``) is
#: resumed: they change how long or how verbosely it trains, never what a step computes.
RESUMABLE = frozenset(
    {
        "train.steps",
        "train.log_every",
        "train.checkpoint_every",
        "train.max_checkpoints",
        "train.diagnostics_every",
        "train.eval_every",
        "train.eval_samples",
        "train.histogram_every",
        "train.plot_samples",
        "train.inception_weights",
        "train.checkpoint_input",
    }
)

#: Top-level settings (or dotted prefixes) that may differ when a run is resumed: how long, how
#: often and how verbosely it trains, never what a step computes.
RESUMABLE_SETTINGS = ("intervals", "checkpoint_input", "inception_weights")

_BINDING = re.compile(r"^(?P<key>[\w./]+)\s*=\s*(?P<value>.*)$")


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


def bindings(config_text: str) -> dict[str, str]:
    """``{'scope/configurable.param': 'value'}`` of a gin config as written by ``gin.config_str()``."""
    out: dict[str, str] = {}
    key = None
    for line in config_text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _BINDING.match(line) if not line[0].isspace() else None
        if match:
            key = match.group("key")
            out[key] = match.group("value").strip()
        elif key is not None:  # a long value continued on an indented line
            out[key] += " " + line.strip()
    return out


def reuse_problem(has_record: bool, has_checkpoints: bool) -> str | None:
    """Why a dir with these contents cannot be continued without ``force`` regardless of settings.

    Plain values in, so every front end shares the rule: checkpoints without a record of their
    settings (``settings.json``, or for older CLI runs ``config.gin``) are of an unknown config.
    """
    if has_checkpoints and not has_record:
        return (
            f"holds checkpoints but no {SETTINGS} (nor a {CONFIG} to compare), so nothing says "
            "which settings trained them; restore it, pick a new --run-dir, or pass --force "
            "(fit(force=True)) to continue with these settings"
        )
    return None


def config_differences(old_text: str, new_text: str) -> list[str]:
    """Human-readable differences of two gin records that matter for resuming (``RESUMABLE``
    ones are ignored): only for run dirs written before ``settings.json`` (see
    :func:`legacy_config_differences`)."""
    old, new = bindings(old_text), bindings(new_text)
    diffs = []
    for key in sorted(set(old) | set(new)):
        if key in RESUMABLE or key.split("/")[-1] in RESUMABLE:
            continue
        if old.get(key) != new.get(key):
            diffs.append(f"{key}: {old.get(key, '(unset)')} -> {new.get(key, '(unset)')}")
    return diffs


def legacy_config_differences(path: str | Path, config_text: str) -> list[str] | None:
    """For a run dir written before ``settings.json`` existed (``config.gin`` and checkpoints, no
    ``settings.json``): the differences of its ``config.gin`` from ``config_text``. ``None`` for
    any other dir, which :meth:`RunDir.check` decides alone.

    The CLI calls this before :meth:`lipgan.Trainer.fit`, which compares settings records only.
    """
    run = RunDir(path)
    old = run.saved_config()
    if old is None or run.file(SETTINGS).exists() or not run.checkpoint_steps():
        return None
    return config_differences(old, config_text)


def different_config(path, diffs: list[str]) -> RunDirError:
    """The one-line refusal of a run dir that holds a run with other settings."""
    more = f" (and {len(diffs) - 1} more)" if len(diffs) > 1 else ""
    return RunDirError(
        f"run dir {path} holds a run with a different config ({diffs[0]}{more}); "
        "resume it with `lipgan run --resume DIR`, pick a new run dir, or force "
        "(--force, or fit(force=True)) to continue it with these settings"
    )


def flat_settings(settings: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{'constraint.weight': 10.0, ...}``: nested settings as dotted keys (for diffs)."""
    out = {}
    for key, value in settings.items():
        if isinstance(value, dict) and value:
            out.update(flat_settings(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def settings_differences(old: dict, new: dict) -> list[str]:
    """Human-readable differences of two settings records (``RESUMABLE_SETTINGS`` ignored)."""
    old, new = flat_settings(old), flat_settings(new)
    # A step setting added since a record was written is that record's default (a run made
    # before generator EMA existed ran without it).
    from lipgan.engine import StepConfig

    for field in dataclasses.fields(StepConfig):
        for record in (old, new):
            record.setdefault(f"step.{field.name}", field.default)
    diffs = []
    for key in sorted(set(old) | set(new)):
        if key.split(".")[0] in RESUMABLE_SETTINGS or _not_recorded_by_both(key, old, new):
            continue
        if old.get(key) != new.get(key):
            diffs.append(f"{key}: {old.get(key, '(unset)')} -> {new.get(key, '(unset)')}")
    return diffs


#: Settings that older records lack, or that cannot always be taken (the data fingerprint): a
#: difference counts only when both records hold one.
_OPTIONAL_SETTINGS = ("data.fingerprint", "constraint.arguments", "strategy.arguments")


def _not_recorded_by_both(key: str, old: dict, new: dict) -> bool:
    for prefix in _OPTIONAL_SETTINGS:
        if key == prefix or key.startswith(prefix + "."):
            recorded = [
                any(
                    (k == prefix or k.startswith(prefix + ".")) and v is not None
                    for k, v in r.items()
                )
                for r in (old, new)
            ]
            return not all(recorded)
    return False


class RunDir:
    """One run's directory. :meth:`check` reads only; :meth:`begin` is the first write."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.summary = None
        self._metrics = None
        self._lock = None

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

    def saved_config(self) -> str | None:
        config = self.file(CONFIG)
        return config.read_text() if config.is_file() else None

    def saved_settings(self) -> dict | None:
        path = self.file(SETTINGS)
        if not path.is_file():
            return None
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise RunDirError(
                f"run dir {self.path}: {SETTINGS} is unreadable ({exc}); restore it or pick a new "
                "--run-dir"
            ) from None
        if not isinstance(record, dict):
            raise RunDirError(
                f"run dir {self.path}: {SETTINGS} holds a JSON {type(record).__name__}, not the "
                "settings object lipgan writes; restore it or pick a new --run-dir"
            )
        return record

    def check(self, settings: dict, force: bool) -> list[str]:
        """Refuse a reused dir whose settings differ (unless ``force``); returns the differences.

        ``settings.json`` decides (a legacy dir's ``config.gin`` is the CLI's to compare, before
        this: :func:`legacy_config_differences`). Locks an existing dir first (see :meth:`lock`):
        the caller must :meth:`close` it.
        """
        check_location(self.path)
        if self.path.is_dir():
            self.lock()
        old = self.saved_settings()
        has_checkpoints = bool(self.checkpoint_steps())
        problem = reuse_problem(old is not None, has_checkpoints)
        if problem and not force:
            raise RunDirError(f"run dir {self.path} {problem}")
        if old is None or not has_checkpoints:
            return []  # no run to continue: whatever it recorded gets replaced
        diffs = settings_differences(old, settings)
        if diffs and not force:
            raise different_config(self.path, diffs)
        return diffs

    def begin(self, settings: dict, start: int, replaced: bool, warn=print) -> None:
        """Create the dir, record the settings and drop metrics after ``start``.

        Also removes what a killed run or a full disk leaves behind (:meth:`clean_debris`).
        """
        import tensorflow as tf

        self.path.mkdir(parents=True, exist_ok=True)
        self.lock()
        metrics = self.file(METRICS)
        # Read before the first write: a damaged metrics.jsonl stops the run with nothing changed.
        kept = None
        if metrics.is_file():
            kept = [ln for ln, row in self.metric_rows(warn) if row.get("step", 0) <= start]
        self.clean_debris(warn)
        self.write_record(
            SETTINGS, json.dumps(settings, indent=2, sort_keys=True) + "\n", start, replaced
        )
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
        path = self.file(METRICS)
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
                        f"({str(exc).splitlines()[0]}): {line[:60]!r}"
                    )
                    break
                raise RunDirError(
                    f"{path}:{number} is not a metrics row ({str(exc).splitlines()[0]}); fix or "
                    "delete that line, or pick a new --run-dir"
                ) from None
            rows.append((line, row))
        return rows

    def has_row(self, step: int) -> bool:
        """Whether ``metrics.jsonl`` holds a row for ``step``."""
        if not self.file(METRICS).is_file():
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

        records = (SETTINGS, CONFIG, METRICS, OPERATIVE_CONFIG)
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

    def write_record(self, name: str, text: str, start: int, replaced: bool) -> None:
        """Write the record ``name`` (``settings.json``, ``config.gin``); when ``replaced`` (the
        settings were changed with ``force`` at step ``start``), the old one is kept as
        ``<stem>-before-<start>`` (``-2``, ``-3``... when replaced again at that step)."""
        record = self.file(name)
        if replaced and record.is_file():
            stem, dot, suffix = name.partition(".")
            os.replace(record, self._unused(f"{stem}-before-{start}", dot + suffix))
        _atomic_write(record, text)

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
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
