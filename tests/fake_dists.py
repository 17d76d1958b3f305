"""Installed-looking third-party plugin distributions in a temporary folder, without pip.

A ``<dist>-<version>.dist-info`` folder with METADATA and entry_points.txt next to the plugin module
is all ``importlib.metadata`` needs; putting the folder on ``sys.path`` (or PYTHONPATH for a
subprocess) makes the plugin discoverable exactly as an installed one would be.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

GOOD_PLUGIN = '''
import tensorflow as tf
from lipgan import Constraint, hookimpl

class {cls}(Constraint):
    """A test penalty."""
    name = "{name}"

    def __init__(self, weight: float = 1.0):
        self.weight = weight

    def penalty(self, critic, real, fake, ctx):
        return self.weight * tf.ones([tf.shape(real)[0]])

@hookimpl
def lipgan_register_constraints(register):
    register({cls})
'''

BROKEN_IMPORT = """
raise ImportError("needs the missing package frobnicate")
"""

RAISING_HOOK = """
from lipgan import Constraint, hookimpl

class HalfDone(Constraint):
    name = "half_done"

@hookimpl
def lipgan_register_constraints(register):
    register(HalfDone)
    raise RuntimeError("boom in hook")
"""


def make_dist(root: Path, dist: str, version: str, plugin: str, module: str, source: str) -> Path:
    """Write module ``<module>.py`` and a dist-info declaring entry point ``plugin = module``."""
    root.mkdir(parents=True, exist_ok=True)
    (root / f"{module}.py").write_text(textwrap.dedent(source))
    info = root / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(f"[lipgan]\n{plugin} = {module}\n")
    return root


def good(
    root: Path,
    dist="lipgan-fake-good",
    version="1.2.3",
    name="fake_good",
    module="fake_good_plugin",
):
    cls = "".join(p.title() for p in name.split("_"))
    return make_dist(root, dist, version, name, module, GOOD_PLUGIN.format(cls=cls, name=name))


STRATEGY_PLUGIN = """
import tensorflow as tf
from lipgan import StrategyPlugin, hookimpl

class OneDevice(StrategyPlugin):
    name = "fake_one_device"

    def create(self):
        return tf.distribute.OneDeviceStrategy("/cpu:0")

@hookimpl
def lipgan_register_strategies(register):
    register(OneDevice)
"""
