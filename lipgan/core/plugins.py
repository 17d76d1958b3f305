"""Plugin discovery: built-ins plus every ``[project.entry-points.lipgan]`` distribution.

Nothing here runs at import time. :func:`load_registry` builds a pluggy manager, loads the plugins,
and calls each hook implementation *separately*, so every registration is attributed to its plugin and a
plugin that fails (on import or inside its hook) is recorded and skipped instead of breaking the rest.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import importlib.metadata
import os
from collections.abc import Iterable

import pluggy

from lipgan.core import hookspecs
from lipgan.core.errors import first_line
from lipgan.core.registry import Registry

ENTRY_POINT_GROUP = hookspecs.PROJECT_NAME
DISABLE_ENV = "LIPGAN_DISABLE_PLUGINS"
BUILTIN_SOURCE = "built-in"

#: Built-in plugins: plugin name -> module. The plugin name is what LIPGAN_DISABLE_PLUGINS blocks.
BUILTIN_PLUGINS = {
    "none": "lipgan_plugins.no_constraint",
    "weight_clip": "lipgan_plugins.weight_clip",
    "gradient_penalty": "lipgan_plugins.gradient_penalty",
    "spectral_norm": "lipgan_plugins.spectral_norm",
    "lipschitz_penalty": "lipgan_plugins.lipschitz_penalty",
    "dragan": "lipgan_plugins.dragan",
    "r1": "lipgan_plugins.r1",
    "bjorck": "lipgan_plugins.bjorck",
    "aol": "lipgan_plugins.aol",
    "aoc": "lipgan_plugins.aoc",
    "cayley": "lipgan_plugins.cayley",
    "soc": "lipgan_plugins.soc",
    "sll": "lipgan_plugins.sll",
    "cpl": "lipgan_plugins.cpl",
    "default": "lipgan_plugins.default_strategy",
    "mirrored": "lipgan_plugins.mirrored",
    "tpu": "lipgan_plugins.tpu",
    "multi_worker": "lipgan_plugins.multi_worker",
    "executors": "lipgan_plugins.executors",
    "metrics": "lipgan_plugins.metrics",
    "csv": "lipgan_plugins.csv_logger",
}

_HOOK_KINDS = {
    "lipgan_register_constraints": "constraint",
    "lipgan_register_strategies": "strategy",
    "lipgan_register_executors": "executor",
    "lipgan_register_metrics": "metric",
    "lipgan_register_loggers": "logger",
}


@dataclasses.dataclass(frozen=True)
class PluginFailure:
    """A plugin that could not be loaded or whose hook raised."""

    plugin: str
    source: str
    error: str

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclasses.dataclass
class Discovery:
    """What :func:`load_registry` found."""

    registry: Registry
    manager: pluggy.PluginManager
    sources: dict[str, str]
    failures: list[PluginFailure]
    blocked: list[str]
    #: Warnings every command prints: a plugin now provides the name of a blocked built-in.
    notices: list[str] = dataclasses.field(default_factory=list)

    @property
    def clashes(self) -> dict[str, str]:
        """Names registered more than once (unavailable), with who claimed them."""
        return {name: self.registry.clash_reason(name) for name in self.registry.clashes}

    def hooks_of(self, plugin_name: str) -> list[str]:
        plugin = self.manager.get_plugin(plugin_name)
        if plugin is None:
            return []
        return sorted(c.name for c in self.manager.get_hookcallers(plugin) or [])


def disabled_from_env(environ=None) -> set[str]:
    value = (environ if environ is not None else os.environ).get(DISABLE_ENV, "")
    return {name.strip() for name in value.split(",") if name.strip()}


def get_plugin_manager() -> pluggy.PluginManager:
    """A fresh manager that knows the lipgan hook specifications and nothing else."""
    manager = pluggy.PluginManager(hookspecs.PROJECT_NAME)
    manager.add_hookspecs(hookspecs)
    return manager


def _load_plugins(manager, blocked, failures) -> dict[str, str]:
    sources: dict[str, str] = {}

    def try_register(name, source, load):
        if name in blocked:
            return
        try:
            manager.register(load(), name=name)
            sources[name] = source
        except Exception as exc:  # noqa: BLE001 - any plugin error is reported, not raised
            failures.append(PluginFailure(name, source, f"{type(exc).__name__}: {exc}"))

    for name, module in BUILTIN_PLUGINS.items():
        try_register(name, BUILTIN_SOURCE, lambda m=module: importlib.import_module(m))
    seen = set()
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        dist = getattr(ep, "dist", None)
        source = f"{dist.name} {dist.version}" if dist else "unknown distribution"
        if (ep.name, source) in seen:  # the same dist visible twice on sys.path
            continue
        seen.add((ep.name, source))
        name = ep.name
        if name in sources:
            # Another plugin already has this name: load this one under a qualified name, so
            # the names it registers clash (and are reported) instead of everything failing.
            name = f"{ep.name} ({source})"
        try_register(name, source, ep.load)
    return sources


def _reject_unknown_hooks(manager, sources, failures) -> None:
    """Report a plugin that implements a hook lipgan does not have (e.g. a misspelled name).

    pluggy accepts such an implementation silently and never calls it, so the plugin would look
    installed while registering nothing; ``check_pending`` finds it. The plugin is unregistered and
    reported like one that failed to import, with the names it could have meant.
    """
    known = ", ".join(sorted(name for name in vars(hookspecs) if name.startswith("lipgan_")))
    while True:
        try:
            manager.check_pending()
            return
        except pluggy.PluginValidationError as exc:
            name = manager.get_name(exc.plugin)
            manager.unregister(exc.plugin)
            failures.append(
                PluginFailure(
                    name,
                    sources.get(name, BUILTIN_SOURCE),
                    f"PluginValidationError: {first_line(exc)}; lipgan's hooks are: {known}",
                )
            )


def _call_register_hook(impl, kind: str, registry: Registry, source: str) -> str | None:
    """Call one plugin's registration hook; all its registrations stand, or none.

    A hook that raises half-way must not leave half a plugin behind: its earlier registrations
    are rolled back and the error is returned as one line (``None`` on success).
    """
    added = []
    try:
        impl.function(
            register=lambda cls: added.append(
                registry.add(kind, cls, plugin=impl.plugin_name, source=source)
            )
        )
        return None
    except Exception as exc:  # noqa: BLE001 - any plugin error is reported, not raised
        error = f"{type(exc).__name__}: {exc}"
        for entry in added:
            registry.remove(entry.kind, entry.name, entry)
            registry.mark_unavailable(entry.name, f"{entry.describe()} failed to load: {error}")
        return error


def default_registry() -> Registry:
    """The registry of this process's plugins (blocked ones as ``$LIPGAN_DISABLE_PLUGINS`` says),
    discovered once per value of that variable: for library code that looks a name up (a
    metric, an executor) without a discovery of its own."""
    return _discovered(os.environ.get(DISABLE_ENV, "")).registry


@functools.cache
def _discovered(disabled_env: str) -> Discovery:
    return load_registry()


def load_registry(disabled: Iterable[str] | None = None) -> Discovery:
    """Discover plugins and collect their registrations.

    ``disabled`` names plugins to block in addition to ``$LIPGAN_DISABLE_PLUGINS``.
    """
    blocked = disabled_from_env() | set(disabled or ())
    manager = get_plugin_manager()
    for name in blocked:
        manager.set_blocked(name)
    failures: list[PluginFailure] = []
    sources = _load_plugins(manager, blocked, failures)
    _reject_unknown_hooks(manager, sources, failures)
    registry = Registry()
    for hook_name, kind in _HOOK_KINDS.items():
        for impl in getattr(manager.hook, hook_name).get_hookimpls():
            source = sources.get(impl.plugin_name, BUILTIN_SOURCE)
            error = _call_register_hook(impl, kind, registry, source)
            if error:
                failures.append(PluginFailure(impl.plugin_name, source, error))
    for failure in failures:
        registry.mark_unavailable(
            failure.plugin,
            f"plugin {failure.plugin!r} ({failure.source}) failed to load: {failure.error}",
        )
    for name in blocked:
        registry.mark_unavailable(
            name, f"plugin {name!r} is blocked by {DISABLE_ENV} or --disable-plugin"
        )
    notices = _replaced_builtins(registry, blocked) + _unknown_blocked(registry, blocked)
    return Discovery(registry, manager, sources, failures, sorted(blocked), notices)


def _unknown_blocked(registry: Registry, blocked: set[str]) -> list[str]:
    """Loud notes for blocked names that no plugin and no registered name has: a misspelt
    ``--disable-plugin`` would otherwise block nothing, silently."""
    known = set(BUILTIN_PLUGINS) | {e.name for e in registry.entries()}
    known |= {ep.name for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)}
    return [
        f"warning: nothing is named {name!r}, so blocking it ({DISABLE_ENV} or --disable-plugin) "
        "blocks nothing; `lipgan plugins` lists the names"
        for name in sorted(blocked - known)
    ]


def _replaced_builtins(registry: Registry, blocked: set[str]) -> list[str]:
    """Loud notes for names of blocked built-ins that a third-party class now provides."""
    notes = []
    for entry in registry.entries():
        if entry.source != BUILTIN_SOURCE and entry.name in BUILTIN_PLUGINS.keys() & blocked:
            notes.append(
                f"warning: {entry.kind} {entry.name!r} is now provided by {entry.describe()} "
                f"as {entry.qualified_class()}, not by lipgan's built-in (blocked)"
            )
    return notes
