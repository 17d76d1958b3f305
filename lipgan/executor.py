"""The Executor base class: where a study's or a tuned study's cells run.

The cell function is :func:`lipgan.study.runner.run_cell_process`: one cell in its own process
(``python -m lipgan.cell_process``), its result or None when a signal stopped it. An executor only
decides *where* that function runs; which cells are finished, progress and ETA, the stop line and
the report are :func:`lipgan.study.runner.run_cells`, the same for every executor. The contract:

* ``start()`` connects to whatever runs the cells, before the study installs its signal
  handlers; ``run(out, cells, threads)`` then yields ``(cell, result)`` as cells end, result
  None for a cell stopped by a stop request (unfinished, resumable);
* ``request_stop(signum, frame)`` is installed as the study's SIGINT/SIGTERM handler; ``signum``
  is the first signal received;
* ``describe()`` is the end of the study's first progress line; ``default_threads`` the TF
  threads per cell when ``--threads`` is not given (None: the runner's default).

Executors are plugins (``lipgan_register_executors``): ``name`` is what ``--executor`` takes,
``accepts`` the command-line options it understands (any other given is refused in one line), and
``commands`` the commands that offer it. The built-ins (``plugins/executors.py``) are the local
process pool, Ray tasks and Ray Tune trials; ``examples/lipgan-example-executor`` adds one as a
third party would. Kept free of TensorFlow imports.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

from lipgan.named import Named

#: The options an executor may accept, and the flag that gives each.
OPTION_FLAGS = {
    "jobs": "--jobs",
    "ray_address": "--ray-address",
    "cell_resources": "--cell-resources",
    "storage": "--storage",
}


class Executor(Named):
    """Runs a study's unfinished cells; see the module docstring for the contract."""

    #: The options :meth:`from_options` takes (keys of :data:`OPTION_FLAGS`).
    accepts: ClassVar[frozenset[str]] = frozenset()
    #: The commands that offer this executor: ``study``, ``tune``.
    commands: ClassVar[frozenset[str]] = frozenset({"study", "tune"})
    #: TF intra-op threads per cell when ``--threads`` is not given (None: the runner's default).
    default_threads: int | None = None
    #: The first stop signal received (None: no stop requested).
    signum: int | None = None
    #: Where the executor's own lines go (set by :func:`lipgan.study.runner.execute`).
    log = staticmethod(lambda line: None)

    @classmethod
    def from_options(cls, **options) -> Executor:
        """The executor for the given options (only those in :attr:`accepts`, None dropped)."""
        return cls(**options)

    def describe(self) -> str:
        raise NotImplementedError

    def start(self) -> None:
        """Connect (called once, before the study's stop handlers are installed)."""

    def run(self, out: Path, cells: list, threads: int) -> Iterator[tuple[object, dict | None]]:
        raise NotImplementedError

    def request_stop(self, signum: int, frame=None) -> None:
        raise NotImplementedError
