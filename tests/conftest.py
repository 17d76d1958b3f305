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
