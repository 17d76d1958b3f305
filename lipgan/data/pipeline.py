"""Loading any TFDS dataset as a stream of float32 examples, offline.

Builders that lipgan ships (``OFFLINE_BUILDERS``) are generated on first use. Any other dataset must
already be prepared in ``data_dir``; otherwise :class:`DatasetError` says how to prepare it. Under
:func:`mock_data` the whole pipeline runs on ``tfds.testing.mock_data`` random examples instead.
"""

from __future__ import annotations

import contextlib
import contextvars
import importlib
import os

import tensorflow as tf
import tensorflow_datasets as tfds

from lipgan.errors import DatasetError

#: TFDS builder name -> module that defines it; these build locally, without network.
OFFLINE_BUILDERS = {"lipgan_toy": "lipgan.data.toy", "lipgan_digits": "lipgan.data.digits"}

_MOCKING = contextvars.ContextVar("lipgan_mock_data", default=False)


@contextlib.contextmanager
def mock_data(num_examples: int = 64):
    """Run data loading on random examples shaped like the real dataset (no files needed)."""
    token = _MOCKING.set(True)
    try:
        with tfds.testing.mock_data(num_examples=num_examples, policy=tfds.testing.MockPolicy.USE_CODE):
            yield
    finally:
        _MOCKING.reset(token)


def _builder(name: str, data_dir: str | None):
    base = name.split("/")[0].split(":")[0]
    if base in OFFLINE_BUILDERS:
        importlib.import_module(OFFLINE_BUILDERS[base])
    try:
        return tfds.builder(name, data_dir=data_dir, try_gcs=False)
    except tfds.core.registered.DatasetNotFoundError:
        raise DatasetError(
            f"unknown dataset {name!r}: not a TFDS dataset nor one of lipgan's "
            f"({', '.join(OFFLINE_BUILDERS)}); check dataset.name"
        ) from None
    except ValueError as exc:  # e.g. an unknown builder config
        raise DatasetError(f"dataset {name!r}: {str(exc).splitlines()[0]}") from None


def _prepare(builder, name: str) -> None:
    if builder.is_prepared():
        return
    if builder.name in OFFLINE_BUILDERS:
        builder.download_and_prepare()
        return
    raise DatasetError(
        f"dataset {name!r} is not prepared in {builder.data_dir_root}; lipgan never downloads "
        f"at run time: run `tfds build {name.split(':')[0]} --data_dir DIR` where there is network, "
        "then set dataset.data_dir (or TFDS_DATA_DIR) to DIR, or try the pipeline with --mock-data"
    )


def _to_float(image_or_points: tf.Tensor, image_size: int | None) -> tf.Tensor:
    x = image_or_points
    if x.dtype == tf.uint8:  # images: [0, 255] -> [-1, 1]
        x = tf.cast(x, tf.float32) / 127.5 - 1.0
        if image_size is not None and x.shape[0] != image_size:
            x = tf.image.resize(x, [image_size, image_size], antialias=True)
        return x
    return tf.cast(x, tf.float32)


def load_examples(
    name: str,
    split: str = "train",
    data_dir: str | None = None,
    feature: str | None = None,
    image_size: int | None = None,
) -> tf.data.Dataset:
    """Unbatched float32 examples of ``name``; images scaled to [-1, 1] and optionally resized."""
    data_dir = data_dir or os.environ.get("TFDS_DATA_DIR")
    builder = _builder(name, data_dir)
    if not _MOCKING.get():
        _prepare(builder, name)
    keys = list(builder.info.features.keys())
    key = feature or ("image" if "image" in keys else "x" if "x" in keys else keys[0])
    if key not in keys:
        raise DatasetError(f"dataset {name!r} has no feature {key!r}; it has {', '.join(keys)}")
    try:
        ds = builder.as_dataset(split=split, shuffle_files=False)
    except ValueError as exc:
        raise DatasetError(f"dataset {name!r}: {str(exc).splitlines()[0]}") from None
    return ds.map(
        lambda ex: _to_float(ex[key], image_size), num_parallel_calls=tf.data.AUTOTUNE
    )


def dataset(
    name: str,
    split: str = "train",
    data_dir: str | None = None,
    feature: str | None = None,
    image_size: int | None = None,
    shuffle_buffer: int = 10_000,
    cache: bool = True,
):
    """Gin-facing description of the training data (``train.dataset = @dataset()``).

    Returns a function ``(global_batch_size, seed) -> tf.data.Dataset`` of batched, shuffled, repeated
    examples with static shapes, so that the engine decides batch size and seed in one place.
    """

    def make(global_batch_size: int, seed: int) -> tf.data.Dataset:
        ds = load_examples(name, split, data_dir, feature, image_size)
        if cache:
            ds = ds.cache()
        ds = ds.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True).repeat()
        return ds.batch(global_batch_size, drop_remainder=True).prefetch(tf.data.AUTOTUNE)

    make.dataset_name = name
    return make
