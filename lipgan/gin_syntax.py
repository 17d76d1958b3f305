"""A config's syntax checked before TensorFlow is imported, so a typo is answered in a second.

``lipgan run`` needs TensorFlow and the plugins (8–10 s to import) before gin can resolve a
config's names; a syntax error (``--bind train.steps=abc``, an unclosed bracket, a missing
include) needs neither. :func:`check_syntax` parses the files and bindings with gin itself, skipping
every configurable it does not know yet (``skip_unknown=True``), then clears gin again: the errors
are gin's own, turned into the same one line the full parse gives (:mod:`lipgan.gin_messages`).
Names, ranges and values are still checked by the full parse (:func:`lipgan.config.parse`).
"""

from __future__ import annotations

import contextlib
import logging
import tokenize
from pathlib import Path

import gin
from lipgan import gin_messages
from lipgan.errors import ConfigError


@contextlib.contextmanager
def quiet_gin_logging():
    """gin logs "Path not found" on the root logger before raising; the one-line error says it."""
    previous = logging.root.manager.disable
    logging.disable(logging.ERROR)
    try:
        yield
    finally:
        logging.disable(previous)


def _path(name: str) -> Path | None:
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
    gin.add_config_file_search_path(str(gin_messages.configs_dir()))
    with quiet_gin_logging():
        _check(gin_files, bindings)


def _check(gin_files: list[str], bindings: list[str]) -> None:
    # Syntax only: an unknown parameter of a configurable gin already knows (ValueError) is the
    # full parse's to report, with the names and rules that apply where it is used.
    errors = (SyntaxError, tokenize.TokenError)
    try:
        for name in gin_files:
            path = _path(name)
            if path is None:
                continue
            try:
                gin.parse_config_file(str(path), skip_unknown=True)
            except errors as exc:
                raise ConfigError(gin_messages.one_line(exc, str(path), None, [])) from None
            except (OSError, ValueError, TypeError):
                return  # a missing include, a name: the full parse names it and its chain
        for binding in bindings:
            if "=" not in binding:
                return  # the full parse's own line
            try:
                gin.parse_config(binding, skip_unknown=True)
            except errors as exc:
                raise ConfigError(
                    gin_messages.one_line(exc, f"--bind {binding!r}", None, [], binding=True)
                ) from None
            except (ValueError, TypeError):
                continue
    finally:
        gin.clear_config()
