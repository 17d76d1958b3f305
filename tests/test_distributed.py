"""TPU readiness and scale features: host loop, XLA, bf16, and the strategies' failure modes."""

import json
import socket

import keras
import numpy as np
import pytest
import tensorflow as tf

from lipgan.core.constraint import StepContext
from lipgan.core.engine import zeros_for_none
from lipgan.core.errors import ConfigError
from lipgan.core.step_config import StepConfig
from lipgan_plugins.gradient_penalty import GradientPenalty
from lipgan_plugins.multi_worker import MultiWorker
from lipgan_plugins.tpu import TPU
from tests.conftest import free_port, run_python
from tests.helpers import BOUNDED_S, returns_within, toy_wgan


def build(
    config=None,
    constraint=None,
    strategy=None,
    optimizer=lambda: keras.optimizers.Adam(1e-3, 0.5, 0.9),
):
    return toy_wgan(
        constraint or GradientPenalty(weight=1.0),
        strategy=strategy,
        config=config or StepConfig(global_batch_size=16, n_critic=3, seed=5),
        width=32,
        critic_depth=3,
        critic_optimizer=optimizer,
        generator_optimizer=optimizer,
    )


def batches(wgan):
    data = np.random.default_rng(0).normal(size=(512, 2)).astype(np.float32)
    return wgan.distribute(
        tf.data.Dataset.from_tensor_slices(data).batch(16, drop_remainder=True).repeat()
    )


def weights(wgan):
    return [v.numpy() for v in wgan.critic.trainable_variables + wgan.generator.trainable_variables]


@pytest.mark.slow
def test_steps_per_execution_does_not_change_results():
    # The host loop's plumbing; XLA inside the loop is test_xla_step_matches_plain_step's.
    # n_critic=2: iterations of several critic updates (a trace grows with n_critic).
    config = StepConfig(global_batch_size=16, n_critic=2, seed=5, jit_compile=False)
    one_at_a_time, host_loop = build(config), build(config)
    it1, it8 = batches(one_at_a_time), batches(host_loop)
    for _ in range(8):
        m1 = one_at_a_time.iterate(it1, 1)
    m8 = host_loop.iterate(it8, 8)
    assert int(one_at_a_time.iteration.numpy()) == int(host_loop.iteration.numpy()) == 8
    for a, b in zip(weights(one_at_a_time), weights(host_loop), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    for key in m1:
        assert float(m1[key]) == pytest.approx(float(m8[key]), rel=1e-6, abs=1e-7)


@pytest.mark.slow
def test_xla_step_matches_plain_step():
    # SGD: Adam's 1/√v turns last-ulp differences in ~0 gradient components into full steps.
    sgd = lambda: keras.optimizers.SGD(0.05)  # noqa: E731
    plain = build(
        StepConfig(global_batch_size=16, n_critic=2, seed=5, jit_compile=False), optimizer=sgd
    )
    assert not plain.use_xla
    xla = build(
        StepConfig(global_batch_size=16, n_critic=2, seed=5, jit_compile=True), optimizer=sgd
    )
    mp, mx = plain.iterate(batches(plain), 3), xla.iterate(batches(xla), 3)
    for key in mp:
        assert float(mx[key]) == pytest.approx(float(mp[key]), rel=1e-4, abs=1e-5), key
    for a, b in zip(weights(plain), weights(xla), strict=True):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5)


def test_bfloat16_gradient_penalty_is_close_to_float32():
    real = tf.random.stateless_normal((64, 2), seed=[1, 2])
    fake = tf.random.stateless_normal((64, 2), seed=[3, 4])
    results = {}
    for precision in ("float32", "mixed_bfloat16"):
        wgan = build(
            StepConfig(global_batch_size=64, n_critic=1, seed=5, mixed_precision=precision)
        )
        critic = wgan.critic
        with tf.GradientTape() as tape:
            ctx = StepContext(seed=1, step=0, phase=0, global_batch_size=64, num_replicas=1)
            penalty = GradientPenalty(weight=1.0).penalty(critic, real, fake, ctx)
            total = tf.reduce_mean(penalty)
        grads = zeros_for_none(
            tape.gradient(total, critic.trainable_variables), critic.trainable_variables
        )
        assert penalty.dtype == tf.float32
        assert all(v.dtype == "float32" for v in critic.trainable_variables)
        results[precision] = (penalty.numpy(), np.concatenate([g.numpy().ravel() for g in grads]))
        if precision == "mixed_bfloat16":
            assert critic.layers[0].compute_dtype == "bfloat16"
            assert critic.layers[-1].compute_dtype == "float32"  # last layer stays float32
    (p32, g32), (p16, g16) = results["float32"], results["mixed_bfloat16"]
    assert not np.array_equal(p32, p16)  # bf16 really computed something different
    assert np.abs(p16 - p32).max() <= 0.05 * max(np.abs(p32).max(), 1e-3)
    assert np.linalg.norm(g16 - g32) <= 0.1 * np.linalg.norm(g32)


@pytest.mark.parametrize("precision", ["mixed_float16", "bfloat16", "fp8"])
def test_unsupported_precision_is_a_config_error(precision):
    with pytest.raises(ConfigError, match="mixed_precision"):
        StepConfig(global_batch_size=8, mixed_precision=precision)


def test_global_batch_must_divide_among_replicas():
    class ThreeReplicas:
        num_replicas_in_sync = 3

    with pytest.raises(ConfigError, match="not divisible by the 3 replicas"):
        build(strategy=ThreeReplicas())


def forbid(monkeypatch, *names):
    """Make the tpu plugin's ``names`` (its reachability probe, its initialization) fail the test
    when called: how "fails at once" is checked, without timing it."""
    import lipgan_plugins.tpu as tpu_module

    for name in names:

        def forbidden(*args, _name=name, **kwargs):
            raise AssertionError(f"the tpu plugin called {_name}")

        monkeypatch.setattr(tpu_module, name, forbidden)


def test_tpu_absent_fails_at_once(monkeypatch):
    monkeypatch.delenv("TPU_NAME", raising=False)
    forbid(monkeypatch, "_check_reachable", "call_with_timeout")
    with pytest.raises(Exception, match="no TPU found"):
        TPU().create()


def test_tpu_closed_port_is_unreachable(monkeypatch):
    """Refused by the reachability probe (bounded by connect_timeout), before initialization."""
    forbid(monkeypatch, "call_with_timeout")
    tpu = TPU(address=f"grpc://127.0.0.1:{free_port()}", connect_timeout=3)
    with pytest.raises(Exception, match="unreachable"):
        returns_within(tpu.create)


SILENT_TPU = """
import socket, sys, time
from lipgan_plugins.tpu import TPU
server = socket.socket()
server.bind(("127.0.0.1", 0))
server.listen()  # accepts connections, never speaks gRPC: a TPU that does not answer
start = time.monotonic()
try:
    TPU(address=f"grpc://127.0.0.1:{server.getsockname()[1]}", connect_timeout=3).create()
except Exception as exc:
    print(f"{time.monotonic() - start:.2f} {exc}")
sys.stdout.flush()
import os; os._exit(0)
"""


@pytest.mark.slow
def test_tpu_that_does_not_answer_times_out():
    proc = run_python("-c", SILENT_TPU, timeout=120)
    elapsed, message = proc.stdout.strip().split(" ", 1)
    # It waited for its connect_timeout, then gave up: not TensorFlow's own endless wait.
    assert 3 <= float(elapsed) < BOUNDED_S, proc.stdout
    assert "did not finish initializing within 3s" in message


def test_malformed_tf_config(monkeypatch):
    for value in (
        "{not json",
        '{"cluster": {"worker": ["a:1"]}}',
        '{"cluster": {}, "task": {"type": "worker", "index": 0}}',
    ):
        monkeypatch.setenv("TF_CONFIG", value)
        with pytest.raises(Exception, match="TF_CONFIG is malformed"):
            MultiWorker().create()
    monkeypatch.delenv("TF_CONFIG")
    with pytest.raises(Exception, match="multi_worker needs TF_CONFIG"):
        MultiWorker().create()


MISSING_PEER = """
import sys, time
from lipgan_plugins.multi_worker import MultiWorker
start = time.monotonic()
try:
    MultiWorker(connect_timeout=4).create()
except Exception as exc:
    print(f"{time.monotonic() - start:.2f} {exc}")
sys.stdout.flush()
import os; os._exit(0)
"""


@pytest.mark.slow
def test_multi_worker_with_missing_peer_times_out():
    cluster = {"worker": [f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"]}
    tf_config = json.dumps({"cluster": cluster, "task": {"type": "worker", "index": 0}})
    proc = run_python("-c", MISSING_PEER, env={"TF_CONFIG": tf_config}, timeout=120)
    elapsed, message = proc.stdout.strip().split(" ", 1)
    # It waited for its connect_timeout, then gave up: not TensorFlow's own endless wait.
    assert 4 <= float(elapsed) < BOUNDED_S, proc.stdout + proc.stderr[-1000:]
    assert "the cluster did not start within 4s" in message
    assert f"{cluster['worker'][1]} (worker/1) not reachable" in message


def test_free_port_is_free():
    port = free_port()
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))
