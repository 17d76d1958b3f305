"""Tests a plugin author writes: the lipgan conformance kit, a closed form, and end-to-end use."""

import json
import subprocess
import sys
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf
from lipgan_example_plugin import MaxGradientNorm

from lipgan import StepContext
from lipgan.testing import ConstraintConformance


class TestConformance(ConstraintConformance):
    """One pytest test per part of the Constraint contract (gin, shape, XLA, replicas, ...)."""

    constraint_class = MaxGradientNorm
    constraint_kwargs = {"weight": 2.0, "max_norm": 0.5}


@pytest.mark.parametrize(
    "w, expected", [([0.3, 0.0], 0.0), ([0.0, 2.0], 2 * 3.0 * (2.0 - 0.5) ** 2)]
)
def test_linear_critic_closed_form(w, expected):
    """D(x) = w·x + b has ∇D = w everywhere: penalty = 2·λ·max(0, ‖w‖ − K)² (real and fake)."""
    critic = keras.Sequential([keras.Input(shape=(2,)), keras.layers.Dense(1)])
    critic.layers[-1].set_weights([np.array(w, np.float32).reshape(2, 1), np.zeros(1, np.float32)])
    real, fake = tf.random.normal([4, 2]), tf.random.normal([4, 2])
    ctx = StepContext(seed=0, step=0, phase=0, global_batch_size=4, num_replicas=1)
    got = MaxGradientNorm(weight=3.0, max_norm=0.5).penalty(critic, real, fake, ctx).numpy()
    np.testing.assert_allclose(got, np.full(4, expected), rtol=1e-5, atol=1e-7)


def lipgan(*args):
    """The installed ``lipgan`` command, as a user would run it."""
    command = str(Path(sys.executable).with_name("lipgan"))
    return subprocess.run([command, *args], capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_discovered_by_lipgan_plugins():
    proc = lipgan("plugins", "--json")
    assert proc.returncode == 0, proc.stderr
    entry = {p["name"]: p for p in json.loads(proc.stdout)["plugins"]}["max_gradient_norm"]
    assert (entry["kind"], entry["distribution"]) == ("constraint", "lipgan-example-plugin")
    assert entry["hooks"] == ["lipgan_register_constraints"]


@pytest.mark.slow
def test_trains_from_gin(tmp_path):
    proc = lipgan(
        "run",
        "--quiet",
        "--run-dir",
        str(tmp_path / "run"),
        "--bind",
        "train.constraint = @max_gradient_norm()",
        "--bind",
        "max_gradient_norm.max_norm = 2.0",
        "--bind",
        "train.steps = 2",
        "--bind",
        "train.steps_per_execution = 1",
        "--bind",
        "train.global_batch_size = 16",
        "--bind",
        "train.n_critic = 1",
        "--bind",
        "mlp_critic.width = 16",
        "--bind",
        "mlp_generator.width = 16",
    )
    assert proc.returncode == 0, proc.stderr
    operative = (tmp_path / "run" / "operative_config.gin").read_text()
    assert "max_gradient_norm.max_norm = 2.0" in operative
    metrics = [
        json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()
    ]
    assert metrics[-1]["step"] == 2 and np.isfinite(metrics[-1]["penalty"])


def test_its_search_space_makes_it_tunable():
    from lipgan.core.plugins import load_registry
    from lipgan.study import search, tune

    registry = load_registry().registry
    assert "max_gradient_norm" in search.tunable(registry)[0]
    assert "max_gradient_norm" in tune.default_constraints(registry)
    config = search.draw("max_gradient_norm", 3, registry)
    assert 0.5 <= config["max_norm"] <= 2.0 and 0.1 <= config["weight"] <= 100.0
    assert "max_gradient_norm.max_norm = " + repr(config["max_norm"]) in search.bindings(
        "max_gradient_norm", config, 100, registry
    )


@pytest.mark.slow
def test_a_tiny_tune_searches_it(tmp_path):
    out = tmp_path / "tuned"
    proc = lipgan(
        "tune", "--constraint", "max_gradient_norm", "--dataset", "8gaussians", "--configs", "2",
        "--search-steps", "5", "--seeds", "1", "--steps", "5", "--eval-every", "5",
        "--jobs", "1", "--quiet", "--out", str(out),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    chosen = json.loads((out / "chosen.json").read_text())
    assert [c["constraint"] for c in chosen] == ["max_gradient_norm"]
    assert "max_norm" in chosen[0]["config"]
