"""The fixed-pair test bed reaches its closed-form optimum under the gradient penalty."""

import pytest

from lipgan.testbeds import fit_critic, gp_optimum
from lipgan_plugins.gradient_penalty import GradientPenalty


def test_gp_optimum_closed_form():
    assert gp_optimum(10.0) == pytest.approx((1.15, 3.45))
    assert gp_optimum(5.0, target=2.0) == pytest.approx((2.3, 6.9))


@pytest.mark.parametrize("weight", [10.0, 5.0])
def test_fixed_pair_gradient_penalty_reaches_the_analytic_optimum(weight):
    result = fit_critic(GradientPenalty(weight=weight), iterations=150)
    norm, gap = gp_optimum(weight)
    assert result.grad_norm == pytest.approx(norm, rel=0.02)
    assert result.critic_gap == pytest.approx(gap, rel=0.02)
