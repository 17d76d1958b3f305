"""``lipgan run``: train from gin files, or continue a run dir (``--resume``).

A gin run parses its files and bindings at this edge (:mod:`lipgan.config.gin_binding`) and trains
through the gin root ``train``; a resumed run parses its recorded gin config again, or is rebuilt
from its description when it was written from Python (:mod:`lipgan.config.recorded`, on the
record :mod:`lipgan.run.rebuild` reads).
"""

from __future__ import annotations

import datetime
import os
from pathlib import Path

import click

from lipgan.cli.options import (
    DEFAULT_CONFIG,
    PATH,
    call,
    config_options,
    disable_option,
    discover,
    mock_data_option,
    parse,
    strategy_option,
    summarize,
    tensorflow_after_checks,
    verbose_option,
    with_strategy,
)
from lipgan.core.errors import ConfigError


def _default_run_dir(gin_files) -> Path:
    """``runs/<config>-<date>-<time>-<pid>``: two runs started in the same second get two dirs."""
    stem = Path(gin_files[-1]).stem if gin_files else Path(DEFAULT_CONFIG).stem
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path("runs") / f"{stem}-{stamp}-{os.getpid()}"


@click.command()
@config_options
@strategy_option
@click.option(
    "--run-dir",
    type=PATH,
    help="Output folder (default: runs/<config>-<time>-<pid>).",
)
@click.option(
    "--resume",
    "resume_dir",
    type=PATH,
    metavar="DIR",
    help="Continue the run in DIR with its own config (extend it with --bind train.steps=N).",
)
@click.option("--force", is_flag=True, help="Continue a run dir even though its config differs.")
@mock_data_option
@click.option(
    "--logger",
    "logger_names",
    multiple=True,
    metavar="NAME",
    help="Switch a registered logger on (repeatable; `lipgan plugins` lists them, e.g. csv).",
)
@disable_option
@click.option("--quiet", is_flag=True, help="Print only errors and the run dir.")
@verbose_option
def run(
    gin_files,
    bindings,
    strategy_name,
    run_dir,
    resume_dir,
    force,
    mock_data,
    logger_names,
    disabled,
    quiet,
    verbose,
):
    """Train a WGAN from gin config files (re-running on a run dir resumes it)."""
    if logger_names:  # train.loggers, as a config would bind it
        bindings = (*bindings, f"train.loggers = {list(logger_names)!r}")
    tensorflow_after_checks(gin_files or ([] if resume_dir else [DEFAULT_CONFIG]), bindings)
    from lipgan.config import gin_binding as config
    from lipgan.run import record
    from lipgan.run.progress import for_terminal
    from lipgan.run.rundir import check_location

    if resume_dir is not None:
        if run_dir is not None and run_dir.resolve() != resume_dir.resolve():
            raise ConfigError(
                "--resume DIR already names the run dir; drop --run-dir or make them equal"
            )
        state = resume(
            resume_dir, gin_files, bindings, strategy_name, force, quiet, disabled, mock_data
        )
        summarize(state, resume_dir, quiet)
        return
    discovery = discover(disabled)
    gin_files = list(gin_files) or [DEFAULT_CONFIG]
    parse(discovery, gin_files, bindings, strategy_name)
    run_dir = run_dir or _default_run_dir(gin_files)
    check_location(run_dir)
    older = record.older_problem(run_dir)
    if older:
        raise ConfigError(older)
    state = call(
        config.train_configured,
        mock_data,
        run_dir=run_dir,
        force=force,
        progress=for_terminal(quiet),
    )
    summarize(state, run_dir, quiet)


def resume(run_dir: Path, gin_files, bindings, strategy_name, force, quiet, disabled, mock_data):
    """``lipgan run --resume DIR``: continue the run in DIR with its own config.

    A CLI run parses its recorded gin config again (or the ``--gin`` files given instead), with
    ``--bind`` after it, and trains through ``lipgan run``'s own call. A Python run is rebuilt from
    its description and takes only ``train.steps`` and the intervals. ``--mock-data`` is honoured
    as in a gin run, or refused in one line where the run's data is stored in DIR.
    """
    from lipgan.run.record import DifferentConfig

    try:
        return _resume(
            run_dir, gin_files, bindings, strategy_name, force, quiet, disabled, mock_data
        )
    except DifferentConfig as exc:
        # Its own advice would be "resume it with --resume", which is what was refused.
        changed = "--gin and --bind" if gin_files else "--bind"
        raise ConfigError(
            f"--resume {run_dir}: the {changed} given change the run's settings ({exc.change()}); "
            "a resumed run keeps them: bind only train.steps, train.checkpoint_input or the "
            "intervals, train the change in a new --run-dir, or add --force to continue this "
            "run with it (its record is kept as run-before-<step>.json)"
        ) from None


def _resume(run_dir, gin_files, bindings, strategy_name, force, quiet, disabled, mock_data):
    from lipgan.config import gin_binding as config
    from lipgan.config import recorded
    from lipgan.run import rebuild
    from lipgan.run.progress import for_terminal

    run_record = rebuild.read(run_dir, "--resume")
    text = rebuild.gin_config(run_record)
    if text is None:
        if gin_files:
            raise ConfigError(
                f"--resume {run_dir}: written from Python (no gin config), so it takes no --gin; "
                "extend it with --bind train.steps=N"
            )
        if mock_data:
            rebuild.check_mock_data(run_dir, run_record)
        registry = discover(disabled).registry
        strategy = registry.get("strategy", strategy_name)() if strategy_name else None

        def resume_python():
            trainer, steps = recorded.rebuild_trainer(
                run_dir, registry, resume=True, bound=bindings, strategy=strategy
            )
            return trainer.fit(steps, run_dir=run_dir, force=force, progress=for_terminal(quiet))

        return call(resume_python, mock_data)
    discovery = discover(disabled)
    # The constraint's arguments its config left to a default that has changed since: as trained.
    bindings = [*recorded.default_pins(run_record, discovery.registry), *bindings]
    if gin_files:
        parse(discovery, gin_files, bindings, strategy_name)
    else:
        recorded.parse_text(
            text, with_strategy(discovery, bindings, strategy_name), discovery.registry
        )
    return call(
        config.train_configured,
        mock_data,
        run_dir=run_dir,
        force=force,
        progress=for_terminal(quiet),
    )
