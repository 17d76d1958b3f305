"""The analytic test beds: closed-form W1, and the fixed pair reaching the GP optimum."""

import pytest

from lipgan.testbeds import fit_critic, gp_optimum
from lipgan_plugins.gradient_penalty import GradientPenalty


def test_gp_optimum_closed_form():
    assert gp_optimum(10.0) == pytest.approx((1.15, 3.45))
    # γ = 2 under λ(‖g‖ − γ)²/γ²: s = γ + 3γ²/(2λ)
    assert gp_optimum(5.0, target=2.0) == pytest.approx((3.2, 9.6))


@pytest.mark.parametrize("weight", [10.0, 5.0])
def test_fixed_pair_gradient_penalty_reaches_the_analytic_optimum(weight):
    result = fit_critic(GradientPenalty(weight=weight), iterations=150)
    norm, gap = gp_optimum(weight)
    assert result.grad_norm == pytest.approx(norm, rel=0.02)
    assert result.critic_gap == pytest.approx(gap, rel=0.02)


def test_fixed_pair_gradient_penalty_with_target_2_reaches_its_closed_form():
    """γ ≠ 1 under the published λ(‖g‖ − γ)²/γ² (ProGAN, TF-GAN): ‖∇D‖ = γ + 3γ²/(2λ) = 2.6."""
    result = fit_critic(GradientPenalty(weight=10.0, target=2.0), iterations=150)
    norm, gap = gp_optimum(10.0, target=2.0)
    assert result.grad_norm == pytest.approx(norm, rel=0.02)
    assert result.critic_gap == pytest.approx(gap, rel=0.02)


@pytest.mark.slow
def test_batch_norm_critic_reads_differently_in_each_mode_and_layer_norm_does_not():
    """Why the engine warns about batch norm in critics (issue 12, item 5; docs/plugins.md)."""
    import warnings

    from lipgan.testbeds import critic_gaps, normalized_critic

    gaps = {}
    for kind in ("batch", "layer"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the engine's batch-norm warning
            result = fit_critic(
                GradientPenalty(weight=10.0), iterations=150, critic=normalized_critic(kind)
            )
        gaps[kind] = critic_gaps(result.wgan.critic)
    layer = gaps["layer"]
    assert layer["concat"] == pytest.approx(layer["inference"], rel=1e-3)
    assert layer["separate"] == pytest.approx(layer["inference"], rel=1e-3)
    assert layer["inference"] == pytest.approx(gp_optimum(10.0)[1], rel=0.05)
    batch = gaps["batch"]
    assert abs(batch["concat"] - batch["inference"]) > 0.5 * abs(batch["inference"])
    assert abs(batch["separate"]) < 0.2 * abs(batch["inference"])  # each batch centred on its own


def test_dual_problems_closed_form_w1():
    """δ₀ against N(0, I): W1 is E‖z‖ (√(2/π) in 1-D, √(π/2) in 2-D), and on a finite sample it is
    exactly the sample's mean norm; the fixed pair keeps its translation distance."""
    import math

    import numpy as np

    from lipgan import testbeds

    assert testbeds.ABSOLUTE_VALUE.true_w1 == pytest.approx(0.7978845608)
    assert testbeds.CONE.true_w1 == pytest.approx(1.2533141373)
    for problem in (testbeds.ABSOLUTE_VALUE, testbeds.CONE):
        real, fake = problem.sample(200_000, np.random.default_rng(0))
        assert real.shape == fake.shape == (200_000, problem.dim)
        assert not real.any()  # the point mass at the origin
        assert problem.w1_of(real, fake) == pytest.approx(problem.true_w1, rel=5e-3)
        small_real, small_fake = problem.sample(3, np.random.default_rng(1))
        assert problem.w1_of(small_real, small_fake) == pytest.approx(
            np.mean([math.hypot(*row) for row in small_fake])
        )
    assert testbeds.FIXED_PAIR.w1_of(*testbeds.FIXED_PAIR.sample(8, np.random.default_rng(0))) == 3
    assert testbeds.PROBLEMS == {
        "fixed_pair": testbeds.FIXED_PAIR,
        "absolute_value": testbeds.ABSOLUTE_VALUE,
        "cone": testbeds.CONE,
    }
