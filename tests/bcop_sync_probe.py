"""Björck's orthogonal convolutions under MirroredStrategy: do the replicas' copies re-sync?

    python tests/bcop_sync_probe.py

As ``tests/bjorck_sync_probe.py`` for the DCGAN critic (16x16x1, dim 4, MaxMin): builds a
``bjorck`` WGAN on 2 logical CPUs, knocks replica 1's copy of every BCOP matrix off, runs 2
iterations and prints, as JSON, the largest difference between the replicas' copies before and
after. Gradients are all-reduced, so without the projection's sync the difference would stay.
"""

import json

from lipgan_plugins.mirrored import Mirrored

STRATEGY = Mirrored(logical_cpus=2).create()  # before any other TF work

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from lipgan.engine import WGAN, StepConfig  # noqa: E402
from lipgan.models import dcgan_critic, dcgan_generator  # noqa: E402
from lipgan_plugins.bjorck import Bjorck  # noqa: E402

SHAPE = (16, 16, 1)


def main():
    keras.utils.set_random_seed(0)
    wgan = WGAN(
        STRATEGY,
        critic=lambda s: dcgan_critic(s, dim=4, activation="maxmin"),
        generator=lambda s: dcgan_generator(s, latent_dim=8, dim=4),
        critic_optimizer=lambda: keras.optimizers.Adam(1e-3),
        generator_optimizer=lambda: keras.optimizers.Adam(1e-3),
        constraint=Bjorck(),
        data_shape=SHAPE,
        config=StepConfig(global_batch_size=8, n_critic=2, seed=3),
    )
    matrices = [
        v for v in wgan.critic.trainable_variables if "ortho" in v.path or "projector" in v.path
    ]
    assert len(matrices) == 2 * 5  # two stride-2 5x5 convs: H and 4 projectors each

    def spread():
        out = 0.0
        for v in matrices:
            a, b = STRATEGY.experimental_local_results(v.value)
            out = max(out, float(np.max(np.abs(a.numpy() - b.numpy()))))
        return out

    for v in matrices:
        copy = STRATEGY.experimental_local_results(v.value)[1]
        copy.assign(copy + 0.01 * tf.random.stateless_normal(copy.shape, seed=[1, 2]))
    knocked = spread()
    data = np.random.default_rng(0).uniform(-1, 1, size=(64, *SHAPE)).astype(np.float32)
    ds = tf.data.Dataset.from_tensor_slices(data).batch(8, drop_remainder=True).repeat()
    wgan.run(wgan.distribute(ds), 2)
    print("RESULT " + json.dumps({"knocked": knocked, "after": spread()}), flush=True)


if __name__ == "__main__":
    main()
