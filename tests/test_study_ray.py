"""`lipgan study --executor ray`: the same study on a local Ray instance, its faults and stops.

The Ray tests need the optional extra (``pip install 'lipgan[ray]'``), which CI installs after
the plain test run (.ci/run) so that they run there; every test that needs no Ray (a missing Ray
is simulated) runs everywhere. One Ray instance (loopback, 2 CPUs) is shared by the module:
starting one costs seconds.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from lipgan.cli.main import cli
from lipgan.study import QUICK, StudySpec, run_study
from lipgan.study.runner import cell_dir
from tests.helpers import (
    CLI,
    TINY,
    processes_mentioning,
    resume_study,
    returns_within,
    stop_study_once_cells_log,
    wait_until,
)
from tests.test_lifecycle import checkpoint_steps

#: Fields of a cell's result that measure time, not training: everything else must be equal.
TIMING = ("seconds_per_iteration", "time_includes_compile")


def _one_line_error(args) -> str:
    result = CliRunner().invoke(cli, ["study", *map(str, args)])
    assert result.exit_code == 1, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    return lines[0]


def test_a_missing_ray_is_one_line_that_says_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    out = tmp_path / "never"
    line = _one_line_error(
        ["--quick", "--constraint", "gradient_penalty", "--executor", "ray"] + ["--out", out]
    )
    assert "pip install 'lipgan[ray]'" in line, line
    assert not out.exists()  # refused before the study dir is written


def test_options_of_the_other_executor_and_bad_resources_are_one_line(tmp_path, monkeypatch):
    out = tmp_path / "never"
    base = ["--quick", "--constraint", "gradient_penalty", "--out", out]
    line = _one_line_error([*base, "--storage", tmp_path])
    assert "--storage is an option of --executor ray" in line
    line = _one_line_error([*base, "--executor", "ray", "--jobs", "2"])
    assert "--jobs is an option of --executor local, not of ray" in line
    pytest.importorskip("ray")  # the resources are parsed once Ray is known to be there
    line = _one_line_error([*base, "--executor", "ray", "--cell-resources", "num_cpus=one"])
    assert "'num_cpus=one' is not NAME=NUMBER" in line
    assert not out.exists()


def test_cell_resources_become_ray_options():
    pytest.importorskip("ray")
    from lipgan.study.executors import RayExecutor, parse_resources

    executor = RayExecutor(resources=parse_resources("num_gpus=0.25, memory=2e9,tpu_slot=1"))
    options = executor._options()
    assert options["num_cpus"] == 1.0 and options["num_gpus"] == 0.25  # one CPU unless told
    assert options["memory"] == 2_000_000_000 and options["resources"] == {"tpu_slot": 1.0}
    assert options["max_retries"] > 0 and options["retry_exceptions"] is False
    assert executor.default_threads == 1


@pytest.fixture(scope="module")
def ray_address():
    """A local Ray instance for the whole module; the study uses it as the initialized Ray of
    this process, and a driver in a subprocess connects to it by its address."""
    ray = pytest.importorskip("ray")
    # Started with SIGINT ignored, as under `nohup lipgan study --executor ray ... &` (a shell
    # starts background jobs so, and Ray's processes inherit it): ray.cancel must still stop cells.
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    finally:
        signal.signal(signal.SIGINT, previous)
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()


def _quick(out: Path, *executor: str) -> dict:
    args = ["study", "--quick", "--constraint", "gradient_penalty", "--quiet", "--out", out]
    result = CliRunner().invoke(cli, [*map(str, args), *executor])
    assert result.exit_code == 0, result.output
    return json.loads((out / "study.json").read_text())


def _without_timing(text: str) -> list[str]:
    """study.md without the command line and the columns of wall times (ms / iteration, seconds
    to target)."""
    lines, columns = [], []
    for line in text.splitlines():
        if line.startswith("Command:"):
            continue
        if not line.startswith("|"):
            columns = []
        else:
            cells = line.split("|")
            if not columns and not set(line) <= set("|-: "):
                columns = [i for i, c in enumerate(cells) if "ms /" in c or "seconds" in c]
            line = "|".join(c for i, c in enumerate(cells) if i not in columns)
        lines.append(line)
    return lines


def _untimed(value):
    """``value`` (study.json, a cell's result) without what measures time: keys in TIMING, keys
    named or ending in ``seconds`` (curve points, the report's "seconds to target")."""
    if isinstance(value, dict):
        return {
            k: _untimed(v)
            for k, v in value.items()
            if k not in TIMING and not k.endswith("seconds") and k != "command"
        }
    if isinstance(value, list):
        return [_untimed(v) for v in value]
    return value


def _spec_fields(spec: dict) -> dict:
    """A study.json ``spec`` back as StudySpec arguments (JSON turned its tuples into lists)."""
    return {k: tuple(v) if isinstance(v, list) else v for k, v in spec.items()}


@pytest.mark.slow
def test_the_quick_study_on_ray_equals_the_local_one(ray_address, tmp_path):
    """Same cells, same metrics and quality curves to the bit (one single-threaded TF per cell,
    seeded), same samples, same report but for wall times and the command line. The Ray run keeps
    its run dirs in another --storage, as nodes without a shared file system would: result.json
    and samples.npy reach the study dir through Ray, and the report is complete there."""
    local = _quick(tmp_path / "local", "--jobs", "2")
    storage = tmp_path / "storage"
    on_ray = _quick(tmp_path / "ray", "--executor", "ray", "--storage", str(storage))
    assert len(on_ray["cells"]) == QUICK["seeds"]
    cells = StudySpec(**_spec_fields(local["spec"])).cells()
    assert (cell_dir(storage, cells[0]) / "curve.jsonl").is_file()
    for a, b in zip(local["cells"], on_ray["cells"]):
        assert a["status"] == b["status"] == "ok", (a.get("error"), b.get("error"))
        assert a["metrics"] and a["metrics"] == b["metrics"]
        cell = cells[a["cell"]["seed"]]
        for name in ("samples.npy", "result.json"):
            assert (cell_dir(tmp_path / "ray", cell) / name).is_file()
        np.testing.assert_array_equal(
            np.load(cell_dir(tmp_path / "local", cell) / "samples.npy"),
            np.load(cell_dir(tmp_path / "ray", cell) / "samples.npy"),
        )
    assert _untimed(local) == _untimed(on_ray)  # every cell, the summary, the spec
    md = [_without_timing((tmp_path / d / "study.md").read_text()) for d in ("local", "ray")]
    assert md[0] == md[1]
    assert any(line.startswith("| gradient_penalty |") for line in md[0])


def _ppid(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def _cmd(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")


@pytest.mark.slow
def test_a_killed_ray_worker_is_retried_and_the_cell_resumes_from_its_checkpoint(
    ray_address, tmp_path
):
    """SIGKILL to the Ray worker running a cell (the OOM killer, a lost process): the cell sees
    its parent gone, stops itself with a checkpoint (one SIGTERM), Ray retries the task, and the
    retry continues from that checkpoint to the end; no cell process outlives the study."""
    from lipgan.study.executors import RayExecutor

    out, steps = tmp_path / "killed", 3000
    bindings = [b for b in TINY if b != "--bind"]
    bindings += ["train.eval_every=0", "train.checkpoint_every=0"]  # saves only on the signal
    spec = StudySpec(("gradient_penalty",), ("8gaussians",), 1, steps, 1000, tuple(bindings))
    run_dir = cell_dir(out, spec.cells()[0])
    done = {}
    study = threading.Thread(
        target=lambda: done.update(r=run_study(spec, out, executor=RayExecutor()))
    )
    study.start()
    log = run_dir / "metrics.jsonl"
    wait_until(
        lambda: log.is_file() and log.read_text().strip(), "the cell's first logged step", 300
    )
    (cell,) = [p for p in processes_mentioning(str(run_dir)) if "lipgan.config.cells" in _cmd(p)]
    worker = _ppid(cell)  # the Ray worker that runs the cell's task
    assert "ray" in _cmd(worker).lower(), _cmd(worker)
    os.kill(worker, signal.SIGKILL)
    study.join(timeout=600)
    assert not study.is_alive() and "r" in done
    (result,) = done["r"].results
    assert result["status"] == "ok", result.get("error")
    assert result["step"] == steps
    stop_step = checkpoint_steps(run_dir)[0]
    assert 0 < stop_step < steps  # saved by the orphaned cell (interval saves are off)
    logged = [json.loads(ln)["step"] for ln in log.open()]
    assert logged == sorted(set(logged)) and logged[-1] == steps  # resumed, not restarted
    assert processes_mentioning(str(out)) == []


@pytest.mark.slow
def test_a_signalled_ray_driver_cancels_its_tasks_and_the_same_command_resumes(
    ray_address, tmp_path
):
    """SIGTERM to `lipgan study --executor ray` (the driver, connected to a running Ray): each
    running cell's task is cancelled, the cell saves a checkpoint and records nothing; exit 143
    with the resume line; the same command then finishes both cells from their checkpoints."""
    out, steps = tmp_path / "stopped", 3000
    args = ["-c", CLI, "study", "--dataset", "8gaussians", "--constraint", "gradient_penalty"]
    args += ["--seeds", "2", "--steps", str(steps), "--out", out, "--executor", "ray"]
    args += ["--ray-address", ray_address]
    args += [*TINY, "--bind", "train.eval_every=0", "--bind", "train.checkpoint_every=0"]
    spec = StudySpec(("gradient_penalty",), ("8gaussians",), 2, steps)
    run_dirs = [cell_dir(out, cell) for cell in spec.cells()]
    stop_study_once_cells_log(args, run_dirs, out)  # the cancelled tasks waited for their cells
    saved = [checkpoint_steps(run_dir) for run_dir in run_dirs]
    assert all(saved), saved  # interval saves are off: saved on the signal (or at the end)
    # A cell Ray started late may still be evaluating when the other one is stopped mid-run; at
    # least one is stopped mid-run, by its cancelled task.
    assert any(0 < s[-1] < steps for s in saved), saved

    resume_study(args, run_dirs, out, steps)


def test_a_task_restores_the_sigint_handler_that_ray_cancel_needs():
    """A worker that inherited SIGINT ignored (Ray started from a background job) gets Python's
    handler back, so ray.cancel's KeyboardInterrupt reaches the task."""
    from lipgan.study.executors import accept_cancel

    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        accept_cancel()
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
    finally:
        signal.signal(signal.SIGINT, previous)


ORPHAN = """
import os, signal, sys, time
from lipgan.run.interrupt import stop_when_orphaned
def record(line):
    with open(sys.argv[1], "a") as f:
        f.write(line + "\\n")
terms = []
signal.signal(signal.SIGTERM, lambda *a: (terms.append(1), record("TERM")))
watcher = stop_when_orphaned(os.getppid(), poll_seconds=0.05)
time.sleep(0.5)  # ten looks at a living parent: any TERM now is one too many
record("ready")
deadline = time.monotonic() + 600  # never left behind, whatever happens to the test
while not terms and time.monotonic() < deadline:
    time.sleep(0.05)
watcher.join(600)  # the watcher has sent its signal and ended: nothing more can come from it
time.sleep(1.0)  # and nothing from elsewhere (PR_SET_PDEATHSIG signals again, see its docstring)
record("done")
"""

PARENT = """
import subprocess, sys, time
subprocess.Popen([sys.executable, "-c", sys.argv[1], sys.argv[2]], start_new_session=True)
time.sleep(600)
"""


def test_an_orphaned_cell_sends_itself_exactly_one_sigterm(tmp_path):
    """What a cell under Ray does when its worker is killed
    (lipgan.run.interrupt.stop_when_orphaned): one SIGTERM, the graceful stop; a second one would
    mean "abort without a checkpoint"."""
    import subprocess

    record = tmp_path / "record"
    lines = lambda: record.read_text().split() if record.exists() else []  # noqa: E731
    parent = subprocess.Popen([sys.executable, "-c", PARENT, ORPHAN, str(record)])
    try:
        wait_until(lambda: "ready" in lines(), "the orphan-to-be starting its watcher")
        assert lines() == ["ready"]  # no TERM while its parent lives
    finally:
        parent.kill()
        parent.wait()
    wait_until(lambda: "done" in lines(), "the orphan's SIGTERM and exit")
    assert lines() == ["ready", "TERM", "done"]


def test_a_retry_waits_for_the_killed_attempt_to_release_the_run_dir(tmp_path):
    import fcntl

    from lipgan.study.executors import wait_unlocked

    lock = tmp_path / ".lock"
    assert wait_unlocked(lock, 0.1)  # no run yet
    lock.touch()
    holder = open(lock)
    fcntl.flock(holder, fcntl.LOCK_EX)
    assert not wait_unlocked(lock, 0.3)  # held: waits, then gives up
    threading.Timer(0.3, holder.close).start()  # the old cell exits: the kernel drops its flock
    started = time.monotonic()
    assert wait_unlocked(lock, 30)
    assert time.monotonic() - started >= 0.25


def test_the_driver_lands_results_it_does_not_see_and_a_lost_worker_is_not_a_result(tmp_path):
    """RayExecutor._land with Ray's own errors and payloads (no cluster needed)."""
    ray = pytest.importorskip("ray")
    from lipgan.study.executors import RAY_MAX_RETRIES, RayExecutor

    cell = StudySpec(("gradient_penalty",), ("8gaussians",), 1, 10).cells()[0]
    run_dir = cell_dir(tmp_path, cell)
    executor = RayExecutor()

    class Ray:  # ray.get of a task that raised ``error`` or returned ``value``
        exceptions = ray.exceptions

        def __init__(self, value=None, error=None):
            self.value, self.error = value, error

        def get(self, ref):
            if self.error:
                raise self.error
            return self.value

    executor.ray = Ray(error=ray.exceptions.WorkerCrashedError())
    killed = executor._land(tmp_path, cell, None)
    assert killed["status"] == "killed" and f"died {RAY_MAX_RETRIES + 1} times" in killed["error"]
    assert not (run_dir / "result.json").exists()  # nothing recorded: a re-run retries it

    executor.ray = Ray(error=ray.exceptions.RaySystemError("boom\nmore"))
    failed = executor._land(tmp_path, cell, None)
    assert failed["status"] == "failed" and failed["error"] == "RaySystemError: System error: boom"
    assert json.loads((run_dir / "result.json").read_text())["status"] == "failed"

    result = {"status": "ok", "metrics": {"w1": 0.5}, "cell": cell.as_dict()}
    payload = {"result": result, "files": {"samples.npy": b"npy bytes"}}
    executor.ray = Ray(value=payload)  # a worker on another file system
    assert executor._land(tmp_path, cell, None) == result
    assert json.loads((run_dir / "result.json").read_text()) == result
    assert (run_dir / "samples.npy").read_bytes() == b"npy bytes"
    (run_dir / "samples.npy").write_bytes(b"the worker's own copy")  # shared storage: kept
    executor._land(tmp_path, cell, None)
    assert (run_dir / "samples.npy").read_bytes() == b"the worker's own copy"

    executor.ray, executor.signum = Ray(error=ray.exceptions.TaskCancelledError()), 15
    assert executor._land(tmp_path, cell, None) is None  # cancelled by a stop: not a result


# --- issue #42: what Ray would wait on forever, refused in one line ------------------------------


@pytest.mark.parametrize(
    "resources, named",
    [("unknown=1", "no resource 'unknown'"), ("num_cpus=1000", "CPU=2 in all")],
)
def test_cell_resources_the_cluster_lacks_are_refused_at_start_naming_them(
    ray_address, tmp_path, resources, named
):
    """A task asking for more than the cluster has would wait forever without a word."""
    from lipgan.core.errors import ConfigError
    from lipgan.study.executors import RayExecutor, parse_resources

    executor = RayExecutor(resources=parse_resources(resources))
    with pytest.raises(ConfigError, match=f"--cell-resources {resources}: .*{named}"):
        returns_within(executor.start)
    out = tmp_path / "q"
    args = ["--quick", "--constraint", "gradient_penalty", "--out", out, "--executor", "ray"]
    line = _one_line_error([*args, "--cell-resources", resources])
    assert named in line, line
    assert not (out / "runs").exists() and not (out / "sessions").exists()  # nothing recorded


def test_a_storage_no_worker_can_write_is_refused_naming_the_path(ray_address, tmp_path):
    """Not a failed seed for good per cell, with Ray's coloured traceback as its error."""
    from lipgan.core.errors import ConfigError
    from lipgan.study.executors import RayExecutor

    with pytest.raises(ConfigError, match="--storage /proc/nope: cannot write there"):
        returns_within(RayExecutor(storage="/proc/nope").start)
    out = tmp_path / "q"
    args = ["--quick", "--constraint", "gradient_penalty", "--out", out, "--executor", "ray"]
    line = _one_line_error([*args, "--storage", "/proc/nope"])
    assert line.startswith("Error: --storage /proc/nope: cannot write there from a Ray worker")
    assert "\x1b[" not in line
    assert not list(out.rglob("result.json")) and not (out / "sessions").exists()


def test_a_ray_address_where_no_cluster_answers_is_one_line_within_seconds(tmp_path):
    """``ray.init`` retried 127.0.0.1:1 for minutes, and took 38 s to stop after SIGTERM."""
    from tests.conftest import finish, start_python

    pytest.importorskip("ray")
    out = tmp_path / "never"
    args = ["-c", CLI, "study", "--quick", "--quiet", "--constraint", "gradient_penalty"]
    args += ["--out", out]
    # a hang guard: TF's import takes up to ~30 s on 2 busy cores, the refusal itself is at once
    done = finish(start_python(*args, "--executor", "ray", "--ray-address", "127.0.0.1:1"), 120)
    assert done.returncode == 1, done.stderr[-2000:]
    assert done.stderr.strip().splitlines() == [
        "Error: --ray-address 127.0.0.1:1: no Ray cluster answers there (Connection refused, "
        "waited at most 10s); start one with `ray start --head` or fix the address"
    ]
    assert not (out / "sessions").exists()


@pytest.mark.parametrize(
    "address, says",
    [
        ("not-an-address", "is not HOST:PORT"),
        ("127.0.0.1:99999", "is not HOST:PORT"),
        ("ray://127.0.0.1:port", "is not HOST:PORT"),
        ("127.0.0.1:1", "Connection refused"),
        ("ray://127.0.0.1:1", "Connection refused"),
        ("10.0.0.1:6379", r"no Ray cluster answers there \(timed out, waited at most 1s\)"),
    ],
)
def test_a_malformed_or_unreachable_ray_address_is_one_line(monkeypatch, address, says):
    from lipgan.core.errors import ConfigError
    from lipgan.study import ray_checks

    monkeypatch.setattr(ray_checks, "CONNECT_TIMEOUT", 1.0)
    if address.startswith("10."):  # a host that never answers (here a sandbox may proxy any
        # outbound connection, so the timeout is the socket's, as create_connection raises it)

        def never_answers(where, timeout):
            raise TimeoutError("timed out")

        monkeypatch.setattr(ray_checks.socket, "create_connection", never_answers)
    with pytest.raises(ConfigError, match=says) as info:
        returns_within(lambda: ray_checks.check_address(address), 10)
    assert "\n" not in str(info.value)
    monkeypatch.setenv("RAY_ADDRESS", address)
    with pytest.raises(ConfigError, match=f"^RAY_ADDRESS '?{re.escape(address)}"):
        returns_within(lambda: ray_checks.check_address(None), 10)
