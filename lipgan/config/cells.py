"""A study cell's gin: its SPEC turned into a trainer, and the process a cell runs in.

A study cell is a shipped gin config plus bindings (:meth:`lipgan.study.spec.Cell.gin`). The study
(:mod:`lipgan.study`) imports no gin: it starts each cell as ``python -m lipgan.config.cells
CELL_JSON RUN_DIR`` (:data:`lipgan.study.runner.CELL_PROCESS`), and this module, at the gin edge,
parses the cell's config and hands the training to :func:`lipgan.study.cell.measure`, which takes
the curve, evaluates and writes ``result.json`` (:func:`lipgan.study.cell.main`). ``lipgan tune
--bench`` builds its rows' trainers with :func:`cell_trainer`. An image study's reference rows
(real data, uniform noise) need the data sets' data, built from their gin the same way: the
study starts ``python -m lipgan.config.cells --references ARGS_JSON OUT_JSON``
(:func:`lipgan.study.image_references.in_child`), and :func:`data_of` builds it here.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from lipgan.config import gin_binding as config
from lipgan.study import cell as study_cell
from lipgan.study import image_references
from lipgan.study.spec import DATASETS, Cell, image_metrics


def _parse(cell: Cell, data_dir=None) -> None:
    """Parse the cell's gin config and bindings into gin (the plugins discovered first; a user
    data set's frozen copy in ``data_dir``, default ``$LIPGAN_STUDY_DATA``:
    :mod:`lipgan.study.own_data`)."""
    from lipgan.core.plugins import load_registry

    gin_files, bindings = cell.gin(data_dir)
    registry = load_registry().registry
    # --steps shortens the run: stretch the config's learning-rate decay to match (bindings the
    # user passed with --bind come last and still win).
    schedule = config.stretched_schedules(gin_files, cell.steps, registry)
    config.parse(gin_files, schedule + bindings, registry)


def run_cell(cell: dict, run_dir: Path) -> dict:
    """Train and measure a cell given as its JSON dict (gin files and bindings, :class:`Cell`)."""
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
    # `lipgan run`'s call (same settings, run dir checks, checkpoints, resume, gin record).
    return study_cell.measure(
        lambda timing: config.train_configured(run_dir=run_dir, progress=timing),
        run_dir,
        eval_samples=spec.eval_samples,
        eval_every=spec.eval_every,
        metrics=image_metrics(spec.dataset, spec.metrics),
        evaluate=own,
    )


def cell_trainer(cell: Cell, data_dir=None):
    """The Trainer a cell trains, built (not trained) from its gin (a user data set's frozen copy
    in ``data_dir``)."""
    _parse(cell, data_dir)
    return config.build_trainer()


def data_of(dataset: str, seed: int, bindings=()) -> dict:
    """The training data of ``dataset``'s study cells with ``seed``: ``{'factory', 'batch_size',
    'inception_weights'}``, from its shipped config and ``bindings``, built as ``lipgan run``
    builds it."""
    from lipgan.core.plugins import default_registry

    gin_files, cell_bindings = Cell(dataset, "none", seed, 1, 2, tuple(bindings)).gin()
    trainer = config.trainer_of(gin_files, cell_bindings, default_registry())
    return {
        "factory": trainer.data_factory,
        "batch_size": trainer.global_batch_size,
        "inception_weights": trainer.inception_weights,
    }


def main(argv: list[str]) -> int:
    if argv[:1] == [image_references.CHILD_FLAG]:
        return image_references.child_main(argv[1:], data_of)
    return study_cell.main(argv, run_cell)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
