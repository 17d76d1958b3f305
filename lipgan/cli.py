"""The ``lipgan`` command line: ``run`` trains from gin files, ``eval``/``sample`` read a run dir,
``config show`` resolves a config, ``plugins`` lists what was discovered.

Every user error is a :class:`~lipgan.errors.LipganError` printed as one line on stderr with exit
status 1 (an interrupted run: 128 + the signal), never a traceback. TensorFlow is imported inside
commands, after its C++ log level is set.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import re
import sys
from pathlib import Path

import click

from lipgan.bench_cli import bench
from lipgan.errors import ConfigError, Interrupted, LipganError, first_line
from lipgan.reproduce.command import reproduce
from lipgan.study_cli import study
from lipgan.tune_cli import tune

DEFAULT_CONFIG = "wgangp_toy_quick.gin"
GIN_CALL_MARKER = "In call to configurable"


#: Options shared by the commands that read a config or discover plugins.
disable_option = click.option(
    "--disable-plugin", "disabled", multiple=True, metavar="NAME", help="Block a plugin by name."
)


#: Seeds that numpy and TensorFlow's stateless RNG both take (click names the range on misuse).
SEED = click.IntRange(min=0, max=2**31 - 1)


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


def _fail(message: str) -> None:
    click.echo(f"Error: {message}", err=True)
    sys.exit(1)


def _import_tensorflow(verbose: bool) -> None:
    """Import TensorFlow once, hiding its C++ start-up chatter unless --verbose (:mod:`lipgan.quiet_tf`)."""
    from lipgan.quiet_tf import import_tensorflow

    import_tensorflow(verbose)


def _discover(disabled):
    from lipgan.plugins import load_registry

    discovery = load_registry(disabled=disabled)
    for notice in discovery.notices:
        click.echo(notice, err=True)
    return discovery


class LipganGroup(click.Group):
    """Turns LipganError (and gin's wrapped configuration errors) into one-line messages."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except Interrupted as exc:
            click.echo(f"{exc.prefix}: {first_line(exc)}", err=True)
            sys.exit(exc.exit_code)
        except KeyboardInterrupt:
            # SIGINT before training installed its handlers (importing TensorFlow, building the
            # models): click would print "Aborted!" and exit 1; schedulers expect 128 + SIGINT.
            click.echo(
                "Stopped: SIGINT outside the training loop (during start-up or shut-down); "
                "nothing more was saved",
                err=True,
            )
            sys.exit(130)
        except LipganError as exc:
            _fail(first_line(exc))
        except Exception as exc:
            # An error raised by a configurable's own argument checks, or by plugin code it
            # calls: gin appends its call chain, which is how we tell it from a bug in lipgan
            # (those keep their traceback).
            text = str(exc)
            if GIN_CALL_MARKER not in text:
                raise
            _fail(configurable_error(text, first_line(exc)))


_USER_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<fn>\S+)')
_USER_ERROR = re.compile(r"^\s*(?P<type>[A-Za-z_][\w.]*(?:Error|Exception|Exit)): (?P<msg>.*)$")


def configurable_error(text: str, summary: str) -> str:
    """One line for an error gin raised while calling a configurable (``text`` is its message).

    ``train: in user code:`` (TensorFlow's traced-function wrapping) becomes the error the plugin
    raised and where; an undefined gin macro (gin calls its ``macro`` with no value) is named.
    """
    chain = text[text.index(GIN_CALL_MARKER) :]
    where = chain.split("'")[1]
    if where == "macro" and "scope '" in chain and "'value'" in text:
        name = chain.split("scope '")[1].split("'")[0]
        return f"gin macro %{name} is used but never defined; add `{name} = <value>` to a config"
    if summary.strip().startswith("in user code:"):
        lines = text[: text.index(GIN_CALL_MARKER)].splitlines()
        frame = next((m for m in map(_USER_FRAME.match, reversed(lines)) if m), None)
        error = next((m for m in map(_USER_ERROR.match, reversed(lines)) if m), None)
        if error is not None:
            at = f" (at {frame['file']}:{frame['line']}, in {frame['fn']})" if frame else ""
            return f"{where}: {error['type']}: {error['msg']}{at}"
    return f"{where}: {summary}"


@click.group(cls=LipganGroup)
@click.version_option(package_name="lipgan")
@click.option("--verbose", is_flag=True, help="Show TensorFlow's C++ and Python log output.")
@click.pass_context
def cli(ctx: click.Context, verbose: bool) -> None:
    """lipgan: Wasserstein GANs with pluggable Lipschitz constraints."""
    verbose = verbose or "--verbose" in sys.argv[1:]  # also accepted after the command name
    ctx.meta["lipgan.verbose"] = verbose  # for commands whose worker processes import TF
    if not verbose:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    if ctx.invoked_subcommand is not None and "--help" not in sys.argv[1:]:
        _import_tensorflow(verbose)


def _default_run_dir(gin_files) -> Path:
    """``runs/<config>-<date>-<time>-<pid>``: two runs started in the same second get two dirs."""
    stem = Path(gin_files[-1]).stem if gin_files else Path(DEFAULT_CONFIG).stem
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path("runs") / f"{stem}-{stamp}-{os.getpid()}"


def _parse(discovery, gin_files, bindings, strategy_name=None):
    from lipgan import config

    bindings = list(bindings)
    if strategy_name:
        discovery.registry.get("strategy", strategy_name)  # one-line error listing known names
        bindings.append(f"train.strategy = @{strategy_name}()")
    config.parse(list(gin_files), bindings, discovery.registry)


def _call(fn, mock_data: bool, **kwargs):
    from lipgan.data import mock_data as mocking

    if not mock_data:
        return fn(**kwargs)
    with mocking(num_examples=64):
        return fn(**kwargs)


def _run_config(run_dir: Path, option: str) -> Path | None:
    """``run_dir/config.gin``; None for a run written from Python (``trainer.json``,
    :mod:`lipgan.architecture`); or a one-line error saying why ``run_dir`` is not a run dir."""
    from lipgan.architecture import TRAINER, describes
    from lipgan.rundir import CONFIG

    if not run_dir.is_dir():
        raise ConfigError(f"{option} {run_dir}: no such run directory")
    config = run_dir / CONFIG
    if not config.is_file():
        if describes(run_dir):
            return None
        raise ConfigError(
            f"{option} {run_dir}: no {CONFIG} or {TRAINER} there, so it is not a lipgan run "
            "directory"
        )
    return config


@cli.command()
@config_options
@click.option(
    "--strategy", "strategy_name", metavar="NAME", help="Override train.strategy, e.g. mirrored."
)
@click.option(
    "--run-dir",
    type=click.Path(path_type=Path),
    help="Output folder (default: runs/<config>-<time>-<pid>).",
)
@click.option(
    "--resume",
    "resume_dir",
    type=click.Path(path_type=Path),
    metavar="DIR",
    help="Continue the run in DIR with its own config.gin (extend it with --bind train.steps=N).",
)
@click.option("--force", is_flag=True, help="Continue a run dir even though its config differs.")
@click.option("--mock-data", is_flag=True, help="Use tfds.testing.mock_data instead of real data.")
@disable_option
@click.option("--quiet", is_flag=True, help="Print only errors and the run dir.")
@click.option("--verbose", is_flag=True, help="Show TensorFlow's C++ and Python log output.")
def run(
    gin_files,
    bindings,
    strategy_name,
    run_dir,
    resume_dir,
    force,
    mock_data,
    disabled,
    quiet,
    verbose,
):
    """Train a WGAN from gin config files (re-running on a run dir resumes it)."""
    from lipgan.progress import for_terminal
    from lipgan.rundir import check_location

    if resume_dir is not None:
        config_file = _run_config(resume_dir, "--resume")
        if run_dir is not None and run_dir.resolve() != resume_dir.resolve():
            raise ConfigError(
                "--resume DIR already names the run dir; drop --run-dir or make them equal"
            )
        run_dir = resume_dir
        if config_file is None:  # written from Python: trainer.json and the models' files
            state = _resume_python(
                run_dir, gin_files, bindings, strategy_name, force, quiet, disabled, mock_data
            )
            _summarize(state, run_dir, quiet)
            return
        gin_files = list(gin_files) or [str(config_file)]
    discovery = _discover(disabled)
    gin_files = list(gin_files) or [DEFAULT_CONFIG]
    _parse(discovery, gin_files, bindings, strategy_name)
    run_dir = run_dir or _default_run_dir(gin_files)
    check_location(run_dir)
    from lipgan import config

    state = _call(
        config.train_configured,
        mock_data,
        run_dir=run_dir,
        force=force,
        progress=for_terminal(quiet),
    )
    _summarize(state, run_dir, quiet)


def _summarize(state, run_dir: Path, quiet: bool) -> None:
    """The run's last line: its last evaluation (:func:`lipgan.evaluation.summary_line`), or with
    --quiet the run dir alone."""
    from lipgan.evaluation import summary_line

    click.echo(str(run_dir) if quiet else summary_line(state.history, run_dir))


def _resume_python(run_dir, gin_files, bindings, strategy_name, force, quiet, disabled, mock_data):
    """``lipgan run --resume DIR`` on a run dir written by ``Trainer.fit`` (no config.gin).

    ``--mock-data`` is honoured as in a gin run (the Trainer is built and trained under it), or
    refused in one line where the run's data is stored in DIR (:func:`_check_mock_data`)."""
    from lipgan.progress import for_terminal
    from lipgan.run import load_run_dir

    if gin_files:
        raise ConfigError(
            f"--resume {run_dir}: written from Python (no config.gin), so it takes no --gin; "
            "extend it with --bind train.steps=N"
        )
    _check_mock_data(run_dir, mock_data)
    registry = _discover(disabled).registry
    strategy = registry.get("strategy", strategy_name)() if strategy_name else None

    def resume():
        trainer, steps = load_run_dir(
            run_dir, registry, resume=True, bound=bindings, strategy=strategy
        )
        return trainer.fit(steps, run_dir=run_dir, force=force, progress=for_terminal(quiet))

    return _call(resume, mock_data)


def _check_mock_data(run_dir: Path, mock_data: bool) -> None:
    """``--mock-data`` on a run dir written from Python: one line where it cannot apply
    (:func:`lipgan.architecture.check_mock_data`), before anything is built or written."""
    from lipgan.architecture import check_mock_data

    if mock_data:
        check_mock_data(run_dir)


def _load_run(run_dir: Path, bindings, mock_data: bool, disabled, need_data: bool = True):
    """The Trainer of ``run_dir`` (its own config, default strategy) with its latest checkpoint."""
    from lipgan import config
    from lipgan.run import load_run_dir

    config_file = _run_config(run_dir, "RUN_DIR")
    discovery = _discover(disabled)
    # Evaluation and sampling run where the user is, not where the run trained (maybe a TPU).
    if config_file is None:  # written from Python
        _check_mock_data(run_dir, mock_data)
        trainer, _ = _call(
            load_run_dir,
            mock_data,
            run_dir=run_dir,
            registry=discovery.registry,
            need_data=need_data,
            bound=bindings,
        )
    else:
        _parse(discovery, [str(config_file)], [*bindings, "train.strategy = @default()"])
        trainer = _call(config.build_trainer, mock_data)
    step = trainer.restore(run_dir, lambda line: click.echo(line, err=True))
    return trainer, step


@cli.command(name="eval")
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option(
    "--samples",
    "num_samples",
    type=click.IntRange(min=2),
    help="Generated samples (default: train.eval_samples).",
)
@click.option(
    "--bind",
    "bindings",
    multiple=True,
    metavar="'a.b=v'",
    help="Extra gin binding, e.g. train.inception_weights.",
)
@click.option("--mock-data", is_flag=True, help="Real samples from tfds.testing.mock_data.")
@disable_option
def eval_command(run_dir, num_samples, bindings, mock_data, disabled):
    """Metrics of the latest checkpoint of RUN_DIR, as JSON on stdout."""
    trainer, step = _load_run(run_dir, bindings, mock_data, disabled)
    metrics = _call(trainer.evaluate, mock_data, num_samples=num_samples)
    payload = {
        "run_dir": str(run_dir),
        "step": step,
        **{k.removeprefix("eval/"): v for k, v in metrics.items()},
    }
    click.echo(json.dumps(payload, indent=2))


@cli.command(name="audit")
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option(
    "--points",
    type=click.IntRange(min=1),
    default=512,
    show_default=True,
    help="Real, fake and interpolated points each.",
)
@click.option("--seed", type=SEED, help="Sampling seed (default: the run's train.seed).")
@click.option("--mock-data", is_flag=True, help="Real samples from tfds.testing.mock_data.")
@click.option(
    "--disable-plugin", "disabled", multiple=True, metavar="NAME", help="Block a plugin by name."
)
def audit_command(run_dir, points, seed, mock_data, disabled):
    """Lipschitz audit of the latest checkpoint of RUN_DIR (lower and upper bounds), as JSON."""
    trainer, step = _load_run(run_dir, [], mock_data, disabled)
    result = _call(trainer.audit, mock_data, points=points, seed=seed)
    click.echo(json.dumps({"run_dir": str(run_dir), "step": step, **result}, indent=2))


@cli.command()
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option(
    "-n",
    "num",
    type=click.IntRange(min=1),
    default=64,
    show_default=True,
    help="Number of samples.",
)
@click.option(
    "--out",
    "out",
    type=click.Path(path_type=Path),
    required=True,
    help="Output file: OUT.npz (array 'samples') and OUT.png next to it.",
)
@click.option("--seed", type=SEED, help="Noise seed (default: the run's train.seed).")
@disable_option
def sample(run_dir, num, out, seed, disabled):
    """Generate samples from the latest checkpoint of RUN_DIR (.npz and a PNG grid or scatter)."""
    import numpy as np

    from lipgan import evaluation

    npz = out if out.suffix == ".npz" else out.with_name(out.name + ".npz")
    if npz.parent.exists() and not npz.parent.is_dir() or npz.is_dir():
        raise ConfigError(f"--out {out}: cannot write {npz} there")
    trainer, step = _load_run(run_dir, [], False, disabled, need_data=False)
    seed = trainer.seed if seed is None else seed
    samples = trainer.sample(num, seed)
    real = _real_points(trainer, num, seed)
    png = evaluation.render(trainer.wgan, samples, real, title=f"{run_dir.name} step {step}")
    written = [npz]
    try:
        npz.parent.mkdir(parents=True, exist_ok=True)
        np.savez(npz, samples=samples, step=step, seed=seed)
        if png:
            npz.with_suffix(".png").write_bytes(png)
            written.append(npz.with_suffix(".png"))
    except OSError as exc:
        for path in written:
            with contextlib.suppress(OSError):
                path.unlink()  # nothing half-written
        raise ConfigError(
            f"--out {out}: cannot write {exc.filename or npz} ({exc.strerror or exc}); "
            "choose a writable place"
        ) from None
    click.echo(" ".join(str(p) for p in written))


def _real_points(trainer, n: int, seed: int):
    """``n`` real examples to draw beside a 2-D run's samples, from the run's data; None for
    images (a grid of samples only) and for a Python run whose data was not stored (the plot
    says so)."""
    from lipgan import evaluation

    if trainer.wgan.data_shape != (2,) or getattr(trainer.dataset, "no_examples", False):
        return None
    return evaluation.real_samples(trainer.dataset, n, trainer.global_batch_size, seed)


@cli.group(name="config")
def config_group():
    """Inspect configs without training."""


@config_group.command(name="show")
@config_options
@click.option("--strategy", "strategy_name", metavar="NAME", help="Override train.strategy.")
@click.option("--json", "as_json", is_flag=True, help="The bindings as a JSON object.")
@disable_option
def config_show(gin_files, bindings, strategy_name, as_json, disabled):
    """Print the config that `lipgan run` would use (files + bindings, resolved), then exit."""
    import gin
    from lipgan.rundir import bindings as parse_bindings

    _parse(_discover(disabled), list(gin_files) or [DEFAULT_CONFIG], bindings, strategy_name)
    text = gin.config_str()
    click.echo(json.dumps(parse_bindings(text), indent=2) if as_json else text.rstrip())


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@disable_option
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
            "clashes": discovery.clashes,
        }
        click.echo(json.dumps(payload, indent=2))
        return
    for kind in ("constraint", "strategy"):
        click.echo(f"{'strategies' if kind == 'strategy' else kind + 's'}:")
        for item in (e for e in entries if e["kind"] == kind):
            click.echo(f"  {item['name']:<20} {item['source']:<24} {item['description']}")
    for failure in discovery.failures:
        click.echo(f"failed: {failure.plugin} ({failure.source}): {failure.error}")
    for reason in discovery.clashes.values():
        click.echo(f"clash (unavailable): {reason}")
    if discovery.blocked:
        click.echo(f"blocked: {', '.join(discovery.blocked)}")


cli.add_command(bench)
cli.add_command(study)
cli.add_command(tune)
cli.add_command(reproduce)


def main() -> None:
    cli(prog_name="lipgan")


if __name__ == "__main__":
    main()
