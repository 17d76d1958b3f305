"""Importing lipgan has no side effects: no plugins, no gin parsing, no TensorFlow device setup."""

import pytest

from tests.conftest import run_python

PROBE = """
import sys, gin
import lipgan
assert "tensorflow" not in sys.modules, "import lipgan imported TensorFlow"
assert "lipgan_plugins" not in sys.modules, "import lipgan loaded plugins"
assert gin.config_str() == "", "import lipgan touched gin"
from lipgan import hookimpl, Constraint, StrategyPlugin, StepContext  # lazy names resolve
import lipgan.cli.main
print("clean")
"""


@pytest.mark.slow
def test_import_has_no_side_effects():
    proc = run_python("-c", PROBE)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "clean"
