"""A study's wall time end to end: one record per driver session, summed (lipgan.study.sessions)."""

import json
import signal

import pytest

from lipgan.core.errors import Interrupted
from lipgan.study import sessions
from lipgan.study.executors import Executor
from lipgan.study.runner import execute
from lipgan.study.spec import Cell


def _record(out, name, started, last, ended, cells):
    path = out / sessions.DIR / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"started": started, "last": last, "ended": ended, "cells": cells}))


def test_wall_time_sums_sessions_and_counts_a_killed_one_to_its_last_finished_cell(tmp_path):
    search, final = tmp_path / "search", tmp_path / "final"
    _record(
        search,
        "a.json",
        "2026-12-05T08:00:00+00:00",
        "2026-12-05T09:30:00+00:00",
        "2026-12-05T09:30:00+00:00",
        100,
    )
    # killed: no end; it counts 10:00 -> 10:20, not to whenever the kill happened
    _record(search, "b.json", "2026-12-05T10:00:00+00:00", "2026-12-05T10:20:00+00:00", None, 7)
    _record(
        final,
        "c.json",
        "2026-12-06T10:00:00+00:00",
        "2026-12-06T10:00:30+00:00",
        "2026-12-06T10:00:30+00:00",
        1,
    )
    (search / sessions.DIR / "torn.json").write_text("{")  # a torn write is skipped
    wall = sessions.wall_time(search, final)
    assert wall == {"seconds": 90 * 60 + 20 * 60 + 30, "sessions": 3, "cells": 108, "killed": 1}
    assert sessions.wall_time(tmp_path / "nothing") == {
        "seconds": 0,
        "sessions": 0,
        "cells": 0,
        "killed": 0,
    }


class _Scripted(Executor):
    """Yields the given results for the cells; a None result is a stopped cell."""

    def __init__(self, results, signum=None):
        self.results, self._signum = results, signum

    def describe(self):
        return "scripted"

    def run(self, out, cells, threads):
        yield from zip(cells, self.results)
        self.signum = self._signum

    def request_stop(self, signum, frame=None):
        self.signum = signum


def _cells(n):
    return [Cell("ring", "none", seed, 10, 100) for seed in range(n)]


def test_execute_records_one_session_with_its_cells(tmp_path):
    ok = {"status": "ok", "metrics": {}}
    execute(_cells(3), tmp_path, executor=_Scripted([ok, ok, ok]), threads=1)
    [record] = sessions.read(tmp_path)
    assert record["how"] == "finished" and record["cells"] == 3 and record["ended"] is not None
    assert record["last"] == record["ended"] >= record["started"]


def test_a_stopped_session_is_recorded_as_stopped_with_the_cells_it_finished(tmp_path):
    ok = {"status": "ok", "metrics": {}}
    with pytest.raises(Interrupted):
        execute(_cells(3), tmp_path, executor=_Scripted([ok, None], signal.SIGTERM), threads=1)
    [record] = sessions.read(tmp_path)
    assert record["how"] == "stopped" and record["cells"] == 1


def test_nothing_to_run_is_no_session(tmp_path):
    execute([], tmp_path, executor=_Scripted([]), threads=1)
    assert sessions.read(tmp_path) == []
