"""Lipschitz diagnostics of a critic, computed on the host between compiled training calls.

A WGAN critic must be (close to) 1-Lipschitz; these functions say how close it is, from three sides:

* :func:`gradient_norm_stats` — ‖∇ₓD(x)‖ at real, generated and interpolated points. WGAN-GP's
  argument is that the optimal critic has norm 1 almost everywhere between the two distributions, so
  the mean, the max and the fraction above 1 show whether a constraint holds where it matters;
* :func:`empirical_lipschitz` — max |D(x) − D(y)| / ‖x − y‖ over sampled pairs: a *lower* bound on
  the true constant that needs no gradients;
* :func:`lipschitz_upper_bound` — a guaranteed *upper* bound on Lip(D) from the layer graph
  (operator norms of dense and convolution layers, the sum rule at residual additions), or None
  for an architecture where lipgan computes no valid bound; usually loose;
* :func:`layer_gradient_norms` — ‖∂L/∂hₗ‖ for the critic loss L and each layer's activations hₗ, the
  quantity of Fig. 1b of Gulrajani et al. (weight clipping makes it explode or vanish with depth).

Everything here is a pure function of a critic and some points; none of it runs inside the training
step. :class:`Probe` bundles them for ``train(diagnostics_every=N)``.
"""

from __future__ import annotations

import math

import keras
import numpy as np
import tensorflow as tf

from lipgan.constraint import StepContext
from lipgan.penalties import interpolate, per_example_gradient_norm


def gradient_norms(critic, x) -> np.ndarray:
    """‖∇ₓD(x)‖₂ per example, as a numpy array."""
    return per_example_gradient_norm(critic, tf.convert_to_tensor(x, tf.float32)).numpy()


def norm_summary(norms: np.ndarray) -> dict:
    """mean, max and fraction above 1 of a set of gradient norms."""
    norms = np.asarray(norms, dtype=np.float64)
    return {
        "mean": float(norms.mean()),
        "max": float(norms.max()),
        "frac_above_1": float((norms > 1.0).mean()),
    }


def interpolates(real, fake, seed: int = 0, step: int = 0) -> tf.Tensor:
    """Random points on the real–fake segments, drawn exactly as the gradient penalty draws them."""
    real = tf.convert_to_tensor(real, tf.float32)
    fake = tf.convert_to_tensor(fake, tf.float32)
    ctx = StepContext(
        seed=seed, step=step, phase=0, global_batch_size=int(real.shape[0]), num_replicas=1
    )
    return interpolate(real, fake, ctx)


def gradient_norm_stats(critic, real, fake, seed: int = 0, step: int = 0) -> dict:
    """Gradient-norm summaries at real, fake and interpolated points: ``{'real/mean': ...}``."""
    points = {"real": real, "fake": fake, "interp": interpolates(real, fake, seed, step)}
    out = {}
    for where, x in points.items():
        for stat, value in norm_summary(gradient_norms(critic, x)).items():
            out[f"{where}/{stat}"] = value
    return out


def _scores(critic, x) -> np.ndarray:
    return np.asarray(
        critic(tf.convert_to_tensor(x, tf.float32), training=False), np.float64
    ).reshape(-1)


def empirical_lipschitz(critic, x, y) -> float:
    """max |D(xᵢ) − D(yᵢ)| / ‖xᵢ − yᵢ‖ over the pairs (xᵢ, yᵢ): a lower bound on Lip(D).

    Pairs with ‖xᵢ − yᵢ‖ = 0 are skipped (they carry no information).
    """
    x = np.asarray(x, np.float32)
    y = np.asarray(y, np.float32)
    if x.shape != y.shape or len(x) == 0:
        raise ValueError(
            f"empirical_lipschitz needs two equal, non-empty sets of points; got {x.shape}, {y.shape}"
        )
    dist = np.sqrt(np.sum(np.square(x.astype(np.float64) - y), axis=tuple(range(1, x.ndim))))
    keep = dist > 0
    if not keep.any():
        raise ValueError("empirical_lipschitz: every pair of points coincides")
    ratio = np.abs(_scores(critic, x) - _scores(critic, y))[keep] / dist[keep]
    return float(ratio.max())


#: Lipschitz constants of activation functions, matched by identity (a user function that happens
#: to be called ``relu`` is unknown, so the bound is None). leaky_relu's default slope is 0.2.
_ACTIVATION_LIPSCHITZ = {
    keras.activations.linear: 1.0,
    keras.activations.relu: 1.0,
    keras.activations.leaky_relu: 1.0,
    keras.activations.tanh: 1.0,
    keras.activations.sigmoid: 0.25,
    keras.activations.softplus: 1.0,
    keras.activations.elu: 1.0,
    tf.nn.relu: 1.0,
    tf.nn.leaky_relu: 1.0,
    tf.nn.tanh: 1.0,
}


def _activation_lipschitz(fn) -> float | None:
    if fn is None:
        return 1.0
    from lipgan.models.pruned_relu import pruned_relu

    if fn is pruned_relu:
        return 1.0
    slope = getattr(fn, "pruned_negative_slope", None)  # fast_relu's leaky ReLUs
    if slope is not None:
        return max(1.0, abs(float(slope)))
    try:
        return _ACTIVATION_LIPSCHITZ.get(fn)
    except TypeError:  # unhashable callable
        return None


def _kernel(layer) -> np.ndarray:
    return np.asarray(keras.ops.convert_to_numpy(layer.kernel), np.float64)


def conv_operator_norm_bound(kernel: np.ndarray, spatial, strides=1) -> float:
    """An upper bound on ‖conv‖₂ for a convolution with ``kernel`` [k₁..k_d, c_in, c_out] and
    ``strides``, applied to inputs of spatial size ``spatial`` (any zero padding), or its transpose.

    Why it holds: a zero-padded ("same"/"valid") convolution is a crop (a projection, norm ≤ 1) of
    the convolution over the zero-extended signal. A stride-s convolution is a stride-1 convolution
    of the s^d *polyphase components* of the input (x_r[m] = x[s·m + r − pad]: a permutation of the
    input, an isometry) with the polyphase kernel K'[q, (r, c_in)] = K[s·q + r], so striding costs
    nothing in tightness. A stride-1 convolution of a finite signal equals a circular convolution on
    N points (N ≥ signal + kernel − 1: no wrap-around), which the DFT block-diagonalizes: its norm
    is max over the N^d frequencies ω of σ_max(K̂'(ω)) (Sedghi, Gupta & Long, "The Singular Values of
    Convolutional Layers", ICLR 2019). A transposed convolution is the adjoint of a strided one and
    has the same norm. The bound is tight up to the border effects of zero padding.
    """
    kernel = np.asarray(kernel, np.float64)
    d = kernel.ndim - 2
    strides = [int(v) for v in np.broadcast_to(np.atleast_1d(strides), (d,))]
    taps = [-(-int(k) // st) for k, st in zip(kernel.shape[:d], strides)]  # ceil(k / s)
    padded = np.zeros([t * st for t, st in zip(taps, strides)] + list(kernel.shape[d:]))
    padded[tuple(slice(0, int(k)) for k in kernel.shape[:d])] = kernel
    split = padded.reshape(
        [v for t, st in zip(taps, strides) for v in (t, st)] + list(kernel.shape[d:])
    )
    order = [2 * i for i in range(d)] + [2 * i + 1 for i in range(d)] + [2 * d, 2 * d + 1]
    polyphase = split.transpose(order).reshape(taps + [-1, kernel.shape[-1]])
    sizes = [
        -(-(int(n) + int(k)) // st) + t for n, k, st, t in zip(spatial, kernel.shape, strides, taps)
    ]
    symbol = np.fft.fftn(polyphase, s=sizes, axes=tuple(range(d)))
    matrices = symbol.reshape(-1, *polyphase.shape[d:])
    return float(np.linalg.svd(matrices, compute_uv=False).max())


def _conv_bound(layer, in_shape, out_shape) -> float | None:
    cfg = layer.get_config()
    rank = len(layer.kernel.shape) - 2
    dilation = cfg.get("dilation_rate", 1)
    if any(r != 1 for r in np.atleast_1d(dilation)) or cfg.get("groups", 1) != 1:
        return None
    if isinstance(layer, keras.layers.DepthwiseConv2D | keras.layers.SeparableConv2D):
        return None
    spatial = []
    for a, b in zip(in_shape[1 : 1 + rank], out_shape[1 : 1 + rank]):
        if a is None or b is None:
            return None
        spatial.append(max(int(a), int(b)))
    return conv_operator_norm_bound(_kernel(layer), tuple(spatial), cfg.get("strides", 1))


def _pool_bound(layer, in_shape) -> float | None:
    """sqrt(‖A‖₁‖A‖∞) (Schur's test): each input enters ≤ Π⌈p/s⌉ windows."""
    pool = np.atleast_1d(layer.pool_size)
    strides = np.atleast_1d(layer.strides if layer.strides is not None else layer.pool_size)
    overlap = float(np.prod(np.ceil(pool / strides)))
    if isinstance(layer, keras.layers.AveragePooling1D | keras.layers.AveragePooling2D):
        if layer.padding == "valid":
            return math.sqrt(
                overlap / float(np.prod(pool))
            )  # rows sum to 1, columns to overlap/|p|
        return math.sqrt(overlap)  # border windows average fewer points: weights <= 1
    return math.sqrt(overlap)  # max pooling: |max a - max b| <= max |a - b| per window


_ONE = (
    keras.layers.InputLayer,
    keras.layers.Flatten,
    keras.layers.Reshape,
    keras.layers.Permute,
    keras.layers.Identity,
    keras.layers.GlobalMaxPooling1D,
    keras.layers.GlobalMaxPooling2D,
    keras.layers.ZeroPadding2D,
    keras.layers.Cropping2D,
)


def _layer_bound(layer, in_shape, out_shape) -> float | None:
    """A Lipschitz constant of one single-input layer (ℓ₂ → ℓ₂), or None when none is known."""
    if isinstance(layer, keras.Model):
        return lipschitz_upper_bound(layer)
    if isinstance(layer, keras.layers.SpectralNormalization):
        # Inference uses the kernel the last training call wrote (already divided by sigma).
        return _layer_bound(layer.layer, in_shape, out_shape)
    if type(layer) in _ONE:
        return 1.0
    if isinstance(layer, keras.layers.Dropout):
        return 1.0 / (1.0 - float(layer.rate))  # training mode rescales the kept units
    if type(layer) is keras.layers.ReLU:
        return max(1.0, abs(float(layer.negative_slope)))
    if type(layer) is keras.layers.LeakyReLU:
        return max(1.0, abs(float(layer.negative_slope)))
    from lipgan.models.pruned_relu import PrunedLeakyReLU

    if type(layer) is PrunedLeakyReLU:
        return max(1.0, abs(layer.negative_slope))
    if type(layer) is keras.layers.Activation:
        return _activation_lipschitz(layer.activation)
    from lipgan.models.activations import GroupSort

    if type(layer) is GroupSort:
        # Sorting within groups permutes coordinates piecewise and is continuous: 1-Lipschitz in ℓ₂
        # (Anil et al. 2019, GroupSort; MaxMin is group size 2).
        return 1.0
    if type(layer) in (keras.layers.GlobalAveragePooling1D, keras.layers.GlobalAveragePooling2D):
        positions = in_shape[1:-1]
        if any(p is None for p in positions):
            return None
        return 1.0 / math.sqrt(math.prod(int(p) for p in positions))  # ‖mean‖ <= ‖x‖/sqrt(n)
    if type(layer) in (
        keras.layers.AveragePooling1D,
        keras.layers.AveragePooling2D,
        keras.layers.MaxPooling1D,
        keras.layers.MaxPooling2D,
    ):
        return _pool_bound(layer, in_shape)
    if type(layer) is keras.layers.UpSampling2D and layer.interpolation == "nearest":
        return math.sqrt(math.prod(np.atleast_1d(layer.size)))  # each input copied prod(size) times
    act = _activation_lipschitz(getattr(layer, "activation", None))
    if act is None:
        return None
    if type(layer) is keras.layers.Dense:
        return act * float(np.linalg.norm(_kernel(layer), ord=2))
    if type(layer) in (
        keras.layers.Conv1D,
        keras.layers.Conv2D,
        keras.layers.Conv3D,
        keras.layers.Conv1DTranspose,
        keras.layers.Conv2DTranspose,
        keras.layers.Conv3DTranspose,
    ):
        conv = _conv_bound(layer, in_shape, out_shape)
        return None if conv is None else act * conv
    return None  # unknown layer (BatchNormalization, attention, Lambda, custom...): no bound


def _merge_bound(layer, bounds: list[float]) -> float | None:
    if type(layer) in (keras.layers.Add, keras.layers.Subtract):
        return sum(bounds)  # ‖Σfᵢ(x) − Σfᵢ(y)‖ <= Σ Lᵢ‖x − y‖: a residual x + f(x) gets 1 + L_f
    if type(layer) is keras.layers.Average:
        return sum(bounds) / len(bounds)
    if type(layer) is keras.layers.Concatenate:
        return math.sqrt(sum(b * b for b in bounds))
    return None


def lipschitz_upper_bound(critic) -> float | None:
    """A guaranteed upper bound on the ℓ₂ Lipschitz constant of ``critic`` (inference mode), or None.

    Computed on the critic's layer graph (Sequential or functional, nested models recursively), each
    tensor getting a bound L on the map from the critic's input to it:

    * a single-input layer multiplies L by its own constant: Dense: σ_max(W) (exact SVD); Conv and
      ConvTranspose: :func:`conv_operator_norm_bound` (the norm of the convolution *operator* at the
      layer's input size, not the norm of the reshaped kernel); the activation: 1 for ReLU, leaky ReLU
      (|slope| <= 1), tanh, softplus, ELU, ¼ for sigmoid, matched by identity; average/max pooling,
      global pooling, nearest upsampling, Flatten/Reshape by their exact constants (see
      :func:`_layer_bound`); spectral normalization by its inner layer's current (normalized) kernel;
    * Add/Subtract: the sum of the inputs' bounds, so a residual block x + f(x) gets 1 + L_f (not the
      product along a chain, which is no bound); Average: the mean; Concatenate: the root sum of squares.

    Anything else (BatchNormalization, whose training mode couples the batch; LayerNormalization,
    which is not Lipschitz near constant inputs; attention; Lambda and custom layers; activations not
    known by identity; dilated or grouped convolutions; several inputs) makes the result None:
    never a number called a bound that is not one.
    """
    if isinstance(critic, keras.Sequential):
        graph = getattr(critic, "_functional", None)
        if graph is None:
            return None
        return lipschitz_upper_bound(graph)
    nodes_by_depth = getattr(critic, "_nodes_by_depth", None)
    inputs = getattr(critic, "inputs", None) or []
    if nodes_by_depth is None or len(inputs) != 1:
        return None
    bounds = {id(inputs[0]): 1.0}
    for depth in sorted(nodes_by_depth, reverse=True):
        for node in nodes_by_depth[depth]:
            layer = node.operation
            ins, outs = list(node.input_tensors), list(node.output_tensors)
            if not ins:
                if isinstance(layer, keras.layers.InputLayer):
                    continue
                return None
            known = [bounds.get(id(t)) for t in ins]
            if any(b is None for b in known) or len(outs) != 1:
                return None
            if len(ins) == 1:
                own = _layer_bound(layer, tuple(ins[0].shape), tuple(outs[0].shape))
                bound = None if own is None else own * known[0]
            else:
                bound = _merge_bound(layer, known)
            if bound is None:
                return None
            bounds[id(outs[0])] = bound
    outputs = getattr(critic, "outputs", None) or []
    if len(outputs) != 1 or id(outputs[0]) not in bounds:
        return None
    return float(bounds[id(outputs[0])])


def _sequential_layers(critic) -> list:
    if not isinstance(critic, keras.Sequential) or not critic.layers:
        raise ValueError(
            f"per-layer gradient norms need a keras.Sequential critic; {critic.name!r} is not one"
        )
    return list(critic.layers)


def layer_gradient_norms(critic, real, fake) -> list[float]:
    """‖∂L/∂hₗ‖ for L = mean D(fake) − mean D(real) and the output hₗ of each layer but the last.

    The norm is over the whole batch of activations (real and fake together), as in Fig. 1b of
    Gulrajani et al. The critic's layers are applied in order, so this needs a chain of layers
    (``keras.Sequential``, as every lipgan critic is).
    """
    layers = _sequential_layers(critic)
    real = tf.convert_to_tensor(real, tf.float32)
    fake = tf.convert_to_tensor(fake, tf.float32)
    n = real.shape[0]
    with tf.GradientTape() as tape:
        h = tf.concat([real, fake], axis=0)
        activations = []
        for layer in layers:
            h = layer(h, training=False)
            activations.append(h)
        scores = tf.reshape(tf.cast(h, tf.float32), [-1])
        loss = tf.reduce_mean(scores[n:]) - tf.reduce_mean(scores[:n])
    grads = tape.gradient(loss, activations[:-1])
    return [float(tf.norm(tf.cast(g, tf.float32))) for g in grads]


class Probe:
    """All diagnostics of a run at one step, as a flat ``{'diag/...': float}`` dict.

    Draws its own real batches from the training data (a separate iterator) and fake batches from
    the generator with stateless noise keyed by ``(seed, step)``, so probing does not perturb training.
    On 2-D toy sets with known modes it adds the toy metrics of :mod:`lipgan.metrics.toy`.
    """

    def __init__(
        self,
        wgan,
        data: tf.data.Dataset,
        seed: int,
        dataset_name: str | None = None,
        toy_samples: int = 1024,
    ):
        self.wgan = wgan
        self.seed = seed
        self.batches = iter(data)
        self.toy_set = None
        self.toy_samples = toy_samples
        if dataset_name and wgan.data_shape == (2,):
            from lipgan.data.toy import SAMPLERS

            name = dataset_name.split("/")[-1].split(":")[0]
            self.toy_set = name if name in SAMPLERS else None

    def fake(self, n: int, step: int) -> np.ndarray:
        z = tf.random.stateless_normal(
            [n, *self.wgan.latent_shape], seed=[self.seed, 100_003 + step]
        )
        return np.asarray(self.wgan.generator(z, training=False))

    def __call__(self, step: int) -> dict:
        critic = self.wgan.critic
        real = np.asarray(next(self.batches))
        fake = self.fake(len(real), step)
        out = {
            f"diag/grad_norm/{k}": v
            for k, v in gradient_norm_stats(critic, real, fake, self.seed, step).items()
        }
        out["diag/lipschitz_estimate"] = max(
            empirical_lipschitz(critic, real, fake),
            empirical_lipschitz(critic, real, np.roll(real, 1, axis=0)),
            empirical_lipschitz(critic, fake, np.roll(fake, 1, axis=0)),
        )
        bound = lipschitz_upper_bound(critic)
        if bound is not None:  # no number where no valid bound is known
            out["diag/lipschitz_upper_bound"] = bound
        if isinstance(critic, keras.Sequential):
            for i, norm in enumerate(layer_gradient_norms(critic, real, fake)):
                out[f"diag/layer_grad_norm/{i}"] = norm
        if self.toy_set:
            from lipgan.metrics.toy import toy_metrics

            n = self.toy_samples
            reals = np.concatenate(
                [np.asarray(next(self.batches)) for _ in range(-(-n // len(real)))]
            )[:n]
            out.update(
                {
                    f"toy/{k}": v
                    for k, v in toy_metrics(self.toy_set, self.fake(n, step), reals).items()
                }
            )
        return out
