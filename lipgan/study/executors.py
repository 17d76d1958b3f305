"""Where a study's cells run: one cell function, executors behind one small interface.

The cell function is :func:`lipgan.study.runner.run_cell_process`: one cell in its own process
(``python -m lipgan.cell_process``, one TF runtime per cell), its result or None when a signal
stopped it. An executor only decides *where* that function runs; everything else (which cells are
finished, progress and ETA, the stop line, the report) is :func:`lipgan.study.runner.run_cells`,
the same for every executor. The interface (:class:`Executor`):

* ``start()`` connects to whatever runs the cells, before the study installs its signal
  handlers; ``run(out, cells, threads)`` then yields ``(cell, result)`` as cells end, result
  None for a cell stopped by a stop request (unfinished, resumable);
* ``request_stop(signum, frame)`` is installed as the study's SIGINT/SIGTERM handler; ``signum``
  is the first signal received;
* ``describe()`` is the end of the study's first progress line; ``default_threads`` the TF
  threads per cell when ``--threads`` is not given (None: the runner's default).

:class:`LocalExecutor` is the process pool on this machine (``--jobs``). :class:`RayExecutor` runs
each cell as a Ray task (``--executor ray``, ``pip install 'lipgan[ray]'``), on a local instance
or on a cluster. Both are registered by ``plugins/executors.py`` through
``lipgan_register_executors``; a Slurm or Dask executor is a plugin of its own
(``examples/lipgan-example-executor``). docs/study.md, "Running a study on a cluster", says what
is kept where.
"""

from __future__ import annotations

import math
import os
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path

from lipgan.errors import ConfigError, first_line
from lipgan.executor import Executor
from lipgan.interrupt import ORPHAN_ENV
from lipgan.rundir import LOCK
from lipgan.study.ray_checks import check_address, check_resources, check_storage, plain
from lipgan.study.runner import (
    UNRECORDED,
    CellProcesses,
    cell_dir,
    default_jobs,
    load_result,
    run_cell_process,
)
from lipgan.study.spec import Cell, dumps

try:
    import fcntl
except ImportError:  # Windows: no flock, the lock wait below is skipped
    fcntl = None

RAY_INSTALL = "pip install 'lipgan[ray]'"


class LocalExecutor(Executor):
    """``jobs`` cells at a time, each a child process of this one: a thread per running cell waits
    on its process (the pool moved unchanged out of :func:`lipgan.study.runner.run_cells`)."""

    name = "local"
    description = "A process pool on this machine, one process per cell (--jobs at a time)."
    accepts = frozenset({"jobs"})

    def __init__(self, jobs: int):
        self.jobs = jobs
        self.processes = CellProcesses()

    @classmethod
    def from_options(cls, jobs: int | None = None) -> LocalExecutor:
        return cls(jobs or default_jobs()[0])

    @property
    def signum(self) -> int | None:
        return self.processes.signum

    def describe(self) -> str:
        return f"{self.jobs} jobs"

    def request_stop(self, signum: int, frame=None) -> None:
        self.processes.request_stop(signum, frame)

    def run(self, out, cells, threads):
        with ThreadPoolExecutor(max_workers=self.jobs) as pool:
            futures = {
                pool.submit(run_cell_process, out, cell, threads, self.processes): cell
                for cell in cells
            }
            for future in as_completed(futures):
                yield futures[future], future.result()


# --- Ray ------------------------------------------------------------------------------------

#: Ray retries a task whose worker process died (killed, OOM, node lost) this many times; the
#: retry resumes the cell from its last checkpoint when the storage is shared. An exception in
#: the task is a failed cell, never retried (the cell function records failures itself).
RAY_MAX_RETRIES = 3

#: How long a retried task waits for the killed attempt's cell to save its checkpoint and release
#: the run dir's lock (that cell stops itself when its worker dies, see
#: :func:`lipgan.interrupt.stop_when_orphaned`).
LOCK_WAIT_SECONDS = 300.0

#: Ray's errors for a task whose worker or node went away, after the retries: the cell is
#: "killed" (the study ends with a line saying to free memory and re-run; nothing is recorded, so
#: the re-run retries it), as a SIGKILLed cell in the local pool. Any other error is a failed cell.
LOST = ("WorkerCrashedError", "NodeDiedError", "OutOfMemoryError", "LocalRayletDiedError")

_RESOURCE_KEYS = {"num_cpus", "num_gpus", "memory"}

#: Environment variables of the driver that its cells see on the workers too (plugins blocked
#: with LIPGAN_DISABLE_PLUGINS, TF's log level, TFDS_DATA_DIR): a worker of a cluster started
#: elsewhere does not inherit the driver's environment.
FORWARDED_ENV = ("LIPGAN_", "TF_", "TFDS_")


def parse_resources(text: str) -> dict[str, float]:
    """``num_cpus=1,num_gpus=0.25,memory=2e9,my_resource=1`` -> dict; a bad item is one line."""
    resources = {}
    for item in filter(None, (s.strip() for s in text.split(","))):
        key, sep, value = item.partition("=")
        try:
            number = float(value)
        except ValueError:
            number = -1.0
        if not sep or not key.strip() or not 0 <= number < math.inf:  # nan fails too
            raise ConfigError(
                f"--cell-resources: {item!r} is not NAME=NUMBER with a finite NUMBER >= 0 "
                "(e.g. num_cpus=1,num_gpus=0.25)"
            )
        resources[key.strip()] = number
    return resources


def import_ray(option: str = "--executor ray"):
    """Ray, or a one-line :class:`ConfigError` that says how to install it."""
    try:
        import ray
    except ImportError:
        raise ConfigError(f"{option} needs Ray, which is not installed: {RAY_INSTALL}") from None
    return ray


class RayExecutor(Executor):
    """Each cell a Ray task (``--executor ray``) that runs the cell function on a worker.

    * ``address``: ``--ray-address``; None is Ray's own resolution (``RAY_ADDRESS``, a cluster
      started with ``ray start`` on this machine, else a new local instance). A Ray already
      initialized in this process (a notebook, a test) is used as it is.
    * ``resources``: per cell (``--cell-resources``), default one CPU; TF gets as many
      intra-op threads per cell as whole CPUs unless ``--threads`` says otherwise.
    * ``storage``: where the run dirs go (``--storage``, default the study dir), a path every
      node sees. The task's result and ``samples.npy`` also come back through Ray, and the driver
      writes them into the study dir when it does not see the worker's copy (no shared file
      system), so ``result.json`` and the report are always complete on the driver.

    A stop request cancels every task (:func:`ray.cancel`, which raises KeyboardInterrupt in a
    running task): a running cell gets SIGTERM, saves its checkpoint and records nothing; cells
    not started never start. A second signal cancels with ``force=True``: the workers exit at
    once, and their cells, orphaned, stop themselves the same way where they can.
    """

    name = "ray"
    description = "One Ray task per cell, on a local Ray instance or a cluster (lipgan[ray])."
    accepts = frozenset({"ray_address", "cell_resources", "storage"})
    #: The command-line option that chose this executor (for the one-line errors).
    option = "--executor ray"

    @classmethod
    def from_options(cls, ray_address=None, cell_resources=None, storage=None):
        resources = parse_resources(cell_resources) if cell_resources else None
        return cls(address=ray_address, resources=resources, storage=storage)

    def __init__(self, address: str | None = None, resources=None, storage=None):
        self.ray = import_ray(self.option)
        self.address = address
        self.resources = {"num_cpus": 1.0, **(resources or {})}
        self.storage = Path(storage).expanduser().absolute() if storage else None
        cpus = self.resources["num_cpus"]
        self.default_threads = max(1, int(cpus)) if cpus else None
        self.signum: int | None = None
        self._signals = 0
        self._owned = False

    def describe(self) -> str:
        res = ",".join(f"{k}={v:g}" for k, v in self.resources.items())
        where = self.address or "Ray's default address"
        return f"Ray tasks ({res} each) on {where}"

    def request_stop(self, signum: int, frame=None) -> None:
        self.signum = self.signum or signum
        self._signals += 1  # the run loop cancels the tasks (a handler must not block)

    def _options(self) -> dict:
        options = {k: v for k, v in self.resources.items() if k in _RESOURCE_KEYS}
        if "memory" in options:
            options["memory"] = int(options["memory"])
        custom = {k: v for k, v in self.resources.items() if k not in _RESOURCE_KEYS}
        if custom:
            options["resources"] = custom
        return {**options, "max_retries": RAY_MAX_RETRIES, "retry_exceptions": False}

    def start(self) -> None:
        """Connect to Ray, unless this process already is (a notebook, a test), then refuse in
        one line what Ray would wait on forever: an address where no cluster answers
        (:mod:`lipgan.study.ray_checks`), cell resources the cluster does not have, a
        ``--storage`` its workers cannot write. Ray's driver start-up installs a C-level SIGTERM handler (a
        stack dump, then abort); the study's stop handlers, installed after this, replace it
        while the study runs."""
        import logging

        ray = self.ray
        self._owned = not ray.is_initialized()
        if self._owned:
            check_address(self.address)
            try:
                ray.init(address=self.address, log_to_driver=False, logging_level=logging.WARNING)
            except Exception as exc:  # Ray's ConnectionError, ValueError...: one line
                raise ConfigError(
                    f"--ray-address {self.address or '(Ray default)'}: cannot connect to Ray "
                    f"({plain(first_line(exc))})"
                ) from None
        try:
            check_resources(ray, self.resources)
            if self.storage is not None:  # else the study dir, checked before any write
                check_storage(ray, self.storage)
        except BaseException:
            if self._owned:
                ray.shutdown()
            raise

    def run(self, out, cells, threads):
        if not cells:
            return
        ray = self.ray
        storage = self.storage or Path(out).absolute()
        env = {k: v for k, v in os.environ.items() if k.startswith(FORWARDED_ENV)}
        task = ray.remote(run_cell_task).options(**self._options())
        try:
            refs = {task.remote(str(storage), c.as_dict(), threads, env): c for c in cells}
            pending, cancelled = list(refs), 0
            while pending:
                if self._signals > cancelled:  # 1: graceful cancel; 2: force
                    cancelled = self._signals
                    for ref in pending:
                        ray.cancel(ref, force=cancelled > 1)
                ready, pending = ray.wait(pending, num_returns=1, timeout=0.25)
                for ref in ready:
                    cell = refs[ref]
                    yield cell, self._land(Path(out), cell, ref)
        finally:
            if self._owned:
                ray.shutdown()

    def _land(self, out: Path, cell: Cell, ref) -> dict | None:
        """The task's result, written into the study dir unless the worker's copy is there."""
        try:
            payload = self.ray.get(ref)
        except self.ray.exceptions.RayError as exc:
            if self.signum is not None:  # cancelled by the stop request: nothing recorded
                return None
            error = plain(f"{type(exc).__name__}: {first_line(exc)}")
            lost = tuple(getattr(self.ray.exceptions, name) for name in LOST)
            if isinstance(exc, lost):  # not a result of the method: not recorded, as in the pool
                error = f"its Ray worker died {RAY_MAX_RETRIES + 1} times ({error})"
                return {"status": "killed", "error": error, "cell": cell.as_dict()}
            payload = {"result": {"status": "failed", "error": error, "cell": cell.as_dict()}}
        return write_back(out, cell, payload)


def write_back(out: Path, cell: Cell, payload: dict | None) -> dict | None:
    """The result of a cell run on a worker (``run_cell_task``'s payload), written into the study
    dir with its files unless the worker's copy is already there; None for a stopped cell."""
    if payload is None:  # the cell was stopped by a signal: unfinished, as in the local pool
        return None
    result, files = payload["result"], payload.get("files", {})
    if result["status"] in UNRECORDED:  # killed (OOM?) or refused: not recorded, as in the pool
        return result
    if load_result(out, cell) != result:
        run_dir = cell_dir(out, cell)
        run_dir.mkdir(parents=True, exist_ok=True)
        for name, data in files.items():
            (run_dir / name).write_bytes(data)
        tmp = run_dir / "result.json.tmp"
        tmp.write_text(dumps(result))
        os.replace(tmp, run_dir / "result.json")
    return result


def run_cell_task(
    storage: str, cell: dict, threads: int, env: dict, should_stop=None
) -> dict | None:
    """The body of one cell's Ray task, on a worker: the cell function, stoppable by ray.cancel.

    The cell runs as a child process (one TF runtime per cell, as in the local pool) in a thread,
    so that the task's main thread stays free for the KeyboardInterrupt that ``ray.cancel``
    raises there; it then forwards SIGTERM and waits for the cell to save its checkpoint. A Ray
    Tune trial, which runs in a thread of its actor, passes ``should_stop`` instead: polled every
    quarter second, True stops the cell the same way.
    Returns None for a stopped cell, else ``{"result": ..., "files": {"samples.npy": bytes}}``.
    """
    spec = Cell.from_dict(cell)
    storage_dir = Path(storage)
    run_dir = cell_dir(storage_dir, spec)
    wait_unlocked(run_dir / LOCK, LOCK_WAIT_SECONDS)
    os.environ.update(env)  # FORWARDED_ENV: the driver's settings for its cells
    # The cell stops itself (SIGTERM: checkpoint, exit) if this worker dies under it, rather than
    # run on beside Ray's retry (lipgan.interrupt.stop_when_orphaned, started by the cell).
    os.environ[ORPHAN_ENV] = str(os.getpid())
    accept_cancel()
    processes = CellProcesses()
    with ThreadPoolExecutor(max_workers=1) as pool:
        future = pool.submit(run_cell_process, storage_dir, spec, threads, processes)
        try:
            while True:
                try:
                    result = future.result(timeout=0.25)
                    break
                except FutureTimeout:
                    if should_stop is not None and should_stop():
                        raise KeyboardInterrupt from None
        except KeyboardInterrupt:  # ray.cancel: stop the cell the way the local pool does
            processes.request_stop(signal.SIGTERM)
            future.result()
            return None
    if result is None:
        return None
    samples = run_dir / "samples.npy"
    files = {"samples.npy": samples.read_bytes()} if samples.is_file() else {}
    return {"result": result, "files": files}


def accept_cancel() -> None:
    """Let ``ray.cancel`` reach this task: restore Python's SIGINT handler in the worker.

    ``ray.cancel`` interrupts a running task with SIGINT (a KeyboardInterrupt in its main
    thread). A worker inherits its signal dispositions from the raylet, and the raylet from the
    process that started Ray: started under ``nohup lipgan study --executor ray ... &`` (a shell
    starts background jobs with SIGINT ignored), every worker ignores SIGINT, and a stopped study
    would wait for cells that never hear the cancel. Only the main thread may set a handler; a
    task run in another thread (an async actor) is left as it is.
    """
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)


def wait_unlocked(lock_file: Path, timeout: float) -> bool:
    """Wait (at most ``timeout`` s) until no process holds the run dir's ``flock``; True if free.

    A Ray retry can start while the previous attempt's cell is still saving the checkpoint it was
    told to save when its worker died; starting at once would find the run dir locked and record
    the cell as failed.
    """
    if fcntl is None or not lock_file.is_file():
        return True
    deadline = time.monotonic() + timeout
    with open(lock_file) as f:
        while True:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.flock(f, fcntl.LOCK_UN)
                return True
            except OSError:
                if time.monotonic() > deadline:
                    return False
                time.sleep(0.2)


__all__ = [
    "RAY_INSTALL",
    "accept_cancel",
    "Executor",
    "LocalExecutor",
    "RayExecutor",
    "import_ray",
    "parse_resources",
    "run_cell_task",
    "wait_unlocked",
    "write_back",
]
