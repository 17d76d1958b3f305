"""``soc``: Skew Orthogonal Convolutions (Singla & Feizi, ICML 2021), with a certified truncation.

"Skew Orthogonal Convolutions" (reference code: ``skew_ortho_conv.py`` of
github.com/singlasahil14/SOC, class ``SOC``): for a skew-symmetric operator ``L`` (``Lᵀ = −L``),
``exp(L)`` is orthogonal. A convolution ``L = conv(M) − conv_transpose(M)`` is skew-symmetric, and
with an odd kernel and 'same' zero padding it is the convolution with ``S = M − flip(M)ᵀ``
(:func:`lipgan.core.skew_series.skew_kernel`) **exactly**, on the zero-padded image: so unlike
``cayley``, SOC is orthogonal for the critic's zero padding, with no circular wrap. ``exp(L)x`` is
the Taylor series ``Σ_{k≤K} Lᵏx/k!`` truncated after ``K = terms`` convolutions.

**The truncation, certified.** ``L`` is skew-symmetric, hence normal, and so is ``T_K(L)``: its
norm is the largest ``|T_K(iθ)|`` over ``L``'s eigenvalues ``iθ``, ``|θ| ≤ ‖L‖``. So
``‖T_K(L)‖ ≤ g_K(ℓ) = max_{|θ|≤ℓ} |T_K(iθ)|`` for any ``ℓ ≥ ‖L‖``
(:func:`lipgan.core.skew_series.series_gain`, rigorous), which is at most ``1 + τ_K(ℓ)``
(``τ_K(ℓ) = Σ_{k>K} ℓᵏ/k!``, :func:`lipgan.core.skew_series.taylor_tail`, the series' distance from
``exp(L)``) and far below it for even ``K``: ``|T_4(iθ)|² = 1 − θ⁶/72 + θ⁸/576 ≤ 1`` for
``θ² ≤ 8``, so a 4-term SOC layer is certified at 1 (up to the bound's grid margin: 1 + 2.6e-11 at the defaults) while it
is within ``τ_4(0.5) = 2.8e-4`` of the orthogonal ``exp(L)`` (singular values in
[0.99989, 1]). Every call rescales ``S`` to ``‖L‖ ≤ norm`` by a rigorous, stateless bound
(the scale, below), so the certificate holds whatever training does; the constructor refuses ``terms``/``norm`` whose
``g_K(norm) > 1 + 1e-5`` (``lipgan audit``'s threshold for certified) or whose series is more
than ``τ_K(norm) > 1e-3`` from ``exp(L)`` (no longer a near-isometry: ``T_3`` at 0.5 shrinks
some directions by 0.24 %). The reference instead divides by the "fantastic four" bound estimated
by a stored power iteration (``correction = 0.7``; 5 terms in training, 12 in evaluation): state
that must be kept in sync, and a 5-term series at ``‖L‖ = 0.7`` has gain up to 1 + 1.3e-4 (odd
``K`` expand). Here training and evaluation use the same ``terms`` (default 4 at ``norm = 0.5``,
the fewest the two checks allow there: two thirds of the former default 6's convolutions).
:meth:`SOCConv2D.operator_norm_bound` certifies ``g_K(ℓ)`` with ``ℓ`` the layer's bound (below) of
the effective ``L`` recomputed in float64 (``≤ norm``).

**The scale** (``bound``). The default, ``'gram'``, scales by
:func:`lipgan.core.skew_series.gram_bound`: ``sqrt(t²)`` times the flattened kernel's largest
singular value (the reference's "fantastic four" family, of which it is one of the four), bounded
by Gram iteration rather than estimated by a stored power iteration, so stateless and rigorous;
about 2x the exact ``‖L‖`` at initialization, for six ``c×c`` products per layer and call and
as many in its gradient, computed in closed form (a few % of the DCGAN critic's step, but 1.85x
the MLP critic's with Hölder's scale, whose 512-wide Dense layers make them dominate). ``bound='holder'`` (``‖L‖₂ ≤ sqrt(‖L‖₁‖L‖∞)``, the largest absolute kernel row/column
sum; the only scale before 2026-12-07, and what a run recorded before then is rebuilt with:
:attr:`SOC.unrecorded_defaults`) is cheap but loose for dense random kernels (by about
sqrt(channels)/2: 5 to 28x the exact norm on the DCGAN critic's convs at initialization), so
its rotations stay near the identity. On digits the Gram scale lowered the critic's FD from
40.0 to 14.6 over 5 seeds, every seed better; on the ring it raised high-quality samples from
85.8 % to 91.9 %, and on the grid from 17.3 % (two of three seeds collapsed) to 83.3 % (3 seeds
each; docs/study.md, "SOC's scale").

**Cost.** ``K`` convolutions per layer and call, the reference's count (a Horner form needs as
many: a degree-``K`` polynomial of ``L`` applied to ``x`` takes ``K`` applications of ``L``). The
first acts on the input's own channels only (not the zero padding). What sets the price is where
a stride's downsampling goes (below): before the series, the reference's order and the default,
the DCGAN critic's step is ~7.6× a plain one on two CPU cores (9.3× the FLOPs); after it,
~2.0× (2.44× the FLOPs), measured in one run (benchmarks/RESULTS.md, "SOC's strided convs").

**Strides and widths.** A stride ``s`` is invertible downsampling (``space_to_depth``: the ``s²``
polyphase components as channels, a permutation). By default, as the reference, the layer
downsamples first and runs the series on ``c = max(s²·c_in, c_out)`` channels at the lower
resolution (``downsample='before'``): fewer input channels are zero-padded (an isometry), more
are sliced to the first ``c_out`` (orthonormal rows). ``downsample='after'`` (lipgan's) runs the
series at the input's resolution on ``c = max(c_in, c_out/s²)`` channels, keeps its first
``c_out/s²`` channels and downsamples them to ``c_out`` (:func:`full_resolution_channels`; where
``s²`` does not divide ``c_out`` the layer keeps the reference's order). Per term that is
``H·W·t²·c²`` multiply-adds against ``(H/s)(W/s)·t²·(s²c)²``: ``s²`` times fewer, with the same
``t×t`` taps (``t = ⌈k/s⌉`` made odd, 3×3 for the DCGAN critic's 5×5 stride-2 convs: a term
reaches one input pixel where the reference's reaches ``s``), and the last term computes only the
kept channels. Both orders are orthogonal maps between an isometric zero-padding and a
coordinate projection, so the certificate is the same ``g_K(ℓ)``. Why ``'after'`` is not the
default: its critic learnt worse on digits, per iteration and, with the Gram scale, at equal
seconds (docs/study.md, "SOC's two orders", "SOC's scale"),
and a run dir records no default, so old runs must rebuild the layer they trained.

**Dense** layers: ``x ↦ x·T_K(A)`` restricted to ``in`` rows and ``out`` columns, ``A`` the
normalized ``(W − Wᵀ)/2`` of a raw ``c×c`` matrix, computed as ``K`` products of a
``min(in, out)``-row slice; certified by the exact SVD of that effective kernel (truncation
included). A layer with one output or input (the critic's last) is ``w/‖w‖``, the reference's
normalized last layer.
"""

from __future__ import annotations

import functools
import math

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from lipgan import hookimpl
from lipgan.core.errors import ConfigError
from lipgan.core.orthogonal import (
    OrthogonalConstruction,
    downsample,
    layer_bound,
    pair,
    polyphase_shape,
)
from lipgan.core.reparametrized import KernelReparametrization, fresh_copy
from lipgan.core.search_space import ADAM
from lipgan.core.skew_series import (
    exp_series,
    gram_bound,
    holder_bound,
    series_gain,
    skew_dense,
    skew_kernel,
    taylor_tail,
)

#: The largest certified gain ``g_K(norm)`` above 1 the constructor accepts: ``lipgan audit`` calls a
#: critic certified 1-Lipschitz when its bound is ≤ 1 + 1e-5.
MAX_EXCESS = 1e-5
#: The largest distance ``τ_K(norm)`` of the series from ``exp(L)`` it accepts (a near-isometry).
MAX_SERIES_ERROR = 1e-3
#: Where a strided conv's invertible downsampling goes: before the series (the reference's order,
#: the default) or after it (at the input's resolution, s² times fewer multiply-adds).
DOWNSAMPLE = ("before", "after")
#: The stateless upper bounds on ``‖L‖₂`` a layer may scale by: the flattened kernel's norm by
#: Gram iteration (the default), the same value trained with the gradient of ``σ`` alone
#: (``'gram_top'``: the same layer, a cheaper backward pass; the reference's gradient), or
#: Hölder's (cheaper, looser: rotations 2.6 to 14x smaller at init on the DCGAN critic, 10x on
#: the MLP critic's 512-wide Dense layers).
BOUNDS = {
    "holder": holder_bound,
    "gram": gram_bound,
    "gram_top": functools.partial(gram_bound, gradient="top"),
}


def _normalized(skew, norm: float, bound: str):
    """``skew`` scaled to ``‖L‖₂ ≤ norm`` by the named bound (:data:`BOUNDS`)."""
    return skew * (norm / tf.maximum(BOUNDS[bound](skew), 1e-30))


def full_resolution_channels(c_in: int, c_out: int, stride: int) -> int | None:
    """The channels ``c`` of a stride-``s`` SOC conv run before its downsampling (``None``: run it
    in the reference's order).

    ``max(c_in, c_out/s²)`` when ``s²`` divides ``c_out``: the input is zero-padded to ``c``
    channels if it has fewer (an isometry), the series' first ``c_out/s²`` channels are kept (a
    projection onto orthonormal rows) and downsampled to exactly ``c_out``. Otherwise the layer
    keeps the reference's order; stride 1 has no order.
    """
    if stride == 1 or c_out % stride**2:
        return None
    return max(c_in, c_out // stride**2)


def _raw_initializer(channels: int):
    return keras.initializers.RandomNormal(stddev=1.0 / math.sqrt(channels))  # the reference's


class _SOCLayer(KernelReparametrization):
    def __init__(
        self,
        layer,
        terms: int = 4,
        norm: float = 0.5,
        downsample: str = "before",
        bound: str = "gram",
        **kwargs,
    ):
        super().__init__(layer, **kwargs)
        self.terms, self.norm, self.downsample = int(terms), float(norm), str(downsample)
        self.bound = str(bound)

    def _finish(self, out):
        if self.bias is not None:
            out = ops.add(out, ops.cast(self.bias, out.dtype))
        return out if self.layer.activation is None else self.layer.activation(out)

    def _bias(self, units: int):
        if not self.layer.use_bias:
            return None
        return self.add_weight(name="bias", shape=(units,), initializer="zeros")

    def lipschitz_bound(self) -> float | None:
        """:meth:`operator_norm_bound` times the activation's constant."""
        return layer_bound(self.operator_norm_bound(), self.layer.activation)

    @classmethod
    def from_config(cls, config):
        # A layer saved before ``bound`` existed scaled by Hölder's bound (SOC.unrecorded_defaults).
        return super().from_config({**SOC.unrecorded_defaults, **config})

    def get_config(self):
        return {
            **super().get_config(),
            "terms": self.terms,
            "norm": self.norm,
            "downsample": self.downsample,
            "bound": self.bound,
        }


@keras.saving.register_keras_serializable(package="lipgan")
class SOCDense(_SOCLayer):
    """``x ↦ x·T_K(A)[:in, :out]`` (module docstring); ``w/‖w‖`` for one input or output."""

    supports_conv = False

    def build(self, input_shape):
        self.units_in, self.units_out = int(input_shape[-1]), int(self.layer.units)
        if min(self.units_in, self.units_out) == 1:
            shape, init = (self.units_in, self.units_out), self.layer.kernel_initializer
        else:
            c = max(self.units_in, self.units_out)
            shape, init = (c, c), _raw_initializer(c)
        self.raw = self.add_weight(name="raw", shape=shape, initializer=init)
        self.bias = self._bias(self.units_out)
        self.built = True

    def effective_kernel(self):
        raw = ops.cast(self.raw, "float32")
        if min(self.units_in, self.units_out) == 1:
            return raw / tf.maximum(tf.norm(raw), 1e-30)
        a = _normalized(skew_dense(raw), self.norm, self.bound)
        eye = tf.eye(a.shape[0])
        if self.units_in <= self.units_out:  # the first `in` rows: v ↦ v·A on a row slice
            rows = exp_series(lambda v: tf.matmul(v, a), eye[: self.units_in], self.terms)
            return rows[:, : self.units_out]
        cols = exp_series(lambda v: tf.matmul(a, v), eye[:, : self.units_out], self.terms)
        return cols[: self.units_in]

    def call(self, inputs):
        return self._finish(ops.matmul(inputs, ops.cast(self.effective_kernel(), inputs.dtype)))


@keras.saving.register_keras_serializable(package="lipgan")
class SOCConv2D(_SOCLayer):
    """A stride-``s`` SOC convolution (module docstring). Variables: ``raw`` [t, t, c, c] (``t``
    = ``⌈k/s⌉`` made odd) and the bias; the wrapped Conv2D only holds the configuration."""

    def build(self, input_shape):
        conv = self.layer
        polyphase_shape(conv, input_shape, "soc")  # equal strides that divide the input size
        self.stride = pair(conv.strides)[0]
        c_in, self.channels_out = int(input_shape[-1]), int(conv.filters)
        full = full_resolution_channels(c_in, self.channels_out, self.stride)
        self.after = self.downsample == "after" and full is not None
        if self.after:  # the series at the input's resolution, then the downsampling
            self.channels_in, c = c_in, full
        else:  # the reference's order: the downsampling, then the series on its polyphase grid
            self.channels_in = c_in * self.stride**2
            c = max(self.channels_in, self.channels_out)
        taps = [math.ceil(k / self.stride) for k in pair(conv.kernel_size)]
        taps = [t + 1 - t % 2 for t in taps]  # odd: the 'same' adjoint is the flipped kernel
        self.raw = self.add_weight(name="raw", shape=(*taps, c, c), initializer=_raw_initializer(c))
        self.bias = self._bias(self.channels_out)
        self.built = True

    def effective_kernel(self):
        """The normalized skew-symmetric kernel ``S`` [t, t, c, c] of ``L`` (float32)."""
        return _normalized(skew_kernel(ops.cast(self.raw, "float32")), self.norm, self.bound)

    def call(self, inputs):
        kernel = ops.cast(self.effective_kernel(), inputs.dtype)
        x = inputs if self.after else downsample(inputs, self.stride)
        extra = kernel.shape[-1] - self.channels_in
        if extra > 0:
            x = tf.pad(x, [[0, 0], [0, 0], [0, 0], [0, extra]])
        kept = self.channels_out // self.stride**2 if self.after else self.channels_out
        out = x
        term = x[..., : self.channels_in]  # the first product skips the zero channels
        for k in range(1, self.terms + 1):
            weights = kernel[:, :, : term.shape[-1], :]
            if k == self.terms:  # the last computes only the kept channels
                weights, out = weights[..., :kept], out[..., :kept]
            term = tf.nn.conv2d(term, weights, 1, "SAME") / float(k)
            out = out + term
        return self._finish(downsample(out, self.stride) if self.after else out)

    def operator_norm_bound(self) -> float:
        """``g_K(ℓ)`` (:func:`lipgan.core.skew_series.series_gain`), ``ℓ`` the layer's bound
        (``bound``: Hölder's or Gram's) on ``‖L‖`` of the effective kernel in float64.

        ``ℓ ≤ norm`` up to rounding, so the bound is at most ``g_K(norm)`` (1 + 2.6e-11 at
        the defaults). The DFT bound on ``‖L‖`` (:func:`lipgan.core.lipschitz.conv_operator_norm_bound`) is
        tighter (docs/plugins.md) but takes a hundred SVDs of ``c×c`` complex matrices per layer,
        minutes for the DCGAN critic's 512-channel conv on two cores, for nothing at ``g_K = 1``.
        """
        kernel = tf.constant(np.asarray(self.effective_kernel(), np.float64))
        return series_gain(float(BOUNDS[self.bound](kernel)), self.terms)


class SOC(OrthogonalConstruction):
    """Make every Dense/Conv2D layer of the critic a (truncated) exponential of a skew one.

    Args:
        terms: Taylor terms ``K`` (convolutions per layer and call).
        norm: the bound the skew operator is scaled to (``‖L‖ ≤ norm``).
        downsample: ``'before'`` (the default) is the reference's order; ``'after'`` runs a
            strided conv's series at the input's resolution and downsamples its result (``s²``
            times fewer multiply-adds, and a critic that learnt worse per iteration on digits:
            module docstring; :func:`full_resolution_channels` says when it applies).
        bound: the stateless bound on ``‖L‖`` each call scales by: ``'gram'`` (the default), the
            flattened kernel's norm by Gram iteration; ``'gram_top'``, the same value (the same
            layer) trained with the gradient of ``σ`` alone, which skips the backward pass
            through the iteration (it learnt worse on 4 of 6 seeds of the ring and the grid:
            docs/study.md, "SOC's scale"); or ``'holder'``, cheaper and looser, so that ``L`` stays at rotations 2.6
            to 14x smaller (module docstring, "The scale").

    Raises:
        ConfigError: ``terms < 1``, ``norm <= 0``, a certified gain ``g_K(norm) > 1 + 1e-5`` or a
            series farther than ``τ_K(norm) > 1e-3`` from ``exp(L)``, an unknown ``downsample``
            or ``bound``.
    """

    name = "soc"
    #: ``lipgan tune``'s ranges (compare_gan's; :mod:`lipgan.core.search_space`).
    search_space = dict(ADAM)
    #: What a run recorded before each argument existed was trained with (Hölder's scale; the
    #: reference's order): rebuilding or resuming it keeps that layer.
    unrecorded_defaults = {"bound": "holder", "downsample": "before"}
    description = (
        "Skew orthogonal convolutions (Singla & Feizi 2021): exp of a skew-symmetric conv by a "
        "truncated Taylor series, its truncation error in the certified bound; Dense too."
    )

    def __init__(
        self, terms: int = 4, norm: float = 0.5, downsample: str = "before", bound: str = "gram"
    ):
        if int(terms) < 1 or not float(norm) > 0:
            raise ConfigError(f"soc.terms must be >= 1 and soc.norm > 0, got {terms} and {norm}")
        if downsample not in DOWNSAMPLE:
            raise ConfigError(
                f"soc.downsample must be one of {', '.join(map(repr, DOWNSAMPLE))}, got {downsample!r}"
            )
        if bound not in BOUNDS:
            raise ConfigError(
                f"soc.bound must be one of {', '.join(map(repr, BOUNDS))}, got {bound!r}"
            )
        excess = series_gain(float(norm), int(terms)) - 1.0
        if excess > MAX_EXCESS:
            raise ConfigError(
                f"soc with terms={terms} and norm={norm} has a truncated exp(L) of gain up to "
                f"1 + {excess:.1e} > 1 + {MAX_EXCESS:g}: raise soc.terms or lower soc.norm"
            )
        error = taylor_tail(float(norm), int(terms))
        if error > MAX_SERIES_ERROR:
            raise ConfigError(
                f"soc with terms={terms} and norm={norm} is up to {error:.1e} > "
                f"{MAX_SERIES_ERROR:g} from the orthogonal exp(L): raise soc.terms or lower soc.norm"
            )
        self.terms, self.norm, self.downsample = int(terms), float(norm), downsample
        self.bound = bound

    def wrap_dense(self, layer):
        return SOCDense(
            fresh_copy(layer), self.terms, self.norm, bound=self.bound, name=f"soc_{layer.name}"
        )

    def wrap_conv(self, layer):
        return SOCConv2D(
            fresh_copy(layer),
            self.terms,
            self.norm,
            self.downsample,
            self.bound,
            name=f"soc_{layer.name}",
        )


@hookimpl
def lipgan_register_constraints(register):
    register(SOC)
