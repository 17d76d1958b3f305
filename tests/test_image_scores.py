"""FID, IS, KID and PRDC against independent computations: closed forms, hand-computed cases,
brute-force double loops, and the ``prdc`` package's own outputs (tests/fixtures/)."""

import math
from pathlib import Path

import numpy as np
import pytest

from lipgan.core.errors import ConfigError
from lipgan.metrics import image_scores as s

FIXTURE = Path(__file__).parent / "fixtures" / "prdc_reference.npz"


def _random_orthogonal(d, seed):
    q, r = np.linalg.qr(np.random.default_rng(seed).standard_normal((d, d)))
    return q * np.sign(np.diag(r))


# -- FID ---------------------------------------------------------------------------------------
def test_fid_of_commuting_gaussians_is_the_closed_form():
    # Shared eigenvectors: (Σ1 Σ2)^½ = Q diag(√(a b)) Qᵀ, so the trace term is Σ (√a − √b)².
    q = _random_orthogonal(6, 0)
    a, b = np.array([0.5, 1, 2, 3, 4, 9.0]), np.array([2.0, 1, 0.5, 3, 1, 4])
    mu1, mu2 = np.arange(6.0), np.arange(6.0)[::-1]
    expected = np.sum((mu1 - mu2) ** 2) + np.sum((np.sqrt(a) - np.sqrt(b)) ** 2)
    got = s.fid_from_stats(mu1, q @ np.diag(a) @ q.T, mu2, q @ np.diag(b) @ q.T)
    assert got == pytest.approx(expected, rel=1e-9)


def test_fid_of_non_commuting_covariances_matches_the_symmetric_eigen_route():
    # tr((Σ1Σ2)^½) = Σ √λ(Σ1^½ Σ2 Σ1^½): same spectrum, computed without sqrtm.
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((64, 64)), rng.standard_normal((64, 64))
    sigma1, sigma2 = x @ x.T / 64 + 0.1 * np.eye(64), y @ y.T / 64
    values, vectors = np.linalg.eigh(sigma1)
    root = (vectors * np.sqrt(values)) @ vectors.T
    trace_root = np.sqrt(np.clip(np.linalg.eigvalsh(root @ sigma2 @ root), 0, None)).sum()
    mu1, mu2 = rng.standard_normal(64), rng.standard_normal(64)
    expected = np.sum((mu1 - mu2) ** 2) + np.trace(sigma1 + sigma2) - 2 * trace_root
    assert s.fid_from_stats(mu1, sigma1, mu2, sigma2) == pytest.approx(expected, rel=1e-9)


def test_fid_on_samples_uses_the_unbiased_covariance_and_is_zero_for_one_set():
    x = np.random.default_rng(2).standard_normal((500, 5)).astype(np.float32)
    assert s.fid(x, x) == pytest.approx(0.0, abs=1e-8)
    assert s.fid(x, x + np.float32(2.0)) == pytest.approx(5 * 4.0, rel=1e-6)
    mu, sigma = s.feature_stats(x)
    assert mu.dtype == np.float64 and np.allclose(sigma, np.cov(x.astype(np.float64).T))


def test_fid_adds_eps_when_the_product_has_no_finite_square_root():
    # [[0, 1], [0, 0]] has no square root (sqrtm gives inf); with ε on both diagonals the product is
    # (1+ε)[[ε, 1], [0, ε]], whose square root has trace 2√(ε(1+ε)).
    nilpotent = np.array([[0.0, 1.0], [0.0, 0.0]])
    with pytest.warns(RuntimeWarning, match="adding 1e-06"):
        got = s.fid_from_stats(np.zeros(2), nilpotent, np.zeros(2), np.eye(2))
    eps = s.FID_EPS
    assert got == pytest.approx(2 - 4 * math.sqrt(eps * (1 + eps)), rel=1e-9)


def test_fid_refuses_a_large_imaginary_part_and_bad_shapes():
    with pytest.raises(ValueError, match="imaginary component of 1"):
        s.fid_from_stats(np.zeros(2), np.diag([1.0, -1.0]), np.zeros(2), np.eye(2))
    with pytest.raises(ValueError, match="one d"):
        s.fid_from_stats(np.zeros(2), np.eye(2), np.zeros(3), np.eye(3))
    with pytest.raises(ValueError, match="feature sizes differ"):
        s.fid(np.zeros((4, 2)), np.zeros((4, 3)))


def test_reference_stats_are_computed_once_then_read(tmp_path):
    calls = []
    features = np.random.default_rng(3).standard_normal((50, 3))

    def compute():
        calls.append(1)
        return features

    path = s.reference_stats_path("lipgan_toy/ring", "train", "digits64", 50, str(tmp_path))
    assert path == tmp_path / "lipgan_reference_stats" / "lipgan_toy_ring-train-digits64-n50.npz"
    first = s.reference_stats(path, compute)
    second = s.reference_stats(path, compute)
    assert len(calls) == 1 and sorted(p.name for p in path.parent.iterdir()) == [path.name]
    for got, want in zip((first, second), (s.feature_stats(features),) * 2):
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
    np.savez(path, mean=np.zeros(3))  # not TTUR's layout
    with pytest.raises(ConfigError, match="'mu' and 'sigma'"):
        s.reference_stats(path, compute)


# -- IS ----------------------------------------------------------------------------------------
def test_inception_score_of_a_hand_computed_case():
    probs = np.array([[0.9, 0.1], [0.1, 0.9], [0.5, 0.5], [0.5, 0.5]])
    logits = np.log(probs) + 3.0  # any shift per row gives the same softmax
    # One split: marginal (0.5, 0.5); rows 1-2 have KL 0.9 ln 1.8 + 0.1 ln 0.2, rows 3-4 have 0.
    kl = 0.9 * math.log(1.8) + 0.1 * math.log(0.2)
    assert s.inception_score(logits, splits=1) == pytest.approx((math.exp(kl / 2), 0.0))
    # Two splits in order: exp(kl) and exp(0) = 1.
    mean, std = s.inception_score(logits, splits=2)
    assert mean == pytest.approx((math.exp(kl) + 1) / 2) and std == pytest.approx(
        (math.exp(kl) - 1) / 2
    )


def test_inception_score_limits_on_all_1008_classes():
    # Confident and spread evenly over every class: IS = number of classes (1008 for the 2015 graph).
    logits = np.full((2016, 1008), -40.0)
    logits[np.arange(2016), np.arange(2016) % 1008] = 40.0
    assert s.inception_score(logits, splits=1)[0] == pytest.approx(1008, rel=1e-9)
    # One class for everything, or a uniform prediction: IS = 1.
    assert s.inception_score(np.tile(logits[:1], (20, 1)), splits=2) == pytest.approx((1.0, 0.0))
    assert s.inception_score(np.zeros((20, 1008)), splits=10) == pytest.approx((1.0, 0.0))


def test_inception_score_shuffles_like_torch_fidelity_when_given_a_seed():
    logits = np.random.default_rng(4).standard_normal((40, 5)) * 3
    order = np.random.RandomState(2020).permutation(40)
    assert s.inception_score(logits, 4, shuffle_seed=2020) == s.inception_score(logits[order], 4)
    assert s.inception_score(logits, 4, shuffle_seed=2020) != s.inception_score(logits, 4)
    with pytest.raises(ValueError, match="splits <= n"):
        s.inception_score(logits[:3], splits=10)


# -- KID ---------------------------------------------------------------------------------------
def _mmd2_double_loop(x, y):
    d = x.shape[1]

    def k(a, b):
        return (sum(ai * bi for ai, bi in zip(a, b)) / d + 1) ** 3

    m, n = len(x), len(y)
    xx = sum(k(x[i], x[j]) for i in range(m) for j in range(m) if i != j) / (m * (m - 1))
    yy = sum(k(y[i], y[j]) for i in range(n) for j in range(n) if i != j) / (n * (n - 1))
    xy = sum(k(a, b) for a in x for b in y) / (m * n)
    return xx + yy - 2 * xy


def test_kid_on_whole_sets_is_the_unbiased_mmd_of_the_direct_formula():
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((7, 3)), rng.standard_normal((7, 3)) + 0.7
    mean, std = s.kid(a, b, subset_size=7, subsets=1)
    assert mean == pytest.approx(_mmd2_double_loop(a, b), rel=1e-12) and std == 0.0


def test_kid_subsets_are_torch_fidelitys_draws():
    rng = np.random.default_rng(6)
    a, b = rng.standard_normal((9, 2)), rng.standard_normal((11, 2)) * 1.5
    draws = np.random.RandomState(7)
    values = []
    for _ in range(4):
        pick_a = draws.choice(9, 5, replace=False)
        pick_b = draws.choice(11, 5, replace=False)
        values.append(_mmd2_double_loop(a[pick_a], b[pick_b]))
    got = s.kid(a, b, subset_size=5, subsets=4, seed=7)
    assert got == pytest.approx((np.mean(values), np.std(values)), rel=1e-12)


def test_kid_separates_distributions_and_refuses_small_sets():
    rng = np.random.default_rng(8)
    a, b = rng.standard_normal((400, 8)), rng.standard_normal((400, 8))
    same_mean, same_std = s.kid(a, b, subset_size=100, subsets=20)
    shifted_mean, _ = s.kid(a, b + 1.0, subset_size=100, subsets=20)
    assert abs(same_mean) < 3 * same_std and shifted_mean > 0.1
    with pytest.raises(ValueError, match="subset_size 1000 is larger"):
        s.kid(a, b)


# -- PRDC --------------------------------------------------------------------------------------
@pytest.mark.parametrize("chunk_size", [1000, 37])
@pytest.mark.parametrize("case", ["shifted", "same", "k3"])
def test_prdc_matches_the_prdc_package(case, chunk_size):
    with np.load(FIXTURE) as fixture:
        got = s.prdc(
            fixture[f"{case}/real"], fixture[f"{case}/fake"], int(fixture[f"{case}/k"]), chunk_size
        )
        want = {key: float(fixture[f"{case}/{key}"]) for key in got}
    assert set(got) == {"precision", "recall", "density", "coverage"}
    for key in got:
        assert got[key] == pytest.approx(want[key], abs=1e-6), key


def test_prdc_limits():
    real = np.random.default_rng(9).standard_normal((60, 4))
    same = s.prdc(real, real.copy())
    assert (same["precision"], same["recall"], same["coverage"]) == (1.0, 1.0, 1.0)
    far = s.prdc(real, real + 100.0)
    assert far == {"precision": 0.0, "recall": 0.0, "density": 0.0, "coverage": 0.0}
    with pytest.raises(ValueError, match="k < n"):
        s.prdc(real[:5], real, k=5)


def test_digits_logits_are_the_classifiers_outputs_on_resized_images():
    import keras
    import tensorflow as tf

    from lipgan.metrics import images

    keras.utils.set_random_seed(0)
    classifier = keras.Sequential(
        [
            keras.Input((images.DIGITS_SIZE, images.DIGITS_SIZE, 1)),
            keras.layers.Flatten(),
            keras.layers.Dense(8, activation="relu", name="features"),
            keras.layers.Dense(10, name="logits"),
        ]
    )
    digits = np.random.default_rng(10).uniform(-1, 1, (7, 32, 32, 1)).astype(np.float32)
    resized = tf.image.resize(digits, [16, 16], antialias=True)
    want = classifier(tf.clip_by_value(resized, -1.0, 1.0)).numpy()
    got = images.digits_logits(digits, classifier, batch_size=3)
    assert got.shape == (7, 10)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert s.inception_score(got, splits=1)[0] >= 1.0
