"""lipgan: Wasserstein GANs on TensorFlow with pluggable Lipschitz constraints.

Importing ``lipgan`` loads no plugin, parses no gin file and touches no device. The public names are
resolved lazily, so ``import lipgan`` stays cheap for tools (the CLI, plugin managers) that only need
the hook markers.

The package is a stack of layers, each importing only the ones below it (docs/layout.md, checked
by tests/test_layering.py): ``core`` (the plugin contract, the step, penalties, Lipschitz facts);
``models``, ``data``, ``plots``; ``metrics``; ``run`` (Trainer, loop, run dir) and ``bench``;
``study``; ``config`` (the gin edge); ``testing`` and ``reproduce``; ``cli`` on top.
"""

from __future__ import annotations

import importlib

from lipgan.core.errors import LipganError
from lipgan.core.hookspecs import hookimpl, hookspec

__version__ = "0.1.0"

_LAZY = {
    "Constraint": "lipgan.core.constraint",
    "StepContext": "lipgan.core.constraint",
    "StrategyPlugin": "lipgan.core.strategy",
    "StrategyUnavailable": "lipgan.core.strategy",
    "Trainer": "lipgan.run.trainer",
    "TrainState": "lipgan.core.train_state",
    "Intervals": "lipgan.core.step_config",
    "Callback": "lipgan.core.callbacks",
    "StepConfig": "lipgan.core.step_config",
}

#: Modules reachable as attributes (``lipgan.models.mlp_critic``), imported on first use.
_SUBMODULES = {
    "constraints": "lipgan.constraints",
    "strategies": "lipgan.strategies",
    "models": "lipgan.models",
    "evaluation": "lipgan.metrics.evaluation",
}

__all__ = ["LipganError", "hookimpl", "hookspec", "__version__", *_LAZY, *_SUBMODULES]


def __dir__() -> list[str]:
    """The lazy public names too, so tab completion and ``dir(lipgan)`` list ``Trainer`` etc."""
    return sorted(set(globals()) | set(__all__))


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    if name in _SUBMODULES:
        return importlib.import_module(_SUBMODULES[name])
    raise AttributeError(f"module 'lipgan' has no attribute {name!r}")
