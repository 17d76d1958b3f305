"""Name -> class tables for constraints and strategies, filled by plugin hooks.

One place decides what a name means: the CLI, gin files and the benchmark all look names up here.
Duplicate names are rejected with both owners named. (Making the classes gin configurables is the
gin edge's job: :func:`lipgan.config.register_configurables`.)
"""

from __future__ import annotations

import dataclasses
import inspect

from lipgan.constraint import Constraint
from lipgan.errors import ConfigError, PluginError
from lipgan.strategy import StrategyPlugin

KINDS = {"constraint": Constraint, "strategy": StrategyPlugin}


class DuplicateNameError(PluginError):
    """Two plugins claim the same name: fatal, since either choice would surprise someone."""


@dataclasses.dataclass(frozen=True)
class Registration:
    """Who registered what: shown by ``lipgan plugins`` and used in error messages."""

    kind: str
    name: str
    cls: type
    plugin: str
    source: str  # "built-in" or "<distribution> <version>"

    def describe(self) -> str:
        return f"plugin {self.plugin!r} ({self.source})"

    def as_dict(self) -> dict:
        doc = self.cls.description or (inspect.getdoc(self.cls) or "").split("\n")[0]
        return {
            "kind": self.kind,
            "name": self.name,
            "plugin": self.plugin,
            "source": self.source,
            **_distribution(self.source),
            "class": f"{self.cls.__module__}.{self.cls.__qualname__}",
            "description": doc,
        }


def _distribution(source: str) -> dict:
    """``{"distribution", "version"}`` from a source label; built-ins belong to lipgan itself."""
    if source == "built-in":
        from lipgan import __version__

        return {"distribution": "lipgan", "version": __version__}
    dist, _, version = source.rpartition(" ")
    return {"distribution": dist or source, "version": version if dist else ""}


class Registry:
    """Registered constraints and strategies, keyed by kind then name."""

    def __init__(self):
        self._entries: dict[str, dict[str, Registration]] = {kind: {} for kind in KINDS}
        #: name -> why it is not available (its plugin failed or is blocked); used in error messages.
        self.unavailable: dict[str, str] = {}

    def mark_unavailable(self, name: str, reason: str) -> None:
        self.unavailable.setdefault(name, reason)

    def remove(self, kind: str, name: str) -> None:
        self._entries[kind].pop(name, None)

    def add(self, kind: str, cls: type, *, plugin: str, source: str) -> Registration:
        base = KINDS[kind]
        if not (isinstance(cls, type) and issubclass(cls, base)):
            raise PluginError(
                f"plugin {plugin!r} ({source}) registered {cls!r} as a {kind}, "
                f"but it is not a subclass of lipgan.{base.__name__}"
            )
        name = getattr(cls, "name", "")
        if not name or not name.isidentifier() or name != name.lower():
            raise PluginError(
                f"plugin {plugin!r} ({source}) registered {cls.__name__} with name {name!r}; "
                "set the class attribute `name` to a snake_case identifier"
            )
        table = self._entries[kind]
        if name in table:
            raise DuplicateNameError(
                f"{kind} name {name!r} is registered twice: by {table[name].describe()} and by "
                f"plugin {plugin!r} ({source}); uninstall one or block it with "
                "LIPGAN_DISABLE_PLUGINS"
            )
        entry = Registration(kind, name, cls, plugin, source)
        table[name] = entry
        return entry

    def entries(self, kind: str | None = None) -> list[Registration]:
        kinds = [kind] if kind else list(KINDS)
        return [e for k in kinds for e in sorted(self._entries[k].values(), key=lambda e: e.name)]

    def names(self, kind: str) -> list[str]:
        return sorted(self._entries[kind])

    def get(self, kind: str, name: str) -> type:
        try:
            return self._entries[kind][name].cls
        except KeyError:
            known = ", ".join(self.names(kind))
            if name in self.unavailable:
                raise ConfigError(
                    f"{kind} {name!r} is unavailable: {self.unavailable[name]}"
                ) from None
            raise ConfigError(f"unknown {kind} {name!r}; known: {known}") from None

    def kind_of(self, name: str) -> str | None:
        return next((k for k, table in self._entries.items() if name in table), None)
