"""A config's syntax error is answered before TensorFlow is imported
(lipgan.config.syntax.check_syntax): the same one line as the full parse, from a process that never
loads TensorFlow (what makes it fast, checked by what was imported, not by a clock)."""

import json
import subprocess
import sys

import pytest

PROBE = """
import json, sys
from click.testing import CliRunner
from lipgan.cli.main import cli
result = CliRunner().invoke(cli, sys.argv[1:])
print(json.dumps({"code": result.exit_code, "output": result.output,
                  "tensorflow": "tensorflow" in sys.modules}))
"""


def probe(*args):
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, *args], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.splitlines()[-1])


@pytest.mark.parametrize(
    "args, line",
    [
        (
            ["run", "--bind", "train.steps=abc"],
            "Error: --bind 'train.steps=abc': 'abc' is not a value gin reads; quote a string",
        ),
        (
            ["config", "show", "--bind", "train.steps=[1,"],
            "Error: --bind 'train.steps=[1,': syntax error: EOF in multi-line statement",
        ),
    ],
)
def test_a_syntax_error_is_one_line_without_tensorflow(args, line):
    got = probe(*args)
    assert got["code"] == 1 and not got["tensorflow"], got
    lines = got["output"].strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(line), got["output"]


def test_a_broken_config_file_is_named_with_its_line(tmp_path):
    config = tmp_path / "broken.gin"
    config.write_text("include 'parts/toy.gin'\ntrain.steps = 10\ntrain.seed = [1, 2\n")
    got = probe("run", "--gin", str(config))
    assert got["code"] == 1 and not got["tensorflow"], got
    assert got["output"].startswith(f"Error: {config}:"), got["output"]


def test_a_valid_config_goes_on_to_tensorflow():
    from lipgan.config.syntax import check_syntax

    check_syntax(["wgangp_toy_quick"], ["train.steps = 5", "train.lr = 1"])  # names: later
