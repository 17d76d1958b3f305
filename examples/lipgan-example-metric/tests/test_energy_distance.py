"""The example metric: its closed form, its floor, and `lipgan eval --metric` from outside."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from lipgan_example_metric import energy_distance


def test_closed_form_on_two_point_masses():
    """P = δ₀, Q = δ_v: E = 2‖v‖ − 0 − 0."""
    x, y = np.zeros((5, 3)), np.tile([3.0, 4.0, 0.0], (7, 1))
    assert energy_distance(x, y) == pytest.approx(10.0)


def test_zero_for_the_same_sample_and_larger_for_a_shifted_one():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(400, 2))
    assert energy_distance(x, x) == pytest.approx(0.0, abs=1e-9)
    same = energy_distance(x, rng.normal(size=(400, 2)))
    shifted = energy_distance(x, rng.normal(size=(400, 2)) + [1.0, 0.0])
    assert 0 < same < 0.05 < shifted


def lipgan(*args):
    command = str(Path(sys.executable).with_name("lipgan"))
    return subprocess.run([command, *args], capture_output=True, text=True, timeout=900)


@pytest.mark.slow
def test_lipgan_eval_selects_it_by_name(tmp_path):
    run = tmp_path / "run"
    proc = lipgan(
        "run", "--quiet", "--run-dir", str(run), "--bind", "train.steps = 2",
        "--bind", "train.steps_per_execution = 1", "--bind", "train.eval_every = 0",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    proc = lipgan("eval", str(run), "--metric", "energy_distance", "--samples", "500")
    assert proc.returncode == 0, proc.stderr
    values = json.loads(proc.stdout)
    assert values["energy_distance"] > values["energy_distance_floor"] >= 0
    assert "modes_covered" not in values  # only the metric asked for
