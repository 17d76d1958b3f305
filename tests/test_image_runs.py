"""End to end through ``lipgan run``: image configs on mock data, the shipped digits config on real data."""

import json

import pytest
from click.testing import CliRunner

from lipgan.cli.main import cli


def _run(args, tmp_path):
    result = CliRunner().invoke(cli, ["run", "--run-dir", str(tmp_path / "run"), "--quiet", *args])
    return result


@pytest.mark.slow
@pytest.mark.parametrize(
    "bindings",
    [
        ["dataset.name='cifar10'", "dcgan_critic.dim=4", "dcgan_generator.dim=4"],
        ["dataset.name='celeb_a'", "dcgan_critic.dim=4", "dcgan_generator.dim=4"],
        ["dataset.name='mnist'", "dcgan_critic.dim=4", "dcgan_generator.dim=4"],
    ],
    ids=["cifar10-dcgan32", "celeb_a-dcgan64", "mnist-dcgan32"],
)
def test_image_configs_train_on_mock_data(tmp_path, bindings):
    args = [
        "--gin",
        "wgangp_digits",
        "--mock-data",
        "--bind",
        "train.steps=2",
        "--bind",
        "train.global_batch_size=4",
        "--bind",
        "train.n_critic=1",
        "--bind",
        "dataset.image_size=None",
    ]
    for binding in bindings:
        args += ["--bind", binding]
    result = _run(args, tmp_path)
    assert result.exit_code == 0, result.output
    last = json.loads((tmp_path / "run" / "metrics.jsonl").read_text().splitlines()[-1])
    assert last["step"] == 2


def test_missing_image_dataset_is_one_line_on_the_cli(tmp_path, monkeypatch):
    monkeypatch.setenv("TFDS_DATA_DIR", str(tmp_path / "empty"))
    result = _run(
        [
            "--gin",
            "wgangp_digits",
            "--bind",
            "dataset.name='fashion_mnist'",
            "--bind",
            "dataset.download=False",
        ],
        tmp_path,
    )
    assert result.exit_code == 1
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: dataset 'fashion_mnist' is not prepared")
    assert "tfds build fashion_mnist" in lines[0] and str(tmp_path / "empty") in lines[0]
    assert not (tmp_path / "run").exists()  # nothing half-written


@pytest.mark.slow
def test_shipped_digits_config_runs_on_the_real_builder(tmp_path, monkeypatch):
    monkeypatch.setenv("TFDS_DATA_DIR", str(tmp_path / "tfds"))
    result = _run(
        [
            "--gin",
            "wgangp_digits",
            "--bind",
            "train.steps=2",
            "--bind",
            "train.log_every=1",
            "--bind",
            "train.eval_every=2",
            "--bind",
            "train.eval_samples=128",
        ],
        tmp_path,
    )
    assert result.exit_code == 0, result.output
    assert (tmp_path / "tfds" / "lipgan_digits" / "1.0.0").is_dir()
    rows = [json.loads(ln) for ln in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in rows] == [1, 2]
    # Evaluation at its interval: the Fréchet digits distance of two barely trained steps is large.
    assert rows[-1]["eval/digits_fd"] > 1.0 and "eval/digits_kid" in rows[-1]
