"""DCGAN 32x32 critic and generator as in the official WGAN-GP ``gan_cifar.py``.

Generator: dense to 4x4x(4·dim), synchronized batch norm, ReLU, three stride-2 5x5 transposed convs,
tanh. Critic: three stride-2 5x5 convs with LeakyReLU(0.2) and no normalization, then dense to 1.
Batch norm in the generator is ``synchronized`` so that, under a distribution strategy, statistics are
over the global batch and results do not depend on the replica count.
"""

from __future__ import annotations

import keras


def dcgan_critic(data_shape, dim: int = 64) -> keras.Model:
    """Conv critic for 32x32xC images; no batch norm (a GP critic must be per-example)."""
    h, w, c = data_shape
    if (h, w) != (32, 32):
        raise ValueError(f"dcgan_critic expects 32x32 images, got {h}x{w}; set dataset.image_size=32")
    conv = dict(kernel_size=5, strides=2, padding="same")
    return keras.Sequential(
        [
            keras.Input(shape=(h, w, c)),
            keras.layers.Conv2D(dim, **conv, name="conv_0"),
            keras.layers.LeakyReLU(0.2),
            keras.layers.Conv2D(2 * dim, **conv, name="conv_1"),
            keras.layers.LeakyReLU(0.2),
            keras.layers.Conv2D(4 * dim, **conv, name="conv_2"),
            keras.layers.LeakyReLU(0.2),
            keras.layers.Flatten(),
            keras.layers.Dense(1, name="out", dtype="float32"),
        ],
        name="critic",
    )


def dcgan_generator(data_shape, latent_dim: int = 128, dim: int = 64) -> keras.Model:
    """Transposed-conv generator ``latent_dim -> 32x32xC`` in [-1, 1]."""
    h, w, c = data_shape
    if (h, w) != (32, 32):
        raise ValueError(f"dcgan_generator expects 32x32 images, got {h}x{w}; set dataset.image_size=32")
    deconv = dict(kernel_size=5, strides=2, padding="same")
    return keras.Sequential(
        [
            keras.Input(shape=(latent_dim,)),
            keras.layers.Dense(4 * 4 * 4 * dim, name="project"),
            keras.layers.BatchNormalization(synchronized=True),
            keras.layers.ReLU(),
            keras.layers.Reshape((4, 4, 4 * dim)),
            keras.layers.Conv2DTranspose(2 * dim, **deconv, name="deconv_0"),
            keras.layers.BatchNormalization(synchronized=True),
            keras.layers.ReLU(),
            keras.layers.Conv2DTranspose(dim, **deconv, name="deconv_1"),
            keras.layers.BatchNormalization(synchronized=True),
            keras.layers.ReLU(),
            keras.layers.Conv2DTranspose(c, **deconv, name="deconv_2"),
            keras.layers.Activation("tanh", dtype="float32"),
        ],
        name="generator",
    )
