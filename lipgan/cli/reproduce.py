"""``lipgan reproduce``: regenerate a paper figure and the JSON of the numbers behind it."""

from __future__ import annotations

from pathlib import Path

import click

from lipgan.cli.options import PATH
from lipgan.core.errors import ConfigError


@click.group()
def reproduce() -> None:
    """Reproduce figures of the WGAN-GP paper."""


@reproduce.command()
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=PATH,
    help="Folder for fig1.json, fig1a.png and fig1b.png.",
)
@click.option(
    "--quick",
    is_flag=True,
    help="A small variant with far fewer steps (same qualitative 1b result).",
)
@click.option(
    "--strict", is_flag=True, help="Exit with an error when the Fig. 1b claim does not hold."
)
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    default=None,
    help="Worker processes for the figure's 16 independent rows (default: one per core).",
)
def fig1(out_dir: Path, quick: bool, strict: bool, jobs: int | None) -> None:
    """Figure 1 of Gulrajani et al.: clipped vs gradient-penalty critics (value surfaces,
    per-layer gradients, weights)."""
    if out_dir.exists() and not out_dir.is_dir():
        raise ConfigError(f"--out {out_dir} exists and is not a directory")
    from lipgan.reproduce import fig1 as fig1_module

    verbose = click.get_current_context().meta.get("lipgan.verbose", False)
    result = fig1_module.run(out_dir, quick=quick, log=click.echo, jobs=jobs, verbose=verbose)
    failures = result["fig1b"]["claim_failures"]
    for failure in failures:
        click.echo(f"warning: {failure}", err=True)
    if strict and failures:
        raise ConfigError(f"Fig. 1b claim does not hold: {failures[0]}")
