"""``lipgan study``: the constraint study (machinery in :mod:`lipgan.study`, protocol in docs/study.md).

Example (the quick variant a test runs)::

    lipgan study --quick --constraint gradient_penalty --constraint spectral_norm --out studies/q
"""

from __future__ import annotations

import click

from lipgan.cli.options import (
    bind_option,
    cell_executor,
    check_constraints,
    constraint_option,
    dataset_option,
    executor_options,
    own_data,
    seeds_option,
    steps_option,
    study_command,
    study_dir_option,
    study_flags,
)


@click.command()
@constraint_option("every registered constraint except none")
@dataset_option(images=True)
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
@seeds_option("per cell (default 10)")
@steps_option("Generator iterations per run")
@click.option(
    "--eval-every",
    type=click.IntRange(min=0),
    help="Iterations between two points of each cell's quality curve (default 250; 0: none).",
)
@bind_option(" for every run")
@study_dir_option("studies/study", "Study dir")
@click.option(
    "--quick",
    is_flag=True,
    help="A smoke test of the machinery, never results: 2 seeds, 100 iterations, 8gaussians "
    "(explicit options still win; the report says it is a smoke test).",
)
@executor_options("study")
@study_flags
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
    from lipgan.core.plugins import load_registry
    from lipgan.study import (
        EVAL_EVERY,
        EVAL_SAMPLES,
        QUICK,
        StudySpec,
        default_constraints,
        run_study,
    )

    named, files = own_data(datasets)
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
    cells = cell_executor(
        report_only,
        executor,
        "study",
        registry,
        jobs=jobs,
        ray_address=ray_address,
        cell_resources=cell_resources,
        storage=storage,
    )
    log = None if quiet else (lambda line: click.echo(line, err=True))
    report = run_study(
        spec,
        out,
        jobs=jobs,
        threads=threads,
        force=force,
        log=log,
        command=study_command("study"),
        executor=cells,
        report_only=report_only,
        data=files or None,
    )
    if not quiet:
        click.echo(report.paths["markdown"].read_text())
    click.echo(
        f"wrote {report.paths['json']}, {report.paths['markdown']}, {report.paths['figure']}"
    )
