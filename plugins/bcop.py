"""Orthogonal convolutions for ``bjorck``: BCOP over the polyphase components of a strided input.

Björck on a conv kernel reshaped to ``[kh·kw·c_in, c_out]`` makes that matrix orthonormal, not the
convolution: a pixel enters up to ``⌈kh/s⌉·⌈kw/s⌉`` patches, so such a conv can stretch an input
by up to that root. deel-lip (``SpectralConv2D``, ``_compute_conv_lip_factor`` in
``deel/lip/layers/convolutional.py``; Serrurier et al., "Achieving robustness in classification
using optimal transport with hinge regularization", CVPR 2021) divides by that root for strides
> 1, which certifies but leaves the convolution far below norm 1: for the DCGAN critic's 5x5
stride-2 convs (factor 1/3) a random orthonormal reshaped kernel gives an operator whose singular
values lie well under 1 (gradient attenuation, which LNets avoid). For stride 1 it divides by an
*average* patch multiplicity over the image, which is not a bound: a 3x3 conv on 8x8 images whose
9 taps are one orthonormal matrix / 3 (orthonormal once reshaped) has norm above 1 with it
(``docs/plugins.md`` gives both numbers). So this module builds convolutions that are orthogonal
operators instead.

**BCOP** (Li, Haque, Anil, Lucas, Grosse & Jacobsen, "Preventing Gradient Attenuation in Lipschitz
Constrained Convolutional Networks", NeurIPS 2019; reference code ``lconvnet/layers/bcop.py`` of
github.com/ColinQiyangLi/LConvNet): a ``t × t`` kernel is the matrix product of ``2(t − 1)`` block
convolutions ``[P, I − P]`` (one tap ``P``, the next ``I − P``), alternately along rows and
columns, and an orthonormal ``H``. ``P = QQᵀ`` is a symmetric projector (``Q`` [c, c/2] with
orthonormal columns, as BCOP's half-rank mask). Each factor's symbol ``P + (I − P)z`` is unitary
on the unit circle, so the product's is: the convolution is orthogonal on every circular grid and
has norm ≤ 1 with zero padding (a crop of the infinite one). With ``c = max(c_in, c_out)``
channels, ``c_out < c`` keeps the first ``c_out`` columns of ``H`` (orthonormal rows: gradient
norm preserving), ``c_in < c`` the first ``c_in`` input channels (an isometry), as BCOP does.

**Strides** follow BCOP's invertible downsampling (``PixelUnshuffle2d`` there): a stride-``s``
convolution is a stride-1 convolution of the input's ``s²`` polyphase components
(``x_r[m] = x[s·m + r]``, a permutation of the pixels), so a BCOP kernel with ``⌈k/s⌉`` taps on
``s²·c_in`` channels, rearranged tap ``q`` / phase ``r`` → ``s·q + r``, is an orthogonal stride-``s``
convolution with a ``s·⌈k/s⌉`` kernel: the DCGAN critic's 5x5 stride-2 convs become 6x6 stride-2
ones (one more row and column of taps), computed as one ordinary ``conv2d``.

**Cost and sync** as dense ``bjorck`` (:mod:`lipgan_plugins.bjorck`): the matrices ``H`` and ``Q``
are the trainable variables; ``projection`` order-1 Björck steps after each update keep them
orthonormal (replica 0's result on every replica), the forward pass uses them as they are with
the tangent-projected gradient, and the kernel is assembled from them on every call, gradients
through it: ``2(t − 1)`` rounds of two products of ``[c, c/2]`` by ``[c, c_out]`` per tap. For
the DCGAN critic that is independent of the batch and comparable to one layer's convolution of a
batch of 64 (see ``benchmarks/RESULTS.md``). :meth:`BCOPConv2D.operator_norm_bound` bounds the
assembled kernel's operator by the audit's rule for convolutions
(:func:`lipgan.core.lipschitz.conv_operator_norm_bound`), so the certificate is computed, not
assumed.
"""

from __future__ import annotations

import math

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from lipgan.core.errors import ConfigError
from lipgan.core.lipschitz import conv_operator_norm_bound
from lipgan.core.reparametrized import KernelReparametrization, fresh_copy
from lipgan_plugins.bjorck import bjorck_orthonormalize, orthonormal_tangent
from lipgan_plugins.spectral_norm import from_first_replica

#: A projection step is skipped when ‖I − QᵀQ‖_F is below this (σ ≤ 1 + 5e-6). Tighter than dense
#: Björck's: the kernel is a product of 2(t − 1) + 1 such matrices (a projector with eigenvalue
#: 1 + ε gives a factor of norm 1 + 2ε), so the conv's norm stays ≤ 1 + 1e-4 for t = 3. Above
#: float32's floor (~3e-6 for a 512-row matrix).
CONV_PROJECTION_TOLERANCE = 1e-5


def bcop_polyphase_kernel(ortho, projectors, taps: tuple[int, int], channels_in: int):
    """The BCOP kernel ``[ty, tx, channels_in, c_out]`` (channels-last, stride 1).

    ``ortho`` [c, c_out] and each of ``projectors`` [c, r] have orthonormal columns; there are
    ``(ty − 1) + (tx − 1)`` projectors, used alternately along rows and columns. The kernel's
    symbol ``K̂(z) = B₁(z)···B_n(z)·ortho`` (``B(z) = P + (I − P)z``) has orthonormal columns on the
    unit circle; its first ``channels_in`` rows are kept.
    """
    ty, tx = taps
    order, rows, cols = [], ty - 1, tx - 1  # rows and columns alternately, as BCOP's 2x2 blocks
    while rows or cols:
        order += [0] * (rows > 0) + [1] * (cols > 0)
        rows, cols = max(rows - 1, 0), max(cols - 1, 0)
    if len(projectors) != len(order):
        raise ValueError(
            f"{len(order)} projectors needed for {ty}x{tx} taps, got {len(projectors)}"
        )
    kernel = ops.reshape(ortho, (1, 1, *ortho.shape))  # [y, x, c, out]
    for axis, q in zip(reversed(order), reversed(projectors)):  # B₁ applied last (leftmost)
        projected = tf.einsum("cr,yxrm->yxcm", q, tf.einsum("cr,yxcm->yxrm", q, kernel))
        after = [[0, 0]] * 4
        before = [[0, 0]] * 4
        after[axis], before[axis] = [0, 1], [1, 0]
        # Tap j of B·T: P·T[j] + (I − P)·T[j − 1].
        kernel = tf.pad(projected, after) + tf.pad(kernel - projected, before)
    return kernel[:, :, :channels_in, :]


def unshuffle_kernel(polyphase, strides: tuple[int, int], channels_in: int):
    """The stride-``s`` kernel ``[s·ty, s·tx, c_in, c_out]`` equal to the polyphase one.

    Polyphase input channel ``(ry, rx, c)`` at tap ``(qy, qx)`` is kernel position
    ``(s·qy + ry, s·qx + rx)`` and channel ``c``.
    """
    ty, tx, _, cout = polyphase.shape
    sy, sx = strides
    k = ops.reshape(polyphase, (ty, tx, sy, sx, channels_in, cout))
    k = ops.transpose(k, (0, 2, 1, 3, 4, 5))
    return ops.reshape(k, (ty * sy, tx * sx, channels_in, cout))


def _orthonormal(w, iterations: int, order: int, projection: int):
    """As :class:`lipgan_plugins.bjorck.BjorckDense` treats its kernel (forward pass)."""
    if iterations == 0:
        return orthonormal_tangent(w) if projection else w
    return bjorck_orthonormalize(w, iterations, order, warm=projection > 0)


def _pair(value) -> tuple[int, int]:
    value = tuple(int(v) for v in np.atleast_1d(value))
    return (value[0], value[0]) if len(value) == 1 else value


def check_conv(layer) -> None:
    """A one-line ConfigError unless BCOP can replace ``layer`` with the same output shape."""
    where = f"bjorck: convolution {layer.name!r}"
    if not isinstance(layer, keras.layers.Conv2D):
        raise ConfigError(
            f"bjorck supports Dense and Conv2D layers, not {type(layer).__name__} "
            f"{layer.name!r}: use train.constraint = @aol() or change the critic"
        )
    if layer.data_format != "channels_last" or layer.groups != 1:
        raise ConfigError(f"{where} must be channels_last with groups=1")
    if _pair(layer.dilation_rate) != (1, 1):
        raise ConfigError(f"{where} is dilated; bjorck needs dilation_rate=1 (or use aol)")
    k, s = _pair(layer.kernel_size), _pair(layer.strides)
    if layer.padding != "same" and any(s_ * math.ceil(k_ / s_) != k_ for k_, s_ in zip(k, s)):
        raise ConfigError(
            f"{where} has padding={layer.padding!r} and kernel {k} not a multiple of strides {s}; "
            "bjorck's orthogonal conv widens it to one, which needs padding='same'"
        )


class OrthogonalConv2D(KernelReparametrization):
    """What BCOP's and AOC's orthogonal convolutions share: the call on the effective kernel, the
    audit's bound at the layer's input size, and the projection of every matrix after each critic
    update to within ``projection_tolerance`` of orthonormal (replica 0's result everywhere).
    Subclasses build ``_matrices()`` and ``effective_kernel()``."""

    #: A matrix closer than this to orthonormal (‖I − MᵀM‖_F) is not stepped.
    projection_tolerance = CONV_PROJECTION_TOLERANCE

    def call(self, inputs):
        layer = self.layer
        out = layer.convolution_op(inputs, ops.cast(self.effective_kernel(), inputs.dtype))
        if self.bias is not None:
            out = ops.add(out, ops.cast(self.bias, out.dtype))
        if layer.activation is not None:
            out = layer.activation(out)
        return out

    def operator_norm_bound(self) -> float:
        """The audit's bound for convolutions on the effective kernel at the layer's input size."""
        kernel = np.asarray(self.effective_kernel(), np.float64)
        return conv_operator_norm_bound(kernel, self.spatial, _pair(self.layer.strides))

    def project(self) -> None:
        """Replace every matrix by ``projection`` order-1 steps of it (replica 0's result)."""
        if self.projection == 0:
            return
        for variable in self._matrices():
            value = bjorck_orthonormalize(
                ops.cast(variable.value, "float32"),
                self.projection,
                order=1,
                warm=True,
                tolerance=self.projection_tolerance,
            )
            variable.assign(ops.cast(from_first_replica(value), variable.dtype))

    def get_config(self):
        return {
            **super().get_config(),
            "iterations": self.iterations,
            "order": self.order,
            "projection": self.projection,
        }


@keras.saving.register_keras_serializable(package="lipgan")
class BCOPConv2D(OrthogonalConv2D):
    """A Conv2D computing with a BCOP-orthogonal kernel (see the module docstring).

    Wraps a copy of the critic's Conv2D whose kernel is widened to ``s·⌈k/s⌉`` (the wrapped layer
    holds the configuration: filters, strides, padding, activation; it is never built, so it has
    no kernel). Variables: ``ortho`` [c, c_out], ``projector_i`` [c, c/2] and the bias.
    """

    def __init__(self, layer, iterations: int = 0, order: int = 1, projection: int = 1, **kwargs):
        check_conv(layer)
        k, s = _pair(layer.kernel_size), _pair(layer.strides)
        self.taps = tuple(math.ceil(k_ / s_) for k_, s_ in zip(k, s))
        wide = tuple(t * s_ for t, s_ in zip(self.taps, s))
        if wide != k:
            layer = fresh_copy(layer, kernel_size=wide)
        super().__init__(layer, **kwargs)
        self.iterations, self.order = int(iterations), int(order)
        self.projection = int(projection)

    def build(self, input_shape):
        conv = self.layer
        sy, sx = _pair(conv.strides)
        self.channels_in = int(input_shape[-1])
        self.spatial = tuple(int(v) for v in input_shape[1:3])
        n, m = sy * sx * self.channels_in, int(conv.filters)
        c = max(n, m)
        self.ortho = self.add_weight(name="ortho", shape=(c, m), initializer="orthogonal")
        count = sum(t - 1 for t in self.taps)
        self.projectors = [
            self.add_weight(name=f"projector_{i}", shape=(c, c // 2), initializer="orthogonal")
            for i in range(count)
        ]
        self.bias = (
            self.add_weight(name="bias", shape=(m,), initializer="zeros") if conv.use_bias else None
        )
        self.built = True

    def _matrices(self):
        return [self.ortho, *self.projectors]

    def effective_kernel(self):
        """The stride-``s`` kernel ``[s·ty, s·tx, c_in, c_out]`` the layer computes with (float32)."""
        ortho, *projectors = (
            _orthonormal(ops.cast(v, "float32"), self.iterations, self.order, self.projection)
            for v in self._matrices()
        )
        sy, sx = _pair(self.layer.strides)
        polyphase = bcop_polyphase_kernel(ortho, projectors, self.taps, sy * sx * self.channels_in)
        return unshuffle_kernel(polyphase, (sy, sx), self.channels_in)
