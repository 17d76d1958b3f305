"""The CIFAR-10 configs: mimicry's CIFAR-10 settings as bound, and 2 iterations of each on mock data."""

import json

import pytest

from lipgan.config.gin_binding import query
from lipgan.core.plugins import load_registry
from tests.helpers import invoke

CONFIGS = {"wgangp_cifar10.gin": "gradient_penalty", "sngan_cifar10.gin": "spectral_norm"}

#: kwotsin/mimicry README.md, "CIFAR-10 Training Parameters", and torch_mimicry/nets/*/..._32.py.
MIMICRY = {
    "dataset.name": "cifar10",
    "train.global_batch_size": 64,
    "train.n_critic": 5,
    "train.steps": 100000,
    "critic/Adam.beta_1": 0.0,
    "critic/Adam.beta_2": 0.9,
    "generator/Adam.beta_1": 0.0,
    "generator/Adam.beta_2": 0.9,
    "critic/linear_decay.initial_learning_rate": 2e-4,
    "generator/linear_decay.initial_learning_rate": 2e-4,
    "critic/linear_decay.decay_steps": 500000,  # to 0 at the last of 100K x 5 critic updates
    "generator/linear_decay.decay_steps": 100000,
    "resnet_critic.dim": 128,
    "resnet_generator.dim": 256,
    "resnet_generator.latent_dim": 128,
}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_cifar10_configs_bind_mimicrys_settings(name):
    registry = load_registry().registry
    for key, want in MIMICRY.items():
        assert query([f"gin/{name}"], key, registry) == want, key


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_cifar10_config_trains_on_mock_data(tmp_path, name):
    run_dir = tmp_path / "run"
    bindings = [
        "train.steps=2",
        "train.log_every=1",
        "train.global_batch_size=4",
        "train.n_critic=1",
        "train.jit_compile=False",  # compiling the ResNet step costs more than two steps
        "resnet_critic.dim=4",
        "resnet_generator.dim=4",
    ]
    args = ["run", "--gin", f"gin/{name}", "--mock-data", "--run-dir", str(run_dir)]
    for binding in bindings:
        args += ["--bind", binding]
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in rows] == [1, 2]
    assert all(row["critic_loss"] == row["critic_loss"] for row in rows)  # finite, not NaN
    operative = (run_dir / "operative_config.gin").read_text()
    assert f"train.constraint = @{CONFIGS[name]}()" in operative
    assert list((run_dir / "checkpoints").glob("ckpt-2.index"))
