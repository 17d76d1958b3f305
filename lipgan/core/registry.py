"""Name -> class tables for every kind of plugin class (constraints, strategies, executors,
metrics, loggers), filled by plugin hooks.

One place decides what a name means: the CLI, gin files and the benchmark all look names up here.
A name registered twice is a clash: neither owner gets it (either silent choice would surprise
someone), the name becomes unavailable with both owners named, and everything else keeps working,
so only a config that uses the name fails. (Making the classes gin configurables is the gin edge's
job: :func:`lipgan.config.gin_binding.register_configurables`.)
"""

from __future__ import annotations

import dataclasses
import inspect

from lipgan.core.constraint import Constraint
from lipgan.core.errors import ConfigError, PluginError
from lipgan.core.executor import Executor
from lipgan.core.logger import Logger
from lipgan.core.metric import Metric
from lipgan.core.named import is_scalar
from lipgan.core.strategy import StrategyPlugin

#: Every kind of plugin class, and the base its classes subclass (one hook registers each).
KINDS = {
    "constraint": Constraint,
    "strategy": StrategyPlugin,
    "executor": Executor,
    "metric": Metric,
    "logger": Logger,
}
#: The kinds that are gin configurables (``train.constraint = @<name>()``).
GIN_KINDS = ("constraint", "strategy")


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

    def qualified_class(self) -> str:
        return f"{self.cls.__module__}.{self.cls.__qualname__}"

    def as_dict(self) -> dict:
        doc = self.cls.description or (inspect.getdoc(self.cls) or "").split("\n")[0]
        return {
            "kind": self.kind,
            "name": self.name,
            "plugin": self.plugin,
            "source": self.source,
            **_distribution(self.source),
            "class": self.qualified_class(),
            "description": doc,
            **(_gin_parameters(self.cls) if self.kind in GIN_KINDS else {}),
        }


def _gin_parameters(cls) -> dict:
    """``{"parameters": {"terms": {"default": 4}, ...}, "unrecorded_defaults": {...}}``: the gin
    parameters of a constraint or strategy class (its constructor's keyword arguments, a parameter
    without a default as ``{"required": true}``, a default that is not plain JSON by its repr) and
    what an argument meant in runs recorded before it existed (:class:`lipgan.core.named.Named`)."""
    parameters = {}
    for name, parameter in list(inspect.signature(cls.__init__).parameters.items())[1:]:
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        default = parameter.default
        if default is parameter.empty:
            parameters[name] = {"required": True}
        elif is_scalar(default):
            parameters[name] = {"default": default}
        else:
            parameters[name] = {"default": repr(default)}
    return {"parameters": parameters, "unrecorded_defaults": dict(cls.unrecorded_defaults)}


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
        #: name -> every registration that claimed it, when more than one did.
        self.clashes: dict[str, list[Registration]] = {}

    def mark_unavailable(self, name: str, reason: str) -> None:
        self.unavailable.setdefault(name, reason)

    def remove(self, kind: str, name: str, entry: Registration | None = None) -> None:
        """Drop ``name`` (only if it is still ``entry``, when given; clashes forget ``entry``)."""
        if entry is not None and name in self.clashes:
            owners = [o for o in self.clashes[name] if o is not entry]
            self.clashes[name] = owners
            self.unavailable[name] = self.clash_reason(name)
            return
        if entry is None or self._entries[kind].get(name) is entry:
            self._entries[kind].pop(name, None)

    def clash_reason(self, name: str) -> str:
        owners = self.clashes[name]
        return (
            f"{owners[0].kind} name {name!r} is registered by "
            + " and by ".join(f"{o.describe()} as {o.qualified_class()}" for o in owners)
            + "; uninstall one or block one with LIPGAN_DISABLE_PLUGINS=<plugin>"
        )

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
        entry = Registration(kind, name, cls, plugin, source)
        if name in table or name in self.clashes:
            first = table.pop(name, None)
            self.clashes.setdefault(name, [first] if first else []).append(entry)
            self.unavailable[name] = self.clash_reason(name)
            return entry
        table[name] = entry
        return entry

    def entries(self, kind: str | tuple[str, ...] | None = None) -> list[Registration]:
        kinds = [kind] if isinstance(kind, str) else list(kind or KINDS)
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
