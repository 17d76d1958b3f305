"""Data as people have it, turned into the ``tf.data.Dataset`` of float32 examples lipgan trains on.

:class:`lipgan.Trainer` accepts, besides a dataset name or a factory:

* a ``tf.data.Dataset`` of single examples, or an already batched one (it is unbatched: lipgan
  batches by ``global_batch_size`` itself, with static shapes);
* a dataset of dicts, as ``tfds.load(...)`` returns: the feature ``data_key`` is used (default:
  ``'image'`` when the dicts have one, else their only key);
* a NumPy array of examples (``[n, ...]``).

Dtypes are converted one way, the way lipgan's own pipelines do (``lipgan.data.pipeline``):
floats (float16/float64) are cast to float32 as they are. Integer data is taken as images whose
dtype's full range maps onto [-1, 1], the range of the generators' ``tanh`` output
(:data:`INTEGER_RANGES`): uint8 [0, 255] (``x / 127.5 - 1``), uint16 [0, 65535], int8
[-128, 127] and int16 [-32768, 32767]. Wider integers (int32, int64, uint32, uint64) have no
agreed range (NumPy makes int64 of any list of ints, whatever it holds), so they are refused with
one line that says how to cast them; so is anything else that is not numeric.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable

import numpy as np
import tensorflow as tf

from lipgan.core.errors import ConfigError

EXPECTED = (
    "expected a tf.data.Dataset (or NumPy array) of numeric examples [..., features], a dataset "
    "of dicts with data_key= naming the feature, a dataset name, or a factory "
    "(global_batch_size, seed) -> dataset"
)


def _is_batched(dataset: tf.data.Dataset, spec: tf.TensorSpec) -> bool:
    """A dataset made by ``.batch()``/``.padded_batch()`` (or whose leading dim is unknown)."""
    kind = type(dataset).__name__
    batched = "Batch" in kind and "Unbatch" not in kind
    return batched or (
        spec.shape.rank is not None and spec.shape.rank > 0 and spec.shape[0] is None
    )


def _select(spec, data_key: str | None):
    """The key to read from a dict element, or None for a plain tensor element."""
    if isinstance(spec, tf.TensorSpec):
        if data_key is not None:
            raise ConfigError(f"data_key={data_key!r} is for datasets of dicts; this one is not")
        return None
    if isinstance(spec, dict):
        keys = sorted(spec)
        if data_key is None:
            data_key = "image" if "image" in spec else (keys[0] if len(keys) == 1 else None)
        if data_key is None or data_key not in spec:
            raise ConfigError(
                f"data: a dataset of dicts with keys {keys}; pass data_key= naming the feature "
                "to train on (e.g. data_key='image')"
            )
        if not isinstance(spec[data_key], tf.TensorSpec):
            raise ConfigError(f"data[{data_key!r}] is not a tensor; {EXPECTED}")
        return data_key
    raise ConfigError(f"data: elements are {spec}; {EXPECTED}")


#: The integer dtypes taken as images, and the range of each that maps onto [-1, 1].
INTEGER_RANGES = {
    tf.uint8: (0, 255),
    tf.uint16: (0, 65535),
    tf.int8: (-128, 127),
    tf.int16: (-32768, 32767),
}


def _to_float32(x: tf.Tensor) -> tf.Tensor:
    if x.dtype.is_integer:  # the dtype's range -> [-1, 1], as lipgan.data.pipeline does for uint8
        low, high = INTEGER_RANGES[x.dtype]
        return (tf.cast(x, tf.float32) - low) * (2.0 / (high - low)) - 1.0
    return tf.cast(x, tf.float32)


def _check_dtype(dtype: tf.DType) -> None:
    if dtype == tf.bool or not (dtype.is_floating or dtype.is_integer):
        raise ConfigError(f"data: examples of dtype {dtype.name}; {EXPECTED}")
    if dtype.is_integer and dtype not in INTEGER_RANGES:
        raise ConfigError(
            f"data: examples of dtype {dtype.name} have no agreed range (lipgan maps uint8 "
            "[0, 255], uint16 [0, 65535], int8 [-128, 127] and int16 [-32768, 32767] onto "
            "[-1, 1]); cast them: images in [0, 255] to uint8 (x.astype('uint8'), "
            "tf.cast(x, tf.uint8)), anything else to float32 in the range to train in"
        )


def examples(data, data_key: str | None = None) -> tf.data.Dataset:
    """A dataset of unbatched float32 examples with a fully known shape, or one-line ConfigError."""
    if isinstance(data, np.ndarray):
        if data.ndim < 2:
            raise ConfigError(
                f"data: a NumPy array of shape {data.shape}; expected [num_examples, ...features]"
            )
        data = tf.data.Dataset.from_tensor_slices(data)
    if int(data.cardinality()) == 0:  # would end training's first step with OutOfRangeError
        raise ConfigError(f"data: the dataset holds no examples; {EXPECTED}")
    spec = data.element_spec
    key = _select(spec, data_key)
    if key is not None:
        spec = spec[key]
    batched = _is_batched(data, spec)
    if key is not None:
        data = data.map(lambda element: element[key])
    _check_dtype(spec.dtype)
    if batched:
        data = data.unbatch()
        spec = data.element_spec
    if spec.shape.rank is None or spec.shape.rank == 0 or not spec.shape.is_fully_defined():
        raise ConfigError(
            f"data: examples of shape {spec.shape}; lipgan needs examples of one known shape "
            "(e.g. [2] points or [32, 32, 3] images): resize or pad them in your pipeline"
        )
    if spec.dtype != tf.float32:
        data = data.map(_to_float32)
    return data


def data_factory(data, data_key: str | None = None) -> Callable:
    """``(global_batch_size, seed) -> tf.data.Dataset`` of global batches, from what the user gave
    (datasets of dicts, batched datasets, arrays and dtypes are adapted by :func:`examples`).

    :class:`lipgan.Trainer`'s ``data``, and a run dir's data snapshot
    (:mod:`lipgan.run.description`)."""
    if isinstance(data, str):
        from lipgan.data.pipeline import dataset

        return dataset(data)
    if isinstance(data, (tf.data.Dataset, np.ndarray)):
        given = data
        data = adapted = examples(given, data_key)

        def batches(global_batch_size: int, seed: int) -> tf.data.Dataset:
            # The caller's pipeline, as given: lipgan only repeats and batches it (static shapes).
            return adapted.repeat().batch(global_batch_size, drop_remainder=True)

        batches.settings = {
            "element_spec": str(
                given.element_spec if isinstance(given, tf.data.Dataset) else data.element_spec
            )
        }
        if data_key is not None:
            batches.settings["data_key"] = data_key
        batches.examples = adapted
        return batches
    if inspect.isgeneratorfunction(data) or inspect.isgenerator(data):
        raise ConfigError(
            f"data: {getattr(data, '__name__', 'a generator')} is a Python generator, not a "
            "factory (global_batch_size, seed) -> dataset; wrap it: "
            "tf.data.Dataset.from_generator(fn, output_signature=tf.TensorSpec([...], tf.float32))"
        )
    if callable(data):
        return _checked_factory(data)
    raise ConfigError(
        f"data must be a dataset name, a tf.data.Dataset or NumPy array of examples, or a factory "
        f"(global_batch_size, seed) -> dataset; got {type(data).__name__}"
    )


def _checked_factory(factory: Callable) -> Callable:
    """``factory`` with one-line errors when it takes other arguments or makes no dataset (its
    name, module and attributes kept: the run's settings name the factory)."""
    try:
        inspect.signature(factory).bind(1, 0)
    except TypeError:
        raise ConfigError(
            f"data: {getattr(factory, '__qualname__', factory)!r} is called as a factory "
            f"(global_batch_size, seed) -> dataset but does not take those two arguments; {EXPECTED}"
        ) from None
    except ValueError:
        pass  # no signature to check (a builtin): its call says

    @functools.wraps(factory)
    def checked(global_batch_size: int, seed: int) -> tf.data.Dataset:
        made = factory(global_batch_size, seed)
        if not isinstance(made, tf.data.Dataset):
            raise ConfigError(
                f"data: the factory {getattr(factory, '__qualname__', factory)!r} returned a "
                f"{type(made).__name__}, not a tf.data.Dataset; {EXPECTED}"
            )
        return made

    return checked
