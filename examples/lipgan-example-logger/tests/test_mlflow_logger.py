"""The example logger from outside: refused in one line without MLflow, and, with a stand-in
``mlflow`` module that records its calls, given the settings once and every logged row."""

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

STAND_IN = textwrap.dedent(
    """
    import json, os
    LOG = os.environ["FAKE_MLFLOW_LOG"]
    def _write(kind, **kw):
        with open(LOG, "a") as f:
            f.write(json.dumps({"kind": kind, **kw}) + "\\n")
    def start_run(run_name=None): _write("start", run_name=run_name)
    def log_params(params): _write("params", params=params)
    def log_metrics(metrics, step): _write("metrics", metrics=metrics, step=step)
    def end_run(): _write("end")
    """
)


def lipgan(*args, env=None):
    command = str(Path(sys.executable).with_name("lipgan"))
    return subprocess.run([command, *args], capture_output=True, text=True, timeout=900, env=env)


def test_without_mlflow_it_is_refused_in_one_line_before_training(tmp_path, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_mlflow(name, *args, **kwargs):
        if name == "mlflow":
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_mlflow)
    from lipgan_example_logger import MlflowLogger

    from lipgan.core.errors import ConfigError

    with pytest.raises(ConfigError, match=r"pip install 'lipgan-example-logger\[mlflow\]'"):
        MlflowLogger()


@pytest.mark.slow
def test_a_run_logs_its_settings_and_rows(tmp_path):
    import json
    import os

    (tmp_path / "fake").mkdir()
    (tmp_path / "fake" / "mlflow.py").write_text(STAND_IN)
    log = tmp_path / "calls.jsonl"
    env = {
        **os.environ,
        "PYTHONPATH": f"{tmp_path / 'fake'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
        "FAKE_MLFLOW_LOG": str(log),
    }
    proc = lipgan(
        "run", "--quiet", "--logger", "mlflow", "--run-dir", str(tmp_path / "run"),
        "--bind", "train.steps = 4", "--bind", "train.log_every = 2",
        "--bind", "train.steps_per_execution = 1", "--bind", "train.eval_every = 0",
        env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert [c["kind"] for c in calls] == ["start", "params", "metrics", "metrics", "end"]
    assert calls[0]["run_name"] == "run"
    assert calls[1]["params"]["step_config.seed"] == "0"
    assert [c["step"] for c in calls[2:4]] == [2, 4]
    assert set(calls[2]["metrics"]) >= {"critic_loss", "generator_loss", "wasserstein"}
