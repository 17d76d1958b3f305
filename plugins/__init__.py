"""lipgan's built-in plugins, one short module each (installed as ``lipgan_plugins``).

They are written as a third-party plugin would be: ``lipgan.hookimpl``, the ``Constraint`` /
``StrategyPlugin`` base classes and lipgan's public modules (``lipgan.core.penalties``,
``lipgan.models``, ``lipgan.core.strategy``). The core never imports them: the plugin manager loads
them by name (``lipgan.core.plugins.BUILTIN_PLUGINS``), and Python code reaches their classes as
``lipgan.constraints.GradientPenalty`` or ``lipgan.strategies.Mirrored``.
"""
