"""The README's ``pytest -n 2 --dist loadscope``: whole modules and shared units, heaviest first.

A tiny suite runs under xdist with this conftest's hooks (tests/conftest.py,
tests/xdist_scheduling.py); every test writes which worker ran it, and in which order.
"""

import re
from pathlib import Path

from tests.conftest import REPO

pytest_plugins = ["pytester"]

CONFTEST = """
import tests.conftest as suite
from tests.conftest import pytest_collection_modifyitems, pytest_xdist_make_scheduler

suite.HEAVIEST_FIRST = ("test_y_heavy.py", "@shared")
suite.SHARED_UNITS = {"@shared": ("test_m_shared_1.py", "test_z_shared_2.py::test_it")}
"""

TEST = """
import os
import pytest

@pytest.fixture(scope="module")
def once():
    with open({log!r}, "a") as f:
        f.write(f"fixture {{__name__}} {{os.environ['PYTEST_XDIST_WORKER']}}\\n")

@pytest.mark.parametrize("i", range({n}))
def test_it(once, i):
    with open({log!r}, "a") as f:
        f.write(f"test {{__name__}} {{os.environ['PYTEST_XDIST_WORKER']}}\\n")
"""


def test_modules_stay_whole_groups_share_a_worker_and_the_heaviest_start_first(
    pytester, monkeypatch
):
    log = str(pytester.path / "order.log")
    pytester.makeconftest(CONFTEST)
    modules = {
        "test_a_light": 6,
        "test_b_light": 6,
        "test_m_shared_1": 2,  # two modules, one shared unit, listed second
        "test_n_light": 3,
        "test_y_heavy": 4,  # collected late, listed first
        "test_z_shared_2": 2,
    }
    for name, n in modules.items():
        pytester.makepyfile(**{name: TEST.format(log=log, n=n)})
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    result = pytester.runpytest_subprocess("-n", "2", "--dist", "loadscope")
    result.assert_outcomes(passed=23)

    lines = [ln.split() for ln in Path(log).read_text().splitlines()]
    fixtures = [(module, worker) for kind, module, worker in lines if kind == "fixture"]
    # One module-fixture build per module: no module was split across the workers.
    assert sorted(m for m, _ in fixtures) == sorted(modules), fixtures
    worker_of = dict(fixtures)
    tests = [(module, worker) for kind, module, worker in lines if kind == "test"]
    assert all(worker_of[module] == worker for module, worker in tests), lines
    # The shared unit: one worker, its two modules one after the other.
    shared = worker_of["test_m_shared_1"]
    assert worker_of["test_z_shared_2"] == shared
    on_shared = [module for module, worker in fixtures if worker == shared]
    assert on_shared[:2] == ["test_m_shared_1", "test_z_shared_2"], lines
    # Each worker's first unit: the heavy module on one, the shared unit on the other.
    first = {}
    for module, worker in fixtures:
        first.setdefault(worker, module)
    assert sorted(first.values()) == ["test_m_shared_1", "test_y_heavy"], lines


def test_ci_runs_the_readmes_test_command():
    readme = (REPO / "README.md").read_text()
    command = re.search(r"pip install -e '\.\[test\]' && (pytest [^\n]+)", readme).group(1)
    assert "-n 2 --dist loadscope" in command
    ci = (REPO / ".ci" / "run").read_text()
    assert f"pip install -q -e '.[test]' && {command}\n" in ci
    # The heavy tier the README's command leaves out runs in CI's next step, named in the README.
    assert '-m "not heavy"' in command
    heavy = "pytest -q -n 2 --dist loadscope -m heavy"
    assert f"\n{heavy}\n" in ci and f"`{heavy}`" in readme


def test_every_unit_named_for_the_scheduler_exists():
    """A renamed module or test would silently lose its early start or its shared unit."""
    from tests.conftest import HEAVIEST_FIRST, SHARED_UNITS

    for unit in HEAVIEST_FIRST:
        assert unit in SHARED_UNITS if unit.startswith("@") else (REPO / unit).is_file(), unit
    for prefixes in SHARED_UNITS.values():
        for prefix in prefixes:
            path, _, name = prefix.partition("::")
            assert (REPO / path).is_file(), prefix
            assert not name or f"def {name}(" in (REPO / path).read_text(), prefix
