"""The offline toy builders reproduce gan_toy.py's distributions; image pipelines run on mock data."""

import numpy as np
import pytest
import tensorflow as tf

from lipgan.core.errors import DatasetError
from lipgan.data import load_examples, mock_data
from lipgan.data.pipeline import dataset
from lipgan.data.toy import MODE_CENTERS, SAMPLERS


def nearest_center_distance(points, centers):
    d = np.linalg.norm(points[:, None, :] - centers[None], axis=-1)
    return d.min(axis=1), d.argmin(axis=1)


@pytest.mark.parametrize("name,std", [("8gaussians", 0.02 / 1.414), ("25gaussians", 0.05 / 2.828)])
def test_gaussian_mixtures_match_the_official_recipe(name, std):
    points = SAMPLERS[name](20000, np.random.default_rng(0))
    dist, idx = nearest_center_distance(points, MODE_CENTERS[name])
    counts = np.bincount(idx, minlength=len(MODE_CENTERS[name]))
    assert counts.min() > 0.8 * counts.mean()  # modes equally likely
    # A 2-D isotropic Gaussian's distance to its centre has mean std·√(π/2).
    assert dist.mean() == pytest.approx(std * np.sqrt(np.pi / 2), rel=0.03)
    if name == "8gaussians":
        assert np.linalg.norm(MODE_CENTERS[name], axis=1) == pytest.approx(2 / 1.414)


def test_swiss_roll_matches_sklearn_parametrization():
    points = SAMPLERS["swissroll"](20000, np.random.default_rng(0))
    r = np.linalg.norm(points, axis=1) * 7.5  # radius = t (plus noise) with t in [1.5π, 4.5π]
    assert r.min() > 1.5 * np.pi - 1.5 and r.max() < 4.5 * np.pi + 1.5
    assert np.quantile(r, 0.5) == pytest.approx(3 * np.pi, rel=0.05)


def test_toy_builder_generates_offline_and_loads():
    ds = load_examples("lipgan_toy/25gaussians")
    points = np.stack([x.numpy() for x in ds.take(500)])
    assert points.shape == (500, 2) and points.dtype == np.float32
    dist, _ = nearest_center_distance(points, MODE_CENTERS["25gaussians"])
    assert dist.max() < 0.2


def test_dataset_batches_with_static_shape_and_seeded_shuffle():
    make = dataset("lipgan_toy/8gaussians", shuffle_buffer=1000)
    a = make(32, seed=1)
    assert a.element_spec.shape.as_list() == [32, 2]
    first = [b.numpy() for b in a.take(2)]
    again = [b.numpy() for b in make(32, seed=1).take(2)]
    other = next(iter(make(32, seed=2))).numpy()
    np.testing.assert_array_equal(first[0], again[0])
    assert not np.array_equal(first[0], other)


@pytest.mark.parametrize("name,shape", [("cifar10", (32, 32, 3)), ("mnist", (32, 32, 1))])
def test_image_pipeline_on_mock_data(name, shape):
    with mock_data(num_examples=16):
        batch = next(iter(dataset(name, image_size=32)(8, seed=0)))
    assert tuple(batch.shape) == (8, *shape)
    assert batch.dtype == tf.float32
    assert -1.0 <= batch.numpy().min() and batch.numpy().max() <= 1.0


def test_missing_dataset_error_names_the_folder(tmp_path):
    with pytest.raises(DatasetError, match="tfds build mnist") as info:
        load_examples("mnist", data_dir=str(tmp_path), download=False)
    assert str(tmp_path) in str(info.value)
