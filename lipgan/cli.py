"""The ``lipgan`` command line: ``run`` trains from gin files, ``plugins`` lists what was discovered.

Every user error is a :class:`~lipgan.errors.LipganError` printed as one line on stderr with exit
status 1, never a traceback. TensorFlow is imported inside commands, after its C++ log level is set.
"""

from __future__ import annotations

import datetime
import json
import os
import sys
from pathlib import Path

import click

from lipgan.bench_cli import bench
from lipgan.errors import ConfigError, LipganError
from lipgan.reproduce.command import reproduce

DEFAULT_CONFIG = "wgangp_toy.gin"
GIN_CALL_MARKER = "In call to configurable"


def _fail(message: str) -> None:
    click.echo(f"Error: {message}", err=True)
    sys.exit(1)


def _first_line(exc: BaseException) -> str:
    lines = [ln for ln in str(exc).splitlines() if ln.strip()]
    return lines[0] if lines else type(exc).__name__


def _import_tensorflow(verbose: bool) -> None:
    """Import TensorFlow once, hiding the C++ start-up chatter (CUDA probing) unless --verbose.

    The chatter is written by native code before TF's log level applies, so it can only be silenced
    at the file-descriptor level, and only for the duration of the import.
    """
    if verbose or "tensorflow" in sys.modules:
        import tensorflow  # noqa: F401
        return
    try:
        fd = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # captured stderr (tests): nothing to hide
        fd = None
    saved = os.dup(fd) if fd is not None else None
    if saved is not None:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, fd)
        os.close(devnull)
    try:
        import tensorflow  # noqa: F401
    finally:
        if saved is not None:
            os.dup2(saved, fd)
            os.close(saved)
    import absl.logging

    absl.logging.set_verbosity(absl.logging.ERROR)


def _discover(disabled):
    from lipgan.plugins import load_registry

    return load_registry(disabled=disabled)


class LipganGroup(click.Group):
    """Turns LipganError (and gin's wrapped configuration errors) into one-line messages."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except LipganError as exc:
            _fail(_first_line(exc))
        except (TypeError, ValueError) as exc:
            # An error raised by a configurable's own argument checks: gin appends its call
            # chain, which is how we tell it from a bug in lipgan (those keep their traceback).
            text = str(exc)
            if GIN_CALL_MARKER not in text:
                raise
            where = text[text.index(GIN_CALL_MARKER) :].split("'")[1]
            _fail(f"{where}: {_first_line(exc)}")


@click.group(cls=LipganGroup)
@click.version_option(package_name="lipgan")
@click.option("--verbose", is_flag=True, help="Show TensorFlow's C++ and Python log output.")
@click.pass_context
def cli(ctx: click.Context, verbose: bool) -> None:
    """lipgan: Wasserstein GANs with pluggable Lipschitz constraints."""
    if not verbose:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    if ctx.invoked_subcommand is not None and "--help" not in sys.argv[1:]:
        _import_tensorflow(verbose)


def _default_run_dir(gin_files) -> Path:
    stem = Path(gin_files[-1]).stem if gin_files else Path(DEFAULT_CONFIG).stem
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path("runs") / f"{stem}-{stamp}"


@cli.command()
@click.option("--gin", "gin_files", multiple=True, metavar="FILE",
              help=f"Gin config file or shipped config name (repeatable; default: {DEFAULT_CONFIG}).")
@click.option("--bind", "bindings", multiple=True, metavar="'a.b=v'", help="Extra gin binding (repeatable).")
@click.option("--strategy", "strategy_name", metavar="NAME", help="Override train.strategy, e.g. mirrored.")
@click.option("--run-dir", type=click.Path(path_type=Path), help="Output folder (default: runs/<config>-<time>).")
@click.option("--mock-data", is_flag=True, help="Use tfds.testing.mock_data instead of real data.")
@click.option("--disable-plugin", "disabled", multiple=True, metavar="NAME", help="Block a plugin by name.")
@click.option("--quiet", is_flag=True, help="Print only errors and the run dir.")
def run(gin_files, bindings, strategy_name, run_dir, mock_data, disabled, quiet):
    """Train a WGAN from gin config files."""
    from lipgan import config

    discovery = _discover(disabled)
    gin_files = list(gin_files) or [DEFAULT_CONFIG]
    bindings = list(bindings)
    if strategy_name:
        discovery.registry.get("strategy", strategy_name)  # one-line error listing known names
        bindings.append(f"train.strategy = @{strategy_name}()")
    config.parse(gin_files, bindings, discovery.registry)
    run_dir = run_dir or _default_run_dir(gin_files)
    if run_dir.exists() and not run_dir.is_dir():
        raise ConfigError(f"run dir {run_dir} exists and is not a directory; choose another --run-dir")

    import gin
    from lipgan import run as run_module
    from lipgan.data import mock_data as mocking

    log = (lambda line: None) if quiet else click.echo
    train = gin.get_configurable(run_module.train)
    if mock_data:
        with mocking(num_examples=64):
            train(run_dir=str(run_dir), log=log)
    else:
        train(run_dir=str(run_dir), log=log)
    if quiet:
        click.echo(str(run_dir))


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--disable-plugin", "disabled", multiple=True, metavar="NAME", help="Block a plugin by name.")
def plugins(as_json, disabled):
    """List discovered constraints and strategies with their source."""
    discovery = _discover(disabled)
    entries = []
    for entry in discovery.registry.entries():
        item = entry.as_dict()
        item["hooks"] = discovery.hooks_of(entry.plugin)
        entries.append(item)
    if as_json:
        payload = {
            "plugins": entries,
            "failed": [f.as_dict() for f in discovery.failures],
            "blocked": discovery.blocked,
        }
        click.echo(json.dumps(payload, indent=2))
        return
    for kind in ("constraint", "strategy"):
        click.echo(f"{'strategies' if kind == 'strategy' else kind + 's'}:")
        for item in (e for e in entries if e["kind"] == kind):
            click.echo(f"  {item['name']:<20} {item['source']:<24} {item['description']}")
    for failure in discovery.failures:
        click.echo(f"failed: {failure.plugin} ({failure.source}): {failure.error}")
    if discovery.blocked:
        click.echo(f"blocked: {', '.join(discovery.blocked)}")


cli.add_command(bench)
cli.add_command(reproduce)


def main() -> None:
    cli(prog_name="lipgan")


if __name__ == "__main__":
    main()
