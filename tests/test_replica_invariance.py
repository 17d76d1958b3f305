"""Same global batch and seed => same numbers on 1, 2 and 4 replicas and 2 workers as on one device.

Each layout runs in its own process (tests/replica_probe.py, once per session: the conftest's
``replica_probes``); "multi_worker" is two processes joined by TF_CONFIG on 127.0.0.1, one CPU
replica each, compared through the chief's output. Compared: the critic loss and the
all-reduced critic gradients of one step (<= 1e-5 relative), and metrics and final weights of both
networks after several full iterations (n_critic critic updates + a generator update).
"""

import numpy as np
import pytest

from tests.conftest import REPLICA_CONSTRAINTS as CONSTRAINTS
from tests.conftest import REPLICA_LAYOUTS as LAYOUTS

RTOL = 1e-5


@pytest.fixture(scope="module")
def layouts(replica_probes):
    return replica_probes.get(*LAYOUTS)


def relative_error(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30)


def assert_same(actual, expected, what):
    for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
        err = relative_error(a, e)
        assert err <= RTOL, f"{what}[{i}]: relative error {err:.2e} > {RTOL}"


@pytest.mark.slow
@pytest.mark.parametrize("layout", LAYOUTS[1:])
@pytest.mark.parametrize("constraint", CONSTRAINTS)
def test_replica_count_does_not_change_the_numbers(layouts, layout, constraint):
    expected = layouts["default"]["results"][constraint]
    actual = layouts[layout]["results"][constraint]
    assert layouts[layout]["replicas"] == (
        2 if layout == "multi_worker" else int(layout.split(":")[1])
    )
    assert relative_error(actual["critic_loss"], expected["critic_loss"]) <= RTOL
    assert_same(actual["critic_grads"], expected["critic_grads"], "critic gradient")
    for key, value in expected["metrics"].items():
        assert abs(actual["metrics"][key] - value) <= RTOL * max(1.0, abs(value)), key
    assert_same(actual["critic_weights"], expected["critic_weights"], "critic weight")
    assert_same(actual["generator_weights"], expected["generator_weights"], "generator weight")
    assert_same(actual["non_trainable"], expected["non_trainable"], "critic non-trainable")
    assert_same(actual["generator_ema"], expected["generator_ema"], "generator EMA weight")
    assert actual["drift"] == 0.0  # every replica's copy of every weight (EMA included) agrees


@pytest.mark.slow
def test_the_comparison_can_fail(layouts):
    """Guard against a vacuous check: different constraints must give different gradients."""
    gp = layouts["default"]["results"]["gradient_penalty"]["critic_grads"]
    none = layouts["default"]["results"]["none"]["critic_grads"]
    assert max(relative_error(a, b) for a, b in zip(gp, none)) > 1e-2


@pytest.mark.slow
def test_per_replica_mean_scales_gradients_with_replica_count(layouts):
    """Why the engine divides by the global batch: Keras SUMs gradients over replicas, so a
    per-replica mean makes the applied gradient N times too large; the engine's stays put."""
    base = layouts["default"]["results"]["gradient_penalty"]
    for layout in ("mirrored:2", "mirrored:4", "multi_worker"):
        result = layouts[layout]["results"]["gradient_penalty"]
        n = layouts[layout]["replicas"]
        assert result["grad_norm"] == pytest.approx(base["grad_norm"], rel=RTOL)
        assert result["per_replica_mean_grad_norm"] == pytest.approx(
            n * base["grad_norm"], rel=1e-4
        )
