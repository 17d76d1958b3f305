"""The input state the training loop reads and moves: the data's stream and where it stands.

The stream of global batches is a deterministic function of the data factory, the global batch
size and the seed. The loop needs only that, the distributed iterator training reads, and the
iteration that iterator's next batches are for; it is given this object rather than the trainer,
so what the loop may touch is written down here. The trainer keeps the object across
:meth:`lipgan.Trainer.fit` calls, so a second call continues the data where the first stopped.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class TrainingInput:
    """The data training reads.

    Attributes:
        factory: ``(global_batch_size, seed) -> tf.data.Dataset`` of global batches.
        global_batch_size: the batch of one critic update, over all replicas.
        seed: the stream's seed (``StepConfig.seed``).
        batches: the stream training reads (made once, so its iterator can continue).
        iterator: the distributed iterator over ``batches`` (None until training first reads).
        step: the iteration the iterator's next batches are for (None: unknown, e.g. while a
            compiled call that reads them runs).
    """

    def __init__(self, factory: Callable, global_batch_size: int, seed: int):
        self.factory = factory
        self.global_batch_size = global_batch_size
        self.seed = seed
        self.batches = factory(global_batch_size, seed)
        self.iterator: Any = None
        self.step: int | None = 0

    def fresh(self, seed_offset: int = 0):
        """A new pipeline of the same stream (or, with ``seed_offset``, another seed's): never a
        second iterator over :attr:`batches`, which with ``reshuffle_each_iteration`` would
        shuffle differently."""
        return self.factory(self.global_batch_size, self.seed + seed_offset)

    def at(self, iterator, step: int | None) -> None:
        """Record that ``iterator`` (now the one training reads) is positioned for ``step``."""
        self.iterator, self.step = iterator, step

    @property
    def dataset_name(self) -> str | None:
        """The TFDS or lipgan name of the data (None for Python data)."""
        return getattr(self.factory, "dataset_name", None)
