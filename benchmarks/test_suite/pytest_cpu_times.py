"""pytest plugin: each test's CPU seconds, for measuring the test suite on a shared machine.

Wall time on a loaded machine says more about the neighbours than about the tests; the CPU time
of the pytest process and of the child processes it has reaped (``getrusage``) barely depends on
the load, and on 2 idle cores a test's wall time is close to it (most of a tiny test's time is
single-threaded Python: tracing, Keras, gin). Use::

    PYTHONPATH=benchmarks/test_suite CPU_TIMES=cpu.tsv pytest -m "not slow" -p pytest_cpu_times

``CPU_TIMES`` gets one line per test, appended as it ends: CPU seconds, wall seconds, ``slow`` or
``fast`` (the marker), node id. Sort it with ``sort -rn cpu.tsv | head``.
"""

from __future__ import annotations

import os
import resource
import time

import pytest


def _cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    cpu, wall = _cpu_seconds(), time.monotonic()
    yield
    path = os.environ.get("CPU_TIMES")
    if path:
        kind = "slow" if item.get_closest_marker("slow") else "fast"
        with open(path, "a") as out:
            out.write(
                f"{_cpu_seconds() - cpu:.2f}\t{time.monotonic() - wall:.2f}\t{kind}\t{item.nodeid}\n"
            )
