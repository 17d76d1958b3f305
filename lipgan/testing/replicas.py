"""The replica-invariance check: penalty values, all-reduced critic gradients and the weights
``after_update`` leaves agree on 1 and 2 mirrored logical CPUs. TensorFlow fixes its devices at
start-up, so each replica count runs in a fresh subprocess (``python -m lipgan.testing``, which
runs :func:`_probe`) that imports the constraint class by module and name.
"""

from __future__ import annotations

import importlib
import json

import numpy as np

from lipgan.core import child_process
from lipgan.testing.fixtures import BATCH, _batch, small_critic, small_generator

#: Replica counts compared by the invariance check.
REPLICA_COUNTS = (1, 2)

PROBE_TIMEOUT_S = 300


def _qualified(cls) -> str:
    if "<locals>" in cls.__qualname__:
        raise AssertionError(
            f"{cls.__qualname__} is defined inside a function; the replica-invariance check "
            "imports it in a subprocess, so define it at module level"
        )
    return f"{cls.__module__}:{cls.__qualname__}"


def _import_qualified(path: str):
    module, _, qualname = path.partition(":")
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def replica_probes(specs, counts=REPLICA_COUNTS, data_shape=(2,), critic_factory=small_critic):
    """Run :func:`_probe` for each ``(cls, kwargs)`` in fresh processes, one per replica count.

    The processes run concurrently. Returns ``{count: [result per spec]}`` with each result
    ``{"penalty": [...] or None, "loss": float, "grads": [[...], ...]}``.
    """
    request = {
        "specs": [[_qualified(cls), dict(kwargs or {})] for cls, kwargs in specs],
        "data_shape": list(data_shape),
        "critic": _qualified(critic_factory),
    }
    procs = {
        n: child_process.start("lipgan.testing", json.dumps({**request, "replicas": n}))
        for n in counts
    }
    results = {}
    for n, proc in procs.items():
        done = child_process.finish(proc, timeout=PROBE_TIMEOUT_S)
        lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
        if done.returncode or not lines:
            raise AssertionError(
                f"replica probe with {n} logical CPUs failed (exit {done.returncode}):\n"
                f"{done.stderr[-3000:]}"
            )
        results[n] = json.loads(lines[-1])["results"]
    return results


def check_replica_invariance_many(specs, data_shape=(2,), critic_factory=small_critic) -> None:
    """Penalties and critic gradients agree on 1 and 2 replicas, for several constraints at once.

    Batching the constraints into one subprocess per replica count keeps the check to two
    TensorFlow start-ups however many constraints are checked.
    """
    specs = list(specs)
    probes = replica_probes(specs, REPLICA_COUNTS, data_shape, critic_factory)
    runs = [probes[n] for n in REPLICA_COUNTS]
    for (cls, _), *results in zip(specs, *runs):
        for n, other in zip(REPLICA_COUNTS[1:], results[1:]):
            assert_same_probe(results[0], other, f"{cls.__name__} on 1 vs {n} replicas")


def assert_same_probe(base: dict, other: dict, where: str) -> None:
    """Two :func:`replica_probes` results agree (float32 tolerance), and neither run's replicas
    hold different weights after ``after_update``."""
    for probe in (base, other):
        assert not probe.get("replica_drift"), (
            f"{where}: after_update leaves the replicas with different weights ({probe['drift_at']} "
            f"differs by {probe['replica_drift']:.3g} between replicas); it must compute the same "
            "value on every replica (no replica id, no unsynchronized randomness)"
        )
    if base["penalty"] is None or other["penalty"] is None:
        assert base["penalty"] is other["penalty"] is None, f"{where}: penalty None on one only"
    else:
        np.testing.assert_allclose(
            other["penalty"],
            base["penalty"],
            rtol=1e-4,
            atol=1e-5,
            err_msg=f"{where}: per-example penalties differ",
        )
    np.testing.assert_allclose(
        other["loss"], base["loss"], rtol=1e-4, atol=1e-5, err_msg=f"{where}: loss differs"
    )
    for i, (g1, g2) in enumerate(zip(base["grads"], other["grads"])):
        np.testing.assert_allclose(
            g2, g1, rtol=1e-4, atol=1e-5, err_msg=f"{where}: critic gradient {i} differs"
        )


def check_replica_invariance(
    cls, kwargs=None, data_shape=(2,), critic_factory=small_critic
) -> None:
    """Penalty values and all-reduced critic gradients agree on 1 and 2 mirrored logical CPUs."""
    check_replica_invariance_many([(cls, kwargs)], data_shape, critic_factory)


def _probe(request: dict) -> list[dict]:
    """Subprocess side: split the CPU, then compute penalties and critic gradients per spec."""
    from lipgan.core.strategy import split_host_cpu

    devices = split_host_cpu(request["replicas"])  # first TF work in this process
    import keras
    import tensorflow as tf

    from lipgan.core.engine import WGAN
    from lipgan.core.step_config import StepConfig

    strategy = tf.distribute.MirroredStrategy(devices=devices)
    data_shape = tuple(request["data_shape"])
    critic_factory = _import_qualified(request["critic"])
    real, fake = _batch(data_shape, seed=0)
    # Penalties run in eager strategy.run: several times cheaper than tracing here, and
    # tf.function/XLA are checked by check_compiled. Replica r gets global rows [r*b, (r+1)*b).
    b = BATCH // request["replicas"]
    pairs = strategy.experimental_distribute_values_from_function(
        lambda c: tuple(
            t[c.replica_id_in_sync_group * b : (c.replica_id_in_sync_group + 1) * b]
            for t in (real, fake)
        )
    )
    results = []
    for path, kwargs in request["specs"]:
        constraint = _import_qualified(path)(**kwargs)
        keras.utils.set_random_seed(0)
        wgan = WGAN(
            strategy,
            critic=critic_factory,
            generator=small_generator,
            critic_optimizer=lambda: keras.optimizers.SGD(0.01),
            generator_optimizer=lambda: keras.optimizers.SGD(0.01),
            constraint=constraint,
            data_shape=data_shape,
            config=StepConfig(global_batch_size=BATCH, n_critic=1, seed=0),
        )

        def penalty_fn(pair, wgan=wgan, constraint=constraint):
            out = constraint.penalty(wgan.critic, pair[0], pair[1], wgan.context(0, 0))
            return tf.zeros([0]) if out is None else tf.cast(out, tf.float32)

        local = strategy.experimental_local_results(strategy.run(penalty_fn, args=(pairs,)))
        values = np.concatenate([t.numpy() for t in local]).tolist()
        grads, loss = wgan.critic_gradients(real)
        # after_update in replica context, on weights it has something to do to (as the
        # idempotency check scales them): every replica must end with the same weights.
        for v in wgan.critic.trainable_variables:
            v.assign(v * 3.0 + 0.1)
        strategy.run(tf.function(lambda wgan=wgan: wgan.constraint.after_update(wgan.critic)))
        drift, where = wgan.replica_drift()
        results.append(
            {
                "penalty": values if len(values) else None,
                "loss": float(loss),
                "grads": [np.asarray(g).ravel().tolist() for g in grads],
                "replica_drift": drift,
                "drift_at": where,
            }
        )
    return results
