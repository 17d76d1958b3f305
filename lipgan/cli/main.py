"""The ``lipgan`` command line: ``run`` trains from gin files, ``eval``/``sample``/``audit`` read a
run dir (:mod:`lipgan.cli.rundir`), ``config show`` resolves a config, ``plugins`` lists what was
discovered. Options the commands share are in :mod:`lipgan.cli.options`.

Every user error is a :class:`~lipgan.core.errors.LipganError` printed as one line on stderr with exit
status 1 (an interrupted run: 128 + the signal), never a traceback. TensorFlow is imported inside
commands, after its C++ log level is set.
"""

from __future__ import annotations

import datetime
import json
import os
import re
import sys
import tokenize
from pathlib import Path

import click

from lipgan.cli.bench import bench
from lipgan.cli.options import (
    DEFAULT_CONFIG,
    PATH,
    call,
    config_options,
    disable_option,
    discover,
    parse,
    summarize,
)
from lipgan.cli.reproduce import reproduce
from lipgan.cli.rundir import audit_command, eval_command, resume, sample
from lipgan.cli.study import study
from lipgan.cli.tune import tune
from lipgan.config import gin_messages
from lipgan.core.errors import ConfigError, Interrupted, LipganError, first_line

GIN_CALL_MARKER = "In call to configurable"


def _fail(message: str) -> None:
    click.echo(f"Error: {message}", err=True)
    sys.exit(1)


def _import_tensorflow(verbose: bool) -> None:
    """Import TensorFlow once, hiding its C++ start-up chatter unless --verbose (:mod:`lipgan.core.quiet_tf`)."""
    from lipgan.core.quiet_tf import import_tensorflow

    import_tensorflow(verbose)


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
    _notices_as_lines()
    ctx.meta["lipgan.verbose"] = verbose  # for commands whose worker processes import TF
    if not verbose:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    # `run` and `config` check a config's syntax first and import TensorFlow after (a typo is
    # answered in a second, not after TensorFlow's 8-10 s start): they call tensorflow_after_checks.
    lazy = ctx.invoked_subcommand in ("run", "config")
    if ctx.invoked_subcommand is not None and "--help" not in sys.argv[1:] and not lazy:
        _import_tensorflow(verbose)


def tensorflow_after_checks(gin_files, bindings) -> None:
    """The syntax of ``gin_files`` and ``bindings`` checked without TensorFlow (one line on an
    error, :func:`check_syntax`), then TensorFlow imported quietly as for every command."""
    check_syntax(list(gin_files), list(bindings))
    ctx = click.get_current_context()
    _import_tensorflow(bool(ctx.find_root().meta.get("lipgan.verbose")))


def _notices_as_lines() -> None:
    """Print lipgan's notices (:class:`lipgan.core.errors.LipganWarning`) as their one line on stderr,
    not as Python's ``file:line: Category: message`` and source line; other warnings as usual."""
    import warnings

    from lipgan.core.errors import LipganWarning

    original = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, LipganWarning):
            print(message, file=file or sys.stderr, flush=True)
        else:
            original(message, category, filename, lineno, file, line)

    warnings.showwarning = show


# -- a config's syntax, before TensorFlow ----------------------------------------------------------
# ``lipgan run`` needs TensorFlow and the plugins (8-10 s to import) before gin can resolve a config's
# names; a syntax error (``--bind train.steps=abc``, an unclosed bracket) needs neither.
# :func:`check_syntax` parses the files and bindings with gin itself, skipping every configurable it
# does not know yet (``skip_unknown=True``), then clears gin again: the errors are gin's own, turned
# into the same one line the full parse gives (:mod:`lipgan.config.gin_messages`). Names, ranges and values
# are still checked by the full parse (:func:`lipgan.config.gin_binding.parse`).


def _config_file(name: str) -> Path | None:
    """A file as given or a shipped config of that name; None leaves it to the full parse."""
    candidate = Path(name)
    if candidate.is_file():
        return candidate
    for shipped in (candidate.name, f"{candidate.name}.gin"):
        path = gin_messages.configs_dir() / shipped
        if path.is_file():
            return path
    return None


def check_syntax(gin_files: list[str], bindings: list[str]) -> None:
    """Raise :class:`ConfigError` with the full parse's line for a syntax error in ``gin_files``
    (their includes too) or ``bindings``; names are not resolved here."""
    import gin

    gin.add_config_file_search_path(str(gin_messages.configs_dir()))
    with gin_messages.quiet_gin_logging():
        _check_syntax(gin_files, bindings)


def _check_syntax(gin_files: list[str], bindings: list[str]) -> None:
    import gin.config_parser

    import gin

    # Syntax only: the files' own statements are read by gin's parser (includes and imports are
    # not followed, nor names resolved); an unknown parameter of a configurable gin already knows
    # (ValueError) is the full parse's to report, with the names and rules that apply there.
    errors = (SyntaxError, tokenize.TokenError)
    delegate = gin.config.ParserDelegate(skip_unknown=True)
    try:
        for name in gin_files:
            path = _config_file(name)
            if path is None:
                continue
            try:
                with open(path) as text:
                    for _ in gin.config_parser.ConfigParser(text, delegate):
                        pass
            except errors as exc:
                raise ConfigError(gin_messages.one_line(exc, str(path), None, [])) from None
            except Exception:  # noqa: BLE001 - not a syntax error: the full parse's to report
                continue
        for binding in bindings:
            if "=" not in binding:
                return  # the full parse's own line
            try:
                gin.parse_config(binding, skip_unknown=True)
            except errors as exc:
                raise ConfigError(
                    gin_messages.one_line(exc, f"--bind {binding!r}", None, [], binding=True)
                ) from None
            except Exception:  # noqa: BLE001 - not a syntax error: the full parse's to report
                continue
    finally:
        gin.clear_config()


def _default_run_dir(gin_files) -> Path:
    """``runs/<config>-<date>-<time>-<pid>``: two runs started in the same second get two dirs."""
    stem = Path(gin_files[-1]).stem if gin_files else Path(DEFAULT_CONFIG).stem
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path("runs") / f"{stem}-{stamp}-{os.getpid()}"


@cli.command()
@config_options
@click.option(
    "--strategy", "strategy_name", metavar="NAME", help="Override train.strategy, e.g. mirrored."
)
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
@click.option("--mock-data", is_flag=True, help="Use tfds.testing.mock_data instead of real data.")
@click.option(
    "--logger",
    "logger_names",
    multiple=True,
    metavar="NAME",
    help="Switch a registered logger on (repeatable; `lipgan plugins` lists them, e.g. csv).",
)
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
    tensorflow_after_checks(list(gin_files) or [DEFAULT_CONFIG], bindings)
    import gin
    from lipgan.config.gin_binding import bindings_of

    parse(discover(disabled), list(gin_files) or [DEFAULT_CONFIG], bindings, strategy_name)
    text = gin.config_str()
    click.echo(json.dumps(bindings_of(text), indent=2) if as_json else text.rstrip())


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@disable_option
def plugins(as_json, disabled):
    """List the discovered plugins' constraints, strategies, executors, metrics and loggers."""
    discovery = discover(disabled)
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
    from lipgan.core.registry import KINDS

    for kind in KINDS:
        click.echo(f"{'strategies' if kind == 'strategy' else kind + 's'}:")
        for item in (e for e in entries if e["kind"] == kind):
            click.echo(f"  {item['name']:<20} {item['source']:<24} {item['description']}")
    for failure in discovery.failures:
        click.echo(f"failed: {failure.plugin} ({failure.source}): {failure.error}")
    for reason in discovery.clashes.values():
        click.echo(f"clash (unavailable): {reason}")
    if discovery.blocked:
        click.echo(f"blocked: {', '.join(discovery.blocked)}")


cli.add_command(eval_command)
cli.add_command(audit_command)
cli.add_command(sample)
cli.add_command(bench)
cli.add_command(study)
cli.add_command(tune)
cli.add_command(reproduce)


def main() -> None:
    cli(prog_name="lipgan")


if __name__ == "__main__":
    main()
