"""The WGAN-GP recipe people copy today: the keras-io example, re-implemented faithfully.

Source: https://keras.io/examples/generative/wgan_gp/ (A_K_Nain). A ``keras.Model`` subclass whose
``train_step`` makes ``discriminator_extra_steps`` critic updates on the *same* real batch, each with
three critic calls (fake, real, interpolates; all ``training=True``), a gradient penalty
``mean((‖∇‖ − 1)²)`` without the ε inside the square root, then one generator update; trained with
``fit``. Only two things are generalized: the interpolation ε has one axis per data axis (so the toy
MLP's flat data works), and critics return ``[b, 1]`` as in the example. It is used only by the
benchmark, as the side-by-side reference for lipgan's own step on the same critic, batch and optimizer.

Revision: keras-team/keras-io ``examples/generative/wgan_gp.py``. The revision read for this note,
commit 81aa0edb72a1735c5c577f123bb3a4a475a181c9 (header "Last modified: 2020/05/9", TF2
``tf.keras``), draws the interpolation ε with ``tf.random.normal([batch, 1, 1, 1], 0.0, 1.0)``; later
revisions draw it ``uniform`` in [0, 1) as the WGAN-GP paper (Gulrajani et al. 2017, Alg. 1) does.
This re-implementation uses the **uniform** form (same cost; the numbers it draws do not enter the
benchmark's timing). The commit that switched to uniform was not identified here.
"""

from __future__ import annotations

import keras
import tensorflow as tf


def discriminator_loss(real_img, fake_img):
    real_loss = tf.reduce_mean(real_img)
    fake_loss = tf.reduce_mean(fake_img)
    return fake_loss - real_loss


def generator_loss(fake_img):
    return -tf.reduce_mean(fake_img)


class KerasIOWGAN(keras.Model):
    """``WGAN`` from the keras-io example (names and structure kept)."""

    def __init__(
        self, discriminator, generator, latent_dim, discriminator_extra_steps=3, gp_weight=10.0
    ):
        super().__init__()
        self.discriminator = discriminator
        self.generator = generator
        self.latent_dim = latent_dim
        self.d_steps = discriminator_extra_steps
        self.gp_weight = gp_weight

    def compile(self, d_optimizer, g_optimizer, d_loss_fn, g_loss_fn, **kwargs):
        super().compile(**kwargs)
        self.d_optimizer = d_optimizer
        self.g_optimizer = g_optimizer
        self.d_loss_fn = d_loss_fn
        self.g_loss_fn = g_loss_fn

    def gradient_penalty(self, batch_size, real_images, fake_images):
        alpha_shape = [batch_size] + [1] * (len(real_images.shape) - 1)
        alpha = tf.random.uniform(alpha_shape, 0.0, 1.0)
        diff = fake_images - real_images
        interpolated = real_images + alpha * diff
        with tf.GradientTape() as gp_tape:
            gp_tape.watch(interpolated)
            pred = self.discriminator(interpolated, training=True)
        grads = gp_tape.gradient(pred, [interpolated])[0]
        axes = list(range(1, len(grads.shape)))
        norm = tf.sqrt(tf.reduce_sum(tf.square(grads), axis=axes))
        return tf.reduce_mean((norm - 1.0) ** 2)

    def train_step(self, real_images):
        if isinstance(real_images, tuple):
            real_images = real_images[0]
        batch_size = tf.shape(real_images)[0]
        for _ in range(self.d_steps):
            random_latent_vectors = tf.random.normal(shape=(batch_size, self.latent_dim))
            with tf.GradientTape() as tape:
                fake_images = self.generator(random_latent_vectors, training=True)
                fake_logits = self.discriminator(fake_images, training=True)
                real_logits = self.discriminator(real_images, training=True)
                d_cost = self.d_loss_fn(real_img=real_logits, fake_img=fake_logits)
                gp = self.gradient_penalty(batch_size, real_images, fake_images)
                d_loss = d_cost + gp * self.gp_weight
            d_gradient = tape.gradient(d_loss, self.discriminator.trainable_variables)
            self.d_optimizer.apply_gradients(
                zip(d_gradient, self.discriminator.trainable_variables)
            )
        random_latent_vectors = tf.random.normal(shape=(batch_size, self.latent_dim))
        with tf.GradientTape() as tape:
            generated_images = self.generator(random_latent_vectors, training=True)
            gen_img_logits = self.discriminator(generated_images, training=True)
            g_loss = self.g_loss_fn(gen_img_logits)
        gen_gradient = tape.gradient(g_loss, self.generator.trainable_variables)
        self.g_optimizer.apply_gradients(zip(gen_gradient, self.generator.trainable_variables))
        return {"d_loss": d_loss, "g_loss": g_loss}


def build(critic, generator, *, n_critic, gp_weight, make_optimizer, mode: str) -> KerasIOWGAN:
    """The example's model compiled for ``mode``: eager (run_eagerly), function, or xla.

    ``function`` is the form users run: ``compile`` with Keras' defaults, ``jit_compile="auto"``,
    which Keras resolves to no XLA on CPU-only machines and to XLA where a GPU/TPU is visible
    (keras ``trainers/trainer.py``, ``_resolve_auto_jit_compile``); ``xla`` forces
    ``jit_compile=True``. So on CPU the ``function`` row is plain ``tf.function``.
    """
    latent_dim = int(generator.input_shape[-1])
    model = KerasIOWGAN(
        critic, generator, latent_dim, discriminator_extra_steps=n_critic, gp_weight=gp_weight
    )
    model.compile(
        d_optimizer=make_optimizer(),
        g_optimizer=make_optimizer(),
        d_loss_fn=discriminator_loss,
        g_loss_fn=generator_loss,
        run_eagerly=mode == "eager",
        jit_compile=True if mode == "xla" else "auto",
    )
    return model
