"""``lipgan tune``: each constraint at its own best (machinery in :mod:`lipgan.study.tune`).

Example (what docs/study.md's tuned study ran)::

    lipgan tune --configs 20 --seeds 5 --executor tune --out studies/tuned
"""

from __future__ import annotations

from pathlib import Path

import click

from lipgan.cli.options import (
    SEED,
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
@constraint_option("every constraint with a search space, bjorck and aol with MaxMin")
@dataset_option(images=True, own_images=False)
@click.option(
    "--metric",
    "metrics",
    multiple=True,
    metavar="NAME",
    help="A registered metric the image data sets' rows record, the first ranking the search "
    "(lower is better; repeatable; as lipgan study's --metric; default: digits' classifier "
    "FD/KID, fid, is, kid, prdc on cifar10, ranked by FD and FID).",
)
@click.option(
    "--eval-samples",
    type=click.IntRange(min=2),
    help="Samples per evaluation (default 2,500, PacGAN's protocol; the papers' FID: 50,000).",
)
@click.option(
    "--configs",
    type=click.IntRange(min=1),
    default=20,
    show_default=True,
    help="Configs drawn per data set and constraint.",
)
@click.option(
    "--search-steps",
    type=click.IntRange(min=1),
    default=1000,
    show_default=True,
    help="Iterations of each search trial (its learning-rate decay stretched to them).",
)
@click.option(
    "--search",
    "search_kind",
    type=click.Choice(["random", "halving"]),
    default="random",
    show_default=True,
    help="random: every config once at --search-steps (Lucic et al.); halving: successive "
    "halving to the full budget, --search-seeds seeds per config (docs/study.md).",
)
@click.option(
    "--eta",
    type=click.IntRange(min=2),
    default=3,
    show_default=True,
    help="Halving: keep the best 1/eta of the configs at each rung.",
)
@click.option(
    "--rungs",
    type=click.IntRange(min=1),
    default=3,
    show_default=True,
    help="Halving: rungs, each eta times the budget of the last; the last is the full budget.",
)
@click.option(
    "--search-seeds",
    type=click.IntRange(min=1),
    default=2,
    show_default=True,
    help="Halving: seeds of every config at every rung (their mean decides).",
)
@click.option(
    "--search-seed",
    type=SEED,
    help="Base of the search trials' seeds (trial k: N + k; halving: N + 100·seed + k; default: "
    "1000 random, 2000 halving): a re-search with other seeds, into another --out.",
)
@click.option(
    "--ema-decays",
    default="0.999",
    show_default=True,
    metavar="D[,D...]",
    help="The replicates' generator EMA decays, comma-separated: one averaged copy each in the "
    "same runs, the first sampling; the report chooses among several by the search's score.",
)
@seeds_option("of each chosen config at the full budget", default=5)
@steps_option("The full budget in generator iterations")
@click.option(
    "--eval-every",
    type=click.IntRange(min=1),
    default=250,
    show_default=True,
    help="Iterations between two points of each run's quality curve.",
)
@bind_option(" for every run")
@executor_options("tune")
@study_dir_option("studies/tuned", "Tuned study dir")
@click.option(
    "--bench",
    is_flag=True,
    help="After the runs: time each chosen row's iteration side by side in one process "
    "(bench.json), the seconds behind the report's time to quality. Run it on quiet cores.",
)
@click.option(
    "--shared",
    multiple=True,
    type=click.Path(path_type=Path),
    metavar="STUDY_DIR",
    help="A finished `lipgan study` (e.g. studies/converged/ring) whose rows the report prints "
    "beside the tuned ones (repeatable).",
)
@study_flags
def tune(
    constraints,
    datasets,
    metrics,
    eval_samples,
    configs,
    search_steps,
    search_kind,
    eta,
    rungs,
    search_seeds,
    search_seed,
    ema_decays,
    seeds,
    steps,
    eval_every,
    bindings,
    executor,
    jobs,
    threads,
    ray_address,
    cell_resources,
    storage,
    out,
    bench,
    shared,
    force,
    quiet,
    report_only,
):
    """Search each constraint's hyper-parameters, re-run the best over seeds; write tune.md/png."""
    from lipgan.core.plugins import load_registry
    from lipgan.study import tune as tuned

    named, files = own_data(datasets)
    registry = load_registry().registry
    given = check_constraints(constraints, registry)
    if not given:
        for line in tuned.left_out(registry):
            click.echo(line, err=True)
    constraints = given or tuned.default_constraints(registry)
    spec = tuned.TuneSpec(
        constraints=tuple(constraints),
        datasets=named if (named or files) else ("ring", "grid"),
        configs=configs,
        search_steps=search_steps,
        seeds=seeds,
        steps=steps,
        eval_every=eval_every,
        bindings=tuple(bindings),
        search=search_kind,
        eta=eta,
        rungs=rungs,
        search_seeds=search_seeds,
        search_seed=search_seed,
        ema_decay=tuned.parse_ema_decays(ema_decays),
        eval_samples=eval_samples or tuned.EVAL_SAMPLES,
        metrics=tuple(dict.fromkeys(metrics)),
    )
    if not files:  # one line before an executor starts (a user file is checked when loaded)
        spec.check()
    cells = cell_executor(
        report_only,
        executor,
        "tune",
        registry,
        jobs=jobs,
        ray_address=ray_address,
        cell_resources=cell_resources,
        storage=storage,
    )
    log = None if quiet else (lambda line: click.echo(line, err=True))
    command = study_command("tune")
    report = tuned.run_tune(
        spec,
        out,
        executor=cells,
        threads=threads,
        force=force,
        log=log,
        command=command,
        report_only=report_only,
        shared=tuple(shared),
        data=files or None,
    )
    spec = report.spec  # with the user data sets, if any
    if bench:
        from lipgan.config.cells import cell_trainer
        from lipgan.study import row_bench

        if len(report.final) < len(tuned.replicate_cells(spec, report.chosen)):
            raise click.UsageError("--bench needs the finished study (run it first)")
        rows = [c for c in tuned.replicate_cells(spec, report.chosen) if c.seed == 0]
        data_dir = Path(out) / "data"  # the user data sets' frozen copies (lipgan.study.own_data)
        measured = row_bench.measure(rows, build=lambda cell: cell_trainer(cell, data_dir), log=log)
        row_bench.write(Path(out), {**measured, "command": command})
        report = tuned.run_tune(
            spec, out, log=log, command=command, report_only=True, shared=tuple(shared)
        )
    if not quiet:
        click.echo(report.paths["markdown"].read_text())
    click.echo(", ".join(f"wrote {p}" for p in report.paths.values()))
