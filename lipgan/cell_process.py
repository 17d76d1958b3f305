"""A study cell's process: ``python -m lipgan.cell_process CELL_JSON RUN_DIR``, the gin edge of a
study.

A cell is a shipped gin config and bindings (:meth:`lipgan.study.spec.Cell.gin`); this module
parses them once into the run's :class:`lipgan.Trainer` (its :class:`lipgan.spec.RunSpec`, through
the gin root ``train``) and hands it to the study's library (:mod:`lipgan.study.cell`), which
trains and measures it without gin. The study's modules import no gin: the runner starts this
module, and ``lipgan tune --bench`` passes :func:`cell_trainer` to :mod:`lipgan.study.row_bench`.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def _parse(cell, data_dir=None) -> None:
    """Parse ``cell``'s gin (files, the stretched decay, its bindings; ``data_dir``: a user data
    set's frozen copy, :mod:`lipgan.study.own_data`): gin configured."""
    from lipgan import config
    from lipgan.plugins import load_registry

    registry = load_registry().registry
    gin_files, bindings = cell.gin(data_dir)
    # --steps shortens the run: stretch the config's learning-rate decay to match (bindings the
    # user passed with --bind come last and still win).
    schedule = config.stretched_schedules(gin_files, cell.steps, registry)
    config.parse(gin_files, schedule + bindings, registry)


def cell_trainer(cell, data_dir=None):
    """The :class:`lipgan.Trainer` a cell trains, built (not trained) from its gin."""
    from lipgan import config

    _parse(cell, data_dir)
    return config.build_trainer()


def run_cell(cell: dict, run_dir: Path) -> dict:
    """Train and measure a cell given as its JSON dict (gin files and bindings) in ``run_dir``:
    `lipgan run`'s call (same settings, run dir checks, checkpoints, resume, gin record)."""
    from lipgan import config
    from lipgan.study.cell import measure
    from lipgan.study.spec import DATASETS, Cell, image_metrics

    threads = int(os.environ.get("LIPGAN_STUDY_THREADS", "0"))
    if threads:
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(threads)
    spec = Cell.from_dict(cell)
    _parse(spec)
    own = None
    if spec.dataset not in DATASETS:  # a user data set: measured on its held-out rows
        from lipgan.study.own_data import cell_data_path
        from lipgan.study.own_metrics import cell_metrics

        path = cell_data_path(spec.dataset)
        own = lambda view, sampler: cell_metrics(view, path, sampler)  # noqa: E731
    return measure(
        lambda timing: config.train_configured(run_dir=run_dir, progress=timing),
        run_dir,
        eval_samples=spec.eval_samples,
        eval_every=spec.eval_every,
        metrics=image_metrics(spec.dataset, spec.metrics),
        evaluate=own,
    )


if __name__ == "__main__":
    from lipgan.study.cell import main

    sys.exit(main(sys.argv[1:], run_cell))
