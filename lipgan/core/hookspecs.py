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


@hookspec
def lipgan_register_executors(register: Callable[[type], None]) -> None:
    """Register :class:`lipgan.Executor` subclasses: where a study's or tune's cells run.

    ``cls.name`` selects it with ``lipgan study --executor <name>`` (and ``lipgan tune``, where
    ``cls.commands`` includes ``"tune"``); ``cls.accepts`` names the command-line options it takes
    (``jobs``, ``ray_address``, ``cell_resources``, ``storage``), and :meth:`Executor.from_options`
    builds it from them. Built-ins: ``local``, ``ray``, ``tune``.
    """


@hookspec
def lipgan_register_metrics(register: Callable[[type], None]) -> None:
    """Register :class:`lipgan.Metric` subclasses: what ``lipgan eval`` and a run's evaluations
    report. ``cls.name`` selects it with ``lipgan eval --metric <name>``; each metric says which
    data it applies to (:meth:`Metric.applies`). Built-ins: ``critic_wasserstein``, ``toy``,
    ``data_w1``, ``digits``, ``inception``.
    """


@hookspec
def lipgan_register_loggers(register: Callable[[type], None]) -> None:
    """Register :class:`lipgan.Logger` subclasses: where a run's rows go besides its own files.

    None is on by default; ``lipgan run --logger <name>`` (or ``Trainer.fit(loggers=[...])``)
    switches one on. Built-in: ``csv``.
    """
