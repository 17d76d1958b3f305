"""``run.json``: the one record of a run dir (compared by :func:`lipgan.run.spec.settings_differences`).

A run dir used to be described by four files compared three ways (the settings, the gin text as
parsed, the operative gin config, and a rebuild description for runs made in Python). It is now
described by this one JSON object, written atomically by the chief
(:meth:`lipgan.run.rundir.RunDir.begin`, under the run dir's lock)::

    {
      "format": 1,
      "settings": {...},   what a step computes (lipgan.run.spec.RunSpec.settings); compared by
                           lipgan.run.spec.settings_differences() when the dir is reused
      "rebuild": {...},    what rebuilds the Trainer without the script that made it: plugins with
                           their arguments, optimizers, step config, intervals, steps, the models'
                           Keras serializations, the data (lipgan.run.description; data/ holds a
                           copy of a Dataset given as data)
      "gin": {"config": "...", "operative": "..."}
                           a run made by `lipgan run` (absent for one made in Python): the gin
                           config as parsed, which `--resume` parses again, and, once the run
                           has ended, every parameter used with its defaults (operative_config.gin
                           is a copy of it for people to read)
    }

A dir written by an older lipgan (``settings.json``, ``config.gin`` or ``trainer.json``, no
``run.json``) is refused in one line (:func:`older_problem`): its files are not read. Only
:data:`lipgan.run.spec.RESUMABLE` (how long and how often to train) may differ when a run is continued.

Kept free of TensorFlow: the CLI reads records before it imports anything heavy.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from lipgan.core.callbacks import Callback
from lipgan.core.errors import RunDirError, first_line, shorten

#: The record's file name in a run dir.
RECORD = "run.json"
#: The record's format: a record of another format is refused in one line.
FORMAT = 1
#: What older lipgan versions wrote instead of :data:`RECORD`.
OLDER_RECORDS = ("settings.json", "config.gin", "trainer.json")


def older_problem(run_dir: str | Path) -> str | None:
    """The one-line refusal of a dir written by an older lipgan, or None (no such files, or a
    ``run.json`` beside them)."""
    run_dir = Path(run_dir)
    if os.path.lexists(run_dir / RECORD):
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

    The record must be the dir's own regular file: a symbolic link (to another run's record, or
    to ``/dev/zero``), a FIFO (which would block the read) or a folder is refused, saying what is
    there. Its nesting is bounded (:data:`MAX_DEPTH`) and its sections are checked against
    :data:`SHAPE`, so a damaged record is one line here rather than a ``RecursionError`` or a
    ``TypeError`` in whichever command reads it next.

    Raises:
        RunDirError: the dir was written by an older lipgan, or its record is not a regular file,
            unreadable, of another format or of another shape.
    """
    run_dir = Path(run_dir)
    older = older_problem(run_dir)
    if older:
        raise RunDirError(older)
    path = run_dir / RECORD
    what = file_kind(path)
    if what is None:
        return None
    if what != "a regular file":
        raise RunDirError(
            f"run dir {run_dir}: {RECORD} is {what}, not the record lipgan writes (a run's "
            "record is its own regular file, never another run's); restore it or pick a new "
            "--run-dir"
        )
    try:
        record = json.loads(path.read_text())
    except RecursionError:
        record = f"JSON nested deeper than {MAX_DEPTH} levels"
    except (OSError, ValueError) as exc:
        raise RunDirError(
            f"run dir {run_dir}: {RECORD} is unreadable ({first_line(exc)}); restore it "
            "or pick a new --run-dir"
        ) from None
    problem = record if isinstance(record, str) else shape_problem(record)
    if not problem and record.get("format") != FORMAT:
        raise RunDirError(
            f"run dir {run_dir}: {RECORD} has format {shorten(repr(record.get('format')), 40)}, "
            f"this lipgan reads format {FORMAT}; use the lipgan version that wrote it or start a "
            "new --run-dir"
        )
    if problem:
        raise RunDirError(
            f"run dir {run_dir}: {RECORD} holds {problem}, not the record lipgan writes; restore "
            "it or pick a new --run-dir"
        )
    return record


def file_kind(path: Path) -> str | None:
    """What is at ``path`` in words (``'a regular file'``, ``'a directory'``, ``'a symbolic link
    to '../B/run.json''``...), without following a link or opening it; None when nothing is."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"unreadable ({exc.strerror or exc})"
    if stat.S_ISLNK(mode):
        target = os.readlink(path)
        leads = "" if path.exists() else ", which leads nowhere"
        return f"a symbolic link to {shorten(target)!r}{leads}"
    kinds = {
        stat.S_ISREG: "a regular file",
        stat.S_ISDIR: "a directory",
        stat.S_ISFIFO: "a FIFO (named pipe)",
        stat.S_ISCHR: "a character device",
        stat.S_ISBLK: "a block device",
        stat.S_ISSOCK: "a socket",
    }
    return next((kind for test, kind in kinds.items() if test(mode)), "not a regular file")


#: Deepest nesting of a record: a Keras model's serialization nests about 10 levels; a record
#: nested hundreds deep is not one lipgan wrote, and would overflow the recursive readers.
MAX_DEPTH = 100

#: The record's sections and their types, as :func:`make` and :mod:`lipgan.run.description` write
#: them (a dict value: the section's own keys; only the keys present are checked, but
#: ``settings`` and ``rebuild`` must be there).
SHAPE = {
    "settings": dict,
    "rebuild": {
        "steps": int,
        "data": {"kind": str, "settings": dict, "path": str, "why": str},
        "data_shape": list,
        "constraint": {"name": str, "class": str, "arguments": (dict, type(None))},
        "strategy": {"name": str, "class": str, "arguments": (dict, type(None))},
        "critic": {"keras": dict, "why": str},
        "generator": {"keras": dict, "why": str},
        "critic_optimizer": dict,
        "generator_optimizer": dict,
        "step_config": dict,
        "intervals": dict,
        "checkpoint_input": bool,
    },
    "gin": {"config": str, "operative": (str, type(None))},
}
_REQUIRED = ("settings", "rebuild")


def shape_problem(record) -> str | None:
    """What is wrong with the shape of a record (``'rebuild: a str, not an object'``), or None."""
    if not isinstance(record, dict):
        return f"a JSON {_json_type(record)}"
    if _depth(record) > MAX_DEPTH:
        return f"JSON nested deeper than {MAX_DEPTH} levels"
    if record.get("format") != FORMAT:
        return None  # another format: refused as such, whatever its shape
    missing = [key for key in _REQUIRED if key not in record]
    if missing:
        return f"no {missing[0]}"
    return _type_problem(record, SHAPE, "")


def _type_problem(value: dict, shape: dict, where: str) -> str | None:
    for key, expected in shape.items():
        if key not in value:
            continue
        item, name = value[key], f"{where}{key}"
        wanted = dict if isinstance(expected, dict) else expected
        if not isinstance(item, wanted) or (wanted is int and isinstance(item, bool)):
            return f"{name}: a JSON {_json_type(item)} where {_json_names(wanted)} belongs"
        if isinstance(expected, dict):
            problem = _type_problem(item, expected, f"{name}.")
            if problem:
                return problem
    return None


_JSON_NAMES = {dict: "object", list: "list", str: "string", bool: "boolean", type(None): "null"}


def _json_type(value) -> str:
    return _JSON_NAMES.get(type(value), "number")


def _json_names(types) -> str:
    names = [
        _JSON_NAMES.get(t, "number") for t in (types if isinstance(types, tuple) else (types,))
    ]
    return " or ".join(
        f"an {n}" if n == "object" else n if n == "null" else f"a {n}" for n in names
    )


def _depth(value) -> int:
    """Nesting depth of JSON data, without recursion (the data may be nested thousands deep)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if deepest > MAX_DEPTH:
            break
        children = (
            item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        )
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return deepest


def make(settings: dict, rebuild: dict, sections: dict | None = None) -> dict:
    """A record: ``settings`` (compared), ``rebuild`` (read by :mod:`lipgan.run.rebuild`) and the
    sections a :class:`RecordPart` adds (the CLI's ``gin``)."""
    return {"format": FORMAT, "settings": settings, "rebuild": rebuild, **(sections or {})}


def dumps(record: dict) -> str:
    return json.dumps(record, indent=2, sort_keys=True, default=repr) + "\n"


class RecordPart(Callback):
    """A :meth:`lipgan.Trainer.fit` callback that adds a section to ``run.json``.

    The training loop writes the record; it asks each such callback for :meth:`section` when it
    begins (``final=False``) and again when training ends normally (``final=True``). The CLI's
    gin config is one (:class:`lipgan.config.gin_binding.GinRecord`): ``fit`` itself knows no gin.
    """

    #: The record's key for this section.
    key = ""

    def section(self, final: bool) -> dict:
        """The section's JSON-able content (``final``: training has ended)."""
        raise NotImplementedError


def sections(callbacks, final: bool) -> dict:
    """``{key: section}`` of the :class:`RecordPart` callbacks."""
    return {c.key: c.section(final) for c in callbacks if isinstance(c, RecordPart)}


class DifferentConfig(RunDirError):
    """A reused run dir whose record holds other settings (:attr:`diffs`): a front end that knows
    how the run was asked for (``lipgan run --resume``) can say what to do in its own words."""

    def __init__(self, message: str, path, diffs: list[str]):
        super().__init__(message)
        self.path, self.diffs = path, diffs

    def change(self) -> str:
        """``'a: 1 -> 2'`` or ``'a: 1 -> 2 (and 3 more)'``."""
        more = f" (and {len(self.diffs) - 1} more)" if len(self.diffs) > 1 else ""
        return f"{self.diffs[0]}{more}"


def different_config(path, diffs: list[str]) -> DifferentConfig:
    """The one-line refusal of a run dir that holds a run with other settings."""
    more = f" (and {len(diffs) - 1} more)" if len(diffs) > 1 else ""
    return DifferentConfig(
        f"run dir {path} holds a run with a different config ({diffs[0]}{more}); "
        "resume it with `lipgan run --resume DIR`, pick a new run dir, or force "
        "(--force, or fit(force=True)) to continue it with these settings",
        path,
        diffs,
    )
