"""``lipgan study``: constraint × seed × data set, each cell an ordinary lipgan run, one report.

    from lipgan.study import StudySpec, run_study
    report = run_study(StudySpec(constraints=("gradient_penalty", "spectral_norm"),
                                 datasets=("8gaussians",), seeds=3, steps=500), "studies/s1")

(``steps=None``, the default, trains each data set for its own config's ``train.steps``.)

See docs/study.md for the protocol (PacGAN, Lin et al. 2018, Table 1) and the report's columns.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

from lipgan.study.spec import EVAL_EVERY, QUICK, Cell, StudySpec, default_constraints

__all__ = [
    "EVAL_EVERY",
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
) -> StudyReport:
    """Run (or resume) every cell of ``spec`` under ``out`` and write the report there.

    ``executor`` runs the cells (:mod:`lipgan.study.executors`; default: a local pool of ``jobs``).
    """
    from lipgan.study import report, runner

    results = runner.run_cells(
        spec, Path(out), jobs=jobs, threads=threads, force=force, log=log, executor=executor
    )
    paths = report.write(Path(out), spec.as_dict(), results, command, log)
    return StudyReport(spec, results, paths)
