"""``aoc``: adaptive orthogonal convolutions (plugins/aoc.py), checked by explicit SVDs."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from lipgan.errors import ConfigError
from lipgan.lipschitz import conv_operator_norm_bound
from lipgan.models import dcgan_critic, mlp_critic, resnet_critic
from lipgan.models.activations import GroupSort
from lipgan.testing import ConstraintConformance
from lipgan_plugins.aoc import AOC, AOCConv2D, compose_kernels
from lipgan_plugins.bjorck import BjorckDense
from tests.helpers import assert_compiled_matches_eager, critic_update_step
from tests.test_bcop import explicit_operator


def circular_operator(kernel: np.ndarray, size: int, stride: int) -> np.ndarray:
    """The stride-``stride`` circular convolution with ``kernel`` [k, k, in, out] on a
    ``size``² grid as a dense [in·size², out·(size/stride)²] matrix (x ↦ x·M), built tap by tap:
    ``y[i] = Σ_p x[(s·i + p) mod size]·K[p]``."""
    k, _, cin, cout = kernel.shape
    n_out = size // stride
    m = np.zeros((size, size, cin, n_out, n_out, cout))
    for i in range(n_out):
        for j in range(n_out):
            for a in range(k):
                for b in range(k):
                    y, x = (stride * i + a) % size, (stride * j + b) % size
                    m[y, x, :, i, j, :] += kernel[a, b]
    return m.reshape(size * size * cin, n_out * n_out * cout)


def random_case(seed: int) -> dict:
    """Image 4x4–8x8, 1–4 channels in and out, stride 1 or 2, a kernel of at least the stride
    (at most 5, at most the image for 'valid'), either padding; odd seeds perturb the matrices."""
    rng = np.random.default_rng(seed)
    stride = int(rng.integers(1, 3))
    size = int(rng.integers(4, 9))
    padding = ["same", "valid"][int(rng.integers(0, 2))]
    kernel = int(rng.integers(stride, min(5, size) + 1))
    return dict(
        shape=(size, size, int(rng.integers(1, 5))),
        filters=int(rng.integers(1, 5)),
        kernel=kernel,
        stride=stride,
        padding=padding,
        perturb=seed % 2 == 1,
    )


def aoc_layer(shape, filters, kernel, stride, padding, seed=0) -> AOCConv2D:
    keras.utils.set_random_seed(seed)
    conv = keras.Sequential(
        [keras.Input(shape), keras.layers.Conv2D(filters, kernel, stride, padding=padding)]
    )
    layer = AOC().wrap_critic(conv).layers[0]
    layer.bias.assign(tf.random.stateless_normal(layer.bias.shape, seed=[seed, 1]))
    return layer


def test_composing_kernels_is_composing_the_convolutions():
    """A stride-1 conv then a stride-2 conv with a 2x2 kernel equals one stride-2 conv with the
    composed kernel ('valid' padding: no border convention in the way)."""
    rng = np.random.default_rng(0)
    inner = rng.normal(size=(3, 3, 2, 4)).astype("float32")
    outer = rng.normal(size=(2, 2, 4, 5)).astype("float32")
    x = rng.normal(size=(1, 9, 9, 2)).astype("float32")
    two = tf.nn.conv2d(tf.nn.conv2d(x, inner, 1, "VALID"), outer, 2, "VALID")
    one = tf.nn.conv2d(x, compose_kernels(inner, outer), 2, "VALID")
    np.testing.assert_allclose(one.numpy(), two.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.slow
@pytest.mark.parametrize("block", range(4))
def test_certified_bound_is_never_below_the_exact_norm_and_the_conv_is_orthogonal(block):
    """120 random shapes and seeds (30 per block). Every case: the certified bound (the audit's
    rule on the effective kernel) >= the exact norm of the zero-padded operator (SVD of the layer
    applied to the identity basis). Orthonormal matrices (even seeds): bound <= 1 + 1e-4 and,
    where the grid is a multiple of the stride, every singular value of the circular operator is
    1 (orthogonal, not merely 1-Lipschitz). Perturbed matrices (odd seeds): still never below."""
    for seed in range(30 * block, 30 * (block + 1)):
        case = random_case(seed)
        shape, stride = case["shape"], case["stride"]
        layer = aoc_layer(seed=seed, **{k: v for k, v in case.items() if k != "perturb"})
        if case["perturb"]:
            for m in layer._matrices():
                m.assign(m * 1.05 + tf.random.stateless_normal(m.shape, [seed, 2]) * 0.1)
        reference = keras.layers.Conv2D(case["filters"], case["kernel"], stride, case["padding"])
        out_shape = reference.compute_output_shape((None, *shape))
        assert layer.compute_output_shape((None, *shape)) == out_shape, case
        exact = np.linalg.svd(explicit_operator(layer, shape), compute_uv=False).max()
        kernel = np.asarray(layer.effective_kernel(), np.float64)
        assert kernel.shape[:2] == (case["kernel"],) * 2
        bound = conv_operator_norm_bound(kernel, shape[:2], stride)
        assert layer.operator_norm_bound() == pytest.approx(bound)
        assert exact <= bound * (1 + 1e-6), case
        if case["perturb"]:
            continue
        assert bound <= 1.0 + 1e-4, case
        if shape[0] % stride == 0:
            sv = np.linalg.svd(circular_operator(kernel, shape[0], stride), compute_uv=False)
            rank = min(shape[0] ** 2 * shape[2], (shape[0] // stride) ** 2 * case["filters"])
            np.testing.assert_allclose(sv[:rank], 1.0, atol=1e-4, err_msg=str(case))


def test_dcgan_critic_convs_keep_their_5x5_stride_2_kernels():
    """DCGAN's 5x5 stride-2 convs: a 4x4 BCOP inner conv on c_mid = c_in channels composed with
    a 2x2 stride-2 orthogonal conv (the first conv, 3 -> 4 channels, on c_mid = 3)."""
    critic = AOC().wrap_critic(dcgan_critic((16, 16, 3), dim=4, activation="maxmin"))
    convs = [layer for layer in critic.layers if isinstance(layer, AOCConv2D)]
    assert [(c.channels_in, c.mid, c.taps, len(c.projectors)) for c in convs] == [
        (3, 3, (4, 4), 6),
        (4, 4, (4, 4), 6),
    ]
    for conv in convs:
        assert conv.effective_kernel().shape[:2] == (5, 5)
        assert conv.outer.shape == (4 * conv.mid, conv.layer.filters)
    assert isinstance(critic.layers[-1], BjorckDense)
    assert critic.output_shape == (None, 1)
    assert AOC().lipschitz_bound(critic) <= 1.0 + 1e-4


def test_mlp_critic_dense_layers_become_orthonormal_bjorck_dense_layers():
    critic = AOC().wrap_critic(mlp_critic((2,), width=8, depth=2, activation="maxmin"))
    dense = [layer for layer in critic.layers if isinstance(layer, BjorckDense)]
    assert len(dense) == 3
    for layer in dense:
        sv = np.linalg.svd(layer.layer.kernel.numpy().astype(np.float64), compute_uv=False)
        np.testing.assert_allclose(sv, 1.0, atol=1e-5)
    assert 0.999 <= AOC().lipschitz_bound(critic) <= 1.0 + 1e-4


def test_resnet_critic_convs_become_aoc_convs_and_train():
    """Its 3x3 stride-1 convs become BCOP (c_mid = max(c_in, c_out)) with a 1x1 orthogonal
    outer conv, its 1x1 shortcuts a single orthogonal matrix; each layer's own bound is <= 1."""
    keras.utils.set_random_seed(0)
    critic = AOC().wrap_critic(resnet_critic((32, 32, 3), dim=8))
    convs = [layer for layer in critic.layers if isinstance(layer, AOCConv2D)]
    assert len(convs) == 10  # 3 + 3 (down block: a 1x1 shortcut) + 2 + 2
    kinds = {(c.layer.kernel_size, c.taps, len(c.projectors)) for c in convs}
    assert kinds == {((3, 3), (3, 3), 4), ((1, 1), (1, 1), 0)}
    assert all(c.lipschitz_bound() <= 1.0 + 1e-4 for c in convs)
    x = tf.random.stateless_uniform((2, 32, 32, 3), seed=[0, 1], minval=-1, maxval=1)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(critic(x, training=True))
    grads = tape.gradient(loss, critic.trainable_variables)
    assert all(g is not None and np.isfinite(g.numpy()).all() for g in grads)


@pytest.mark.slow
def test_trained_dcgan_critic_stays_certified_and_orthogonal():
    """Aggressive updates (Adam 1e-2), each followed by after_update: the AOC matrices stay
    orthonormal, and the audit's certified bound holds and is <= 1 + 1e-4."""
    from lipgan import audit

    keras.utils.set_random_seed(0)
    constraint = AOC()
    shape = (16, 16, 3)
    critic = constraint.wrap_critic(dcgan_critic(shape, dim=4, activation="maxmin"))
    step = critic_update_step(critic, constraint)
    matrices = [m for c in critic.layers if isinstance(c, AOCConv2D) for m in c._matrices()]
    before = [m.numpy().copy() for m in matrices]
    rng = np.random.default_rng(0)
    for _ in range(10):
        real = rng.uniform(-1, 1, (16, *shape)).astype(np.float32)
        step(real, (real * 0.5 + 0.3).astype(np.float32))
    assert min(np.abs(m.numpy() - b).max() for m, b in zip(matrices, before)) > 1e-3
    for matrix in matrices:
        sv = np.linalg.svd(matrix.numpy().astype(np.float64), compute_uv=False)
        assert sv.max() <= 1.0 + 5e-6 and sv.min() >= 0.99
    real = rng.uniform(-1, 1, (32, *shape)).astype(np.float32)
    result = audit.audit(critic, real, real * 0.5 + 0.3, constraint=constraint)
    assert result["upper_bound_source"] == "constraint:aoc"
    assert result["upper_bound"] <= 1.0 + 1e-4
    assert result["bounds_consistent"] and result["lower_bound"] > 0.1


@pytest.mark.parametrize(
    "layer,match",
    [
        (keras.layers.Conv1D(4, 3, name="c"), "not Conv1D 'c'"),
        (keras.layers.Conv2D(4, 3, dilation_rate=2, name="c"), "'c' is dilated"),
        (keras.layers.Conv2D(4, 2, strides=3, name="c"), "smaller than its strides"),
    ],
)
def test_aoc_refuses_what_it_cannot_make_orthogonal_in_one_line(layer, match):
    with pytest.raises(ConfigError, match=match) as err:
        AOC().wrap_layer(layer)
    assert "\n" not in str(err.value)


def test_aoc_refuses_settings_that_constrain_nothing():
    with pytest.raises(ConfigError, match="constrains nothing"):
        AOC(iterations=0, projection=0)
    with pytest.raises(ConfigError, match="aoc.order"):
        AOC(order=0)


def conv_critic(data_shape):
    """A small module-level conv critic with MaxMin activations (5x5 stride 2, 'same')."""
    return keras.Sequential(
        [
            keras.Input(tuple(data_shape)),
            keras.layers.Conv2D(4, 5, strides=2, padding="same"),
            GroupSort(2),
            keras.layers.Flatten(),
            keras.layers.Dense(1),
        ]
    )


@pytest.mark.slow
def test_aoc_critic_and_its_gradients_are_the_same_under_xla():
    keras.utils.set_random_seed(0)
    critic = AOC().wrap_critic(conv_critic((8, 8, 3)))
    x = tf.random.stateless_normal((4, 8, 8, 3), seed=[2, 2])
    assert_compiled_matches_eager(critic, x, nonzero_gradients=True)


class TestAOCConformance(ConstraintConformance):
    # after_update from 3·W + 0.1 (the kit's start): enough steps to converge, then skipped.
    constraint_class = AOC
    constraint_kwargs = {"projection": 30}

    def test_replica_invariance(self):
        # The MLP case runs, batched with every built-in, in the slow tests/test_testing_kit.py::
        # test_builtins_are_replica_invariant_and_broken_constraints_are_caught.
        from tests.test_testing_kit import builtins

        assert AOC in [cls for cls, _ in builtins()]


class TestAOCConvConformance(ConstraintConformance):
    constraint_class = AOC
    constraint_kwargs = {"projection": 30}
    data_shape = (8, 8, 3)
    critic_factory = conv_critic

    def test_replica_invariance(self):
        # Batched with BCOP's conv critic (one subprocess per replica count) in the slow
        # tests/test_bcop.py::test_orthogonal_conv_critics_are_replica_invariant.
        from tests.test_bcop import ORTHOGONAL_CONVS

        assert (self.constraint_class, self.constraint_kwargs) in ORTHOGONAL_CONVS


def test_aoc_critic_survives_a_keras_config_round_trip():
    keras.utils.set_random_seed(0)
    critic = AOC().wrap_critic(dcgan_critic((16, 16, 3), dim=4, activation="maxmin"))
    again = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(critic))
    assert [type(layer) for layer in again.layers] == [type(layer) for layer in critic.layers]
    again.set_weights(critic.get_weights())
    x = np.random.default_rng(0).uniform(-1, 1, (4, 16, 16, 3)).astype("float32")
    np.testing.assert_allclose(np.asarray(again(x)), np.asarray(critic(x)), rtol=1e-6, atol=1e-6)
