"""Shared fixtures. Every test runs on tiny synthetic data; TFDS data goes to a per-session folder."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
REPO = Path(__file__).resolve().parents[1]


#: Work units by cost, the heaviest first: the slowest tests of the last whole-suite run
#: (``pytest -q -n 2 --dist loadscope --durations=25`` on 2 idle cores, 2026-12-06: the replica
#: probes 180 s, the study module 175 s, the notebook 85 s, the kit's replica probes 71 s, the
#: halving and tune end-to-end runs ~58 s each, ...) summed per module with its other slow tests.
#: Under the README's test command the workers take the units in this order and then the rest
#: (each well under a minute) in collection order, so no minute-long unit starts while the other
#: worker runs out of work. A unit is a test module, or a name from SHARED_UNITS.
HEAVIEST_FIRST = (
    "@replica_probes",
    "tests/test_study.py",
    "tests/test_lifecycle.py",
    "tests/test_fig1.py",
    "tests/test_bench.py",
    "tests/test_testing_kit.py",
    "tests/test_faults_hostile_input.py",
    "tests/test_certified.py",
    "tests/test_faults_silent_loss.py",
    "tests/test_notebook_walkthrough.py",
    "tests/test_python_api.py",
    "tests/test_tune.py",
    "tests/test_halving.py",
    "tests/test_study_curve.py",
    "tests/test_bcop.py",
    "tests/test_aoc.py",
    "tests/test_faults_run.py",
    "tests/test_cli.py",
    "tests/test_python_run_dirs.py",
    "tests/test_cayley_soc.py",
    "tests/test_faults_study.py",
    "tests/test_testbeds.py",
    "tests/test_multi_worker_run.py",
    "tests/test_distributed.py",
    "tests/test_image_runs.py",
    "tests/test_lazy_regularization.py",
    "tests/test_third_party_plugin.py",
)

#: Tests (node-id prefixes) that share a session fixture, so one xdist worker runs them as one
#: unit and the fixture is built once: the replica layouts' probes (``replica_probes``).
#: A table, not ``xdist_group`` marks: xdist 3.8's ``loadgroup`` groups by rewriting node ids,
#: which pytest 9.2 no longer honours (pytest-dev/pytest-xdist#1386: the marks are silently
#: ignored).
SHARED_UNITS = {
    "@replica_probes": (
        "tests/test_replica_invariance.py",
        "tests/test_lazy_regularization.py::"
        "test_lazy_penalty_reference_dragan_and_synced_spectral_norm_are_replica_invariant",
    ),
}


def work_unit(nodeid: str) -> str:
    """The unit tests/xdist_scheduling.py gives the test ``nodeid`` to one worker with."""
    for unit, prefixes in SHARED_UNITS.items():
        if any(nodeid == p or nodeid.startswith((p + "::", p + "[")) for p in prefixes):
            return unit
    return nodeid.split("::", 1)[0]


def pytest_collection_modifyitems(config, items):
    """On an xdist worker, the heaviest units first (a stable sort: the rest keep their order)."""
    if hasattr(config, "workerinput"):
        rank = {unit: i for i, unit in enumerate(HEAVIEST_FIRST)}
        items.sort(key=lambda item: rank.get(work_unit(item.nodeid), len(rank)))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadscope``: whole modules and shared units, heaviest first
    (tests/xdist_scheduling.py)."""
    if config.getoption("dist") == "loadscope":
        from tests.xdist_scheduling import ModulesHeaviestFirst

        return ModulesHeaviestFirst(config, log)
    return None


@pytest.fixture(scope="session", autouse=True)
def tfds_data_dir(tmp_path_factory):
    """Isolate TFDS: offline builders are generated here, nothing is read from ~/tensorflow_datasets."""
    path = tmp_path_factory.mktemp("tfds")
    old = os.environ.get("TFDS_DATA_DIR")
    os.environ["TFDS_DATA_DIR"] = str(path)
    yield path
    if old is None:
        os.environ.pop("TFDS_DATA_DIR", None)
    else:
        os.environ["TFDS_DATA_DIR"] = old


@pytest.fixture(scope="session")
def tiny_run_at_5(tmp_path_factory):
    """A 5-step ``lipgan run`` with tests.helpers.TINY (its one checkpoint at step 5), trained
    once per pytest process: the tests that damage, refuse or extend such a run take a copy
    (``tiny_run``) instead of training their own (~3 CPU-seconds each)."""
    from tests.helpers import TINY, invoke

    run_dir = tmp_path_factory.mktemp("tiny_run") / "run"
    result = invoke("run", *TINY, "--bind", "train.steps=5", "--run-dir", str(run_dir))
    assert result.exit_code == 0, result.output
    return run_dir


@pytest.fixture
def tiny_run(tiny_run_at_5, tmp_path):
    """A fresh copy of ``tiny_run_at_5`` at ``tmp_path / "run"``, where the tests trained before."""
    import shutil

    copy = tmp_path / "run"
    shutil.copytree(tiny_run_at_5, copy, symlinks=True)  # .lock too: a flock is not copied
    return copy


def free_port() -> int:
    """A currently free TCP port on the loopback interface."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_python(*args, env=None):
    """Start a Python subprocess (a fresh TF runtime, so it can choose its own devices)."""
    full_env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", **(env or {})}
    return subprocess.Popen(
        [sys.executable, *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=full_env,
        cwd=REPO,
    )


def finish(proc, timeout=600) -> subprocess.CompletedProcess:
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        err += f"\n[killed after {timeout}s]"
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def run_python(*args, env=None, timeout=600) -> subprocess.CompletedProcess:
    return finish(start_python(*args, env=env), timeout)


#: The built-in constraints compared on every replica layout (tests/test_replica_invariance.py).
REPLICA_CONSTRAINTS = ("none", "gradient_penalty", "weight_clip", "spectral_norm")
REPLICA_LAYOUTS = ("default", "mirrored:1", "mirrored:2", "mirrored:4", "multi_worker")
#: Compared on 1 vs 2 replicas (tests/test_lazy_regularization.py): a lazy penalty's active and
#: inactive updates, DRAGAN's all-reduced global-batch std, spectral norm's broadcast u and σ.
LAZY_REPLICA_SPECS = ("gradient_penalty:every=3", "dragan:noise=reference", "spectral_norm")


@pytest.fixture(scope="session")
def replica_probes():
    """tests/replica_probe.py once per layout for the session (``.get(*layouts)``), shared by
    the modules that compare layouts: the 1- and 2-replica processes also run the lazy specs.
    Under xdist one worker runs every test that uses it (``SHARED_UNITS``), so the probes run
    once."""
    from tests.helpers import ReplicaProbes

    lazy = tuple(s for s in LAZY_REPLICA_SPECS if s not in REPLICA_CONSTRAINTS)
    specs = {layout: REPLICA_CONSTRAINTS for layout in REPLICA_LAYOUTS}
    for layout in ("default", "mirrored:2"):
        specs[layout] = REPLICA_CONSTRAINTS + lazy
    return ReplicaProbes(specs)
