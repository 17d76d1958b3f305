"""ReLU MLPs, as in the toy experiments of the WGAN-GP paper (width 512, 3 hidden layers)."""

from __future__ import annotations

import math

import keras

from lipgan.models.activations import activation_layer


def _mlp(
    input_dim: int,
    output_dim: int,
    width: int,
    depth: int,
    name: str,
    kernel_initializer: str = "glorot_uniform",
    activation: str = "relu",
    group_size: int = 2,
) -> keras.Model:
    layers = [keras.Input(shape=(input_dim,))]
    for i in range(depth):
        if activation == "relu":  # the paper's layout (the ReLU inside Dense), kept as it was
            layers.append(
                keras.layers.Dense(
                    width,
                    activation="relu",
                    kernel_initializer=kernel_initializer,
                    name=f"hidden_{i}",
                )
            )
        else:
            layers += [
                keras.layers.Dense(
                    width, kernel_initializer=kernel_initializer, name=f"hidden_{i}"
                ),
                activation_layer(activation, group_size=group_size, layer_name=f"act_{i}"),
            ]
    layers.append(
        keras.layers.Dense(
            output_dim, kernel_initializer=kernel_initializer, name="out", dtype="float32"
        )
    )
    return keras.Sequential(layers, name=name)


def mlp_critic(
    data_shape,
    width: int = 512,
    depth: int = 3,
    kernel_initializer: str = "glorot_uniform",
    activation: str = "relu",
    group_size: int = 2,
) -> keras.Model:
    """ReLU MLP critic ``prod(data_shape) -> width x depth -> 1`` (inputs flattened).

    ``kernel_initializer='he_uniform'`` is the paper's ('he' in the official tflib code); it keeps
    activation and gradient scales constant through deep ReLU stacks (Fig. 1b's 12 layers).
    ``activation``: ``relu`` (default), ``leaky_relu``, ``groupsort`` (groups of ``group_size``) or
    ``maxmin`` (GroupSort with groups of 2), the norm-preserving choice for orthonormal critics
    (:mod:`lipgan.models.activations`).

    Args:
        data_shape: the shape of one example, ``(d,)``.
        width: units per hidden layer.
        depth: hidden layers.
        kernel_initializer: a Keras initializer name for every Dense kernel.
        activation: ``'relu'``, ``'leaky_relu'``, ``'groupsort'`` or ``'maxmin'``.
        group_size: GroupSort's group size (``activation='groupsort'`` only).

    Returns:
        A ``keras.Sequential`` mapping ``[b, d]`` to one score per example, ``[b, 1]``.

    Raises:
        ValueError: ``data_shape`` is not flat.
    """
    if len(data_shape) != 1:
        raise ValueError(f"mlp_critic expects flat data, got shape {tuple(data_shape)}")
    return _mlp(
        data_shape[0], 1, width, depth, "critic", kernel_initializer, activation, group_size
    )


def mlp_generator(
    data_shape,
    latent_dim: int = 2,
    width: int = 512,
    depth: int = 3,
    kernel_initializer: str = "glorot_uniform",
) -> keras.Model:
    """ReLU MLP generator ``latent_dim -> width x depth -> prod(data_shape)``.

    Args:
        data_shape: the shape of one example to generate.
        latent_dim: the size of the noise it maps.
        width: units per hidden layer.
        depth: hidden layers.
        kernel_initializer: a Keras initializer name for every Dense kernel.

    Returns:
        A ``keras.Sequential`` mapping ``[b, latent_dim]`` noise to ``[b, prod(data_shape)]``
        (linear output).
    """
    return _mlp(latent_dim, math.prod(data_shape), width, depth, "generator", kernel_initializer)
