"""``lipgan study``: the constraint study (machinery in :mod:`lipgan.study`, protocol in docs/study.md).

Example (the quick variant a test runs)::

    lipgan study --quick --constraint gradient_penalty --constraint spectral_norm --out studies/q
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import click


def executor_options(executors: list[str]):
    """The options that say where a study's runs go, shared by ``lipgan study`` and ``lipgan
    tune``: ``--executor`` (one of ``executors``), ``--jobs``, ``--threads`` and Ray's."""

    where = {
        "local": "local: a process pool here",
        "ray": "ray: one Ray task per run",
        "tune": "tune: one Ray Tune trial per run",
    }
    offered = "; ".join(where[name] for name in executors)

    def decorate(command):
        options = [
            click.option(
                "--executor",
                type=click.Choice(executors),
                default="local",
                show_default=True,
                help=f"Where runs go ({offered}). Ray: pip install 'lipgan[ray]'; docs/study.md, "
                "'Running a study on a cluster'.",
            ),
            click.option(
                "--jobs",
                type=click.IntRange(min=1),
                help="Runs in parallel, local executor (default: one per core).",
            ),
            click.option(
                "--threads",
                type=click.IntRange(min=0),
                help="TF intra-op threads per run (default 1; 0 lets TF choose).",
            ),
            click.option(
                "--ray-address",
                metavar="ADDR",
                help="Ray cluster to use (default: Ray's own resolution, RAY_ADDRESS or a cluster "
                "started on this machine, else a new local instance).",
            ),
            click.option(
                "--cell-resources",
                metavar="K=V,...",
                help="Ray resources per run, e.g. num_cpus=1,num_gpus=0.25 (default num_cpus=1).",
            ),
            click.option(
                "--storage",
                type=click.Path(path_type=Path),
                help="With Ray: where the run dirs go, a path every node sees (default: --out).",
            ),
        ]
        for option in reversed(options):
            command = option(command)
        return command

    return decorate


class StudyDir(click.Path):
    """``--out``: a study dir. An empty one is refused (``Path('')`` is the current directory,
    which would fill with ``runs/``, ``spec.json`` and the report); the rest is checked by
    :func:`lipgan.study.runner.check_out_dir` before anything is written."""

    def __init__(self):
        super().__init__(path_type=Path)

    def convert(self, value, param, ctx):
        if isinstance(value, str) and not value.strip():
            from lipgan.errors import ConfigError

            raise ConfigError(f"--out {value!r} is empty; give the study directory")
        return super().convert(value, param, ctx)


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
    metavar="NAME",
    help="ring, grid, 8gaussians, 25gaussians, swissroll, digits (repeatable; default: ring, grid).",
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
@executor_options(["local", "ray"])
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
    from lipgan.study import EVAL_EVERY, QUICK, StudySpec, default_constraints, run_study

    registry = load_registry().registry
    constraints = check_constraints(constraints, registry) or default_constraints(registry)
    # steps None: every data set trains for its own config's train.steps.
    defaults = QUICK if quick else {"seeds": 10, "steps": None, "datasets": ["ring", "grid"]}
    spec = StudySpec(
        constraints=tuple(constraints),
        datasets=tuple(datasets or defaults["datasets"]),
        seeds=seeds or defaults["seeds"],
        steps=steps or defaults["steps"],
        bindings=tuple(bindings),
        eval_every=eval_every if eval_every is not None else defaults.get("eval_every", EVAL_EVERY),
        smoke_test=quick,
    )
    cells = make_executor(executor, jobs, ray_address, cell_resources, storage)
    log = None if quiet else (lambda line: click.echo(line, err=True))
    command = "lipgan study " + " ".join(shlex.quote(a) for a in sys.argv[2:])
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
    )
    if not quiet:
        click.echo(report.paths["markdown"].read_text())
    click.echo(
        f"wrote {report.paths['json']}, {report.paths['markdown']}, {report.paths['figure']}"
    )


def check_constraints(constraints, registry) -> list[str]:
    """The SPECs as given; an unknown constraint name is one line, before any cell starts (not
    recorded as N failed cells)."""
    from lipgan.bench.sweep import parse_spec
    from lipgan.errors import ConfigError

    known = registry.names("constraint")
    unknown = [c for c in constraints if parse_spec(c)[0] not in known]
    if unknown:
        raise ConfigError(
            f"unknown constraint {unknown[0]!r}; registered: {', '.join(known)} (`lipgan plugins`)"
        )
    return list(constraints)


def make_executor(name, jobs, ray_address, cell_resources, storage):
    """The cells' executor (local: ``--jobs`` cells at once, default one per core); options of
    the other one are refused with one line, before anything is written. ``tune`` (``lipgan
    tune`` only) is Ray Tune."""
    from lipgan.errors import ConfigError

    ray_options = {
        "--ray-address": ray_address,
        "--cell-resources": cell_resources,
        "--storage": storage,
    }
    if name == "local":
        given = [flag for flag, value in ray_options.items() if value is not None]
        if given:
            raise ConfigError(f"{given[0]} is an option of --executor ray")
        from lipgan.study.executors import LocalExecutor
        from lipgan.study.runner import default_jobs

        return LocalExecutor(jobs or default_jobs()[0])
    if jobs is not None:
        raise ConfigError(
            "--jobs is for --executor local; with Ray, --cell-resources decides how many cells "
            "run at once"
        )
    from lipgan.study.executors import RayExecutor, parse_resources

    resources = parse_resources(cell_resources) if cell_resources else None
    if name == "tune":
        from lipgan.study.tune_executor import TuneExecutor

        return TuneExecutor(address=ray_address, resources=resources, storage=storage)
    return RayExecutor(address=ray_address, resources=resources, storage=storage)
