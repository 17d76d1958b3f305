"""How ``pytest -n 2 --dist loadgroup`` shares the suite between its workers (see tests/conftest.py).

xdist's own modes fit this suite badly: ``load`` hands out single tests, so a module-scoped
fixture (the replica layouts, a shared training run) is built on both workers; ``loadscope``
keeps modules whole but starts the modules with the most tests first, not the slowest, and a
multi-minute module that starts last leaves the other core idle; ``loadgroup`` keeps only marked
tests together. This scheduler keeps each module whole, merges the tests marked with the same
``xdist_group`` into one unit (modules sharing a session fixture), and hands the units out in
collection order, which the conftest sorts heaviest first on the workers.
"""

from xdist.scheduler import LoadScopeScheduling


class ModulesHeaviestFirst(LoadScopeScheduling):
    """xdist's ``loadscope`` with module units, ``xdist_group`` units, and no reordering."""

    def _split_scope(self, nodeid: str) -> str:
        # Under --dist loadgroup a worker reports a marked test as "path::name[params]@group".
        if nodeid.rfind("@") > nodeid.rfind("]"):
            return "@" + nodeid.rsplit("@", 1)[1]
        return nodeid.split("::", 1)[0]

    def schedule(self) -> None:
        # The units in collection order (heaviest first), not loadscope's "most tests first".
        self.config.option.loadscopereorder = False
        super().schedule()
