"""A :class:`lipgan.Trainer` rebuilt from a run dir's record (``lipgan eval/sample/audit DIR``,
``lipgan run --resume DIR``), for runs made by ``lipgan run`` and from Python alike.

A run made by ``lipgan run`` is rebuilt from the gin config its record holds (parsed again, with
the command's ``--bind`` after it, at the CLI's edge: :func:`lipgan.config.recorded.rebuild_trainer`), so a
resumed CLI run is configured exactly as ``lipgan run`` configures one. A run made in Python is rebuilt from the record's ``rebuild`` section
(:mod:`lipgan.run.description`): the models from their Keras serializations, the plugins from their
registered names and arguments, the data by name or from ``data/``. The weights come from the
checkpoints (``trainer.restore`` or ``fit``). :func:`spec_arguments` imports the modules the description
names (as unpickling would: a run dir is trusted like the code that wrote it).

``--mock-data`` means what it means for a gin run: a *named* TFDS dataset is loaded as
``tfds.testing.mock_data`` random examples. Data stored in ``data/`` is not loaded from TFDS, so
there is nothing to mock; :func:`check_mock_data` refuses the flag there in one line rather than
ignore it.

Resuming a Python run from the CLI re-reads the data from ``data/``, whose pipeline differs from
the script's, so the input position is replayed from the seed instead of restored
(``checkpoint_input`` off for that run). A script's pipeline that reshuffled every pass was saved as
one pass, in its order. Data that was only shape-known (a factory only the script can call) gives
:func:`spec_arguments` a zeros pipeline marked ``no_examples``: ``lipgan sample`` then draws no real points.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path

from lipgan.core.errors import ConfigError, first_line
from lipgan.run import record
from lipgan.run.description import DATA, REGISTER_HINT, unregistered
from lipgan.run.spec_fields import kind_of, recorded_fields, value_from_json

#: ``train.*`` bindings a Python run dir takes on the CLI: how long and how often, as on resume.
_BINDABLE = ("steps", "checkpoint_input", "inception_weights")


def read(run_dir: str | Path, option: str = "RUN_DIR") -> dict:
    """The record of ``run_dir``, or a one-line error saying why it is not a run dir (none there,
    no record, an older lipgan's)."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        what = record.file_kind(run_dir)
        raise ConfigError(
            f"{option} {run_dir}: no such run directory"
            if what is None
            else f"{option} {run_dir} is {what}, not a run directory"
        )
    found = record.read(run_dir)
    if found is None:
        raise ConfigError(
            f"{option} {run_dir}: no {record.RECORD} there, so it is not a lipgan run directory "
            "(or its run failed before it began)"
        )
    return found


def gin_config(run_record: dict) -> str | None:
    """The gin config as parsed of a run made by ``lipgan run``; None for a run made in Python."""
    return (run_record.get("gin") or {}).get("config")


def bindings(values) -> dict:
    """``{'steps': 20, 'intervals': {'log_every': 5}, ...}`` from ``train.x=v`` bindings read by
    gin's grammar (``(binding, 'train.x', value)``, :func:`lipgan.config.recorded.binding_values`): the
    ones a Python run dir takes (how long and how often); anything else is one line."""
    from lipgan.core.step_config import Intervals

    intervals = {f.name for f in dataclasses.fields(Intervals)}
    out: dict = {"intervals": {}}
    for binding, name, value in values:
        key = name.removeprefix("train.")
        if not name.startswith("train.") or (key not in intervals and key not in _BINDABLE):
            raise ConfigError(
                f"--bind {binding!r}: a run dir written from Python takes only train.steps, "
                "train.checkpoint_input, train.inception_weights and the intervals "
                "(train.log_every, train.eval_every, ...)"
            )
        (out["intervals"] if key in intervals else out)[key] = value
    return out


def check_mock_data(run_dir: str | Path, run_record: dict) -> None:
    """One line when ``--mock-data`` cannot apply to a Python run: its data is the copy stored in
    ``data/``, which the CLI reads as it is (a named dataset is mocked, as in a gin run; data that
    was not stored is refused later, by :func:`spec_arguments`, with or without the flag)."""
    if (run_record["rebuild"].get("data") or {}).get("kind") == "snapshot":
        raise ConfigError(
            f"--mock-data: {run_dir}'s data is stored in the run dir ({Path(run_dir) / DATA}), not "
            "loaded from TFDS, so there is nothing to mock; drop --mock-data"
        )


def _model_factory(run_dir: Path, described: dict, key: str) -> Callable:
    entry = described.get(key) or {}
    where = f"{run_dir / record.RECORD} ({key})"
    if "keras" not in entry:
        raise ConfigError(
            f"{run_dir}: the {key} was not stored ({entry.get('why', 'no description')}); rebuild "
            "the Trainer in your script and call trainer.restore(run_dir)"
        )
    config = entry["keras"]
    _import_modules(config)
    missing = unregistered(config)
    if missing:
        raise ConfigError(f"{where}: custom class {', '.join(missing)}: {REGISTER_HINT}")

    def build(data_shape):
        import keras

        try:
            model = keras.saving.deserialize_keras_object(config)
        except Exception as exc:  # noqa: BLE001 - a damaged config fails in any way Keras has
            name = re.search(r"Could not locate (?:class|function) '([^']+)'", str(exc))
            if name:
                raise ConfigError(
                    f"{where}: custom class {name.group(1)!r} cannot be found: {REGISTER_HINT}, "
                    "and run lipgan where that module imports"
                ) from None
            raise ConfigError(
                f"{where}: the recorded model cannot be rebuilt ({type(exc).__name__}: "
                f"{first_line(exc, 200)}); the record is damaged or was written by another Keras: "
                "restore the run's own run.json, or rebuild the Trainer in your script and call "
                "trainer.restore(run_dir)"
            ) from None
        if not isinstance(model, keras.Model):
            raise ConfigError(
                f"{where}: it describes a {type(model).__name__}, not a keras.Model; restore the "
                "run's own run.json or pick a new --run-dir"
            )
        return model

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


def _plugin_instance(described: dict, kind: str, registry):
    entry = described[kind]
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
    try:  # an argument the record predates means what it meant then (Named.unrecorded_defaults)
        return cls(**{**cls.unrecorded_defaults, **entry["arguments"]})
    except TypeError as exc:  # arguments its constructor does not take: a damaged record
        raise ConfigError(
            f"the run's {kind} {entry['name']} cannot be made from its recorded arguments "
            f"({first_line(exc, 200)}); restore the run's own run.json"
        ) from None


def _optimizer(run_dir: Path, key: str, config: dict):
    import keras

    _import_modules(config)
    try:
        return keras.optimizers.deserialize(config)
    except Exception as exc:  # noqa: BLE001 - Keras raises TypeError, ValueError, ...
        raise ConfigError(
            f"{run_dir / record.RECORD}: the {key} {config.get('class_name')!r} cannot be rebuilt "
            f"({first_line(exc, 200)}); a custom optimizer or schedule must be registered: "
            f"{REGISTER_HINT}"
        ) from None


def _data_factory(run_dir: Path, described: dict, need_data: bool):
    import tensorflow as tf

    from lipgan.data.adapt import data_factory as adapt

    data = described["data"]
    if data["kind"] == "name":
        from lipgan.data.pipeline import dataset

        settings = dict(data["settings"])
        return dataset(settings.pop("name"), data_dir=data.get("data_dir"), **settings)
    if data["kind"] == "snapshot":
        factory = adapt(tf.data.Dataset.load(str(run_dir / data["path"])))
        factory.settings = data["settings"]  # the script's record: resuming compares it
        factory.snapshot = str(run_dir / data["path"])  # describe() keeps it as it is
        return factory
    if need_data:
        raise ConfigError(
            f"{run_dir}: the run's data was not stored ({data['why']}); evaluate, audit or "
            "resume it from your script (trainer.restore(run_dir), then trainer.evaluate())"
        )
    shape = described["data_shape"]

    def shape_only(batch, seed):  # sampling reads no data
        return (
            tf.data.Dataset.from_tensors(tf.zeros(shape)).repeat().batch(batch, drop_remainder=True)
        )

    shape_only.no_examples = True  # zeros, not the run's data: `lipgan sample` draws no real points
    return shape_only


def _read_plugin(run_dir, described, field, registry, options):
    if (
        field.name == "strategy"
    ):  # kept on resume (unless given); else the default, where the user is
        given = options["strategy"]
        if given is None and options["resume"]:
            return _plugin_instance(described, "strategy", registry)
        return given
    return _plugin_instance(described, field.name, registry)


def _read_optimizer(run_dir, described, field, registry, options):
    return lambda key=field.name: _optimizer(run_dir, key, described[key])


def _read_model(run_dir, described, field, registry, options):
    return _model_factory(run_dir, described, field.name)


def _read_data(run_dir, described, field, registry, options):
    return _data_factory(run_dir, described, options["need_data"])


def _read_value(run_dir, described, field, registry, options):
    overrides = options["overrides"]
    if field.metadata.get("group"):  # a group's overrides: {"intervals": {"log_every": 5}}
        return value_from_json(field, described, overrides.get(field.name))
    return value_from_json(field, described, overrides)


#: How each kind of :class:`lipgan.run.spec.RunSpec` field is read back from a record's ``rebuild``
#: section (:data:`lipgan.run.description.DESCRIBE_KIND` writes it).
READ_KIND = {
    "data": _read_data,
    "model": _read_model,
    "plugin": _read_plugin,
    "strategy": _read_plugin,
    "optimizer": _read_optimizer,
    "value": _read_value,
}


def spec_arguments(
    spec_class,
    run_dir: str | Path,
    run_record: dict,
    registry,
    *,
    need_data: bool = True,
    resume: bool = False,
    bound=(),
    strategy=None,
):
    """(the fields of ``spec_class`` (:class:`lipgan.run.spec.RunSpec`) that a Python run's record
    describes, the ``steps`` to train to): one per recorded field, by its kind
    (:data:`READ_KIND`).

    ``resume`` keeps the run's strategy (unless ``strategy``, a lipgan strategy, overrides it);
    otherwise it runs on the default one, where the user is. ``bound`` are ``train.x=v``
    bindings (:func:`bindings`).
    """
    run_dir = Path(run_dir)
    described = run_record["rebuild"]
    overrides = bindings(bound)
    options = {
        "need_data": need_data,
        "resume": resume,
        "strategy": strategy,
        "overrides": overrides,
    }
    arguments = {}
    try:
        for field in recorded_fields(spec_class):
            arguments[field.name] = READ_KIND[kind_of(field)](
                run_dir, described, field, registry, options
            )
    except TypeError as exc:  # a setting this lipgan does not know: a damaged record
        raise ConfigError(
            f"{run_dir / record.RECORD}: rebuild.step_config or rebuild.intervals holds a setting "
            f"lipgan does not know ({first_line(exc, 200)}); restore the run's own run.json"
        ) from None
    # data/ is not the script's pipeline: its position is replayed, not restored.
    if described["data"]["kind"] == "snapshot":
        arguments["checkpoint_input"] = False
    return arguments, int(overrides.get("steps", described["steps"]))
