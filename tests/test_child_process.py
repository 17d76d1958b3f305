"""A child process imports the parent's lipgan, whatever folder it runs in (lipgan.core.child_process)."""

from __future__ import annotations

import sys

import pytest

from lipgan.core import child_process


@pytest.mark.skipif(sys.version_info < (3, 11), reason="python -P is 3.11+")
def test_a_child_run_in_a_folder_holding_another_lipgan_imports_the_parents(tmp_path):
    """A study's cells run in the study's working folder (relative paths in bindings mean what
    they mean to the study): a checkout there must not replace the lipgan the study imported."""
    fake = tmp_path / "lipgan"
    fake.mkdir()
    (fake / "__init__.py").write_text("raise SystemExit(3)\n")
    (fake / "errors.py").write_text("raise SystemExit(4)\n")
    proc = child_process.finish(
        child_process.start("lipgan.core.errors", cwd=tmp_path), timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert "-P" in child_process.command("lipgan.core.errors")
