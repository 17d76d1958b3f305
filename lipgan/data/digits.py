"""The UCI handwritten digits that ship inside scikit-learn, as the offline TFDS builder ``lipgan_digits``.

Why this exists: lipgan must train a *real* image GAN with no network (CI, air-gapped clusters).
scikit-learn carries the 1,797 8x8 UCI digits (Alpaydin & Kaynak) in its package data, so the
builder only reads a local file. The 8x8 images (values 0..16) are upsampled bilinearly to 32x32,
the size the DCGAN models expect, and stored as uint8 grayscale ``[32, 32, 1]`` with the label.
The split is a fixed permutation (seed 0): 1,497 train and 300 test images, identical everywhere.
"""

from __future__ import annotations

import numpy as np
import tensorflow_datasets as tfds

IMAGE_SIZE = 32
NUM_TEST = 300


def digit_images(size: int = IMAGE_SIZE) -> tuple[np.ndarray, np.ndarray]:
    """All 1,797 digits as uint8 ``[n, size, size, 1]`` (bilinear upsampling) and int64 labels."""
    import tensorflow as tf
    from sklearn.datasets import load_digits

    digits = load_digits()
    images = digits.images.astype(np.float32)[..., None] / 16.0  # [n, 8, 8, 1] in [0, 1]
    big = tf.image.resize(images, [size, size], method="bilinear").numpy()
    pixels = np.clip(np.round(big * 255.0), 0, 255).astype(np.uint8)
    return pixels, digits.target.astype(np.int64)


def split_indices(n: int) -> dict[str, np.ndarray]:
    """The fixed train/test split: a seed-0 permutation, the last ``NUM_TEST`` for test."""
    order = np.random.default_rng(0).permutation(n)
    return {"train": np.sort(order[:-NUM_TEST]), "test": np.sort(order[-NUM_TEST:])}


class LipganDigits(tfds.core.GeneratorBasedBuilder):
    """UCI handwritten digits from scikit-learn, 32x32 grayscale, generated locally (no download)."""

    VERSION = tfds.core.Version("1.0.0")
    RELEASE_NOTES = {"1.0.0": "sklearn load_digits, bilinear 8x8 -> 32x32, 1497 train / 300 test."}

    def _info(self) -> tfds.core.DatasetInfo:
        return self.dataset_info_from_configs(
            features=tfds.features.FeaturesDict(
                {
                    "image": tfds.features.Image(shape=(IMAGE_SIZE, IMAGE_SIZE, 1)),
                    "label": tfds.features.ClassLabel(num_classes=10),
                }
            ),
            supervised_keys=("image", "label"),
            homepage="https://archive.ics.uci.edu/dataset/80",
        )

    def _split_generators(self, dl_manager):
        del dl_manager  # nothing to download: the data is inside scikit-learn
        images, labels = digit_images()
        return {
            split: self._generate_examples(images[idx], labels[idx], idx)
            for split, idx in split_indices(len(images)).items()
        }

    def _generate_examples(self, images, labels, indices):
        for image, label, index in zip(images, labels, indices):
            yield int(index), {"image": image, "label": int(label)}
