"""``aol``: Almost-Orthogonal Layers (Prach & Lampert, ECCV 2022), 1-Lipschitz with no iterations.

A linear map ``W`` rescaled as ``W·D``, ``D = diag(Σⱼ |WᵀW|ᵢⱼ)^(−1/2)``, has spectral norm at most 1
(Theorem 1: ``D⁻² − WᵀW`` is diagonally dominant, hence PSD), and the rescaling is exact when ``W``
is already orthogonal. Every Dense layer of the critic computes with its raw kernel rescaled per
input unit this way. Every Conv2D layer uses the paper's convolutional form: the row sums are taken
over the kernel's autocorrelation ``PᵀP`` (:func:`lipgan.core.reparametrized.conv_gram_row_sums`),
one scale per input channel; it is valid for any stride, padding and dilation (a stride or padding
only removes rows of the convolution's matrix). The rescaling is recomputed from the raw kernel at
every call, gradients flow through it, and nothing is assigned, so replicas need no sync.

Dense kernels start orthogonal (as Björck's): AOL's rescaling is exact for an orthogonal kernel,
so the critic starts with ‖∇D‖ near 1. With a random (He/Glorot) start each rescaled layer shrinks
most directions by about 1/sqrt(width), and a MaxMin critic trained briefly against Fig. 1a's
fixed generator keeps a gradient far below 1, where the orthogonal start's is near 1 after the
same training (``tests/test_fig1.py`` checks the latter). Conv2D kernels start
delta-orthogonal (:class:`DeltaOrthogonal`, Xiao et al., ICML 2018: zero but for an orthogonal
channel matrix at the centre tap), the convolutional case of the same argument: the
autocorrelation is the identity at shift 0 and zero elsewhere, so the rescaling is exact. With
the critic's Glorot kernels the rescaled convolutions shrink the gradient a hundredfold at the
start, and the critic stays behind the delta-orthogonal start, in gradient norm and critic gap,
throughout training (``docs/plugins.md``, "Where training starts"; ``docs/aol_start.py``).
"""

import keras
from keras import ops

from lipgan import hookimpl
from lipgan.core.errors import ConfigError
from lipgan.core.reparametrized import (
    KernelConstruction,
    KernelReparametrization,
    conv_gram_row_sums,
    dense_gram_row_sums,
    fresh_copy,
)
from lipgan.core.search_space import ADAM


def aol_rescale(kernel):
    """``kernel`` (Dense [in, out] or Conv2D [kh, kw, in, out]) times AOL's per-input scale."""
    sums = dense_gram_row_sums(kernel) if len(kernel.shape) == 2 else conv_gram_row_sums(kernel)
    positive = sums > 0  # an all-zero input row/channel stays zero (and gets a finite gradient)
    scale = ops.where(positive, ops.rsqrt(ops.where(positive, sums, 1.0)), 0.0)
    return (
        kernel * ops.reshape(scale, (-1, 1))
        if len(kernel.shape) == 2
        else (kernel * ops.reshape(scale, (1, 1, -1, 1)))
    )


@keras.saving.register_keras_serializable(package="lipgan")
class DeltaOrthogonal(keras.initializers.Orthogonal):
    """A conv kernel [kh, kw, in, out] that is zero but for an orthogonal [in, out] centre tap.

    The delta-orthogonal initialization of Xiao et al., "Dynamical Isometry and a Mean Field Theory
    of CNNs" (ICML 2018, Algorithm 2). For AOL it is what an orthogonal start is for a Dense
    kernel: with ``in ≤ out`` the rows are orthonormal, the autocorrelation is ``I`` at shift 0 and
    zero elsewhere, and AOL's rescaling leaves the kernel unchanged.
    """

    def __call__(self, shape, dtype=None):
        kh, kw, cin, cout = shape
        centre = super().__call__((cin, cout), dtype)
        pad = [[kh // 2, kh - 1 - kh // 2], [kw // 2, kw - 1 - kw // 2], [0, 0], [0, 0]]
        return ops.pad(ops.reshape(centre, (1, 1, cin, cout)), pad)


@keras.saving.register_keras_serializable(package="lipgan")
class AOLRescaled(KernelReparametrization):
    """A Dense or Conv2D layer computing with its AOL-rescaled kernel."""

    def transform(self, kernel):
        return aol_rescale(kernel)


class AOL(KernelConstruction):
    """Rescale every Dense/Conv2D kernel of the critic to spectral norm <= 1 (AOL)."""

    name = "aol"
    #: ``lipgan tune``'s ranges (compare_gan's; :mod:`lipgan.core.search_space`).
    search_space = dict(ADAM)
    description = (
        "Almost-orthogonal layers: rescale every Dense/Conv2D kernel by diag(Σ|WᵀW|)^(-1/2), "
        "1-Lipschitz with no iterations (Prach & Lampert 2022)."
    )

    def wrap_layer(self, layer):
        if isinstance(layer, keras.layers.Dense):
            # Orthogonal start: the rescaling of an orthogonal W is exact (D = I), so the layer
            # begins as an isometry instead of a random kernel shrunk by ~1/sqrt(width).
            copy = fresh_copy(layer, kernel_initializer="orthogonal")
            return AOLRescaled(copy, name=f"aol_{layer.name}")
        if isinstance(layer, keras.layers.Conv2D):
            # Delta-orthogonal start: exact rescaling again (module docstring; docs/plugins.md).
            copy = fresh_copy(layer, kernel_initializer=DeltaOrthogonal())
            return AOLRescaled(copy, name=f"aol_{layer.name}")
        if "Conv" in type(layer).__name__:
            raise ConfigError(
                f"aol supports Dense and Conv2D layers, not {type(layer).__name__} "
                f"{layer.name!r}: change the critic or use another constraint"
            )
        return None


@hookimpl
def lipgan_register_constraints(register):
    register(AOL)
