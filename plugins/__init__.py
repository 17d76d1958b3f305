"""lipgan's built-in plugins, one short module each (installed as ``lipgan_plugins``).

They use exactly the public contract a third-party plugin uses: ``lipgan.hookimpl`` plus the
``Constraint`` / ``StrategyPlugin`` base classes. ``lipgan.plugins.BUILTIN_PLUGINS`` lists them.
"""
