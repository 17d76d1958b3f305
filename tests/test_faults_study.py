"""Faults a hostile user found in ``lipgan study`` and ``lipgan tune`` (issue #42), local executor.

Each test failed on the code before its fix; docs/reliability.md has a row per case. The Ray
cases are in tests/test_study_ray.py and tests/test_tune_ray.py (CI runs those with Ray).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from lipgan.cli.main import cli
from lipgan.core.errors import ConfigError
from lipgan.study import cell as cell_module
from lipgan.study import runner, tables
from lipgan.study.executors import Executor, LocalExecutor, parse_resources
from lipgan.study.runner import cell_dir, execute
from lipgan.study.spec import Cell
from tests.helpers import TINY, processes_mentioning, wait_until

#: A study cell of a few seconds: 10 iterations of the tiny toy run, no curve.
BINDINGS = tuple(TINY[i + 1].replace("=", " = ") for i in range(0, len(TINY), 2))
TINY_CELL = Cell("8gaussians", "gradient_penalty", 0, 10, 1000, BINDINGS, 0)
QUICK = ["study", "--quick", "--constraint", "gradient_penalty", "--quiet"]


def _one_line_error(args, code: int = 1) -> str:
    """The one line a refused command prints (exit ``code``): no traceback, not even one that
    CliRunner would swallow."""
    result = CliRunner().invoke(cli, [*map(str, args)])
    assert isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == code, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.output
    return lines[0]


class _Recording(Executor):
    """Runs nothing: records the cells it is given and yields them as ok."""

    def __init__(self):
        self.ran = []

    def describe(self):
        return "recording"

    def run(self, out, cells, threads):
        for cell in cells:
            self.ran.append(cell)
            yield cell, {"status": "ok", "metrics": {}, "cell": cell.as_dict()}

    def request_stop(self, signum, frame=None):
        self.signum = signum


# --- a malformed result.json -----------------------------------------------------------------


@pytest.mark.parametrize("content", ["[]", "{", '"ok"', '{"status": "ok"}'])
def test_a_result_json_that_is_no_result_is_a_warning_and_the_cell_runs_again(
    tmp_path, capsys, content
):
    cell = Cell("ring", "none", 0, 10, 100)
    path = cell_dir(tmp_path, cell) / "result.json"
    path.parent.mkdir(parents=True)
    path.write_text(
        content if content != '{"status": "ok"}' else json.dumps({"cell": cell.as_dict()})
    )
    executor = _Recording()
    results = execute([cell], tmp_path, executor=executor, threads=1)
    assert executor.ran == [cell] and results[cell]["status"] == "ok"
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"warning: {path} holds ") and line.endswith("runs again"), line


def test_a_result_json_holding_a_list_stops_no_study_command(tmp_path):
    out = tmp_path / "q"
    args = [*QUICK, "--out", out]
    cell = Cell("8gaussians", "gradient_penalty", 0, 100, 2500, (), 50)
    path = cell_dir(out, cell) / "result.json"
    path.parent.mkdir(parents=True)
    path.write_text("[]")
    result = CliRunner().invoke(cli, [*map(str, args), "--report-only"])
    assert isinstance(result.exception, SystemExit) and result.exit_code == 1, result.exception
    assert result.stderr.splitlines() == [
        f"warning: {path} holds a JSON list, not a result; the cell counts as unfinished and "
        "runs again",
        f"Error: {out} holds no finished cell of this study yet: nothing to report",
    ]


# --- a finished cell run again ---------------------------------------------------------------


def test_a_cell_another_driver_finished_is_read_back_not_run(tmp_path, monkeypatch):
    """Two drivers on one --out: the second reaches a cell the first has finished since."""
    finished = {"status": "ok", "metrics": {"w1": 0.1}, "seconds_per_iteration": 0.02}
    finished["cell"] = TINY_CELL.as_dict()
    path = cell_dir(tmp_path, TINY_CELL) / "result.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(finished))
    started = []
    monkeypatch.setattr(runner.CellProcesses, "run", lambda self, *a: started.append(a))
    assert runner.run_cell_process(tmp_path, TINY_CELL, 1) == finished
    assert started == []


def _timed(seed, seconds=0.01, **extra):
    cell = {"dataset": "ring", "constraint": "gp", "seed": seed, "steps": 1000}
    cell |= {"eval_samples": 2500, "bindings": [], "eval_every": 0}
    metrics = {"modes_covered": 8, "high_quality_fraction": 0.9, "reverse_kl": 0.1}
    return {"status": "ok", "cell": cell, "metrics": metrics, "seconds_per_iteration": seconds}


def test_a_row_with_a_seed_whose_timing_was_lost_says_so():
    lost = _timed(1, None)
    lost["timing_lost"] = "this run dir was trained to step 1000 before …"
    md = tables.markdown({"steps": 1000, "seeds": 2, "eval_samples": 2500}, [_timed(0), lost])
    row = next(line for line in md.splitlines() if line.startswith("| gp |"))
    assert "| 10.00 [timed 1/2] |" in row, row
    assert "*[timed k/n]*" in md
    md = tables.markdown({"steps": 1000, "seeds": 2, "eval_samples": 2500}, [_timed(0), _timed(1)])
    assert "timed" not in md  # every seed timed: nothing to say


@pytest.mark.slow
def test_a_finished_cell_run_again_keeps_its_first_timing(tmp_path, capsys):
    """Its result.json cut short: the re-run trains nothing, and reports the training's clock."""
    first = execute([TINY_CELL], tmp_path, executor=LocalExecutor(1), threads=1)[TINY_CELL]
    assert first["status"] == "ok" and first["seconds_per_iteration"] > 0, first
    path = cell_dir(tmp_path, TINY_CELL) / "result.json"
    path.write_text(path.read_text()[:40])  # torn
    again = execute([TINY_CELL], tmp_path, executor=LocalExecutor(1), threads=1)[TINY_CELL]
    assert "holds unreadable" in capsys.readouterr().err
    for key in cell_module.TIMING_KEYS:
        assert again[key] == first[key], key
    assert again["metrics"] == first["metrics"] and "timing_lost" not in again
    # A run dir whose timing was not kept (an older lipgan's): the fields say it was lost.
    (cell_dir(tmp_path, TINY_CELL) / cell_module.TIMING_FILE).unlink()
    path.unlink()
    lost = execute([TINY_CELL], tmp_path, executor=LocalExecutor(1), threads=1)[TINY_CELL]
    assert lost["seconds_per_iteration"] is None and lost["train_seconds"] is None
    assert "timing was not kept" in lost["timing_lost"]


# --- the cell's log ------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_cell_orphaned_by_kill_9_of_the_study_still_writes_its_log(tmp_path):
    failing = Cell("8gaussians", "gradient_penalty", 0, 10, 1000, ("train.n_critic = 2.5",), 0)
    driver = (
        "import json, sys; from pathlib import Path; from lipgan.study.runner import execute; "
        "from lipgan.study.executors import LocalExecutor; from lipgan.study.spec import Cell; "
        "execute([Cell.from_dict(json.loads(sys.argv[2]))], Path(sys.argv[1]), "
        "executor=LocalExecutor(1), threads=1)"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", driver, str(tmp_path), json.dumps(failing.as_dict())],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    run_dir = cell_dir(tmp_path, failing)
    marker = str(run_dir / "cell.json")
    try:
        wait_until(lambda: processes_mentioning(marker), "the cell process", 120)
        proc.kill()  # SIGKILL: the study driver never sees its cell end
        proc.wait()
        wait_until(lambda: (run_dir / "result.json").is_file(), "the orphan's result", 180)
        error = json.loads((run_dir / "result.json").read_text())["error"]
        assert "train.n_critic" in error
        assert f"Error: {error}" in (run_dir / "cell.log").read_text()
    finally:
        proc.kill()
        for pid in processes_mentioning(marker):
            os.kill(pid, signal.SIGKILL)


# --- --out ---------------------------------------------------------------------------------------


def _immutable(path: Path) -> None:
    """Make ``path`` unwritable for this process: chmod for a user, chattr +i for root."""
    if os.geteuid() != 0:
        path.chmod(0o555)
    else:
        subprocess.run(["chattr", "+i", str(path)], check=True)


def _mutable(path: Path) -> None:
    if os.geteuid() != 0:
        path.chmod(0o755)
    else:
        subprocess.run(["chattr", "-i", str(path)], check=True)


@pytest.mark.parametrize("command", ["study", "tune"])
def test_an_out_that_cannot_be_a_study_dir_is_one_line_and_nothing_is_written(
    tmp_path, monkeypatch, command
):
    args = [*QUICK] if command == "study" else ["tune", "--configs", "1", "--quiet"]
    afile = tmp_path / "afile"
    afile.write_text("x")
    line = _one_line_error([*args, "--out", afile])
    assert line == f"Error: --out {afile} is a file, not a directory; pick another --out"
    line = _one_line_error([*args, "--out", afile / "sub"])
    assert f"{afile} is a file, so no directory can be made under it" in line
    assert afile.read_text() == "x"
    locked = tmp_path / "locked"
    locked.mkdir()
    _immutable(locked)
    try:
        line = _one_line_error([*args, "--out", locked])
        assert line.startswith(f"Error: --out {locked}: {locked} is not writable"), line
        line = _one_line_error([*args, "--out", locked / "sub"])
        assert "is not writable" in line
        line = _one_line_error([*args, "--out", locked, "--report-only"])
        assert "is not writable" in line
        assert list(locked.iterdir()) == []  # no sessions/*.json, no spec.json
    finally:
        _mutable(locked)
    monkeypatch.chdir(tmp_path)
    before = sorted(tmp_path.iterdir())
    line = _one_line_error([*args, "--out", ""])
    assert line == "Error: --out '' is empty; give the study directory"
    assert sorted(tmp_path.iterdir()) == before


def test_an_out_under_proc_is_one_line(tmp_path):
    line = _one_line_error([*QUICK, "--out", "/proc/nope"])
    assert line.startswith("Error: --out /proc/nope: "), line


# --- options -------------------------------------------------------------------------------------


def test_tune_runs_as_many_cells_at_once_as_jobs_says(tmp_path, monkeypatch):
    from lipgan.study import tune

    seen = []

    def run_tune(spec, out, *, executor=None, **kwargs):
        seen.append(executor)
        raise ConfigError("stop here")

    monkeypatch.setattr(tune, "run_tune", run_tune)
    _one_line_error(["tune", "--jobs", "1", "--out", tmp_path / "t"])
    assert isinstance(seen[0], LocalExecutor) and seen[0].jobs == 1
    _one_line_error(["tune", "--out", tmp_path / "t"])
    assert seen[1].jobs == runner.default_jobs()[0]


def test_each_command_offers_only_the_executors_it_runs():
    def executor_help(command: str) -> str:
        text = CliRunner().invoke(cli, [command, "--help"], terminal_width=1000).output
        return next(line for line in text.splitlines() if "--executor" in line)

    assert "tune" not in executor_help("study") and "ray" in executor_help("study")
    assert "tune (one Ray Tune trial per run)" in executor_help("tune")


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "-1"])
def test_cell_resources_must_be_finite_numbers(value):
    with pytest.raises(ConfigError, match=f"'num_cpus={value}' is not NAME=NUMBER with a finite"):
        parse_resources(f"num_cpus={value}")


def test_tune_says_which_installed_constraints_it_leaves_out(tmp_path, monkeypatch):
    from lipgan.core import plugins
    from lipgan.core.constraint import Constraint

    class ThirdParty(Constraint):
        name = "third_party"

    real = plugins.load_registry

    def load_registry(*args, **kwargs):
        discovery = real(*args, **kwargs)
        discovery.registry.add("constraint", ThirdParty, plugin="tp", source="lipgan-tp 0.1")
        return discovery

    monkeypatch.setattr(plugins, "load_registry", load_registry)
    result = CliRunner().invoke(cli, ["tune", "--report-only", "--out", str(tmp_path / "t")])
    assert result.exit_code == 1, result.output
    assert result.stderr.splitlines()[0] == (
        "tune: leaves out constraint 'third_party' (plugin 'tp' (lipgan-tp 0.1)): ThirdParty "
        "declares no search_space; declare a search_space to tune it (docs/plugins.md)"
    )
    assert len(result.stderr.splitlines()) == 2  # and the report's own line


def test_a_run_dir_that_cannot_be_written_is_no_failed_seed(tmp_path):
    """The storage's fault, not the method's: nothing is recorded, the study stops in one line
    (a failed row would stay in the table for good, even after a re-run on good storage)."""
    (tmp_path / "runs").write_text("a file where the run dirs go")
    with pytest.raises(ConfigError, match=r"1 cell\(s\) could not use their run dir \(.*cannot "
                       r"write its run dir .* \(Not a directory\)\)"):  # fmt: skip
        execute([TINY_CELL], tmp_path, executor=LocalExecutor(1), threads=1)
    assert not list(tmp_path.rglob("result.json"))


def _scripted_processes(monkeypatch, outcomes):
    """CellProcesses.run writing each next scripted result.json, as a cell process would."""
    calls = []

    def run(self, args, env):
        run_dir = Path(args[1])
        outcome = outcomes[len(calls)]
        calls.append(outcome)
        result = {**outcome, "cell": json.loads(Path(args[0]).read_text())}
        (run_dir / "result.json").write_text(json.dumps(result))
        return subprocess.CompletedProcess(args, 0 if outcome["status"] == "ok" else 1, "", "")

    monkeypatch.setattr(runner.CellProcesses, "run", run)
    return calls


def test_a_cell_that_crashes_once_is_run_again_before_its_failure_counts(tmp_path, monkeypatch):
    """A TensorFlow crash is the machine's, not the config's: a halving search that recorded it
    would drop that config for good (it once dropped the exhaustive search's choice)."""
    crash = {"status": "failed", "error": "TypeError: boom", "unexpected": True}
    calls = _scripted_processes(monkeypatch, [crash, {"status": "ok", "metrics": {}}])
    result = runner.run_cell_process(tmp_path, TINY_CELL, 1)
    assert len(calls) == 2
    assert result["status"] == "ok" and result["first_try"] == "TypeError: boom"
    run_dir = cell_dir(tmp_path, TINY_CELL)
    assert json.loads((run_dir / "result.json").read_text())["first_try"] == "TypeError: boom"
    assert json.loads((run_dir / "result.first-try.json").read_text())["error"] == "TypeError: boom"


def test_a_failure_the_method_explains_is_recorded_at_once(tmp_path, monkeypatch):
    diverged = {"status": "failed", "error": "NonFiniteLossError: the critic loss is nan"}
    calls = _scripted_processes(monkeypatch, [diverged])
    assert runner.run_cell_process(tmp_path, TINY_CELL, 1)["status"] == "failed"
    assert len(calls) == 1


def test_a_cell_that_crashes_twice_is_recorded_failed_with_both_errors(tmp_path, monkeypatch):
    crash = {"status": "failed", "error": "TypeError: boom", "unexpected": True}
    calls = _scripted_processes(monkeypatch, [crash, crash])
    result = runner.run_cell_process(tmp_path, TINY_CELL, 1)
    assert len(calls) == 2 and result["status"] == "failed" and result["first_try"]


def test_an_error_raised_while_tracing_is_named_by_its_cause():
    traced = TypeError('in user code:\n\n    File "x.py", line 3, in step\n\n    TypeError: bad')
    assert cell_module.failure_summary(traced) == "TypeError: bad"
    assert cell_module.failure_summary(ValueError("plain\nmore")) == "plain"
