"""AOL's rescaling: the DFT form of the conv autocorrelation and the rank-1 Dense case.

The definition-level checks (float64, against a shift-by-shift sum, and the contraction on the
operator) are in tests/test_certified.py; these pin the float32 path the critic trains with against
the explicit convolution matrix, and the cost the docstrings state.
"""

import numpy as np
import pytest
import tensorflow as tf

from lipgan.bench.flops import graph_flops
from lipgan.core.reparametrized import (
    conv_gram_channel_matrix,
    conv_gram_row_sums,
    dense_gram_row_sums,
)


def explicit_conv_matrix(kernel, size, strides, padding):
    """W [outputs, inputs] of ``x ↦ conv2d(x, kernel)`` on ``size``×``size`` images (float64)."""
    kh, kw, cin, _ = kernel.shape
    basis = np.eye(size * size * cin).reshape(-1, size, size, cin)
    out = tf.nn.conv2d(basis, tf.constant(kernel, tf.float64), strides, padding.upper()).numpy()
    return out.reshape(len(basis), -1).T


@pytest.mark.parametrize(
    "shape,strides,padding",
    [
        ((3, 3, 3, 4), 1, "same"),
        ((5, 5, 2, 3), 1, "same"),
        ((2, 3, 2, 5), 1, "same"),
        ((4, 1, 3, 2), 1, "same"),
        ((5, 5, 3, 4), 2, "same"),
        ((3, 4, 2, 3), 2, "valid"),
        ((3, 3, 4, 2), 1, "valid"),
    ],
)
def test_float32_row_sums_match_the_explicit_gram_matrix(shape, strides, padding):
    kernel = np.random.default_rng(sum(shape) + strides).standard_normal(shape)
    size = 2 * (2 * max(shape[:2]) - 2) + 1  # the centre pixel sees every shift of the kernel
    w = explicit_conv_matrix(kernel, size, strides, padding)
    sums = np.abs(w.T @ w).sum(axis=1).reshape(size, size, shape[2])
    bound = conv_gram_row_sums(tf.constant(kernel, tf.float32)).numpy()
    assert np.all(sums <= bound * (1 + 1e-5))  # any stride and padding: a bound on every row
    if strides == 1 and padding == "same":  # and exact at an interior pixel
        np.testing.assert_allclose(sums[size // 2, size // 2], bound, rtol=1e-5)


@pytest.mark.parametrize("shape", [(5, 5, 8, 16), (3, 2, 5, 3), (1, 1, 4, 4)])
def test_float32_and_float64_forms_agree_and_gradients_match(shape):
    kernel = np.random.default_rng(7).standard_normal(shape)
    weights = np.random.default_rng(8).standard_normal(shape[2:3] * 2)

    def value_and_grad(dtype):
        k = tf.constant(kernel, dtype)
        with tf.GradientTape() as tape:
            tape.watch(k)
            loss = tf.reduce_sum(conv_gram_channel_matrix(k) * tf.constant(weights, dtype))
        return loss.numpy(), tape.gradient(loss, k).numpy()

    (v32, g32), (v64, g64) = value_and_grad(tf.float32), value_and_grad(tf.float64)
    np.testing.assert_allclose(v32, v64, rtol=1e-5)
    # |A| has a kink at 0, so compare the gradient where it is smooth: everywhere for random data.
    np.testing.assert_allclose(g32, g64, rtol=1e-3, atol=1e-4 * np.abs(g64).max())


def test_conv_rescaling_costs_the_dft_form_not_the_row_pair_products():
    kh, kw, cin, cout = 5, 5, 64, 128
    f = (2 * kh - 1) * (2 * kw - 1) // 2 + 1  # frequencies kept
    products = 3 * f * cin * cin * cout  # RRᵀ, IIᵀ, RIᵀ per frequency
    dfts = 2 * f * kh * kw * cin * cout + 2 * f * f * cin * cin
    # the form AOL was computed in before the DFT form
    row_pairs = kw * kw * cin * cin * cout * kh * (kh + 1) // 2
    flops = graph_flops(conv_gram_channel_matrix, tf.zeros((kh, kw, cin, cout)))
    assert flops <= 1.1 * 2 * (products + dfts)
    assert flops <= 0.6 * 2 * row_pairs


def test_dense_single_output_row_sums_are_exact_and_linear_in_width():
    k = np.random.default_rng(3).standard_normal((4096, 1))
    got = dense_gram_row_sums(tf.constant(k)).numpy()
    np.testing.assert_allclose(got, np.abs(k @ k.T).sum(axis=1), rtol=1e-12)
    # no [in, in] matrix: a few operations per input unit, where |KKᵀ| costs in² of them
    assert graph_flops(dense_gram_row_sums, tf.zeros((4096, 1))) <= 8 * 4096


def test_conv_kernels_start_delta_orthogonal_so_the_rescaling_is_exact_and_the_gradient_survives():
    import keras

    from lipgan.core.penalties import per_example_gradient_norm
    from lipgan.models.dcgan import dcgan_critic
    from lipgan_plugins.aol import AOL, AOLRescaled

    keras.utils.set_random_seed(0)
    critic = AOL().wrap_critic(dcgan_critic((16, 16, 1), dim=8, activation="maxmin"))
    convs = [
        layer
        for layer in critic.layers
        if isinstance(layer, AOLRescaled) and isinstance(layer.layer, keras.layers.Conv2D)
    ]
    assert len(convs) == 2
    for layer in convs:  # in ≤ out: the centre tap has orthonormal rows, nothing to rescale
        np.testing.assert_allclose(layer.effective_kernel(), layer.layer.kernel, atol=1e-6)
    x = tf.random.stateless_uniform((16, 16, 16, 1), seed=[0, 1], minval=-1.0, maxval=1.0)
    # Glorot kernels, rescaled, started this critic at a mean ‖∇D‖ of 0.03 (here 0.29)
    assert float(tf.reduce_mean(per_example_gradient_norm(critic, x))) > 0.1


def autocorrelation_bound_by_shifts(k):
    """``B = Σ_Δ |A[Δ]|`` one shift at a time in TF: a 0 tap gives an exact 0 (and sign 0)."""
    kh, kw = k.shape[:2]
    total = 0.0
    for dy in range(-kh + 1, kh):
        for dx in range(-kw + 1, kw):
            a = 0.0
            for y in range(max(0, -dy), min(kh, kh - dy)):
                for x in range(max(0, -dx), min(kw, kw - dx)):
                    a += tf.matmul(k[y, x], k[y + dy, x + dx], transpose_b=True)
            total += tf.abs(a)
    return total


def test_delta_kernels_get_the_exact_zero_gradient_in_every_compilation_mode():
    centre = np.zeros((4, 6))  # orthonormal rows with exact zeros: a signed partial permutation
    centre[np.arange(4), np.random.default_rng(1).permutation(6)[:4]] = [1.0, -1.0, -1.0, 1.0]
    kernel = tf.constant(np.pad(centre[None, None], [(1, 1), (1, 1), (0, 0), (0, 0)]))
    weights = tf.constant(np.random.default_rng(2).standard_normal((4, 4)))

    def grad(form, k):
        with tf.GradientTape() as tape:
            tape.watch(k)
            loss = tf.reduce_sum(form(k) * tf.cast(weights, k.dtype))
        return tape.gradient(loss, k)

    want = grad(autocorrelation_bound_by_shifts, kernel).numpy()
    k32 = tf.cast(kernel, tf.float32)
    for fn in (grad, tf.function(grad), tf.function(grad, jit_compile=True)):
        got = fn(conv_gram_channel_matrix, k32).numpy()  # DFT noise at every shift but 0
        np.testing.assert_allclose(got, want, atol=1e-5)


@pytest.mark.parametrize("rows,cols", [(16, 16), (8, 32)])
def test_orthogonal_dense_kernels_get_the_analytic_gradient_in_every_compilation_mode(rows, cols):
    """AOL's Dense start: an orthogonal float32 kernel, whose Gram matrix KKᵀ is I up to rounding.
    Its off-diagonal entries are noise of either sign, so |·|'s gradient there is the rounding's
    sign, which differed between tf.function and XLA (a Fig. 1 critic's gradients by up to a third
    of their size). Taken as 0, ``Σ_i w_i·Σ_j |KKᵀ|_ij`` has the gradient ``2·w_i·K_i`` (row i),
    the same in every mode."""
    import keras

    kernel = tf.constant(keras.initializers.Orthogonal(seed=3)((rows, cols)), tf.float32)
    weights = tf.constant(np.random.default_rng(4).standard_normal(rows), tf.float32)

    def grad(k):
        with tf.GradientTape() as tape:
            tape.watch(k)
            loss = tf.reduce_sum(dense_gram_row_sums(k) * weights)
        return tape.gradient(loss, k)

    want = 2 * weights.numpy()[:, None] * kernel.numpy()
    for fn in (grad, tf.function(grad), tf.function(grad, jit_compile=True)):
        np.testing.assert_allclose(fn(kernel).numpy(), want, atol=1e-6)
