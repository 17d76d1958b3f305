"""``lipgan study``: constraint × seed × data set, each cell an ordinary lipgan run, one report.

    from lipgan.study import StudySpec, run_study
    report = run_study(StudySpec(constraints=("gradient_penalty", "spectral_norm"),
                                 datasets=("8gaussians",), seeds=3, steps=500), "studies/s1")

(``steps=None``, the default, trains each data set for its own config's ``train.steps``.)

A data set of your own (docs/study.md, "Your own data"; :mod:`lipgan.study.own_data`): ``data=``
takes what :class:`lipgan.Trainer` takes (a NumPy array, a ``tf.data.Dataset``, a TFDS name) or a
``.npy``/``.npz`` path, or a list of them; it is added to ``spec.datasets`` under its stem and a
short content hash, and measured against held-out rows::

    run_study(StudySpec(("gradient_penalty",), (), seeds=2, steps=500), "studies/mine",
              data=points, data_name="points", modes=centres)

See docs/study.md for the protocol (PacGAN, Lin et al. 2018, Table 1) and the report's columns.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

from lipgan.errors import ConfigError
from lipgan.study.spec import EVAL_EVERY, EVAL_SAMPLES, QUICK, Cell, StudySpec, default_constraints

__all__ = [
    "EVAL_EVERY",
    "EVAL_SAMPLES",
    "QUICK",
    "Cell",
    "StudyReport",
    "StudySpec",
    "default_constraints",
    "run_study",
]


@dataclasses.dataclass
class StudyReport:
    spec: StudySpec
    results: list[dict]
    paths: dict[str, Path]


def run_study(
    spec: StudySpec,
    out: str | Path,
    *,
    jobs: int | None = None,
    threads: int | None = None,
    force: bool = False,
    log: Callable[[str], None] | None = None,
    command: str = "",
    executor=None,
    report_only: bool = False,
    data=None,
    data_name: str | None = None,
    modes=None,
    mode_std: float | None = None,
    data_key: str | None = None,
) -> StudyReport:
    """Run (or resume) every cell of ``spec`` under ``out`` and write the report there.

    ``executor`` runs the cells (:mod:`lipgan.study.executors`; default: a local pool of ``jobs``).
    ``report_only``: run nothing; write the report of the cells already finished (a study still
    under way, here or on a cluster), marked partial when some are missing. Otherwise a metric
    the study records that is unknown or cannot be computed here (FID's network without its
    weights) is refused in one line before any cell trains (:func:`lipgan.study.spec.
    check_metrics`). ``data`` (and ``data_name``, ``modes``, ``mode_std``, ``data_key``): data
    sets of your own, added to the spec (:func:`lipgan.study.own_data.attach`); the report's
    spec records them.
    """
    from lipgan.plugins import default_registry
    from lipgan.study import own_data, report, runner
    from lipgan.study.spec import check_metrics

    spec, loaded = own_data.attach(
        spec, data, name=data_name, modes=modes, mode_std=mode_std, data_key=data_key
    )

    if report_only:
        runner.check_out_dir(Path(out))  # the report is written there
        results = runner.finished_results(spec, Path(out))
        if not results:
            raise ConfigError(f"{out} holds no finished cell of this study yet: nothing to report")
        total = len(spec.cells())
        paths = report.write(Path(out), spec.as_dict(), results, command, log, total)
        return StudyReport(spec, results, paths)

    check_metrics(spec.metrics, spec.datasets, default_registry())
    from lipgan.study.executors import LocalExecutor

    executor = executor or LocalExecutor(jobs or runner.default_jobs()[0])
    storage = getattr(executor, "storage", None)  # Ray's, where its cells run
    results = runner.run_cells(
        spec, Path(out), executor=executor, threads=threads, force=force, log=log,
        prepare=own_data.freezer(loaded, [Path(out), storage]),
    )  # fmt: skip
    paths = report.write(Path(out), spec.as_dict(), results, command, log)
    return StudyReport(spec, results, paths)
