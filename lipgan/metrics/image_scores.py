"""Image scores from feature and logit arrays, each computed as its reference code computes it.

Pure numpy/scipy on ``[n, d]`` arrays in float64; which network produced the arrays is the
caller's business (:mod:`lipgan.metrics.images` has the extractors). Each function names the code
it follows, and ``tests/test_image_scores.py`` checks it against an independent computation:

* :func:`fid` / :func:`fid_from_stats` — Fréchet distance (Heusel et al. 2017) exactly as
  ``calculate_frechet_distance`` in bioinf-jku/TTUR ``fid.py`` and mseitzer/pytorch-fid
  ``src/pytorch_fid/fid_score.py``: ``scipy.linalg.sqrtm`` of Σ₁Σ₂; if that is not finite
  (a singular product) the same with ε = 1e-6 added to both diagonals; a complex result whose
  diagonal has an imaginary part above 1e-3 is an error, a smaller one is dropped. Statistics
  are the mean and the unbiased (n − 1) covariance. :func:`reference_stats` caches a data set's
  (μ, Σ) in the ``.npz`` layout of those repositories (keys ``mu``, ``sigma``).
* :func:`inception_score` — exp(E_x KL(p(y|x) ‖ p(y))) per split, mean and std over 10 splits, as
  openai/improved-gan ``inception_score/model.py`` and toshas/torch-fidelity ``metric_isc.py``.
  Both take the softmax over **all 1008 outputs** of the 2015 Inception graph, computed from the
  pool3 features times the ``softmax/logits`` weights **without the bias** (improved-gan builds
  ``logits = matmul(pool3, w)``; torch-fidelity calls that layer ``logits_unbiased`` and uses it
  for IS by default). Pass those logits to reproduce published IS; the 8 extra classes are not
  dropped. improved-gan splits in the given order; torch-fidelity first shuffles with
  ``RandomState(2020)``: ``shuffle_seed=2020`` reproduces that.
* :func:`kid` — Kernel Inception Distance (Bińkowski et al. 2018) as torch-fidelity
  ``metric_kid.py``: k(x, y) = (xᵀy / d + 1)³, the unbiased MMD², over ``subsets`` (100) random
  subsets of ``subset_size`` (1000) drawn without replacement from each set by
  ``numpy.random.RandomState(seed)`` in torch-fidelity's order; mean and (population) std.
* :func:`prdc` — precision, recall, density and coverage (Naeem et al., ICML 2020) as the
  ``prdc`` package (clovaai/generative-evaluation-prdc ``prdc/prdc.py``): k-NN radii are the
  distance to the (k+1)-th nearest point of the own set (the point itself included), all
  comparisons strict. Distances are computed in row chunks, so 10k × 10k needs ~80 MB, not 800.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np

from lipgan.core.errors import ConfigError

FID_EPS = 1e-6  # TTUR / pytorch-fid's offset on the diagonals when Σ₁Σ₂ is singular
IMAGINARY_ATOL = 1e-3  # their tolerance on the imaginary part of diag(sqrtm(Σ₁Σ₂))


def _matrix(features, what: str) -> np.ndarray:
    array = np.asarray(features, np.float64)
    if array.ndim != 2 or len(array) < 2:
        raise ValueError(f"{what} must be [n, d] with n >= 2, got shape {array.shape}")
    return array


def _same_width(a: np.ndarray, b: np.ndarray) -> None:
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"feature sizes differ: {a.shape[1]} and {b.shape[1]}")


# -- FID ---------------------------------------------------------------------------------------
def feature_stats(features) -> tuple[np.ndarray, np.ndarray]:
    """Mean and unbiased covariance (``np.cov``, n − 1) of ``[n, d]`` features, in float64."""
    features = _matrix(features, "features")
    return features.mean(0), np.cov(features, rowvar=False)


def _sqrtm(matrix: np.ndarray) -> np.ndarray:
    import scipy.linalg

    with warnings.catch_warnings():  # a singular product is handled below, as the reference does
        warnings.simplefilter("ignore", RuntimeWarning)
        return scipy.linalg.sqrtm(matrix)


def fid_from_stats(mu1, sigma1, mu2, sigma2, eps: float = FID_EPS) -> float:
    """‖μ₁ − μ₂‖² + tr(Σ₁ + Σ₂ − 2(Σ₁Σ₂)^½), as TTUR's and pytorch-fid's ``calculate_frechet_distance``.

    Raises:
        ValueError: shapes differ, or (Σ₁Σ₂)^½ has an imaginary diagonal above 1e-3 (the
            covariances are not positive semi-definite).
    """
    mu1, mu2 = (
        np.atleast_1d(np.asarray(mu1, np.float64)),
        np.atleast_1d(np.asarray(mu2, np.float64)),
    )
    sigma1 = np.atleast_2d(np.asarray(sigma1, np.float64))
    sigma2 = np.atleast_2d(np.asarray(sigma2, np.float64))
    if mu1.shape != mu2.shape or sigma1.shape != sigma2.shape or sigma1.shape != 2 * mu1.shape:
        raise ValueError(
            f"FID needs means [d] and covariances [d, d] of one d, got {mu1.shape}, "
            f"{sigma1.shape}, {mu2.shape}, {sigma2.shape}"
        )
    diff = mu1 - mu2
    covmean = _sqrtm(sigma1 @ sigma2)
    if not np.isfinite(covmean).all():
        warnings.warn(
            f"FID: singular product of covariances; adding {eps} to their diagonals",
            RuntimeWarning,
            stacklevel=2,
        )
        offset = np.eye(len(sigma1)) * eps
        covmean = _sqrtm((sigma1 + offset) @ (sigma2 + offset))
    if np.iscomplexobj(covmean):
        if not np.allclose(np.diagonal(covmean).imag, 0, atol=IMAGINARY_ATOL):
            worst = float(np.max(np.abs(covmean.imag)))
            raise ValueError(
                f"FID: sqrtm(sigma1 @ sigma2) has an imaginary component of {worst:.3g}; "
                "the covariances are not positive semi-definite"
            )
        covmean = covmean.real
    return float(diff @ diff + np.trace(sigma1) + np.trace(sigma2) - 2 * np.trace(covmean))


def fid(feats_a, feats_b) -> float:
    """FID between Gaussians fitted to two ``[n, d]`` feature sets (pool3 features for FID)."""
    a, b = _matrix(feats_a, "feats_a"), _matrix(feats_b, "feats_b")
    _same_width(a, b)
    return fid_from_stats(*feature_stats(a), *feature_stats(b))


def default_data_dir(data_dir: str | None = None) -> Path:
    """Where TFDS keeps data: the argument, else ``TFDS_DATA_DIR``, else ``~/tensorflow_datasets``."""
    return Path(data_dir or os.environ.get("TFDS_DATA_DIR") or Path.home() / "tensorflow_datasets")


def reference_stats_path(
    dataset: str, split: str, features: str, n: int, data_dir: str | None = None
) -> Path:
    """Where :func:`reference_stats` keeps a data set's statistics: ``<data dir>/lipgan_reference_stats/
    <dataset>-<split>-<features>-n<n>.npz`` (the TFDS data dir, as the digits classifier's cache)."""
    name = "-".join(str(part).replace("/", "_") for part in (dataset, split, features, f"n{n}"))
    return default_data_dir(data_dir) / "lipgan_reference_stats" / f"{name}.npz"


def reference_stats(
    path: str | os.PathLike, compute_features: Callable[[], np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """A data set's (μ, Σ), read from ``path`` or computed once by ``compute_features()`` and saved.

    The file is TTUR's / pytorch-fid's ``.npz`` (keys ``mu`` and ``sigma``), so their published
    statistics files can be dropped in. It is written to a temporary name and renamed, so an
    interrupted computation never leaves a half-written cache.

    Raises:
        ConfigError: ``path`` exists but is not such a file.
    """
    path = Path(path)
    if path.is_file():
        try:
            with np.load(path) as stored:
                return np.asarray(stored["mu"], np.float64), np.asarray(stored["sigma"], np.float64)
        except (OSError, KeyError, ValueError) as exc:
            raise ConfigError(
                f"{path} is not a reference statistics file with arrays 'mu' and 'sigma' ({exc}); "
                "delete it to recompute"
            ) from None
    mu, sigma = feature_stats(compute_features())
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp.npz")
    np.savez(tmp, mu=mu, sigma=sigma)
    os.replace(tmp, path)
    return mu, sigma


# -- IS ----------------------------------------------------------------------------------------
def inception_score(
    logits, splits: int = 10, shuffle_seed: int | None = None
) -> tuple[float, float]:
    """Inception Score of ``[n, classes]`` logits: mean and std over ``splits`` of
    exp(mean_x KL(softmax(logits_x) ‖ mean softmax of the split)).

    ``shuffle_seed=None`` splits in the given order (improved-gan); an int first permutes the rows
    by ``RandomState(shuffle_seed)`` (torch-fidelity, whose default is 2020).
    """
    logits = np.asarray(logits, np.float64)
    if logits.ndim != 2 or logits.shape[1] < 2:
        raise ValueError(f"logits must be [n, classes] with classes >= 2, got {logits.shape}")
    n = len(logits)
    if splits < 1 or n < splits:
        raise ValueError(f"inception_score needs 1 <= splits <= n, got splits={splits}, n={n}")
    if shuffle_seed is not None:
        logits = logits[np.random.RandomState(shuffle_seed).permutation(n)]
    shifted = logits - logits.max(1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(1, keepdims=True))  # log-softmax
    p = np.exp(log_p)
    scores = []
    for i in range(splits):
        rows = slice(i * n // splits, (i + 1) * n // splits)
        part, log_part = p[rows], log_p[rows]
        with np.errstate(divide="ignore"):
            log_marginal = np.log(part.mean(0, keepdims=True))
        terms = np.where(part > 0, part * (log_part - log_marginal), 0.0)  # 0 log 0 = 0
        scores.append(np.exp(terms.sum(1).mean()))
    return float(np.mean(scores)), float(np.std(scores))


# -- KID ---------------------------------------------------------------------------------------
def polynomial_kernel(x: np.ndarray, y: np.ndarray, degree: int = 3, coef0: float = 1.0):
    """(xᵀy / d + coef0)^degree, torch-fidelity's and Bińkowski et al.'s kernel (gamma = 1/d)."""
    return (x @ y.T / x.shape[1] + coef0) ** degree


def mmd2_unbiased(x: np.ndarray, y: np.ndarray) -> float:
    """The unbiased MMD² estimate with :func:`polynomial_kernel`: the within-set means leave out
    the diagonal (m(m − 1) pairs), the cross term is the mean over all m·n pairs."""
    m, n = len(x), len(y)
    kxx, kyy, kxy = polynomial_kernel(x, x), polynomial_kernel(y, y), polynomial_kernel(x, y)
    return float(
        (kxx.sum() - np.trace(kxx)) / (m * (m - 1))
        + (kyy.sum() - np.trace(kyy)) / (n * (n - 1))
        - 2 * kxy.mean()
    )


def kid(
    feats_a, feats_b, subset_size: int = 1000, subsets: int = 100, seed: int = 0
) -> tuple[float, float]:
    """KID: mean and std of :func:`mmd2_unbiased` over ``subsets`` random pairs of subsets.

    Each subset pair is ``rng.choice(n_a, subset_size, replace=False)`` then the same for b, with
    ``rng = numpy.random.RandomState(seed)`` (torch-fidelity's sampling; its default seed is 2020).

    Raises:
        ValueError: a set has fewer than ``subset_size`` rows (torch-fidelity refuses too).
    """
    a, b = _matrix(feats_a, "feats_a"), _matrix(feats_b, "feats_b")
    _same_width(a, b)
    if subset_size < 2 or subsets < 1:
        raise ValueError(
            f"kid needs subset_size >= 2 and subsets >= 1, got {subset_size}, {subsets}"
        )
    if min(len(a), len(b)) < subset_size:
        raise ValueError(
            f"kid subset_size {subset_size} is larger than the sets ({len(a)} and {len(b)} "
            "examples); pass a smaller subset_size"
        )
    rng = np.random.RandomState(seed)
    values = np.empty(subsets)
    for i in range(subsets):
        pick_a = rng.choice(len(a), subset_size, replace=False)
        pick_b = rng.choice(len(b), subset_size, replace=False)
        values[i] = mmd2_unbiased(a[pick_a], b[pick_b])
    return float(values.mean()), float(values.std())


# -- precision, recall, density, coverage ------------------------------------------------------
def _distances(x: np.ndarray, y: np.ndarray, y_sq: np.ndarray) -> np.ndarray:
    """Euclidean distances as scikit-learn computes them (‖x‖² − 2xᵀy + ‖y‖², clipped, root)."""
    squared = (x * x).sum(1)[:, None] - 2 * (x @ y.T) + y_sq[None, :]
    return np.sqrt(np.maximum(squared, 0, out=squared), out=squared)


def _row_chunks(n: int, chunk_size: int):
    for start in range(0, n, chunk_size):
        yield slice(start, min(start + chunk_size, n))


def knn_radii(features: np.ndarray, k: int, chunk_size: int = 1000) -> np.ndarray:
    """Distance from each row to its (k+1)-th nearest row, itself (distance 0) included: prdc's
    ``compute_nearest_neighbour_distances``, one chunk of rows at a time."""
    sq = (features * features).sum(1)
    radii = np.empty(len(features))
    for rows in _row_chunks(len(features), chunk_size):
        d = _distances(features[rows], features, sq)
        d[np.arange(d.shape[0]), np.arange(rows.start, rows.stop)] = 0.0
        radii[rows] = np.partition(d, k, axis=1)[:, k]
    return radii


def prdc(real, fake, k: int = 5, chunk_size: int = 1000) -> dict[str, float]:
    """Precision, recall, density and coverage of ``fake`` against ``real`` features, k = 5.

    * precision: fraction of fake points inside some real point's k-NN ball;
    * recall: fraction of real points inside some fake point's k-NN ball;
    * density: mean over fake points of (number of real balls containing it) / k;
    * coverage: fraction of real points whose ball contains at least one fake point.
    """
    real, fake = _matrix(real, "real"), _matrix(fake, "fake")
    _same_width(real, fake)
    if k < 1 or min(len(real), len(fake)) <= k:
        raise ValueError(
            f"prdc needs 1 <= k < n, got k={k}, n_real={len(real)}, n_fake={len(fake)}"
        )
    real_radii = knn_radii(real, k, chunk_size)
    fake_radii = knn_radii(fake, k, chunk_size)
    fake_sq = (fake * fake).sum(1)
    balls_per_fake = np.zeros(len(fake))
    recalled = np.empty(len(real), bool)
    covered = np.empty(len(real), bool)
    for rows in _row_chunks(len(real), chunk_size):
        d = _distances(real[rows], fake, fake_sq)
        balls_per_fake += (d < real_radii[rows, None]).sum(0)
        recalled[rows] = (d < fake_radii[None, :]).any(1)
        covered[rows] = d.min(1) < real_radii[rows]
    return {
        "precision": float((balls_per_fake > 0).mean()),
        "recall": float(recalled.mean()),
        "density": float(balls_per_fake.mean() / k),
        "coverage": float(covered.mean()),
    }
