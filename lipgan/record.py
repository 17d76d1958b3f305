"""``run.json``: the one record of a run dir, and the one comparison made when a dir is reused.

A run dir used to be described by four files compared three ways (the settings, the gin text as
parsed, the operative gin config, and a rebuild description for runs made in Python). It is now
described by this one JSON object, written atomically by the chief (:meth:`lipgan.rundir.RunDir.begin`,
under the run dir's lock)::

    {
      "format": 1,
      "settings": {...},   what a step computes (lipgan.settings.trainer_settings); compared by
                           differences() when the dir is reused
      "rebuild": {...},    what rebuilds the Trainer without the script that made it: plugins with
                           their arguments, optimizers, step config, intervals, steps, the models'
                           Keras serializations, the data (lipgan.description; data/ holds a copy
                           of a Dataset given as data)
      "gin": {"config": "...", "operative": "..."}
                           a run made by `lipgan run` (absent for one made in Python): the gin
                           config as parsed, which `--resume` parses again, and, once the run
                           has ended, every parameter used with its defaults (operative_config.gin
                           is a copy of it for people to read)
    }

A dir written by an older lipgan (``settings.json``, ``config.gin`` or ``trainer.json``, no
``run.json``) is refused in one line (:func:`older_problem`): its files are not read. Only
:data:`RESUMABLE_SETTINGS` (how long and how often to train) may differ when a run is continued.

Kept free of TensorFlow: the CLI reads records before it imports anything heavy.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from lipgan.callbacks import Callback
from lipgan.errors import RunDirError

#: The record's file name in a run dir.
RECORD = "run.json"
#: The record's format: a record of another format is refused in one line.
FORMAT = 1
#: What older lipgan versions wrote instead of :data:`RECORD`.
OLDER_RECORDS = ("settings.json", "config.gin", "trainer.json")

#: Top-level settings (or dotted prefixes) that may differ when a run is resumed: how long, how
#: often and how verbosely it trains, never what a step computes.
RESUMABLE_SETTINGS = ("intervals", "checkpoint_input", "inception_weights")

#: Settings that cannot always be taken (the data fingerprint) or that a plugin may not expose
#: (its constructor arguments): a difference counts only when both records hold one.
_OPTIONAL_SETTINGS = ("data.fingerprint", "constraint.arguments", "strategy.arguments")


def older_problem(run_dir: str | Path) -> str | None:
    """The one-line refusal of a dir written by an older lipgan, or None (no such files, or a
    ``run.json`` beside them)."""
    run_dir = Path(run_dir)
    if (run_dir / RECORD).exists():
        return None
    found = [name for name in OLDER_RECORDS if (run_dir / name).is_file()]
    if not found:
        return None
    return (
        f"run dir {run_dir} was written by an older lipgan ({', '.join(found)}, no {RECORD}); "
        "start a new --run-dir (or use the lipgan version that wrote it)"
    )


def read(run_dir: str | Path) -> dict | None:
    """The record of ``run_dir``; None when it has none (a new dir, or one never begun).

    Raises:
        RunDirError: the dir was written by an older lipgan, or its record is unreadable or of
            another format.
    """
    run_dir = Path(run_dir)
    older = older_problem(run_dir)
    if older:
        raise RunDirError(older)
    path = run_dir / RECORD
    if not path.is_file():
        return None
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise RunDirError(
            f"run dir {run_dir}: {RECORD} is unreadable ({str(exc).splitlines()[0]}); restore it "
            "or pick a new --run-dir"
        ) from None
    if not isinstance(record, dict) or not isinstance(record.get("settings"), dict):
        what = f"a JSON {type(record).__name__}" if not isinstance(record, dict) else "no settings"
        raise RunDirError(
            f"run dir {run_dir}: {RECORD} holds {what}, not the record lipgan writes; restore it "
            "or pick a new --run-dir"
        )
    if record.get("format") != FORMAT:
        raise RunDirError(
            f"run dir {run_dir}: {RECORD} has format {record.get('format')!r}, this lipgan reads "
            f"format {FORMAT}; use the lipgan version that wrote it or start a new --run-dir"
        )
    return record


def make(settings: dict, rebuild: dict, sections: dict | None = None) -> dict:
    """A record: ``settings`` (compared), ``rebuild`` (read by :mod:`lipgan.rebuild`) and the
    sections a :class:`RecordPart` adds (the CLI's ``gin``)."""
    return {"format": FORMAT, "settings": settings, "rebuild": rebuild, **(sections or {})}


def dumps(record: dict) -> str:
    return json.dumps(record, indent=2, sort_keys=True, default=repr) + "\n"


class RecordPart(Callback):
    """A :meth:`lipgan.Trainer.fit` callback that adds a section to ``run.json``.

    The training loop writes the record; it asks each such callback for :meth:`section` when it
    begins (``final=False``) and again when training ends normally (``final=True``). The CLI's
    gin config is one (:class:`lipgan.config.GinRecord`): ``fit`` itself knows no gin.
    """

    #: The record's key for this section.
    key = ""

    def section(self, final: bool) -> dict:
        """The section's JSON-able content (``final``: training has ended)."""
        raise NotImplementedError


def sections(callbacks, final: bool) -> dict:
    """``{key: section}`` of the :class:`RecordPart` callbacks."""
    return {c.key: c.section(final) for c in callbacks if isinstance(c, RecordPart)}


def flat_settings(settings: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{'constraint.weight': 10.0, ...}``: nested settings as dotted keys (for diffs)."""
    out = {}
    for key, value in settings.items():
        if isinstance(value, dict) and value:
            out.update(flat_settings(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def differences(old: dict, new: dict) -> list[str]:
    """Human-readable differences of two settings records (``RESUMABLE_SETTINGS`` ignored): the
    one comparison of a reused run dir, whether the run was made from the CLI or from Python."""
    old, new = flat_settings(old), flat_settings(new)
    # A step setting added since a record was written is that record's default.
    from lipgan.step_config import StepConfig

    for field in dataclasses.fields(StepConfig):
        for settings in (old, new):
            settings.setdefault(f"step_config.{field.name}", field.default)
    diffs = []
    for key in sorted(set(old) | set(new)):
        if key.split(".")[0] in RESUMABLE_SETTINGS or _not_recorded_by_both(key, old, new):
            continue
        if old.get(key) != new.get(key):
            diffs.append(f"{key}: {old.get(key, '(unset)')} -> {new.get(key, '(unset)')}")
    return diffs


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


def different_config(path, diffs: list[str]) -> RunDirError:
    """The one-line refusal of a run dir that holds a run with other settings."""
    more = f" (and {len(diffs) - 1} more)" if len(diffs) > 1 else ""
    return RunDirError(
        f"run dir {path} holds a run with a different config ({diffs[0]}{more}); "
        "resume it with `lipgan run --resume DIR`, pick a new run dir, or force "
        "(--force, or fit(force=True)) to continue it with these settings"
    )
