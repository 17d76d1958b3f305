"""What a number was measured on: lipgan.core.machine, recorded by the bench and by every study cell."""

import json

import keras
import numpy as np
import tensorflow as tf

from lipgan.core import machine
from lipgan.study import cell as study_cell
from lipgan.study.row_bench import machine as row_bench_machine


def test_describe_names_the_cpu_its_instructions_and_the_numerical_stack():
    info = machine.describe()
    assert set(info) == {
        "cpu", "simd", "nproc", "accelerators", "tensorflow", "keras", "numpy", "python",
    }  # fmt: skip
    assert info["tensorflow"] == tf.__version__ and info["keras"] == keras.__version__
    assert info["numpy"] == np.__version__
    assert info["simd"] in (*machine.SIMD_LEVELS, "unknown")
    assert 1 <= info["nproc"] and info["cpu"]
    model, flags = machine.cpu()
    assert info["cpu"] == model and (info["simd"] == "unknown" or info["simd"] in flags)
    # the tuned study's one-line form names the same CPU and cores
    assert row_bench_machine().startswith(f"{model}, {info['nproc']} cores")


def _cell(tmp_path, run_cell):
    tmp_path.mkdir()
    cell_file = tmp_path / "cell.json"
    cell_file.write_text(json.dumps({"dataset": "ring", "seed": 0}))
    code = study_cell.main([str(cell_file), str(tmp_path / "run")], run_cell)
    return code, json.loads((tmp_path / "run" / "result.json").read_text())


def test_every_cell_result_records_its_machine_finished_or_failed(tmp_path):
    code, result = _cell(tmp_path / "ok", lambda cell, run_dir: {"status": "ok", "step": 1})
    assert code == 0 and result["status"] == "ok" and result["cell"]["seed"] == 0
    assert result["machine"] == machine.describe()

    def fails(cell, run_dir):
        raise RuntimeError("the machine's fault")

    code, result = _cell(tmp_path / "failed", fails)
    assert code == 1 and result["status"] == "failed"
    assert result["machine"]["tensorflow"] == tf.__version__


def test_a_machine_that_cannot_be_described_still_gets_its_result_written(tmp_path, monkeypatch):
    def broken():
        raise ImportError("no tensorflow here")

    monkeypatch.setattr(machine, "describe", broken)
    code, result = _cell(tmp_path / "ok", lambda cell, run_dir: {"status": "ok", "step": 1})
    assert code == 0 and result["status"] == "ok"
    assert result["machine"] == {"error": "no tensorflow here"}
