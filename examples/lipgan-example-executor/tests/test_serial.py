"""The example executor from outside: discovered, offered by the CLI, refusing what it lacks, and
running a real (tiny) study whose cells finish in order."""

import json
import subprocess
import sys
from pathlib import Path

import pytest


def lipgan(*args):
    command = str(Path(sys.executable).with_name("lipgan"))
    return subprocess.run([command, *args], capture_output=True, text=True, timeout=900)


def test_registered_as_an_executor():
    from lipgan.core.plugins import load_registry

    entry = {e.name: e for e in load_registry().registry.entries("executor")}["serial"]
    assert entry.source.startswith("lipgan-example-executor")


def test_an_option_it_does_not_take_is_one_line(tmp_path):
    proc = lipgan("study", "--executor", "serial", "--jobs", "2", "--out", str(tmp_path / "s"))
    assert proc.returncode != 0
    assert proc.stderr.strip() == "Error: --jobs is an option of --executor local, not of serial"
    assert not (tmp_path / "s").exists()


@pytest.mark.slow
def test_runs_a_tiny_study_in_order(tmp_path):
    out = tmp_path / "study"
    proc = lipgan(
        "study", "--executor", "serial", "--constraint", "gradient_penalty", "--dataset",
        "8gaussians", "--seeds", "2", "--steps", "5", "--eval-every", "0", "--quiet",
        "--out", str(out),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    results = [json.loads(p.read_text()) for p in out.glob("runs/**/result.json")]
    assert len(results) == 2 and all(r["status"] == "ok" for r in results)
    assert len(json.loads((out / "study.json").read_text())["cells"]) == 2
