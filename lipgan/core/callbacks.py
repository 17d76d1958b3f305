"""Hooks into :meth:`lipgan.Trainer.fit`, Keras-style: a :class:`Callback` sees the run begin,
every logged row, every evaluation, every checkpoint and the end.

All hooks run on the host between compiled calls. Progress output is itself a callback
(:class:`lipgan.run.progress.Progress`): ``fit(verbose=0)`` leaves it out and prints nothing.
Kept free of TensorFlow imports so the CLI's progress display stays cheap to import.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lipgan.core.train_state import TrainState

#: The per-iteration losses the engine computes and every logged row holds (the progress line
#: shows them; kept here, free of TensorFlow, so both can import it).
METRICS = ("critic_loss", "wasserstein", "penalty", "generator_loss")


@dataclasses.dataclass(frozen=True)
class Sampler:
    """What draws samples: a generator model and the shape of the noise it takes.

    :func:`lipgan.metrics.evaluation.generate` and :func:`lipgan.metrics.evaluation.evaluate` take one, not the
    WGAN: ``Trainer.sampler()`` is the run's (its EMA when ``train.ema_decay`` is on).
    """

    #: The ``keras.Model`` that maps noise to samples.
    generator: Any
    #: The noise's shape, batch left out.
    latent_shape: tuple[int, ...]


@dataclasses.dataclass(frozen=True)
class RunView:
    """What a logger may know of the run it observes (not the trainer)."""

    #: The run dir, or None for a run kept in memory.
    run_dir: Path | None
    #: Whether this process writes (the chief); a logger writes only there.
    chief: bool
    #: The run's settings, as ``run.json`` records them.
    settings: dict


@dataclasses.dataclass(frozen=True)
class FitView(RunView):
    """What a :class:`Callback` may know of the run it observes: the models, the sampler, the data
    and the spec, the run dir and whether this process is the chief (not the trainer)."""

    #: The critic that trains (as the constraint wrapped it).
    critic: Any = None
    #: The trained generator.
    generator: Any = None
    #: Its average (``train.ema_decay``), or None.
    generator_ema: Any = None
    #: ``{decay: model}`` of every EMA kept (``train.ema_decays``; the first is ``generator_ema``).
    generator_emas: dict = dataclasses.field(default_factory=dict)
    #: The sampler that samples and evaluates by default (the EMA when it is on).
    sampler: Sampler | None = None
    #: The data factory ``(global_batch_size, seed) -> tf.data.Dataset``.
    data: Callable | None = None
    #: The shape of one example.
    data_shape: tuple[int, ...] = ()
    #: The run's seed (``step_config.seed``).
    seed: int = 0
    #: The :class:`lipgan.run.spec.RunSpec` the trainer was built from (not imported here: the
    #: spec's record reaches back to this module).
    spec: Any = None


class Callback:
    """Subclass and override the hooks you need (each does nothing by default).

    :meth:`lipgan.Trainer.fit` gives each callback a :class:`FitView` of the run it fits
    (:meth:`set_view`, as Keras' ``set_model``) before :meth:`on_train_begin`: ``self.view``
    holds its models, its sampler and data, its run dir and whether this process is the chief.
    """

    view: FitView | None = None

    def set_view(self, view: FitView) -> None:
        """Called by :meth:`lipgan.Trainer.fit` with the view of the run being fit.

        Args:
            view: the :class:`FitView`; kept as ``self.view``.
        """
        self.view = view

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
