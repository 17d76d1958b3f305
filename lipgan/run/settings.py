"""The settings a run dir records: a canonical, JSON-stable description of what a step computes.

:func:`spec_settings` is :meth:`lipgan.Trainer.settings`: one entry per field of the trainer's
:class:`lipgan.run.spec.RunSpec`, described by the field's kind (:data:`SETTINGS_OF_KIND`);
:func:`lipgan.run.spec.differences` compares two of them when a run dir is reused. Kept apart from the trainer so that what is
recorded, and the checks on it (finite numbers, optimizer ranges), are read in one place.

Python data (a ``tf.data.Dataset`` or a factory) has no name to record, so its first global batches
are hashed (:func:`data_fingerprint`): another dataset of the same shape would otherwise resume a
run.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable

import keras
import numpy as np
import tensorflow as tf

from lipgan.core.compare import flat as flat_settings
from lipgan.core.errors import ConfigError, DatasetError, op_error_cause
from lipgan.core.ranges import out_of_range
from lipgan.run.spec_fields import kind_of, recorded_fields, value_json


def _plain(value):
    """A JSON-stable form of a setting (numbers, strings, lists, dicts; anything else as repr).

    Floats are written at float32 precision (shortest repr): Keras keeps hyper-parameters in float32
    variables, so 1e-3 reads back as 0.0010000000474974513; both mean the same setting.
    """
    return json.loads(json.dumps(value, sort_keys=True, default=repr), parse_float=_float32)


def _float32(text: str) -> float:
    with np.errstate(over="ignore"):  # beyond float32 is inf, which the settings check refuses
        return float(str(np.float32(float(text))))


def plugin_settings(obj) -> dict:
    """A plugin instance's name, public attributes and constructor arguments (the binding).

    The arguments are recorded by :class:`lipgan.core.named.Named` whatever ``__init__`` does with
    them: a parameter kept in a private attribute (``self._w``) is compared too.
    """
    params = {k: v for k, v in vars(obj).items() if not k.startswith("_")}
    arguments = getattr(obj, "arguments", None)
    if arguments is not None:  # those the public attributes of the same name do not already show
        params["arguments"] = {k: v for k, v in arguments.items() if k not in params}
    return _plain({"class": getattr(obj, "name", "") or type(obj).__qualname__, **params})


def _leaf_layers(model) -> list:
    layers = []
    for layer in getattr(model, "layers", []):
        layers.extend(_leaf_layers(layer) if getattr(layer, "layers", None) else [layer])
    return layers


def model_settings(model: keras.Model) -> dict:
    """Architecture of a built model: parameter count and a hash of its layers' configs.

    Layer names are left out of the hash (Keras numbers unnamed layers per process), so the same
    factory gives the same record in every process.
    """
    configs = []
    for layer in _leaf_layers(model):
        config = dict(layer.get_config())
        config.pop("name", None)
        configs.append([type(layer).__name__, config])
    digest = hashlib.sha256(json.dumps(_plain(configs), sort_keys=True).encode()).hexdigest()
    return {"parameters": int(model.count_params()), "architecture": digest[:16]}


def optimizer_settings(optimizer) -> dict:
    config = dict(optimizer.get_config())
    config.pop("name", None)
    return _plain({"class": type(optimizer).__name__, **config})


def data_settings(data: Callable, fingerprint: str | None = None) -> dict:
    settings = getattr(data, "settings", None)
    if settings is not None:
        out = _plain(settings)
    else:
        name = f"{getattr(data, '__module__', '')}.{getattr(data, '__qualname__', repr(data))}"
        out = {"factory": name}
    if not hasattr(data, "dataset_name"):  # a named dataset is described by its settings
        out["fingerprint"] = fingerprint
    return out


#: Global batches hashed by :func:`data_fingerprint`.
FINGERPRINT_BATCHES = 2
#: Dataset ops that make a pipeline's stream differ between iterators or hide the data from its
#: graph: a Dataset object holding one cannot be read a second time without changing what training
#: reads (with reshuffle_each_iteration, every iterator of one dataset shuffles differently).
_UNREPEATABLE_OPS = ("Shuffle", "Random", "PyFunc", "Generator", "Sampling")


def data_fingerprint(data: Callable, global_batch_size: int, seed: int) -> tuple[str | None, str]:
    """A hash of the first global batches under the seed, or ``None`` and why it cannot be taken.

    Python data (a ``tf.data.Dataset`` or a factory) is otherwise recorded only by its element
    spec or its factory's name, so another dataset of the same shape would resume a run.
    A factory is built twice under the seed (the stream must repeat, or there is nothing to
    compare); a Dataset object only when its graph has no random or Python op, because a second
    iterator over it could shift the stream training reads. Named datasets are described by their
    settings and are not read here.
    """
    examples = getattr(data, "examples", None)
    if examples is not None:
        ops = _dataset_ops(examples)
        unrepeatable = sorted({op for op in ops if any(u in op for u in _UNREPEATABLE_OPS)})
        if unrepeatable:
            return None, f"its pipeline has {', '.join(unrepeatable)}"
        return _hash_batches(data(global_batch_size, seed)), ""
    hashes = []
    for _ in range(2):
        keras.utils.set_random_seed(seed)
        hashes.append(_hash_batches(data(global_batch_size, seed)))
    if hashes[0] != hashes[1]:
        return None, "the factory gives different batches when built twice under the same seed"
    return hashes[0], ""


def _dataset_ops(dataset: tf.data.Dataset) -> set[str]:
    graph = tf.compat.v1.GraphDef()
    graph.ParseFromString(dataset._as_serialized_graph().numpy())  # noqa: SLF001
    ops = {node.op for node in graph.node}
    for function in graph.library.function:
        ops.update(node.op for node in function.node_def)
    return ops


def _hash_batches(batches: tf.data.Dataset) -> str:
    """The hash of the first global batches; one line when the data gives none or fails (read
    before anything is written, so a run dir is never begun on data that cannot train)."""
    digest, read = hashlib.sha256(), 0
    try:
        for batch in batches.take(FINGERPRINT_BATCHES):
            read += 1
            for tensor in tf.nest.flatten(batch):
                value = np.asarray(tensor)
                digest.update(f"{value.dtype}{value.shape}".encode())
                digest.update(np.ascontiguousarray(value).tobytes())
    except tf.errors.OpError as exc:
        raise DatasetError(
            f"data: reading its first batch failed ({op_error_cause(exc)}); fix the pipeline"
        ) from None
    if not read:
        raise DatasetError(
            "data: the dataset gives no batch (it holds no examples, or its filter drops them "
            "all); nothing was trained or written"
        )
    return digest.hexdigest()[:16]


def nonfinite_settings(settings: dict) -> list[str]:
    """``['constraint.weight=inf', ...]``: numeric settings that are NaN or infinite."""
    return [
        f"{key}={value!r}"
        for key, value in flat_settings(settings).items()
        if isinstance(value, float) and not np.isfinite(value)
    ]


def out_of_range_settings(settings: dict) -> list[str]:
    """``['critic_optimizer.learning_rate=-0.001 must be > 0', ...]``: optimizer settings out of
    their range (:func:`lipgan.core.ranges.out_of_range`; a schedule's rates included)."""
    bad = []
    for key, value in flat_settings(settings).items():
        leaf = key.rsplit(".", 1)[-1]
        if not key.endswith("_optimizer." + leaf) and ".learning_rate." not in key:
            continue
        rule = out_of_range(leaf, value)
        if rule:
            bad.append(f"{key}={value!r} must be {rule}")
    return bad


def check_ranges(settings: dict) -> None:
    """One-line :class:`ConfigError` for the first out-of-range setting (before anything is
    written)."""
    bad = out_of_range_settings(settings)
    if bad:
        raise ConfigError(bad[0])


def _model(spec, built, name: str) -> dict:
    return model_settings(getattr(built, name))


def _optimizer(spec, built, name: str) -> dict:
    return optimizer_settings(getattr(built.wgan, name))


def _data(spec, built, name: str) -> dict:
    return data_settings(built.data_factory, built.data_fingerprint()[0])


def _plugin(spec, built, name: str) -> dict:
    return plugin_settings(getattr(built, name))


def _value(spec, built, name: str):
    field = next(f for f in dataclasses.fields(spec) if f.name == name)
    return _plain(value_json(field, getattr(spec, name)))


#: How each kind of :class:`lipgan.run.spec.RunSpec` field is described for comparison.
SETTINGS_OF_KIND = {
    "data": _data,
    "model": _model,
    "plugin": _plugin,
    "strategy": _plugin,
    "optimizer": _optimizer,
    "value": _value,
}


def spec_settings(spec, built) -> dict:
    """Everything that decides what ``built``'s step computes, as canonical JSON-able data: one
    entry per recorded field of ``spec`` (:class:`lipgan.run.spec.RunSpec`), by its kind.

    Args:
        spec: the :class:`lipgan.run.spec.RunSpec` the trainer was built from.
        built: the :class:`lipgan.Trainer` built from it (its models, optimizers and data
            fingerprint: what the factories made).

    Returns:
        A dict of plain JSON values: data, models, constraint, strategy, optimizers, step
        config, intervals.

    Raises:
        ConfigError: a numeric setting is not a finite float32 number.
    """
    settings = {
        f.name: SETTINGS_OF_KIND[kind_of(f)](spec, built, f.name) for f in recorded_fields(spec)
    }
    bad = nonfinite_settings(settings)
    if bad:
        raise ConfigError(
            f"{bad[0]} is not a finite number (settings are float32, as Keras keeps them: "
            "at most 3.4e38); numeric settings must be finite"
        )
    return settings  # the optimizers' ranges: checked once, when the trainer is built
