"""Where an AOL conv critic starts: Glorot conv kernels (before issue 26) vs delta-orthogonal (now).

The digits critic (``wgangp_digits.gin``'s ``dcgan_critic``: 16x16x1, dim 32, MaxMin) under
``aol`` is trained alone, real digits against fixed uniform-noise images in [−1, 1] (batch
64 + 64, Adam(3e-4, 0.5, 0.9) as in the config); after k critic updates it prints mean ‖∇D‖ at
512 interpolates / the critic gap on 512 held-out pairs. The table in docs/plugins.md ("Where
training starts") was made with this script.

    python docs/aol_start.py [--seeds 2] [--updates 0,10,25,50,100,250,500]
"""

import argparse
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from lipgan.core.penalties import per_example_gradient_norm  # noqa: E402
from lipgan.core.reparametrized import fresh_copy  # noqa: E402
from lipgan.data.digits import digit_images  # noqa: E402
from lipgan.models.dcgan import dcgan_critic  # noqa: E402
from lipgan_plugins.aol import AOL, AOLRescaled  # noqa: E402


class GlorotAOL(AOL):
    """AOL before issue 26's change: Conv2D kernels keep the critic's (Glorot) initializer."""

    def wrap_layer(self, layer):
        if isinstance(layer, keras.layers.Conv2D):
            return AOLRescaled(fresh_copy(layer), name=f"aol_{layer.name}")
        return super().wrap_layer(layer)


def curve(constraint, images, seed, updates, batch=64, lr=3e-4):
    rng = np.random.default_rng(100 + seed)
    real = images[rng.choice(len(images), 512)]
    fake = rng.uniform(-1, 1, real.shape).astype(np.float32)
    eps = rng.uniform(size=(512, 1, 1, 1)).astype(np.float32)
    between = tf.constant(real + eps * (fake - real))
    keras.utils.set_random_seed(seed)
    critic = constraint.wrap_critic(dcgan_critic(images.shape[1:], dim=32, activation="maxmin"))
    opt = keras.optimizers.Adam(lr, beta_1=0.5, beta_2=0.9)
    opt.build(critic.trainable_variables)
    train_rng = np.random.default_rng(seed)

    @tf.function
    def step(real, fake):
        with tf.GradientTape() as tape:
            d = critic(tf.concat([real, fake], 0), training=True)
            loss = tf.reduce_mean(d[batch:]) - tf.reduce_mean(d[:batch])
        grads = tape.gradient(loss, critic.trainable_variables)
        opt.apply_gradients(zip(grads, critic.trainable_variables))

    row, done = [], 0
    for target in updates:
        while done < target:
            x = images[train_rng.choice(len(images), batch)]
            step(x, train_rng.uniform(-1, 1, x.shape).astype(np.float32))
            done += 1
        gap = float(tf.reduce_mean(critic(real)) - tf.reduce_mean(critic(fake)))
        norm = float(tf.reduce_mean(per_example_gradient_norm(critic, between)))
        row.append(f"{norm:.2f} / {gap:.2f}")
    return row


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--seeds", type=int, default=2)
    p.add_argument("--updates", default="0,10,25,50,100,250,500")
    args = p.parse_args()
    updates = [int(u) for u in args.updates.split(",")]
    images = digit_images(16)[0].astype(np.float32) / 127.5 - 1.0
    print("| start | seed | " + " | ".join(map(str, updates)) + " |")
    for seed in range(args.seeds):
        for name, constraint in (("Glorot convs", GlorotAOL()), ("delta-orthogonal", AOL())):
            print(
                f"| {name} | {seed} | "
                + " | ".join(curve(constraint, images, seed, updates))
                + " |"
            )


if __name__ == "__main__":
    main()
