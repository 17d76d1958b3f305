"""(Leaky)ReLU whose second derivative is declared zero, so double backprop skips dead work.

Why: a gradient penalty differentiates ∇ₓD(x) w.r.t. the critic weights. For a piecewise-linear
activation the derivative mask ``1[x>0]`` (or ``α`` below 0) has zero derivative, and TensorFlow's
built-in ``ReluGrad``/``LeakyReluGrad`` gradients do return zeros for it, but as *real tensors*: those
zeros are then back-propagated through every earlier conv/dense layer, costing full FLOPs to add
nothing. Here the mask is computed in the forward pass under ``stop_gradient`` inside a
``tf.custom_gradient``, so the backward-of-backward graph has no path through it at all. First and
second derivatives are mathematically identical to the standard ones (the pruned term is exactly
zero), which ``tests/test_gradient_penalty_speedups.py`` and ``tests/test_fast_relu.py`` check
on the penalty gradients.

:func:`prune_activation_hessians` clones a critic with every ReLU/LeakyReLU (as a layer, or as the
``activation`` of a Dense/Conv layer, in nested models too) replaced by these, and copies the weights
without touching Keras' global RNG (so the same seed gives the same generator with or without
pruning). Activations are recognized by **identity**, never by name, from the one table of
activation facts (:mod:`lipgan.core.lipschitz`, :func:`~lipgan.core.lipschitz.relu_slope`): Keras'
own ``relu`` / ``leaky_relu`` functions (``keras.activations``, ``keras.ops``, ``tf.nn``) and the
``ReLU`` (plain: no ``max_value``, no ``threshold``) / ``LeakyReLU`` layers. A user function that
happens to be called ``relu`` is left alone. Replacing only some activations is still exact: each
replaced one has the same value and first derivative, and its true second derivative is zero; every
other layer keeps its own derivatives. The clone is then checked against the original on a probe batch (scores and input
gradients), so a clone that is not the same function is refused, never silently used.

:func:`maybe_prune` is the ``fast_relu`` option of the gradient penalties: ``'auto'`` (the default)
prunes when that is exact and keeps the critic otherwise, ``True`` insists, ``False`` opts out.
"""

from __future__ import annotations

import warnings

import keras
import numpy as np
import tensorflow as tf

from lipgan.core.errors import ConfigError
from lipgan.core.lipschitz import relu_layer_slope, relu_slope


def pruned_leaky_relu(x: tf.Tensor, negative_slope: float = 0.0) -> tf.Tensor:
    """``leaky_relu(x)`` (``relu`` when ``negative_slope == 0``) with a pruned second derivative."""
    slope = float(negative_slope)

    @tf.custom_gradient
    def forward(x):
        positive = x > 0
        if slope == 0.0:
            y = tf.nn.relu(x)
        else:
            y = tf.where(positive, x, tf.cast(slope, x.dtype) * x)
        mask = tf.stop_gradient(
            tf.where(positive, tf.ones_like(x), tf.fill(tf.shape(x), tf.cast(slope, x.dtype)))
        )

        def grad(dy):
            # Linear in dy with a constant mask: its own gradient w.r.t. x is None (pruned), not 0.
            return dy * mask

        return y, grad

    return forward(x)


def pruned_relu(x: tf.Tensor) -> tf.Tensor:
    return pruned_leaky_relu(x, 0.0)


# How lipgan.core.lipschitz recognizes a pruned activation (a (leaky) ReLU, not one to prune again).
pruned_relu.pruned_negative_slope = 0.0


@keras.saving.register_keras_serializable(package="lipgan")
class PrunedLeakyReLU(keras.layers.Layer):
    """Layer form of :func:`pruned_leaky_relu` (``negative_slope=0`` is ReLU)."""

    def __init__(self, negative_slope: float = 0.0, **kwargs):
        super().__init__(**kwargs)
        self.negative_slope = float(negative_slope)

    @property
    def pruned_negative_slope(self) -> float:
        """Read by :mod:`lipgan.core.lipschitz`: a pruned (leaky) ReLU layer, max(1,
        |slope|)-Lipschitz."""
        return self.negative_slope

    def call(self, x):
        return pruned_leaky_relu(x, self.negative_slope)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "negative_slope": self.negative_slope}


#: The probe batch of the wrap-time check (stateless noise: Keras' global RNG is not touched).
PROBE_BATCH = 8
PROBE_SEED = (0x5EED, 17)

_warned: set[str] = set()


def _pruned_activation(slope: float):
    if slope == 0.0:
        return pruned_relu

    def pruned_leaky(x):
        return pruned_leaky_relu(x, slope)

    pruned_leaky.pruned_negative_slope = slope  # read by lipgan.core.lipschitz
    return pruned_leaky


def _walk(model):
    """Every layer of ``model``, nested models included (not the models themselves)."""
    for layer in getattr(model, "layers", []):
        if isinstance(layer, keras.Model):
            yield from _walk(layer)
        else:
            yield layer


def prunable_activations(critic) -> int:
    """How many (leaky) ReLU activations of ``critic`` (nested models included) can be pruned."""
    count = 0
    for layer in _walk(critic):
        if relu_layer_slope(layer) is not None:
            count += 1
        elif relu_slope(getattr(layer, "activation", None)) is not None:
            count += 1
    return count


def prune_activation_hessians(critic: keras.Model) -> keras.Model:
    """A copy of ``critic`` (same weights) whose ReLU/LeakyReLU activations are the pruned ones.

    Layers that are not plain (leaky) ReLUs are cloned unchanged, so any other activation keeps its
    standard (non-zero) second derivative. The copy is not checked here: see :func:`maybe_prune`.
    """

    def clone(layer):
        if isinstance(layer, keras.Model):
            return layer  # nested models are cloned by clone_model(recursive=True) itself
        slope = relu_layer_slope(layer)
        if slope is not None:
            return PrunedLeakyReLU(slope, name=layer.name, dtype=layer.dtype_policy)
        # Zero initializers: the weights are copied below, and random ones would advance Keras'
        # global RNG, changing every model built after the critic (the generator) for a given seed.
        config = {
            k: ("zeros" if k.endswith("_initializer") else v) for k, v in layer.get_config().items()
        }
        copy = layer.__class__.from_config(config)
        if hasattr(layer, "activation"):
            # get_config serializes a function by its *name*: a user's ``relu`` would come back as
            # Keras' own. Keep the original callable unless it is one we prune.
            slope = relu_slope(layer.activation)
            copy.activation = layer.activation if slope is None else _pruned_activation(slope)
        return copy

    pruned = keras.models.clone_model(critic, clone_function=clone, recursive=True)
    pruned.build(critic.inputs[0].shape if critic.inputs else None)
    pruned.set_weights(critic.get_weights())
    return pruned


def _scores_and_input_gradients(critic, x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        scores = tf.cast(critic(x, training=False), tf.float32)
    return scores.numpy(), tape.gradient(scores, x).numpy()


def same_function(critic, pruned, rtol: float = 1e-4) -> bool:
    """Whether ``pruned`` gives ``critic``'s scores and input gradients on a probe batch."""
    shape = critic.inputs[0].shape[1:] if critic.inputs else None
    if shape is None or any(d is None for d in shape):
        return False
    x = tf.random.stateless_normal([PROBE_BATCH, *shape], seed=PROBE_SEED)
    for a, b in zip(_scores_and_input_gradients(critic, x), _scores_and_input_gradients(pruned, x)):
        scale = max(float(np.abs(a).max()), 1e-6)
        if a.shape != b.shape or not np.allclose(a, b, rtol=rtol, atol=rtol * scale):
            return False
    return True


def maybe_prune(critic, fast_relu, who: str):
    """Apply the ``fast_relu`` option of constraint ``who`` to ``critic``.

    * ``'auto'`` (or None): the pruned clone when the critic has at least one known (leaky) ReLU,
      is a functional/Sequential model with a known input shape, and the clone passes the probe
      check (:func:`same_function`); the critic itself otherwise, silently;
    * ``True``: the pruned clone, or a one-line :class:`ConfigError` when the clone cannot be built
      or is not the same function; a critic with nothing to prune is kept, with a warning (once);
    * ``False``: the critic itself.
    """
    if fast_relu is False:
        return critic
    insist = fast_relu is True
    if prunable_activations(critic) == 0:
        if insist and critic.name not in _warned:
            _warned.add(critic.name)
            warnings.warn(
                f"{who}.fast_relu=True: critic {critic.name!r} has no Keras ReLU/LeakyReLU "
                "activation to prune; it is used unchanged",
                UserWarning,
                stacklevel=3,
            )
        return critic
    refuse = (
        f"{who}.fast_relu=True: the critic with pruned ReLUs is not the same function as "
        f"{critic.name!r} on a probe batch; set {who}.fast_relu=False"
    )
    try:
        pruned = prune_activation_hessians(critic)
    except Exception as error:  # clone_model refuses subclassed models and odd layers
        if insist:
            raise ConfigError(f"{refuse} ({type(error).__name__}: cannot clone it)") from None
        return critic
    if not same_function(critic, pruned):
        if insist:
            raise ConfigError(refuse)
        return critic
    return pruned


def check_fast_relu(value, who: str):
    """``True``, ``False`` or ``'auto'`` (None means ``'auto'``), else a one-line ValueError."""
    if value is None or value == "auto":
        return "auto"
    if isinstance(value, bool):
        return value
    raise ValueError(f"{who}.fast_relu must be True, False or 'auto', got {value!r}")
