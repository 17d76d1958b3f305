"""train.jit_compile: 'auto' compiles where lipgan checked XLA works, True fails in one line where not."""

import pytest
import tensorflow as tf

from lipgan.core.errors import ConfigError
from lipgan.core.jit import resolve_jit_compile
from lipgan.models.dcgan import dcgan_critic, dcgan_generator
from lipgan.models.mlp import mlp_critic, mlp_generator
from tests.conftest import run_python


def test_auto_compiles_on_one_device_and_false_never_does():
    strategy = tf.distribute.get_strategy()
    assert resolve_jit_compile("auto", strategy) is True
    assert resolve_jit_compile(True, strategy) is True
    assert resolve_jit_compile(False, strategy) is False
    one_device = tf.distribute.OneDeviceStrategy("/cpu:0")
    assert resolve_jit_compile("auto", one_device) is True


def test_auto_keeps_tf_function_for_convolutional_models_on_cpu():
    # Measured (lipgan/core/jit.py docstring, benchmarks/dcgan_iteration): XLA's CPU convolutions
    # made the DCGAN GP iteration ~4x slower, while the MLP critic is as fast or faster with XLA.
    strategy = tf.distribute.get_strategy()
    mlp = (mlp_critic((2,)), mlp_generator((2,)))
    dcgan = (dcgan_critic((32, 32, 3)), dcgan_generator((32, 32, 3)))
    assert resolve_jit_compile("auto", strategy, mlp) is True
    assert resolve_jit_compile("auto", strategy, dcgan) is False
    assert resolve_jit_compile(True, strategy, dcgan) is True


@pytest.mark.parametrize("bad", ["yes", "xla", 2, None])
def test_unknown_setting_is_a_config_error(bad):
    with pytest.raises(ConfigError, match="must be True, False or 'auto'"):
        resolve_jit_compile(bad, tf.distribute.get_strategy())


MIRRORED_PROBE = """
import tensorflow as tf
from lipgan_plugins.mirrored import Mirrored
from lipgan.core.errors import ConfigError
from lipgan.core.jit import resolve_jit_compile
strategy = Mirrored(logical_cpus=2).create()
assert strategy.num_replicas_in_sync == 2
print("auto", resolve_jit_compile("auto", strategy))
try:
    resolve_jit_compile(True, strategy)
    print("true accepted")
except ConfigError as exc:
    print("error", str(exc))
"""


@pytest.mark.slow
def test_xla_under_mirrored_logical_cpus_is_avoided_or_refused_in_one_line():
    # Full-step XLA under MirroredStrategy over logical CPUs fails inside TF ("Trying to access
    # resource ... located in device CPU:1 from device CPU:0"): 'auto' must fall back to
    # tf.function, and an explicit True must be a one-line ConfigError before any step runs.
    result = run_python("-c", MIRRORED_PROBE, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stdout.strip().splitlines()
    assert lines[0] == "auto False"
    assert lines[1].startswith("error train.jit_compile=True does not work with 2 replicas on CPU")
    assert len(lines) == 2
