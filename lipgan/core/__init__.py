"""The bottom layer: the plugin contract and the facts everything else stands on.

Hook specs, the Constraint/StrategyPlugin/Executor/Metric/Logger base classes, the registry and the
plugin manager, errors, the counter-based RNG, the step's settings (StepConfig, Intervals, ranges),
the distributed step itself (engine), penalties and the Lipschitz facts with the certified layers
built on them. Imports nothing from lipgan outside ``lipgan.core`` (docs/layout.md).
"""
