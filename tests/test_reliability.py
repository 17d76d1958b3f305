"""Faults and hostile inputs (issue 16): each is stopped with one line, and nothing is lost.

Every test here backs a row of ``docs/reliability.md``. Training is tiny (toy MLP, width 16,
n_critic 1, batch 32) so that the in-process tests take seconds.
"""

import os
import signal
import subprocess
import sys
import time

import pytest

from tests.conftest import REPO, finish, start_python
from tests.test_lifecycle import (
    CLI,
    TINY,
    checkpoint_steps,
    invoke,
    one_line_error,
    snapshot,
    train,
)


def metric_steps(run_dir) -> list[int]:
    import json

    return [json.loads(ln)["step"] for ln in (run_dir / "metrics.jsonl").read_text().splitlines()]


# -- 1. a damaged checkpoint state file -----------------------------------------------------------
def test_damaged_state_file_resumes_from_the_newest_checkpoint_file(tmp_path):
    """Garbage or an empty ``checkpoints/checkpoint``: resume from the files, never from step 0."""
    run_dir = tmp_path / "run"
    train(run_dir, 10)
    state = run_dir / "checkpoints" / "checkpoint"
    for damage, steps in [("garbage\n", 15), ("", 20)]:
        state.write_text(damage)
        result = train(run_dir, steps)
        assert f"at step {steps - 5}" in result.output, result.output
        assert metric_steps(run_dir) == list(range(5, steps + 1, 5))  # nothing cut back
        assert "is damaged" in result.output and "using the checkpoint files" in result.output
        from lipgan.checkpoint import read_state

        prefixes, problem = read_state(run_dir / "checkpoints")
        assert problem is None and prefixes[-1].endswith(f"ckpt-{steps}")  # rewritten on save
    assert checkpoint_steps(run_dir) == [10, 15, 20]  # max_to_keep=3 still applies


def test_damaged_state_file_and_unreadable_checkpoints_stop_without_writing(tmp_path):
    run_dir = tmp_path / "run"
    train(run_dir, 5)
    (run_dir / "checkpoints" / "checkpoint").write_text("garbage\n")
    for data in (run_dir / "checkpoints").glob("ckpt-*.data-*"):
        data.write_bytes(data.read_bytes()[:16])
    before = snapshot(run_dir)
    result = invoke("run", *TINY, "--bind", "train.steps=10", "--run-dir", str(run_dir))
    one_line_error(result, "no readable checkpoint", "ckpt-5")
    assert snapshot(run_dir) == before


# -- 2. one writer per run dir --------------------------------------------------------------------
def start_run(run_dir, steps):
    """``lipgan run`` in a subprocess; returns once it has logged its first metrics."""
    proc = start_python(
        "-c",
        CLI,
        "run",
        *TINY,
        "--bind",
        f"train.steps={steps}",
        "--bind",
        "train.checkpoint_every=0",
        "--run-dir",
        run_dir,
    )
    metrics = run_dir / "metrics.jsonl"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        if metrics.is_file() and metrics.read_text().strip():
            return proc
        time.sleep(0.05)
    raise AssertionError(f"the run did not start: {finish(proc).stderr[-2000:]}")


@pytest.mark.slow
def test_second_run_on_a_live_run_dir_fails_at_once_naming_the_holder(tmp_path):
    run_dir = tmp_path / "run"
    holder = start_run(run_dir, 100_000)
    try:
        lines = len((run_dir / "metrics.jsonl").read_text().splitlines())
        started = time.monotonic()
        result = invoke("run", *TINY, "--bind", "train.steps=10", "--run-dir", str(run_dir))
        one_line_error(result, f"in use by process {holder.pid}", "another --run-dir")
        assert time.monotonic() - started < 60
        assert holder.poll() is None
        # The live run's log was not rewritten: it only grew.
        assert len((run_dir / "metrics.jsonl").read_text().splitlines()) >= lines
        assert not (run_dir / "config-before-0.gin").exists()
    finally:
        holder.send_signal(signal.SIGKILL)
        finish(holder)
    # The kernel dropped the killed holder's lock: nothing stale blocks the next run.
    result = train(run_dir, 10)
    assert "Error" not in result.output


def test_run_dir_lock_is_exclusive_within_one_process_and_released_on_close(tmp_path):
    from lipgan.rundir import LOCK, RunDir

    first, second = RunDir(tmp_path), RunDir(tmp_path)
    first.lock()
    with pytest.raises(Exception, match=f"in use by process {os.getpid()}"):
        second.lock()
    first.close()
    second.lock()
    second.close()
    assert (tmp_path / LOCK).is_file()


def test_default_run_dirs_of_two_processes_differ():
    code = "from lipgan.cli import _default_run_dir; print(_default_run_dir(['a.gin']))"
    names = [
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True
        ).stdout.strip()
        for _ in range(2)
    ]
    assert names[0] != names[1] and all(n.startswith("runs/a-") for n in names)


# -- 3. a plugin penalty of the wrong shape or dtype ----------------------------------------------
BAD_PENALTY_PLUGIN = '''
import tensorflow as tf
from lipgan import Constraint, hookimpl

class BadShape(Constraint):
    """Returns the penalty in a shape the contract does not allow."""
    name = "bad_shape"

    def __init__(self, kind: str = "column"):
        self.kind = kind

    def penalty(self, critic, real, fake, ctx):
        scores = critic(real, training=False)  # [b, 1], the critic's own output shape
        if self.kind == "column":
            return 0.1 * tf.square(scores)
        if self.kind == "scalar":
            return tf.reduce_mean(tf.square(scores))
        return tf.cast(tf.ones([tf.shape(real)[0]]), tf.int32)

@hookimpl
def lipgan_register_constraints(register):
    register(BadShape)
'''


@pytest.fixture
def bad_penalty_plugin(tmp_path, monkeypatch):
    from tests.fake_dists import make_dist

    site = make_dist(
        tmp_path / "site", "lipgan-bad", "0.1", "bad_shape", "lipgan_bad_shape", BAD_PENALTY_PLUGIN
    )
    monkeypatch.syspath_prepend(str(site))
    import importlib

    return importlib.import_module("lipgan_bad_shape").BadShape


@pytest.mark.parametrize(
    "kind, got", [("column", "shape [32, 1] and dtype float32"), ("scalar", "shape []")]
)
def test_penalty_of_the_wrong_shape_stops_the_run_with_one_line(
    tmp_path, bad_penalty_plugin, kind, got
):
    result = invoke(
        "run",
        *TINY,
        "--bind",
        "train.steps=5",
        "--bind",
        "train.constraint = @bad_shape()",
        "--bind",
        f"bad_shape.kind = '{kind}'",
        "--run-dir",
        str(tmp_path / "run"),
    )
    line = one_line_error(result, "'bad_shape'", "lipgan_bad_shape.BadShape", got)
    assert "shape [32]" in line and "one value per example" in line and "in user code" not in line
    assert checkpoint_steps(tmp_path / "run") == []


def test_conformance_kit_reports_the_engines_message(bad_penalty_plugin):
    from lipgan import testing

    for kind, got in [("column", "shape [8, 1]"), ("scalar", "shape []"), ("int", "dtype int32")]:
        for check in (testing.check_penalty, testing.check_compiled):
            with pytest.raises(AssertionError, match=r"the plugin contract asks") as info:
                check(bad_penalty_plugin(kind))
            assert got in str(info.value), (check.__name__, kind, info.value)
