"""The run directory: what a run leaves on disk, and the rules for reusing one.

Layout (also in the README)::

    config.gin            the config as parsed (files + bindings); compared when the dir is reused
    config-before-<k>.gin a config replaced with --force at step k
    operative_config.gin  the parameters actually used, defaults included
    metrics.jsonl         one JSON object per logged step (losses, diagnostics, evaluation metrics)
    checkpoints/          CheckpointManager: models, optimizers, iteration, seed, input position
    tensorboard/          scalars, weight histograms, sample images
    samples.png           final samples: critic contour + points (2-D) or an image grid

Reusing a directory resumes it, so the config must be the same one: only the parameters in
:data:`RESUMABLE` (how long and how verbosely to train) may change without ``--force``.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path

from lipgan.errors import RunDirError

CONFIG = "config.gin"
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

    def check(self, config_text: str, force: bool) -> list[str]:
        """Refuse a reused dir whose config differs (unless ``force``); returns the differences."""
        check_location(self.path)
        old = self.saved_config()
        if old is None:
            return []
        diffs = config_differences(old, config_text)
        if diffs and not force:
            more = f" (and {len(diffs) - 1} more)" if len(diffs) > 1 else ""
            raise RunDirError(
                f"run dir {self.path} holds a run with a different config ({diffs[0]}{more}); "
                "resume it with `lipgan run --resume DIR`, pick a new --run-dir, or pass --force "
                "to continue it with this config"
            )
        return diffs

    def begin(self, config_text: str, start: int, replaced: bool) -> None:
        """Create the dir, record the config and drop metrics logged after ``start`` (re-run now)."""
        import tensorflow as tf

        self.path.mkdir(parents=True, exist_ok=True)
        config = self.file(CONFIG)
        if replaced and config.is_file():
            os.replace(config, self.file(f"config-before-{start}.gin"))
        _atomic_write(config, config_text)
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
