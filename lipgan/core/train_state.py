"""What :meth:`lipgan.Trainer.fit` returns, in a module of its own.

Callbacks receive it (:meth:`lipgan.Callback.on_train_end`) and the training loop makes it: kept
apart from both so that callbacks -> loop -> progress -> callbacks is no import circle.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import keras


@dataclasses.dataclass
class TrainState:
    """What :meth:`Trainer.fit` returns: the trained models, where training stopped, and the record.

    Attributes:
        critic: the trained critic (as the constraint wrapped it).
        generator: the trained generator.
        step: the iteration training stopped at, counted from the start of training.
        metrics: the last iteration's ``critic_loss``, ``wasserstein``, ``penalty`` and
            ``generator_loss``.
        history: every row logged by this call, as in ``metrics.jsonl``.
        run_dir: the run directory, or None when :meth:`Trainer.fit` was given none.
    """

    critic: keras.Model
    generator: keras.Model
    step: int
    metrics: (
        dict  # the last iteration's metrics (critic_loss, wasserstein, penalty, generator_loss)
    )
    history: list[dict]  # every logged row of this call, as in metrics.jsonl
    run_dir: Path | None
