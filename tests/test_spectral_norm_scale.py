"""spectral_norm's output_scale: the same normalized critic times a fixed factor (an intervention
on its Lipschitz budget, docs/study.md), its bound scaled with it and refused when not positive."""

import keras
import numpy as np
import pytest

from lipgan.constraints import SpectralNorm
from lipgan.core.lipschitz import lipschitz_upper_bound
from lipgan.models import mlp_critic


def test_the_scaled_critic_is_the_normalized_one_times_the_factor_and_so_is_its_bound():
    keras.utils.set_random_seed(0)
    scaled = SpectralNorm(output_scale=4.0).wrap_critic(mlp_critic((2,), width=8, depth=2))
    inner = scaled.layers[1]
    x = np.random.default_rng(0).normal(size=(16, 2)).astype("float32")
    scaled(x, training=True)  # one power-iteration step: the kernels are normalized now
    np.testing.assert_allclose(scaled(x, training=False), 4.0 * inner(x, training=False), rtol=1e-6)
    assert lipschitz_upper_bound(scaled) == pytest.approx(4.0 * lipschitz_upper_bound(inner))
    assert SpectralNorm().wrap_critic(mlp_critic((2,), width=8, depth=2)).name != scaled.name


@pytest.mark.parametrize("scale", [0.0, -1.0])
def test_a_scale_that_is_not_positive_is_refused(scale):
    with pytest.raises(ValueError, match="output_scale must be > 0"):
        SpectralNorm(output_scale=scale)
