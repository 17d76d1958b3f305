"""Spectral norm under MirroredStrategy: do the replicas' copies of u and the kernels re-sync?

    python tests/sn_sync_probe.py keras|lipgan

Builds a spectral-norm WGAN on 2 logical CPUs, knocks replica 1's copy of every ``u`` off (as a
non-deterministic kernel or a restore on one device could), runs 2 iterations and prints, as JSON,
the largest difference between the replicas' copies of u and of the kernels. ``keras`` wraps with
Keras' own SpectralNormalization (copies drift apart for good), ``lipgan`` with lipgan's.
"""

import json
import sys

from lipgan_plugins.mirrored import Mirrored

STRATEGY = Mirrored(logical_cpus=2).create()  # before any other TF work

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from lipgan.core.engine import WGAN  # noqa: E402
from lipgan.core.step_config import StepConfig  # noqa: E402
from lipgan.models import mlp_critic, mlp_generator  # noqa: E402
from lipgan_plugins import spectral_norm  # noqa: E402


def local_copies(variable):
    """The per-replica copies of a Keras variable (its tf.Variable is a MirroredVariable)."""
    copies = STRATEGY.experimental_local_results(variable.value)
    assert len(copies) == 2, copies
    return copies


def main(variant):
    if variant == "keras":  # Keras' own wrapper, which lipgan used before
        spectral_norm.ReplicaSyncedSpectralNormalization = keras.layers.SpectralNormalization
    keras.utils.set_random_seed(0)
    wgan = WGAN(
        STRATEGY,
        critic=lambda s: mlp_critic(s, width=16, depth=2),
        generator=lambda s: mlp_generator(s, latent_dim=2, width=16, depth=2),
        critic_optimizer=lambda: keras.optimizers.SGD(0.05),
        generator_optimizer=lambda: keras.optimizers.SGD(0.05),
        constraint=spectral_norm.SpectralNorm(),
        data_shape=(2,),
        config=StepConfig(global_batch_size=8, n_critic=2, seed=3),
    )
    us = [v for v in wgan.critic.non_trainable_variables if "vector_u" in v.path]
    kernels = [v for v in wgan.critic.trainable_variables if "kernel" in v.path]
    assert us and kernels
    for u in us:
        copy = local_copies(u)[1]
        copy.assign(copy + tf.random.stateless_normal(copy.shape, seed=[1, 2]))
    data = np.random.default_rng(0).normal(size=(64, 2)).astype(np.float32)
    ds = tf.data.Dataset.from_tensor_slices(data).batch(8, drop_remainder=True).repeat()
    wgan.iterate(wgan.distribute(ds), 2)

    def spread(variables):
        return max(
            float(np.max(np.abs(a.numpy() - b.numpy())))
            for a, b in (local_copies(v) for v in variables)
        )

    print("RESULT " + json.dumps({"u": spread(us), "kernel": spread(kernels)}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
