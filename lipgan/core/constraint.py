"""The Constraint base class and the StepContext handed to it.

A constraint is how a WGAN keeps its critic (approximately) 1-Lipschitz. It has three places to act,
each with a no-op default so that a plugin overrides only what it needs:

* :meth:`Constraint.wrap_critic` at build time (spectral norm rewrites the layers),
* :meth:`Constraint.penalty` inside the critic loss (gradient penalty and friends),
* :meth:`Constraint.after_update` after each critic optimizer update (weight clipping).

The engine owns batching and replication. ``penalty`` returns one value per example of this replica's
slice of the batch and the engine averages over the *global* batch, so a constraint never divides by a
batch size and never needs to know how many replicas exist. Randomness comes from :class:`StepContext`,
which makes a draw independent of the replica count.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import tensorflow as tf

from lipgan.core import rng
from lipgan.core.named import Named


class StepContext:
    """Replica-invariant facts and randomness for one sub-step (one critic or generator update).

    ``uniform``/``normal`` draw a tensor for the *global* batch from a counter-based RNG
    (:mod:`lipgan.core.rng`: identical eagerly, in ``tf.function`` and under XLA/TPU) keyed by
    ``(seed, step, phase, call index)`` and return this replica's rows, so the values a given example
    sees are the same on 1, 2 or 64 replicas. Replica ``r`` owns global rows ``[r*b, (r+1)*b)``, which is
    the layout ``tf.distribute`` gives a batched dataset.

    Counters: ``step`` is the generator iteration; ``phase`` is the sub-step inside it (``0 ..
    n_critic - 1`` for the critic updates, ``n_critic`` for the generator update); ``update`` is
    the number of critic updates that precede this sub-step, ``step * n_critic + phase``: in a
    critic phase it is the zero-based index of this critic update over the whole run, and in the
    generator phase it is ``(step + 1) * n_critic``. Schedules that act every k-th critic update
    (lazy regularization) key on ``update``, not on ``step``: keyed on ``step``, all ``n_critic``
    updates of one iteration would be active and the next ``(k - 1) * n_critic`` would not.
    ``n_critic`` defaults to 1, so a context built without it has ``update == step + phase``.

    The engine builds one per sub-step; plugins receive it and build one only in tests (as
    :mod:`lipgan.testing` does).

    Args:
        seed: the run's seed (``train.seed``); part of every draw's key.
        step: the generator iteration, an int or an int tensor inside the compiled step.
        phase: the sub-step within the iteration, ``0 .. n_critic``.
        global_batch_size: examples in one step over all replicas.
        num_replicas: replicas in sync; must divide ``global_batch_size``.
        replica_id: this replica's index (int or tensor), which selects its rows of each draw.
        n_critic: critic updates per generator update.

    Raises:
        ValueError: ``phase`` outside ``0 .. n_critic``, or a batch the replicas cannot share.
    """

    def __init__(
        self,
        *,
        seed: int,
        step: tf.Tensor | int,
        phase: int,
        global_batch_size: int,
        num_replicas: int,
        replica_id: tf.Tensor | int = 0,
        n_critic: int = 1,
    ):
        if n_critic < 1 or not 0 <= phase <= n_critic:
            raise ValueError(f"phase {phase} is outside 0..n_critic={n_critic}")
        if global_batch_size % num_replicas:
            raise ValueError(
                f"global batch {global_batch_size} is not divisible by {num_replicas} replicas"
            )
        self.seed = int(seed)
        self.step = step
        self.phase = int(phase)
        self.n_critic = int(n_critic)
        self.global_batch_size = int(global_batch_size)
        self.num_replicas = int(num_replicas)
        self.replica_id = replica_id
        self.per_replica_batch_size = self.global_batch_size // self.num_replicas
        self._calls = 0

    @property
    def update(self) -> tf.Tensor | int:
        """Critic updates before this sub-step: ``step * n_critic + phase`` (see the class doc)."""
        if isinstance(self.step, int):
            return self.step * self.n_critic + self.phase
        step = tf.cast(self.step, tf.int64)
        return step * self.n_critic + self.phase

    def _next_key(self) -> tf.Tensor:
        # Each call during tracing gets its own index; tracing order is deterministic, so the same
        # program draws the same numbers on every replica count.
        key = rng.root_key(self.seed)
        for data in (self.step, self.phase, self._calls):
            key = rng.fold_in(key, data)
        self._calls += 1
        return key

    def _draw(self, sampler, event_shape, dtype) -> tf.Tensor:
        """This replica's rows of one global ``[global_batch_size, *event_shape]`` draw of
        ``sampler`` (:func:`lipgan.core.rng.uniform` or ``normal``), with the next key."""
        global_draw = sampler(self._next_key(), [self.global_batch_size, *event_shape], dtype)
        b = self.per_replica_batch_size
        start = tf.cast(self.replica_id, tf.int32) * b
        return global_draw[start : start + b]

    def uniform(self, event_shape=(), dtype=tf.float32) -> tf.Tensor:
        """This replica's ``[b, *event_shape]`` slice of a global U[0, 1) draw.

        Args:
            event_shape: the shape of one example's draw (``()`` for one number per example).
            dtype: a floating dtype.

        Returns:
            A ``[per_replica_batch_size, *event_shape]`` tensor; each call draws new numbers.
        """
        return self._draw(rng.uniform, event_shape, dtype)

    def normal(self, event_shape=(), dtype=tf.float32) -> tf.Tensor:
        """This replica's ``[b, *event_shape]`` slice of a global N(0, 1) draw (arguments and
        result as :meth:`uniform`'s)."""
        return self._draw(rng.normal, event_shape, dtype)


class Constraint(Named):
    """Base class of every Lipschitz constraint plugin.

    Subclasses set ``name`` (snake_case, unique) and override any of the three hooks. Constructor
    keyword arguments become gin parameters: ``gradient_penalty.weight = 10.0``.

    A constraint that ``lipgan tune`` may search declares its ranges in ``search_space``
    (parameter -> range, :mod:`lipgan.core.search_space`), and gin bindings every searched config
    gets unchanged in ``search_fixed``; without a ``search_space`` the tuner leaves it out and says
    so.
    """

    #: Parameter -> range for ``lipgan tune`` (None: not tunable).
    #: See :mod:`lipgan.core.search_space`.
    search_space: ClassVar[Mapping | None] = None
    #: Gin bindings every searched config of this constraint gets unchanged.
    search_fixed: ClassVar[tuple[str, ...]] = ()

    def wrap_critic(self, critic: tf.keras.Model) -> tf.keras.Model:
        """Return the critic to train; called once at build time inside ``strategy.scope()``.

        Args:
            critic: the critic as the user or the config built it.

        Returns:
            The model the engine trains: ``critic`` itself (the default) or a rewritten copy.
        """
        return critic

    def penalty(
        self, critic, real: tf.Tensor, fake: tf.Tensor, ctx: StepContext
    ) -> tf.Tensor | None:
        """Per-example penalty ``[b]`` for this replica's examples, already weighted, or ``None``.

        Runs inside the engine's critic ``GradientTape``, so it may take gradients of the critic
        (nested tapes). Call the critic with ``training=False``: the engine's one ``training=True``
        call per step is what advances stateful layers such as spectral norm.

        Args:
            critic: the (wrapped) critic being trained.
            real: this replica's real examples, ``[b, ...]``.
            fake: this replica's generated examples, same shape.
            ctx: the sub-step's :class:`StepContext`; draw every random number from it.

        Returns:
            A floating ``[b]`` tensor, one already-weighted value per example and not averaged
            (the engine divides by the global batch size), or None for no penalty.
        """
        return None

    def after_update(self, critic) -> None:
        """Called in replica context after every critic optimizer update (e.g. to clip weights).

        Must be idempotent (a projection, not an update rule) and compute the same value on every
        replica, so that mirrored weights stay equal.

        Args:
            critic: the (wrapped) critic, whose variables it may assign.
        """
        return None

    def lipschitz_bound(self, critic) -> float | None:
        """A certified upper bound on the Lipschitz constant of ``critic`` (the wrapped one), or None.

        Optional (an extension of the contract): constraints that build the critic 1-Lipschitz by
        construction (``bjorck``, ``aol``) compute it from the effective weights; the default, None,
        means "this constraint certifies nothing" and the audit falls back on a general bound.
        Called eagerly, outside any ``tf.function``.

        Args:
            critic: the wrapped critic, as :meth:`wrap_critic` returned it.

        Returns:
            The bound as a float, or None when this constraint certifies nothing.
        """
        return None
