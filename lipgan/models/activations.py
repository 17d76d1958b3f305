"""Gradient-norm-preserving activations for certified 1-Lipschitz critics.

ReLU is 1-Lipschitz but loses gradient norm wherever a unit is off, so a network of orthonormal
layers and ReLUs is 1-Lipschitz yet cannot keep ‖∇D‖ = 1: it cannot express the optimal WGAN critic
(Anil, Lucas & Grosse, "Sorting out Lipschitz function approximation", ICML 2019, Sec. 3). GroupSort
splits the features into groups of ``group_size`` and sorts each group. On every linear piece it is
a permutation of its input, so its Jacobian is a permutation matrix: 1-Lipschitz and norm
preserving. ``group_size=2`` is MaxMin; ``group_size`` equal to the width is FullSort.
(deel-lip's ``GroupSort``/``GroupSort2`` are the Keras 2 form.)
"""

from __future__ import annotations

import keras
from keras import ops

from lipgan.core.errors import ConfigError

#: Names accepted by the shipped critics' ``activation`` parameter.
ACTIVATIONS = ("relu", "leaky_relu", "groupsort", "maxmin")


def _swap_pairs(x):
    """``x`` with channels 2k and 2k + 1 exchanged (the last axis has an even length)."""
    shape = ops.shape(x)
    pairs = ops.reshape(x, (*shape[:-1], x.shape[-1] // 2, 2))
    return ops.reshape(ops.flip(pairs, axis=-1), shape)


def max_min(x):
    """GroupSort with groups of 2 (MaxMin): channels (2k, 2k + 1) become (min, max) of the pair.

    Each output is *selected* from ``x`` or its pair-swapped copy, so the values are exactly the
    min and max and the Jacobian is a permutation (the identity on a pair at a tie). Full-width
    passes only: strided slices of the pairs with ``minimum``/``maximum`` and a stack give the same
    values but are much slower forward and backward, most of it in the strided slices' gradients.
    """
    swapped = _swap_pairs(x)
    odd = ops.convert_to_tensor([False, True] * (x.shape[-1] // 2))
    keep = ops.where(odd, x >= swapped, x <= swapped)  # already (min, max) where kept
    return ops.where(keep, x, swapped)


@keras.saving.register_keras_serializable(package="lipgan")
class GroupSort(keras.layers.Layer):
    """Sort the last (channel) axis within consecutive groups of ``group_size`` (ascending)."""

    #: A permutation on every linear piece: 1-Lipschitz in ℓ₂ (read by
    #: :func:`lipgan.core.lipschitz.activation_layer_lipschitz`, not inherited).
    activation_lipschitz = 1.0

    def __init__(self, group_size: int = 2, **kwargs):
        super().__init__(**kwargs)
        if int(group_size) < 1:
            raise ConfigError(f"groupsort group_size must be >= 1, got {group_size}")
        self.group_size = int(group_size)

    def build(self, input_shape):
        channels = input_shape[-1]
        if channels is None or channels % self.group_size:
            raise ConfigError(
                f"groupsort needs a channel count divisible by group_size={self.group_size}, "
                f"got {channels}: change the width or the group size"
            )

    def call(self, inputs):
        if self.group_size == 1:
            return inputs
        if self.group_size == 2:
            return max_min(inputs)
        shape = ops.shape(inputs)
        channels = inputs.shape[-1]
        grouped = ops.reshape(inputs, (*shape[:-1], channels // self.group_size, self.group_size))
        return ops.reshape(ops.sort(grouped, axis=-1), shape)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "group_size": self.group_size}


def activation_layer(
    name: str, *, group_size: int = 2, negative_slope: float = 0.2, layer_name: str | None = None
) -> keras.layers.Layer:
    """The layer a critic puts after each hidden linear layer for ``activation=name``."""
    if name == "relu":
        return keras.layers.ReLU(name=layer_name)
    if name == "leaky_relu":
        return keras.layers.LeakyReLU(negative_slope, name=layer_name)
    if name == "groupsort":
        return GroupSort(group_size, name=layer_name)
    if name == "maxmin":
        return GroupSort(2, name=layer_name)
    raise ConfigError(f"unknown critic activation {name!r}: use one of {', '.join(ACTIVATIONS)}")
