"""1-Lipschitz residual layers ``x − W·diag(s)·relu(Wᵀx + b)`` (SLL and CPL), and their certificates.

Both layer families of issue #39 are one map with a different per-unit scale ``s``:

* **SLL** (Araujo et al., "A Unified Algebraic Perspective on Lipschitz Neural Networks", ICLR 2023,
  Theorem 3; ``github.com/araujoalexandre/Lipschitz-SLL-Networks``, ``SDPBasedLipschitzDense`` /
  ``SDPBasedLipschitzConvLayer``): ``s = 2/t`` with ``t_i = Σⱼ |WᵀW|ᵢⱼ qⱼ/qᵢ`` for learned ``q > 0``.
* **CPL** (Meunier et al., "A Dynamical System Perspective for Lipschitz Neural Networks", ICML
  2022): ``s = 2/c`` for every unit, ``c ≥ ‖W‖₂²``. The paper takes ``c`` from a power iteration,
  which approaches ‖W‖² from *below*, so the layer it computes is not 1-Lipschitz until the
  iteration has converged. Here ``c`` is a certified upper bound instead: the Schur test
  ``c = maxᵢ (|WᵀW|w)ᵢ/wᵢ``, valid for *any* positive ``w``; ``w`` comes from a few power
  iterations on the nonnegative ``|WᵀW|`` (its Perron vector makes the test tightest), so the
  iteration only tightens the bound and can never invalidate it. ``c`` is exact (= 1) for an
  orthogonal kernel, where training starts; it is ``ρ(|WᵀW|)``, above ``‖W‖²`` when the Gram
  matrix has mixed signs (docs/plugins.md, "#### cpl", has the measured ratio).

**Why 1-Lipschitz** (the theorem both rest on): for inputs x, y the difference of outputs is
``J(x − y)`` with ``J = I − W·diag(s·d)·Wᵀ``, ``dᵢ ∈ [0, 1]`` the slopes of relu between the two
pre-activations. J is symmetric, and ``0 ≼ W diag(s·d) Wᵀ ≼ 2I`` whenever
``μ = λ_max(S^{1/2} WᵀW S^{1/2}) ≤ 2`` (``S = diag(s)``), so every eigenvalue of J is in
``[1 − μ, 1]`` and ``‖J‖ ≤ max(1, μ − 1)``. SLL's ``t`` makes ``diag(t) − WᵀW`` diagonally
dominant after the scaling by q (a weighted Gershgorin bound), so ``μ ≤ 2``; CPL's ``c ≥ ‖W‖²``
gives ``μ = 2‖W‖²/c ≤ 2``. :meth:`lipschitz_bound` recomputes ``μ`` in float64 from the weights
the layer holds (Dense: an exact SVD; Conv: the Schur test on the kernel's autocorrelation, a bound
valid for any image size) and returns ``max(1, μ − 1)`` times the outer activation's constant.

**Convolutions**: ``Wᵀx`` is ``conv2d(x, K)`` (stride 1, 'same') and ``W·h`` its exact adjoint
``conv2d_transpose(h, K)``. The Gram matrix ``WᵀW`` over the inner channels is bounded row by row by
``B = Σ_Δ |A[Δ]|`` of the kernel's autocorrelation with its channel axes swapped
(:func:`lipgan.core.reparametrized.conv_gram_channel_matrix`; the reference code's ``ktk`` of
``conv2d(kernel, kernel)``): zero padding composes the infinite convolution with an embedding,
which only lowers ``WᵀW`` in the PSD order, so the bound holds at any image size.

Everything is recomputed from the trainable weights at every call (no state, nothing assigned):
gradients flow through ``t`` and ``c``, and the layers are replica-invariant and XLA-safe by
construction. Only the Perron weights ``w`` of CPL are treated as constants (``stop_gradient``):
the test is valid for any ``w``.
"""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

from lipgan.core.errors import ConfigError
from lipgan.core.lipschitz import activation_fn_lipschitz
from lipgan.core.reparametrized import (
    KernelConstruction,
    _abs_beyond_rounding,
    conv_gram_channel_matrix,
    fresh_copy,
    schur_bound,
)

KINDS = ("sll", "cpl")
#: Power iterations on |WᵀW| for CPL's Schur weights (any positive weights give a valid bound).
PERRON_ITERATIONS = 10


def dense_abs_gram(kernel: tf.Tensor) -> tf.Tensor:
    """``|KᵀK|`` [m, m] of a kernel K [n, m], gradients stopped where an entry is rounding noise."""
    gram = tf.matmul(kernel, kernel, transpose_a=True)
    rounding = kernel.shape[0] * float(np.finfo(gram.dtype.as_numpy_dtype).eps)
    return _abs_beyond_rounding(gram, tf.linalg.diag_part(gram), rounding)


def conv_abs_gram(kernel: tf.Tensor) -> tf.Tensor:
    """``B`` [m, m]: per inner-channel pair, ``Σ_Δ |A[Δ]|`` bounding the rows of ``|WᵀW|``.

    ``kernel`` [kh, kw, c, m] maps c input to m inner channels; ``WᵀW`` is the Gram matrix of the
    *transposed* convolution (inner → input), hence the swapped channel axes.
    """
    return conv_gram_channel_matrix(tf.transpose(kernel, (0, 1, 3, 2)))


def weighted_row_sums(abs_gram: tf.Tensor, q: tf.Tensor) -> tf.Tensor:
    """``tᵢ = Σⱼ |G|ᵢⱼ qⱼ / qᵢ`` (SLL's T, and the Schur test's ratios for weights q)."""
    return tf.linalg.matvec(abs_gram, q) / q


def perron_weights(abs_gram: tf.Tensor, iterations: int = PERRON_ITERATIONS) -> tf.Tensor:
    """Positive weights near the Perron vector of the nonnegative ``abs_gram`` (no gradient)."""
    g = tf.stop_gradient(abs_gram)
    w = tf.ones(g.shape[:1], g.dtype)
    for _ in range(iterations):
        w = tf.linalg.matvec(g, w)
        w = w / tf.maximum(tf.reduce_max(w), 1e-30)
    return tf.stop_gradient(tf.maximum(w, 1e-6))  # any positive w: a floor keeps the ratio finite


def residual_thresholds(kind: str, abs_gram: tf.Tensor, log_q=None) -> tf.Tensor:
    """``t`` [m]: SLL's per-unit T, or CPL's Schur bound ``c ≥ ‖W‖²`` repeated per unit."""
    if kind == "sll":
        return weighted_row_sums(abs_gram, tf.exp(log_q))
    c = tf.reduce_max(weighted_row_sums(abs_gram, perron_weights(abs_gram)))
    return tf.fill(abs_gram.shape[:1], c)


def safe_scale(t: tf.Tensor) -> tf.Tensor:
    """``2/t``, and 0 for a unit with t = 0 (a zero column of W: the unit does nothing)."""
    positive = t > 0
    return tf.where(positive, 2.0 / tf.where(positive, t, 1.0), 0.0)


def residual_mu(kernel: np.ndarray, scale: np.ndarray, weights=None) -> float:
    """A certified upper bound on ``μ = λ_max(S^{1/2} WᵀW S^{1/2})``, ``S = diag(scale)``, float64.

    ``scale`` is the layer's own float32 ``2/t`` (not recomputed: its rounding is part of the map
    the layer computes). Dense kernel [n, m]: exact, the largest squared singular value of
    ``K·S^{1/2}``. Conv kernel [kh, kw, c, m]: the Schur test
    (:func:`lipgan.core.reparametrized.schur_bound`) on ``S^{1/2} B S^{1/2}``, a bound for the
    convolution at any image size and padding. The test holds for any positive weights: the
    smaller of the power-iterated ones' and ``weights``' (the layer's own, :meth:`schur_weights`,
    with which the construction's proof gives exactly 2) is returned; the power iteration alone
    can stall 1e-5 above ρ on a matrix with nearly equal top eigenvalues.
    """
    kernel = np.asarray(kernel, np.float64)
    root = np.sqrt(np.asarray(scale, np.float64))
    if kernel.ndim == 2:
        return float(np.linalg.norm(kernel * root[None, :], ord=2) ** 2)
    b = conv_abs_gram(tf.constant(kernel)).numpy()
    matrix = root[:, None] * b * root[None, :]
    bound = schur_bound(matrix)
    if weights is not None:
        w = np.asarray(weights, np.float64)
        bound = min(bound, float(np.max(matrix @ w / w)))
    return bound


class _Residual(keras.layers.Layer):
    """Shared parts of :class:`ResidualDense` and :class:`ResidualConv`."""

    def __init__(
        self,
        kind: str,
        inner: int | None = None,
        activation=None,
        kernel_initializer="orthogonal",
        **kwargs,
    ):
        super().__init__(**kwargs)
        if kind not in KINDS:
            raise ValueError(f"residual layer kind must be one of {KINDS}, got {kind!r}")
        self.kind, self.inner = kind, None if inner is None else int(inner)
        self.activation = keras.activations.get(activation)
        self.kernel_initializer = keras.initializers.get(kernel_initializer)

    def _build_weights(self, kernel_shape) -> None:
        m = kernel_shape[-1]
        self.kernel = self.add_weight(
            shape=kernel_shape, initializer=self.kernel_initializer, name="kernel"
        )
        self.bias = self.add_weight(shape=(m,), initializer="zeros", name="bias")
        # SLL's q = exp(log_q) > 0, one per inner unit; q = 1 at the start (the reference: randn).
        self.log_q = (
            self.add_weight(shape=(m,), initializer="zeros", name="log_q")
            if self.kind == "sll"
            else None
        )

    def abs_gram(self, kernel: tf.Tensor) -> tf.Tensor:
        raise NotImplementedError

    def thresholds(self) -> tf.Tensor:
        """``t`` [m] in float32, from the current weights (see the module docstring)."""
        kernel = tf.cast(self.kernel, tf.float32)
        log_q = None if self.log_q is None else tf.cast(self.log_q, tf.float32)
        return residual_thresholds(self.kind, self.abs_gram(kernel), log_q)

    def scales(self) -> tf.Tensor:
        """``2/t`` [m] in float32, the per-unit factor the layer computes with."""
        return safe_scale(self.thresholds())

    def schur_weights(self) -> tf.Tensor:
        """Positive weights with which the Schur test of ``S^½·B·S^½`` is 2 by construction.

        ``qᵢ·sqrt(tᵢ)``: SLL's q, or CPL's Perron weights (whose test gave c); 1 for a dead unit.
        """
        t = self.thresholds()
        if self.kind == "sll":
            q = tf.exp(tf.cast(self.log_q, tf.float32))
        else:
            q = perron_weights(self.abs_gram(tf.cast(self.kernel, tf.float32)))
        return tf.where(t > 0, q * tf.sqrt(tf.maximum(t, 0.0)), 1.0)

    def _finish(self, out):
        return out if self.activation is None else self.activation(out)

    def lipschitz_bound(self) -> float | None:
        """A certified ℓ2 Lipschitz bound of the whole layer map, its outer activation included.

        ``max(1, μ − 1)`` (module docstring) with ``μ`` from :func:`residual_mu` in float64, times
        the outer activation's constant; None when that activation is not one lipgan knows.
        """
        act = activation_fn_lipschitz(self.activation)
        if act is None:
            return None
        kernel = keras.ops.convert_to_numpy(self.kernel)
        weights = self.schur_weights().numpy() if kernel.ndim == 4 else None
        mu = residual_mu(kernel, self.scales().numpy(), weights)
        return max(1.0, mu - 1.0) * act

    def get_config(self):
        return {
            **super().get_config(),
            "kind": self.kind,
            "inner": self.inner,
            "activation": keras.activations.serialize(self.activation),
            "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
        }


@keras.saving.register_keras_serializable(package="lipgan")
class ResidualDense(_Residual):
    """``x − K·diag(2/t)·relu(Kᵀx + b)`` on [b, n] inputs, kernel K [n, inner] (inner = n default).

    The dense SLL layer (``kind='sll'``) or CPL layer (``kind='cpl'``); ``activation`` is applied to
    the output (the Dense layer's own activation, when it replaces one).
    """

    def build(self, input_shape):
        n = int(input_shape[-1])
        self._build_weights((n, self.inner or n))

    def abs_gram(self, kernel):
        return dense_abs_gram(kernel)

    def call(self, inputs):
        scale = tf.cast(self.scales(), inputs.dtype)
        kernel = tf.cast(self.kernel, inputs.dtype)
        z = tf.nn.relu(tf.nn.bias_add(tf.matmul(inputs, kernel), tf.cast(self.bias, inputs.dtype)))
        # diag(s) folded into the kernel: one pass over [m] weights, not over [b, m] activations.
        return self._finish(inputs - tf.matmul(z, kernel * scale, transpose_b=True))

    def compute_output_shape(self, input_shape):
        return input_shape


@keras.saving.register_keras_serializable(package="lipgan")
class ResidualConv(_Residual):
    """``x − convᵀ(diag(2/t)·relu(conv(x) + b))`` on [b, h, w, c] images, stride 1, 'same'.

    Kernel [k, k, c, inner] (inner = c by default); the convolutional SLL/CPL layer (module
    docstring), channels last.
    """

    def __init__(self, kind: str, kernel_size: int = 3, **kwargs):
        super().__init__(kind, **kwargs)
        self.kernel_size = int(kernel_size)

    def build(self, input_shape):
        c = int(input_shape[-1])
        k = self.kernel_size
        self._build_weights((k, k, c, self.inner or c))

    def abs_gram(self, kernel):
        if self.kernel_size == 1:  # the autocorrelation has the one shift 0: |K₀₀ᵀK₀₀|
            return dense_abs_gram(kernel[0, 0])
        return conv_abs_gram(kernel)

    def call(self, inputs):
        scale = tf.cast(self.scales(), inputs.dtype)
        kernel = tf.cast(self.kernel, inputs.dtype)
        bias = tf.cast(self.bias, inputs.dtype)
        h = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(inputs, kernel, 1, "SAME"), bias))
        scaled = kernel * scale  # diag(s) folded into the kernel (per inner channel, last axis)
        if self.kernel_size == 1:  # the adjoint of a 1x1 conv is the 1x1 conv with Kᵀ (no
            # conv2d_transpose, slower on CPU; an einsum over [..., c] was 30x slower still)
            back = tf.nn.conv2d(h, tf.transpose(scaled, (0, 1, 3, 2)), 1, "SAME")
        else:
            back = tf.nn.conv2d_transpose(h, scaled, tf.shape(inputs), 1, "SAME")
        return self._finish(inputs - back)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "kernel_size": self.kernel_size}


def _is_square_dense(layer) -> bool:
    return isinstance(layer, keras.layers.Dense) and layer.kernel.shape[0] == layer.units


def _is_shape_preserving_conv(layer) -> bool:
    """A stride-1 'same' Conv2D with as many filters as input channels (no dilation, groups 1)."""
    return (
        type(layer) is keras.layers.Conv2D
        and tuple(layer.strides) == (1, 1)
        and layer.padding == "same"
        and tuple(layer.dilation_rate) == (1, 1)
        and layer.groups == 1
        and layer.data_format == "channels_last"
        and layer.kernel_size[0] == layer.kernel_size[1]
        and layer.kernel.shape[2] == layer.filters
    )


class ResidualConstruction(KernelConstruction):
    """Base of ``sll`` and ``cpl``: rewrite a ``keras.Sequential`` critic with residual layers.

    The rules (docs/plugins.md, "#### sll"), layer by layer:

    * a Dense layer with as many units as inputs becomes a :class:`ResidualDense` of that width
      (its activation applied to the output);
    * a shape-preserving Conv2D (stride 1, 'same', filters = input channels) becomes a
      :class:`ResidualConv` with its kernel size;
    * any other Dense or Conv2D (a change of width, a stride 2, the final output) becomes the
      layer :meth:`rescaled` returns (the plugins: AOL-rescaled, 1-Lipschitz), and a Conv2D is
      followed by a :class:`ResidualConv` of ``kernel_size`` at its output channels, so a
      convolutional critic gets one residual layer per stage. ``kernel_size`` is 1 by default:
      a 3x3 one (the reference's) triples the DCGAN critic's FLOPs per step, 1x1 adds 38 %
      (``lipgan bench``; docs/plugins.md, "#### cpl", "Cost");
    * every other layer is copied (activations, Flatten: their constants enter the bound).

    Functional critics (``resnet_critic``) are refused in one line. The certified bound is the
    product along the chain (:func:`lipgan.core.reparametrized.chain_lipschitz_bound`, which asks
    each residual layer's :meth:`~_Residual.lipschitz_bound`).
    """

    #: "sll" or "cpl" (the subclass's layer kind).
    kind: str = ""

    def __init__(self, kernel_size: int = 1):
        if int(kernel_size) < 1:
            raise ConfigError(f"{self.name}.kernel_size must be >= 1, got {kernel_size}")
        self.kernel_size = int(kernel_size)

    def rescaled(self, layer) -> keras.layers.Layer:
        """The certified replacement of a Dense/Conv2D that changes shape (the plugin's choice)."""
        raise NotImplementedError

    def conv_initializer(self):
        """The initializer of residual conv kernels (the plugins: delta-orthogonal, T exact)."""
        return keras.initializers.Orthogonal()

    def _residual_conv(self, kernel_size, activation, like, name) -> ResidualConv:
        return ResidualConv(
            self.kind,
            kernel_size=kernel_size,
            activation=activation,
            kernel_initializer=self.conv_initializer(),
            dtype=like.dtype_policy,
            name=name,
        )

    def wrap_layer(self, layer) -> list:
        if _is_square_dense(layer):
            return [
                ResidualDense(
                    self.kind,
                    activation=layer.activation,
                    dtype=layer.dtype_policy,
                    name=f"{self.kind}_{layer.name}",
                )
            ]
        if _is_shape_preserving_conv(layer):
            name = f"{self.kind}_{layer.name}"
            return [self._residual_conv(layer.kernel_size[0], layer.activation, layer, name)]
        if isinstance(layer, keras.layers.Dense) or "Conv" in type(layer).__name__:
            new = self.rescaled(layer)  # AOL refuses other convolutions in one line
            if isinstance(layer, keras.layers.Conv2D):
                name = f"{self.kind}_after_{layer.name}"
                return [new, self._residual_conv(self.kernel_size, None, layer, name)]
            return [new]
        return [fresh_copy(layer)]

    def wrap_critic(self, critic):
        from lipgan.core.critic_checks import hint_if_relu

        if not isinstance(critic, keras.Sequential):
            raise ConfigError(
                f"{self.name} rewrites keras.Sequential critics (mlp_critic, dcgan_critic), not "
                f"{type(critic).__name__} {critic.name!r}: a residual Add of two branches is not "
                "1-Lipschitz; use dcgan_critic or mlp_critic, or aol/bjorck"
            )
        hint_if_relu(critic, self.name)
        layers = [keras.Input(tuple(critic.inputs[0].shape[1:]))]
        for layer in critic.layers:
            layers += self.wrap_layer(layer)
        wrapped = keras.Sequential(layers, name=critic.name)
        wrapped.build(critic.inputs[0].shape)
        return wrapped
