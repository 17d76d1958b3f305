"""DCGAN (16/32/64) and CIFAR ResNet models, and the engine's batch-norm warning for critics."""

import warnings

import keras
import numpy as np
import pytest
import tensorflow as tf

from lipgan.core.critic_checks import sublayers, warn_if_batch_norm
from lipgan.models import dcgan_critic, dcgan_generator, resnet_critic, resnet_generator
from lipgan_plugins.spectral_norm import SpectralNorm


def _conv_widths(model, cls):
    return [layer.filters for layer in model.layers if isinstance(layer, cls)]


@pytest.mark.parametrize("size, channels", [(16, 1), (32, 3), (64, 3)])
def test_dcgan_shapes(size, channels):
    critic = dcgan_critic((size, size, channels), dim=8)
    generator = dcgan_generator((size, size, channels), latent_dim=16, dim=8)
    z = np.random.default_rng(0).standard_normal((3, 16)).astype("float32")
    images = generator(z, training=False).numpy()
    assert images.shape == (3, size, size, channels)
    assert np.abs(images).max() <= 1.0
    assert critic(images).shape == (3, 1)


def test_dcgan_32_and_64_match_the_official_architectures():
    # gan_cifar.py: critic dim, 2dim, 4dim; generator 4x4x4dim -> 2dim -> dim -> 3
    assert _conv_widths(dcgan_critic((32, 32, 3), dim=64), keras.layers.Conv2D) == [64, 128, 256]
    g32 = dcgan_generator((32, 32, 3), dim=64)
    assert g32.get_layer("project").units == 4 * 4 * 256
    assert _conv_widths(g32, keras.layers.Conv2DTranspose) == [128, 64, 3]
    # gan_64x64.py DCGAN: critic up to 8dim; generator from 4x4x8dim
    assert _conv_widths(dcgan_critic((64, 64, 3), dim=64), keras.layers.Conv2D) == [
        64,
        128,
        256,
        512,
    ]
    g64 = dcgan_generator((64, 64, 3), dim=64)
    assert g64.get_layer("project").units == 4 * 4 * 512
    assert _conv_widths(g64, keras.layers.Conv2DTranspose) == [256, 128, 64, 3]


def test_critics_have_no_normalization_generators_do():
    for critic in (dcgan_critic((64, 64, 3), dim=4), resnet_critic((32, 32, 3), dim=4)):
        assert not any(isinstance(x, keras.layers.BatchNormalization) for x in sublayers(critic))
    for generator in (dcgan_generator((32, 32, 3), dim=4), resnet_generator((32, 32, 3), dim=4)):
        assert any(isinstance(x, keras.layers.BatchNormalization) for x in sublayers(generator))


@pytest.mark.parametrize("shape", [(28, 28, 1), (32, 16, 3), (48, 48, 3), (32, 32)])
def test_dcgan_rejects_unsupported_shapes(shape):
    with pytest.raises(ValueError, match="dataset.image_size|images"):
        dcgan_critic(shape)


def test_resnet_shapes_and_width():
    critic = resnet_critic((32, 32, 3), dim=8)
    generator = resnet_generator((32, 32, 3), latent_dim=16, dim=8)
    z = np.random.default_rng(0).standard_normal((2, 16)).astype("float32")
    images = generator(z, training=False).numpy()
    assert images.shape == (2, 32, 32, 3) and np.abs(images).max() <= 1.0
    assert critic(images).shape == (2, 1)
    assert generator.get_layer("project").units == 4 * 4 * 8
    assert critic.get_layer("block_3_conv_2").filters == 8
    # the official critic: 4 blocks (1 optimized, 1 down, 2 plain) x 2 convs + 2 shortcut convs
    assert len(_conv_widths(critic, keras.layers.Conv2D)) == 10
    with pytest.raises(ValueError, match="32x32"):
        resnet_critic((64, 64, 3))


def test_resnet_critic_downsamples_twice():
    critic = resnet_critic((32, 32, 1), dim=4)
    pooled = critic.get_layer("block_1_pool").output
    assert tuple(pooled.shape[1:3]) == (8, 8)


def _bn_critic():
    return keras.Sequential(
        [
            keras.Input((8, 8, 1)),
            keras.layers.Conv2D(4, 3),
            keras.layers.BatchNormalization(name="bn"),
            keras.layers.Flatten(),
            keras.layers.Dense(1),
        ]
    )


@pytest.mark.parametrize("constraint", ["none", "weight_clip", "spectral_norm", "gradient_penalty"])
def test_engine_warns_about_batch_norm_in_the_critic_for_every_constraint(constraint):
    """The batch-norm warning comes from the engine, once, whatever the constraint."""
    from lipgan.core.engine import WGAN
    from lipgan.core.plugins import load_registry
    from lipgan.core.step_config import StepConfig
    from lipgan.testing import small_generator

    cls = load_registry().registry.get("constraint", constraint)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        WGAN(
            tf.distribute.get_strategy(),
            critic=lambda shape: _bn_critic(),
            generator=small_generator,
            critic_optimizer=lambda: keras.optimizers.SGD(0.1),
            generator_optimizer=lambda: keras.optimizers.SGD(0.1),
            constraint=cls(),
            data_shape=(8, 8, 1),
            config=StepConfig(global_batch_size=4, n_critic=1),
        )
    messages = [str(w.message) for w in caught if "BatchNormalization" in str(w.message)]
    assert len(messages) == 1, messages
    assert messages[0].startswith(f"{constraint}: the critic contains BatchNormalization (bn")
    assert "LayerNormalization" in messages[0]


def test_no_warning_for_the_shipped_critics():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not warn_if_batch_norm(dcgan_critic((32, 32, 3), dim=4), "gradient_penalty")
        assert not warn_if_batch_norm(resnet_critic((32, 32, 3), dim=4), "gradient_penalty")


def test_batch_norm_found_inside_nested_models_and_wrappers():
    outer = keras.Sequential([keras.Input((8, 8, 1)), _bn_critic()])
    with pytest.warns(UserWarning):
        assert warn_if_batch_norm(outer, "gradient_penalty")
    wrapped = SpectralNorm().wrap_critic(_bn_critic())  # the engine warns, not wrap_critic
    found = sublayers(wrapped)
    assert any(isinstance(x, keras.layers.BatchNormalization) for x in found)
    assert any(isinstance(x, keras.layers.Conv2D) for x in found)  # inside SpectralNormalization
