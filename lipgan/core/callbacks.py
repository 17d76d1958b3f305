"""Hooks into :meth:`lipgan.Trainer.fit`, Keras-style: a :class:`Callback` sees the run begin,
every logged row, every evaluation, every checkpoint and the end.

All hooks run on the host between compiled calls. Progress output is itself a callback
(:class:`lipgan.run.progress.Progress`): ``fit(verbose=0)`` leaves it out and prints nothing.
Kept free of TensorFlow imports so the CLI's progress display stays cheap to import.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lipgan.core.train_state import TrainState

#: The per-iteration losses the engine computes and every logged row holds (the progress line
#: shows them; kept here, free of TensorFlow, so both can import it).
METRICS = ("critic_loss", "wasserstein", "penalty", "generator_loss")


class Callback:
    """Subclass and override the hooks you need (each does nothing by default).

    :meth:`lipgan.Trainer.fit` gives each callback the trainer it fits (:meth:`set_trainer`, as
    Keras' ``set_model``) before :meth:`on_train_begin`: ``self.trainer`` holds its models, its
    settings and whether this process is the chief.
    """

    trainer = None

    def set_trainer(self, trainer) -> None:
        """Called by :meth:`lipgan.Trainer.fit` with the trainer being fit.

        Args:
            trainer: the :class:`lipgan.Trainer`; kept as ``self.trainer``.
        """
        self.trainer = trainer

    def on_train_begin(self, step: int, steps: int) -> None:
        """Once per :meth:`fit` call, before the first iteration: training resumes at ``step``
        (restored or already trained) and runs to ``steps``.

        Args:
            step: the iteration training starts from.
            steps: the iteration it runs to.
        """

    def on_log(self, step: int, metrics: dict) -> None:
        """At every logged step, with the row written to ``metrics.jsonl``.

        Args:
            step: the iteration logged.
            metrics: the row: losses, ``wasserstein``, ``penalty``, and the ``diag/``, ``toy/``
                and ``eval/`` values due at this step.
        """

    def on_evaluate(self, step: int, metrics: dict) -> None:
        """After each periodic evaluation (``Intervals.eval_every``), with its ``eval/...`` metrics.

        Args:
            step: the iteration evaluated.
            metrics: ``{'eval/<metric>': float}``, as :meth:`lipgan.Trainer.evaluate` returns.
        """

    def on_checkpoint(self, step: int, path: Path | str | None) -> None:
        """After a checkpoint of ``step`` is written (only with a ``run_dir``).

        Args:
            step: the iteration the checkpoint holds.
            path: the checkpoint's path prefix (``.../checkpoints/ckpt-<step>``).
        """

    def on_train_end(self, state: TrainState) -> None:
        """Once, when :meth:`fit` returns normally.

        Args:
            state: the :class:`lipgan.TrainState` that :meth:`fit` returns.
        """
