"""Runs a study's cells as subprocesses (one TF runtime per cell): isolation, parallelism, resume.

Layout of a study dir::

    OUT/spec.json                       the StudySpec (a different one is refused unless --force)
    OUT/runs/<data set>/<SPEC>/seed<k>/ an ordinary lipgan run dir per cell, with result.json
    OUT/study.json, study.md, study.png the report

A cell is finished when its ``result.json`` exists and records the same cell (status ok or failed);
an unfinished cell is (re)started with ``python -m lipgan.study.cell``, which resumes its run dir
from the latest checkpoint as ``lipgan run`` does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from lipgan.errors import ConfigError
from lipgan.study.spec import Cell, StudySpec, check_spec, dumps


def default_jobs() -> tuple[int, int]:
    """(parallel cells, intra-op threads per cell): one single-threaded cell per core.

    The toy MLPs are too small for TF's intra-op parallelism to pay on CPU, so cells in parallel
    use the cores better than threads within one cell (measure with ``--jobs`` on idle cores).
    """
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, cores or 1), 1


def cell_dir(out: Path, cell: Cell) -> Path:
    return out / "runs" / cell.name


def load_result(out: Path, cell: Cell) -> dict | None:
    """The recorded result of ``cell`` or None when it is unfinished (or was another cell)."""
    path = cell_dir(out, cell) / "result.json"
    try:
        result = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return result if result.get("cell") == cell.as_dict() else None


def _check_out(out: Path, spec: StudySpec, force: bool) -> None:
    path = out / "spec.json"
    if path.is_file():
        old = json.loads(path.read_text())
        if old != spec.as_dict() and not force:
            raise ConfigError(
                f"{out} holds a study with another spec; use another --out or pass --force"
            )
    out.mkdir(parents=True, exist_ok=True)
    path.write_text(dumps(spec.as_dict()))


def run_cell_process(out: Path, cell: Cell, threads: int) -> dict:
    run_dir = cell_dir(out, cell)
    run_dir.mkdir(parents=True, exist_ok=True)
    cell_file = run_dir / "cell.json"
    cell_file.write_text(dumps(cell.as_dict()))
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL=os.environ.get("TF_CPP_MIN_LOG_LEVEL", "3"))
    if threads:
        env["LIPGAN_STUDY_THREADS"] = str(threads)
    proc = subprocess.run(
        [sys.executable, "-m", "lipgan.study.cell", str(cell_file), str(run_dir)],
        env=env,
        capture_output=True,
        text=True,
    )
    (run_dir / "cell.log").write_text(proc.stdout + proc.stderr)
    result = load_result(out, cell)
    if result is None:  # the process died before writing its result (killed, segfault...)
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        message = lines[-1] if lines else f"exit code {proc.returncode}"
        result = {"status": "failed", "error": message, "cell": cell.as_dict()}
        (run_dir / "result.json").write_text(dumps(result))
    return result


def _eta(done: int, total: int, elapsed: float) -> str:
    if done == 0:
        return "?"
    left = elapsed / done * (total - done)
    return f"{int(left // 60)}m{int(left % 60):02d}s"


def run_cells(
    spec: StudySpec,
    out: Path,
    *,
    jobs: int | None = None,
    threads: int | None = None,
    force: bool = False,
    log: Callable[[str], None] | None = None,
) -> list[dict]:
    """Every cell's result (finished ones read back, the others run), in grid order."""
    check_spec(spec)
    out = Path(out)
    _check_out(out, spec, force)
    default_j, default_t = default_jobs()
    jobs, threads = jobs or default_j, threads if threads is not None else default_t
    log = log or (lambda line: None)
    cells = spec.cells()
    results: dict[Cell, dict] = {}
    todo = []
    for cell in cells:
        result = load_result(out, cell)
        if result is None:
            todo.append(cell)
        else:
            results[cell] = result
    total, started = len(cells), time.perf_counter()
    log(f"study: {total} cells, {len(results)} already finished, {len(todo)} to run, {jobs} jobs")
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(run_cell_process, out, cell, threads): cell for cell in todo}
        for n, future in enumerate(as_completed(futures), 1):
            cell = futures[future]
            results[cell] = result = future.result()
            state = "ok" if result["status"] == "ok" else f"FAILED ({result.get('error')})"
            elapsed = time.perf_counter() - started
            log(
                f"[{len(results)}/{total}] {cell.name}: {state}  "
                f"elapsed {elapsed:.0f}s  ETA {_eta(n, len(todo), elapsed)}"
            )
    return [results[cell] for cell in cells]
