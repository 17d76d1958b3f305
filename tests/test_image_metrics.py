"""Fréchet distance, KID, the cached digits classifier, and local-only Inception weights."""

import numpy as np
import pytest

from lipgan.core.errors import ConfigError
from lipgan.metrics import image_scores
from lipgan.metrics import images as m


def test_frechet_matches_the_closed_form_for_diagonal_gaussians():
    mu1, mu2 = np.array([0.0, 1.0, 2.0]), np.array([1.0, 1.0, 0.0])
    s1, s2 = np.array([1.0, 4.0, 9.0]), np.array([4.0, 1.0, 1.0])
    expected = np.sum((mu1 - mu2) ** 2) + np.sum((np.sqrt(s1) - np.sqrt(s2)) ** 2)
    got = m.frechet_distance_from_stats(mu1, np.diag(s1), mu2, np.diag(s2))
    assert got == pytest.approx(expected, rel=1e-9)


def test_frechet_of_rotated_covariances():
    # same spectrum, different axes: tr(sqrt(S1 S2)) differs from the diagonal case
    rot = np.array([[np.cos(0.7), -np.sin(0.7)], [np.sin(0.7), np.cos(0.7)]])
    s1 = np.diag([1.0, 4.0])
    s2 = rot @ s1 @ rot.T
    import scipy.linalg

    reference = np.trace(s1 + s2 - 2 * scipy.linalg.sqrtm(s1 @ s2).real)
    assert m.frechet_distance_from_stats(np.zeros(2), s1, np.zeros(2), s2) == pytest.approx(
        reference
    )
    assert reference > 0.1


def test_frechet_on_samples_is_zero_for_the_same_set_and_grows_with_shift():
    x = np.random.default_rng(0).standard_normal((2000, 4))
    assert m.frechet_distance(x, x) == pytest.approx(0.0, abs=1e-8)
    assert m.frechet_distance(x, x + [3.0, 0, 0, 0]) == pytest.approx(9.0, rel=1e-6)


def test_kid_matches_a_brute_force_unbiased_mmd():
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((6, 3)), rng.standard_normal((5, 3)) + 0.5

    def k(a, b):
        return (a @ b / 3 + 1) ** 3

    xx = sum(k(x[i], x[j]) for i in range(6) for j in range(6) if i != j) / 30
    yy = sum(k(y[i], y[j]) for i in range(5) for j in range(5) if i != j) / 20
    xy = sum(k(a, b) for a in x for b in y) / 30
    assert image_scores.mmd2_unbiased(x, y) == pytest.approx(xx + yy - 2 * xy)


def test_kid_is_near_zero_for_one_distribution_and_positive_otherwise():
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((1000, 8)), rng.standard_normal((1000, 8))
    same_mean, same_std = m.kid(a, b, num_subsets=20, subset_size=200)
    shifted_mean, _ = m.kid(a, b + 1.0, num_subsets=20, subset_size=200)
    assert abs(same_mean) < 3 * same_std + 1e-3
    assert shifted_mean > 10 * abs(same_mean) and shifted_mean > 0.1
    with pytest.raises(ValueError, match="at least 2"):
        m.kid(a[:1], b)


def test_missing_inception_weights_is_a_one_line_error(tmp_path):
    missing = tmp_path / "nope.h5"
    with pytest.raises(ConfigError) as info:
        m.load_inception(missing)
    message = str(info.value)
    assert str(missing) in message and "never downloads" in message and "\n" not in message
    with pytest.raises(ConfigError, match="not found"):
        m.load_inception(None)


@pytest.mark.slow
def test_inception_weights_load_from_a_local_file(tmp_path):
    import keras

    keras.utils.set_random_seed(0)
    source = keras.applications.InceptionV3(include_top=False, weights=None, pooling="avg")
    path = tmp_path / "inception.weights.h5"
    source.save_weights(path)
    model = m.load_inception(path)
    for loaded, saved in zip(model.weights, source.weights, strict=True):
        np.testing.assert_array_equal(loaded.numpy(), saved.numpy())
    image = np.random.default_rng(0).uniform(-1, 1, (1, 32, 32, 1)).astype("float32")
    assert m.inception_features(image, model).shape == (1, 2048)  # grayscale tiled, resized to 299


def test_the_shipped_digits_classifier_is_the_same_everywhere_and_scores_its_accuracy():
    """Fixed weights, as FID's network: loading trains nothing and gives the same model twice, and
    the recorded test accuracy is what the weights score on the test split here."""
    first, again = m.digits_classifier(), m.digits_classifier()
    for a, b in zip(first.get_weights(), again.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)
    test, labels = m.real_digits("test")
    predicted = m.digits_logits(test, first).argmax(-1)
    assert first.test_accuracy >= 0.99
    assert abs(float(np.mean(predicted == labels)) - first.test_accuracy) < 1e-6


@pytest.mark.slow
def test_the_digits_classifier_recipe_leaves_global_rngs_alone_and_separates_real_from_noise(
    tmp_path,
):
    import random

    import keras
    import tensorflow as tf

    def draws():
        return random.random(), np.random.rand(), float(tf.random.uniform([]))

    keras.utils.set_random_seed(123)
    untouched = draws()
    keras.utils.set_random_seed(123)
    classifier, accuracy = m.train_digits_classifier()
    assert draws() == untouched  # training it leaves global RNGs alone
    assert accuracy >= 0.9
    m.write_classifier(classifier, accuracy, tmp_path / "c.npz")
    with np.load(tmp_path / "c.npz") as stored:
        assert float(stored["test_accuracy"]) == accuracy and len(stored.files) == 9
    again = m.digits_classifier()

    train, _ = m.real_digits("train")
    test, _ = m.real_digits("test")
    features = m.digits_features(test, again)
    real_vs_real = m.frechet_distance(m.digits_features(train, again), features)
    noise = np.random.default_rng(0).uniform(-1, 1, test.shape).astype("float32")
    blurred = m._resize(m._resize(test, 4), 32).numpy()
    assert real_vs_real < m.frechet_digits_distance(blurred, str(tmp_path))
    assert m.frechet_digits_distance(blurred, str(tmp_path)) < m.frechet_digits_distance(
        noise, str(tmp_path)
    )
