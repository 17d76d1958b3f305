"""`lipgan run --strategy multi_worker` with two local workers: the chief writes, the numbers match."""

import json

import pytest

from tests.conftest import finish, free_port, start_python
from tests.helpers import TINY_SGD

CLI = "from lipgan.cli.main import cli; cli(prog_name='lipgan')"


def lipgan_run(run_dir, *extra, env=None):
    return start_python("-c", CLI, "run", *TINY_SGD, "--run-dir", str(run_dir), *extra, env=env)


def metrics(run_dir):
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.slow
def test_two_workers_match_one_process_and_only_the_chief_writes(tmp_path):
    cluster = {"worker": [f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"]}
    workers = [
        lipgan_run(
            tmp_path / f"worker{i}",
            "--strategy",
            "multi_worker",
            env={
                "TF_CONFIG": json.dumps(
                    {"cluster": cluster, "task": {"type": "worker", "index": i}}
                )
            },
        )
        for i in range(2)
    ]
    for proc in map(finish, workers):
        assert proc.returncode == 0, proc.stderr[-2000:]
    single = finish(lipgan_run(tmp_path / "single"))
    assert single.returncode == 0, single.stderr[-2000:]

    chief = tmp_path / "worker0"
    assert (chief / "checkpoints").is_dir() and (chief / "operative_config.gin").is_file()
    assert not (tmp_path / "worker1").exists()  # only the chief writes anything
    expected, actual = metrics(tmp_path / "single"), metrics(chief)
    assert [r["step"] for r in actual] == [1, 2, 3]
    for want, got in zip(expected, actual, strict=True):
        for key in ("critic_loss", "generator_loss", "wasserstein", "penalty"):
            assert got[key] == pytest.approx(want[key], rel=1e-5, abs=1e-6), (got["step"], key)
