"""A plugin distributed as its own package is found through its entry point and trains from gin.

(Failure modes of discovery -- broken imports, raising hooks, duplicates, blocking -- are in
test_plugin_resilience.py.)

The package is "installed" the way pip leaves it on disk: a module plus a ``*.dist-info`` folder with
``METADATA`` and ``entry_points.txt``, on ``PYTHONPATH`` of a fresh ``lipgan`` process.
"""

import json
import textwrap

import pytest

from tests.conftest import run_python
from tests.fake_dists import make_dist

PLUGIN = textwrap.dedent(
    '''
    import tensorflow as tf
    from lipgan import Constraint, hookimpl

    class CriticL2(Constraint):
        """weight * D(real)^2: keeps critic values near zero."""
        name = "critic_l2"

        def __init__(self, weight=1.0):
            self.weight = weight

        def penalty(self, critic, real, fake, ctx):
            return self.weight * tf.square(tf.reshape(critic(real, training=False), [-1]))

    @hookimpl
    def lipgan_register_constraints(register):
        register(CriticL2)
    '''
)


def lipgan(*args, path):
    code = "import sys; from lipgan.cli.main import cli; cli(prog_name='lipgan')"
    return run_python("-c", code, *args, env={"PYTHONPATH": str(path)})


@pytest.mark.slow
def test_entry_point_plugin_is_discovered_and_trains(tmp_path):
    site = make_dist(
        tmp_path / "site", "lipgan-critic-l2", "1.2.3", "critic_l2", "lipgan_critic_l2", PLUGIN
    )
    listing = lipgan("plugins", "--json", path=site)
    assert listing.returncode == 0, listing.stderr[-2000:]
    found = {p["name"]: p for p in json.loads(listing.stdout)["plugins"]}
    assert found["critic_l2"]["source"] == "lipgan-critic-l2 1.2.3"
    assert found["critic_l2"]["kind"] == "constraint"
    assert found["critic_l2"]["description"].startswith("weight * D(real)^2")

    run_dir = tmp_path / "run"
    result = lipgan(
        "run",
        "--bind",
        "train.constraint = @critic_l2()",
        "--bind",
        "critic_l2.weight = 0.5",
        "--bind",
        "train.steps = 2",
        "--bind",
        "train.log_every = 1",
        "--bind",
        "train.global_batch_size = 16",
        "--bind",
        "mlp_critic.width = 8",
        "--bind",
        "mlp_generator.width = 8",
        "--run-dir",
        str(run_dir),
        path=site,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "critic_l2.weight = 0.5" in (run_dir / "operative_config.gin").read_text()
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert all(row["penalty"] > 0 for row in rows)  # the plugin's penalty really entered the loss
