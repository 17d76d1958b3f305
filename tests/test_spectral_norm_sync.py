"""spectral_norm keeps its replicas' state equal by construction."""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from lipgan_plugins.spectral_norm import ReplicaSyncedSpectralNormalization, SpectralNorm
from tests.conftest import REPO, finish, start_python


def test_one_replica_computes_what_keras_computes():
    keras.utils.set_random_seed(0)
    layers = [
        cls(keras.layers.Dense(5), power_iterations=2)
        for cls in (keras.layers.SpectralNormalization, ReplicaSyncedSpectralNormalization)
    ]
    x = tf.random.stateless_normal([4, 3], seed=[0, 1])
    for layer in layers:
        layer.build((None, 3))
    layers[1].set_weights(layers[0].get_weights())
    for _ in range(3):
        outs = [layer(x, training=True).numpy() for layer in layers]
        np.testing.assert_allclose(outs[1], outs[0], rtol=1e-6, atol=1e-7)
    for a, b in zip(layers[0].get_weights(), layers[1].get_weights()):
        np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-7)
    sigma = np.linalg.svd(layers[1].kernel.numpy(), compute_uv=False)[0]
    assert sigma == pytest.approx(1.0, rel=0.05)  # the kernel really is normalized


def test_the_critic_is_wrapped_with_the_synced_layer():
    from lipgan.models import mlp_critic

    critic = SpectralNorm().wrap_critic(mlp_critic((2,), width=8, depth=2))
    wrapped = [x for x in critic.layers if isinstance(x, ReplicaSyncedSpectralNormalization)]
    assert len(wrapped) == 3


@pytest.mark.slow
def test_replicas_resync_after_one_drifts():
    """Replica 1's u is knocked off; after 2 iterations lipgan's copies agree exactly again, while
    Keras' own wrapper (what lipgan used before) keeps them apart."""
    probe = REPO / "tests" / "sn_sync_probe.py"
    procs = {v: start_python(probe, v) for v in ("lipgan", "keras")}
    spread = {}
    for variant, proc in procs.items():
        done = finish(proc)
        lines = [ln for ln in done.stdout.splitlines() if ln.startswith("RESULT ")]
        assert done.returncode == 0 and lines, done.stderr[-3000:]
        spread[variant] = json.loads(lines[-1][len("RESULT ") :])
    assert spread["lipgan"] == {"u": 0.0, "kernel": 0.0}
    assert spread["keras"]["u"] > 1e-3  # the probe really desynchronizes the replicas
