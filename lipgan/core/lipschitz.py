"""Every Lipschitz fact lipgan relies on, in one table, and the rules that combine them into a bound.

Four parts of lipgan need to know how Lipschitz a piece of a critic is, and they must agree:

* the general upper bound of the diagnostics and the audit (:func:`lipschitz_upper_bound`, reported
  as ``diag/lipschitz_upper_bound`` and by ``lipgan audit``);
* the certified constructions (``bjorck``, ``aol``:
:func:`lipgan.core.reparametrized.chain_lipschitz_bound`
  multiplies their layers' bounds by the activations' constants from here);
* the exact ReLU pruning (:mod:`lipgan.core.pruned_relu` asks :func:`relu_slope` and
  :func:`relu_layer_slope` which activations are (leaky) ReLUs it can replace);
* the critics' activation layers (:mod:`lipgan.models.activations`).

Activation functions are matched by **identity** (:data:`ACTIVATIONS`), never by name: a user
function that happens to be called ``relu`` may compute anything, so it gets no constant and the
bound is None. A bound is never a number that is not one: any layer, activation or option this module
does not know makes the result None. Checked against the singular values of explicit Jacobians on
random small nets of every layer kind handled here, in both data formats
(``tests/test_lipschitz.py``).
"""

from __future__ import annotations

import dataclasses
import math

import keras
import numpy as np
import tensorflow as tf

#: The class attribute by which a parameter-free activation layer states its Lipschitz constant
#: (GroupSort: 1.0). Read from the class itself, never inherited: a subclass may compute
#: something else, and a layer this table does not know gets no constant.
ACTIVATION_LIPSCHITZ = "activation_lipschitz"


@dataclasses.dataclass(frozen=True)
class ActivationFact:
    """What lipgan knows about one activation function (called with its defaults)."""

    #: Its Lipschitz constant (the supremum of |f'|).
    lipschitz: float
    #: The negative slope when it is a (leaky) ReLU that the exact pruning can replace, else None.
    relu_slope: float | None = None


_ONE = ActivationFact(1.0)
_RELU = ActivationFact(1.0, relu_slope=0.0)
_LEAKY = ActivationFact(1.0, relu_slope=0.2)  # Keras' and TF's default negative slope (alpha)
_SIGMOID = ActivationFact(0.25)  # σ' = σ(1 − σ) <= 1/4

#: Keras' (``keras.activations``, ``keras.ops``) and TensorFlow's (``tf.nn``) activation functions,
#: by identity. tanh, softplus, softsign, ELU (alpha = 1), ReLU6 and log-sigmoid have |f'| <= 1.
ACTIVATIONS: dict = {
    keras.activations.linear: _ONE,
    keras.activations.relu: _RELU,
    keras.ops.relu: _RELU,
    tf.nn.relu: _RELU,
    keras.activations.leaky_relu: _LEAKY,
    keras.ops.leaky_relu: _LEAKY,
    tf.nn.leaky_relu: _LEAKY,
    keras.activations.relu6: _ONE,
    keras.ops.relu6: _ONE,
    tf.nn.relu6: _ONE,
    keras.activations.tanh: _ONE,
    keras.ops.tanh: _ONE,
    tf.nn.tanh: _ONE,
    keras.activations.sigmoid: _SIGMOID,
    keras.ops.sigmoid: _SIGMOID,
    tf.nn.sigmoid: _SIGMOID,
    keras.activations.softplus: _ONE,
    keras.ops.softplus: _ONE,
    tf.nn.softplus: _ONE,
    keras.activations.softsign: _ONE,
    keras.ops.softsign: _ONE,
    tf.nn.softsign: _ONE,
    keras.activations.elu: _ONE,
    keras.ops.elu: _ONE,
    tf.nn.elu: _ONE,
    keras.activations.log_sigmoid: _ONE,
    keras.ops.log_sigmoid: _ONE,
}


def _slope_lipschitz(negative_slope) -> float:
    """A (leaky) ReLU with negative slope α is max(1, |α|)-Lipschitz."""
    return max(1.0, abs(float(negative_slope)))


def activation_fact(fn) -> ActivationFact | None:
    """The fact about activation function ``fn`` (``None``: no activation), or None if unknown.

    A function already pruned by :mod:`lipgan.core.pruned_relu` carries its slope as the attribute
    ``pruned_negative_slope``; it is a (leaky) ReLU but not one to prune again.
    """
    if fn is None:
        return _ONE
    pruned = getattr(fn, "pruned_negative_slope", None)
    if pruned is not None:
        return ActivationFact(_slope_lipschitz(pruned))
    try:
        return ACTIVATIONS.get(fn)
    except TypeError:  # unhashable callable
        return None


def activation_fn_lipschitz(fn) -> float | None:
    """The Lipschitz constant of activation function ``fn`` (a Dense/Conv layer's ``activation``)."""
    fact = activation_fact(fn)
    return None if fact is None else fact.lipschitz


def relu_slope(fn) -> float | None:
    """The negative slope of ``fn`` if it is a Keras/TF (leaky) ReLU the pruning can replace."""
    fact = activation_fact(fn)
    return None if fact is None else fact.relu_slope


def relu_layer_slope(layer) -> float | None:
    """The negative slope if ``layer`` is a plain (leaky) ReLU *layer* the pruning can replace.

    A ``ReLU`` layer with ``max_value`` or ``threshold`` is not plain (its function differs).
    """
    if type(layer) is keras.layers.LeakyReLU:
        return float(layer.negative_slope)
    if type(layer) is keras.layers.ReLU:
        if layer.max_value is None and not layer.threshold:
            return float(layer.negative_slope or 0.0)
        return None
    if type(layer) is keras.layers.Activation:
        return relu_slope(layer.activation)
    return None


def activation_layer_lipschitz(layer) -> float | None:
    """The Lipschitz constant of a parameter-free activation layer, or None if not one we know.

    ``ReLU(threshold=t)`` with t != 0 jumps by t at x = t (from α·0 to t): it is not Lipschitz, so
    None. A ``max_value`` cap keeps ReLU 1-Lipschitz. GroupSort permutes its input on every linear
    piece and is continuous: 1-Lipschitz in ℓ₂ (Anil et al. 2019; MaxMin is group size 2); it
    says so itself (:data:`ACTIVATION_LIPSCHITZ`), so this table needs no import of the models.
    """
    if type(layer) is keras.layers.ReLU:
        if layer.threshold:
            return None
        return _slope_lipschitz(layer.negative_slope)
    if type(layer) is keras.layers.LeakyReLU:
        return _slope_lipschitz(layer.negative_slope)
    if isinstance(layer, keras.layers.Layer) and hasattr(layer, "pruned_negative_slope"):
        return _slope_lipschitz(layer.pruned_negative_slope)  # PrunedLeakyReLU
    declared = vars(type(layer)).get(ACTIVATION_LIPSCHITZ)
    if isinstance(layer, keras.layers.Layer) and declared is not None:
        return float(declared)  # GroupSort (lipgan.models.activations)
    if type(layer) is keras.layers.Activation:
        return activation_fn_lipschitz(layer.activation)
    return None


def own_lipschitz_bound(layer):
    """The layer's own certificate, if it has one: ``layer.lipschitz_bound()``, else NotImplemented.

    The hook for layers whose Lipschitz constant no rule here can derive (residual layers such as
    :class:`lipgan.core.residual_layers.ResidualDense`, orthogonal convolutions): a method
    ``lipschitz_bound(self) -> float | None`` on the layer returns a certified ℓ2 bound of the
    whole layer map, its activation included, or None when it knows none. Both bound walks
    (:func:`lipschitz_upper_bound` and :func:`lipgan.core.reparametrized.chain_lipschitz_bound`) ask
    it first. A model is not asked (its layers are walked instead).
    """
    method = getattr(layer, "lipschitz_bound", None)
    if isinstance(layer, keras.Model) or not isinstance(layer, keras.layers.Layer):
        return NotImplemented
    if not callable(method):
        return NotImplemented
    bound = method()
    return None if bound is None else float(bound)


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


def _kernel(layer) -> np.ndarray:
    return np.asarray(keras.ops.convert_to_numpy(layer.kernel), np.float64)


def spatial_shape(layer, shape) -> tuple | None:
    """The spatial sizes of a batched ``shape`` as ``layer`` reads it (its ``data_format``)."""
    data_format = getattr(layer, "data_format", None) or "channels_last"
    if data_format == "channels_first":
        return tuple(shape[2:])
    if data_format == "channels_last":
        return tuple(shape[1:-1])
    return None


def _conv_bound(layer, in_shape, out_shape) -> float | None:
    cfg = layer.get_config()
    rank = len(layer.kernel.shape) - 2
    dilation = cfg.get("dilation_rate", 1)
    if any(r != 1 for r in np.atleast_1d(dilation)) or cfg.get("groups", 1) != 1:
        return None
    spatial_in, spatial_out = spatial_shape(layer, in_shape), spatial_shape(layer, out_shape)
    if spatial_in is None or spatial_out is None or len(spatial_in) != rank:
        return None
    spatial = []
    for a, b in zip(spatial_in, spatial_out):
        if a is None or b is None:
            return None
        spatial.append(max(int(a), int(b)))
    return conv_operator_norm_bound(_kernel(layer), tuple(spatial), cfg.get("strides", 1))


def _pool_bound(layer) -> float:
    """sqrt(‖A‖₁‖A‖∞) (Schur's test): each input enters ≤ Π⌈p/s⌉ windows."""
    pool = np.atleast_1d(layer.pool_size)
    strides = np.atleast_1d(layer.strides if layer.strides is not None else layer.pool_size)
    overlap = float(np.prod(np.ceil(pool / strides)))
    if isinstance(layer, keras.layers.AveragePooling1D | keras.layers.AveragePooling2D):
        if layer.padding == "valid":
            # rows sum to 1, columns to overlap/|p|
            return math.sqrt(overlap / float(np.prod(pool)))
        return math.sqrt(overlap)  # border windows average fewer points: weights <= 1
    return math.sqrt(overlap)  # max pooling: |max a - max b| <= max |a - b| per window


#: Layers that move or drop coordinates without scaling them (or take a max per channel): 1.
ONE_LIPSCHITZ_LAYERS = (
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

CONVOLUTIONS = (
    keras.layers.Conv1D,
    keras.layers.Conv2D,
    keras.layers.Conv3D,
    keras.layers.Conv1DTranspose,
    keras.layers.Conv2DTranspose,
    keras.layers.Conv3DTranspose,
)

POOLINGS = (
    keras.layers.AveragePooling1D,
    keras.layers.AveragePooling2D,
    keras.layers.MaxPooling1D,
    keras.layers.MaxPooling2D,
)


def layer_lipschitz(layer, in_shape, out_shape) -> float | None:
    """A Lipschitz constant of one single-input layer (ℓ₂ → ℓ₂), or None when none is known."""
    if isinstance(layer, keras.Model):
        return lipschitz_upper_bound(layer)
    own = own_lipschitz_bound(layer)
    if own is not NotImplemented:
        return own
    if isinstance(layer, keras.layers.SpectralNormalization):
        # Inference uses the kernel the last training call wrote (already divided by sigma).
        return layer_lipschitz(layer.layer, in_shape, out_shape)
    if type(layer) in ONE_LIPSCHITZ_LAYERS:
        return 1.0
    if type(layer) is keras.layers.Rescaling:  # x·scale + offset
        return float(np.max(np.abs(np.asarray(layer.scale, dtype=np.float64))))
    if isinstance(layer, keras.layers.Dropout):
        return 1.0 / (1.0 - float(layer.rate))  # training mode rescales the kept units
    if type(layer) in (keras.layers.GlobalAveragePooling1D, keras.layers.GlobalAveragePooling2D):
        positions = spatial_shape(layer, in_shape)
        if positions is None or any(p is None for p in positions):
            return None
        return 1.0 / math.sqrt(math.prod(int(p) for p in positions))  # ‖mean‖ <= ‖x‖/sqrt(n)
    if type(layer) in POOLINGS:
        return _pool_bound(layer)
    if type(layer) is keras.layers.UpSampling2D and layer.interpolation == "nearest":
        return math.sqrt(math.prod(np.atleast_1d(layer.size)))  # each input copied prod(size) times
    own = activation_layer_lipschitz(layer)
    if own is not None:
        return own
    if type(layer) is keras.layers.Dense:
        act = activation_fn_lipschitz(layer.activation)
        return None if act is None else act * float(np.linalg.norm(_kernel(layer), ord=2))
    if type(layer) in CONVOLUTIONS:
        act = activation_fn_lipschitz(layer.activation)
        conv = None if act is None else _conv_bound(layer, in_shape, out_shape)
        return None if conv is None else act * conv
    return None  # unknown layer (BatchNormalization, attention, Lambda, custom...): no bound


def merge_lipschitz(layer, bounds: list[float]) -> float | None:
    """The bound of a merge layer's output, given its inputs' bounds, or None."""
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

    * a single-input layer multiplies L by its own constant (:func:`layer_lipschitz`): a layer
      with a ``lipschitz_bound()`` method by what it returns (:func:`own_lipschitz_bound`); Dense:
      σ_max(W) (exact SVD); Conv and ConvTranspose: :func:`conv_operator_norm_bound` (the norm of
      the convolution *operator* at the layer's input size, not the norm of the reshaped kernel);
      the activation from :data:`ACTIVATIONS` (by identity) or :func:`activation_layer_lipschitz`;
      average/max pooling, global pooling, nearest upsampling, Flatten/Reshape by their exact
      constants, spatial sizes read in the layer's ``data_format``; spectral normalization by its
      inner layer's current (normalized) kernel;
    * Add/Subtract: the sum of the inputs' bounds, so a residual block x + f(x) gets 1 + L_f (not the
      product along a chain, which is no bound); Average: the mean; Concatenate: the root sum of squares.

    Anything else (BatchNormalization, whose training mode couples the batch; LayerNormalization,
    which is not Lipschitz near constant inputs; attention; Lambda and custom layers; activations not
    known by identity; a discontinuous ``ReLU(threshold=...)``; dilated, grouped, depthwise or
    separable convolutions; several inputs) makes the result None: never a number called a bound
    that is not one.
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
                own = layer_lipschitz(layer, tuple(ins[0].shape), tuple(outs[0].shape))
                bound = None if own is None else own * known[0]
            else:
                bound = merge_lipschitz(layer, known)
            if bound is None:
                return None
            bounds[id(outs[0])] = bound
    outputs = getattr(critic, "outputs", None) or []
    if len(outputs) != 1 or id(outputs[0]) not in bounds:
        return None
    return float(bounds[id(outputs[0])])
