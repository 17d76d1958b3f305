"""A config's syntax checked before TensorFlow is imported.

``lipgan run`` needs TensorFlow and the plugins (8-10 s to import) before gin can resolve a config's
names; a syntax error (``--bind train.steps=abc``, an unclosed bracket) needs neither.
:func:`check_syntax` parses the files and bindings with gin itself, skipping every configurable it
does not know yet (``skip_unknown=True``), then clears gin again: the errors are gin's own, turned
into the same one line the full parse gives (:mod:`lipgan.config.gin_messages`). Names, ranges and
values are still checked by the full parse (:func:`lipgan.config.gin_binding.parse`).
"""

from __future__ import annotations

import tokenize
from pathlib import Path

from lipgan.config import gin_messages
from lipgan.core.errors import ConfigError


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
