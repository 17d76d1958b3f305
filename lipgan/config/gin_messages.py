"""One-line messages for what gin raises: the file and line, the bad value and how to write it, the
unknown name and what is known, the include that is missing or loops.

gin's exceptions are multi-line and name its internals (``<ast.Name object at ...>``); the CLI
prints one line that says what to do. Kept apart from :mod:`lipgan.config.gin_binding` (the gin
binding) because none of this calls gin: it reads the text of gin's exceptions and of the config
files.
"""

from __future__ import annotations

import contextlib
import importlib.resources
import logging
import re
import tokenize
from pathlib import Path


@contextlib.contextmanager
def quiet_gin_logging():
    """gin logs "Path not found" on the root logger before raising; the one-line error says it."""
    previous = logging.root.manager.disable
    logging.disable(logging.ERROR)
    try:
        yield
    finally:
        logging.disable(previous)


def configs_dir() -> Path:
    """Where the shipped configs are; their shared fragments are in its ``parts/`` (not runnable)."""
    return Path(str(importlib.resources.files("lipgan").joinpath("configs")))


_LOCATION = re.compile(
    r'In (?:file "(?P<file>[^"]+)", line (?P<line>\d+)|bindings string line \d+)'
)


#: gin's words when ``ast.literal_eval`` refuses a value token (its first line is ast's repr).
_BAD_TOKEN = re.compile(r"Failed to parse token '(?P<token>[^']*)'")
_PARAMETER = re.compile(r"^\s*(?P<name>[\w./]+)\s*=")


def _bad_value(exc: SyntaxError, token: str, binding: bool) -> str:
    """Why a value gin could not read is refused, and how to write it (gin says ``<ast.Name ...>``).

    A bare word (``train.x = abc``) is the usual case: a string without quotes, or a configurable
    without ``@``. ``nan`` and ``inf`` are bare words too, and no lipgan parameter takes them. The
    fix is shown as the user would type it: a gin line, or a ``--bind`` quoted for the shell.
    """
    if token.lower().lstrip("+-") in ("nan", "inf", "infinity"):
        return (
            f"{token!r} is not a value gin reads, and numeric parameters must be finite numbers "
            "anyway; give a number"
        )
    found = _PARAMETER.match(exc.text or "")
    parameter = found.group("name") if found else "name.parameter"
    name = f"{parameter}: " if found and not binding else ""
    if not token.isidentifier():
        return (
            f"{name}{token!r} is not a value gin reads; write a number, a quoted string, "
            "True/False/None, a list, or an @configurable"
        )
    quoted, reference = f"{parameter} = '{token}'", f"{parameter} = @{token}()"
    if not found or (exc.text or "").split("=", 1)[1].strip() != token:
        quoted, reference = f"'{token}'", f"@{token}()"  # one item of a list or dict
    elif binding:
        quoted, reference = f"--bind \"{parameter}='{token}'\"", f"--bind {parameter}=@{token}()"
    return (
        f"{name}{token!r} is not a value gin reads; quote a string ({quoted}), write a number "
        f"or True/False/None, or refer to a configurable with @ ({reference})"
    )


#: ``train`` parameters of older lipgan versions and their names now: refused in one line that
#: names the new one (a run dir's recorded config is converted instead, :func:`convert_recorded`).
RENAMED = {"dataset": "data"}
_RENAMED_PARAMETER = re.compile(r"Configurable 'train' doesn't have a parameter named '(\w+)'")
_RECORDED_RENAME = re.compile(r"^train\.(\w+)(?=\s*=)", re.MULTILINE)


def convert_recorded(text: str) -> str:
    """A run dir's recorded gin config (``gin.config_str()`` of an older lipgan) with the
    :data:`RENAMED` ``train`` parameters under their names now, so an older run dir resumes."""
    return _RECORDED_RENAME.sub(lambda m: f"train.{RENAMED.get(m.group(1), m.group(1))}", text)


def one_line(
    exc: BaseException, where: str, registry, configurables, *, binding: bool = False
) -> str:
    """gin's exception as ``where: what``; ``binding`` when ``where`` is a one-line ``--bind``;
    ``configurables``: the library's names, listed when a name is unknown."""
    text = str(exc)
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    message = lines[0] if lines else type(exc).__name__
    match = _LOCATION.search(text)
    bad_token = _BAD_TOKEN.search(text)
    if bad_token and isinstance(exc, SyntaxError):
        message = _bad_value(exc, bad_token.group("token"), binding)
    elif binding:
        message = re.sub(r"\s*\(line \d+\)$", "", message)  # a --bind is one line
    if match and match.group("file"):
        where = f"{match.group('file')}:{match.group('line')}"
    elif isinstance(exc, SyntaxError) and exc.lineno and not binding:
        where = f"{exc.filename or where}:{exc.lineno}"
    elif isinstance(exc, tokenize.TokenError) and len(exc.args) > 1:
        where = where if binding else f"{where}:{exc.args[1][0]}"
        message = f"syntax error: {exc.args[0]}"
    if isinstance(exc, UnicodeDecodeError):
        message = f"not a text file (a gin config is UTF-8 text; {message})"
    message = re.sub(r"\s*\([^()]*, line \d+\)$", "", message)  # the location is in `where`
    if message.startswith("Unable to parse value"):
        message = (
            "a binding with no value gin can read after `=`; write a number, a quoted string, "
            "True/False/None, a list, or an @configurable"
        )
    renamed = _RENAMED_PARAMETER.search(message)
    if renamed and renamed.group(1) in RENAMED:
        old, new = renamed.group(1), RENAMED[renamed.group(1)]
        message = f"train.{old} is now train.{new}: write `train.{new} = ...`"
    unknown = re.search(r"No configurable matching (?:reference )?'@?([\w./]+?)(?:\(\))?'", message)
    if unknown:
        name = unknown.group(1).split("/")[-1]
        message = _unknown_name(name, registry, configurables)
    return f"{where}: {message}"


def _unknown_name(name: str, registry, configurables) -> str:
    """Why ``name`` is not a configurable: its plugin failed or is blocked, or it was never known."""
    if name in registry.unavailable:
        return f"{name!r} is unavailable: {registry.unavailable[name]}"
    return (
        f"unknown configurable {name!r}; constraints: {', '.join(registry.names('constraint'))}; "
        f"strategies: {', '.join(registry.names('strategy'))}; "
        f"other configurables: {', '.join(configurables)}"
    )


_INCLUDE = re.compile(r"""^\s*include\s+['"](?P<name>[^'"]+)['"]""", re.MULTILINE)


def missing_include(path: Path) -> str:
    """Why parsing ``path`` hit a missing file: the ``include`` that names one (gin says nothing)."""
    try:
        text = path.read_text()
    except OSError as exc:
        return f"{path}: cannot be read ({exc.strerror or exc})"
    for match in _INCLUDE.finditer(text):
        name = match.group("name")
        line = text.count("\n", 0, match.start()) + 1
        # Where gin looks: the current directory and lipgan's configs (its search path).
        if any((base / name).is_file() for base in (Path(), configs_dir())):
            continue
        beside = path.parent / name
        if beside.is_file():
            return (
                f"{path}:{line}: include {name!r} is not found: gin resolves includes from the "
                f"current directory and lipgan's configs, not from the including file's folder "
                f"(it is at {beside}); run from {path.parent or '.'} or write the path relative "
                "to the current directory"
            )
        return f"{path}:{line}: include {name!r}: no such file (relative to the current dir or lipgan's configs)"
    return f"{path}: a file it includes cannot be read"


def include_loop(path: Path, chain: tuple[Path, ...] = ()) -> str | None:
    """``a.gin -> b.gin -> a.gin`` when ``path``'s includes lead back to a file on the way."""
    if path in chain:
        return " -> ".join(str(p) for p in (*chain[chain.index(path) :], path))
    try:
        text = path.read_text()
    except OSError:
        return None
    for match in _INCLUDE.finditer(text):
        name = match.group("name")
        found = next(
            (base / name for base in (Path(), configs_dir()) if (base / name).is_file()), None
        )
        if found is not None:
            loop = include_loop(found.resolve(), (*chain, path))
            if loop:
                return loop
    return None
