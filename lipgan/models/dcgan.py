"""DCGAN critic and generator as in the official WGAN-GP code, for square power-of-two images.

The depth follows the image size, which reproduces both official models:

* 32x32 (``gan_cifar.py``): generator dense to 4x4x(4·dim), then 5x5 stride-2 transposed convs
  4·dim -> 2·dim -> dim -> C; critic 5x5 stride-2 convs C -> dim -> 2·dim -> 4·dim, then dense to 1.
* 64x64 (``gan_64x64.py`` ``DCGANGenerator``/``DCGANDiscriminator``): the same with one more stage,
  4x4x(8·dim) ... and a critic up to 8·dim channels.
* 16x16 (lipgan_digits on two CPU cores): one stage fewer than 32x32.

Generator stages use batch norm, ReLU and a tanh output. Batch norm is ``synchronized`` so that,
under a distribution strategy, statistics are over the global batch and results do not depend on the
replica count. The critic uses LeakyReLU(0.2) and **no normalization**: a gradient penalty is per
example, and batch statistics would couple the examples (the official WGAN-GP setting).
"""

from __future__ import annotations

import math

import keras

from lipgan.models.activations import activation_layer

_KERNEL = dict(kernel_size=5, strides=2, padding="same")


def _stages(data_shape, who: str) -> tuple[int, int]:
    """Number of stride-2 stages (size = 4·2^n) and the channel count, or a one-line error."""
    if len(data_shape) != 3:
        raise ValueError(f"{who} expects images [h, w, c], got shape {tuple(data_shape)}")
    h, w, c = (int(d) for d in data_shape)
    n = int(round(math.log2(h))) - 2 if h >= 8 else 0
    if h != w or n < 1 or 4 * 2**n != h:
        raise ValueError(
            f"{who} expects square images of size 8, 16, 32, 64, ... got {h}x{w}; "
            "set dataset.image_size (e.g. 32 for CIFAR-10/MNIST, 64 for CelebA)"
        )
    return n, c


def dcgan_critic(
    data_shape, dim: int = 64, activation: str = "leaky_relu", group_size: int = 2
) -> keras.Model:
    """Conv critic: ``n`` stride-2 5x5 convs (dim, 2·dim, ...), LeakyReLU(0.2), no norm, dense to 1.

    ``activation``: ``leaky_relu`` (slope 0.2, the default), ``relu``, ``groupsort`` (over channel
    groups of ``group_size``) or ``maxmin`` (:mod:`lipgan.models.activations`).

    Args:
        data_shape: ``(size, size, channels)`` with size 8, 16, 32, 64, ...
        dim: channels of the first conv; each further stage doubles them.
        activation: ``'leaky_relu'``, ``'relu'``, ``'groupsort'`` or ``'maxmin'``.
        group_size: GroupSort's group size (``activation='groupsort'`` only).

    Returns:
        A ``keras.Sequential`` mapping ``[b, size, size, channels]`` to ``[b, 1]``.

    Raises:
        ValueError: the images are not square with a power-of-two size of at least 8.
    """
    n, c = _stages(data_shape, "dcgan_critic")
    size = 4 * 2**n
    layers = [keras.Input(shape=(size, size, c))]
    for i in range(n):
        if activation == "leaky_relu":  # the default: Keras' own layer, with its default name
            act = keras.layers.LeakyReLU(0.2)
        else:
            act = activation_layer(activation, group_size=group_size, layer_name=f"act_{i}")
        layers += [keras.layers.Conv2D(dim * 2**i, **_KERNEL, name=f"conv_{i}"), act]
    layers += [keras.layers.Flatten(), keras.layers.Dense(1, name="out", dtype="float32")]
    return keras.Sequential(layers, name="critic")


def dcgan_generator(data_shape, latent_dim: int = 128, dim: int = 64) -> keras.Model:
    """Transposed-conv generator ``latent_dim -> 4x4x(dim·2^(n-1)) -> ... -> size x size x C`` in [-1, 1].

    Args:
        data_shape: ``(size, size, channels)`` with size 8, 16, 32, 64, ...
        latent_dim: the size of the noise it maps.
        dim: channels of the last transposed conv before the output; each earlier stage doubles them.

    Returns:
        A ``keras.Sequential`` mapping ``[b, latent_dim]`` to ``[b, size, size, channels]`` (tanh).

    Raises:
        ValueError: the images are not square with a power-of-two size of at least 8.
    """
    n, c = _stages(data_shape, "dcgan_generator")
    top = dim * 2 ** (n - 1)
    layers = [
        keras.Input(shape=(latent_dim,)),
        keras.layers.Dense(4 * 4 * top, name="project"),
        keras.layers.BatchNormalization(synchronized=True),
        keras.layers.ReLU(),
        keras.layers.Reshape((4, 4, top)),
    ]
    for i in range(n - 1):
        channels = dim * 2 ** (n - 2 - i)
        layers += [
            keras.layers.Conv2DTranspose(channels, **_KERNEL, name=f"deconv_{i}"),
            keras.layers.BatchNormalization(synchronized=True),
            keras.layers.ReLU(),
        ]
    layers += [
        keras.layers.Conv2DTranspose(c, **_KERNEL, name=f"deconv_{n - 1}"),
        keras.layers.Activation("tanh", dtype="float32"),
    ]
    return keras.Sequential(layers, name="generator")
