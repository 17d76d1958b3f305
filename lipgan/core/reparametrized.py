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

import functools

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from lipgan.core.constraint import Constraint
from lipgan.core.errors import ConfigError
from lipgan.core.lipschitz import (
    activation_fn_lipschitz,
    activation_layer_lipschitz,
    own_lipschitz_bound,
)

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
    """``Σⱼ |KKᵀ|ᵢⱼ`` per input unit ``i`` of a Dense kernel ``K`` [in, out] (the map is x ↦ xK).

    A single output (every critic's last layer) makes ``KKᵀ = kkᵀ`` rank one, and the sum is
    ``|kᵢ|·‖k‖₁`` exactly: O(in) work instead of an [in, in] matrix (4096² for the DCGAN critic,
    whose abs and its gradient, memory-bound, took longer than any conv's rescaling).
    """
    if kernel.shape[1] == 1:
        magnitude = ops.abs(kernel[:, 0])
        return magnitude * ops.sum(magnitude)
    gram = tf.matmul(kernel, kernel, transpose_b=True)
    # A dot product of n terms is within γ_n·Σ|a_k·b_k| ≤ n·(eps/2)·‖a‖·‖b‖ of its exact value in any
    # summation order (Higham, "Accuracy and Stability of Numerical Algorithms", 2nd ed., §3.1):
    # n·eps leaves a factor 2 for the rounding of the diagonal. AOL's orthogonal start makes every
    # off-diagonal entry such noise.
    rounding = kernel.shape[1] * float(np.finfo(gram.dtype.as_numpy_dtype).eps)
    return tf.reduce_sum(_abs_beyond_rounding(gram, tf.linalg.diag_part(gram), rounding), axis=1)


def conv_gram_channel_matrix(kernel: tf.Tensor) -> tf.Tensor:
    """``B_ij = Σ_Δ |A_ij[Δ]|`` [in, in], with ``A[Δ] = Σ_{u,c} K[u,i,c] K[u+Δ,j,c]``.

    ``A`` is the kernel's autocorrelation (Prach & Lampert, ECCV 2022, Sec. 4, the ``PᵀP``
    convolution): entry (pixel p, channel i; pixel q, channel j) of the stride-1 convolution's Gram
    matrix WᵀW is ``A_ij[q - p]`` (zero padding only drops terms), so ``Σ_j B_ij`` bounds every row sum
    of |WᵀW| for channel i. A stride or a cropped output keeps a subset of W's rows, which lowers WᵀW
    in the PSD order, so the bounds hold for them too.

    Computed by the convolution theorem: on an ``N = (2kh−1)·(2kw−1)`` grid, where the kernel's
    circular autocorrelation equals the linear one (every shift Δ has its own cell), the DFT
    ``K̂[ω] = R[ω] + iI[ω]`` ([in, out] per frequency) gives ``Â[ω] = conj(K̂[ω]) K̂[ω]ᵀ =
    (RRᵀ + IIᵀ) + i(RIᵀ − IRᵀ)``, three [in, out] × [out, in] products per frequency (the
    imaginary part is ``M − Mᵀ`` for ``M = RIᵀ``), and ``A`` is its inverse DFT. The kernel is
    real, so half the frequencies suffice (``Â[−ω]`` is the conjugate of ``Â[ω]``), and
    ``A[−Δ] = A[Δ]ᵀ`` leaves half the shifts to transform back. The DFTs
    are products with constant cosine/sine matrices (:func:`_half_spectrum`), so everything is a
    real matrix product that autodiff, XLA and TPUs handle as usual. This is the 2-D DFT
    block-diagonalization of a convolution that Sedghi, Gupta & Long (ICLR 2019, "The Singular
    Values of Convolutional Layers") use for exact singular values; here only its Gram matrix is
    needed. Cost: ``3·in²·out·(N+1)/2`` multiply-adds (41·3 = 123 ``in²·out`` for a 5×5 kernel)
    plus the two DFTs, against ``kw²·in²·out·kh(kh+1)/2`` (375 ``in²·out``) for ``kh`` products of
    kernel row pairs with a 0/1 matrix summing the horizontal shifts
    (``benchmarks/aol_rescale/micro.py`` times both). The numbers are the same up to float rounding
    (``tests/test_certified.py``).
    """
    kh, kw, cin, cout = kernel.shape
    forward, inverse = (tf.constant(m, kernel.dtype) for m in _half_spectrum(kh, kw))
    nf = inverse.shape[0]  # frequencies (and shifts) kept: 0 and one of each pair
    flat = tf.reshape(kernel, (kh * kw, cin * cout))
    real = tf.reshape(tf.matmul(forward[:nf], flat), (nf, cin, cout))
    imag = tf.reshape(tf.matmul(forward[nf:], flat), (nf, cin, cout))
    gram_re = tf.matmul(real, real, transpose_b=True) + tf.matmul(imag, imag, transpose_b=True)
    cross = tf.matmul(real, imag, transpose_b=True)
    gram_im = cross - tf.transpose(cross, (0, 2, 1))  # RIᵀ − IRᵀ
    shifts = tf.matmul(inverse[:, :nf], tf.reshape(gram_re, (nf, cin * cin))) + tf.matmul(
        inverse[:, nf:], tf.reshape(gram_im, (nf, cin * cin))
    )  # [Δ, (i, j)] for Δ = 0 and one of each pair ±Δ; the other half is A[−Δ] = A[Δ]ᵀ
    shifts = tf.reshape(shifts, (nf, cin, cin))
    # The DFT leaves every A_ij[Δ] with an error up to about 5·eps·sqrt(A_ii[0]·A_jj[0])
    # (Cauchy–Schwarz bounds Σ_ω |Â_ij[ω]|/N by that root; checked on random and
    # delta-orthogonal 5×5 kernels): 16·eps is the margin. A delta-orthogonal kernel, AOL's conv
    # start, has A_ij[Δ] = 0 at every shift but 0, so all of those are such noise.
    eps = float(np.finfo(shifts.dtype.as_numpy_dtype).eps)
    magnitude = _abs_beyond_rounding(shifts, tf.abs(tf.linalg.diag_part(shifts[0])), 16 * eps)
    half = tf.reduce_sum(magnitude, axis=0)
    return half + tf.transpose(half) - magnitude[0]


def _abs_beyond_rounding(gram: tf.Tensor, diagonal: tf.Tensor, rounding: float) -> tf.Tensor:
    """``|gram|``, with no gradient where an entry ``(i, j)`` is within rounding error of 0.

    ``gram`` holds inner products of rows ``i`` and ``j`` (``[..., n, n]``; ``diagonal`` their
    squared norms, ``[n]``), computed with an error up to ``rounding·sqrt(diagonal_i·diagonal_j)``.
    An entry that is 0 in exact arithmetic (orthogonal rows, which is how AOL starts) comes out as
    noise whose sign, and so the gradient of ``|·|``, differs between eager, tf.function and XLA,
    and with the library versions: a real gradient of ``‖K_i‖·‖K_j‖``'s size in a random
    direction. Below the bound the sign is unknowable and the gradient is taken as 0, as for an
    exact 0 (``sign(0) = 0``); values are unchanged.
    """
    magnitude = tf.abs(gram)
    noise = tf.stop_gradient(rounding * tf.sqrt(diagonal[:, None] * diagonal[None, :]))
    return tf.where(magnitude > noise, magnitude, tf.stop_gradient(magnitude))


@functools.cache
def _half_spectrum(kh: int, kw: int) -> tuple[np.ndarray, np.ndarray]:
    """The real DFT matrices of :func:`conv_gram_channel_matrix` on the ``(2kh−1)×(2kw−1)`` grid.

    ``forward`` [2F, kh·kw]: rows ``cos θ`` then ``−sin θ``, ``θ = 2π(fy·y/Ny + fx·x/Nx)``, for the
    ``F = (N+1)/2`` frequencies ω = 0 and one of each pair ±ω. ``inverse`` [(N+1)/2, 2F]: the real
    part of the inverse DFT at shift 0 and one of each pair ±Δ, each conjugate pair ±ω counted
    twice (``(1/N)·Σ_ω Re(Â[ω] e^{iθ}) = (1/N)·Σ_ω (Re Â cos θ − Im Â sin θ)``).
    """
    ny, nx = 2 * kh - 1, 2 * kw - 1
    # ω (and Δ) in lexicographic order over [−(ny−1)/2, (ny−1)/2] × [−(nx−1)/2, (nx−1)/2]:
    # the first (N+1)/2 from the centre on are 0 and one of each pair.
    centred = [(a - kh + 1, b - kw + 1) for a in range(ny) for b in range(nx)]
    freqs = np.array(centred[len(centred) // 2 :], np.float64)  # [F, 2]: (0, 0), then ω > 0
    taps = np.array([(y, x) for y in range(kh) for x in range(kw)], np.float64)  # [kh·kw, 2]

    def angle(points, freq):  # [len(points), len(freq)]: 2π(fy·y/Ny + fx·x/Nx)
        return (
            2
            * np.pi
            * (np.outer(points[:, 0], freq[:, 0]) / ny + np.outer(points[:, 1], freq[:, 1]) / nx)
        )

    theta = angle(freqs, taps)  # [ω, tap]
    forward = np.concatenate([np.cos(theta), -np.sin(theta)])
    phase = angle(freqs, freqs)  # [Δ, ω]: the shifts kept are the same index set as ω
    weight = np.where(np.all(freqs == 0, axis=1), 1.0, 2.0) / (ny * nx)
    inverse = np.concatenate([np.cos(phase) * weight, -np.sin(phase) * weight], axis=1)
    return forward, inverse


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
    :class:`KernelReparametrization`, a layer with its own certificate (a ``lipschitz_bound()``
    method: :func:`lipgan.core.lipschitz.own_lipschitz_bound`), an isometry (flatten, reshape) nor
    an activation of known Lipschitz constant
    (:func:`lipgan.core.lipschitz.activation_layer_lipschitz`).
    """
    if not isinstance(critic, keras.Sequential):
        return None
    total = 1.0
    for layer in critic.layers:
        own = own_lipschitz_bound(layer)
        if own is not NotImplemented:
            bound = own
        elif isinstance(layer, KernelReparametrization):
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
        from lipgan.core.critic_checks import hint_if_relu

        hint_if_relu(critic, self.name or type(self).__name__)  # recommended_activation, once
        return wrap_layers(critic, self.wrap_layer)

    def lipschitz_bound(self, critic):
        """Product of each effective kernel's operator-norm bound and activation constants."""
        return chain_lipschitz_bound(critic)
