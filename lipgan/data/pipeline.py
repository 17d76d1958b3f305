"""Loading any TFDS dataset as a stream of float32 examples, offline.

Builders that lipgan ships (``OFFLINE_BUILDERS``) are generated on first use. Any other dataset must
already be prepared in ``data_dir``; otherwise :class:`DatasetError` says how to prepare it. Under
:func:`mock_data` the whole pipeline runs on ``tfds.testing.mock_data`` random examples instead.
"""

from __future__ import annotations

import contextlib
import contextvars
import importlib
import io
import os
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows: no cross-process lock; concurrent first builds are then unsafe
    fcntl = None

import tensorflow as tf
import tensorflow_datasets as tfds

from lipgan.core.errors import DatasetError, first_line

#: TFDS builder name -> module that defines it; these build locally, without network.
OFFLINE_BUILDERS = {
    "lipgan_toy": "lipgan.data.toy",
    "lipgan_digits": "lipgan.data.digits",
    "lipgan_shapes": "lipgan.data.shapes",
}

_MOCKING = contextvars.ContextVar("lipgan_mock_data", default=False)


@contextlib.contextmanager
def mock_data(num_examples: int = 64):
    """Run data loading on random examples shaped like the real dataset (no files needed)."""
    token = _MOCKING.set(True)
    try:
        with tfds.testing.mock_data(
            num_examples=num_examples, policy=tfds.testing.MockPolicy.USE_CODE
        ):
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
        raise DatasetError(f"dataset {name!r}: {_builder_error(name, exc)}") from None


def _builder_error(name: str, exc: ValueError) -> str:
    """TFDS's message, or for an unknown config the configs there are (TFDS's list is cut off)."""
    base, _, config = name.split(":")[0].partition("/")
    try:
        configs = [c.name for c in tfds.builder_cls(base).BUILDER_CONFIGS]
    except Exception:  # noqa: BLE001 - no config list to offer: fall back to TFDS's own words
        configs = []
    if config and configs and config not in configs:
        return f"no config {config!r}; {base} has {', '.join(configs)}"
    return first_line(exc)


def check_data_dir(data_dir: str | None) -> None:
    """Raise :class:`DatasetError` unless ``data_dir`` is (or can be created as) a directory."""
    if not data_dir:
        return
    path = Path(data_dir)
    if path.exists() and not path.is_dir():
        raise DatasetError(
            f"dataset.data_dir={data_dir!r} is a file, not a directory; point it (or "
            "TFDS_DATA_DIR) at the folder that holds the prepared datasets"
        )
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DatasetError(
            f"dataset.data_dir={data_dir!r} cannot be created ({exc.strerror or exc}); point it "
            "(or TFDS_DATA_DIR) at a writable folder"
        ) from None


def _prepare(builder, name: str, download: bool = True):
    """Return a prepared builder: lipgan's own datasets are built on first use; any other is
    downloaded and prepared by TFDS when ``download`` (as ``tfds.load`` does), else a one-line
    error says how to prepare it."""
    if builder.is_prepared():
        return builder
    if builder.name in OFFLINE_BUILDERS:
        return _prepare_offline(builder, name)
    how = (
        f"run `tfds build {name.split(':')[0]} --data_dir DIR` where there is network, copy DIR "
        "here and set dataset.data_dir (or TFDS_DATA_DIR) to it, or try the pipeline with --mock-data"
    )
    if not download:
        raise DatasetError(
            f"dataset {name!r} is not prepared in {builder.data_dir_root} and dataset.download is "
            f"False: {how}"
        )
    return _download(
        builder, name, f"dataset {name!r} is not prepared in {builder.data_dir_root}", how
    )


#: How often a failing URL is retried. TFDS's own default (10, with exponential backoff) keeps a
#: machine without network waiting about 3.5 minutes per file before it says so.
DOWNLOAD_RETRIES = 2
#: Seconds to wait for a download host to accept a connection before calling it unreachable.
CONNECT_TIMEOUT = 5.0


def _unreachable_host(builder) -> str | None:
    """The first host of the builder's registered download URLs that does not answer, if any.

    A quick check before TFDS starts its downloads, so that a machine without network fails in
    seconds; builders that register no URLs (no checksums file) are not checked here.
    """
    import socket
    from urllib.parse import urlsplit

    try:
        urls = list(builder.url_infos or ())
    except Exception:  # noqa: BLE001 - a builder without a checksums file: nothing to check
        return None
    hosts = {
        (u.hostname, u.port or (80 if u.scheme == "http" else 443))
        for u in map(urlsplit, urls)
        if u.hostname
    }
    for host, port in sorted(hosts):
        try:
            socket.create_connection((host, port), timeout=CONNECT_TIMEOUT).close()
        except OSError as exc:
            return f"{host}: {exc.strerror or type(exc).__name__}"
    return None


def _download(builder, name: str, where: str, how: str):
    """Download and prepare a public dataset with TFDS (and its progress bars), failing fast."""
    from tensorflow_datasets.core.download import downloader

    unreachable = _unreachable_host(builder)
    if unreachable:
        raise DatasetError(f"{where} and cannot be downloaded ({unreachable}): {how}")
    retries, downloader.MAX_RETRIES = downloader.MAX_RETRIES, DOWNLOAD_RETRIES
    try:
        builder.download_and_prepare()
    except Exception as exc:  # noqa: BLE001 - network, HTTP, checksum and disk errors alike
        reason = next((ln for ln in str(exc).splitlines() if ln.strip()), type(exc).__name__)
        raise DatasetError(f"{where} and could not be downloaded ({reason[:200]}): {how}") from None
    finally:
        downloader.MAX_RETRIES = retries
    return _builder(name, str(builder.data_dir_root))


def _prepare_offline(builder, name: str):
    """Generate one of lipgan's own datasets once, even when several processes ask at the same time.

    The workers of a multi-worker run (or parallel tests) may share a data_dir, and TFDS's writer is
    not safe against a concurrent one. An exclusive lock file in the data_dir serializes them; whoever
    gets the lock second finds the data prepared. The builder is re-created afterwards, since one
    made before preparation carries empty split metadata.
    """
    root = Path(builder.data_dir_root)
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f".lipgan-{builder.name}.lock", "w") as lock:
        if fcntl is not None:
            fcntl.flock(lock, fcntl.LOCK_EX)
        fresh = _builder(name, str(root))
        if not fresh.is_prepared():
            # TFDS prints download banners and progress bars meant for real downloads; a local
            # build of a few seconds should not flood the run's output (or a test's).
            chatter = io.StringIO()
            with contextlib.redirect_stdout(chatter), contextlib.redirect_stderr(chatter):
                fresh.download_and_prepare()
            fresh = _builder(name, str(root))
    return fresh


#: Per-dataset defaults used when the gin binding leaves them unset: the image sizes the shipped
#: models expect (DCGAN 32x32 for the 28x28 and 32x32 sets; 64x64 CelebA from the usual 108x108
#: centre crop of the 218x178 aligned faces, as in DCGAN/WGAN-GP CelebA experiments).
IMAGE_DEFAULTS = {
    "mnist": {"image_size": 32},
    "fashion_mnist": {"image_size": 32},
    "cifar10": {"image_size": 32},
    "celeb_a": {"image_size": 64, "center_crop": 108},
    "lipgan_digits": {"image_size": 32},
    "lipgan_shapes": {"image_size": 32},
}

#: ``cache="auto"`` keeps decoded float32 examples in memory only below this size.
CACHE_LIMIT_BYTES = 2 << 30


def _base_name(name: str) -> str:
    return name.split("/")[0].split(":")[0]


def _center_crop(x: tf.Tensor, size: int) -> tf.Tensor:
    h, w = x.shape[0], x.shape[1]
    size = min(size, h, w)
    top, left = (h - size) // 2, (w - size) // 2
    return x[top : top + size, left : left + size]


def _to_float(image_or_points: tf.Tensor, image_size: int | None, center_crop: int | None = None):
    x = image_or_points
    if x.dtype == tf.uint8:  # images: [0, 255] -> [-1, 1]
        if center_crop:
            x = _center_crop(x, center_crop)
        x = tf.cast(x, tf.float32) / 127.5 - 1.0
        if image_size is not None and (x.shape[0], x.shape[1]) != (image_size, image_size):
            x = tf.image.resize(x, [image_size, image_size], antialias=True)
            x = tf.clip_by_value(x, -1.0, 1.0)  # antialiased kernels overshoot slightly
        return x
    return tf.cast(x, tf.float32)


def load_examples(
    name: str,
    split: str = "train",
    data_dir: str | None = None,
    feature: str | None = None,
    image_size: int | None = None,
    center_crop: int | None = None,
    download: bool = True,
) -> tf.data.Dataset:
    """Unbatched float32 examples of ``name``; images scaled to [-1, 1], optionally centre-cropped
    to a ``center_crop`` square and resized to ``image_size`` (defaults: :data:`IMAGE_DEFAULTS`).
    A public dataset that is not prepared yet is downloaded when ``download`` (as ``tfds.load``)."""
    data_dir = data_dir or os.environ.get("TFDS_DATA_DIR")
    check_data_dir(data_dir)
    builder = _builder(name, data_dir)
    defaults = IMAGE_DEFAULTS.get(_base_name(name), {})
    image_size = image_size if image_size is not None else defaults.get("image_size")
    center_crop = center_crop if center_crop is not None else defaults.get("center_crop")
    if not _MOCKING.get():
        builder = _prepare(builder, name, download)
    keys = list(builder.info.features.keys())
    key = feature or ("image" if "image" in keys else "x" if "x" in keys else keys[0])
    if key not in keys:
        raise DatasetError(f"dataset {name!r} has no feature {key!r}; it has {', '.join(keys)}")
    try:
        ds = builder.as_dataset(split=split, shuffle_files=False)
    except ValueError as exc:
        raise DatasetError(f"dataset {name!r}: {first_line(exc)}") from None
    return ds.map(
        lambda ex: _to_float(ex[key], image_size, center_crop), num_parallel_calls=tf.data.AUTOTUNE
    )


def _fits_in_memory(ds: tf.data.Dataset, num_examples: int | None) -> bool:
    per_example = ds.element_spec.shape.num_elements()
    if not num_examples or per_example is None:
        return False  # unknown size: caching is not worth the risk
    return num_examples * per_example * 4 <= CACHE_LIMIT_BYTES


def num_examples(factory) -> int | None:
    """Examples in one epoch of a :func:`dataset` factory's split (distinct examples, in a
    shuffled order, are the first that many of its stream); None for other data."""
    settings = getattr(factory, "settings", None)
    if not isinstance(settings, dict) or "split" not in settings:
        return None
    return _num_examples(settings["name"], settings["split"], getattr(factory, "data_dir", None))


def _num_examples(name: str, split: str, data_dir: str | None) -> int | None:
    builder = _builder(name, data_dir or os.environ.get("TFDS_DATA_DIR"))
    try:
        return int(builder.info.splits[split].num_examples)
    except (KeyError, ValueError):
        return None


def dataset(
    name: str,
    split: str = "train",
    data_dir: str | None = None,
    feature: str | None = None,
    image_size: int | None = None,
    center_crop: int | None = None,
    shuffle_buffer: int = 10_000,
    cache: bool | str = "auto",
    download: bool = True,
):
    """Gin-facing description of the training data (``train.data = @dataset()``).

    Returns a function ``(global_batch_size, seed) -> tf.data.Dataset`` of batched, shuffled, repeated
    examples with static shapes, so that the engine decides batch size and seed in one place.

    ``cache="auto"`` keeps the decoded examples in memory when they take at most
    :data:`CACHE_LIMIT_BYTES` (CIFAR-10, MNIST, digits; not 64x64 CelebA). Sharding across workers is
    not done here: ``WGAN.distribute`` gives every replica its rows of each *global* batch, so the
    batches are the same whatever the number of workers.

    ``download`` (default True, as in ``tfds.load``): a public dataset that is not prepared in
    ``data_dir`` is downloaded and prepared there on first use, with TFDS's progress bars; without
    network it fails within seconds with a one-line error that says how to prepare it elsewhere.
    """
    if cache not in (True, False, "auto"):
        raise ValueError(f"dataset.cache must be True, False or 'auto', got {cache!r}")
    if (
        isinstance(shuffle_buffer, bool)
        or not isinstance(shuffle_buffer, int)
        or shuffle_buffer < 1
    ):
        raise ValueError(
            f"dataset.shuffle_buffer must be an integer >= 1 (examples held for shuffling), got "
            f"{shuffle_buffer!r}"
        )

    def make(global_batch_size: int, seed: int) -> tf.data.Dataset:
        ds = load_examples(name, split, data_dir, feature, image_size, center_crop, download)
        if cache is True or (
            cache == "auto" and _fits_in_memory(ds, _num_examples(name, split, data_dir))
        ):
            ds = ds.cache()
        ds = ds.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True).repeat()
        return ds.batch(global_batch_size, drop_remainder=True).prefetch(tf.data.AUTOTUNE)

    make.dataset_name = name
    make.data_dir = data_dir
    # What decides the examples and their order (the run dir's settings record); not where they
    # are stored, so a run may resume with its data prepared elsewhere.
    make.settings = {
        "name": name,
        "split": split,
        "feature": feature,
        "image_size": image_size,
        "center_crop": center_crop,
        "shuffle_buffer": shuffle_buffer,
        "cache": cache,
    }
    return make
