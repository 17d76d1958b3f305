"""A plugin SPEC: ``name`` or ``name:key=value,...``, a plugin and its arguments as text.

One syntax wherever a plugin is named on the command line: ``lipgan bench --constraint`` and
``--strategy``, and the rows of ``lipgan study`` and ``lipgan tune`` (``--constraint``, where a
dotted key is a whole gin binding: :func:`lipgan.study.spec.row_parameters`). It lives in core, below
the bench and the study that both read it. Kept free of TensorFlow, so the CLI can check a SPEC
before it imports anything heavy.
"""

from __future__ import annotations

import ast

from lipgan.core.errors import ConfigError


def parse_spec(spec: str) -> tuple[str, dict]:
    """``name`` or ``name:key=value,key=value`` -> (name, kwargs).

    A value is read as a Python literal (``True``, ``16``, ``1e-4``, ``'x'``) and kept as its text
    when it is none (``relu``).

    Raises:
        ConfigError: an item without ``=``.
    """
    name, _, params = spec.partition(":")
    kwargs = {}
    for item in filter(None, params.split(",")):
        key, eq, value = item.partition("=")
        if not eq:
            raise ConfigError(f"bad spec {spec!r}: expected name:key=value,...")
        try:
            kwargs[key.strip()] = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            kwargs[key.strip()] = value.strip()
    return name.strip(), kwargs
