"""The built-in executors: where ``lipgan study`` and ``lipgan tune`` run their cells.

``local`` (a process pool here), ``ray`` (Ray tasks) and ``tune`` (Ray Tune trials, ``lipgan tune``
only), registered through the same hook a third party's executor uses. Ray is imported only when
an executor is built, so a missing Ray costs nothing until ``--executor ray`` is asked for.
"""

from lipgan import hookimpl
from lipgan.study.executors import LocalExecutor, RayExecutor
from lipgan.study.tune_executor import TuneExecutor


@hookimpl
def lipgan_register_executors(register):
    register(LocalExecutor)
    register(RayExecutor)
    register(TuneExecutor)
