"""How ``pytest -n 2 --dist loadscope`` shares the suite between its workers (see tests/conftest.py).

xdist's own modes fit this suite badly: ``load`` hands out single tests, so a module-scoped
fixture (the replica layouts, a shared training run) is built on both workers; ``loadscope``
keeps modules whole but starts the modules with the most tests first, not the slowest, and a
multi-minute module that starts last leaves the other core idle. This scheduler is ``loadscope``
with three changes: a unit is a whole module (classes included), the tests of one
``SHARED_UNITS`` entry (modules sharing a session fixture) are one unit, and the units go out in
collection order, which the conftest sorts heaviest first on the workers.
"""

from xdist.scheduler import LoadScopeScheduling

from tests.conftest import work_unit


class ModulesHeaviestFirst(LoadScopeScheduling):
    """xdist's ``loadscope`` with module and shared units, and no reordering by test count."""

    def _split_scope(self, nodeid: str) -> str:
        return work_unit(nodeid)

    def schedule(self) -> None:
        # The units in collection order (heaviest first), not loadscope's "most tests first".
        self.config.option.loadscopereorder = False
        super().schedule()
