"""The wall time of a study, measured end to end across the driver sessions that ran it.

A long study is stopped and resumed (a session ends, a machine is lent back), so no single
process sees its wall time. Each call of :func:`lipgan.study.runner.execute` that has cells to run
is one *driver session*; it keeps a small record ``OUT/sessions/<start>-<pid>.json``::

    {"started": ISO time, "last": ISO time of the last finished cell (or the end),
     "ended": ISO time or null, "how": "finished" | "stopped" | "running",
     "cells": cells finished in this session, "cpus": usable cores, "load": 1-min load at start}

rewritten atomically at the start, after every finished cell and at the end. A driver killed
with SIGKILL never writes its end: its session counts up to its last finished cell, which
leaves out the partial work the kill lost (that work is redone, and counted, by a later session).
:func:`wall_time` sums the sessions; the gaps between them (nobody running the study) do not
count. Sessions of one study never overlap: its run dirs are locked by one driver at a time.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
from pathlib import Path

DIR = "sessions"


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def _seconds(start: str, end: str) -> float:
    return (dt.datetime.fromisoformat(end) - dt.datetime.fromisoformat(start)).total_seconds()


@dataclasses.dataclass
class DriverSession:
    """The record of one driver session under ``out`` (see the module docstring)."""

    path: Path
    started: str
    last: str
    cells: int = 0
    how: str = "running"
    ended: str | None = None
    cpus: int = 0
    load: float | None = None

    @classmethod
    def start(cls, out: Path) -> DriverSession:
        started = _now()
        stamp = started.replace(":", "").replace("+0000", "Z")
        path = Path(out) / DIR / f"{stamp}-{os.getpid()}.json"
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
        session = cls(path, started, started, cpus=cpus or 0, load=load)
        session._write()
        return session

    def cell_finished(self) -> None:
        self.cells += 1
        self.last = _now()
        self._write()

    def end(self, how: str) -> None:
        self.how, self.ended = how, _now()
        self.last = self.ended
        self._write()

    def _write(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        record = {k: v for k, v in dataclasses.asdict(self).items() if k != "path"}
        tmp = self.path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(record, indent=1) + "\n")
        tmp.replace(self.path)


def read(out: str | Path) -> list[dict]:
    """The session records under ``out``, oldest first (unreadable files are skipped)."""
    records = []
    for path in sorted((Path(out) / DIR).glob("*.json")):
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(record, dict) and "started" in record and "last" in record:
            records.append(record)
    return sorted(records, key=lambda r: r["started"])


def wall_time(*outs: str | Path) -> dict:
    """``{"seconds", "sessions", "cells", "killed"}`` summed over the driver sessions recorded
    under each of ``outs`` (e.g. a tuned study's ``search`` and ``final``); ``killed`` counts
    sessions that never wrote their end (counted up to their last finished cell)."""
    records = [r for out in outs for r in read(out)]
    return {
        "seconds": sum(max(0.0, _seconds(r["started"], r["last"])) for r in records),
        "sessions": len(records),
        "cells": sum(int(r.get("cells", 0)) for r in records),
        "killed": sum(1 for r in records if r.get("ended") is None),
    }


def wall_line(wall: dict | None) -> str:
    """The study's wall time as :func:`wall_time` sums it, in a tuned study's report's words."""
    if not wall or not wall["sessions"]:
        return "Wall time: no driver session recorded (`sessions/` under search and final)."
    hours, minutes = divmod(round(wall["seconds"] / 60), 60)
    killed = (
        f"; {wall['killed']} without a recorded end, counted to their last finished run"
        if wall["killed"]
        else ""
    )
    return (
        f"Wall time, end to end: **{hours} h {minutes:02d} min** summed over {wall['sessions']} "
        f"driver session(s) that finished {wall['cells']} runs{killed} (`sessions/`; the gaps "
        "between sessions do not count)."
    )
