"""`lipgan tune --executor tune`: the tuned study on Ray Tune, its stop and its restore.

Needs the optional extra (``pip install 'lipgan[ray]'``, Ray Tune included), which CI installs
after the plain test run and then runs this module (.ci/run); a missing Ray Tune is simulated so
that its one-line error is checked everywhere.
"""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from lipgan.cli.main import cli
from lipgan.study import tune
from lipgan.study.runner import cell_dir
from tests.helpers import CLI, HANG_S, processes_mentioning, wait_until, wait_while_running
from tests.test_study_ray import _untimed

TINY = [
    "--dataset", "8gaussians", "--constraint", "gradient_penalty", "--configs", "2",
    "--search-steps", "10", "--seeds", "1", "--steps", "20", "--eval-every", "10",
]  # fmt: skip


def test_a_missing_ray_is_one_line_that_names_the_tune_executor(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    out = tmp_path / "never"
    result = CliRunner().invoke(cli, ["tune", *TINY, "--executor", "tune", "--out", str(out)])
    assert result.exit_code == 1
    assert result.output.strip() == (
        "Error: --executor tune needs Ray, which is not installed: pip install 'lipgan[ray]'"
    )
    assert not out.exists()


def test_a_missing_ray_tune_is_one_line_that_says_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray.tune", None)  # `import ray.tune` raises ImportError
    pytest.importorskip("ray")
    out = tmp_path / "never"
    result = CliRunner().invoke(cli, ["tune", *TINY, "--executor", "tune", "--out", str(out)])
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "pip install 'lipgan[ray]'" in lines[0], result.output
    assert not out.exists()


@pytest.fixture(scope="module")
def ray_address():
    ray = pytest.importorskip("ray")
    pytest.importorskip("ray.tune")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()


def _tuned(out: Path, *executor: str) -> dict:
    result = CliRunner().invoke(cli, ["tune", *TINY, "--quiet", "--out", str(out), *executor])
    assert result.exit_code == 0, result.output
    return json.loads((out / "tune.json").read_text())


@pytest.mark.slow
def test_the_tiny_tuned_study_on_ray_tune_equals_the_local_one(ray_address, tmp_path):
    """Same trials, same choice, same replicate metrics to the bit (one single-threaded TF per
    run, seeded); Tune's experiment is removed once it has ended (nothing left to restore)."""
    local = _tuned(tmp_path / "local", "--jobs", "2")
    on_tune = _tuned(tmp_path / "tune", "--executor", "tune")
    assert _untimed(local) == _untimed(on_tune)
    assert local["search"]["8gaussians"]["gradient_penalty"]["hq"]  # something was compared
    assert not list((tmp_path / "tune" / "search").glob("ray_tune/*"))


def _run_dirs(out: Path) -> list[Path]:
    spec = tune.TuneSpec(("gradient_penalty",), ("8gaussians",), 3, 3000, 1, 20, 10)
    return [cell_dir(out / "search", cell) for cell in tune.search_cells(spec)]


def _driver(out: Path, address: str) -> list[str]:
    args = ["-c", CLI, "tune", *TINY, "--search-steps", "3000", "--out", str(out)]
    args += ["--configs", "3"]  # three trials on two CPUs: one waits for a free CPU
    args += ["--executor", "tune", "--ray-address", address]
    # small models, checkpoints only on a stop: a stopped trial shows where it resumed from
    for binding in ("mlp_critic.width=16", "mlp_generator.width=16", "train.global_batch_size=32"):
        args += ["--bind", binding]
    return args


def _wait_until_logged(run_dirs, proc) -> None:
    logs = [d / "metrics.jsonl" for d in run_dirs]
    logged = lambda: all(f.is_file() and f.read_text().strip() for f in logs)  # noqa: E731
    if not wait_while_running(proc, logged, "the trials' first logged steps", HANG_S):
        raise AssertionError(f"no trial logged a step (driver exit {proc.poll()})")


@pytest.mark.slow
@pytest.mark.parametrize("how", ["SIGTERM", "SIGKILL"])
def test_a_stopped_or_killed_tune_driver_resumes_with_the_same_command(ray_address, tmp_path, how):
    """SIGTERM: the trials are told to stop, each run saves a checkpoint and records nothing, exit
    143 with the resume line, and Tune's experiment is removed (it would never rerun the trials it
    stopped). SIGKILL: the driver dies with its experiment recorded; the same command restores it
    (``Tuner.restore``). Either way the same command then finishes every trial from its
    checkpoint: no step trained twice."""
    from tests.conftest import finish, start_python

    pytest.importorskip("ray.tune")
    out = tmp_path / "tuned"
    args = _driver(out, ray_address)
    run_dirs = _run_dirs(out)
    proc = start_python(*args)
    _wait_until_logged(run_dirs[:2], proc)
    proc.send_signal(getattr(signal, how))
    stopped = finish(proc, timeout=HANG_S)
    if how == "SIGTERM":
        assert stopped.returncode == 128 + signal.SIGTERM, stopped.stderr[-3000:]
        last = stopped.stderr.strip().splitlines()[-1]
        assert "run the same command again to resume" in last, last
        assert not list((out / "search").glob("ray_tune/*"))
        # the waiting trial never trained: Tune starts nothing once the driver is stopping
        assert not (run_dirs[2] / "metrics.jsonl").exists()
    else:
        assert stopped.returncode == -signal.SIGKILL
        assert list((out / "search").glob("ray_tune/*"))  # left for Tuner.restore
    # the runs stop themselves (told, or orphaned)
    wait_until(lambda: processes_mentioning(str(out)) == [], "the runs' own stop", 120)
    for run_dir in run_dirs:
        assert not (run_dir / "result.json").exists()
    resumed = finish(start_python(*args), timeout=HANG_S)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert ("restoring the Ray Tune experiment" in resumed.stderr) == (how == "SIGKILL")
    for run_dir in run_dirs:
        result = json.loads((run_dir / "result.json").read_text())
        assert result["status"] == "ok" and result["step"] == 3000, result
        logged = [json.loads(ln)["step"] for ln in (run_dir / "metrics.jsonl").open()]
        assert logged == sorted(set(logged)) and logged[-1] == 3000
    assert (out / "tune.md").is_file()


def test_a_failed_restore_of_tunes_run_state_is_one_line(ray_address):
    """After kill -9 of the driver, Tune's controller may find no run state to restore (killed
    before its first save) and logs "Failed to restore the run state." with a 30-line traceback
    (tune_controller.py), then restarts the experiment, which is right for a study."""
    import logging

    from lipgan.study.tune_executor import CONTROLLER_LOGGER, TuneExecutor

    class Shown(logging.Handler):  # what reaches a handler (Ray's prints to stderr)
        def emit(self, record):
            shown.append(record)

    controller, shown, handler = logging.getLogger(CONTROLLER_LOGGER), [], Shown()
    controller.addHandler(handler)
    try:
        executor, lines = TuneExecutor(), []
        executor.start()
        executor.log = lines.append  # as lipgan.study.runner.execute sets it
        try:
            raise ValueError("Tried to resume experiment from directory 'X', but no state file")
        except ValueError:  # what the controller does, with its own logger
            controller.exception("Failed to restore the run state.")
        assert shown == []
        assert lines == [
            "warning: Ray Tune could not restore its experiment's run state (ValueError: Tried "
            "to resume experiment from directory 'X', but no state file); it restarts the "
            "experiment: finished runs are read back, the others resume from their checkpoints"
        ]
        controller.error("another error")  # passes as it is
        assert [r.getMessage() for r in shown] == ["another error"]
    finally:
        controller.removeHandler(handler)


@pytest.mark.slow
def test_a_tune_driver_that_died_before_tunes_first_save_restores_with_one_line(
    ray_address, tmp_path, monkeypatch
):
    """The real case: a driver killed after ``tune.Tuner`` wrote ``tuner.pkl`` but before the
    controller saved its first run state. The same cells then restore the experiment, Tune
    cannot restore its run state and restarts it; the study says so in one line, and each
    trial reads back its run's finished result (nothing trains here)."""
    import logging

    from ray import tune as ray_tune

    from lipgan.study.spec import Cell
    from lipgan.study.tune_executor import CONTROLLER_LOGGER, TUNE_DIR, TuneExecutor

    cells = [Cell("8gaussians", "gradient_penalty", seed, 10, 1000) for seed in range(2)]
    for cell in cells:
        cell_dir(tmp_path, cell).mkdir(parents=True)
        result = {"status": "ok", "metrics": {"w1": 0.1 + cell.seed}, "cell": cell.as_dict()}
        (cell_dir(tmp_path, cell) / "result.json").write_text(json.dumps(result))

    class Died(Exception):
        pass

    def die(self):
        raise Died

    monkeypatch.setattr(ray_tune.Tuner, "fit", die)  # the driver dies inside fit
    with pytest.raises(Died):
        for _ in TuneExecutor().run(tmp_path, cells, 1):
            pass
    assert list((tmp_path / TUNE_DIR).glob("*/tuner.pkl"))  # left for Tuner.restore
    monkeypatch.undo()

    class Shown(logging.Handler):
        def emit(self, record):
            shown.append(record.getMessage())

    controller, shown, handler = logging.getLogger(CONTROLLER_LOGGER), [], Shown()
    controller.addHandler(handler)
    try:
        executor, lines = TuneExecutor(), []
        executor.start()
        executor.log = lines.append
        results = dict(executor.run(tmp_path, cells, 1))
    finally:
        controller.removeHandler(handler)
    assert [results[c]["metrics"]["w1"] for c in cells] == [0.1, 1.1]
    assert lines[0].startswith("restoring the Ray Tune experiment"), lines
    assert lines[1].startswith(
        "warning: Ray Tune could not restore its experiment's run state ("
    ), lines
    assert len(lines) == 2 and not [m for m in shown if "Failed to restore" in m], shown
    assert not list((tmp_path / TUNE_DIR).glob("*/tuner.pkl"))  # ended: nothing to restore
