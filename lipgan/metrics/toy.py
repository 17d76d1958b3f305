"""Sample-quality metrics on the 2-D toy sets: the PacGAN protocol and an exact W1 with its floor.

Mode metrics follow the evaluation code of PacGAN (Lin et al., NeurIPS 2018, synthetic experiments),
``synthetic_data_experiments/PacGAN/pacgan/extensions.py``, class ``MetricLogger``, in
github.com/fjxmlzn/PacGAN:

* each generated point is assigned to its nearest mode centre; it is **high quality** when that
  distance is *strictly* below 3σ (``min_dis < dis_thre`` with ``dis_thre=3`` on σ-scaled distances),
  σ being the std of one mixture component;
* ``mode_counts`` is the histogram of the high-quality points over the modes (their
  ``detail_of_coverage``: low-quality points are not counted anywhere);
* ``modes_covered``: modes with **at least one** high-quality point (``len(nonzero(detail))``);
* ``high_quality_fraction``: high-quality points / all points (``good points percentage``);
* ``reverse_kl``: KL(p_gen ‖ p_true) in nats between the normalized histogram ``mode_counts / sum``
  and the true mode distribution (uniform, ``x_mode_priors=None``). The synthetic-data
  ``MetricLogger`` logs its ingredient, ``entropy of coverage`` H(p) = ``scipy.stats.entropy(detail
  / sum(detail))`` (natural log), and KL(p ‖ uniform) = log K − H(p); computed directly it is the
  ``JSD.KLD(p, q)`` of the same repository (``stacked_MNIST_experiments/.../model.py``): natural log,
  no smoothing or epsilon, terms with p = 0 dropped (0·log 0 = 0). It is *reverse* in the GAN sense
  (the model's distribution first), so a sampler with most of its mass on few modes pays log(K/k)
  even when a stray point keeps every other mode "covered". With no high-quality point at all the
  histogram is undefined and ``reverse_kl`` is ``inf``.

The protocol uses 2,500 generated samples (``num_log_figure_sample``; :data:`PACGAN_NUM_SAMPLES`);
the PacGAN-set configs set ``train.eval_samples`` to it. The paper reports mean ± standard error over
10 runs, which is a matter of the study, not of one evaluation.

The Wasserstein-1 distance is exact, not a critic's estimate: the optimal transport problem between
two equal-size samples of uniform weights on the Euclidean cost matrix, solved by the network
simplex of POT (``ot.emd2``; Bonneel et al., SIGGRAPH Asia 2011), whose optimum is a permutation
(Birkhoff), the same as an optimal assignment. Even two independent samples
of the *same* distribution are at a positive W1 (mode counts fluctuate), so every toy evaluation
reports beside the model's ``w1`` the ``w1_floor``: the W1 between two independent real samples of
the same size n, drawn from the set's own sampler (:func:`w1_floor`, averaged over 3 pairs).
"""

from __future__ import annotations

import functools
import warnings

import numpy as np

from lipgan.core.errors import LipganError

#: Fewer points than this make the empirical W1 too noisy to compare runs.
MIN_W1_POINTS = 1000

#: Generated samples per evaluation in the PacGAN protocol (``num_log_figure_sample`` = 2500).
PACGAN_NUM_SAMPLES = 2500

#: High-quality radius in units of the component std (PacGAN ``dis_thre = 3``).
HIGH_QUALITY_SIGMAS = 3.0


def _points(x, what: str) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2 or len(x) == 0:
        raise LipganError(f"{what} must be a non-empty [n, d] array of points, got shape {x.shape}")
    return x


def nearest_mode(samples, centers) -> tuple[np.ndarray, np.ndarray]:
    """Index of each sample's nearest centre and the distance to it."""
    samples = _points(samples, "samples")
    centers = _points(centers, "centers")
    dist = np.linalg.norm(samples[:, None, :] - centers[None, :, :], axis=-1)
    nearest = dist.argmin(axis=1)
    return nearest, dist[np.arange(len(samples)), nearest]


def reverse_kl(mode_counts) -> float:
    """KL(p ‖ uniform) in nats for p = ``mode_counts`` normalized (PacGAN ``JSD.KLD``: 0·log 0 = 0).

    ``inf`` when every count is zero (no high-quality sample: the histogram is undefined).
    """
    counts = np.asarray(mode_counts, dtype=np.float64)
    if counts.ndim != 1 or len(counts) == 0 or (counts < 0).any():
        raise LipganError(f"mode counts must be a non-empty list of counts >= 0, got {counts}")
    total = counts.sum()
    if total == 0:
        return float("inf")
    p = counts[counts > 0] / total
    return float(np.sum(p * np.log(p * len(counts))))


def mode_metrics(samples, centers, std: float, min_count: int = 1) -> dict:
    """PacGAN's mode metrics (module docstring): ``modes_covered``, ``num_modes``,
    ``high_quality_fraction``, ``reverse_kl`` and the per-mode high-quality ``mode_counts``.

    ``min_count=1`` is PacGAN's (and VEEGAN's) rule for a covered mode; larger values are offered for
    stricter readings but are not the protocol.
    """
    if not std > 0:
        raise LipganError(f"mode std must be positive, got {std}")
    if min_count < 1:
        raise LipganError(f"min_count must be >= 1, got {min_count}")
    centers = _points(centers, "centers")
    nearest, dist = nearest_mode(samples, centers)
    good = dist < HIGH_QUALITY_SIGMAS * std
    counts = np.bincount(nearest[good], minlength=len(centers))
    return {
        "modes_covered": int((counts >= min_count).sum()),
        "num_modes": len(centers),
        "high_quality_fraction": float(good.mean()),
        "reverse_kl": reverse_kl(counts),
        "mode_counts": counts.tolist(),
    }


#: POT's cap on network-simplex pivots; its default (100,000) stops short of the optimum at n = 2,500.
W1_MAX_PIVOTS = 10**9


def wasserstein1(x, y) -> float:
    """Exact W1 between two equal-size empirical distributions (uniform weights), Euclidean cost.

    Solved as a transport problem by POT's network simplex (``ot.emd2``), not as an assignment
    by ``scipy.optimize.linear_sum_assignment``: both find the same optimum (tests/test_toy_metrics.py
    checks them against each other), but the assignment solver's time grows with the distance
    between the samples, where the network simplex's hardly changes (benchmarks/w1_solver;
    benchmarks/RESULTS.md, "Exact W1"). Every evaluation of an early, failed or smoke-test run,
    and every reference row of a study report, is such a far pair.
    """
    import ot
    from scipy.spatial.distance import cdist

    x = _points(x, "x")
    y = _points(y, "y")
    if x.shape != y.shape:
        raise LipganError(
            f"wasserstein1 needs two samples of equal shape, got {x.shape} and {y.shape}"
        )
    weights = np.full(len(x), 1.0 / len(x))
    with warnings.catch_warnings():  # POT warns on a non-optimal end; it is raised below instead
        warnings.simplefilter("ignore", UserWarning)
        value, log = ot.emd2(weights, weights, cdist(x, y), numItermax=W1_MAX_PIVOTS, log=True)
    if log["result_code"] != 1:  # 1: optimal (POT's check_result); else a warning, not an error
        raise LipganError(
            f"exact W1 of {len(x)} points was not solved to optimality ({log['warning']}); "
            "use fewer samples or lipgan.metrics.toy.sliced_wasserstein1"
        )
    return float(value)


#: Independent real-vs-real pairs averaged in :func:`w1_floor` (one pair alone is too noisy).
FLOOR_PAIRS = 3


@functools.lru_cache(maxsize=32)
def w1_floor(toy_set: str, n: int, seed: int = 0) -> float:
    """Mean W1 between two independent size-``n`` samples of ``toy_set``'s own distribution, over
    :data:`FLOOR_PAIRS` pairs.

    This is what a *perfect* generator scores at this n: a model's ``w1`` is only meaningful as a
    distance above it. Deterministic in (toy_set, n, seed), hence cached.
    """
    from lipgan.data.toy import SAMPLERS

    if toy_set not in SAMPLERS:
        raise LipganError(f"unknown toy set {toy_set!r}; known: {', '.join(sorted(SAMPLERS))}")
    rng = np.random.default_rng([seed, n, 0x70F])
    sample = SAMPLERS[toy_set]
    return float(
        np.mean([wasserstein1(sample(n, rng), sample(n, rng)) for _ in range(FLOOR_PAIRS)])
    )


def w1_floor_stats(toy_set: str, n: int, pairs: int = 30, seed: int = 0) -> dict:
    """The W1 floor of ``toy_set`` at size ``n`` with its standard error: the mean exact W1 over
    ``pairs`` independent real-vs-real pairs (one pair is noisy, so 3 pairs give no usable error
    bar; docs/metrics.md). ``{'mean', 'se', 'pairs', 'n'}``; deterministic in its arguments."""
    from lipgan.data.toy import SAMPLERS

    if toy_set not in SAMPLERS:
        raise LipganError(f"unknown toy set {toy_set!r}; known: {', '.join(sorted(SAMPLERS))}")
    if pairs < 2:
        raise LipganError(f"a floor's standard error needs >= 2 pairs, got {pairs}")
    rng = np.random.default_rng([seed, n, 0xF100])
    sample = SAMPLERS[toy_set]
    values = np.array([wasserstein1(sample(n, rng), sample(n, rng)) for _ in range(pairs)])
    return {
        "mean": float(values.mean()),
        "se": float(values.std(ddof=1) / np.sqrt(pairs)),
        "pairs": pairs,
        "n": n,
    }


def sliced_wasserstein1(x, y, projections: int = 128, seed: int = 0) -> float:
    """Sliced W1: the mean over ``projections`` random unit directions θ of the exact 1-D W1
    between ⟨x, θ⟩ and ⟨y, θ⟩ (sorted differences; equal sizes). A cheap curve-time stand-in for
    :func:`wasserstein1` (far cheaper at the protocol's n = 2,500); it is a lower bound on W1
    (projection is 1-Lipschitz), so it is compared with itself only, never with the exact W1.
    The directions are fixed by ``seed``, so two calls on the same samples agree."""
    x = _points(x, "x")
    y = _points(y, "y")
    if x.shape != y.shape:
        raise LipganError(
            f"sliced_wasserstein1 needs two samples of equal shape, got {x.shape} and {y.shape}"
        )
    theta = np.random.default_rng([seed, 0x511CE]).standard_normal((x.shape[1], projections))
    theta /= np.linalg.norm(theta, axis=0, keepdims=True)
    return float(np.abs(np.sort(x @ theta, axis=0) - np.sort(y @ theta, axis=0)).mean())


def toy_metrics(toy_set: str, fake, real, *, floor: bool = True) -> dict:
    """The metrics that apply to ``toy_set``: ``w1`` and ``w1_floor`` always (at the same n, the
    smaller of the two sample sizes), PacGAN's mode metrics for the Gaussian mixtures.

    ``floor=False`` leaves ``w1_floor`` out: a study computes it once per data set from many pairs
    (:func:`w1_floor_stats`) instead of 3 exact W1 problems again in every cell."""
    from lipgan.data.toy import MODE_CENTERS, MODE_STD

    fake = _points(fake, "fake")
    real = _points(real, "real")
    if len(fake) < MIN_W1_POINTS:
        raise LipganError(f"toy metrics need >= {MIN_W1_POINTS} generated points, got {len(fake)}")
    n = min(len(fake), len(real))
    out = {"w1": wasserstein1(fake[:n], real[:n])}
    if floor:
        out["w1_floor"] = w1_floor(toy_set, n)
    if toy_set in MODE_CENTERS:
        modes = mode_metrics(fake, MODE_CENTERS[toy_set], MODE_STD[toy_set])
        out.update({k: v for k, v in modes.items() if k != "mode_counts"})
    return out
