"""Offline image metrics: Fréchet distance, KID, and the feature extractors they run on.

Nothing here downloads anything. Two feature spaces:

* :func:`digits_features` — the penultimate layer of a small CNN trained on the
  ``lipgan_digits`` train split, whose weights ship with lipgan (:data:`SHIPPED_CLASSIFIER`: the
  same features on every machine, as FID's network; a per-machine training differed across
  CPUs), so a "Fréchet digits distance" is available with no network at all. Images of any size are resized to
  16x16 (antialiased, as the training pipeline does) before the classifier sees them.
* :func:`inception_features` — Keras' InceptionV3 pool features (2048-d), with weights read from a
  local file only. Note: Keras' InceptionV3 is not the 2015 TF graph used by the reference FID code,
  so its FID/KID values rank models consistently but are not comparable to published numbers.

Fréchet distance (Heusel et al. 2017) and KID (Bińkowski et al. 2018, cubic polynomial kernel,
unbiased MMD² averaged over random subsets) are computed by :mod:`lipgan.metrics.image_scores`, as
pytorch-fid and torch-fidelity compute them.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

import numpy as np

from lipgan.core.errors import ConfigError
from lipgan.metrics import image_scores

DIGITS_SIZE = 16
#: The digits classifier's weights, shipped (v3): trained once by :func:`train_digits_classifier`
#: on 2026-12-07 (Intel Xeon, TensorFlow 2.21.0, Keras 3.15.1), test accuracy 0.990. Before, each
#: data dir trained its own (v2), which differed across CPUs (docs/metrics.md).
SHIPPED_CLASSIFIER = Path(__file__).with_name("digits_classifier_v3.npz")
INCEPTION_SIZE = 299
INCEPTION_FILE = "inception_v3_weights_tf_dim_ordering_tf_kernels_notop.h5"


# -- distances ---------------------------------------------------------------------------------
# FID's and KID's reference computations live in lipgan.metrics.image_scores; these are the names
# the evaluation and the scripts have always used.
feature_stats = image_scores.feature_stats
frechet_distance_from_stats = image_scores.fid_from_stats
frechet_distance = image_scores.fid


def kid(features_a, features_b, num_subsets: int = 100, subset_size: int = 1000, seed: int = 0):
    """KID as torch-fidelity computes it (:func:`lipgan.metrics.image_scores.kid`), with the subset
    size capped at the smaller set so that an evaluation of a few hundred samples still gets one."""
    size = min(subset_size, len(features_a), len(features_b))
    if size < 2:
        raise ValueError(
            f"kid needs at least 2 examples per set, got {len(features_a)} and {len(features_b)}"
        )
    return image_scores.kid(
        features_a, features_b, subset_size=size, subsets=num_subsets, seed=seed
    )


# -- feature extractors ------------------------------------------------------------------------
def _batched(fn, images: np.ndarray, batch_size: int) -> np.ndarray:
    return np.concatenate(
        [np.asarray(fn(images[i : i + batch_size])) for i in range(0, len(images), batch_size)]
    )


def _resize(images, size: int):
    import tensorflow as tf

    images = tf.convert_to_tensor(images, tf.float32)
    if tuple(images.shape[1:3]) != (size, size):
        images = tf.clip_by_value(tf.image.resize(images, [size, size], antialias=True), -1.0, 1.0)
    return images


def real_digits(split: str = "train") -> tuple[np.ndarray, np.ndarray]:
    """The lipgan_digits images of ``split`` as float32 [-1, 1] ``[n, 32, 32, 1]``, and labels."""
    from lipgan.data.digits import digit_images, split_indices

    images, labels = digit_images()
    index = split_indices(len(images))[split]
    return images[index].astype(np.float32) / 127.5 - 1.0, labels[index]


def _classifier_model(seed: int = 0):
    """The digits classifier's architecture: two 3x3 convs with pooling, a 64-unit ``features``
    layer (the feature space of ``digits_fd``/``digits_kid``) and 10 ``logits``."""
    import keras

    init = lambda k: keras.initializers.GlorotUniform(seed=seed + k)  # noqa: E731
    return keras.Sequential(
        [
            keras.Input((DIGITS_SIZE, DIGITS_SIZE, 1)),
            keras.layers.Conv2D(
                32, 3, padding="same", activation="relu", kernel_initializer=init(0)
            ),
            keras.layers.MaxPooling2D(),
            keras.layers.Conv2D(
                64, 3, padding="same", activation="relu", kernel_initializer=init(1)
            ),
            keras.layers.MaxPooling2D(),
            keras.layers.Flatten(),
            keras.layers.Dense(64, activation="relu", name="features", kernel_initializer=init(2)),
            keras.layers.Dense(10, name="logits", kernel_initializer=init(3)),
        ],
        name="digits_classifier",
    )


def train_digits_classifier(seed: int = 0):
    """Train the feature classifier with its own seeds only (no global RNG is touched): the
    recipe of the shipped weights (:data:`SHIPPED_CLASSIFIER`). Returns (model, test accuracy).

    Deterministic on one machine (two trainings give bit-identical weights), not across CPUs:
    two CPUs' float reductions differ, and 15 epochs carry the difference into weights whose
    features move scores by a few per cent (docs/metrics.md). Hence the shipped weights."""
    import keras
    import tensorflow as tf

    x_train, y_train = real_digits("train")
    x_test, y_test = real_digits("test")
    x_train, x_test = _resize(x_train, DIGITS_SIZE), _resize(x_test, DIGITS_SIZE)
    model = _classifier_model(seed)
    model.compile(
        optimizer=keras.optimizers.Adam(1e-3),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    batches = (
        tf.data.Dataset.from_tensor_slices((x_train, y_train))
        .shuffle(len(y_train), seed=seed, reshuffle_each_iteration=True)
        .batch(64)
    )
    model.fit(batches, epochs=15, verbose=0, shuffle=False)  # the dataset shuffles, seeded
    accuracy = float(model.evaluate(x_test, y_test, verbose=0)[1])
    return model, accuracy


def write_classifier(model, accuracy: float, path: Path) -> None:
    """Save ``model``'s weights and test accuracy as the ``.npz`` :func:`digits_classifier` reads
    (``python -m lipgan.metrics.images --write-classifier PATH`` trains and writes one)."""
    arrays = {f"w{i}": w for i, w in enumerate(model.get_weights())}
    tmp = Path(path).with_suffix(".tmp.npz")
    np.savez_compressed(tmp, test_accuracy=np.float64(accuracy), **arrays)
    os.replace(tmp, path)


@functools.cache
def _shipped_weights() -> tuple[list[np.ndarray], float]:
    """The weights and test accuracy in :data:`SHIPPED_CLASSIFIER`, read once per process (every
    evaluation of a digits run builds the classifier)."""
    with np.load(SHIPPED_CLASSIFIER) as stored:
        weights = [stored[f"w{i}"] for i in range(len(stored.files) - 1)]
        return weights, float(stored["test_accuracy"])


def digits_classifier(data_dir: str | None = None, min_accuracy: float = 0.9):
    """The digits classifier of :data:`SHIPPED_CLASSIFIER`: fixed weights, the same on every
    machine, as FID's network is (``data_dir`` is accepted for older callers and not used).

    Its test-split accuracy is stored with it (``model.test_accuracy``); a classifier below
    ``min_accuracy`` is refused, since its features would not measure digit quality.
    """
    weights, accuracy = _shipped_weights()
    if accuracy < min_accuracy:
        raise RuntimeError(f"digits classifier reached only {accuracy:.3f} test accuracy")
    model = _classifier_model()
    model.set_weights(weights)
    model.test_accuracy = accuracy
    return model


def digits_features(images: np.ndarray, classifier, batch_size: int = 500) -> np.ndarray:
    """Penultimate-layer (64-d) features of ``[n, h, w, 1]`` images in [-1, 1]."""
    import keras

    extractor = keras.Model(classifier.inputs, classifier.get_layer("features").output)
    return _batched(
        lambda x: extractor(_resize(x, DIGITS_SIZE), training=False), images, batch_size
    )


def digits_logits(images: np.ndarray, classifier, batch_size: int = 500) -> np.ndarray:
    """The classifier's 10 logits of ``[n, h, w, 1]`` images in [-1, 1] (a digits Inception Score)."""
    return _batched(
        lambda x: classifier(_resize(x, DIGITS_SIZE), training=False), images, batch_size
    )


def frechet_digits_distance(
    images: np.ndarray, data_dir: str | None = None, split: str = "train"
) -> float:
    """Fréchet distance between ``images`` and the real digits of ``split`` in classifier features."""
    classifier = digits_classifier(data_dir)
    real, _ = real_digits(split)
    return frechet_distance(digits_features(real, classifier), digits_features(images, classifier))


def load_inception(weights_path: str | os.PathLike | None):
    """InceptionV3 without its top (2048-d average-pooled features), weights from a local file only."""
    if not weights_path or not Path(weights_path).is_file():
        raise ConfigError(
            f"Inception weights not found at {weights_path!r}; lipgan never downloads at run time: "
            f"fetch {INCEPTION_FILE} (keras.applications.InceptionV3(include_top=False) stores it in "
            "~/.keras/models/) where there is network and pass its path"
        )
    import keras

    model = keras.applications.InceptionV3(
        include_top=False,
        weights=None,
        pooling="avg",
        input_shape=(INCEPTION_SIZE, INCEPTION_SIZE, 3),
    )
    try:
        model.load_weights(str(weights_path))
    except (ValueError, OSError) as exc:
        raise ConfigError(f"cannot load Inception weights from {weights_path}: {exc}") from None
    return model


def inception_features(images: np.ndarray, model, batch_size: int = 50) -> np.ndarray:
    """2048-d features of ``[n, h, w, 1 or 3]`` images in [-1, 1] (InceptionV3's own input range)."""
    import tensorflow as tf

    def run(x):
        x = tf.image.resize(tf.convert_to_tensor(x, tf.float32), [INCEPTION_SIZE, INCEPTION_SIZE])
        if x.shape[-1] == 1:
            x = tf.tile(x, [1, 1, 1, 3])
        return model(x, training=False)

    return _batched(run, images, batch_size)


def class_metrics(fake: np.ndarray, classifier) -> dict:
    """Class coverage and reverse KL of the predicted class histogram of generated digits.

    The Stacked-MNIST way of counting modes (Metz et al. 2017; PacGAN §5): a pretrained classifier
    labels every sample; a class is covered when at least one sample is assigned to it; the reverse
    KL is KL(p_fake || uniform over 10 classes), 0 for a balanced generator, log 10 for one class.
    """
    logits = _batched(lambda x: classifier(_resize(x, DIGITS_SIZE), training=False), fake, 500)
    counts = np.bincount(np.argmax(logits, axis=-1), minlength=10)
    p = counts / counts.sum()
    nz = p > 0
    return {
        "classes_covered": int(nz.sum()),
        "num_classes": 10,
        "class_reverse_kl": float(np.sum(p[nz] * np.log(p[nz] * 10))),
    }


if __name__ == "__main__":  # python -m lipgan.metrics.images --write-classifier PATH
    import sys

    if sys.argv[1:2] != ["--write-classifier"] or len(sys.argv) != 3:
        sys.exit("usage: python -m lipgan.metrics.images --write-classifier PATH")
    model, accuracy = train_digits_classifier()
    write_classifier(model, accuracy, Path(sys.argv[2]))
    print(f"wrote {sys.argv[2]}: test accuracy {accuracy:.4f}")
