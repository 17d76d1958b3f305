"""(Leaky)ReLU whose second derivative is declared zero, so double backprop skips dead work.

Why: a gradient penalty differentiates ∇ₓD(x) w.r.t. the critic weights. For a piecewise-linear
activation the derivative mask ``1[x>0]`` (or ``α`` below 0) has zero derivative, and TensorFlow's
built-in ``ReluGrad``/``LeakyReluGrad`` gradients do return zeros for it, but as *real tensors*: those
zeros are then back-propagated through every earlier conv/dense layer, costing full FLOPs to add
nothing. Here the mask is computed in the forward pass under ``stop_gradient`` inside a
``tf.custom_gradient``, so the backward-of-backward graph has no path through it at all. First and
second derivatives are mathematically identical to the standard ones (the pruned term is exactly
zero), which ``tests/test_pruned_relu.py`` checks on the penalty gradients.

:func:`prune_activation_hessians` clones a critic with every ReLU/LeakyReLU (as a layer, or as the
``activation`` of a Dense/Conv layer) replaced by these, and copies the weights without touching
Keras' global RNG (so the same seed gives the same generator with or without pruning).
"""

from __future__ import annotations

import keras
import tensorflow as tf


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


@keras.saving.register_keras_serializable(package="lipgan")
class PrunedLeakyReLU(keras.layers.Layer):
    """Layer form of :func:`pruned_leaky_relu` (``negative_slope=0`` is ReLU)."""

    def __init__(self, negative_slope: float = 0.0, **kwargs):
        super().__init__(**kwargs)
        self.negative_slope = float(negative_slope)

    def call(self, x):
        return pruned_leaky_relu(x, self.negative_slope)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "negative_slope": self.negative_slope}


def _plain_relu_slope(layer) -> float | None:
    """The negative slope if ``layer`` is a plain (leaky) ReLU layer we can replace exactly, else None."""
    if isinstance(layer, keras.layers.LeakyReLU):
        return float(layer.negative_slope)
    if isinstance(layer, keras.layers.ReLU):
        cfg = layer.get_config()
        if cfg.get("max_value") is None and not cfg.get("threshold"):
            return float(cfg.get("negative_slope") or 0.0)
        return None
    if isinstance(layer, keras.layers.Activation) and _is_relu(layer.activation):
        return 0.0
    return None


def _is_relu(fn) -> bool:
    return fn is keras.activations.relu or getattr(fn, "__name__", "") == "relu"


def prune_activation_hessians(critic: keras.Model) -> keras.Model:
    """A copy of ``critic`` (same weights) whose ReLU/LeakyReLU activations are the pruned ones.

    Layers that are not plain (leaky) ReLUs are cloned unchanged, so any other activation keeps its
    standard (non-zero) second derivative.
    """

    def clone(layer):
        slope = _plain_relu_slope(layer)
        if slope is not None:
            return PrunedLeakyReLU(slope, name=layer.name)
        # Zero initializers: the weights are copied below, and random ones would advance Keras'
        # global RNG, changing every model built after the critic (the generator) for a given seed.
        config = {
            k: ("zeros" if k.endswith("_initializer") else v) for k, v in layer.get_config().items()
        }
        copy = layer.__class__.from_config(config)
        if _is_relu(getattr(layer, "activation", None)):
            copy.activation = pruned_relu
        return copy

    pruned = keras.models.clone_model(critic, clone_function=clone)
    pruned.build(critic.inputs[0].shape if critic.inputs else None)
    pruned.set_weights(critic.get_weights())
    return pruned
