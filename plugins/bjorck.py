"""``bjorck``: orthonormal Dense kernels by Björck iterations (Anil, Lucas & Grosse, ICML 2019).

"Sorting out Lipschitz function approximation" (LNets; their LWGAN trains a WGAN this way) makes
every weight matrix orthonormal and uses GroupSort activations, so the critic is 1-Lipschitz and
keeps ‖∇D‖ = 1: it can express the optimal WGAN critic, which ReLU networks with norm-constrained
weights cannot. Pair it with ``mlp_critic.activation = 'groupsort'`` (or ``'maxmin'``).

Every Dense layer keeps a raw kernel ``W`` (orthogonal initialization, as LNets and deel-lip) and
computes with ``bjorck(W)``: ``W`` is first divided by ``min(‖W‖_F, sqrt(‖W‖₁‖W‖_∞))``, a bound on
its largest singular value, then ``iterations`` steps of the order-``order`` Björck iteration

    W ← W · Σ_{k=0..order} c_k (I − WᵀW)^k,   c_k = binom(2k, k) / 4^k   (1, 1/2, 3/8, 5/16, ...)

(order 1 is 1.5·W − 0.5·W·WᵀW), computed on the smaller of WᵀW and WWᵀ. From singular values in
(0, 1] the iteration moves each towards 1 and never above it, so the layer is 1-Lipschitz however
few iterations run; with finite iterations it is only approximately orthonormal, which is why
:meth:`Bjorck.lipschitz_bound` computes the bound (an SVD of each effective kernel) instead of
assuming 1. Gradients flow through the iterations (LNets' scheme; deel-lip's
``bjorck_normalization`` is the Keras 2 form). Nothing is assigned, so replicas need no sync.

**Convolutions are refused** (a one-line ``ConfigError``): orthonormalizing a reshaped conv kernel
does not make the convolution orthonormal, and the valid construction (deel-lip's stride/padding
correction, or BCOP) is not implemented here; use ``aol`` for convolutional critics.
"""

import math

import keras
from keras import ops

from lipgan import hookimpl
from lipgan.errors import ConfigError
from lipgan.reparametrized import (
    KernelConstruction,
    KernelReparametrization,
    fresh_copy,
)


def bjorck_orthonormalize(w, iterations: int = 20, order: int = 1):
    """The Björck orthonormalization of the matrix ``w`` [m, n] (see the module docstring)."""
    m, n = w.shape
    frobenius = ops.sqrt(ops.sum(ops.square(w)))
    holder = ops.sqrt(ops.max(ops.sum(ops.abs(w), axis=0)) * ops.max(ops.sum(ops.abs(w), axis=1)))
    w = w / (ops.minimum(frobenius, holder) + 1e-12)
    coeffs = [math.comb(2 * k, k) / 4**k for k in range(order + 1)]
    left = m <= n  # Gram on the smaller side: (WWᵀ) polynomial times W, or W times (WᵀW) one
    eye = ops.eye(m if left else n, dtype=w.dtype)
    for _ in range(iterations):
        gram = ops.matmul(w, ops.transpose(w)) if left else ops.matmul(ops.transpose(w), w)
        q = eye - gram
        poly, power = coeffs[0] * eye + coeffs[1] * q, q  # no product with the identity
        for c in coeffs[2:]:
            power = ops.matmul(power, q)
            poly = poly + c * power
        w = ops.matmul(poly, w) if left else ops.matmul(w, poly)
    return w


@keras.saving.register_keras_serializable(package="lipgan")
class BjorckDense(KernelReparametrization):
    """A Dense layer computing with the Björck-orthonormalized kernel."""

    supports_conv = False

    def __init__(self, layer, iterations: int = 20, order: int = 1, **kwargs):
        super().__init__(layer, **kwargs)
        self.iterations, self.order = int(iterations), int(order)

    def transform(self, kernel):
        return bjorck_orthonormalize(kernel, self.iterations, self.order)

    def get_config(self):
        return {**super().get_config(), "iterations": self.iterations, "order": self.order}


class Bjorck(KernelConstruction):
    """Orthonormalize every Dense kernel of the critic by Björck iterations."""

    name = "bjorck"
    description = (
        "Orthonormal Dense kernels by Björck iterations, gradients through them (LNets, Anil et al. "
        "2019); pair with a GroupSort critic; Dense only."
    )

    def __init__(self, iterations: int = 20, order: int = 1):
        if iterations < 1:
            raise ConfigError(f"bjorck.iterations must be >= 1, got {iterations}")
        if order < 1:
            raise ConfigError(f"bjorck.order must be >= 1, got {order}")
        self.iterations, self.order = int(iterations), int(order)

    def wrap_layer(self, layer):
        if "Conv" in type(layer).__name__:
            raise ConfigError(
                f"bjorck supports Dense layers only, and the critic has convolution {layer.name!r}: "
                "use train.constraint = @aol() for convolutional critics"
            )
        if not isinstance(layer, keras.layers.Dense):
            return None
        return BjorckDense(
            fresh_copy(layer, kernel_initializer="orthogonal"),
            iterations=self.iterations,
            order=self.order,
            name=f"bjorck_{layer.name}",
        )


@hookimpl
def lipgan_register_constraints(register):
    register(Bjorck)
