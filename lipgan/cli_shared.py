"""What the ``lipgan`` commands share: click options, plugin discovery, config parsing, mock data.

Kept apart from :mod:`lipgan.cli` (the group and ``run``) so the commands that read a run dir
(:mod:`lipgan.rundir_cli`) use the same options and the same discovery without importing the group.
TensorFlow and gin are imported inside the functions, after the CLI has set TensorFlow's log level.
"""

from __future__ import annotations

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


def config_options(command):
    """``--gin FILE...`` and ``--bind 'a.b=v'...``: the config a command reads."""
    command = click.option(
        "--bind",
        "bindings",
        multiple=True,
        metavar="'a.b=v'",
        help="Extra gin binding (repeatable).",
    )(command)
    return click.option(
        "--gin",
        "gin_files",
        multiple=True,
        metavar="FILE",
        help=f"Gin config file or shipped config name (repeatable; default: {DEFAULT_CONFIG}).",
    )(command)


def discover(disabled):
    """The plugin registry, with discovery's notices (a failed or blocked plugin) on stderr."""
    from lipgan.plugins import load_registry

    discovery = load_registry(disabled=disabled)
    for notice in discovery.notices:
        click.echo(notice, err=True)
    return discovery


def parse(discovery, gin_files, bindings, strategy_name=None) -> None:
    """Parse gin files and ``--bind`` strings (``--strategy NAME`` as one more binding)."""
    from lipgan import config

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
    """The run's last line: its last evaluation (:func:`lipgan.evaluation.summary_line`) and where
    its samples picture is, or with --quiet the run dir alone."""
    from lipgan.evaluation import summary_line
    from lipgan.rundir import SAMPLES

    line = summary_line(state.history, run_dir)
    samples = Path(run_dir) / SAMPLES
    if samples.is_file():
        line += f"; samples: {samples}"
    click.echo(str(run_dir) if quiet else line)
