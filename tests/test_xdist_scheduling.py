"""The README's ``pytest -n 2 --dist loadgroup``: whole modules and groups, heaviest first.

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
"""

TEST = """
import os
import pytest

{mark}

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
    shared = 'pytestmark = pytest.mark.xdist_group("shared")'
    modules = {
        "test_a_light": ("", 6),
        "test_b_light": ("", 6),
        "test_y_heavy": ("", 4),  # collected late, listed first
        "test_z_shared_1": (shared, 2),  # two modules, one group, listed second
        "test_z_shared_2": (shared, 2),
    }
    for name, (mark, n) in modules.items():
        pytester.makepyfile(**{name: TEST.format(mark=mark, log=log, n=n)})
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    result = pytester.runpytest_subprocess("-n", "2", "--dist", "loadgroup")
    result.assert_outcomes(passed=20)

    lines = [ln.split() for ln in Path(log).read_text().splitlines()]
    fixtures = [(module, worker) for kind, module, worker in lines if kind == "fixture"]
    # One module-fixture build per module: no module was split across the workers.
    assert sorted(m for m, _ in fixtures) == sorted(modules), fixtures
    worker_of = dict(fixtures)
    tests = [(module, worker) for kind, module, worker in lines if kind == "test"]
    assert all(worker_of[module] == worker for module, worker in tests), lines
    assert worker_of["test_z_shared_1"] == worker_of["test_z_shared_2"]
    # Each worker's first unit: the heavy module on one, the shared group on the other.
    first = {}
    for module, worker in fixtures:
        first.setdefault(worker, module)
    assert sorted(first.values()) == ["test_y_heavy", "test_z_shared_1"], lines


def test_ci_runs_the_readmes_test_command():
    readme = (REPO / "README.md").read_text()
    command = re.search(r"pip install -e '\.\[test\]' && (pytest [^\n]+)", readme).group(1)
    assert "-n 2 --dist loadgroup" in command
    assert f"pip install -q -e '.[test]' && {command}\n" in (REPO / ".ci" / "run").read_text()


def test_every_unit_listed_heaviest_first_exists():
    """A renamed module or group would silently lose its early start."""
    from tests.conftest import HEAVIEST_FIRST

    sources = "".join(p.read_text() for p in (REPO / "tests").glob("test_*.py"))
    for unit in HEAVIEST_FIRST:
        if unit.startswith("@"):
            assert f'xdist_group("{unit[1:]}")' in sources, unit
        else:
            assert (REPO / unit).is_file(), unit
