"""Shared fixtures. Every test runs on tiny synthetic data; TFDS data goes to a per-session folder."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
REPO = Path(__file__).resolve().parents[1]


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
    the modules that compare layouts: the 1- and 2-replica processes also run the lazy specs."""
    from tests.helpers import ReplicaProbes

    lazy = tuple(s for s in LAZY_REPLICA_SPECS if s not in REPLICA_CONSTRAINTS)
    specs = {layout: REPLICA_CONSTRAINTS for layout in REPLICA_LAYOUTS}
    for layout in ("default", "mirrored:2"):
        specs[layout] = REPLICA_CONSTRAINTS + lazy
    return ReplicaProbes(specs)
