"""The CIFAR-10 ResNet of the official WGAN-GP code (``gan_cifar_resnet.py``), width configurable.

Generator: dense to 4x4x``dim``, three residual blocks that upsample (4 -> 8 -> 16 -> 32), batch
norm, ReLU, 3x3 conv to C channels, tanh. Critic: the "optimized" first block (conv, ReLU, conv,
mean-pool; shortcut mean-pool then 1x1 conv), a down-sampling block, two plain blocks, ReLU,
global average pooling, dense to 1. The official widths are ``dim=128`` for both.

As in the official code, the generator's blocks use batch norm and the critic's none (a gradient
penalty is per example). Upsampling is nearest-neighbour, which is what the official
``UpsampleConv`` (four copies + depth_to_space) computes. Batch norm is ``synchronized`` so that the
statistics are over the global batch whatever the replica count.
"""

from __future__ import annotations

import keras


def _conv(filters: int, kernel: int, name: str):
    return keras.layers.Conv2D(filters, kernel, padding="same", name=name)


def _block(x, filters: int, resample: str | None, normalize: bool, name: str):
    """Pre-activation residual block: [BN] ReLU conv [BN] ReLU conv, plus a (resampled) shortcut."""
    in_filters = x.shape[-1]
    shortcut = x
    if resample == "up":
        shortcut = keras.layers.UpSampling2D(name=f"{name}_short_up")(shortcut)
    if resample is not None or in_filters != filters:
        shortcut = _conv(filters, 1, f"{name}_short_conv")(shortcut)
    if resample == "down":
        shortcut = keras.layers.AveragePooling2D(2, name=f"{name}_short_pool")(shortcut)

    h = x
    if normalize:
        h = keras.layers.BatchNormalization(synchronized=True, name=f"{name}_bn_1")(h)
    h = keras.layers.ReLU()(h)
    if resample == "up":
        h = keras.layers.UpSampling2D(name=f"{name}_up")(h)
    h = _conv(in_filters if resample == "down" else filters, 3, f"{name}_conv_1")(h)
    if normalize:
        h = keras.layers.BatchNormalization(synchronized=True, name=f"{name}_bn_2")(h)
    h = keras.layers.ReLU()(h)
    h = _conv(filters, 3, f"{name}_conv_2")(h)
    if resample == "down":
        h = keras.layers.AveragePooling2D(2, name=f"{name}_pool")(h)
    return keras.layers.Add(name=f"{name}_add")([shortcut, h])


def _check(data_shape, who: str):
    if tuple(int(d) for d in data_shape[:2]) != (32, 32) or len(data_shape) != 3:
        raise ValueError(
            f"{who} expects 32x32 images [32, 32, c], got shape {tuple(data_shape)}; "
            "set dataset.image_size=32"
        )
    return int(data_shape[-1])


def resnet_critic(data_shape, dim: int = 128) -> keras.Model:
    """Residual critic for 32x32xC images (no normalization), one score per example.

    Args:
        data_shape: ``(32, 32, channels)``.
        dim: channels of every residual block.

    Returns:
        A ``keras.Model`` mapping ``[b, 32, 32, channels]`` to ``[b, 1]``.

    Raises:
        ValueError: the images are not 32x32.
    """
    c = _check(data_shape, "resnet_critic")
    inputs = keras.Input(shape=(32, 32, c))
    # The "optimized" first block: no activation before the first conv.
    h = _conv(dim, 3, "block_0_conv_1")(inputs)
    h = keras.layers.ReLU()(h)
    h = _conv(dim, 3, "block_0_conv_2")(h)
    h = keras.layers.AveragePooling2D(2, name="block_0_pool")(h)
    shortcut = keras.layers.AveragePooling2D(2, name="block_0_short_pool")(inputs)
    shortcut = _conv(dim, 1, "block_0_short_conv")(shortcut)
    h = keras.layers.Add(name="block_0_add")([shortcut, h])
    h = _block(h, dim, "down", normalize=False, name="block_1")
    h = _block(h, dim, None, normalize=False, name="block_2")
    h = _block(h, dim, None, normalize=False, name="block_3")
    h = keras.layers.ReLU()(h)
    h = keras.layers.GlobalAveragePooling2D()(h)
    out = keras.layers.Dense(1, name="out", dtype="float32")(h)
    return keras.Model(inputs, out, name="critic")


def resnet_generator(data_shape, latent_dim: int = 128, dim: int = 128) -> keras.Model:
    """Residual generator ``latent_dim -> 32x32xC`` in [-1, 1].

    Args:
        data_shape: ``(32, 32, channels)``.
        latent_dim: the size of the noise it maps.
        dim: channels of every residual block.

    Returns:
        A ``keras.Model`` mapping ``[b, latent_dim]`` to ``[b, 32, 32, channels]`` (tanh).

    Raises:
        ValueError: the images are not 32x32.
    """
    c = _check(data_shape, "resnet_generator")
    z = keras.Input(shape=(latent_dim,))
    h = keras.layers.Dense(4 * 4 * dim, name="project")(z)
    h = keras.layers.Reshape((4, 4, dim))(h)
    for i in range(3):
        h = _block(h, dim, "up", normalize=True, name=f"block_{i + 1}")
    h = keras.layers.BatchNormalization(synchronized=True, name="out_bn")(h)
    h = keras.layers.ReLU()(h)
    h = _conv(c, 3, "out_conv")(h)
    out = keras.layers.Activation("tanh", dtype="float32")(h)
    return keras.Model(z, out, name="generator")
