"""Runs a study's cells as subprocesses (one TF runtime per cell): isolation, parallelism, resume.

Layout of a study dir::

    OUT/spec.json                       the StudySpec (a different one is refused unless --force)
    OUT/runs/<data set>/<SPEC>/seed<k>/ an ordinary lipgan run dir per cell, with result.json
    OUT/study.json, study.md, study.png the report
    OUT/sessions/<start>-<pid>.json     one per driver session: the wall time end to end
                                        (:mod:`lipgan.study.sessions`)

A cell is finished when its ``result.json`` exists and records the same cell (status ok or failed);
an unfinished cell is (re)started with ``python -m lipgan.config.cells``, which resumes its run dir
from the latest checkpoint as ``lipgan run`` does.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from lipgan.core import child_process
from lipgan.core.compare import differences
from lipgan.core.errors import ConfigError, Interrupted
from lipgan.run.interrupt import SIGNALS
from lipgan.study import own_data, sessions
from lipgan.study.cell import RUN_DIR_REFUSED
from lipgan.study.spec import Cell, StudySpec, cell_dir, check_spec, dumps

#: The module a cell runs in, as a child process: the gin edge's, which parses the cell's config
#: and trains it (:mod:`lipgan.config.cells`). Named, never imported: the study imports no gin.
CELL_PROCESS = "lipgan.config.cells"


def default_jobs() -> tuple[int, int]:
    """(parallel cells, intra-op threads per cell): one single-threaded cell per core.

    The toy MLPs are too small for TF's intra-op parallelism to pay on CPU, so cells in parallel
    use the cores better than threads within one cell (measure with ``--jobs`` on idle cores).
    """
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, cores or 1), 1


def read_result(out: Path, cell: Cell) -> tuple[dict | None, str | None]:
    """(the recorded result of ``cell`` or None, why a ``result.json`` there is no result).

    Anything but a cell's result (a torn write, ``[]``, a dict without a status, another
    cell's) is not a result: the cell is unfinished and runs again. The reason is None when
    there is no file or it records another cell (moved aside when the cell runs).
    """
    path = cell_dir(out, cell) / "result.json"
    try:
        result = json.loads(path.read_text())
    except FileNotFoundError:
        return None, None
    except (OSError, ValueError) as exc:
        return None, f"unreadable ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})"
    if not isinstance(result, dict):
        return None, f"a JSON {type(result).__name__}, not a result"
    if cell.differences(result.get("cell")):
        return None, None
    if result.get("status") not in ("ok", "failed") or not isinstance(
        result.get("metrics", {}), dict
    ):
        return None, f"no result (status {result.get('status')!r})"
    return result, None


def load_result(out: Path, cell: Cell) -> dict | None:
    """The recorded result of ``cell`` or None when it is unfinished (or was another cell)."""
    return read_result(out, cell)[0]


def results_of(
    out: Path, cells: list[Cell], warn: Callable[[str], None] | None = None
) -> dict[Cell, dict]:
    """``{cell: result}`` of the finished ``cells``; a ``result.json`` that is no result is one
    ``warning:`` line to ``warn`` (default: stderr, even under --quiet) and an unfinished cell."""
    warn = warn or _warn
    found = {}
    for cell in cells:
        result, problem = read_result(Path(out), cell)
        if problem:
            path = cell_dir(Path(out), cell) / "result.json"
            warn(f"warning: {path} holds {problem}; the cell counts as unfinished and runs again")
        if result is not None:
            found[cell] = result
    return found


def _warn(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def finished_results(spec: StudySpec, out: Path) -> list[dict]:
    """The recorded results of ``spec``'s finished cells under ``out``, in grid order."""
    return list(results_of(Path(out), spec.cells()).values())


def check_out_dir(out: Path, option: str = "--out") -> None:
    """One line, before anything is written, for a study dir that cannot be one: a file, under
    a file, or in a place this process cannot write (read-only, immutable, /proc)."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"{option} {out} is a file, not a directory; pick another {option}")
    existing = next(p for p in (out, *out.absolute().parents) if p.exists())
    if not existing.is_dir():
        raise ConfigError(
            f"{option} {out}: {existing} is a file, so no directory can be made under it; "
            f"pick another {option}"
        )
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ConfigError(
            f"{option} {out}: {existing} is not writable (read-only or immutable); pick a "
            f"writable {option}"
        )


def _check_out(out: Path, spec: StudySpec, force: bool) -> None:
    check_out_dir(out)
    if not force:  # a user data set edited since: its own line, not "another spec"
        own_data.check_unchanged(out, getattr(spec, "data", ()))
    path = out / "spec.json"
    if path.is_file():
        try:
            old = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            old = f"unreadable ({str(exc).splitlines()[0]})"
        if (not isinstance(old, dict) or differences(old, spec.as_dict())) and not force:
            what = old if isinstance(old, str) else "another spec"
            raise ConfigError(
                f"{path} holds {what}; use another --out, or pass --force to replace it (cells "
                "recorded for another spec are moved aside, not overwritten)"
            )
    tmp = path.with_name(path.name + ".tmp")  # atomic: a kill leaves the old spec or the new
    try:
        out.mkdir(parents=True, exist_ok=True)
        tmp.write_text(dumps(spec.as_dict()))
        os.replace(tmp, path)
    except OSError as exc:
        raise ConfigError(
            f"--out {out}: cannot write {path} ({exc.strerror or exc}); pick a writable --out"
        ) from None


#: Exit statuses of a cell stopped by a signal (lipgan's graceful stop exits 128 + signal; a
#: negative status is Python's "killed by this signal"): such a cell is unfinished, not failed.
STOP_STATUSES = {128 + signal.SIGINT, 128 + signal.SIGTERM, -signal.SIGINT, -signal.SIGTERM}

#: Result statuses that are not results of the method and are never recorded: a cell killed by a
#: signal the study did not send (out of memory), or one whose run dir was refused
#: (:data:`lipgan.study.cell.RUN_DIR_REFUSED`). The study stops with a line; a re-run retries them.
UNRECORDED = ("killed", "refused")


class CellProcesses:
    """The live cell processes of one study, and the study-wide stop request.

    Each cell runs in its own session, so a terminal's Ctrl-C reaches only the study process; the
    study then sends each running cell one SIGTERM (the cell saves its checkpoint and exits
    143), starts no new cell, and stops with :class:`~lipgan.core.errors.Interrupted`. Re-running
    the same command resumes. A second signal is forwarded as it is (the cells abort at once).
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._live: set[subprocess.Popen] = set()
        self.signum: int | None = None

    def request_stop(self, signum: int, frame=None) -> None:
        forward = signal.SIGTERM if self.signum is None else signum
        self.signum = self.signum or signum
        with self._lock:
            for proc in self._live:
                if proc.poll() is None:
                    proc.send_signal(forward)

    def run(self, args: list[str], env: dict) -> subprocess.CompletedProcess | None:
        """Run ``python -m lipgan.config.cells CELL_JSON RUN_DIR`` (:data:`CELL_PROCESS`) to its
        end, ``env`` overriding the variables of :func:`lipgan.core.child_process.environment`; None
        when a stop was requested first.

        The cell's output goes straight to ``RUN_DIR/cell.log`` (appended: a resumed cell keeps
        every part), so a cell that outlives the study process (``kill -9`` of the study)
        still logs all it says; the completed process's ``stderr`` is what it appended. The cell
        runs in the study's working folder, so that relative paths in its bindings mean what
        they mean to the study command.
        """
        log = Path(args[1]) / "cell.log"
        with open(log, "a") as output:
            start = output.tell()
            with self._lock:
                if self.signum is not None:
                    return None
                proc = child_process.start(
                    CELL_PROCESS, *args, env=env, cwd=os.getcwd(), start_new_session=True,
                    stdout=output, stderr=subprocess.STDOUT,
                )  # fmt: skip
                self._live.add(proc)
            try:
                proc.wait()
            finally:
                with self._lock:
                    self._live.discard(proc)
        with open(log, errors="replace") as written:
            written.seek(start)
            return subprocess.CompletedProcess(proc.args, proc.returncode, "", written.read())


def run_cell_process(
    out: Path, cell: Cell, threads: int, processes: CellProcesses | None = None
) -> dict | None:
    """Run ``cell`` in its own process; its result, or None when it was stopped by a signal (or
    never started because the study is stopping): an unfinished cell, resumed by a re-run.

    A cell another driver finished since this one looked (two drivers on one ``--out``) is
    not run again: its result is read back. A cell that failed in a way the method does not
    explain (a TensorFlow crash, a dead process; not a refused setting or a non-finite loss) is
    run once more from its checkpoint before its failure is recorded, since a study must not
    drop a config for the machine's fault (a halving search would never see it again); the
    first failure is kept in ``result.first-try.json`` and named in the result."""
    processes = processes or CellProcesses()
    fresh = load_result(out, cell) is None
    result = _run_cell_once(out, cell, threads, processes)
    if fresh and result and result.get("status") == "failed" and result.get("unexpected"):
        run_dir = cell_dir(out, cell)
        os.replace(run_dir / "result.json", run_dir / "result.first-try.json")
        retried = _run_cell_once(out, cell, threads, processes)
        if retried is not None:
            retried["first_try"] = result["error"]
            (run_dir / "result.json").write_text(dumps(retried))
        return retried
    return result


def _run_cell_once(out: Path, cell: Cell, threads: int, processes: CellProcesses) -> dict | None:
    run_dir = cell_dir(out, cell)
    if (result := load_result(out, cell)) is not None:
        return result
    cell_file = run_dir / "cell.json"
    try:
        _move_other_cell_aside(run_dir, cell)
        run_dir.mkdir(parents=True, exist_ok=True)
        cell_file.write_text(dumps(cell.as_dict()))
    except OSError as exc:  # the storage, not the method: nothing recorded, as a refused run dir
        error = f"cannot write its run dir {run_dir} ({exc.strerror or exc})"
        return {"status": "refused", "error": error, "cell": cell.as_dict()}
    env = {"LIPGAN_STUDY_THREADS": str(threads)} if threads else {}
    # Where the cell finds a user data set's frozen copy (lipgan.study.own_data).
    env[own_data.DATA_ENV] = str((out / own_data.DATA_DIR).absolute())
    proc = processes.run([str(cell_file), str(run_dir)], env)
    if proc is None:
        return None
    result = load_result(out, cell)
    if result is None and proc.returncode in STOP_STATUSES:
        return None
    if result is None and proc.returncode == RUN_DIR_REFUSED:
        return {"status": "refused", "error": _error_line(proc), "cell": cell.as_dict()}
    if result is None and proc.returncode < 0:
        # Killed by a signal the study did not send (the kernel's out-of-memory killer sends
        # SIGKILL): not a result of the method, so nothing is recorded and a re-run retries it.
        name = signal.Signals(-proc.returncode).name
        return {
            "status": "killed",
            "error": f"killed by {name} (out of memory?); see {run_dir / 'cell.log'}",
            "cell": cell.as_dict(),
        }
    if result is None:  # the process died before writing its result (segfault, exit...)
        result = {"status": "failed", "error": _error_line(proc), "cell": cell.as_dict()}
        result["unexpected"] = True
        (run_dir / "result.json").write_text(dumps(result))
    return result


_PYTHON_ERROR = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b")


def _error_line(proc: subprocess.CompletedProcess) -> str:
    """A dead cell's last lipgan ``Error:`` line or Python exception (not TensorFlow's C++ log
    lines), or its exit status."""
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    errors = [ln for ln in lines if ln.startswith("Error: ") or _PYTHON_ERROR.match(ln)]
    return (errors or [f"exit code {proc.returncode}"])[-1]


def _move_other_cell_aside(run_dir: Path, cell: Cell) -> None:
    """A run dir that trained another cell (the spec changed under ``--force``, e.g. its steps)
    is renamed ``<dir>-replaced[-k]`` rather than resumed or overwritten, unless ``cell``
    continues it (:meth:`Cell.continues`: a successive-halving trial promoted to the next rung)."""
    try:
        recorded = json.loads((run_dir / "cell.json").read_text())
    except (OSError, ValueError):
        return
    if not cell.differences(recorded) or cell.continues(recorded):
        return
    aside, n = run_dir.with_name(run_dir.name + "-replaced"), 1
    while aside.exists():
        n += 1
        aside = run_dir.with_name(f"{run_dir.name}-replaced-{n}")
    os.replace(run_dir, aside)


def _eta(done: int, total: int, elapsed: float) -> str:
    if done == 0:
        return "?"
    left = elapsed / done * (total - done)
    return f"{int(left // 60)}m{int(left % 60):02d}s"


def run_cells(
    spec: StudySpec,
    out: Path,
    *,
    executor,
    threads: int | None = None,
    force: bool = False,
    log: Callable[[str], None] | None = None,
    prepare: Callable[[], None] | None = None,
) -> list[dict]:
    """Every cell's result (finished ones read back, the others run), in grid order.

    ``executor`` (:mod:`lipgan.study.executors`, which imports this module) runs the unfinished
    cells. Everything else (resume, progress, stop) is here, the same for every executor.
    ``prepare``: called once the study dir is accepted, before any cell (a user data set's
    frozen copy is written then, never into a study dir that is refused).
    """
    check_spec(spec)
    out = Path(out)
    _check_out(out, spec, force)
    if prepare is not None:
        prepare()
    cells = spec.cells()
    results = execute(cells, out, executor=executor, threads=threads, log=log)
    return [results[cell] for cell in cells]


def execute(
    cells: list[Cell],
    out: Path,
    *,
    executor,
    threads: int | None = None,
    log: Callable[[str], None] | None = None,
) -> dict[Cell, dict]:
    """``{cell: result}`` for every cell of ``cells`` under ``out``: the finished ones read back,
    the others run by ``executor``. Raises :class:`Interrupted` (a stop, or cells left
    unfinished) or :class:`ConfigError` (cells killed, e.g. out of memory) with the line that
    says how to resume; a study and a tuned study (:mod:`lipgan.study.tune`) share it."""
    out = Path(out)
    threads = threads if threads is not None else (executor.default_threads or default_jobs()[1])
    log = log or (lambda line: None)
    results = results_of(out, cells)
    todo = [cell for cell in cells if cell not in results]
    if todo:  # before the stop handlers (Ray's start-up installs its own) and before any
        executor.start()  # record: an executor that cannot run the cells refuses in one line
    total, started = len(cells), time.perf_counter()
    log(
        f"study: {total} cells, {len(results)} already finished, {len(todo)} to run, "
        f"{executor.describe()}"
    )
    killed: list[str] = []
    refused: list[str] = []
    executor.log = log  # an executor's own lines (e.g. Ray Tune restoring an experiment)
    session = sessions.DriverSession.start(out) if todo else None
    with _forwarding_signals(executor), _recording(session, executor):
        for n, (cell, result) in enumerate(executor.run(out, todo, threads), 1):
            if result is None:
                log(f"[{len(results)}/{total}] {cell.name}: stopped, resumable")
                continue
            if result["status"] in UNRECORDED:
                unrecorded = killed if result["status"] == "killed" else refused
                unrecorded.append(f"{cell.name}: {result['error']}")
                log(f"[{len(results)}/{total}] {cell.name}: {result['error']}")
                continue
            results[cell] = result
            session.cell_finished()
            state = "ok" if result["status"] == "ok" else f"FAILED ({result.get('error')})"
            elapsed = time.perf_counter() - started
            log(
                f"[{len(results)}/{total}] {cell.name}: {state}  "
                f"elapsed {elapsed:.0f}s  ETA {_eta(n, len(todo), elapsed)}"
            )
    if refused and executor.signum is None:
        raise ConfigError(
            f"{len(refused)} cell(s) could not use their run dir ({refused[0]}); nothing was "
            "recorded for them: finish the study with the lipgan that started it, or move those "
            f"run dirs away to rerun them, then run the same command again ({out})"
        )
    if killed and executor.signum is None:
        raise ConfigError(
            f"{len(killed)} cell(s) did not finish ({killed[0]}); free memory or lower --jobs, "
            f"then run the same command again to retry them ({out})"
        )
    if executor.signum is not None or len(results) < total:
        signum = executor.signum or signal.SIGTERM
        raise Interrupted(
            f"{signal.Signals(signum).name}: the study stopped with {len(results)} of {total} "
            f"cells finished; run the same command again to resume ({out})",
            128 + signum,
        )
    return results


@contextlib.contextmanager
def _recording(session: sessions.DriverSession | None, executor):
    """Ends ``session`` (:mod:`lipgan.study.sessions`) as finished or stopped, whatever way the
    loop leaves (a stop request, an error, or all cells run)."""
    try:
        yield
    except BaseException:
        if session is not None:
            session.end("stopped")
        raise
    if session is not None:
        session.end("stopped" if executor.signum is not None else "finished")


@contextlib.contextmanager
def _forwarding_signals(processes):
    """SIGINT/SIGTERM to the study become a stop request forwarded to its cells (main thread
    only, as Python allows; the previous handlers are restored afterwards). ``processes`` is
    anything with ``request_stop(signum, frame)``: an executor or :class:`CellProcesses`."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, processes.request_stop) for sig in SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
