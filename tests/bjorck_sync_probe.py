"""Björck's projection under MirroredStrategy: do the replicas' copies of the kernels re-sync?

    python tests/bjorck_sync_probe.py

Builds a ``bjorck`` WGAN (projection after every critic update) on 2 logical CPUs, knocks replica
1's copy of every Dense kernel off (as a non-deterministic kernel or a restore on one device
could), runs 2 iterations and prints, as JSON, the largest difference between the replicas' copies
of the kernels before and after. Gradients are all-reduced, so without the projection's sync the
difference would stay for good.
"""

import json

from lipgan_plugins.mirrored import Mirrored

STRATEGY = Mirrored(logical_cpus=2).create()  # before any other TF work

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from lipgan.engine import WGAN, StepConfig  # noqa: E402
from lipgan.models import mlp_critic, mlp_generator  # noqa: E402
from lipgan_plugins.bjorck import Bjorck  # noqa: E402


def main():
    keras.utils.set_random_seed(0)
    wgan = WGAN(
        STRATEGY,
        critic=lambda s: mlp_critic(s, width=16, depth=2, activation="maxmin"),
        generator=lambda s: mlp_generator(s, latent_dim=2, width=16, depth=2),
        critic_optimizer=lambda: keras.optimizers.Adam(1e-3),
        generator_optimizer=lambda: keras.optimizers.Adam(1e-3),
        constraint=Bjorck(),
        data_shape=(2,),
        config=StepConfig(global_batch_size=8, n_critic=2, seed=3),
    )
    kernels = [v for v in wgan.critic.trainable_variables if "kernel" in v.path]
    assert kernels

    def spread():
        out = 0.0
        for v in kernels:
            a, b = STRATEGY.experimental_local_results(v.value)
            out = max(out, float(np.max(np.abs(a.numpy() - b.numpy()))))
        return out

    for v in kernels:
        copy = STRATEGY.experimental_local_results(v.value)[1]
        copy.assign(copy + 0.01 * tf.random.stateless_normal(copy.shape, seed=[1, 2]))
    knocked = spread()
    data = np.random.default_rng(0).normal(size=(64, 2)).astype(np.float32)
    ds = tf.data.Dataset.from_tensor_slices(data).batch(8, drop_remainder=True).repeat()
    wgan.run(wgan.distribute(ds), 2)
    print("RESULT " + json.dumps({"knocked": knocked, "after": spread()}), flush=True)


if __name__ == "__main__":
    main()
