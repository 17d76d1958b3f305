"""Fig. 1 of Gulrajani et al. (2017), "Improved Training of Wasserstein GANs", on lipgan's parts.

* **1a** — for each toy set (8 Gaussians, 25 Gaussians, Swiss roll) a ReLU MLP critic 2→512³→1
  (He-initialized, as the official code's ``'he'`` layers) is trained against a *fixed* generator
  under weight clipping and under the gradient penalty. As in the official ``gan_toy.py``
  (``FIXED_GENERATOR``: ``real_data + 1.*tf.random_normal(tf.shape(real_data))``), the fixed
  generator adds N(0, 1) noise to the *same* real batch, so each fake point is paired with the real
  point it came from and the penalty's interpolates stay near it. Only the critic trains, so with
  enough steps it approaches the optimal critic of that constraint; the figure is its value surface
  on a 128×128 grid over [-3, 3]².
* **1b left** — Swiss roll, a 12-layer ReLU MLP critic and generator trained as a WGAN by lipgan's
  engine under clipping c ∈ {0.1, 0.01, 0.001} and under GP; then ‖∂L/∂hₗ‖, the norm of the gradient
  of the critic loss w.r.t. each hidden layer's activations
  (:func:`lipgan.metrics.diagnostics.layer_gradient_norms`).
* **1b right** — histograms of those critics' weights (clipping piles them at ±c).

The constraints are lipgan's plugins (``WeightClip``, ``GradientPenalty``), the models lipgan's MLPs
and the 1b training loop lipgan's :class:`~lipgan.core.engine.WGAN`. The paper gives no iteration
counts for Fig. 1 (1a's critics are "trained to optimality"); ours are chosen so that the full run
takes minutes, not hours, on 2 CPU cores; see ``docs/fig1.md``. ``quick=True`` is a small variant
(width-128 1b nets, 5 iterations) that still shows the 1b result.

Where: the 1a rows are :mod:`lipgan.reproduce.fig1a`, the 1b rows :mod:`lipgan.reproduce.fig1b`,
what they share :mod:`lipgan.reproduce.fig1_setup`; this module runs every row (in worker
processes) and writes ``fig1.json`` and the figures.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path

from lipgan.reproduce.fig1_setup import FULL, QUICK, TOY_SETS, Settings
from lipgan.reproduce.fig1a import FIG1A_KINDS, fig1a_row
from lipgan.reproduce.fig1b import (
    FIG1B_CONFIGS,
    _config_name,
    _fig1b_result,
    check_fig1b,
    fig1b_row,
)

#: Every panel of the figure as an independent task, the costliest first: the pool's workers take
#: them in this order, which makes it longest-processing-time-first scheduling (each row ends
#: at most one row's time after the other worker's). The 12-layer WGANs cost the most (GP's
#: double backprop more), then the 1a rows Björck, AOL, GP and clipping (benchmarks/RESULTS.md,
#: "`lipgan reproduce fig1`").
ROWS = tuple(("b", kind, c) for kind, c in reversed(FIG1B_CONFIGS)) + tuple(
    ("a", toy_set, kind)
    for kind in ("bjorck", "aol", "gradient_penalty", "weight_clip")
    for toy_set, _ in TOY_SETS
)


def run_row(task: tuple, s: Settings) -> tuple[tuple, dict, str]:
    """Train and measure one entry of :data:`ROWS`; returns (task, its numbers, its log line)."""
    part, first, second = task
    row, line = fig1a_row(first, second, s) if part == "a" else fig1b_row(first, second, s)
    return task, row, line


def source_digest(roots=None) -> str:
    """A digest of the ``.py`` sources under ``roots`` (default: the lipgan and lipgan_plugins
    packages) as they are on disk now.

    Why: a worker process imports the code when it starts, not when the command was typed, so a
    tree edited while a parallel run starts its workers gives rows computed by other code than
    the rest, with nothing in the output to show it: the likely cause of a run's three Björck rows
    above their certified bound, which the committed code, deterministic in a single-threaded
    worker, does not reproduce (CHANGELOG.md, Fixed). :func:`run_tasks` compares each worker's digest,
    taken right after its imports, with its own.
    """
    import hashlib

    if roots is None:
        import importlib.util

        # Located, not imported: the core never imports the built-in plugins (test_layering).
        roots = [
            Path(importlib.util.find_spec(name).origin).parent
            for name in ("lipgan", "lipgan_plugins")
        ]
    digest = hashlib.sha256()
    for root in map(Path, roots):
        for path in sorted(root.rglob("*.py")):
            digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


_WORKER_DIGEST = None


def _worker_init(threads: int, verbose: bool = False) -> None:
    """Pool initializer: TensorFlow imported as the CLI imports it (its C++ start-up lines and
    Python warnings hidden unless ``verbose``: a worker writes to the user's terminal), its thread
    pools set before it starts, then every module a row uses imported at once (not row by row,
    minutes later) and the digest of that code.

    The warning hidden that a user would otherwise see most: "5 out of the last 5 calls to
    critic_trainer.<locals>.train_steps triggered tf.function retracing". No function retraces:
    each 1a row builds its own critic and optimizer, so its ``train_steps`` is a new function
    traced once; TensorFlow's heuristic counts the traces of every function built from the same
    code.
    """
    from lipgan.core.quiet_tf import import_tensorflow

    import_tensorflow(verbose)
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(threads)
    import lipgan.core.engine  # noqa: F401
    import lipgan.data.pipeline  # noqa: F401
    import lipgan.data.toy  # noqa: F401
    import lipgan.metrics.diagnostics  # noqa: F401
    import lipgan.models  # noqa: F401
    import lipgan.plots.toy  # noqa: F401
    from lipgan.core.plugins import load_registry

    load_registry()  # imports every built-in plugin module
    global _WORKER_DIGEST
    _WORKER_DIGEST = source_digest()


def _run_row_in_worker(task: tuple, s: Settings) -> tuple[tuple, dict, str, str]:
    return (*run_row(task, s), _WORKER_DIGEST)


def check_sources(digest: str, worker_digests: dict) -> None:
    """Raise one line if a worker ran other code than ``digest`` (see :func:`source_digest`)."""
    from lipgan.core.errors import ConfigError

    mixed = sorted(str(task) for task, d in worker_digests.items() if d != digest)
    if mixed:
        raise ConfigError(
            f"the lipgan sources changed while the rows ran: {len(mixed)} row(s) (e.g. "
            f"{mixed[0]}) ran other code than this process; rerun without editing the tree"
        )


def run_rows(s: Settings, log: Callable[[str], None], jobs: int, verbose: bool = False) -> dict:
    """Every row of :data:`ROWS`, in ``jobs`` worker processes (in this process when 1).

    The rows share nothing (each seeds its own model and data), so running them side by side
    changes no number beyond float rounding (one thread per worker sums in another order). Why
    processes: the toy MLPs are too small for TensorFlow's intra-op threads to keep two cores
    busy (the same reason ``lipgan study`` runs one single-threaded cell per core,
    :func:`lipgan.study.runner.default_jobs`). ``verbose``: the workers show TensorFlow's logs.
    """
    done = run_tasks(ROWS, s, log, jobs, verbose)
    fig1a_result = {
        toy_set: {kind: done[("a", toy_set, kind)] for kind in FIG1A_KINDS}
        for toy_set, _ in TOY_SETS
    }
    rows_b = {_config_name(kind, c): done[("b", kind, c)] for kind, c in FIG1B_CONFIGS}
    return {"fig1a": fig1a_result, "fig1b": _fig1b_result(rows_b)}


def run_tasks(
    tasks, s: Settings, log: Callable[[str], None], jobs: int, verbose: bool = False
) -> dict:
    """``{task: row}`` for the given entries of :data:`ROWS`, as :func:`run_rows` runs them."""
    done = {}
    if jobs <= 1:
        for task in tasks:
            _, done[task], line = run_row(task, s)
            log(line)
        return done
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else jobs
    threads = max(1, (cores or 1) // jobs)
    digest, worker_digests = source_digest(), {}
    with ProcessPoolExecutor(
        max_workers=jobs,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_worker_init,
        initargs=(threads, verbose),
    ) as pool:
        futures = [pool.submit(_run_row_in_worker, task, s) for task in tasks]
        for future in as_completed(futures):
            task, done[task], line, worker_digests[task] = future.result()
            log(line)
    check_sources(digest, worker_digests)
    return done


def default_jobs() -> int:
    """One worker per usable core (at most one per row)."""
    from lipgan.study.runner import default_jobs as per_core

    return min(per_core()[0], len(ROWS))


def run(
    out_dir,
    quick: bool = False,
    log: Callable[[str], None] = print,
    jobs: int | None = None,
    verbose: bool = False,
) -> dict:
    """Train everything, write ``fig1.json``, ``fig1a.png`` and ``fig1b.png`` to ``out_dir``.

    ``jobs``: worker processes for the rows (:func:`run_rows`); default one per core.
    ``verbose``: the workers show TensorFlow's C++ and Python logs (``lipgan --verbose``).
    """
    from lipgan.plots.fig1 import plot_fig1a, plot_fig1b

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    s = QUICK if quick else FULL
    jobs = default_jobs() if jobs is None else jobs
    started = time.perf_counter()
    cpu_started = _children_cpu_seconds()
    result = {"paper": "Gulrajani et al. 2017, Fig. 1", "quick": quick, "settings": s.as_dict()}
    result.update(run_rows(s, log, jobs, verbose))
    result["fig1b"]["claim_failures"] = check_fig1b(result)
    result["wall_seconds"] = time.perf_counter() - started
    result["jobs"] = jobs
    result["cpu_seconds"] = _children_cpu_seconds() - cpu_started
    (out / "fig1.json").write_text(json.dumps(result))
    plot_fig1a(result, out / "fig1a.png")
    plot_fig1b(result, out / "fig1b.png")
    log(
        f"fig1 written to {out} in {result['wall_seconds']:.0f} s "
        f"({jobs} job{'s' if jobs != 1 else ''}, {result['cpu_seconds']:.0f} CPU-seconds)"
    )
    return result


def _children_cpu_seconds() -> float:
    """User + system CPU time of this process and its finished children (the pool's workers)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system
