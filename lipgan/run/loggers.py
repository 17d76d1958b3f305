"""The loggers a run switches on by name (``fit(loggers=...)``, ``train.loggers``, ``--logger``).

Each name is looked up among the registered loggers (``lipgan_register_loggers``; an unknown name
is one line listing the known ones), and every logger gets the same narrow view of the run
(:class:`lipgan.core.logger.RunView`: run dir, chief, settings), never the trainer.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from lipgan.core.logger import RunView
from lipgan.core.plugins import default_registry


def make_loggers(names: Iterable[str], run_dir, chief: bool, settings: dict) -> list:
    """The registered loggers ``names`` (one line for an unknown one), each given its view."""
    if isinstance(names, str):
        names = [names]
    classes = [default_registry().get("logger", name) for name in dict.fromkeys(names)]
    view = RunView(Path(run_dir) if run_dir is not None else None, chief, settings)
    loggers = [cls() for cls in classes]
    for logger in loggers:
        logger.set_view(view)
    return loggers
