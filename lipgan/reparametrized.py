"""Critic layers whose kernel is a function of a raw kernel, and the bounds they certify.

Certified constraints (``bjorck``, ``aol``) do not change a critic's weights after the fact as
spectral norm does: each Dense/Conv layer keeps its ordinary (raw) kernel as the trainable variable,
and every call computes the *effective* kernel from it (orthonormalized, rescaled, ...) and runs the
layer with that. Gradients flow through the computation; nothing is assigned, so there is no state to
keep in sync across replicas and the layer is replica-invariant by construction.

:func:`chain_lipschitz_bound` multiplies, along a ``keras.Sequential`` chain, each wrapped layer's
bound (computed from its effective kernel in float64, never assumed) by each activation's Lipschitz
constant; it gives up (None) on any layer it cannot bound.
"""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from lipgan.constraint import Constraint
from lipgan.errors import ConfigError
from lipgan.lipschitz import activation_fn_lipschitz, activation_layer_lipschitz

#: Layers that change no distances: flattening and reshaping are isometries.
ISOMETRIES = (keras.layers.InputLayer, keras.layers.Flatten, keras.layers.Reshape)


class KernelReparametrization(keras.layers.Wrapper):
    """Run a Dense or Conv2D layer with ``kernel = self.transform(raw kernel)`` (subclasses say how).

    Supports the layer's bias and activation; Conv2D must be channels-last with ``groups=1``.
    The transform runs in float32 whatever the policy (orthonormalization in bfloat16 is too coarse).
    """

    supports_conv = True

    def __init__(self, layer, **kwargs):
        if isinstance(layer, keras.layers.Conv2D):
            if not self.supports_conv:
                raise ConfigError(f"{type(self).__name__} cannot wrap Conv2D layer {layer.name!r}")
            if layer.data_format != "channels_last" or layer.groups != 1:
                raise ConfigError(
                    f"layer {layer.name!r}: certified constraints need channels_last convolutions "
                    "with groups=1"
                )
        elif not isinstance(layer, keras.layers.Dense):
            raise ConfigError(f"cannot reparametrize layer {layer.name!r} of type {type(layer)}")
        # The wrapped layer's policy (e.g. a float32 output layer in a mixed_bfloat16 critic).
        kwargs.setdefault("dtype", layer.dtype_policy)
        super().__init__(layer, **kwargs)

    def transform(self, kernel: tf.Tensor) -> tf.Tensor:
        raise NotImplementedError

    def effective_kernel(self) -> tf.Tensor:
        """The kernel the layer computes with (float32)."""
        return self.transform(ops.cast(self.layer.kernel, "float32"))

    def call(self, inputs):
        layer = self.layer
        kernel = ops.cast(self.effective_kernel(), inputs.dtype)
        if isinstance(layer, keras.layers.Dense):
            out = ops.matmul(inputs, kernel)
        else:
            out = layer.convolution_op(inputs, kernel)
        if layer.use_bias:
            out = ops.add(out, ops.cast(layer.bias, out.dtype))
        if layer.activation is not None:
            out = layer.activation(out)
        return out

    def compute_output_shape(self, input_shape):
        return self.layer.compute_output_shape(input_shape)

    def operator_norm_bound(self) -> float:
        """An upper bound on the layer's linear map's operator norm, from the effective kernel.

        Dense: the exact largest singular value (float64 SVD). Conv2D: sqrt of the Schur-test bound
        on the convolution's Gram matrix, from the kernel's autocorrelation
        (:func:`conv_gram_channel_matrix`, :func:`schur_bound`); valid for any stride, padding and
        dilation, tight for stride 1 and large images, loose for strided convolutions.
        """
        kernel = np.asarray(self.effective_kernel(), dtype=np.float64)
        if isinstance(self.layer, keras.layers.Dense):
            return float(np.linalg.norm(kernel, ord=2))
        gram = conv_gram_channel_matrix(tf.constant(kernel)).numpy()
        return float(np.sqrt(schur_bound(gram)))


def dense_gram_row_sums(kernel: tf.Tensor) -> tf.Tensor:
    """``Σⱼ |KKᵀ|ᵢⱼ`` per input unit ``i`` of a Dense kernel ``K`` [in, out] (the map is x ↦ xK)."""
    return ops.sum(ops.abs(ops.matmul(kernel, ops.transpose(kernel))), axis=1)


def conv_gram_channel_matrix(kernel: tf.Tensor) -> tf.Tensor:
    """``B_ij = Σ_Δ |A_ij[Δ]|`` [in, in], with ``A[Δ] = Σ_{u,c} K[u,i,c] K[u+Δ,j,c]``.

    ``A`` is the kernel's autocorrelation (Prach & Lampert, ECCV 2022, Sec. 4, the ``PᵀP``
    convolution): entry (pixel p, channel i; pixel q, channel j) of the stride-1 convolution's Gram
    matrix WᵀW is ``A_ij[q - p]`` (zero padding only drops terms), so ``Σ_j B_ij`` bounds every row sum
    of |WᵀW| for channel i. A stride or a cropped output keeps a subset of W's rows, which lowers WᵀW
    in the PSD order, so the bounds hold for them too.

    Computed as ``kh`` matrix products, one per vertical shift ``dy ≥ 0``: the kernel rows ``y`` and
    ``y + dy``, each flattened to ``[(x, i), (y, c)]``, give every ``A[dy, x' − x]`` at once, and the
    horizontal shifts are summed out of that ``[kw, kw]`` block grid by one small product with a
    0/1 matrix (:func:`_diagonal_selector`; as ``diag_part`` of the grid it took ~10 % longer
    forward and backward); ``A[−Δ] = A[Δ]ᵀ`` gives the other half. That is
    ``kw²·in²·out·kh(kh+1)`` multiply-adds, all in large products,
    against ``in²·out·kh·kw·(2kh−1)(2kw−1)`` for the kernel convolved with itself over a zero-padded
    copy (the earlier form; 6.5× the arithmetic for a 5×5 kernel, most of it on zeros).
    """
    kh, kw, cin, cout = kernel.shape
    rows = ops.transpose(kernel, (1, 2, 0, 3))  # [kw, in, kh, out]
    selector = _diagonal_selector(kw, kernel.dtype)
    total = None
    for dy in range(kh):
        top = ops.reshape(rows[:, :, : kh - dy, :], (kw * cin, (kh - dy) * cout))
        bottom = ops.reshape(rows[:, :, dy:, :], (kw * cin, (kh - dy) * cout))
        grid = ops.matmul(top, ops.transpose(bottom))  # [(x, i), (x', j)]: A_ij[dy, x' − x]
        grid = ops.transpose(ops.reshape(grid, (kw, cin, kw, cin)), (1, 3, 0, 2))  # [i, j, x, x']
        # [i, j, dx]: Σ_x A_ij at (x, x + dx), for each dx in −(kw − 1) .. kw − 1
        shifts = ops.reshape(
            ops.matmul(ops.reshape(grid, (cin * cin, kw * kw)), selector), (cin, cin, -1)
        )
        row = ops.sum(ops.abs(shifts), axis=-1)
        row = row if dy == 0 else row + ops.transpose(row)  # the shifts −Δ
        total = row if total is None else total + row
    return total


def _diagonal_selector(kw: int, dtype) -> tf.Tensor:
    """``S[(x, x'), dx] = 1`` where ``x' − x = dx − (kw − 1)``: sums a ``[kw, kw]`` grid's diagonals."""
    selector = np.zeros((kw, kw, 2 * kw - 1), np.float32)
    for x in range(kw):
        for x2 in range(kw):
            selector[x, x2, x2 - x + kw - 1] = 1.0
    return ops.cast(selector.reshape(kw * kw, 2 * kw - 1), dtype)


def conv_gram_row_sums(kernel: tf.Tensor) -> tf.Tensor:
    """Per input channel, a bound on the row sums of |WᵀW| (:func:`conv_gram_channel_matrix`)."""
    return ops.sum(conv_gram_channel_matrix(kernel), axis=1)


def schur_bound(matrix: np.ndarray, iterations: int = 200) -> float:
    """An upper bound on the spectral radius of the nonnegative symmetric ``matrix``.

    Schur test: ``max_i (Bw)_i / w_i`` for any positive ``w``; ``w`` from power iteration (the Perron
    vector makes it tight). A convolution's Gram matrix is bounded entrywise, row by row, by
    ``B`` acting on channel weights, so this bounds its largest eigenvalue as well.
    """
    w = np.ones(matrix.shape[0])
    for _ in range(iterations):
        w = matrix @ w + 1e-300
        w /= w.max()
    w = np.maximum(w, 1e-12)  # any positive w gives a valid bound
    return float(np.max((matrix @ w) / w))


def fresh_copy(layer, **overrides) -> keras.layers.Layer:
    """An unbuilt layer with ``layer``'s config (and ``overrides``)."""
    return layer.__class__.from_config({**layer.get_config(), **overrides})


def wrap_layers(critic: keras.Model, wrap) -> keras.Model:
    """A clone of ``critic`` with each layer replaced by ``wrap(layer)``, or a fresh copy if None."""

    def clone(layer):
        new = wrap(layer)
        return fresh_copy(layer) if new is None else new

    wrapped = keras.models.clone_model(critic, clone_function=clone)
    wrapped.build(critic.inputs[0].shape if critic.inputs else None)
    return wrapped


def chain_lipschitz_bound(critic: keras.Model) -> float | None:
    """Product of per-layer bounds along a ``keras.Sequential`` critic, or None.

    None when the critic is not Sequential or has a layer that is neither a
    :class:`KernelReparametrization`, an isometry (flatten, reshape) nor an activation of known
    Lipschitz constant (:func:`lipgan.lipschitz.activation_layer_lipschitz`).
    """
    if not isinstance(critic, keras.Sequential):
        return None
    total = 1.0
    for layer in critic.layers:
        if isinstance(layer, KernelReparametrization):
            act = activation_fn_lipschitz(layer.layer.activation)
            bound = None if act is None else layer.operator_norm_bound() * act
        elif isinstance(layer, ISOMETRIES):
            bound = 1.0
        else:
            bound = activation_layer_lipschitz(layer)
        if bound is None:
            return None
        total *= bound
    return total


class KernelConstruction(Constraint):
    """Base of the constraints that build the critic from reparametrized layers (bjorck, aol).

    A subclass says how one layer is replaced (:meth:`wrap_layer`: a wrapped copy, ``None`` to keep
    it, or a one-line ConfigError to refuse it); the critic is rewritten by :func:`wrap_layers` and
    its certified bound is :func:`chain_lipschitz_bound` of the effective kernels.
    """

    #: The critic activation these layers need to keep ‖∇D‖ = 1 (ReLU loses norm where units are
    #: off); ``lipgan study`` binds it for the shipped critics in its default constraint list.
    recommended_activation = "maxmin"

    def wrap_layer(self, layer) -> keras.layers.Layer | None:
        raise NotImplementedError

    def wrap_critic(self, critic):
        from lipgan.models.checks import hint_if_relu

        hint_if_relu(critic, self.name or type(self).__name__)  # recommended_activation, once
        return wrap_layers(critic, self.wrap_layer)

    def lipschitz_bound(self, critic):
        """Product of each effective kernel's operator-norm bound and activation constants."""
        return chain_lipschitz_bound(critic)
