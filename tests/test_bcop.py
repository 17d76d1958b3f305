"""``bjorck`` on convolutions: BCOP orthogonal convs (plugins/bcop.py), checked by explicit SVDs."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from lipgan import testing
from lipgan.errors import ConfigError
from lipgan.lipschitz import conv_operator_norm_bound
from lipgan.models import dcgan_critic
from lipgan.models.activations import GroupSort
from lipgan.testing import ConstraintConformance
from lipgan_plugins.aoc import AOC
from lipgan_plugins.bcop import BCOPConv2D, bcop_polyphase_kernel
from lipgan_plugins.bjorck import Bjorck
from tests.helpers import (
    assert_compiled_matches_eager,
    bjorck_replica_spread,
    critic_update_step,
)


def explicit_operator(layer, shape) -> np.ndarray:
    """The layer's linear map as a dense [out, in] matrix: the layer applied to the identity basis
    (minus its output at zero, which removes the bias)."""
    n = int(np.prod(shape))
    basis = np.eye(n, dtype=np.float32).reshape(n, *shape)
    out = np.asarray(layer(basis)) - np.asarray(layer(np.zeros((1, *shape), np.float32)))
    return out.reshape(n, -1).T.astype(np.float64)


def wrapped_conv(shape, filters, kernel, strides, padding, seed=0):
    keras.utils.set_random_seed(seed)
    conv = keras.Sequential(
        [keras.Input(shape), keras.layers.Conv2D(filters, kernel, strides, padding=padding)]
    )
    layer = Bjorck().wrap_critic(conv).layers[0]
    layer.bias.assign(tf.random.stateless_normal(layer.bias.shape, seed=[seed, 1]))
    return layer


# The DCGAN critic's convs are 5x5, stride 2, 'same' (lipgan/models/dcgan.py); the channel counts
# cover s²·c_in > c_out (the critic's 2nd and later convs: orthonormal rows), s²·c_in < c_out (its
# first conv: an isometry) and equal. Stride 1 and a 'valid' case for the general layer.
CASES = [
    ((8, 8, 3), 4, 5, 2, "same"),
    ((16, 16, 1), 8, 5, 2, "same"),
    ((8, 8, 4), 8, 5, 2, "same"),
    ((8, 8, 2), 8, 5, 2, "same"),
    ((8, 8, 4), 4, 3, 1, "same"),
    ((8, 8, 2), 3, 4, 2, "valid"),
]


@pytest.mark.parametrize("shape,filters,kernel,strides,padding", CASES)
def test_bcop_conv_is_orthogonal_and_the_audit_rule_certifies_it(
    shape, filters, kernel, strides, padding
):
    layer = wrapped_conv(shape, filters, kernel, strides, padding)
    reference = keras.layers.Conv2D(filters, kernel, strides, padding=padding)
    assert layer.compute_output_shape((None, *shape)) == reference.compute_output_shape(
        (None, *shape)
    )
    # The explicit operator (zero padding): largest singular value <= 1 + 1e-3.
    sv = np.linalg.svd(explicit_operator(layer, shape), compute_uv=False)
    assert sv.max() <= 1.0 + 1e-3
    assert sv.max() >= 0.999  # an orthogonal operator cropped at the borders, not a contraction
    # The audit's rule for convolutions (lipgan/lipschitz.py) on the effective kernel: a bound
    # (>= the true norm) that certifies (<= 1 + 1e-3); the layer reports the same number.
    kernel_value = np.asarray(layer.effective_kernel(), np.float64)
    bound = conv_operator_norm_bound(kernel_value, shape[:2], strides)
    assert sv.max() - 1e-6 <= bound <= 1.0 + 1e-3
    assert layer.operator_norm_bound() == pytest.approx(bound)
    # Orthogonal, not merely 1-Lipschitz: on a circular grid the polyphase kernel's symbol has
    # all min(in, out) singular values 1 at every frequency (Sedghi et al. 2019).
    ortho, *projectors = layer._matrices()
    polyphase = bcop_polyphase_kernel(ortho, projectors, layer.taps, strides**2 * shape[-1]).numpy()
    symbol = np.fft.fft2(polyphase.astype(np.float64), s=(8, 8), axes=(0, 1))
    np.testing.assert_allclose(np.linalg.svd(symbol, compute_uv=False), 1.0, atol=1e-4)


def test_dcgan_critic_convs_become_6x6_stride_2_orthogonal_convs():
    critic = Bjorck().wrap_critic(dcgan_critic((16, 16, 3), dim=4, activation="maxmin"))
    convs = [layer for layer in critic.layers if isinstance(layer, BCOPConv2D)]
    assert len(convs) == 2
    for conv in convs:
        assert conv.effective_kernel().shape[:2] == (6, 6)  # ⌈5/2⌉ polyphase taps of stride 2
        assert conv.layer.strides == (2, 2) and conv.layer.padding == "same"
    assert critic.output_shape == (None, 1)
    assert Bjorck().lipschitz_bound(critic) <= 1.0 + 1e-4


def test_trained_dcgan_critic_stays_certified_and_near_orthogonal():
    """Aggressive updates (Adam 1e-2) each followed by after_update: the BCOP matrices stay
    orthonormal, and the critic's certified bound (the audit's) holds and is <= 1 + 1e-3."""
    from lipgan import audit

    keras.utils.set_random_seed(0)
    constraint = Bjorck()
    shape = (16, 16, 3)
    critic = constraint.wrap_critic(dcgan_critic(shape, dim=4, activation="maxmin"))
    step = critic_update_step(critic, constraint)
    convs = [layer for layer in critic.layers if isinstance(layer, BCOPConv2D)]
    matrices = [m for conv in convs for m in conv._matrices()]
    before = [m.numpy().copy() for m in matrices]
    rng = np.random.default_rng(0)
    for _ in range(10):
        real = rng.uniform(-1, 1, (16, *shape)).astype(np.float32)
        step(real, (real * 0.5 + 0.3).astype(np.float32))
    moved = [np.abs(m.numpy() - b).max() for m, b in zip(matrices, before)]
    assert min(moved) > 1e-3  # every BCOP matrix trained
    for matrix in matrices:
        sv = np.linalg.svd(matrix.numpy().astype(np.float64), compute_uv=False)
        assert sv.max() <= 1.0 + 1e-5 and sv.min() >= 0.99  # orthonormal, not merely shrunk
    real = rng.uniform(-1, 1, (32, *shape)).astype(np.float32)
    result = audit.audit(critic, real, real * 0.5 + 0.3, constraint=constraint)
    assert result["upper_bound_source"] == "constraint:bjorck"
    assert result["upper_bound"] <= 1.0 + 1e-3
    assert result["bounds_consistent"]
    assert result["lower_bound"] > 0.1


@pytest.mark.parametrize(
    "layer,match",
    [
        (keras.layers.Conv1D(4, 3, name="c"), "not Conv1D 'c'"),
        (keras.layers.Conv2D(4, 3, dilation_rate=2, name="c"), "'c' is dilated"),
        (keras.layers.Conv2D(4, 5, strides=2, name="c"), "padding='valid'.*needs padding='same'"),
    ],
)
def test_bjorck_refuses_what_it_cannot_make_orthogonal_in_one_line(layer, match):
    with pytest.raises(ConfigError, match=match) as err:
        Bjorck().wrap_layer(layer)
    assert "\n" not in str(err.value)


def conv_critic(data_shape):
    """A small module-level conv critic with MaxMin activations (stride 2, 'same')."""
    return keras.Sequential(
        [
            keras.Input(tuple(data_shape)),
            keras.layers.Conv2D(4, 5, strides=2, padding="same"),
            GroupSort(2),
            keras.layers.Flatten(),
            keras.layers.Dense(1),
        ]
    )


def test_bcop_critic_and_its_gradients_are_the_same_under_xla():
    keras.utils.set_random_seed(0)
    critic = Bjorck().wrap_critic(conv_critic((8, 8, 3)))
    x = tf.random.stateless_normal((4, 8, 8, 3), seed=[2, 2])

    assert_compiled_matches_eager(critic, x, nonzero_gradients=True)


class TestBjorckConvConformance(ConstraintConformance):
    # after_update from 3·W + 0.1 (the kit's start): enough steps to converge, then skipped.
    constraint_class = Bjorck
    constraint_kwargs = {"projection": 30}
    data_shape = (8, 8, 3)
    critic_factory = conv_critic

    def test_replica_invariance(self):  # batched with AOC's conv: the slow test below
        assert (self.constraint_class, self.constraint_kwargs) in ORTHOGONAL_CONVS


#: The orthogonal-conv constraints whose conv critics are checked on 1 and 2 replicas together
#: (tests/test_aoc.py's conv conformance class points here).
ORTHOGONAL_CONVS = [(Bjorck, {"projection": 30}), (AOC, {"projection": 30})]


@pytest.mark.slow
def test_orthogonal_conv_critics_are_replica_invariant():
    """The kit's replica check for BCOP's and AOC's conv critics in one subprocess per replica
    count (two TensorFlow start-ups, not four): penalties and all-reduced gradients agree on 1 and
    2 replicas and no replica's projected weights differ after ``after_update``."""
    testing.check_replica_invariance_many(ORTHOGONAL_CONVS, (8, 8, 3), conv_critic)


@pytest.mark.slow
def test_bcop_replicas_resync_after_one_drifts():
    """Replica 1's BCOP matrices are knocked off; after 2 iterations the copies agree exactly
    (each projected matrix is replica 0's on every replica), as dense Björck's kernels do."""
    spread = bjorck_replica_spread("conv")
    assert spread["knocked"] > 1e-3
    assert spread["after"] == 0.0


def test_bcop_critic_survives_a_keras_config_round_trip():
    """Run dirs describe their models by Keras config: the rebuilt critic has the same layers and,
    with the same weights, computes the same function (the widened 6x6 config is a fixed point)."""
    keras.utils.set_random_seed(0)
    critic = Bjorck().wrap_critic(dcgan_critic((16, 16, 3), dim=4, activation="maxmin"))
    again = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(critic))
    assert [type(layer) for layer in again.layers] == [type(layer) for layer in critic.layers]
    again.set_weights(critic.get_weights())
    x = np.random.default_rng(0).uniform(-1, 1, (4, 16, 16, 3)).astype("float32")
    np.testing.assert_allclose(np.asarray(again(x)), np.asarray(critic(x)), rtol=1e-6, atol=1e-6)
    assert Bjorck().lipschitz_bound(again) <= 1.0 + 1e-4
