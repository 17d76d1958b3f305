"""SLL and CPL residual layers (issue #39): certified bounds against exact values, the critic
rewrites, the conformance kit, gradients and XLA.

The property test unrolls every layer into explicit matrices (a convolution applied to the
identity basis), checks the layer computes ``x − Pᵀ·diag(s)·relu(P·x + b)`` with them, and then
compares the certificate (:meth:`lipgan.core.residual_layers.ResidualDense.lipschitz_bound`) with
exact values: ``μ`` by an SVD of ``diag(s)^{1/2}·P``, the Jacobian's largest singular value at
random points and with every unit on (the worst case), and difference quotients of the layer.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

from lipgan.core.errors import ConfigError
from lipgan.core.residual_layers import ResidualConv, ResidualDense
from lipgan.models import dcgan_critic, mlp_critic, resnet_critic
from lipgan.testing import ConstraintConformance
from lipgan_plugins.aol import AOLRescaled
from lipgan_plugins.cpl import CPL
from lipgan_plugins.sll import SLL
from tests.helpers import assert_compiled_matches_eager, critic_update_step
from tests.test_certified import conv_critic

CASES = 32  # per (kind, form): 128 random layers in all


def random_layer(kind: str, form: str, seed: int):
    """A built float64 residual layer with random shapes and random (not orthogonal) weights."""
    rng = np.random.RandomState(seed)
    if form == "dense":
        n, m = rng.randint(1, 13), rng.randint(1, 13)
        layer = ResidualDense(kind, inner=m, dtype="float64")
        shape = (n,)
    else:
        size, c, m = rng.randint(4, 7), rng.randint(1, 5), rng.randint(1, 5)
        layer = ResidualConv(kind, kernel_size=rng.randint(1, 4), inner=m, dtype="float64")
        shape = (size, size, c)
    layer.build((None, *shape))
    layer.kernel.assign(rng.standard_normal(layer.kernel.shape) * rng.uniform(0.1, 3.0))
    layer.bias.assign(rng.standard_normal(layer.bias.shape))
    if layer.log_q is not None:
        layer.log_q.assign(rng.standard_normal(layer.log_q.shape))
    return layer, shape, rng


def unrolled(layer, shape) -> np.ndarray:
    """P [inner units, inputs] of ``x ↦ Wᵀx`` (the conv applied to the identity basis)."""
    kernel = np.asarray(layer.kernel.numpy(), np.float64)
    if kernel.ndim == 2:
        return kernel.T
    dim = int(np.prod(shape))
    basis = tf.constant(np.eye(dim).reshape(dim, *shape))
    return tf.nn.conv2d(basis, kernel, 1, "SAME").numpy().reshape(dim, -1).T


@pytest.mark.parametrize("form", ["dense", pytest.param("conv", marks=pytest.mark.slow)])
@pytest.mark.parametrize("kind", ["sll", "cpl"])
def test_certified_bound_is_never_below_the_exact_constant(kind, form):
    for seed in range(CASES):
        layer, shape, rng = random_layer(kind, form, seed)
        p = unrolled(layer, shape)
        units = p.shape[0] // layer.bias.shape[0]  # pixels per inner channel
        scale = np.tile(layer.scales().numpy().astype(np.float64), units)
        bias = np.tile(layer.bias.numpy(), units)
        x = rng.standard_normal((6, *shape))
        flat = x.reshape(len(x), -1)
        # The layer computes x − Pᵀ diag(s) relu(Px + b) (so conv2d_transpose is P's adjoint).
        expected = flat - (np.maximum(flat @ p.T + bias, 0) * scale) @ p
        np.testing.assert_allclose(layer(x).numpy().reshape(len(x), -1), expected, atol=1e-9)

        bound = layer.lipschitz_bound()
        where = f"{kind} {form} seed {seed} shape {shape} kernel {layer.kernel.shape}"
        assert bound <= 1.0 + 1e-5, where  # what the audit calls certified 1-Lipschitz
        mu = np.linalg.norm(np.sqrt(scale)[:, None] * p, ord=2) ** 2  # exact, by SVD
        assert mu <= 2.0 + 1e-5, where  # the theorem: diag(2/t) Wᵀ W ≼ 2I
        assert bound >= max(1.0, mu - 1.0) - 1e-9, where  # the worst case: every unit on
        eye = np.eye(p.shape[1])
        all_on = np.linalg.norm(eye - p.T @ (scale[:, None] * p), ord=2)
        assert all_on <= bound + 1e-9, where
        for point in flat:  # the Jacobian at random points: a lower bound on the constant
            on = (p @ point + bias > 0).astype(np.float64)
            jac = eye - p.T @ ((scale * on)[:, None] * p)
            assert np.linalg.norm(jac, ord=2) <= bound + 1e-9, where
        y = x + rng.standard_normal(x.shape) * rng.choice([1e-3, 0.3, 3.0])
        quotient = np.linalg.norm(
            (layer(x).numpy() - layer(y).numpy()).reshape(len(x), -1), axis=1
        ) / np.linalg.norm((x - y).reshape(len(x), -1), axis=1)
        assert quotient.max() <= bound + 1e-9, where
        if kind == "cpl":  # the normalizer is a certified bound on ‖W‖², not an estimate below
            c = float(layer.thresholds().numpy()[0])
            assert c >= np.linalg.norm(p, ord=2) ** 2 * (1 - 1e-6), where


def test_the_worst_case_is_attained_for_sll_dense():
    """The bound 1 is the exact constant: with an orthogonal kernel (T = I) and every unit on,
    the Jacobian is I − 2KKᵀ = −I."""
    layer = ResidualDense("sll", dtype="float64")
    layer.build((None, 5))
    layer.bias.assign(np.full(5, 100.0))  # all units on near 0
    x = tf.constant(np.random.default_rng(0).standard_normal((1, 5)) * 0.1)
    with tf.GradientTape() as tape:
        tape.watch(x)
        out = layer(x)
    jac = tape.batch_jacobian(out, x).numpy()[0]
    np.testing.assert_allclose(np.linalg.svd(jac, compute_uv=False), 1.0, atol=1e-6)
    assert abs(layer.lipschitz_bound() - 1.0) < 1e-6


# -- critic rewrites ------------------------------------------------------------------------------
@pytest.mark.parametrize("constraint", [SLL(), CPL()])
def test_mlp_and_dcgan_critics_are_rewritten_as_documented(constraint):
    kind = constraint.kind
    mlp = constraint.wrap_critic(mlp_critic((2,), width=16, depth=3))
    assert [type(layer) for layer in mlp.layers] == [AOLRescaled] + [ResidualDense] * 2 + [
        AOLRescaled
    ]
    assert mlp.layers[1].activation is keras.activations.relu  # the Dense's own ReLU, kept
    assert mlp.layers[1].name == f"{kind}_hidden_1" and mlp.layers[1].kind == kind
    conv = constraint.wrap_critic(dcgan_critic((16, 16, 1), dim=4))
    assert [type(layer).__name__ for layer in conv.layers] == [
        "AOLRescaled",
        "ResidualConv",
        "LeakyReLU",
        "AOLRescaled",
        "ResidualConv",
        "LeakyReLU",
        "Flatten",
        "AOLRescaled",
    ]
    assert [layer.kernel.shape for layer in conv.layers if isinstance(layer, ResidualConv)] == [
        (1, 1, 4, 4),
        (1, 1, 8, 8),
    ]
    # Delta-orthogonal residual kernels and orthogonal Dense ones: T = I, the layers start exact.
    for layer in conv.layers + mlp.layers:
        if isinstance(layer, ResidualConv | ResidualDense):
            np.testing.assert_allclose(layer.thresholds().numpy(), 1.0, atol=1e-5)
    assert conv(np.zeros((2, 16, 16, 1), "float32")).shape == (2, 1)
    assert constraint.lipschitz_bound(conv) <= 1.0 + 1e-5


def test_shape_preserving_conv_becomes_one_residual_layer_and_kernel_size_is_bound():
    critic = keras.Sequential(
        [keras.Input((6, 6, 3)), keras.layers.Conv2D(3, 5, padding="same", name="same")]
    )
    (layer,) = SLL().wrap_critic(critic).layers
    assert isinstance(layer, ResidualConv) and layer.kernel.shape == (5, 5, 3, 3)
    strided = keras.Sequential([keras.Input((6, 6, 3)), keras.layers.Conv2D(4, 3, strides=2)])
    layers = CPL(kernel_size=3).wrap_critic(strided).layers
    assert layers[1].kernel.shape == (3, 3, 4, 4)


@pytest.mark.parametrize("constraint", [SLL(), CPL()])
def test_what_cannot_be_rewritten_is_refused_in_one_line(constraint):
    with pytest.raises(ConfigError, match="rewrites keras.Sequential critics") as info:
        constraint.wrap_critic(resnet_critic((32, 32, 3), dim=4))
    assert "\n" not in str(info.value)
    conv1d = keras.Sequential([keras.Input((8, 2)), keras.layers.Conv1D(2, 3)])
    with pytest.raises(ConfigError, match="supports Dense and Conv2D"):
        constraint.wrap_critic(conv1d)
    with pytest.raises(ConfigError, match="kernel_size must be >= 1"):
        type(constraint)(kernel_size=0)


@pytest.mark.parametrize("constraint", [SLL(), CPL()])
def test_stateless_gradients_flow_to_every_weight(constraint):
    keras.utils.set_random_seed(0)
    critic = type(constraint)(kernel_size=3).wrap_critic(conv_critic((6, 6, 2)))
    assert len(critic.non_trainable_variables) == 0
    names = {v.name for v in critic.trainable_variables}
    assert names <= {"kernel", "bias", "log_q"} and ("log_q" in names) == (constraint.kind == "sll")
    x = tf.random.stateless_normal((4, 6, 6, 2), seed=[1, 1])
    with tf.GradientTape() as tape:
        out = tf.reduce_sum(critic(x) * tf.constant([[1.0], [-2.0], [0.5], [3.0]]))
    for var, grad in zip(
        critic.trainable_variables, tape.gradient(out, critic.trainable_variables)
    ):
        assert grad is not None and np.isfinite(grad.numpy()).all(), var.path
        if var.name != "log_q":  # at T's exact start (T = I) q has no first-order effect
            assert float(tf.norm(grad)) > 0, var.path


@pytest.mark.parametrize("constraint", [SLL(), CPL()])
def test_trained_critic_keeps_its_certificate_above_the_audit_lower_bound(constraint):
    """Aggressive Adam steps (1e-2) with no after_update: the construction alone keeps the bound
    ≤ 1 + 1e-4, and it is never below the largest Jacobian norm the audit finds."""
    from lipgan.metrics import audit

    keras.utils.set_random_seed(0)
    critic = constraint.wrap_critic(mlp_critic((2,), width=16, depth=3, activation="maxmin"))
    step = critic_update_step(critic, constraint=None)
    rng = np.random.default_rng(0)
    for _ in range(30):
        real = tf.constant(rng.standard_normal((32, 2)), tf.float32)
        step(real, tf.constant(rng.standard_normal((32, 2)) * 2 + 1, tf.float32))
    residual = [layer for layer in critic.layers if isinstance(layer, ResidualDense)]
    assert max(np.abs(layer.thresholds().numpy() - 1).max() for layer in residual) > 1e-3
    real, fake = rng.standard_normal((256, 2)), rng.standard_normal((256, 2)) * 2 + 1
    report = audit.audit(critic, real, fake, constraint=constraint)
    assert report["upper_bound_source"] == f"constraint:{constraint.name}"
    assert report["upper_bound"] <= 1.0 + 1e-4
    assert report["bounds_consistent"] and report["lower_bound"] > 0.3


@pytest.mark.parametrize(
    "constraint,factory,shape",
    [
        (SLL(), lambda s: mlp_critic(s, width=8, depth=2), (2,)),
        (CPL(kernel_size=3), conv_critic, (6, 6, 2)),
    ],
)
def test_critic_and_its_gradients_are_the_same_under_xla(constraint, factory, shape):
    keras.utils.set_random_seed(0)
    critic = constraint.wrap_critic(factory(shape))
    assert_compiled_matches_eager(critic, tf.random.stateless_normal((4, *shape), seed=[2, 2]))


def test_layers_round_trip_through_their_config():
    for layer in (ResidualDense("cpl", inner=3, activation="relu"), ResidualConv("sll", 2)):
        copy = type(layer).from_config(layer.get_config())
        assert copy.get_config() == layer.get_config()


# -- the conformance kit --------------------------------------------------------------------------
def _builtins():
    from tests.test_testing_kit import builtins

    return {cls.name for cls, _ in builtins()}


class TestSLLConformance(ConstraintConformance):
    constraint_class = SLL

    def test_replica_invariance(self):  # stateless: the slow built-ins test covers all of them
        assert "sll" in _builtins()


class TestSLLConformanceConv(TestSLLConformance):
    data_shape = (8, 8, 3)
    critic_factory = conv_critic


class TestCPLConformance(ConstraintConformance):
    constraint_class = CPL
    constraint_kwargs = {"kernel_size": 3}

    def test_replica_invariance(self):
        assert "cpl" in _builtins()


class TestCPLConformanceConv(TestCPLConformance):
    data_shape = (8, 8, 3)
    critic_factory = conv_critic
