"""Self-describing run dirs: what the CLI needs to rebuild a :class:`lipgan.Trainer` made in Python.

A run started by ``lipgan run`` is described by its ``config.gin``. A run started from a script
(``Trainer.fit(run_dir=...)``) with the user's own models and data has no gin config, so
``Trainer.fit`` writes, next to the checkpoints (:func:`write`):

    critic.keras.json, generator.keras.json
                    each model's architecture, as Keras serializes it
                    (``keras.saving.serialize_keras_object``: the config, with registered custom
                    objects named by ``package>Name`` and their module). The critic is the one the
                    user gave, before a constraint wraps it (spectral norm, bjorck, ...): the
                    constraint wraps the rebuilt model again, as it did the original.
    trainer.json    the rest of the Trainer: the data (see below), the constraint and strategy
                    (registered plugin name + constructor arguments, :attr:`lipgan.named.Named.arguments`),
                    the optimizers (``keras.optimizers.serialize``), StepConfig, Intervals and the
                    ``steps`` of the last ``fit`` call.
    data/           the examples of a ``tf.data.Dataset`` or array given as ``data=``, saved once
                    with ``tf.data.Dataset.save`` when their number is known and finite and they
                    take at most :data:`SNAPSHOT_LIMIT_BYTES`. A named dataset is recorded by name;
                    a data factory cannot be stored (``sample`` still works, ``eval``, ``audit``
                    and ``run --resume`` say why they cannot).

:func:`load` rebuilds the Trainer from these (``lipgan eval/sample/audit DIR``, ``lipgan run
--resume DIR``); ``config.gin`` wins where both exist. The weights come from the checkpoints.

Custom layers: Keras rebuilds a class it finds by its registered name, so a custom layer must be
decorated with ``@keras.saving.register_keras_serializable()`` and live in a module the CLI can
import (not the script itself, ``__main__``). :func:`load` imports the modules the description
names (as unpickling would: a run dir is trusted like the code that wrote it). A class that is not
registered is named in a note when the run dir is written and in a one-line error when it is read.

``--mock-data`` (``lipgan run --resume``, ``eval``, ``audit``) means what it means for a gin run:
a *named* TFDS dataset is loaded as ``tfds.testing.mock_data`` random examples. Data stored in
``data/`` is not loaded from TFDS, so there is nothing to mock; :func:`check_mock_data` refuses
the flag there in one line rather than ignore it.

Resuming from the CLI re-reads the data from ``data/``, whose pipeline differs from the script's,
so the input position is replayed from the seed instead of restored (``checkpoint_input`` off for
that run). A script's pipeline that reshuffled every pass was saved as one pass, in its order.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import json
import os
import re
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

from lipgan.errors import ConfigError

CRITIC = "critic.keras.json"
GENERATOR = "generator.keras.json"
TRAINER = "trainer.json"
DATA = "data"
MODEL_FILES = {"critic": CRITIC, "generator": GENERATOR}

#: Largest data set (in bytes, as float32) copied into a run dir's ``data/``.
SNAPSHOT_LIMIT_BYTES = 256 * 2**20

#: ``train.*`` bindings a Python run dir takes on the CLI: how long and how often, as on resume.
_BINDABLE = ("steps", "checkpoint_input", "inception_weights")

REGISTER_HINT = (
    "decorate it with @keras.saving.register_keras_serializable() in a module lipgan can import "
    "(on PYTHONPATH or in the working directory; not the script itself)"
)


# -- recording the models the factories build ------------------------------------------------------
def recording(factory: Callable, built: dict, key: str) -> Callable:
    """``factory`` that also keeps the model it builds in ``built[key]`` (before any wrapping)."""

    def build(data_shape):
        built[key] = factory(data_shape)
        return built[key]

    return build


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
            f"{type(model).__name__} {model.name!r} cannot be serialized ({str(exc).splitlines()[0]}); "
            "give it a get_config() or build it from layers (Functional or Sequential)"
        )
    missing = unregistered(config)
    if missing:
        return None, f"its custom class {', '.join(missing)} is not registered: {REGISTER_HINT}"
    return config, None


# -- writing -----------------------------------------------------------------------------------------
def _plugin(obj) -> dict:
    return {"name": getattr(obj, "name", ""), "class": _class_path(obj), "arguments": obj.arguments}


def _data(trainer, run_dir: Path, warn: Callable[[str], None]) -> dict:
    factory = trainer.dataset
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
    if (run_dir / DATA).is_dir() and previous == entry:
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
        why = f"saving it failed: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
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
        return json.loads((run_dir / TRAINER).read_text())["data"]
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


def write(run_dir: str | Path, trainer, steps: int, warn: Callable[[str], None] = print) -> None:
    """Describe ``trainer`` in ``run_dir`` (see the module docstring); called by ``Trainer.fit``."""
    import keras

    from lipgan.rundir import _atomic_write

    run_dir = Path(run_dir)
    record = {
        "steps": int(steps),
        "data": _data(trainer, run_dir, warn),
        "data_shape": list(trainer.wgan.data_shape),
        "constraint": _plugin(trainer.constraint),
        "strategy": _plugin(trainer.strategy),
        "critic_optimizer": keras.optimizers.serialize(trainer.wgan.critic_optimizer),
        "generator_optimizer": keras.optimizers.serialize(trainer.wgan.generator_optimizer),
        "step": dataclasses.asdict(trainer.step_config),
        "intervals": dataclasses.asdict(trainer.intervals),
        "checkpoint_input": trainer.checkpoint_input,
        "inception_weights": trainer.inception_weights,
    }
    for key, file in MODEL_FILES.items():
        config, why = describe_model(trainer.built_models[key])
        if config is None:
            record[key] = {"why": why}
            warn(
                f"note: {run_dir}: the {key} is not stored ({why}); the CLI cannot rebuild this run"
            )
            continue
        _atomic_write(run_dir / file, json.dumps(config, indent=1) + "\n")
        record[key] = {"file": file}
    _atomic_write(run_dir / TRAINER, json.dumps(record, indent=2, default=repr) + "\n")


# -- reading -----------------------------------------------------------------------------------------
def describes(run_dir: str | Path) -> bool:
    """Whether ``run_dir`` holds a Python run's description (``trainer.json``)."""
    return (Path(run_dir) / TRAINER).is_file()


def bindings(values) -> dict:
    """``{'steps': 20, 'intervals': {'log_every': 5}, ...}`` from ``train.x=v`` bindings, the ones a
    Python run dir takes (how long and how often); anything else is one line."""
    from lipgan.engine import Intervals

    intervals = {f.name for f in dataclasses.fields(Intervals)}
    out: dict = {"intervals": {}}
    for binding in values:
        key, eq, text = binding.partition("=")
        key = key.strip().removeprefix("train.")
        if not eq or (key not in intervals and key not in _BINDABLE):
            raise ConfigError(
                f"--bind {binding!r}: a run dir written from Python takes only train.steps, "
                "train.checkpoint_input, train.inception_weights and the intervals "
                "(train.log_every, train.eval_every, ...)"
            )
        try:
            value = ast.literal_eval(text.strip())
        except (ValueError, SyntaxError):
            raise ConfigError(
                f"--bind {binding!r}: {text.strip()!r} is not a Python literal"
            ) from None
        (out["intervals"] if key in intervals else out)[key] = value
    return out


def _read(run_dir: Path) -> dict:
    try:
        record = json.loads((run_dir / TRAINER).read_text())
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{run_dir / TRAINER} is unreadable ({exc}); restore it") from None
    return record


def check_mock_data(run_dir: str | Path) -> None:
    """One line when ``--mock-data`` cannot apply to ``run_dir``: its data is the copy stored in
    ``data/``, which the CLI reads as it is (a named dataset is mocked, as in a gin run; data that
    was not stored is refused later, by :func:`trainer_arguments`, with or without the flag)."""
    run_dir = Path(run_dir)
    if (_read(run_dir).get("data") or {}).get("kind") == "snapshot":
        raise ConfigError(
            f"--mock-data: {run_dir}'s data is stored in the run dir ({run_dir / DATA}), not "
            "loaded from TFDS, so there is nothing to mock; drop --mock-data"
        )


def _model_factory(run_dir: Path, record: dict, key: str) -> Callable:
    entry = record.get(key) or {}
    if "file" not in entry:
        raise ConfigError(
            f"{run_dir}: the {key} was not stored ({entry.get('why', 'no description')}); rebuild "
            "the Trainer in your script and call trainer.restore(run_dir)"
        )
    config = json.loads((run_dir / entry["file"]).read_text())
    _import_modules(config)
    missing = unregistered(config)
    if missing:
        raise ConfigError(
            f"{run_dir / entry['file']}: custom class {', '.join(missing)}: {REGISTER_HINT}"
        )

    def build(data_shape):
        import keras

        try:
            return keras.saving.deserialize_keras_object(config)
        except (TypeError, ValueError) as exc:
            name = re.search(r"Could not locate (?:class|function) '([^']+)'", str(exc))
            what = (
                f"custom class {name.group(1)!r} cannot be found"
                if name
                else str(exc).splitlines()[0]
            )
            raise ConfigError(
                f"{run_dir / entry['file']}: {what}: {REGISTER_HINT}, and run lipgan where that "
                "module imports"
            ) from None

    return build


def _import_modules(config) -> None:
    """Import the modules that register the custom classes ``config`` names (Keras does not)."""
    if isinstance(config, dict):
        module = config.get("module") or ""
        if ">" in str(config.get("registered_name") or "") and module not in ("", "__main__"):
            _import(module)
        for value in config.values():
            _import_modules(value)
    elif isinstance(config, list):
        for value in config:
            _import_modules(value)


def _import(module: str) -> None:
    """Import ``module`` from the import path or, as ``python -m`` would, the working directory
    (a console script such as ``lipgan`` does not search it)."""
    try:
        importlib.import_module(module)
        return
    except ImportError:
        pass
    sys.path.insert(0, os.getcwd())
    try:
        importlib.import_module(module)
    except ImportError:
        pass  # reported as "cannot be found" when Keras looks for the class
    finally:
        sys.path.remove(os.getcwd())


def _plugin_instance(record: dict, kind: str, registry):
    entry = record[kind]
    if kind == "strategy" and entry["name"] == "given":
        return None  # a tf.distribute.Strategy object, or TensorFlow's default: the default here
    try:
        cls = registry.get(kind, entry["name"]) if entry["name"] else None
    except ConfigError:
        cls = None
    if cls is None or f"{cls.__module__}.{cls.__qualname__}" != entry["class"]:
        raise ConfigError(
            f"the run's {kind} {entry['class']} is not a registered lipgan plugin (defined in the "
            "script?), so the CLI cannot rebuild it; register it as a plugin (docs/plugins.md), or "
            "rebuild the Trainer in your script and call trainer.restore(run_dir)"
        )
    if entry["arguments"] is None:
        raise ConfigError(f"the run's {kind} {entry['name']} has no recorded arguments")
    return cls(**entry["arguments"])


def _optimizer(run_dir: Path, key: str, config: dict):
    import keras

    _import_modules(config)
    try:
        return keras.optimizers.deserialize(config)
    except Exception as exc:  # noqa: BLE001 - Keras raises TypeError, ValueError, ...
        raise ConfigError(
            f"{run_dir / TRAINER}: the {key} {config.get('class_name')!r} cannot be rebuilt "
            f"({str(exc).splitlines()[0]}); a custom optimizer or schedule must be registered: "
            f"{REGISTER_HINT}"
        ) from None


def _data_factory(run_dir: Path, record: dict, need_data: bool):
    import tensorflow as tf

    from lipgan.data.adapt import data_factory as adapt

    data = record["data"]
    if data["kind"] == "name":
        from lipgan.data.pipeline import dataset

        settings = dict(data["settings"])
        return dataset(settings.pop("name"), data_dir=data.get("data_dir"), **settings)
    if data["kind"] == "snapshot":
        factory = adapt(tf.data.Dataset.load(str(run_dir / data["path"])))
        factory.settings = data["settings"]  # the script's record: resuming compares it
        factory.snapshot = str(run_dir / data["path"])  # write() keeps it as it is
        return factory
    if need_data:
        raise ConfigError(
            f"{run_dir}: the run's data was not stored ({data['why']}); evaluate, audit or "
            "resume it from your script (trainer.restore(run_dir), then trainer.evaluate())"
        )
    shape = record["data_shape"]

    def shape_only(batch, seed):  # sampling reads no data
        return (
            tf.data.Dataset.from_tensors(tf.zeros(shape)).repeat().batch(batch, drop_remainder=True)
        )

    shape_only.no_examples = True  # zeros, not the run's data: `lipgan sample` draws no real points
    return shape_only


def trainer_arguments(
    run_dir: str | Path,
    registry,
    *,
    need_data: bool = True,
    resume: bool = False,
    bound=(),
    strategy=None,
):
    """(the :class:`lipgan.Trainer` keywords that ``run_dir/trainer.json`` describes, the ``steps``
    to train to). :func:`lipgan.run.load_run_dir` builds the Trainer (this module is below
    lipgan.trainer, which writes descriptions with it).

    Built but not restored (``trainer.restore`` or ``fit`` does that). ``resume`` keeps the run's
    strategy (unless ``strategy``, a lipgan strategy, overrides it); otherwise it runs on the
    default one, where the user is. ``bound`` are ``train.x=v`` bindings (:func:`bindings`).
    """
    from lipgan.engine import Intervals, StepConfig

    run_dir = Path(run_dir)
    record = _read(run_dir)
    overrides = bindings(bound)
    critic = _model_factory(run_dir, record, "critic")
    generator = _model_factory(run_dir, record, "generator")
    constraint = _plugin_instance(record, "constraint", registry)
    if strategy is None and resume:
        strategy = _plugin_instance(record, "strategy", registry)
    data = _data_factory(run_dir, record, need_data)
    optimizers = {
        key: (lambda key=key: _optimizer(run_dir, key, record[key]))
        for key in ("critic_optimizer", "generator_optimizer")
    }
    arguments = dict(
        data=data,
        critic=critic,
        generator=generator,
        constraint=constraint,
        strategy=strategy,
        step_config=StepConfig(**record["step"]),
        intervals=Intervals(**{**record["intervals"], **overrides["intervals"]}),
        # data/ is not the script's pipeline: its position is replayed, not restored.
        checkpoint_input=record["data"]["kind"] != "snapshot"
        and overrides.get("checkpoint_input", record["checkpoint_input"]),
        inception_weights=overrides.get("inception_weights", record["inception_weights"]),
        **optimizers,
    )
    return arguments, int(overrides.get("steps", record["steps"]))
