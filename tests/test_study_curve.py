"""A study cell's quality curve: recorded, free of side effects on training, continued on resume."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from lipgan.study.curve import CURVE_FILE, Curve, points, read
from tests.helpers import HANG_S, wait_while_running

TINY_CELL = [
    "mlp_critic.width = 16",
    "mlp_generator.width = 16",
    "train.global_batch_size = 32",
    "train.steps_per_execution = 2",
    "train.log_every = 2",
    "train.checkpoint_every = 4",
    "train.plot_samples = 0",
    "train.jit_compile = False",
]


def _cell_file(tmp_path, name, steps, eval_every, extra=()):
    cell = {
        "dataset": "ring",
        "constraint": "gradient_penalty",
        "seed": 0,
        "steps": steps,
        "eval_samples": 1000,
        "bindings": [*TINY_CELL, *extra],
        "eval_every": eval_every,
    }
    cell_file = tmp_path / f"{name}.json"
    cell_file.write_text(json.dumps(cell))
    return cell_file


def _run_cell(tmp_path, name, steps, eval_every, capsys):
    """``python -m lipgan.config.cells`` in this process (its ``main``): what is checked is the
    curve, not the process (the stopped cell below is a real one)."""
    from lipgan.config import cells

    cell_file, run_dir = _cell_file(tmp_path, name, steps, eval_every), tmp_path / name
    assert cells.main([str(cell_file), str(run_dir)]) == 0, capsys.readouterr().err[-3000:]
    return json.loads((run_dir / "result.json").read_text()), run_dir


@pytest.mark.slow
def test_a_cell_records_its_curve_and_trains_the_same_without_it(tmp_path, capsys):
    with_curve, run_dir = _run_cell(tmp_path, "curve", steps=8, eval_every=4, capsys=capsys)
    without, _ = _run_cell(tmp_path, "plain", steps=8, eval_every=0, capsys=capsys)
    # The curve touches no training randomness or data: the same final model either way.
    assert with_curve["metrics"] == without["metrics"]
    assert "curve" not in without
    curve = with_curve["curve"]
    assert [p["step"] for p in curve] == [0, 4, 8]
    seconds = [p["seconds"] for p in curve]
    assert seconds == sorted(seconds) and seconds[0] < seconds[-1]
    # The last point is the final evaluation on the three mode metrics (same samples).
    for key in ("modes_covered", "high_quality_fraction", "reverse_kl"):
        assert curve[-1][key] == with_curve["metrics"][key]
    assert curve[0]["high_quality_fraction"] <= 0.01  # the untrained generator at step 0
    assert points(read(run_dir)) == curve


@pytest.mark.heavy
@pytest.mark.slow
def test_a_stopped_cell_resumes_and_its_curve_continues(tmp_path):
    """SIGTERM mid-run (what the study sends its cells): the cell saves a checkpoint, marks its
    clock and writes no result; the same cell re-run continues both the run and the curve."""
    import signal

    # Few host-loop stops: checkpoints only on the signal and at the end.
    extra = ["train.checkpoint_every = 0", "train.log_every = 50", "train.steps_per_execution = 10"]
    cell_file = _cell_file(tmp_path, "stopped", steps=600, eval_every=20, extra=extra)
    run_dir = tmp_path / "r"
    args = [sys.executable, "-m", "lipgan.config.cells", str(cell_file), str(run_dir)]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    reached = wait_while_running(
        proc, lambda: len(points(read(run_dir))) >= 3, "three curve points", seconds=HANG_S
    )
    assert reached, f"the cell ended before its signal: {proc.communicate()[1][-3000:]}"
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=HANG_S)
    assert proc.returncode == 128 + signal.SIGTERM, stderr[-3000:]
    assert not (run_dir / "result.json").exists()
    before = read(run_dir)
    assert before[-1]["mark"] == "stop"
    stopped_at = before[-1]["step"]
    assert 0 < stopped_at < 600

    done = subprocess.run(args, capture_output=True, text=True, timeout=HANG_S)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads((run_dir / "result.json").read_text())
    curve = result["curve"]
    steps = [p["step"] for p in curve]
    assert steps == sorted(set(steps)) and steps[0] == 0 and steps[-1] == 600
    assert curve[: len(points(before))] == points(before)  # kept, not restarted
    later = [p for p in curve if p["step"] > stopped_at]
    assert later and later[0]["seconds"] >= before[-1]["seconds"]  # the clock continued
    seconds = [p["seconds"] for p in curve]
    assert seconds == sorted(seconds)


class _NoModel:
    """Curve.resume needs no generator."""


def test_resume_keeps_the_points_up_to_the_restored_step_and_continues_the_clock(tmp_path):
    lines = [
        {"step": 0, "seconds": 0.0, "modes_covered": 0},
        {"step": 250, "seconds": 20.0, "modes_covered": 5},
        {"step": 300, "seconds": 24.0, "mark": "stop"},
    ]
    (tmp_path / CURVE_FILE).write_text("".join(json.dumps(x) + "\n" for x in lines))
    curve = Curve(_NoModel(), "2d_ring", seed=0, num_samples=10, every=250, run_dir=tmp_path)
    assert curve.resume(300) is False  # 300 is off the grid: nothing due at the restart
    assert curve.offset == 24.0 and curve.next_due == 500
    assert curve.due(450, 1000) is False and curve.due(500, 1000) is True
    assert curve.due(1000, 1000) is True  # the last step always gets a point

    # A cell killed after a point at 500 but restored from its checkpoint at 250: the points
    # after 250 are dropped (they are taken again) and the clock goes back to 250's.
    lines.append({"step": 500, "seconds": 40.0, "modes_covered": 7})
    (tmp_path / CURVE_FILE).write_text("".join(json.dumps(x) + "\n" for x in lines))
    assert curve.resume(250) is False  # the point at 250 exists
    assert [x["step"] for x in read(tmp_path)] == [0, 250]
    assert curve.offset == 20.0 and curve.next_due == 500
    assert curve.resume(0) is False and curve.offset == 0.0
    (tmp_path / CURVE_FILE).unlink()
    assert curve.resume(0) is True  # a fresh run takes a point at step 0


def test_a_line_cut_short_by_a_kill_is_skipped(tmp_path):
    (tmp_path / CURVE_FILE).write_text('{"step": 0, "seconds": 0.0}\n{"step": 25')
    assert read(tmp_path) == [{"step": 0, "seconds": 0.0}]


def test_sliced_w1_is_zero_on_equal_samples_and_a_lower_bound_of_w1():
    from lipgan.metrics.toy import sliced_wasserstein1, wasserstein1

    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(300, 2)), rng.normal(size=(300, 2)) + [3.0, 0.0]
    assert sliced_wasserstein1(x, x) == 0.0
    sliced, exact = sliced_wasserstein1(x, y), wasserstein1(x, y)
    # The mean over directions of |<shift, θ>| for a shift of 3 is 3 · 2/π ≈ 1.91.
    assert sliced < exact and sliced == pytest.approx(3 * 2 / np.pi, rel=0.1)
