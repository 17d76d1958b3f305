"""Toy metrics on constructed samples with hand-computable answers."""

import numpy as np
import pytest

from lipgan.data.toy import MODE_CENTERS, MODE_STD, SAMPLERS
from lipgan.errors import LipganError
from lipgan.metrics.toy import mode_metrics, toy_metrics, wasserstein1

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
    assert set(swiss) == {"w1"}


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


def test_bad_inputs_are_one_line_errors():
    with pytest.raises(LipganError, match="equal shape"):
        wasserstein1(np.zeros((3, 2)), np.zeros((4, 2)))
    with pytest.raises(LipganError, match=">= 1000"):
        toy_metrics("8gaussians", np.zeros((10, 2)), np.zeros((10, 2)))
    with pytest.raises(LipganError, match="std"):
        mode_metrics(np.zeros((3, 2)), CENTERS, 0.0)
