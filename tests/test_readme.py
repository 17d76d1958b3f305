"""The README's examples are what the CLI prints (a new plugin must not leave them stale)."""

import importlib.metadata
import re
from pathlib import Path

from click.testing import CliRunner

from lipgan.cli.main import cli
from lipgan.core import plugins

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_unknown_constraint_error_is_the_real_one(monkeypatch):
    # The README shows the line up to "...": every built-in constraint must be in it. It shows a
    # fresh install, so plugins installed here (the example plugin, in CI's later steps) are blocked.
    shown = re.search(r"\$ lipgan run --bind '(.+)'\n\s+(Error: .+?)\.\.\.\n", README.read_text())
    assert shown, "README lost its unknown-constraint example"
    binding, line = shown.groups()
    installed = {ep.name for ep in importlib.metadata.entry_points(group=plugins.ENTRY_POINT_GROUP)}
    monkeypatch.setenv(plugins.DISABLE_ENV, ",".join(sorted(installed)))
    result = CliRunner().invoke(cli, ["run", "--bind", binding], catch_exceptions=False)
    assert result.exit_code != 0
    assert result.output.strip().startswith(line), result.output
