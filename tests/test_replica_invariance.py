"""Same global batch and seed => same numbers on 1, 2 and 4 replicas as on the default strategy.

Each layout runs in its own process (tests/replica_probe.py). Compared: the critic loss and the
all-reduced critic gradients of one step (<= 1e-5 relative), and metrics and final weights of both
networks after several full iterations (n_critic critic updates + a generator update).
"""

import json

import numpy as np
import pytest

from tests.conftest import REPO, finish, start_python

CONSTRAINTS = ["none", "gradient_penalty", "weight_clip", "spectral_norm"]
LAYOUTS = ["default", "mirrored:1", "mirrored:2", "mirrored:4"]
RTOL = 1e-5


def parse(proc):
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    return json.loads(lines[-1][len("RESULT ") :])


@pytest.fixture(scope="module")
def layouts():
    # Two at a time: the machines this runs on have 2 cores.
    results = {}
    for pair in (LAYOUTS[:2], LAYOUTS[2:]):
        procs = {lay: start_python(REPO / "tests" / "replica_probe.py", lay) for lay in pair}
        results.update({lay: parse(finish(proc)) for lay, proc in procs.items()})
    return results


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
    assert layouts[layout]["replicas"] == int(layout.split(":")[1])
    assert relative_error(actual["critic_loss"], expected["critic_loss"]) <= RTOL
    assert_same(actual["critic_grads"], expected["critic_grads"], "critic gradient")
    for key, value in expected["metrics"].items():
        assert abs(actual["metrics"][key] - value) <= RTOL * max(1.0, abs(value)), key
    assert_same(actual["critic_weights"], expected["critic_weights"], "critic weight")
    assert_same(actual["generator_weights"], expected["generator_weights"], "generator weight")
    assert_same(actual["non_trainable"], expected["non_trainable"], "critic non-trainable")


@pytest.mark.slow
def test_the_comparison_can_fail(layouts):
    """Guard against a vacuous check: different constraints must give different gradients."""
    gp = layouts["default"]["results"]["gradient_penalty"]["critic_grads"]
    none = layouts["default"]["results"]["none"]["critic_grads"]
    assert max(relative_error(a, b) for a, b in zip(gp, none)) > 1e-2
