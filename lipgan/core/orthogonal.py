"""Orthogonal layers from skew-symmetric parameters: the math shared by ``cayley`` and ``soc``.

Both constraints map a raw parameter to a skew-symmetric (skew-Hermitian) operator ``A`` and an
orthogonal one from it: the Cayley transform ``(I − A)(I + A)⁻¹`` (Trockman & Kolter, ICLR 2021,
``layers.py`` of github.com/locuslab/orthogonal-convolutions) or the exponential ``exp(A)``
(Singla & Feizi, ICML 2021, ``skew_ortho_conv.py`` of github.com/singlasahil14/SOC). This module
holds the pieces both need and that TensorFlow lacks in a form XLA compiles:

* :func:`cayley`: the rectangular Cayley transform of a batch of real or complex matrices. XLA on
  CPU has no complex ``MatrixSolve``/``MatrixInverse`` (TF 2.21: "No registered 'MatrixSolve'
  OpKernel for XLA_CPU_JIT" for complex64; real solves and ``rfft2d``/``irfft2d`` with their
  gradients compile), so a complex ``n×n`` system is solved as the real ``2n×2n`` one
  ``[[R, −I], [I, R]]``, which represents ``R + iI``. The inverse and the orthonormalizing
  :func:`refine` step carry hand-written gradients (no second factorization, no backward pass
  through the step).
* :func:`kernel_spectrum`: a conv kernel's DFT on an image-sized grid, by constant cosine/sine
  matrices (real matrix products), in ``rfft2d``'s frequency order; :func:`fourier_conv` applies
  per-frequency matrices to a batch by ``rfft2d``/``irfft2d``: a circular convolution. Complex
  matrices travel as (real, imaginary) pairs (:mod:`lipgan.core.complex_pairs`): TF's complex64
  CPU kernels are its slow path.
* :class:`OrthogonalConstruction`: the constraint base of both (wrapping, ResNet merges, bound).

SOC's own math (the skew operators, the truncated exponential series, its error and its scale) is
:mod:`lipgan.core.skew_series`.
"""

from __future__ import annotations

import functools

import keras
import numpy as np
import tensorflow as tf

from lipgan.core import complex_pairs as pairs
from lipgan.core.errors import ConfigError
from lipgan.core.lipschitz import activation_fn_lipschitz, lipschitz_upper_bound
from lipgan.core.reparametrized import KernelConstruction, chain_lipschitz_bound


def pair(value) -> tuple[int, int]:
    """A Keras ``int or (int, int)`` argument as a pair."""
    value = tuple(int(v) for v in np.atleast_1d(value))
    return (value[0], value[0]) if len(value) == 1 else value


@tf.custom_gradient
def _inverse(m):
    """``m⁻¹`` for a batch of real square matrices by one LU solve; the gradient ``−X⁻ᵀ·G·X⁻ᵀ``
    from the inverse ``X`` (two products, where the solve's gradient factorizes ``m`` again)."""
    n = m.shape[-1]
    eye = tf.broadcast_to(tf.eye(n, dtype=m.dtype), tf.concat([tf.shape(m)[:-2], [n, n]], 0))
    x = tf.linalg.solve(m, eye)

    def grad(g):
        return -tf.matmul(x, tf.matmul(g, x, transpose_b=True), transpose_a=True)

    return x, grad


def _as_pair(m):
    return tf.math.real(m), tf.math.imag(m)


def cayley(w):
    """The Cayley transform of the ``[..., m, n]`` matrices ``w``: orthonormal columns (m ≥ n)
    or rows (m < n).

    Trockman & Kolter's rectangular form (``cayley`` in their ``layers.py``): with ``U = w[:n]``,
    ``V = w[n:]`` and ``A = U − Uᴴ + VᴴV`` (skew-Hermitian plus the PSD ``VᴴV``), ``Q = [(I + A)⁻¹(I − A); −2V(I + A)⁻¹]``
    is the first ``n`` columns of the Cayley transform of the ``m×m`` skew-Hermitian matrix
    ``[[U − Uᴴ, −Vᴴ], [V, 0]]``, at the price of one ``n×n`` inverse. ``I + A`` is invertible
    (``A``'s Hermitian part ``VᴴV`` is PSD), so every ``w`` gives an orthogonal ``Q``. Complex
    ``w`` is computed in real arithmetic (:mod:`lipgan.core.complex_pairs`).
    """
    if w.dtype.is_complex:
        return tf.complex(*pairs.cayley(_as_pair(w)))
    m, n = w.shape[-2:]
    if n > m:
        return tf.linalg.matrix_transpose(cayley(tf.linalg.matrix_transpose(w)))
    u, v = w[..., :n, :], w[..., n:, :]
    a = u - tf.linalg.matrix_transpose(u) + tf.matmul(v, v, transpose_a=True)
    eye = tf.eye(n, dtype=w.dtype)
    inv = _inverse(eye + a)
    # (I + A)⁻¹(I − A) = 2(I + A)⁻¹ − I: no product for the square block.
    return tf.concat([2.0 * inv - eye, -2.0 * tf.matmul(v, inv)], axis=-2)


@tf.custom_gradient
def _refine_real(q):
    m, n = q.shape[-2:]
    if m >= n:
        out = 1.5 * q - 0.5 * tf.matmul(q, tf.matmul(q, q, transpose_a=True))
    else:
        out = 1.5 * q - 0.5 * tf.matmul(tf.matmul(q, q, transpose_b=True), q)
    return out, lambda g: g


def refine(q):
    """One order-1 Björck step ``Q(3I − QᴴQ)/2`` (on the smaller Gram side): float32 Cayley
    transforms of ill-conditioned ``I + A`` (large raw weights) are off orthonormal by up to
    ~1e-3; the step maps every singular value σ ≤ √3 to ``σ(3 − σ²)/2 ≤ 1`` and squares the error.

    Its gradient is passed through unchanged: at an orthonormal ``Q`` the step's derivative
    ``dQ − Q(QᴴdQ + dQᴴQ)/2`` is the identity on the Stiefel manifold's tangent directions
    (``QᴴdQ`` skew), and the Cayley transform's output lies on that manifold, so the chain's
    gradient is the Cayley transform's own (up to ``Q``'s float32 error). Differentiating the
    step instead costs four more products of its size.
    """
    if q.dtype.is_complex:
        return tf.complex(*pairs.refine(*_as_pair(q)))
    return _refine_real(q)


@functools.cache
def _dft(taps: tuple[int, int], grid: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """cos and −sin of ``2π(fy·y/h + fx·x/w)`` [F, ty·tx] for ``rfft2d``'s frequencies
    (``fy < h``, ``fx ≤ w/2``, row-major) and the taps centred at ``(ty//2, tx//2)``."""
    (ty, tx), (h, w) = taps, grid
    fy, fx = np.meshgrid(np.arange(h), np.arange(w // 2 + 1), indexing="ij")
    y, x = np.meshgrid(np.arange(ty) - ty // 2, np.arange(tx) - tx // 2, indexing="ij")
    theta = 2 * np.pi * (np.outer(fy.ravel(), y.ravel()) / h + np.outer(fx.ravel(), x.ravel()) / w)
    return np.cos(theta), -np.sin(theta)


def kernel_spectrum_pair(kernel, grid: tuple[int, int]):
    """The DFT ``[h, w//2+1, c_out, c_in]`` of ``kernel`` [ty, tx, c_in, c_out] placed on the
    circular ``grid`` (taps beyond the grid wrap around), as ``rfft2d`` orders it: a (real,
    imaginary) pair."""
    ty, tx, cin, cout = kernel.shape
    cos, sin = (tf.constant(m, kernel.dtype) for m in _dft((ty, tx), tuple(grid)))
    flat = tf.reshape(tf.transpose(kernel, (0, 1, 3, 2)), (ty * tx, cout * cin))
    shape = (grid[0], grid[1] // 2 + 1, cout, cin)
    return tf.reshape(tf.matmul(cos, flat), shape), tf.reshape(tf.matmul(sin, flat), shape)


def kernel_spectrum(kernel, grid: tuple[int, int]):
    """:func:`kernel_spectrum_pair` as one complex tensor."""
    return tf.complex(*kernel_spectrum_pair(kernel, grid))


@functools.cache
def _frequency_classes(grid: tuple[int, int]):
    """For ``rfft2d``'s frequencies on ``grid`` (row-major): the self-conjugate ones (real
    symbols), one of each other conjugate pair, and, per frequency, its row in the concatenation
    of those two lists and the sign of its imaginary part (−1: the conjugate of a computed one)."""
    h, w = grid
    half = w // 2 + 1
    real, rest, source = [], [], {}
    for fy in range(h):
        for fx in range(half):
            partner = ((-fy) % h, (-fx) % w)
            if partner == (fy, fx):
                real.append(fy * half + fx)
            elif partner[1] < half and partner < (fy, fx):
                source[fy * half + fx] = partner[0] * half + partner[1]
            else:
                rest.append(fy * half + fx)
    row = {f: i for i, f in enumerate(real + rest)}
    rows = [row[source.get(f, f)] for f in range(h * half)]
    signs = [-1.0 if f in source else 1.0 for f in range(h * half)]
    return real, rest, rows, np.asarray(signs, np.float32)


def frequency_cayley(kernel, grid: tuple[int, int]):
    """``refine(cayley(K̂(ω)))`` for every ``rfft2d`` frequency of ``kernel`` on ``grid``, as a
    (real, imaginary) pair [h, w//2+1, c_out, c_in].

    A real kernel's symbol is conjugate-symmetric, ``K̂(−ω) = conj(K̂(ω))``, and so is every map
    built from it by real arithmetic (``cayley(conj W) = conj cayley(W)``). ``rfft2d``'s half
    grid still holds both members of the pairs in its first and (even widths) last columns and the
    self-conjugate frequencies, whose symbols are real: those take real transforms (a quarter of
    the complex ones' arithmetic), the duplicates none. The DCGAN critic's 4x4 grid computes 4
    real and 6 complex transforms instead of 12 complex ones, its 8x8 grid 4 and 30 instead of 40.
    """
    real, rest, rows, signs = _frequency_classes(tuple(grid))
    re, im = kernel_spectrum_pair(kernel, grid)
    shape = re.shape
    re, im = (tf.reshape(t, (-1, *shape[2:])) for t in (re, im))
    parts_r, parts_i = [], []
    if real:
        q = _refine_real(cayley(tf.gather(re, real)))
        parts_r.append(q)
        parts_i.append(tf.zeros_like(q))
    if rest:
        qr, qi = pairs.refine(*pairs.cayley((tf.gather(re, rest), tf.gather(im, rest))))
        parts_r.append(qr)
        parts_i.append(qi)
    qr = tf.gather(tf.concat(parts_r, 0), rows)
    qi = tf.gather(tf.concat(parts_i, 0), rows) * signs[:, None, None]
    out = (*shape[:2], *qr.shape[1:])
    return tf.reshape(qr, out), tf.reshape(qi, out)


def fourier_conv(x, matrices):
    """``irfft2d(Q(ω)·rfft2d(x)(ω))``: the circular convolution of ``x`` [b, h, w, c_in] whose
    symbol is ``matrices`` [h, w//2+1, c_out, c_in] (complex, or a (real, imaginary) pair),
    returned as [b, h, w, c_out]. The per-frequency products stay one complex einsum: in real
    arithmetic (one product of ``[Qᵣ; Qᵢ]`` with ``[x̂ᵣ, x̂ᵢ]``) the DCGAN critic's three convs took
    1.0–2.3× its time, forward and backward (the transposes and slices of the activations)."""
    if isinstance(matrices, (tuple, list)):
        matrices = tf.complex(*matrices)
    h, w = x.shape[1], x.shape[2]
    spectrum = tf.signal.rfft2d(tf.transpose(x, (0, 3, 1, 2)))  # [b, c_in, h, w//2+1]
    out = tf.einsum("yfoi,biyf->boyf", matrices, spectrum)
    return tf.transpose(tf.signal.irfft2d(out, fft_length=[h, w]), (0, 2, 3, 1))


def spectrum_norm(matrices) -> float:
    """``max_ω σ_max(Q(ω))`` in float64: the norm of :func:`fourier_conv`'s map (see the docs)."""
    q = np.asarray(matrices).astype(np.complex128)
    return float(np.linalg.svd(q.reshape(-1, *q.shape[-2:]), compute_uv=False).max())


def layer_bound(operator_norm: float, activation) -> float | None:
    """A layer's Lipschitz bound: its linear map's times its activation's constant (or None)."""
    act = activation_fn_lipschitz(activation)
    return None if act is None else float(operator_norm) * act


class OrthogonalConstruction(KernelConstruction):
    """The base of ``cayley`` and ``soc``: each Dense/Conv2D layer becomes an orthogonal one.

    A residual ``Add`` (the ResNet critic) becomes ``Average``: a convex combination of two
    1-Lipschitz maps is 1-Lipschitz, where a sum is 2-Lipschitz (Trockman & Kolter's residual
    networks use a learnt convex combination, ``ConvexCombo``; here it is fixed at ½). The
    certified bound is the chain's product (``keras.Sequential``) or, for a functional critic, the
    layer-graph bound of :func:`lipgan.core.lipschitz.lipschitz_upper_bound`, which honours each
    layer's own ``lipschitz_bound()``.
    """

    def wrap_layer(self, layer):
        if type(layer) is keras.layers.Add:
            return keras.layers.Average(name=layer.name)
        if isinstance(layer, keras.layers.Dense):
            return self.wrap_dense(layer)
        if type(layer) is keras.layers.Conv2D:
            check_conv(layer, self.name)
            return self.wrap_conv(layer)
        if "Conv" in type(layer).__name__:
            raise ConfigError(
                f"{self.name} supports Dense and Conv2D layers, not {type(layer).__name__} "
                f"{layer.name!r}: change the critic or use another constraint"
            )
        return None

    def wrap_dense(self, layer):
        raise NotImplementedError

    def wrap_conv(self, layer):
        raise NotImplementedError

    def lipschitz_bound(self, critic):
        bound = chain_lipschitz_bound(critic)
        if bound is None and not isinstance(critic, keras.Sequential):
            bound = lipschitz_upper_bound(critic)
        return bound


def check_conv(layer, who: str) -> None:
    """A one-line ConfigError unless ``layer`` can become an orthogonal conv of the same shape."""
    where = f"{who}: convolution {layer.name!r}"
    if layer.data_format != "channels_last" or layer.groups != 1:
        raise ConfigError(f"{where} must be channels_last with groups=1")
    if pair(layer.dilation_rate) != (1, 1):
        raise ConfigError(f"{where} is dilated; {who} needs dilation_rate=1")
    if layer.padding != "same" and pair(layer.kernel_size) != (1, 1):
        raise ConfigError(
            f"{where} has padding={layer.padding!r}; {who} builds 'same'-shaped orthogonal convs"
        )


def polyphase_shape(layer, input_shape, who: str) -> tuple[int, int, int]:
    """(height, width, channels) after the stride's invertible downsampling (space_to_depth)."""
    h, w, c = (int(v) for v in input_shape[1:4])
    sy, sx = pair(layer.strides)
    if h % sy or w % sx or sy != sx:
        raise ConfigError(
            f"{who}: convolution {layer.name!r} has strides {(sy, sx)} on {h}x{w} inputs; it needs "
            "equal strides that divide the input size (invertible downsampling)"
        )
    return h // sy, w // sx, c * sy * sx


def downsample(x, stride: int):
    """Invertible downsampling: the ``s²`` polyphase components as channels (a permutation)."""
    return x if stride == 1 else tf.nn.space_to_depth(x, stride)
