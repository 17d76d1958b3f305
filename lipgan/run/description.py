"""The record's ``rebuild`` section: what rebuilds a :class:`lipgan.Trainer` without its script.

A run made by ``lipgan run`` can be rebuilt from its gin config; a run made from a script
(``Trainer.fit(run_dir=...)``) with the user's own models and data has no gin config, so the
record describes the Trainer itself (:func:`describe`, read back by :mod:`lipgan.run.rebuild`):

    critic, generator
                each model's architecture as Keras serializes it
                (``keras.saving.serialize_keras_object``: the config, with registered custom
                objects named by ``package>Name`` and their module). The critic is the one the
                user gave, before a constraint wraps it (spectral norm, bjorck, ...): the
                constraint wraps the rebuilt model again, as it did the original.
    constraint, strategy
                registered plugin name + constructor arguments
                (:attr:`lipgan.core.named.Named.arguments`)
    critic_optimizer, generator_optimizer
                ``keras.optimizers.serialize``
    step_config, intervals, steps, checkpoint_input, inception_weights, data_shape
    data        a named dataset by name; the examples of a ``tf.data.Dataset`` or array given as
                ``data=`` are saved once in ``data/`` (``tf.data.Dataset.save``) when their number
                is known and finite and they take at most :data:`SNAPSHOT_LIMIT_BYTES`; a data
                factory cannot be stored (``sample`` still works, ``eval``, ``audit`` and ``run
                --resume`` say why they cannot).

Custom layers: Keras rebuilds a class it finds by its registered name, so a custom layer must be
decorated with ``@keras.saving.register_keras_serializable()`` and live in a module the CLI can
import (not the script itself, ``__main__``). A class that is not registered is named in a note
when the run dir is written and in a one-line error when it is read.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from collections.abc import Callable
from pathlib import Path

from lipgan.core.compare import differences
from lipgan.core.errors import first_line
from lipgan.run.record import RECORD
from lipgan.run.spec_fields import kind_of, recorded_fields, value_json

#: The run dir's copy of a Dataset given as ``data=``.
DATA = "data"

#: Largest data set (in bytes, as float32) copied into a run dir's ``data/``.
SNAPSHOT_LIMIT_BYTES = 256 * 2**20

REGISTER_HINT = (
    "decorate it with @keras.saving.register_keras_serializable() in a module lipgan can import "
    "(on PYTHONPATH or in the working directory; not the script itself)"
)


def _class_path(obj) -> str:
    cls = type(obj)
    return f"{cls.__module__}.{cls.__qualname__}"


def unregistered(config) -> list[str]:
    """Classes in a serialized Keras config that Keras cannot find by name in another process:
    custom objects that are not registered, or registered only in ``__main__``."""
    found = []
    if isinstance(config, dict):
        module = config.get("module") or ""
        name = config.get("class_name")
        if isinstance(name, str) and name != "__keras_tensor__" and not module.startswith("keras"):
            registered = ">" in str(config.get("registered_name") or "")
            if not registered or module == "__main__":
                found.append(name)
        for value in config.values():
            found += unregistered(value)
    elif isinstance(config, list):
        for value in config:
            found += unregistered(value)
    return sorted(set(found))


def describe_model(model) -> tuple[dict | None, str | None]:
    """(the model's Keras serialization, None) or (None, why it cannot be stored)."""
    import keras

    try:
        config = json.loads(json.dumps(keras.saving.serialize_keras_object(model)))
    except Exception as exc:  # noqa: BLE001 - a user's get_config may fail in any way; the run goes on
        return None, (
            f"{type(model).__name__} {model.name!r} cannot be serialized ({first_line(exc)}); "
            "give it a get_config() or build it from layers (Functional or Sequential)"
        )
    missing = unregistered(config)
    if missing:
        return None, f"its custom class {', '.join(missing)} is not registered: {REGISTER_HINT}"
    return config, None


def _plugin(obj) -> dict:
    return {"name": getattr(obj, "name", ""), "class": _class_path(obj), "arguments": obj.arguments}


def _data(trainer, run_dir: Path, warn: Callable[[str], None]) -> dict:
    factory = trainer.data_factory
    if hasattr(factory, "dataset_name"):
        return {
            "kind": "name",
            "settings": factory.settings,
            "data_dir": getattr(factory, "data_dir", None),
        }
    examples = getattr(factory, "examples", None)
    if examples is None:
        name = f"{getattr(factory, '__module__', '')}.{getattr(factory, '__qualname__', '?')}"
        return {
            "kind": "none",
            "why": f"the data came from a factory ({name}) only a script can call",
        }
    settings = dict(getattr(factory, "settings", {}))
    entry = {"kind": "snapshot", "path": DATA, "settings": settings}
    previous = _previous_data(run_dir)
    if getattr(factory, "snapshot", None) == str(run_dir / DATA) and previous:
        return previous  # resumed from the CLI: the data is this run dir's own copy
    entry["fingerprint"] = trainer.data_fingerprint()[0]
    if (run_dir / DATA).is_dir() and previous is not None and not differences(previous, entry):
        return entry  # the same data (as far as its spec and fingerprint tell)
    why = _snapshot_problem(examples)
    if why:
        warn(
            f"note: {run_dir}: the data is not stored in the run dir ({why}), so `lipgan eval`, "
            "`lipgan audit` and `lipgan run --resume` need the script; `lipgan sample` works"
        )
        return {"kind": "none", "why": why}
    partial = run_dir / (DATA + ".tmp")
    shutil.rmtree(partial, ignore_errors=True)
    try:
        examples.save(str(partial))
    except Exception as exc:  # noqa: BLE001 - e.g. a py_function TensorFlow cannot save; train on
        shutil.rmtree(partial, ignore_errors=True)
        why = f"saving it failed: {first_line(exc)}"
        warn(f"note: {run_dir}: the data is not stored in the run dir ({why})")
        return {"kind": "none", "why": why}
    # Nothing half-written: the new copy appears complete, and replaces a forced run's old one.
    old = run_dir / (DATA + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if (run_dir / DATA).exists():
        (run_dir / DATA).rename(old)
    partial.rename(run_dir / DATA)
    shutil.rmtree(old, ignore_errors=True)
    return entry


def _previous_data(run_dir: Path) -> dict | None:
    try:
        return json.loads((run_dir / RECORD).read_text())["rebuild"]["data"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _snapshot_problem(examples) -> str | None:
    import numpy as np
    import tensorflow as tf

    count = int(examples.cardinality())
    if count == tf.data.INFINITE_CARDINALITY:
        return "the dataset is infinite"
    if count < 0:
        return "the dataset's size is unknown"
    size = count * int(np.prod(examples.element_spec.shape)) * 4
    if size > SNAPSHOT_LIMIT_BYTES:
        return f"{size / 2**20:.0f} MiB, over the {SNAPSHOT_LIMIT_BYTES // 2**20} MiB kept in a run dir"
    return None


def _describe_model(trainer, name: str, run_dir: Path, warn) -> dict:
    config, why = describe_model(trainer.built_models[name])
    if config is None:
        warn(f"note: {run_dir}: the {name} is not stored ({why}); the CLI cannot rebuild this run")
        return {"why": why}
    return {"keras": config}


def _describe_optimizer(trainer, name: str, run_dir: Path, warn) -> dict:
    import keras

    return keras.optimizers.serialize(getattr(trainer.wgan, name))


def _describe_value(trainer, name: str, run_dir: Path, warn):
    field = next(f for f in dataclasses.fields(trainer.spec) if f.name == name)
    return value_json(field, getattr(trainer.spec, name))


#: How each kind of :class:`lipgan.run.spec.RunSpec` field is described for rebuilding
#: (:data:`lipgan.run.rebuild.READ_KIND` reads it back).
DESCRIBE_KIND = {
    "data": lambda trainer, name, run_dir, warn: _data(trainer, run_dir, warn),
    "model": _describe_model,
    "plugin": lambda trainer, name, run_dir, warn: _plugin(getattr(trainer, name)),
    "strategy": lambda trainer, name, run_dir, warn: _plugin(getattr(trainer, name)),
    "optimizer": _describe_optimizer,
    "value": _describe_value,
}


def describe(run_dir: str | Path, trainer, steps: int, warn: Callable[[str], None] = print) -> dict:
    """The ``rebuild`` section of ``trainer``'s record (see the module docstring): one entry per
    recorded field of its :class:`lipgan.run.spec.RunSpec`, by the field's kind, with the steps and
    the data's shape; saves a Dataset given as data in ``run_dir/data/``. Called by the chief
    when training begins."""
    run_dir = Path(run_dir)
    rebuild = {"steps": int(steps), "data_shape": list(trainer.wgan.data_shape)}
    for field in recorded_fields(trainer.spec):
        rebuild[field.name] = DESCRIBE_KIND[kind_of(field)](trainer, field.name, run_dir, warn)
    return rebuild
