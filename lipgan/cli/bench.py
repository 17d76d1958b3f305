"""``lipgan bench``: the penalty-throughput benchmark (harness in :mod:`lipgan.bench`).

Example (the command behind ``benchmarks/RESULTS.md``)::

    lipgan bench --model toy --model dcgan --out benchmarks
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import click

from lipgan.cli.options import PATH, constraint_option
from lipgan.core.errors import ConfigError


def _batches(values) -> dict[str, list[int]]:
    sweep = {}
    for value in values:
        model, eq, sizes = value.partition("=")
        try:
            sweep[model] = [int(s) for s in sizes.split(",") if s]
        except ValueError:
            raise ConfigError(
                f"--batch {value!r} does not parse; expected e.g. dcgan=32,64"
            ) from None
        if not eq or not sweep[model]:
            raise ConfigError(f"--batch {value!r} does not parse; expected e.g. dcgan=32,64")
    return sweep


def _check_strategies(specs, sweep) -> None:
    """Every ``--strategy`` names a registered strategy with valid arguments, before anything runs.

    The sweep runs non-default strategies in child processes and skips one that fails to start
    (a TPU that is not there): a typo must not be "skipped" and overwrite ``--out``.
    """
    from lipgan.core.plugins import load_registry

    registry = load_registry().registry
    for spec in specs:
        sweep._instantiate(registry, "strategy", spec)  # noqa: SLF001 - one-line errors


@click.command()
@click.option(
    "--model",
    "models",
    multiple=True,
    type=click.Choice(["toy", "dcgan"]),
    help="Model family (repeatable; default: toy and dcgan).",
)
@constraint_option(
    "every registered constraint plus gradient_penalty:fast_relu=True and gradient_penalty:every=16"
)
@click.option(
    "--strategy",
    "strategies",
    multiple=True,
    metavar="SPEC",
    help="Strategy spec, e.g. default, mirrored:logical_cpus=2, tpu (repeatable; "
    "non-default ones run in a child process; default: default).",
)
@click.option(
    "--mode",
    "modes",
    multiple=True,
    type=click.Choice(
        ["auto", "eager", "function", "xla", "auto+bf16", "function+bf16", "xla+bf16"]
    ),
    help="Execution mode (repeatable; default: auto): auto is what `lipgan run` does "
    "(train.jit_compile='auto': XLA or tf.function, each row says which), eager, tf.function, "
    "XLA; '+bf16' adds train.mixed_precision='mixed_bfloat16' (GP norms and losses stay float32; "
    "no keras-io row).",
)
@click.option(
    "--measure",
    "measurements",
    multiple=True,
    type=click.Choice(["penalty", "critic_step", "iteration"]),
    help="What to time (repeatable; default: all three).",
)
@click.option(
    "--batch",
    "batches",
    multiple=True,
    metavar="MODEL=B1,B2",
    help="Batch-size sweep for a model, e.g. dcgan=32,64 (default: toy 256, dcgan 64).",
)
@click.option(
    "--repetitions", default=5, show_default=True, help="Timed repetitions after warm-up."
)
@click.option(
    "--min-rep-seconds", default=0.2, show_default=True, help="Minimum duration of one repetition."
)
@click.option("--n-critic", default=5, show_default=True)
@click.option(
    "--steps-per-execution",
    default=10,
    show_default=True,
    help="Iterations per compiled call of the engine's host loop.",
)
@click.option("--no-keras-io", is_flag=True, help="Skip the keras-io WGAN-GP baseline.")
@click.option("--no-flops", is_flag=True, help="Skip FLOP counting.")
@click.option(
    "--no-probe",
    is_flag=True,
    help="Skip the float32 matmul probe behind the '% probe' and '% peak' columns.",
)
@click.option(
    "--out",
    type=PATH,
    default=Path("bench-results"),
    show_default=True,
    help="Folder for results.json, results.md and chart.png.",
)
def bench(
    models,
    constraints,
    strategies,
    modes,
    measurements,
    batches,
    repetitions,
    min_rep_seconds,
    n_critic,
    steps_per_execution,
    no_keras_io,
    no_flops,
    no_probe,
    out,
):
    """Measure penalty, critic-step and full-iteration throughput against the unconstrained step
    and the keras-io WGAN-GP recipe, in the same run.

    \b
    Columns of results.md: examples/s (median, min–max); ×none time and ×none FLOPs (vs the
    unconstrained row of the same mode); vs keras-io (GP rows over the keras_io_gp row: its
    'function' row is Keras' compile defaults, jit_compile='auto', its 'xla' row jit_compile=True);
    GFLOP/call and GFLOP/s (graph-counted FLOPs); % probe: GFLOP/s as a fraction of a float32
    matmul of the critic's own dense layer shapes at this batch (forward + both backward matmuls,
    TensorFlow's own kernels, best of 5 windows, measured in the same run; '–' for critics with
    convolutions); % peak: fraction of a large
    2048x2048 float32 matmul (bf16 rows are compared with the float32 figures); first call s
    (compile + first step); peak MiB.
    """
    from lipgan.bench import harness, report, sweep

    cfg = sweep.BenchConfig(
        models=list(models) or ["toy", "dcgan"],
        constraints=list(constraints) or None,
        strategies=list(strategies) or ["default"],
        modes=list(modes) or ["auto"],
        batches=_batches(batches),
        measurements=list(measurements) or list(sweep.MEASUREMENTS),
        keras_io=not no_keras_io,
        repetitions=repetitions,
        min_rep_seconds=min_rep_seconds,
        n_critic=n_critic,
        steps_per_execution=steps_per_execution,
        count_flops=not no_flops,
        probe=not no_probe,
    )
    _check_strategies(cfg.strategies, sweep)
    records = harness.run(cfg, log=lambda line: click.echo(line, err=True))
    if not records:
        raise ConfigError(
            f"no benchmark ran (every strategy was skipped, see above); {out} is left as it was"
        )
    command = "lipgan bench " + " ".join(shlex.quote(a) for a in sys.argv[2:])
    paths = report.write(records, out, command)
    click.echo(report.markdown_table(records))
    click.echo(f"wrote {paths['json']}, {paths['markdown']}, {paths['chart']}")
