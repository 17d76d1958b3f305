"""``bjorck``: orthonormal Dense kernels (Anil, Lucas & Grosse, ICML 2019), at a penalty's price.

"Sorting out Lipschitz function approximation" (LNets; their LWGAN trains a WGAN this way) makes
every weight matrix orthonormal and uses GroupSort activations, so the critic is 1-Lipschitz and
keeps ‖∇D‖ = 1: it can express the optimal WGAN critic, which ReLU networks with norm-constrained
weights cannot. Pair it with ``mlp_critic.activation = 'groupsort'`` (or ``'maxmin'``).

The Björck iteration of order ``order`` is

    W ← W · Σ_{k=0..order} c_k (I − WᵀW)^k,   c_k = binom(2k, k) / 4^k   (1, 1/2, 3/8, 5/16, ...)

(order 1 is 1.5·W − 0.5·W·WᵀW), computed on the smaller of WᵀW and WWᵀ. It maps each singular
value σ to σ·g(σ²); from σ in (0, 1] it moves towards 1 and never above (g(λ) is a partial sum of
the series of λ^(−1/2)), and order 1 maps every σ ≤ 2 into (0, 1]: σ²g(σ²)² − 1 =
(σ² − 1)²(σ² − 4)/4. Convergence is quadratic near 1, slow (×1.5 per step) from far below.

**Two ways to use it**, both keeping every Dense kernel's singular values ≤ 1:

* ``projection`` (default 1; Björck & Bowie 1971 as a retraction, the orthonormality step of
  Parseval networks, Cisse et al. ICML 2017, with β = 1/2): every Dense layer computes with its
  kernel ``W`` as it is, and after every critic update :meth:`Bjorck.after_update` replaces ``W``
  by ``projection`` order-1 steps of it. An optimizer step moves ``W`` a distance of the order of
  the learning rate off the orthonormal manifold, and one step from there lands within its square
  again, so the kernels stay orthonormal at the cost of two matrix products per layer and update
  (:func:`projection_step`), with no iterations in the forward pass. The gradient is the one
  LNets get by backpropagating through iterations run to convergence, the polar factor's
  derivative at an orthonormal ``W``: the tangent part ``G − W·sym(WᵀG)`` of the plain gradient
  (:func:`orthonormal_tangent`, two more products; for a square kernel one,
  :func:`orthogonal_matmul`, since ``W·GᵀW`` is the product of the input gradient and the output
  that backpropagation already has). With the plain gradient instead, the optimizer keeps
  pushing the kernels off the manifold (a critic gains by scaling its weights up) and the
  projection keeps undoing it, and the kernels stay just under orthonormal (docs/plugins.md,
  "Constructions vs penalties", on the fixed pair of ``lipgan.testing.testbeds``). The step is taken
  as it is when ``1 + ‖I − WᵀW‖_F`` (a bound on the largest squared singular value) is at most 3.9;
  beyond that ``W`` is first scaled down by the largest absolute row sum of its Gram matrix, so the
  step's result has σ ≤ 1 whatever the optimizer did. The critic that is trained, saved and
  evaluated is therefore the certified one; nothing else is kept. The new kernel is replica 0's on
  every replica (an all-reduce, as spectral norm's ``u``), so the replicas' copies cannot drift
  apart. A step is skipped when ‖I − WᵀW‖_F is already below
  :data:`PROJECTION_TOLERANCE` (σ ≤ 1 + 5e-5), so a converged kernel is left exactly as it is. A
  loop of one's own (not lipgan's engine) must call ``after_update`` after each optimizer step,
  as for ``weight_clip``; ``lipschitz_bound`` reports what it gets if not.
* ``iterations`` (default 0): steps in the forward pass with gradients through them (LNets'
  original scheme; deel-lip's ``bjorck_normalization`` is the Keras 2 form). With ``projection = 0``
  the raw kernel is first divided by ``min(‖W‖_F, sqrt(‖W‖₁‖W‖_∞))``, a bound on its largest
  singular value, and 20 iterations reach orthonormality from a raw kernel, over an order of
  magnitude dearer per critic step than the projection, since each iteration costs 6 products of
  the kernel's size forward and backward whatever the batch (benchmarks/RESULTS.md, "Certified
  constructions"). With ``projection > 0`` the iterations start
  from the projected kernel (the same scaling guard as the projection), so 1–3 refine it.

:meth:`Bjorck.lipschitz_bound` computes the bound (an SVD of each effective kernel) instead of
assuming 1.

**Conv2D layers** become orthogonal convolutions (:mod:`lipgan_plugins.bcop`: BCOP, Li et al.
2019, over the polyphase components of strided inputs), with the same ``projection`` /
``iterations`` scheme on their matrices: orthonormalizing a reshaped conv kernel would not make
the convolution orthonormal. Other convolutions are refused in one line.
"""

import math

import keras
import tensorflow as tf
from keras import ops

from lipgan import hookimpl
from lipgan.core.errors import ConfigError
from lipgan.core.reparametrized import (
    KernelConstruction,
    KernelReparametrization,
    fresh_copy,
)
from lipgan.core.search_space import ADAM
from lipgan_plugins.spectral_norm import from_first_replica

#: Largest squared singular value an order-1 step maps into (0, 1] is 4; a margin for rounding.
SAFE_GRAM_ORDER1 = 3.9
#: A projection step is skipped when ‖I − WᵀW‖_F is below this (then σ ≤ 1 + 5e-5): a converged
#: kernel stays exactly as it is, so after_update is idempotent there. Above float32's floor
#: (~3e-6 for a 512-wide kernel).
PROJECTION_TOLERANCE = 1e-4


def _coefficients(order: int) -> list[float]:
    return [math.comb(2 * k, k) / 4**k for k in range(order + 1)]


def _gram(w, left: bool):
    return ops.matmul(w, ops.transpose(w)) if left else ops.matmul(ops.transpose(w), w)


def bjorck_orthonormalize(
    w, iterations: int = 20, order: int = 1, warm: bool = False, tolerance: float = 0.0
):
    """The Björck orthonormalization of the matrix ``w`` [m, n] (see the module docstring).

    ``warm=False``: ``w`` is first scaled below singular value 1 by a norm bound (a raw kernel).
    ``warm=True``: ``w`` is taken as near-orthonormal and only scaled down where a bound on its
    largest singular value leaves the range a step maps into (0, 1] (σ² ≤ 3.9 for order 1, ≤ 1
    above), so a kernel that is already orthonormal needs one step, not twenty. A step whose
    input is within ``tolerance`` of orthonormal (‖I − WᵀW‖_F) leaves it unchanged.
    """
    m, n = w.shape
    if not warm:
        frobenius = ops.sqrt(ops.sum(ops.square(w)))
        holder = ops.sqrt(
            ops.max(ops.sum(ops.abs(w), axis=0)) * ops.max(ops.sum(ops.abs(w), axis=1))
        )
        w = w / (ops.minimum(frobenius, holder) + 1e-12)
    coeffs = _coefficients(order)
    limit = SAFE_GRAM_ORDER1 if order == 1 else 1.0
    left = m <= n  # Gram on the smaller side: (WWᵀ) polynomial times W, or W times (WᵀW) one
    eye = ops.eye(m if left else n, dtype=w.dtype)
    for _ in range(iterations):
        gram = _gram(w, left)
        if warm:
            # Largest absolute row sum >= largest eigenvalue of the symmetric Gram matrix.
            bound = ops.max(ops.sum(ops.abs(gram), axis=1))
            shrink = ops.stop_gradient(ops.minimum(1.0, limit / ops.maximum(bound, 1e-30)))
            w, gram = w * ops.sqrt(shrink), gram * shrink
        q = eye - gram
        poly, power = coeffs[0] * eye + coeffs[1] * q, q  # no product with the identity
        for c in coeffs[2:]:
            power = ops.matmul(power, q)
            poly = poly + c * power
        stepped = ops.matmul(poly, w) if left else ops.matmul(w, poly)
        if tolerance > 0:
            stepped = ops.where(ops.sqrt(ops.sum(ops.square(q))) > tolerance, stepped, w)
        w = stepped
    return w


def projection_step(w, tolerance: float = PROJECTION_TOLERANCE):
    """One order-1 Björck step of the near-orthonormal ``w``: ``w + ½·w·(I − WᵀW)``, or ``w``.

    What :meth:`BjorckDense.project` runs after every update, so it does the least work on the
    common case: with ``Q = I − WᵀW`` (Gram on the smaller side), ``λ_max(WᵀW) ≤ 1 + ‖Q‖₂ ≤
    1 + ‖Q‖_F``, so when ``‖Q‖_F ≤ 2.9`` the step maps every singular value into (0, 1] with no
    scaling guard, and ``‖Q‖_F`` is also the convergence test (``w`` is returned unchanged below
    ``tolerance``). Only a kernel further off (an optimizer step of the order of the kernel
    itself) takes the guarded step of :func:`bjorck_orthonormalize`. Two products and four
    elementwise passes over the Gram matrix, against ten passes for the general iteration
    (benchmarks/RESULTS.md, ``certified``).
    """
    m, n = w.shape
    left = m <= n
    q = tf.eye(m if left else n, dtype=w.dtype) - _gram(w, left)
    distance = tf.sqrt(tf.reduce_sum(tf.square(q)))

    def step():
        return w + 0.5 * (tf.matmul(q, w) if left else tf.matmul(w, q))

    def guarded():
        return bjorck_orthonormalize(w, 1, order=1, warm=True)

    return tf.cond(
        distance <= tolerance,
        lambda: tf.identity(w),
        lambda: tf.cond(distance <= SAFE_GRAM_ORDER1 - 1.0, step, guarded),
    )


@tf.custom_gradient
def orthonormal_tangent(w):
    """``w`` itself, with the gradient projected onto the tangent space of the orthonormal matrices.

    For an orthonormal ``w`` [m, n] that is the derivative of its polar factor (what
    backpropagating through converged Björck iterations gives, as LNets do):
    ``G − W·sym(WᵀG)`` when m ≥ n, ``G − sym(GWᵀ)·W`` when m < n. Two products of the kernel's
    size, against six per iteration for backpropagating through the iterations.
    """

    def grad(g):
        if w.shape[0] >= w.shape[1]:
            inner = tf.matmul(w, g, transpose_a=True)  # [n, n]
            return g - tf.matmul(w, 0.5 * (inner + tf.transpose(inner)))
        inner = tf.matmul(g, w, transpose_b=True)  # [m, m]
        return g - tf.matmul(0.5 * (inner + tf.transpose(inner)), w)

    return tf.identity(w), grad


@tf.custom_gradient
def orthogonal_matmul(x, w):
    """``x @ w`` for a square, orthogonal ``w`` [n, n], with the weight gradient in its tangent space.

    The tangent part of ``G = xᵀδ`` is ``G − W·sym(WᵀG)``; with ``WWᵀ = I`` it equals
    ``½(G − W·GᵀW)``, and ``W·GᵀW = W·δᵀx·W = (δWᵀ)ᵀ(xW)``: the input gradient ``δWᵀ`` and the
    output ``xW`` are what backpropagation computes anyway, so the projection costs one product
    of the layer's size instead of the two of :func:`orthonormal_tangent`. Projected per call,
    which sums to the projection of the total gradient (it is linear in ``G``). Between updates
    the kernel is orthonormal to :data:`PROJECTION_TOLERANCE`, and the difference from
    :func:`orthonormal_tangent` is ``½(I − WWᵀ)G``. The input gradient goes through
    :func:`orthonormal_tangent`, so a second derivative (a penalty on input gradients) is
    projected as well.
    """
    z = tf.matmul(x, w)

    def grad(dz):
        dx = tf.matmul(dz, orthonormal_tangent(w), transpose_b=True)
        dw = 0.5 * (tf.matmul(x, dz, transpose_a=True) - tf.matmul(dx, z, transpose_a=True))
        return dx, dw

    return z, grad


@keras.saving.register_keras_serializable(package="lipgan")
class BjorckDense(KernelReparametrization):
    """A Dense layer computing with its Björck-orthonormal kernel.

    ``iterations`` steps run in the forward pass (gradients through them); :meth:`project`
    applies ``projection`` steps to the stored kernel (no gradient), after each optimizer update.
    """

    supports_conv = False

    def __init__(self, layer, iterations: int = 20, order: int = 1, projection: int = 0, **kwargs):
        super().__init__(layer, **kwargs)
        self.iterations, self.order = int(iterations), int(order)
        self.projection = int(projection)

    def transform(self, kernel):
        if self.iterations == 0:
            return orthonormal_tangent(kernel) if self.projection else kernel
        return bjorck_orthonormalize(kernel, self.iterations, self.order, warm=self.projection > 0)

    def call(self, inputs):
        kernel = self.layer.kernel
        square = kernel.shape[0] == kernel.shape[1] and len(inputs.shape) == 2
        if not (square and self.iterations == 0 and self.projection):
            return super().call(inputs)
        # The projection mode's square kernels: the tangent gradient at one product's cost.
        out = orthogonal_matmul(inputs, ops.cast(kernel, inputs.dtype))
        if self.layer.use_bias:
            out = ops.add(out, ops.cast(self.layer.bias, out.dtype))
        if self.layer.activation is not None:
            out = self.layer.activation(out)
        return out

    def project(self) -> None:
        """Replace the stored kernel by ``projection`` order-1 steps of it (replica 0's result)."""
        if self.projection == 0:
            return
        kernel = self.layer.kernel
        value = ops.cast(kernel.value, "float32")
        for _ in range(self.projection):
            value = projection_step(value)
        kernel.assign(ops.cast(from_first_replica(value), kernel.dtype))

    def get_config(self):
        return {
            **super().get_config(),
            "iterations": self.iterations,
            "order": self.order,
            "projection": self.projection,
        }


class OrthonormalConstruction(KernelConstruction):
    """What ``bjorck`` and ``aoc`` share: Dense kernels kept orthonormal (:class:`BjorckDense`),
    each Conv2D replaced by the subclass's orthogonal convolution (:meth:`conv_type`), the
    Björck counts checked in one place, and the projection after every critic update.

    Args:
        iterations: Björck steps in every forward pass, with gradients through them (0, the
            default, uses the stored matrices as they are).
        order: the order of each Björck step.
        projection: order-1 Björck steps that project the matrices after every critic update.

    Raises:
        ConfigError: a negative count, ``iterations = projection = 0`` (nothing constrained), or
            ``order < 1``.
    """

    def __init__(self, iterations: int = 0, order: int = 1, projection: int = 1):
        name = self.name
        if iterations < 0 or projection < 0:
            raise ConfigError(
                f"{name}.iterations and {name}.projection must be >= 0, got {iterations} and "
                f"{projection}"
            )
        if iterations == 0 and projection == 0:
            raise ConfigError(
                f"{name} with iterations=0 and projection=0 constrains nothing: set "
                f"{name}.projection = 1 (the default) or {name}.iterations = 20"
            )
        if order < 1:
            raise ConfigError(f"{name}.order must be >= 1, got {order}")
        self.iterations, self.order, self.projection = int(iterations), int(order), int(projection)

    def _options(self) -> dict:
        return {"iterations": self.iterations, "order": self.order, "projection": self.projection}

    def conv_type(self) -> type:
        """The class of the orthogonal convolution that replaces each Conv2D."""
        raise NotImplementedError

    def wrap_layer(self, layer):
        if "Conv" in type(layer).__name__:
            return self.conv_type()(
                fresh_copy(layer), name=f"{self.name}_{layer.name}", **self._options()
            )
        if not isinstance(layer, keras.layers.Dense):
            return None
        return BjorckDense(
            fresh_copy(layer, kernel_initializer="orthogonal"),
            name=f"{self.name}_{layer.name}",
            **self._options(),
        )

    def after_update(self, critic) -> None:
        """Project every orthonormal Dense kernel and orthogonal convolution's matrices back onto
        the orthonormal ones (replica context)."""
        for layer in critic.layers:
            if isinstance(layer, BjorckDense | self.conv_type()):
                layer.project()


class Bjorck(OrthonormalConstruction):
    """Keep every Dense kernel of the critic orthonormal by Björck steps (see the module doc).

    Args:
        iterations: Björck steps in every forward pass, with gradients through them (LNets'
            scheme; 0, the default, uses the stored kernel as it is).
        order: the order of each Björck step.
        projection: order-1 Björck steps that project the kernels after every critic update.

    Raises:
        ConfigError: a negative count, ``iterations = projection = 0`` (nothing constrained), or
            ``order < 1``.
    """

    name = "bjorck"
    #: ``lipgan tune``'s ranges (compare_gan's; :mod:`lipgan.core.search_space`).
    search_space = dict(ADAM)
    description = (
        "Orthonormal Dense kernels by Björck steps (LNets, Anil et al. 2019): one projection step "
        "after each update by default, or iterations with gradients through them; pair with a "
        "GroupSort critic; Conv2D layers become BCOP orthogonal convolutions."
    )

    def conv_type(self) -> type:
        from lipgan_plugins.bcop import BCOPConv2D  # bcop builds on this module's BjorckDense

        return BCOPConv2D


@hookimpl
def lipgan_register_constraints(register):
    register(Bjorck)
