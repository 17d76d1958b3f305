"""Cells as Ray Tune trials (``lipgan tune --executor tune``): a study executor on Ray Tune.

Ray Tune schedules the trials (``tune.Tuner`` over the cells, ``tune.with_resources`` per cell),
retries a trial whose worker died (``FailureConfig``), and records the experiment so that a
driver that died (killed, machine lost) resumes it with ``Tuner.restore``. The configs are drawn
by :mod:`lipgan.study.search`, not by a Tune search algorithm, so a search gives the same trials
on every executor; Tune's schedulers that stop trials early (ASHA) are not used, so a search
trial's result does not depend on which others ran beside it.

Each trial runs the same cell function as the other executors
(:func:`lipgan.study.executors.run_cell_task`: the cell in its own process, resumable from its
checkpoint), and reports the cell's result, with its ``samples.npy``, as its one Tune result; the
driver writes it into the study dir when it does not see the worker's copy (no shared storage).

Resume has two layers. A cell is finished when its ``result.json`` records it, so a study dir
copied to another machine resumes there with nothing of Tune's. Tune's own experiment (under
``<storage>/ray_tune/``, named after the cells it runs) is restored only when the driver died
before it ended; a study stopped by a signal removes it, since Tune would count the trials it
stopped as terminated and never run them again.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import os
import shutil
import threading
from pathlib import Path

from lipgan.core.errors import ConfigError, first_line
from lipgan.study.executors import (
    FORWARDED_ENV,
    RAY_INSTALL,
    RAY_MAX_RETRIES,
    RayExecutor,
    run_cell_task,
    write_back,
)
from lipgan.study.ray_checks import plain
from lipgan.study.runner import load_result
from lipgan.study.spec import Cell

#: Where Tune keeps its experiments, under the storage (the study dir by default).
TUNE_DIR = "ray_tune"

#: Tune's legacy console output (silent at ``verbose=0``; the new one prints a table anyway), and
#: no chdir into a trial dir: a cell's relative paths mean what they mean to the driver.
TUNE_ENV = {"RAY_AIR_NEW_OUTPUT": "0", "RAY_CHDIR_TO_TRIAL_DIR": "0"}


def experiment_name(out: Path, cells: list[Cell]) -> str:
    """``<study dir name>-<digest of the cells>``: the same unfinished cells, the same experiment."""
    text = json.dumps([c.as_dict() for c in cells], sort_keys=True)
    return f"{Path(out).name}-{hashlib.sha256(text.encode()).hexdigest()[:12]}"


def tune_trial(config: dict) -> None:
    """A Tune trial (function trainable): one cell, stopped when the driver's flag is set."""
    import ray
    from ray import tune

    flag = config["stop_flag"]
    if ray.get(flag.is_set.remote()):  # a trial Tune starts while the study stops: no run
        return
    payload = run_cell_task(
        config["storage"],
        config["cell"],
        config["threads"],
        config["env"],
        should_stop=lambda: ray.get(flag.is_set.remote()),
    )
    if payload is None:  # stopped: report nothing (the cell stays unfinished)
        return
    files = {k: base64.b64encode(v).decode() for k, v in payload.get("files", {}).items()}
    tune.report({"cell_result": json.dumps(payload["result"]), "files": json.dumps(files)})


def _trial_name(trial) -> str:
    return Cell.from_dict(trial.config["cell"]).name


def _trial_dirname(trial) -> str:
    return f"trial_{trial.trial_id}"


#: Experiments whose driver was asked to stop (read by :class:`StopAll` in the driver process).
_STOPPING: set[str] = set()


def _stop_all_class():
    """:class:`ray.tune.Stopper` that ends the whole experiment once its driver was asked to stop,
    so that Tune starts no further trial (defined on first use: Ray Tune is optional)."""
    from ray import tune

    class StopAll(tune.Stopper):
        def __init__(self, experiment: str):
            self.experiment = experiment

        def __call__(self, trial_id, result) -> bool:
            return False

        def stop_all(self) -> bool:
            return self.experiment in _STOPPING

    return StopAll


class StopFlag:
    """A Ray actor the trials poll: set by the driver's stop request (SIGINT/SIGTERM)."""

    def __init__(self):
        self.value = False

    def set(self) -> None:
        self.value = True

    def is_set(self) -> bool:
        return self.value


#: The logger of Tune's controller, which logs a failed restore of its run state with a
#: 30-line traceback (and then restarts the experiment, which is right for a study: each trial
#: resumes its cell from the run dir's checkpoint, or reads back its finished result).
CONTROLLER_LOGGER = "ray.tune.execution.tune_controller"


class OneLineRestoreFailure(logging.Filter):
    """Turns Tune's "Failed to restore the run state." and its traceback into one line of the
    study's log; every other record passes. One per process: the latest executor's."""

    def __init__(self, executor):
        super().__init__()
        self.executor = executor

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.getMessage().startswith("Failed to restore the run state"):
            return True
        exc = record.exc_info[1] if record.exc_info else None
        reason = f" ({type(exc).__name__}: {first_line(exc)})" if exc else ""
        self.executor.log(
            f"warning: Ray Tune could not restore its experiment's run state{reason}; it "
            "restarts the experiment: finished runs are read back, the others resume from "
            "their checkpoints"
        )
        return False


class TuneExecutor(RayExecutor):
    """Each cell a Ray Tune trial; see the module docstring. Options as :class:`RayExecutor`."""

    def describe(self) -> str:
        res = ",".join(f"{k}={v:g}" for k, v in self.resources.items())
        return f"Ray Tune trials ({res} each) on {self.address or 'Ray default address'}"

    name = "tune"
    description = "One Ray Tune trial per cell (lipgan tune only; lipgan[ray])."
    commands = frozenset({"tune"})
    _stop_sent = False
    option = "--executor tune"

    def __init__(self, address=None, resources=None, storage=None):
        super().__init__(address, resources, storage)
        try:
            import ray.tune  # noqa: F401 - its dependencies (pandas, pyarrow) are the extra's
        except ImportError:
            raise ConfigError(
                f"--executor tune needs Ray Tune, which is not installed: {RAY_INSTALL}"
            ) from None

    def start(self) -> None:
        os.environ.update(TUNE_ENV)
        # Tune's warnings about trials with no result (those a stop request kept from starting):
        # the study's own lines say which runs are unfinished.
        logging.getLogger("ray.tune").setLevel(logging.ERROR)
        controller = logging.getLogger(CONTROLLER_LOGGER)
        for earlier in [f for f in controller.filters if isinstance(f, OneLineRestoreFailure)]:
            controller.removeFilter(earlier)
        controller.addFilter(OneLineRestoreFailure(self))
        super().start()

    def _tune_resources(self) -> dict:
        names = {"num_cpus": "cpu", "num_gpus": "gpu", "memory": "memory"}
        return {names.get(k, k): v for k, v in self.resources.items()}

    def run(self, out, cells, threads):
        if not cells:
            return
        import ray
        from ray import tune

        out = Path(out).absolute()
        storage = self.storage or out
        name = experiment_name(out, cells)
        path = storage / TUNE_DIR / name
        env = {k: v for k, v in os.environ.items() if k.startswith(FORWARDED_ENV)}
        flag = ray.remote(StopFlag).options(num_cpus=0).remote()
        trainable = tune.with_resources(tune_trial, self._tune_resources())
        space = self._space(cells, storage, threads, env, flag)
        try:
            if tune.Tuner.can_restore(path):  # the driver died before this experiment ended
                self.log(f"restoring the Ray Tune experiment {path}")
                tuner = tune.Tuner.restore(
                    str(path),
                    trainable,
                    resume_unfinished=True,
                    resume_errored=True,
                    param_space=space,
                )
            else:
                tuner = tune.Tuner(
                    trainable,
                    param_space=space,
                    tune_config=tune.TuneConfig(
                        trial_name_creator=_trial_name, trial_dirname_creator=_trial_dirname
                    ),
                    run_config=tune.RunConfig(
                        name=name,
                        storage_path=str(storage / TUNE_DIR),
                        failure_config=tune.FailureConfig(max_failures=RAY_MAX_RETRIES),
                        stop=_stop_all_class()(name),
                        verbose=0,
                    ),
                )
            box: list = []

            def fit() -> None:
                try:
                    box.append(tuner.fit())
                except BaseException as exc:  # raised again by the loop below
                    box.append(exc)

            thread = threading.Thread(target=fit, name="lipgan-tune", daemon=True)
            thread.start()
            pending = list(cells)
            while thread.is_alive():
                if self.signum is not None and not self._stop_sent:
                    flag.set.remote()  # running trials stop their runs (a checkpoint each)
                    _STOPPING.add(name)  # and Tune starts no other
                    self._stop_sent = True
                thread.join(timeout=0.5)
                if storage == out:  # a shared study dir: each cell lands as its trial ends
                    for cell in list(pending):
                        if (result := load_result(out, cell)) is not None:
                            pending.remove(cell)
                            yield cell, result
            grid = box[0] if box else None
            if isinstance(grid, BaseException):
                if self.signum is None:
                    raise grid
                grid = None
            reported = {}
            for entry in grid or ():
                if not entry.config:  # a trial Tune never started (the study was stopping)
                    continue
                cell = Cell.from_dict(entry.config["cell"])
                reported[cell.name] = self._land_trial(out, cell, entry.metrics or {}, entry.error)
            for cell in pending:  # trials that ended before a restore read back from the dir
                yield cell, reported.get(cell.name) or load_result(out, cell)
            # Finished, or stopped (Tune would count the stopped trials terminated and never
            # run them again): nothing of this experiment is left to restore.
            shutil.rmtree(path, ignore_errors=True)
        finally:
            _STOPPING.discard(name)
            ray.kill(flag)
            if self._owned:
                ray.shutdown()

    @staticmethod
    def _space(cells, storage, threads, env, flag) -> dict:
        from ray import tune

        return {
            "cell": tune.grid_search([c.as_dict() for c in cells]),
            "storage": str(storage),
            "threads": threads,
            "env": env,
            "stop_flag": flag,
        }

    def _land_trial(self, out: Path, cell: Cell, last: dict, error=None) -> dict | None:
        """A finished trial's cell result, written into the study dir (None: stopped)."""
        if "cell_result" not in last:
            if self.signum is not None:
                return None
            error = (
                f"Ray Tune: {plain(first_line(error))}" if error else "the trial reported no result"
            )
            result = {"status": "failed", "error": error, "cell": cell.as_dict()}
            return write_back(out, cell, {"result": result})
        files = {k: base64.b64decode(v) for k, v in json.loads(last["files"]).items()}
        return write_back(out, cell, {"result": json.loads(last["cell_result"]), "files": files})
