"""Image input pipelines: TFDS image sets under mock data, and the real offline digits builder."""

import numpy as np
import pytest
import tensorflow as tf

from lipgan.core.errors import DatasetError
from lipgan.data import load_examples, mock_data, pipeline
from lipgan.data.digits import NUM_TEST, digit_images, split_indices


@pytest.mark.parametrize(
    "name, shape",
    [
        ("mnist", (32, 32, 1)),
        ("fashion_mnist", (32, 32, 1)),
        ("cifar10", (32, 32, 3)),
        ("celeb_a", (64, 64, 3)),
    ],
)
def test_image_sets_batch_to_model_shape_in_range(name, shape):
    with mock_data(num_examples=16):
        make = pipeline.dataset(name, shuffle_buffer=16)
        batch = next(iter(make(8, seed=0)))
    assert batch.shape == (8, *shape)
    assert batch.dtype == tf.float32
    x = batch.numpy()
    assert x.min() >= -1.0 and x.max() <= 1.0
    assert x.std() > 0.1  # random mock pixels, not a constant image


def test_image_size_binding_overrides_the_default():
    with mock_data(num_examples=8):
        batch = next(iter(pipeline.dataset("cifar10", image_size=16)(4, seed=0)))
    assert batch.shape == (4, 16, 16, 3)


def test_center_crop_takes_the_middle_square():
    image = tf.reshape(tf.range(6 * 4, dtype=tf.int32), [6, 4, 1])
    crop = pipeline._center_crop(image, 2).numpy()[..., 0]
    np.testing.assert_array_equal(crop, [[9, 10], [13, 14]])


def test_pixels_map_to_minus_one_and_one():
    x = tf.constant([[[0], [255]]], dtype=tf.uint8)
    np.testing.assert_allclose(pipeline._to_float(x, None).numpy().ravel(), [-1.0, 1.0])


def test_shuffle_is_seeded_and_batches_have_static_shape():
    with mock_data(num_examples=32):
        make = pipeline.dataset("mnist", shuffle_buffer=32)
        a = next(iter(make(8, seed=3))).numpy()
        b = next(iter(make(8, seed=3))).numpy()
        c = next(iter(make(8, seed=4))).numpy()
        spec = make(8, seed=3).element_spec
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    assert spec.shape == (8, 32, 32, 1)  # drop_remainder: static batch dimension


def test_auto_cache_only_when_it_fits(monkeypatch):
    spec_ds = tf.data.Dataset.from_tensors(tf.zeros([64, 64, 3]))
    assert pipeline._fits_in_memory(spec_ds, 1000)
    assert not pipeline._fits_in_memory(spec_ds, 162_770)  # CelebA at 64x64 in float32: 8 GB
    assert not pipeline._fits_in_memory(spec_ds, None)


def test_bad_cache_value_is_rejected():
    with pytest.raises(ValueError, match="dataset.cache"):
        pipeline.dataset("mnist", cache="yes")


def test_missing_dataset_names_it_the_dir_and_tfds_build(tmp_path):
    with pytest.raises(DatasetError) as info:
        load_examples("cifar10", data_dir=str(tmp_path), download=False)
    message = str(info.value)
    assert "\n" not in message
    assert "'cifar10'" in message and str(tmp_path) in message and "tfds build cifar10" in message


def test_missing_dataset_uses_tfds_data_dir_env(tmp_path, monkeypatch):
    monkeypatch.setenv("TFDS_DATA_DIR", str(tmp_path))
    with pytest.raises(DatasetError, match=str(tmp_path)):
        load_examples("mnist")


def test_digits_split_is_fixed_and_disjoint():
    first, again = split_indices(1797), split_indices(1797)
    assert len(first["test"]) == NUM_TEST and len(first["train"]) == 1797 - NUM_TEST
    assert not set(first["train"]) & set(first["test"])
    np.testing.assert_array_equal(first["test"], again["test"])


@pytest.mark.slow
def test_digits_builder_builds_real_images_offline(tmp_path):
    images, labels = digit_images()
    assert images.shape == (1797, 32, 32, 1) and images.dtype == np.uint8
    assert set(labels) == set(range(10))
    train = np.stack(
        list(load_examples("lipgan_digits", data_dir=str(tmp_path)).as_numpy_iterator())
    )
    assert train.shape == (1797 - NUM_TEST, 32, 32, 1)
    assert train.min() == -1.0 and train.max() == 1.0
    # the stored images are exactly the sklearn digits of the train split, in some order
    expected = images[split_indices(1797)["train"]].astype(np.float32) / 127.5 - 1.0
    np.testing.assert_allclose(
        np.sort(train.reshape(len(train), -1).sum(1)),
        np.sort(expected.reshape(len(expected), -1).sum(1)),
        rtol=1e-5,
    )
    # a "0" has an empty centre and ink around it; the class mean shows it
    zero = images[labels == 0].mean(0)[..., 0]
    assert zero[14:18, 14:18].mean() < zero[4:28, 4:28].mean()
    test = list(load_examples("lipgan_digits", split="test", data_dir=str(tmp_path), image_size=16))
    assert len(test) == NUM_TEST and test[0].shape == (16, 16, 1)
