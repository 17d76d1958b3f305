"""The lipgan plugin contract: every hook a plugin may implement.

Plugins are discovered by pluggy under the project name ``lipgan``: the built-ins in
``lipgan_plugins`` and every distribution that declares ``[project.entry-points.lipgan]``.
A plugin module implements any subset of these hooks with the :data:`lipgan.hookimpl` marker::

    from lipgan import Constraint, hookimpl

    class MyPenalty(Constraint):
        name = "my_penalty"

    @hookimpl
    def lipgan_register_constraints(register):
        register(MyPenalty)

Hooks only *register* things. They run on the host when the plugin manager is created, never inside a
``tf.function``, so they may import freely and must not touch TensorFlow devices.
"""

from __future__ import annotations

from collections.abc import Callable

import pluggy

PROJECT_NAME = "lipgan"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


@hookspec
def lipgan_register_constraints(register: Callable[[type], None]) -> None:
    """Register :class:`lipgan.Constraint` subclasses.

    Call ``register(cls)`` once per class. ``cls.name`` (a snake_case class attribute) is the name used
    on the CLI and in gin (``train.constraint = @<name>()``); it must be unique across all plugins, and a
    second registration of a name is an error that names both plugins.
    """


@hookspec
def lipgan_register_strategies(register: Callable[[type], None]) -> None:
    """Register :class:`lipgan.StrategyPlugin` subclasses.

    Call ``register(cls)`` once per class; ``cls.name`` selects it with ``--strategy <name>`` or
    ``train.strategy = @<name>()``. Names are unique across plugins, as for constraints.
    """
