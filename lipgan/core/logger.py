"""The Logger base class: where a run's metrics go besides ``metrics.jsonl`` and TensorBoard.

A logger is a :class:`lipgan.Callback` with a ``name``, registered by a plugin
(``lipgan_register_loggers``) and switched on by name: ``lipgan run --logger NAME`` or
``Trainer.fit(loggers=["NAME"])``. None is on by default. It sees what a callback sees (every
logged row, evaluation, checkpoint) and only observes. A logger that needs a package the user has
not installed raises :class:`lipgan.core.errors.ConfigError` with one line from its constructor,
before training starts. The built-in ``csv`` logger (``plugins/csv_logger.py``) registers through
the same hook; ``examples/lipgan-example-logger`` is an MLflow logger packaged as a third party
would.
"""

from __future__ import annotations

from lipgan.core.callbacks import Callback, RunView
from lipgan.core.named import Named


class Logger(Callback, Named):
    """Base class of every logger plugin: a named callback constructed with no arguments.

    ``self.view`` (a :class:`RunView`, set by :meth:`lipgan.Trainer.fit` before
    :meth:`on_train_begin`) is the run's narrow view: its run dir, whether this process is the
    chief, and the run's settings. Write only from the chief.
    """

    view: RunView | None = None

    def set_view(self, view: RunView) -> None:
        """Called by :meth:`lipgan.Trainer.fit` before the run begins."""
        self.view = view
