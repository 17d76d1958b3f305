"""``serial``: a study's cells one at a time, in the order the study lists them.

The smallest useful executor: the same cell function as lipgan's own pool
(:func:`lipgan.study.runner.run_cell_process`, one process per cell), with no pool, so the cells
finish in their listed order and a log reads top to bottom. It exists to show what a third-party
executor needs: an :class:`lipgan.core.executor.Executor` subclass with a ``name``, the options it
accepts (none here: ``--jobs`` is refused in one line), and one ``@hookimpl``.
"""

from lipgan import hookimpl
from lipgan.core.executor import Executor
from lipgan.study.runner import CellProcesses, run_cell_process

__version__ = "0.1.0"


class SerialExecutor(Executor):
    """One cell at a time, each in its own process, in the study's order."""

    name = "serial"
    description = "One cell at a time, in order (example plugin)."

    def __init__(self):
        self.processes = CellProcesses()

    @property
    def signum(self):
        return self.processes.signum

    def describe(self) -> str:
        return "one cell at a time, in order"

    def request_stop(self, signum, frame=None) -> None:
        self.processes.request_stop(signum, frame)

    def run(self, out, cells, threads):
        for cell in cells:
            if self.signum is not None:
                return  # a stop request: the cells not started stay unfinished (resumable)
            yield cell, run_cell_process(out, cell, threads, self.processes)


@hookimpl
def lipgan_register_executors(register):
    register(SerialExecutor)
