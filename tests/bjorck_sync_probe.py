"""Björck's projection under MirroredStrategy: do the replicas' copies re-sync?

    python tests/bjorck_sync_probe.py dense|conv

Builds a ``bjorck`` WGAN (projection after every critic update) on 2 logical CPUs, knocks replica
1's copy of every projected matrix off (as a non-deterministic kernel or a restore on one device
could), runs 2 iterations and prints, as JSON, the largest difference between the replicas' copies
before and after. Gradients are all-reduced, so without the projection's sync the difference
would stay for good. ``dense``: a MaxMin MLP critic, its Dense kernels; ``conv``: the DCGAN critic
(16x16x1, dim 4, MaxMin), its orthogonal convolutions' BCOP matrices.
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
from lipgan.models import dcgan_critic, dcgan_generator, mlp_critic, mlp_generator  # noqa: E402
from lipgan_plugins.bjorck import Bjorck  # noqa: E402


def dense():
    """The MaxMin MLP critic; its projected matrices are the Dense kernels."""
    rng = np.random.default_rng(0)
    return dict(
        critic=lambda s: mlp_critic(s, width=16, depth=2, activation="maxmin"),
        generator=lambda s: mlp_generator(s, latent_dim=2, width=16, depth=2),
        shape=(2,),
        data=rng.normal(size=(64, 2)),
        projected=lambda v: "kernel" in v.path,
        count=None,  # every Dense kernel, however many
    )


def conv():
    """The DCGAN critic; its projected matrices are the BCOP convolutions' (H, projectors)."""
    rng = np.random.default_rng(0)
    return dict(
        critic=lambda s: dcgan_critic(s, dim=4, activation="maxmin"),
        generator=lambda s: dcgan_generator(s, latent_dim=8, dim=4),
        shape=(16, 16, 1),
        data=rng.uniform(-1, 1, size=(64, 16, 16, 1)),
        projected=lambda v: "ortho" in v.path or "projector" in v.path,
        count=2 * 5,  # two stride-2 5x5 convs: H and 4 projectors each
    )


CONSTRUCTIONS = {"dense": dense, "conv": conv}


def main(construction):
    spec = CONSTRUCTIONS[construction]()
    keras.utils.set_random_seed(0)
    wgan = WGAN(
        STRATEGY,
        critic=spec["critic"],
        generator=spec["generator"],
        critic_optimizer=lambda: keras.optimizers.Adam(1e-3),
        generator_optimizer=lambda: keras.optimizers.Adam(1e-3),
        constraint=Bjorck(),
        data_shape=spec["shape"],
        config=StepConfig(global_batch_size=8, n_critic=2, seed=3),
    )
    matrices = [v for v in wgan.critic.trainable_variables if spec["projected"](v)]
    assert matrices and spec["count"] in (None, len(matrices)), len(matrices)

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
    data = spec["data"].astype(np.float32)
    ds = tf.data.Dataset.from_tensor_slices(data).batch(8, drop_remainder=True).repeat()
    wgan.iterate(wgan.distribute(ds), 2)
    print("RESULT " + json.dumps({"knocked": knocked, "after": spread()}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
