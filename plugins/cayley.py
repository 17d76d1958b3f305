"""``cayley``: orthogonal layers by the Cayley transform (Trockman & Kolter, ICLR 2021).

"Orthogonalizing Convolutional Layers with the Cayley Transform" (reference code: ``layers.py`` of
github.com/locuslab/orthogonal-convolutions, ``cayley``, ``CayleyLinear``, ``CayleyConv``): for a
skew-Hermitian ``A``, ``Q = (I − A)(I + A)⁻¹`` is unitary (its eigenvalues ``(1 − iθ)/(1 + iθ)``
lie on the unit circle), and ``I + A`` is always invertible. :func:`lipgan.orthogonal.cayley`
is their rectangular form (orthonormal columns or rows from a raw ``m×n`` matrix, one
``min(m, n)``-sized inverse).

**Dense** layers compute with ``cayley(W)`` of their raw kernel ``W`` [in, out]: orthonormal rows
(an isometry) when ``in ≤ out``, orthonormal columns when ``in > out``. The critic's last layer
(``out = 1``) is a unit vector.

**Conv2D** layers are orthogonal *circular* convolutions at the input size the critic is built
for. The raw kernel ``K`` (``⌈k/s⌉`` taps per axis, ``s²·c_in → c_out`` channels) is transformed
by the DFT on that grid; each frequency's ``c_out × s²·c_in`` matrix ``K̂(ω)`` becomes
``cayley(K̂(ω))`` and the layer computes ``irfft2d(Q(ω)·rfft2d(x)(ω))`` (Theorem: a circular
convolution is block-diagonalized by the 2-D DFT, Sedghi et al. ICLR 2019, so it is orthogonal iff
every ``Q(ω)`` is unitary). A stride ``s`` is the reference's invertible downsampling (the input's
``s²`` polyphase components as channels, ``tf.nn.space_to_depth``), so the DCGAN critic's 5x5
stride-2 convs become 3x3-parametrized convs on ``4·c_in`` channels. What is certified: the exact
linear map of the float32 ``Q(ω)`` the layer computes with has norm ``max_ω σ_max(Q(ω))``
(:meth:`CayleyConv2D.operator_norm_bound`, float64 SVDs), ≤ 1 + a few float32 ulps. It is the
norm of the *circular* convolution: the layer pads circularly, not with zeros as the critic's
Conv2D did, and is not a zero-padded or strided convolution at all, so nothing is claimed for one
(a zero-padded convolution with the spatial kernel of ``Q`` would not be orthogonal). The map is
tied to the image size it was built at (``Q(ω)`` lives on that grid).

Like ``aol`` the layers are stateless (recomputed from the raw parameters at every call, gradients
through them) and compile under XLA (real solves only: :mod:`lipgan.orthogonal`).
"""

from __future__ import annotations

import math

import keras
import tensorflow as tf
from keras import ops

from lipgan import hookimpl
from lipgan.orthogonal import (
    OrthogonalConstruction,
    cayley,
    downsample,
    fourier_conv,
    frequency_cayley,
    layer_bound,
    pair,
    polyphase_shape,
    refine,
    spectrum_norm,
)
from lipgan.reparametrized import KernelReparametrization, fresh_copy
from lipgan.search_space import ADAM


@keras.saving.register_keras_serializable(package="lipgan")
class CayleyDense(KernelReparametrization):
    """A Dense layer computing with ``cayley(kernel)`` (orthonormal rows or columns)."""

    supports_conv = False

    def transform(self, kernel):
        return refine(cayley(kernel))

    def lipschitz_bound(self) -> float | None:
        """The exact norm of the effective kernel (float64 SVD) times the activation's constant."""
        return layer_bound(self.operator_norm_bound(), self.layer.activation)


@keras.saving.register_keras_serializable(package="lipgan")
class CayleyConv2D(KernelReparametrization):
    """An orthogonal circular convolution by per-frequency Cayley transforms (module docstring).

    Wraps the critic's Conv2D for its configuration (filters, kernel size, strides, bias,
    activation; never built). Variables: ``kernel`` [⌈k/s⌉, ⌈k/s⌉, s²·c_in, c_out] and the bias.
    """

    def build(self, input_shape):
        conv = self.layer
        self.grid_shape = polyphase_shape(conv, input_shape, "cayley")
        channels = self.grid_shape[2]
        strides = pair(conv.strides)
        taps = tuple(math.ceil(k / s) for k, s in zip(pair(conv.kernel_size), strides))
        self.stride = strides[0]
        self.kernel = self.add_weight(
            name="kernel",
            shape=(*taps, channels, int(conv.filters)),
            initializer=conv.kernel_initializer,
        )
        self.bias = (
            self.add_weight(name="bias", shape=(int(conv.filters),), initializer="zeros")
            if conv.use_bias
            else None
        )
        self.built = True

    def frequency_pair(self):
        """``Q(ω)`` [h, w//2+1, c_out, s²·c_in] on the polyphase grid as a (real, imaginary) pair
        of float32 tensors (:mod:`lipgan.complex_pairs`: TF's complex64 CPU kernels are slow)."""
        kernel = ops.cast(self.kernel, "float32")
        return frequency_cayley(kernel, self.grid_shape[:2])

    def frequency_matrices(self):
        """``Q(ω)`` [h, w//2+1, c_out, s²·c_in] (complex64) on the polyphase grid."""
        return tf.complex(*self.frequency_pair())

    def effective_kernel(self):
        """The per-frequency matrices (there is no finite spatial kernel)."""
        return self.frequency_matrices()

    def call(self, inputs):
        matrices = self.frequency_pair()
        x = downsample(inputs, self.stride)
        if x.dtype == tf.float64:  # the exact-arithmetic check of the tests
            matrices = tuple(tf.cast(m, tf.float64) for m in matrices)
        else:
            x = tf.cast(x, tf.float32)  # rfft2d has no bfloat16 kernel
        out = ops.cast(fourier_conv(x, matrices), inputs.dtype)
        if self.bias is not None:
            out = ops.add(out, ops.cast(self.bias, out.dtype))
        if self.layer.activation is not None:
            out = self.layer.activation(out)
        return out

    def operator_norm_bound(self) -> float:
        """``max_ω σ_max(Q(ω))``: the exact norm of the circular convolution (float64 SVDs)."""
        return spectrum_norm(self.frequency_matrices())

    def lipschitz_bound(self) -> float | None:
        """:meth:`operator_norm_bound` times the activation's constant."""
        return layer_bound(self.operator_norm_bound(), self.layer.activation)


class Cayley(OrthogonalConstruction):
    """Make every Dense/Conv2D layer of the critic orthogonal by the Cayley transform."""

    name = "cayley"
    #: ``lipgan tune``'s ranges (compare_gan's; :mod:`lipgan.search_space`).
    search_space = dict(ADAM)
    description = (
        "Orthogonal layers by the Cayley transform (Trockman & Kolter 2021): Dense kernels and "
        "circular convolutions per frequency in the Fourier domain; pair with a MaxMin critic."
    )

    def wrap_dense(self, layer):
        return CayleyDense(fresh_copy(layer), name=f"cayley_{layer.name}")

    def wrap_conv(self, layer):
        return CayleyConv2D(fresh_copy(layer), name=f"cayley_{layer.name}")


@hookimpl
def lipgan_register_constraints(register):
    register(Cayley)
