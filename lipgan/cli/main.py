"""The ``lipgan`` command line: the group, its one-line errors, and where each command lives.

Each command is a module of :mod:`lipgan.cli` (``run``, ``config``, ``plugins``, ``rundir``: eval,
audit and sample, ``study``, ``tune``, ``bench``, ``reproduce``), none importing another; the
options they share are in :mod:`lipgan.cli.options`. The group names the commands by import string
and imports one only when it is called or listed (click's documented ``LazyGroup`` pattern,
"Advanced Groups and Context" in click's docs), so this module imports no command.

Every user error is a :class:`~lipgan.core.errors.LipganError` printed as one line on stderr with
exit status 1 (an interrupted run: 128 + the signal), never a traceback. TensorFlow is imported
inside commands, after its C++ log level is set.
"""

from __future__ import annotations

import importlib
import os
import re
import sys

import click

from lipgan.cli.options import import_tensorflow, verbose_option
from lipgan.core.errors import Interrupted, LipganError, first_line

#: Command name -> ``module:attribute`` of its click command, imported on first use.
COMMANDS = {
    "audit": "lipgan.cli.rundir:audit_command",
    "bench": "lipgan.cli.bench:bench",
    "config": "lipgan.cli.config:config_group",
    "eval": "lipgan.cli.rundir:eval_command",
    "plugins": "lipgan.cli.plugins:plugins",
    "reproduce": "lipgan.cli.reproduce:reproduce",
    "run": "lipgan.cli.run:run",
    "sample": "lipgan.cli.rundir:sample",
    "study": "lipgan.cli.study:study",
    "tune": "lipgan.cli.tune:tune",
}

GIN_CALL_MARKER = "In call to configurable"


def _fail(message: str) -> None:
    click.echo(f"Error: {message}", err=True)
    sys.exit(1)


class LipganGroup(click.Group):
    """Loads its commands from :data:`COMMANDS` by import string, and turns LipganError (and gin's
    wrapped configuration errors) into one-line messages."""

    def list_commands(self, ctx):
        return sorted({*super().list_commands(ctx), *COMMANDS})

    def get_command(self, ctx, cmd_name):
        if cmd_name not in COMMANDS:
            return super().get_command(ctx, cmd_name)
        module, _, attribute = COMMANDS[cmd_name].partition(":")
        return getattr(importlib.import_module(module), attribute)

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
        except click.UsageError as exc:
            # click would print the usage, a "Try ... --help" line and the error: three lines
            # for one mistake. One line, the help to read in it; click's exit status 2 kept.
            where = exc.ctx.command_path if exc.ctx is not None else "lipgan"
            click.echo(f"Error: {exc.format_message()} (see `{where} --help`)", err=True)
            sys.exit(exc.exit_code)
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


@click.group(cls=LipganGroup, name="lipgan")
@click.version_option(package_name="lipgan")
@verbose_option
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
        import_tensorflow(verbose)


def _notices_as_lines() -> None:
    """Print lipgan's notices (:class:`lipgan.core.errors.LipganWarning`) as their one line on
    stderr, not as Python's ``file:line: Category: message`` and source line; other warnings as
    usual."""
    import warnings

    from lipgan.core.errors import LipganWarning

    original = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, LipganWarning):
            print(message, file=file or sys.stderr, flush=True)
        else:
            original(message, category, filename, lineno, file, line)

    warnings.showwarning = show


def main() -> None:
    cli(prog_name="lipgan")


if __name__ == "__main__":
    main()
