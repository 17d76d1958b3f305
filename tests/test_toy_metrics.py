"""Toy metrics on constructed samples with hand-computable answers."""

import numpy as np
import pytest

from lipgan.core.errors import LipganError
from lipgan.data.toy import MODE_CENTERS, MODE_STD, SAMPLERS
from lipgan.metrics.toy import (
    PACGAN_NUM_SAMPLES,
    mode_metrics,
    nearest_mode,
    reverse_kl,
    toy_metrics,
    w1_floor,
    wasserstein1,
)

CENTERS = MODE_CENTERS["8gaussians"]
STD = MODE_STD["8gaussians"]


def test_all_modes_vs_one_mode():
    rng = np.random.default_rng(0)
    everywhere = np.repeat(CENTERS, 50, axis=0) + 0.5 * STD * rng.normal(size=(400, 2))
    m = mode_metrics(everywhere, CENTERS, STD)
    assert (m["modes_covered"], m["num_modes"], m["high_quality_fraction"]) == (8, 8, 1.0)
    collapsed = CENTERS[3] + 0.5 * STD * rng.normal(size=(400, 2))
    m = mode_metrics(collapsed, CENTERS, STD)
    assert (m["modes_covered"], m["high_quality_fraction"]) == (1, 1.0)
    assert m["mode_counts"][3] == 400


def test_high_quality_means_within_three_sigma():
    direction = CENTERS[0] / np.linalg.norm(CENTERS[0])
    samples = np.stack(
        [
            CENTERS[0] + 2.9 * STD * direction,
            CENTERS[1] + 3.1 * STD * direction,
            np.zeros(2),
            np.zeros(2),
        ]
    )
    m = mode_metrics(samples, CENTERS, STD)
    assert m["high_quality_fraction"] == 0.25
    assert m["modes_covered"] == 1
    assert mode_metrics(samples, CENTERS, STD, min_count=2)["modes_covered"] == 0


def test_real_data_scores_as_a_perfect_generator():
    rng = np.random.default_rng(1)
    m = toy_metrics(
        "8gaussians", SAMPLERS["8gaussians"](1000, rng), SAMPLERS["8gaussians"](1000, rng)
    )
    assert m["modes_covered"] == 8
    assert m["high_quality_fraction"] > 0.97  # P(r <= 3 sigma) = 1 - exp(-4.5) = 0.989 in 2-D
    # mode counts fluctuate (multinomial), so even real vs real pays ~0.07 to move mass between modes
    assert m["w1"] < 0.15
    one_mode = CENTERS[0] + STD * rng.normal(size=(1000, 2))
    collapsed = toy_metrics("8gaussians", one_mode, SAMPLERS["8gaussians"](1000, rng))
    assert collapsed["w1"] > 1.0 and collapsed["modes_covered"] == 1
    swiss = toy_metrics(
        "swissroll", SAMPLERS["swissroll"](1000, rng), SAMPLERS["swissroll"](1000, rng)
    )
    assert set(swiss) == {"w1", "w1_floor"}


def test_w1_hand_computable_cases():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(300, 2))
    # a translation moves all mass by |t| and no plan does better (W1 >= |mean difference|)
    assert wasserstein1(x, x + np.array([0.6, 0.8])) == pytest.approx(1.0, rel=1e-9)
    assert wasserstein1(x, rng.permutation(x)) == pytest.approx(0.0, abs=1e-12)
    # two points swapped: the identity plan costs 1, the optimal plan 0
    assert wasserstein1([[0, 0], [0, 1]], [[0, 1], [0, 0]]) == 0.0
    # 1-D: W1 is the mean gap between sorted samples
    a, b = rng.normal(size=300), rng.normal(2.0, 0.5, size=300)
    pad = lambda v: np.stack([v, np.zeros_like(v)], axis=1)  # noqa: E731
    assert wasserstein1(pad(a), pad(b)) == pytest.approx(
        np.mean(np.abs(np.sort(a) - np.sort(b))), rel=1e-9
    )


@pytest.mark.parametrize("case", ["near", "translated", "collapsed", "ties"])
def test_w1_equals_the_optimal_assignment(case):
    """The network simplex (POT) finds the optimum an assignment solver finds: for equal-size
    uniform samples the transport optimum is a permutation (Birkhoff). The far cases are the ones
    where scipy's assignment solver is slow (benchmarks/w1_solver)."""
    from scipy.optimize import linear_sum_assignment
    from scipy.spatial.distance import cdist

    rng = np.random.default_rng(7)
    real = SAMPLERS["8gaussians"](400, rng)
    fake = {
        "near": SAMPLERS["8gaussians"](400, rng),
        "translated": SAMPLERS["8gaussians"](400, rng) + [3.0, -1.0],
        "collapsed": rng.normal(0.0, 0.05, size=(400, 2)),
        "ties": np.repeat(CENTERS, 50, axis=0),  # 8 points, 50 copies each: many optimal plans
    }[case]
    cost = cdist(fake, real)
    rows, cols = linear_sum_assignment(cost)
    assert wasserstein1(fake, real) == pytest.approx(cost[rows, cols].mean(), rel=1e-12)


def test_w1_not_solved_to_optimality_is_an_error(monkeypatch):
    """A pivot cap reached (POT's result code 3) is a LipganError, not a warning and a number."""
    import lipgan.metrics.toy as toy

    monkeypatch.setattr(toy, "W1_MAX_PIVOTS", 3)
    rng = np.random.default_rng(8)
    with pytest.raises(LipganError, match="not solved to optimality"):
        wasserstein1(rng.normal(size=(200, 2)), rng.normal(size=(200, 2)))


def test_bad_inputs_are_one_line_errors():
    with pytest.raises(LipganError, match="equal shape"):
        wasserstein1(np.zeros((3, 2)), np.zeros((4, 2)))
    with pytest.raises(LipganError, match=">= 1000"):
        toy_metrics("8gaussians", np.zeros((10, 2)), np.zeros((10, 2)))
    with pytest.raises(LipganError, match="std"):
        mode_metrics(np.zeros((3, 2)), CENTERS, 0.0)


@pytest.mark.parametrize("toy_set", ["2d_ring", "2d_grid", "8gaussians", "25gaussians"])
def test_collapse_with_one_stray_point_per_mode_is_caught_by_reverse_kl(toy_set):
    # PacGAN protocol: 2,500 samples, all on one mode but a single high-quality stray point on each
    # other mode. Coverage counts every mode; only the reverse KL of the histogram shows the collapse.
    centers, std = MODE_CENTERS[toy_set], MODE_STD[toy_set]
    k = len(centers)
    rng = np.random.default_rng(3)
    main = centers[0] + 0.5 * std * rng.normal(size=(PACGAN_NUM_SAMPLES - (k - 1), 2))
    collapsed = np.concatenate([main, centers[1:]])
    m = mode_metrics(collapsed, centers, std)
    assert m["modes_covered"] == k and m["high_quality_fraction"] == 1.0
    assert m["reverse_kl"] > 1.0
    n, p0 = PACGAN_NUM_SAMPLES, 1 - (k - 1) / PACGAN_NUM_SAMPLES
    expected = p0 * np.log(p0 * k) + (k - 1) / n * np.log(k / n)  # ~log K minus the strays
    assert m["reverse_kl"] == pytest.approx(expected, rel=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("toy_set", ["2d_ring", "2d_grid"])
def test_perfect_sampler_scores_zero_reverse_kl_and_high_quality(toy_set):
    rng = np.random.default_rng(4)
    real = SAMPLERS[toy_set](PACGAN_NUM_SAMPLES, rng)
    m = toy_metrics(toy_set, real, SAMPLERS[toy_set](PACGAN_NUM_SAMPLES, rng))
    assert m["num_modes"] == len(MODE_CENTERS[toy_set]) == m["modes_covered"]
    assert m["high_quality_fraction"] >= 0.98  # P(r < 3 sigma) = 1 - exp(-4.5) = 0.989 in 2-D
    # multinomial noise only: E[KL] ~ (K - 1) / (2 n) = 0.0014 (ring), 0.0048 (grid)
    assert m["reverse_kl"] < 0.02
    assert m["w1"] < 2 * m["w1_floor"]


def test_reverse_kl_hand_computable_values():
    assert reverse_kl([5, 5, 5, 5]) == pytest.approx(0.0, abs=1e-12)
    assert reverse_kl([7, 0, 0, 0]) == pytest.approx(np.log(4))  # 0 log 0 = 0, no smoothing
    assert reverse_kl([1, 3]) == pytest.approx(0.25 * np.log(0.5) + 0.75 * np.log(1.5))
    # the PacGAN MetricLogger logs H(p) (scipy.stats.entropy, nats); KL(p || uniform) = log K - H(p)
    from scipy.stats import entropy

    counts = np.array([10, 0, 3, 40, 1])
    assert reverse_kl(counts) == pytest.approx(np.log(5) - entropy(counts / counts.sum()))
    assert reverse_kl([0, 0, 0]) == float("inf")
    with pytest.raises(LipganError, match="counts"):
        reverse_kl([-1, 2])


def test_w1_floor_is_reported_and_below_a_bad_sampler():
    rng = np.random.default_rng(5)
    real = SAMPLERS["2d_grid"](1000, rng)
    # a sampler that misses one column of the grid (5 of 25 modes): clearly worse than the floor
    good = SAMPLERS["2d_grid"](3000, rng)
    bad = good[good[:, 0] < 3][:1000]
    m = toy_metrics("2d_grid", bad, real)
    assert m["w1_floor"] == w1_floor("2d_grid", 1000) > 0
    assert m["w1_floor"] < 0.5 * m["w1"]
    assert m["modes_covered"] == 20
    # two fresh real samples: the floor is what real data scores against real data
    assert toy_metrics("2d_grid", SAMPLERS["2d_grid"](1000, rng), real)["w1"] < 2 * m["w1_floor"]


def test_pacgan_sets_follow_the_official_config():
    # synthetic_data_experiments/2DRing_GAN&PacGAN/config.py and 2DGrid_GAN&PacGAN/config.py
    ring = MODE_CENTERS["2d_ring"]
    np.testing.assert_allclose(np.linalg.norm(ring, axis=1), 1.0)
    np.testing.assert_allclose(ring[1], [np.sqrt(0.5), np.sqrt(0.5)])
    assert MODE_STD["2d_ring"] == 0.01 and MODE_STD["2d_grid"] == 0.05
    assert sorted(set(MODE_CENTERS["2d_grid"].ravel())) == [-4, -2, 0, 2, 4]
    assert len(MODE_CENTERS["2d_grid"]) == 25
    rng = np.random.default_rng(6)
    for name in ("2d_ring", "2d_grid"):
        x = SAMPLERS[name](20000, rng).astype(np.float64)
        _, dist = nearest_mode(x, MODE_CENTERS[name])
        # distance to the own centre is Rayleigh(sigma): mean sigma * sqrt(pi / 2)
        assert dist.mean() == pytest.approx(MODE_STD[name] * np.sqrt(np.pi / 2), rel=0.02)
