"""Complex matrices as (real, imaginary) pairs of float tensors: the Cayley convolution's arithmetic.

``cayley``'s convolutions transform a ``c_out × s²·c_in`` complex matrix per frequency. In TF 2.21
on CPU, complex64 is the slow path: the conjugate transposes that ``tf.linalg.adjoint`` and the
gradients of complex products insert ran as ``_MklConjugateTranspose`` at a quarter of the DCGAN
critic's Cayley weight pass, and a complex64 ``BatchMatMulV2`` does ~0.6× the arithmetic per second
of a float32 one (measured, benchmarks/RESULTS.md, "certified layers"). A pair needs neither: an
adjoint is a transpose flag of ``tf.matmul`` and a sign, and ``QᴴQ``-shaped Gram matrices take three
real products instead of four. Everything here is real arithmetic, so XLA compiles it too (XLA on
CPU has no complex ``MatrixSolve``).
"""

from __future__ import annotations

import tensorflow as tf


def matmul(a, b, adjoint_a: bool = False, adjoint_b: bool = False):
    """``op(a)·op(b)`` for pairs, ``op`` the adjoint where asked: four real products."""
    (ar, ai), (br, bi) = a, b

    def mm(x, y):
        return tf.matmul(x, y, transpose_a=adjoint_a, transpose_b=adjoint_b)

    # conj(a)ᵢ = −aᵢ: the signs of the imaginary parts under an adjoint.
    rr, ii, ri, ir = mm(ar, br), mm(ai, bi), mm(ar, bi), mm(ai, br)
    sa, sb = (-1.0 if adjoint_a else 1.0), (-1.0 if adjoint_b else 1.0)
    real = rr - ii if sa * sb > 0 else rr + ii
    imag = (ri if sb > 0 else -ri) + (ir if sa > 0 else -ir)
    return real, imag


def gram(a):
    """``aᴴa`` for a pair ``a`` [..., m, n]: ``Re = [aᵣ; aᵢ]ᵀ[aᵣ; aᵢ]``, ``Im = T − Tᵀ`` with
    ``T = aᵣᵀaᵢ`` (three real products' arithmetic; ``Re`` symmetric, ``Im`` exactly skew)."""
    ar, ai = a
    stacked = tf.concat([ar, ai], axis=-2)
    t = tf.matmul(ar, ai, transpose_a=True)
    return tf.matmul(stacked, stacked, transpose_a=True), t - tf.linalg.matrix_transpose(t)


def adjoint(a):
    """``aᴴ`` of a pair."""
    return tf.linalg.matrix_transpose(a[0]), -tf.linalg.matrix_transpose(a[1])


def _solve_inverse(mr, mi):
    n = mr.shape[-1]
    batch = tf.shape(mr)[:-2]
    big = tf.concat([tf.concat([mr, -mi], -1), tf.concat([mi, mr], -1)], -2)  # [.., 2n, 2n]
    rhs = tf.concat([tf.eye(n, dtype=mr.dtype), tf.zeros((n, n), mr.dtype)], 0)  # [2n, n]
    x = tf.linalg.solve(big, tf.broadcast_to(rhs, tf.concat([batch, [2 * n, n]], 0)))
    return x[..., :n, :], x[..., n:, :]


@tf.custom_gradient
def inverse(mr, mi):
    """``m⁻¹`` for the pair ``m = (mr, mi)`` of square matrices: one real ``2n×2n`` LU solve of
    ``[[mr, −mi], [mi, mr]]``, which represents ``m``, for the first ``n`` columns.

    The gradient is ``−Xᴴ·G·Xᴴ`` from the inverse ``X`` already computed: two products, where the
    solve's own gradient would factorize the ``2n×2n`` matrix a second time."""
    x = _solve_inverse(mr, mi)

    def grad(gr, gi):
        xh = adjoint(x)
        hr, hi = matmul(xh, matmul((gr, gi), xh))
        return -hr, -hi

    return x, grad


def cayley(w):
    """The rectangular Cayley transform of the pair ``w`` [..., m, n] (see
    :func:`lipgan.orthogonal.cayley`): orthonormal columns (m ≥ n) or rows (m < n)."""
    m, n = w[0].shape[-2:]
    if n > m:
        return adjoint(cayley(adjoint(w)))
    (ur, ui), (vr, vi) = (part[..., :n, :] for part in w), (part[..., n:, :] for part in w)
    pr, pi = gram((vr, vi))
    eye = tf.eye(n, dtype=ur.dtype)
    # I + A with A = U − Uᴴ + VᴴV: Re = I + Uᵣ − Uᵣᵀ + Pᵣ, Im = Uᵢ + Uᵢᵀ + Pᵢ.
    xr, xi = inverse(
        eye + (ur - tf.linalg.matrix_transpose(ur)) + pr,
        (ui + tf.linalg.matrix_transpose(ui)) + pi,
    )
    # (I + A)⁻¹(I − A) = 2(I + A)⁻¹ − I: no product for the square block.
    br, bi = matmul((vr, vi), (xr, xi))
    return tf.concat([2.0 * xr - eye, -2.0 * br], -2), tf.concat([2.0 * xi, -2.0 * bi], -2)


@tf.custom_gradient
def refine(qr, qi):
    """:func:`lipgan.orthogonal.refine` for a pair (one order-1 Björck step on the smaller Gram
    side), its gradient passed through unchanged for the same reason."""
    m, n = qr.shape[-2:]
    if m >= n:
        step = matmul((qr, qi), gram((qr, qi)))
    else:
        step = matmul(gram(adjoint((qr, qi))), (qr, qi))
    out = (1.5 * qr - 0.5 * step[0], 1.5 * qi - 0.5 * step[1])
    return out, lambda gr, gi: (gr, gi)
