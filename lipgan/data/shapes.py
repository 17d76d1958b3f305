"""Coloured shapes on coloured backgrounds, 32x32 RGB, as the offline TFDS builder ``lipgan_shapes``.

Why this exists: the CIFAR-10 path (``wgangp_cifar10.gin``, the image scores on FID's network,
``studies/cifar10/run.sh``) must run end to end where CIFAR-10 cannot be downloaded (CI, this
project's machines). ``tfds.testing.mock_data`` only works inside one process, while a study's
cells are processes of their own, and its pixels are i.i.d. noise with nothing to learn; this set
has CIFAR-10's shape and type (uint8 ``[32, 32, 3]``, a class label) and a structure a generator
can learn: one disc, square or ring of a random colour, size and position on a plain background
of another colour. It is generated from a fixed seed (identical everywhere) and stands in for
CIFAR-10 with ``--bind "dataset.name='lipgan_shapes'"``; it is not CIFAR-10, and no score on it
compares with a paper's.
"""

from __future__ import annotations

import numpy as np
import tensorflow_datasets as tfds

IMAGE_SIZE = 32
SHAPES = ("disc", "square", "ring")
NUM_TRAIN = 2000
NUM_TEST = 500


def shape_images(n: int, seed: int, size: int = IMAGE_SIZE) -> tuple[np.ndarray, np.ndarray]:
    """``n`` uint8 ``[n, size, size, 3]`` images and their int64 shape labels, from ``seed``."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, len(SHAPES), n)
    background = rng.uniform(0, 255, (n, 1, 1, 3))
    colour = rng.uniform(0, 255, (n, 1, 1, 3))
    radius = rng.uniform(0.15, 0.35, (n, 1, 1)) * size
    centre = rng.uniform(0.3, 0.7, (n, 2, 1, 1)) * size
    y, x = np.mgrid[0:size, 0:size] + 0.5
    dy, dx = y[None] - centre[:, 0], x[None] - centre[:, 1]
    distance = np.sqrt(dy**2 + dx**2)
    inside = np.select(
        [labels[:, None, None] == 0, labels[:, None, None] == 1],
        [distance <= radius, np.maximum(abs(dy), abs(dx)) <= radius],
        (distance <= radius) & (distance >= 0.6 * radius),
    )
    images = np.where(inside[..., None], colour, background)
    return np.clip(np.round(images), 0, 255).astype(np.uint8), labels.astype(np.int64)


class LipganShapes(tfds.core.GeneratorBasedBuilder):
    """Coloured discs, squares and rings, 32x32 RGB, generated locally (no download)."""

    VERSION = tfds.core.Version("1.0.0")
    RELEASE_NOTES = {"1.0.0": "2,000 train / 500 test, seeds 0 and 1."}

    def _info(self) -> tfds.core.DatasetInfo:
        return self.dataset_info_from_configs(
            features=tfds.features.FeaturesDict(
                {
                    "image": tfds.features.Image(shape=(IMAGE_SIZE, IMAGE_SIZE, 3)),
                    "label": tfds.features.ClassLabel(names=list(SHAPES)),
                }
            ),
            supervised_keys=("image", "label"),
        )

    def _split_generators(self, dl_manager):
        del dl_manager  # nothing to download: the images are drawn here
        return {
            "train": self._generate_examples(*shape_images(NUM_TRAIN, seed=0)),
            "test": self._generate_examples(*shape_images(NUM_TEST, seed=1)),
        }

    def _generate_examples(self, images, labels):
        for index, (image, label) in enumerate(zip(images, labels)):
            yield index, {"image": image, "label": int(label)}
