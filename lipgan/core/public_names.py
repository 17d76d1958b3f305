"""Plugin classes under stable Python names, for :mod:`lipgan.constraints` and :mod:`lipgan.strategies`.

``from lipgan.constraints import GradientPenalty`` looks the class up, by its class name, among the
classes that plugins registered: the built-ins and every installed third-party plugin, found by the
same discovery as ``lipgan plugins``. The core thereby never imports a plugin module itself, and a
third-party class is importable the same way as a built-in one. Discovery runs once per process, on
the first such lookup (never at import time).
"""

from __future__ import annotations

import functools


@functools.cache
def _classes(kind: str) -> dict[str, type]:
    from lipgan.core.plugins import load_registry

    registry = load_registry().registry
    return {entry.cls.__name__: entry.cls for entry in registry.entries() if entry.kind == kind}


def lookup(kind: str, module: str, name: str) -> type:
    """The registered ``kind`` class called ``name``, or AttributeError listing the known ones."""
    if name.startswith("__"):
        raise AttributeError(name)
    classes = _classes(kind)
    if name not in classes:
        raise AttributeError(
            f"module {module!r} has no attribute {name!r}; registered {kind} classes: "
            f"{', '.join(sorted(classes))}"
        )
    return classes[name]


def names(kind: str) -> list[str]:
    return sorted(_classes(kind))
