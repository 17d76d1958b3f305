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


def test_a_child_in_a_session_of_its_own_stays_as_nice_as_its_parent():
    """``nice -n 15 lipgan study`` starts each cell in a session of its own; Linux schedules each
    session as one group (autogroup) and a nice value ranks a process only inside its group, so
    the cell must get its parent's niceness on its group, or it competes with foreground work as
    an equal. Run in a child of its own so this test's process keeps its priority."""
    import os
    import subprocess
    import sys

    if not os.path.exists("/proc/self/autogroup"):  # not Linux, or the kernel's autogroup off:
        assert child_process.keep_niceness(os.getpid()) is False  # nothing to set, and no error
        return
    probe = (
        "import os; from lipgan.core import child_process as c; print(os.nice(7)); "
        "p = c.start('timeit', '-n', '1', '-r', '1', 'import time; time.sleep(2)', "
        "start_new_session=True); "
        "print(open(f'/proc/{p.pid}/autogroup').read().split()[-1]); p.kill(); p.wait()"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    niceness, group = out.stdout.split()  # the probe's niceness (7 more than this process's)
    assert int(niceness) >= 7 and group == niceness, out.stderr
