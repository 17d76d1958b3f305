"""What the ``lipgan`` commands share: click options, plugin discovery, config parsing, mock data.

Kept apart from :mod:`lipgan.cli.main` (the group) so that each command's module uses the same
options and the same discovery without importing the group or another command.
TensorFlow and gin are imported inside the functions, after the CLI has set TensorFlow's log level.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import click

DEFAULT_CONFIG = "wgangp_toy_quick.gin"

#: Options shared by the commands that read a config or discover plugins.
disable_option = click.option(
    "--disable-plugin", "disabled", multiple=True, metavar="NAME", help="Block a plugin by name."
)

#: Seeds that numpy and TensorFlow's stateless RNG both take (click names the range on misuse).
SEED = click.IntRange(min=0, max=2**31 - 1)


class NonEmptyPath(click.Path):
    """A path option or argument that refuses ``''``: ``pathlib.Path('')`` is the current
    directory, so ``--run-dir ''`` (an unset shell variable) would write a run into it."""

    def convert(self, value, param, ctx):
        if isinstance(value, str) and not value.strip():
            self.fail(
                "an empty path (an unset shell variable?) would mean the current directory; "
                "give a folder name (or '.' if you mean it)",
                param,
                ctx,
            )
        return super().convert(value, param, ctx)


#: The type of every path the commands take.
PATH = NonEmptyPath(path_type=Path)


def bind_option(where: str = ""):
    """``--bind 'a.b=v'`` (repeatable): gin bindings after the config; ``where`` says what they
    bind beyond it (``" for every run"`` of a study)."""
    return click.option(
        "--bind",
        "bindings",
        multiple=True,
        metavar="'a.b=v'",
        help=f"Extra gin binding{where} (repeatable).",
    )


def config_options(command):
    """``--gin FILE...`` and ``--bind 'a.b=v'...``: the config a command reads."""
    command = bind_option()(command)
    return click.option(
        "--gin",
        "gin_files",
        multiple=True,
        metavar="FILE",
        help=f"Gin config file or shipped config name (repeatable; default: {DEFAULT_CONFIG}).",
    )(command)


#: ``--strategy NAME`` of ``run`` and ``config show``: one more binding (:func:`with_strategy`).
strategy_option = click.option(
    "--strategy", "strategy_name", metavar="NAME", help="Override train.strategy, e.g. mirrored."
)

#: ``--verbose`` of the group and of ``lipgan run`` (where it is also read after the command
#: name): TensorFlow's start-up lines shown (:func:`import_tensorflow`).
verbose_option = click.option(
    "--verbose", is_flag=True, help="Show TensorFlow's C++ and Python log output."
)

#: ``--mock-data``: TFDS data sets read from ``tfds.testing.mock_data`` (:func:`call`).
mock_data_option = click.option(
    "--mock-data", is_flag=True, help="Use tfds.testing.mock_data instead of real data."
)


def import_tensorflow(verbose: bool) -> None:
    """Import TensorFlow once, hiding its C++ start-up chatter unless --verbose
    (:mod:`lipgan.core.quiet_tf`)."""
    from lipgan.core import quiet_tf

    quiet_tf.import_tensorflow(verbose)


def tensorflow_after_checks(gin_files, bindings) -> None:
    """The syntax of ``gin_files`` and ``bindings`` checked without TensorFlow (one line on an
    error, :func:`lipgan.config.syntax.check_syntax`), then TensorFlow imported quietly as for
    every command."""
    from lipgan.config.syntax import check_syntax

    check_syntax(list(gin_files), list(bindings))
    ctx = click.get_current_context()
    import_tensorflow(bool(ctx.find_root().meta.get("lipgan.verbose")))


def discover(disabled):
    """The plugin registry, with discovery's notices (a failed or blocked plugin) on stderr."""
    from lipgan.core.plugins import load_registry

    discovery = load_registry(disabled=disabled)
    for notice in discovery.notices:
        click.echo(notice, err=True)
    return discovery


def parse(discovery, gin_files, bindings, strategy_name=None) -> None:
    """Parse gin files and ``--bind`` strings (``--strategy NAME`` as one more binding)."""
    from lipgan.config import gin_binding as config

    config.parse(
        list(gin_files), with_strategy(discovery, bindings, strategy_name), discovery.registry
    )


def with_strategy(discovery, bindings, strategy_name) -> list[str]:
    """``bindings`` and, for ``--strategy NAME``, ``train.strategy = @NAME()`` (an unknown name is
    one line listing the known ones)."""
    bindings = list(bindings)
    if strategy_name:
        discovery.registry.get("strategy", strategy_name)
        bindings.append(f"train.strategy = @{strategy_name}()")
    return bindings


def call(fn, mock_data: bool, **kwargs):
    """``fn(**kwargs)``, under ``tfds.testing.mock_data`` with ``--mock-data``."""
    from lipgan.data import mock_data as mocking

    if not mock_data:
        return fn(**kwargs)
    with mocking(num_examples=64):
        return fn(**kwargs)


def summarize(state, run_dir, quiet: bool) -> None:
    """The run's last line: its last evaluation (:func:`lipgan.metrics.evaluation.summary_line`) and
    where
    its samples picture is, or with --quiet the run dir alone."""
    from lipgan.metrics.evaluation import summary_line
    from lipgan.run.rundir import SAMPLES

    line = summary_line(state.history, run_dir)
    samples = Path(run_dir) / SAMPLES
    if samples.is_file():
        line += f"; samples: {samples}"
    click.echo(str(run_dir) if quiet else line)


def executor_options(command_name: str):
    """The options that say where a study's runs go, shared by ``lipgan study`` and ``lipgan
    tune``: ``--executor`` (a registered executor that offers ``command_name``), ``--jobs``,
    ``--threads`` and Ray's. The names are checked when the command runs
    (:func:`make_executor`): listing them here would load every plugin to draw ``--help``."""

    def decorate(command):
        options = [
            click.option(
                "--executor",
                default="local",
                show_default=True,
                metavar="NAME",
                help="Where runs go: local (a process pool here), ray (one Ray task per run)"
                + (", tune (one Ray Tune trial per run)" if command_name == "tune" else "")
                + " or an executor plugin's name (`lipgan plugins`; Ray: pip install "
                "'lipgan[ray]'; docs/study.md, 'Running a study on a cluster').",
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


#: The toy data sets that ``lipgan study`` and ``tune`` train on by name.
TOY_DATASETS = "ring, grid, 8gaussians, 25gaussians, swissroll"


def constraint_option(default: str):
    """``--constraint SPEC`` (repeatable) of ``lipgan study``, ``tune`` and ``bench``: a
    registered constraint and its arguments, as :func:`lipgan.core.plugin_spec.parse_spec` reads it;
    ``default`` says which run when none is given."""
    return click.option(
        "--constraint",
        "constraints",
        multiple=True,
        metavar="SPEC",
        help=f"name or name:key=value,... (repeatable; default: {default}).",
    )


def dataset_option(images: bool, own_images: bool | None = None):
    """``--dataset NAME|PATH`` (repeatable) of ``lipgan study`` and ``tune``: a shipped data set by
    name, or a file of the user's own (:mod:`lipgan.study.own_data`); ``images``: the image data
    sets too; ``own_images``: a file of images too (default: as ``images``; ``tune`` tunes the
    shipped image sets but no image file of the user's)."""
    names = TOY_DATASETS + (", digits, cifar10" if images else "")
    examples = "examples" if (images if own_images is None else own_images) else "vectors"
    return click.option(
        "--dataset",
        "datasets",
        multiple=True,
        metavar="NAME|PATH",
        help=f"{names}, or a .npy/.npz file of your own: {examples} under 'x', optional 'modes' "
        "[K, d] and 'mode_std' (docs/study.md, \"Your own data\"; repeatable; default: ring, "
        "grid).",
    )


def seeds_option(per: str, default: int | None = None):
    """``--seeds N``: the seeds every measured config trains with, ``per`` naming the config.
    Without ``default`` (the study's depends on ``--quick``), ``per`` states it."""
    shown = {} if default is None else {"default": default, "show_default": True}
    return click.option("--seeds", type=click.IntRange(min=1), help=f"Seeds {per}.", **shown)


def steps_option(what: str):
    """``--steps N``: the generator iterations of every measured run, by default each data set
    config's own ``train.steps``."""
    return click.option(
        "--steps",
        type=click.IntRange(min=1),
        help=f"{what} (default: each data set config's own train.steps, 4,000 for ring and grid).",
    )


def study_dir_option(default: str, what: str):
    """``--out DIR``: a study dir (:class:`StudyDir`), resumed when the command runs again."""
    return click.option(
        "--out",
        type=StudyDir(),
        default=Path(default),
        show_default=True,
        help=f"{what} (re-running resumes it).",
    )


def study_flags(command):
    """``--force``, ``--quiet`` and ``--report-only`` of ``lipgan study`` and ``tune``: a study dir
    whose spec differs, the progress lines, and a report without running anything."""
    options = [
        click.option("--force", is_flag=True, help="Reuse a study dir whose spec differs."),
        click.option(
            "--quiet", is_flag=True, help="No progress lines; print only the report paths."
        ),
        click.option(
            "--report-only",
            is_flag=True,
            help="Run no cell: write the report of the cells finished so far (marked partial).",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def own_data(datasets) -> tuple[tuple[str, ...], list[str]]:
    """``--dataset``'s values split into the data sets named and the files of the user's own
    (:func:`lipgan.study.own_data.is_path`)."""
    from lipgan.study.own_data import is_path

    return tuple(d for d in datasets if not is_path(d)), [d for d in datasets if is_path(d)]


def cell_executor(report_only: bool, name: str, command_name: str, registry, **options):
    """Where a study's cells run (:func:`make_executor`); None with ``--report-only``, which runs
    nothing, so it needs no executor (nor Ray for one)."""
    return None if report_only else make_executor(name, command_name, registry, **options)


def study_command(command_name: str) -> str:
    """``lipgan NAME ARGS...``, the study's command rather than this invocation's: without
    ``--report-only``, so a report rebuilt with it says how its cells were made."""
    args = (shlex.quote(a) for a in sys.argv[2:] if a != "--report-only")
    return f"lipgan {command_name} " + " ".join(args)


def check_constraints(constraints, registry) -> list[str]:
    """The SPECs as given; an unknown constraint name is one line, before any cell starts (not
    recorded as N failed cells)."""
    from lipgan.core.errors import ConfigError
    from lipgan.core.plugin_spec import parse_spec

    known = registry.names("constraint")
    unknown = [c for c in constraints if parse_spec(c)[0] not in known]
    if unknown:
        raise ConfigError(
            f"unknown constraint {unknown[0]!r}; registered: {', '.join(known)} (`lipgan plugins`)"
        )
    return list(constraints)


def make_executor(name: str, command_name: str, registry, **options):
    """The registered executor ``name`` built from the options given (None: not given).

    One line, before anything is written, for an unknown executor, one that ``command_name``
    does not offer, or an option it does not take (naming the executors that take it).
    """
    from lipgan.core.errors import ConfigError
    from lipgan.core.executor import OPTION_FLAGS

    cls = registry.get("executor", name)
    if command_name not in cls.commands:
        raise ConfigError(
            f"--executor {name} is for lipgan {' and lipgan '.join(sorted(cls.commands))}, "
            f"not lipgan {command_name}"
        )
    given = {key: value for key, value in options.items() if value is not None}
    for key in given:
        if key not in cls.accepts:
            takers = [
                e.name
                for e in registry.entries("executor")
                if key in e.cls.accepts and command_name in e.cls.commands
            ]
            where = " or ".join(f"--executor {t}" for t in takers) or "no executor here"
            raise ConfigError(f"{OPTION_FLAGS[key]} is an option of {where}, not of {name}")
    return cls.from_options(**given)


class StudyDir(click.Path):
    """``--out``: a study dir. An empty one is refused (``Path('')`` is the current directory,
    which would fill with ``runs/``, ``spec.json`` and the report); the rest is checked by
    :func:`lipgan.study.runner.check_out_dir` before anything is written."""

    def __init__(self):
        super().__init__(path_type=Path)

    def convert(self, value, param, ctx):
        if isinstance(value, str) and not value.strip():
            from lipgan.core.errors import ConfigError

            raise ConfigError(f"--out {value!r} is empty; give the study directory")
        return super().convert(value, param, ctx)
