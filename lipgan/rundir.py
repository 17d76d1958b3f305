"""The run directory: what a run leaves on disk, and the rules for reusing one.

Layout (also in the README)::

    settings.json         the run's settings (lipgan.Trainer.settings); compared when the dir is reused
    config.gin            the gin config as parsed (files + bindings), for runs started by the CLI
    config-before-<k>.gin a config replaced with --force at step k
    operative_config.gin  the parameters actually used, defaults included
    metrics.jsonl         one JSON object per logged step (losses, diagnostics, evaluation metrics)
    checkpoints/          CheckpointManager: models, optimizers, iteration, seed, input position
    tensorboard/          scalars, weight histograms, sample images
    samples.png           final samples: critic contour + points (2-D) or an image grid

Reusing a directory resumes it, so the settings must be the same: only those in
:data:`RESUMABLE_SETTINGS` (how long and how verbosely to train) may change without ``force``. The
record is ``settings.json``, written from :meth:`lipgan.Trainer.settings` whether the run was
started from Python or from gin; runs older than it are compared by their ``config.gin``.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path

from lipgan.errors import RunDirError

CONFIG = "config.gin"
SETTINGS = "settings.json"
OPERATIVE_CONFIG = "operative_config.gin"
METRICS = "metrics.jsonl"
TENSORBOARD = "tensorboard"
SAMPLES = "samples.png"

#: Bindings that may differ when a run is resumed: they change how long or how verbosely it
#: trains, never what a step computes.
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


def config_differences(old_text: str, new_text: str) -> list[str]:
    """Human-readable differences that matter for resuming (``RESUMABLE`` ones are ignored)."""
    old, new = bindings(old_text), bindings(new_text)
    diffs = []
    for key in sorted(set(old) | set(new)):
        if key in RESUMABLE or key.split("/")[-1] in RESUMABLE:
            continue
        if old.get(key) != new.get(key):
            diffs.append(f"{key}: {old.get(key, '(unset)')} -> {new.get(key, '(unset)')}")
    return diffs


def settings_differences(old: dict, new: dict) -> list[str]:
    """Human-readable differences of two settings records (``RESUMABLE_SETTINGS`` ignored)."""
    from lipgan.trainer import flat_settings

    old, new = flat_settings(old), flat_settings(new)
    diffs = []
    for key in sorted(set(old) | set(new)):
        if key.split(".")[0] in RESUMABLE_SETTINGS:
            continue
        if old.get(key) != new.get(key):
            diffs.append(f"{key}: {old.get(key, '(unset)')} -> {new.get(key, '(unset)')}")
    return diffs


class RunDir:
    """One run's directory. :meth:`check` reads only; :meth:`begin` is the first write."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.summary = None
        self._metrics = None

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
            return json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise RunDirError(
                f"run dir {self.path}: {SETTINGS} is unreadable ({exc}); restore it or pick a new "
                "--run-dir"
            ) from None

    def check(self, settings: dict, config_text: str | None, force: bool) -> list[str]:
        """Refuse a reused dir whose settings differ (unless ``force``); returns the differences.

        ``settings.json`` decides; a run dir written before it existed is compared by its
        ``config.gin`` when the caller has gin text to compare with.
        """
        check_location(self.path)
        old = self.saved_settings()
        if old is not None:
            diffs = settings_differences(old, settings)
        elif config_text is not None and self.saved_config() is not None:
            diffs = config_differences(self.saved_config(), config_text)
        else:
            return []
        if diffs and not force:
            more = f" (and {len(diffs) - 1} more)" if len(diffs) > 1 else ""
            raise RunDirError(
                f"run dir {self.path} holds a run with a different config ({diffs[0]}{more}); "
                "resume it with `lipgan run --resume DIR`, pick a new run dir, or force "
                "(--force, or fit(force=True)) to continue it with these settings"
            )
        return diffs

    def begin(self, settings: dict, config_text: str | None, start: int, replaced: bool) -> None:
        """Create the dir, record the settings (and gin config) and drop metrics after ``start``."""
        import tensorflow as tf

        self.path.mkdir(parents=True, exist_ok=True)
        for name, text in (
            (SETTINGS, json.dumps(settings, indent=2, sort_keys=True) + "\n"),
            (CONFIG, config_text),
        ):
            if text is None:
                continue
            record = self.file(name)
            if replaced and record.is_file():
                stem, dot, suffix = name.partition(".")
                os.replace(record, self.file(f"{stem}-before-{start}{dot}{suffix}"))
            _atomic_write(record, text)
        metrics = self.file(METRICS)
        if metrics.is_file():
            kept = [
                ln
                for ln in metrics.read_text().splitlines()
                if ln.strip() and json.loads(ln).get("step", 0) <= start
            ]
            _atomic_write(metrics, "".join(f"{ln}\n" for ln in kept))
        self._metrics = open(metrics, "a")  # noqa: SIM115 - closed in close()
        self.summary = tf.summary.create_file_writer(str(self.file(TENSORBOARD)))

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
        if self._metrics is not None:
            self._metrics.close()


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
