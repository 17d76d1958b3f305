"""A cell whose run dir is refused (an older lipgan's, in use) records nothing and stops the study.

Recording it as failed would put a failed seed in the study's table for good: a study resumed
with a newer lipgan must not turn its unfinished cells into failures.
"""

import json

import pytest

from lipgan.config import cells
from lipgan.core.errors import ConfigError
from lipgan.study import cell as cell_module
from lipgan.study.executors import Executor, LocalExecutor
from lipgan.study.runner import cell_dir, execute, load_result
from lipgan.study.spec import Cell

CELL = Cell("ring", "none", 0, 10, 100)
OLDER = "settings.json"  # what lipgan wrote before run.json


def _older_run_dir(out):
    run_dir = cell_dir(out, CELL)
    run_dir.mkdir(parents=True)
    (run_dir / OLDER).write_text("{}")
    return run_dir


def test_the_cell_exits_with_its_own_status_and_writes_no_result(tmp_path, capsys):
    run_dir = _older_run_dir(tmp_path)
    (run_dir / "cell.json").write_text(json.dumps(CELL.as_dict()))
    code = cells.main([str(run_dir / "cell.json"), str(run_dir)])
    assert code == cell_module.RUN_DIR_REFUSED
    assert not (run_dir / "result.json").exists()
    err = capsys.readouterr().err
    assert err.startswith("Error: run dir") and "older lipgan" in err and err.count("\n") == 1


class _Refusing(Executor):
    def describe(self):
        return "refusing"

    def run(self, out, cells, threads):
        for cell in cells:
            yield cell, {"status": "refused", "error": "Error: run dir X was written by an older "
                         "lipgan", "cell": cell.as_dict()}  # fmt: skip

    def request_stop(self, signum, frame=None):
        self.signum = signum


def test_the_study_stops_with_the_cells_line_and_records_nothing(tmp_path):
    with pytest.raises(ConfigError, match=r"1 cell\(s\) could not use their run dir \(ring/none/"
                       r"seed0: Error: run dir X was written by an older lipgan\); nothing was "
                       "recorded"):  # fmt: skip
        execute([CELL], tmp_path, executor=_Refusing(), threads=1)
    assert load_result(tmp_path, CELL) is None


@pytest.mark.slow
def test_a_study_resumed_on_an_older_run_dir_stops_and_records_nothing(tmp_path):
    """End to end through a cell process: the local pool maps the exit status."""
    run_dir = _older_run_dir(tmp_path)
    with pytest.raises(ConfigError, match="older lipgan") as info:
        execute([CELL], tmp_path, executor=LocalExecutor(1), threads=1)
    assert "\n" not in str(info.value)
    assert load_result(tmp_path, CELL) is None and not (run_dir / "result.json").exists()
    assert (run_dir / OLDER).read_text() == "{}"  # nothing of the old run touched
