"""SOC's math: skew-symmetric operators, their truncated exponential and how far it is from ``exp``.

Skew orthogonal convolutions (Singla & Feizi, ICML 2021, ``skew_ortho_conv.py`` of
github.com/singlasahil14/SOC) compute ``exp(L)x`` for a skew-symmetric convolution ``L`` by its
series ``T_K(L)x`` truncated after ``K`` terms, with ``L`` scaled to a norm ``ℓ`` by a bound on
its operator norm. This module holds each piece, with the certificate ``soc`` states:

* :func:`skew_dense`, :func:`skew_kernel`: the skew-symmetric matrix and convolution kernel of a
  raw parameter (exactly skew in float32 too).
* :func:`holder_bound`, :func:`gram_bound`: rigorous, differentiable bounds on ``‖L‖₂`` that set
  the scale (Hölder's; the Gram iteration's, with its gradient in closed form).
* :func:`exp_series`: ``T_K(L)x``; :func:`taylor_tail`: its truncation error (how far the layer is
  from ``exp(L)``); :func:`series_gain`: the bound on ``‖T_K(L)‖`` that ``soc`` certifies.

The math ``soc`` shares with ``cayley`` (the construction's base, strides, the layer bound) is
:mod:`lipgan.core.orthogonal`.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import tensorflow as tf


def taylor_tail(norm: float, terms: int) -> float:
    """``Σ_{k>K} ℓᵏ/k!`` for ``ℓ = norm``, ``K = terms``: an upper bound on ``‖exp(L) − T_K(L)‖``
    for any ``‖L‖ ≤ ℓ`` (``T_K`` the series truncated after ``Lᴷ/K!``), summed term by term
    (no cancellation) with the rest of the series bounded geometrically."""
    term = math.exp(sum(math.log(norm / k) for k in range(1, terms + 2))) if norm > 0 else 0.0
    total, k = 0.0, terms + 1
    while term > 1e-30 * max(total, 1e-300) and k < terms + 400:
        total += term
        k += 1
        term *= norm / k
    ratio = norm / (k + 1)
    return total + (term / (1 - ratio) if ratio < 1 else math.inf)


@functools.cache
def _gain_polynomial(terms: int) -> np.ndarray:
    """Coefficients (ascending powers of θ) of ``|T_K(iθ)|² − 1``, computed exactly."""
    from fractions import Fraction

    series = [Fraction(1, math.factorial(k)) for k in range(terms + 1)]
    real = [(-1) ** (k // 2) * c if k % 2 == 0 else 0 for k, c in enumerate(series)]
    imag = [(-1) ** (k // 2) * c if k % 2 == 1 else 0 for k, c in enumerate(series)]
    square = [Fraction(0)] * (2 * terms + 1)
    for i in range(terms + 1):
        for j in range(terms + 1):
            square[i + j] += real[i] * real[j] + imag[i] * imag[j]
    square[0] -= 1  # exactly 0: T_K(0) = 1
    return np.asarray([float(c) for c in square])


def series_gain(norm: float, terms: int, points: int = 4096) -> float:
    """``max_{|θ| ≤ norm} |T_K(iθ)|``: the exact norm of ``T_K(L)`` for a skew-symmetric ``L``
    with ``‖L‖ ≤ norm`` is at most this, because ``L`` is normal (so is ``T_K(L)``, whose norm is
    the largest ``|T_K(λ)|`` over ``L``'s eigenvalues ``λ = iθ``, ``|θ| ≤ ‖L‖``).

    Rigorous: ``|T_K(iθ)|² − 1`` (exact rational coefficients) is maximized over a grid of
    ``points`` steps on ``[0, norm]`` (it is even in θ) plus the most a C² function can rise
    above its chords there (``step²/8`` times a bound on its curvature) and a float64 margin. It is ≤ ``1 + τ_K(norm)`` and far tighter: even ``K``
    make ``T_K(iθ)`` a contraction for small θ (``|T_4(iθ)|² = 1 − θ⁶/72 + θ⁸/576 ≤ 1`` for
    ``θ² ≤ 8``), so the truncation's error need not be added to 1 at all."""
    coeffs = _gain_polynomial(int(terms))
    theta = np.linspace(0.0, norm, points + 1)
    excess = np.polynomial.polynomial.polyval(theta, coeffs).max()
    # Between two grid points a C² function exceeds its chord by at most step²/8·max|f''|.
    j = np.arange(len(coeffs), dtype=np.float64)
    curvature = float(np.sum(np.abs(coeffs[2:]) * j[2:] * (j[2:] - 1) * norm ** (j[2:] - 2)))
    excess += curvature * (norm / points) ** 2 / 8 + 1e-15 * float(np.sum(np.abs(coeffs) * norm**j))
    return math.sqrt(1.0 + max(excess, 0.0))


def skew_dense(raw):
    """``(W − Wᵀ)/2`` for a square ``raw`` [c, c]."""
    return 0.5 * (raw - tf.transpose(raw))


def flip_transpose(kernel):
    """The kernel of the adjoint convolution: taps reversed, channels swapped ([t, t, c, c])."""
    return tf.transpose(kernel[::-1, ::-1], (0, 1, 3, 2))


def skew_kernel(raw):
    """``(M − flip(M)ᵀ)/2``: with odd taps and 'same' zero padding the convolution is an exactly
    skew-symmetric operator (its adjoint is the convolution with ``flip(M)ᵀ``), in float32 too
    (``fl(a − b) = −fl(b − a)``)."""
    return 0.5 * (raw - flip_transpose(raw))


def holder_bound(kernel):
    """``sqrt(‖L‖₁·‖L‖∞)`` ≥ ``‖L‖₂`` for the convolution (or, for a 2-D ``kernel``, the matrix)
    ``L``: the largest absolute column and row sums; differentiable, stateless and rigorous."""
    magnitude = tf.abs(tf.reshape(kernel, (-1, kernel.shape[-2], kernel.shape[-1])))
    per_in = tf.reduce_max(tf.reduce_sum(magnitude, axis=(0, 2)))
    per_out = tf.reduce_max(tf.reduce_sum(magnitude, axis=(0, 1)))
    return tf.sqrt(per_in * per_out)


#: Gram iterations of :func:`gram_bound`: at 5 its excess over ``σ_max`` is ≤ 1.2 % on random
#: skew kernels of 12 to 512 channels (0.5 % for dense skew matrices, whose singular values pair).
GRAM_ITERATIONS = 5


#: How :func:`gram_bound` is differentiated (its value is the same, bit for bit, in each).
GRAM_GRADIENTS = ("closed_form", "autodiff", "top")


def gram_bound(kernel, iterations: int = GRAM_ITERATIONS, gradient: str = "closed_form"):
    """``≥ ‖L‖₂`` for the convolution (or, for a 2-D ``kernel``, the matrix) ``L``: ``sqrt(taps)``
    times an upper bound on the largest singular value of the kernel flattened to
    ``[taps·c_in, c_out]``; differentiable, stateless and rigorous, and about 2x the exact norm
    of a random 3x3 skew convolution where :func:`holder_bound` is 10 to 20x.

    Why it holds: output pixel ``p`` is the flattened kernel ``A`` applied to the stacked patch
    of ``taps`` input pixels around ``p``, and each input pixel lies in at most ``taps`` patches,
    so ``‖Lx‖² ≤ σ(A)²·taps·‖x‖²`` (the "T" bound of Singla & Feizi, "Fantastic Four", ICLR 2021;
    exact for 1x1 kernels and matrices). ``σ(A)`` is bounded by Gram iteration (Delattre et al.,
    "Efficient Bound of Lipschitz Constant for Convolutional Layers by Gram Iteration", ICML 2023;
    ``gram_iteration_on_matrix`` in github.com/blaisedelattre/lip4conv ``bounds.py``): with
    ``G = AᵀA``, ``σ(A)² = λ_max(G) ≤ ‖G^(2^j)‖_F^(1/2^j)`` for any ``j``, the excess at most
    ``rank^(1/2^(j+1))`` and far less unless the top singular values are equal. Each squaring is
    normalized by its Frobenius norm, the scale kept as a log, so float32 neither overflows nor
    underflows.

    ``gradient`` (the value is the same, bit for bit, in each; only training's gradient differs):

    * ``'closed_form'`` (the default): the bound's own gradient, computed in closed form. After
      ``j`` squarings the bound is the Schatten ``p``-norm ``(Σᵢ σᵢᵖ)^(1/p)``, ``p = 2^(j+2)``,
      whose gradient is ``∝ A·G^(p/2 − 1)``, and ``G^(p/2 − 1) = G·G²·G⁴ ⋯ G^(2^j)`` is the
      product of the iterates the forward pass already computed: ``j + 1`` products instead of
      autodiff's two per squaring. The scale is fixed by Euler's relation ``⟨∇f, A⟩ = f``.
    * ``'autodiff'``: the same gradient by differentiating through the squarings (the form
      before 2026-12-07; kept for the test and the bench, benchmarks/gram_gradient/ab.py).
    * ``'top'``: ``σ(A)`` alone: the bound times the gradient of ``log‖A·v‖`` at a top right
      singular vector ``v`` read off the last iterate (the column of ``G^(2^j)`` with the
      largest diagonal entry), as the reference SOC differentiates ``sigma = Σ W·u·v`` at its
      stored vectors; ``soc.bound = 'gram_top'``.
    """
    if gradient not in GRAM_GRADIENTS:
        raise ValueError(f"gram_bound's gradient must be one of {GRAM_GRADIENTS}, got {gradient!r}")
    a = tf.reshape(kernel, (-1, kernel.shape[-1]))
    if a.shape[0] < a.shape[1]:
        a = tf.transpose(a)
    scale = math.sqrt(math.prod(kernel.shape[:-2]))  # sqrt(taps); 1 for a matrix
    if gradient == "autodiff":
        return scale * _gram_iteration(a, iterations)[0]
    if gradient == "top":
        sigma, iterates = _gram_iteration(tf.stop_gradient(a), iterations)
        return _with_top_gradient(a, scale * sigma, iterates[-1])
    return scale * _schatten_bound(a, iterations)


def _gram_iteration(a, iterations: int):
    """``(Σᵢ σᵢ(a)ᵖ)^(1/p)``, ``p = 2^(iterations+2)``, and the iterates ``G, G², G⁴, …,
    G^(2^iterations)`` of ``G = aᵀa``, each up to a positive factor (all but the last have
    Frobenius norm 1)."""
    gram = tf.matmul(a, a, transpose_a=True)
    log_scale = tf.zeros((), gram.dtype)
    iterates = []
    for _ in range(iterations):
        frobenius = tf.maximum(tf.norm(gram), tf.constant(1e-30, gram.dtype))
        gram = gram / frobenius
        iterates.append(gram)
        log_scale = 2.0 * (log_scale + tf.math.log(frobenius))
        gram = tf.matmul(gram, gram)
    last = tf.maximum(tf.norm(gram), tf.constant(1e-30, gram.dtype))
    log_sigma = (tf.math.log(last) + log_scale) / 2.0 ** (iterations + 1)
    return tf.exp(log_sigma), iterates + [gram]


def _schatten_bound(a, iterations: int):
    """:func:`_gram_iteration`'s value, differentiated in closed form (:func:`gram_bound`)."""

    @tf.custom_gradient
    def bound(a):
        sigma, iterates = _gram_iteration(a, iterations)

        def grad(upstream):
            power = iterates[0]
            for iterate in iterates[1:]:  # G^(p/2 - 1) up to a positive factor; all commute
                power = tf.matmul(power, iterate)
            direction = tf.matmul(a, power)
            inner = tf.reduce_sum(direction * a)  # tr(G^(p/2)) times that factor: > 0 if a ≠ 0
            positive = inner > 0
            factor = tf.where(positive, sigma / tf.where(positive, inner, 1.0), 0.0)
            return upstream * factor * direction

        return sigma, grad

    return bound(a)


def _with_top_gradient(a, value, gram):
    """``value`` (a bound on ``σ(a)`` computed without gradient), exactly, with the gradient of
    ``value · log‖a·v‖``, ``v`` a top right singular vector of ``a`` read off the last Gram
    iterate ``gram`` (:func:`gram_bound`): its column with the largest diagonal entry, taken as a
    product with a one-hot vector (indexing the column by the ``argmax`` took XLA 70 s to
    compile for a 512-wide layer, and its step ran at a fraction of the speed)."""
    pick = tf.one_hot(tf.argmax(tf.linalg.diag_part(gram)), gram.shape[0], dtype=gram.dtype)
    top = tf.linalg.matvec(gram, pick)
    v = top / tf.maximum(tf.norm(top), tf.constant(1e-30, top.dtype))
    image = tf.linalg.matvec(a, v)
    sigma = tf.sqrt(tf.reduce_sum(image * image) + tf.constant(1e-30, a.dtype))
    frozen = tf.stop_gradient(sigma)
    return value + value * (sigma - frozen) / frozen  # sigma - frozen is 0: the value exactly


def exp_series(apply, x, terms: int):
    """``T_K(L)x = Σ_{k≤K} Lᵏx/k!`` with ``apply(v) = Lv`` (``K = terms``), as SOC computes it."""
    out = term = x
    for k in range(1, terms + 1):
        term = apply(term) / float(k)
        out = out + term
    return out
