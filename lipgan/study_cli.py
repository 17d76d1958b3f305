"""``lipgan study``: the constraint study (machinery in :mod:`lipgan.study`, protocol in docs/study.md).

Example (the quick variant a test runs)::

    lipgan study --quick --constraint gradient_penalty --constraint spectral_norm --out studies/q
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import click

from lipgan.cli_shared import StudyDir, check_constraints, executor_options, make_executor


@click.command()
@click.option(
    "--constraint",
    "constraints",
    multiple=True,
    metavar="SPEC",
    help="name or name:key=value,... as in lipgan bench (repeatable; default: every registered "
    "constraint except none).",
)
@click.option(
    "--dataset",
    "datasets",
    multiple=True,
    metavar="NAME|PATH",
    help="ring, grid, 8gaussians, 25gaussians, swissroll, digits, cifar10, or a .npy/.npz file of "
    "your own: examples under 'x', optional 'modes' [K, d] and 'mode_std' (docs/study.md, \"Your "
    'own data"; repeatable; default: ring, grid).',
)
@click.option(
    "--metric",
    "metrics",
    multiple=True,
    metavar="NAME",
    help="A registered metric the image data sets' rows record (repeatable; `lipgan plugins` "
    "lists them; default: digits' classifier FD/KID, and fid, is, kid, prdc on cifar10, whose "
    "Inception weights must be here before training).",
)
@click.option(
    "--eval-samples",
    type=click.IntRange(min=2),
    help="Samples per evaluation (default 2,500, PacGAN's protocol; the papers' FID: 50,000).",
)
@click.option("--seeds", type=click.IntRange(min=1), help="Seeds per cell (default 10).")
@click.option(
    "--steps",
    type=click.IntRange(min=1),
    help="Generator iterations per run (default: each data set config's own train.steps, "
    "4,000 for ring and grid).",
)
@click.option(
    "--eval-every",
    type=click.IntRange(min=0),
    help="Iterations between two points of each cell's quality curve (default 250; 0: none).",
)
@click.option(
    "--bind", "bindings", multiple=True, metavar="'a.b=v'", help="Extra gin binding for every cell."
)
@click.option(
    "--out",
    type=StudyDir(),
    default=Path("studies/study"),
    show_default=True,
    help="Study dir (re-running resumes it).",
)
@click.option(
    "--quick",
    is_flag=True,
    help="A smoke test of the machinery, never results: 2 seeds, 100 iterations, 8gaussians "
    "(explicit options still win; the report says it is a smoke test).",
)
@executor_options("study")
@click.option("--force", is_flag=True, help="Reuse a study dir whose spec differs.")
@click.option("--quiet", is_flag=True, help="No progress lines; print only the report paths.")
@click.option(
    "--report-only",
    is_flag=True,
    help="Run no cell: write the report of the cells finished so far (marked partial).",
)
def study(
    constraints,
    datasets,
    metrics,
    eval_samples,
    seeds,
    steps,
    eval_every,
    bindings,
    jobs,
    threads,
    out,
    quick,
    executor,
    ray_address,
    cell_resources,
    storage,
    force,
    quiet,
    report_only,
):
    """Train constraint × seed × data set, each cell an ordinary run; write study.json/md/png."""
    from lipgan.plugins import load_registry
    from lipgan.study import (
        EVAL_EVERY,
        EVAL_SAMPLES,
        QUICK,
        StudySpec,
        default_constraints,
        run_study,
    )
    from lipgan.study.own_data import is_path

    files = [d for d in datasets if is_path(d)]  # your own data (lipgan.study.own_data)
    named = tuple(d for d in datasets if not is_path(d))
    registry = load_registry().registry
    constraints = check_constraints(constraints, registry) or default_constraints(registry)
    # steps None: every data set trains for its own config's train.steps.
    defaults = QUICK if quick else {"seeds": 10, "steps": None, "datasets": ["ring", "grid"]}
    spec = StudySpec(
        constraints=tuple(constraints),
        # --quick's or the default data sets only when none is given
        datasets=named if (named or files) else tuple(defaults["datasets"]),
        seeds=seeds or defaults["seeds"],
        steps=steps or defaults["steps"],
        bindings=tuple(bindings),
        eval_every=eval_every if eval_every is not None else defaults.get("eval_every", EVAL_EVERY),
        eval_samples=eval_samples or EVAL_SAMPLES,
        smoke_test=quick,
        metrics=tuple(dict.fromkeys(metrics)),
    )
    # --report-only runs nothing, so it needs no executor (nor Ray for one)
    cells = (
        None
        if report_only
        else make_executor(
            executor,
            "study",
            registry,
            jobs=jobs,
            ray_address=ray_address,
            cell_resources=cell_resources,
            storage=storage,
        )
    )
    log = None if quiet else (lambda line: click.echo(line, err=True))
    # the study's command, not this invocation's: a report rebuilt with --report-only says how
    # its cells were made
    command = "lipgan study " + " ".join(
        shlex.quote(a) for a in sys.argv[2:] if a != "--report-only"
    )
    report = run_study(
        spec,
        out,
        jobs=jobs,
        threads=threads,
        force=force,
        log=log,
        command=command,
        executor=cells,
        report_only=report_only,
        data=files or None,
    )
    if not quiet:
        click.echo(report.paths["markdown"].read_text())
    click.echo(
        f"wrote {report.paths['json']}, {report.paths['markdown']}, {report.paths['figure']}"
    )
