"""Conformance kit for constraint plugins: run it in your own tests to check the Constraint contract.

A plugin author writes, in their package's tests::

    from lipgan.testing import ConstraintConformance
    from my_package import MyPenalty

    class TestMyPenalty(ConstraintConformance):
        constraint_class = MyPenalty
        constraint_kwargs = {"weight": 2.0}   # optional; gin binds each of them

and pytest collects one test per check below. :func:`check_constraint` runs them all from a plain
function. Each check raises ``AssertionError`` saying which part of the contract is broken:

* gin: ``name`` is a snake_case identifier, the class registers like a plugin's would, and every
  constructor keyword can be bound in gin and reaches the instance;
* penalty: ``None`` or a finite floating ``[b]`` tensor for a ``[b, ...]`` batch, with finite
  gradients with respect to the critic's weights. Shape and dtype are checked eagerly and at trace
  time by the engine's own check (:func:`lipgan.core.step_guard.checked_penalty`), so the kit fails
  with the message a run would stop with;
* replica invariance: penalty values and the all-reduced critic gradients
  (:meth:`lipgan.core.engine.WGAN.critic_gradients`) agree on 1 and 2 mirrored logical CPUs.
  TensorFlow fixes its devices at start-up, so each replica count runs in a fresh subprocess
  (``python -m lipgan.testing``) that imports the class by module and name: it must be defined at
  module level of an importable module (the caller's ``sys.path`` is passed on);
* ``after_update``: applying it twice gives the same weights as applying it once, and on 2
  replicas every replica ends with the same weights (the replica check);
* compiled: the penalty under ``tf.function`` and under XLA (``jit_compile=True``) equals eager;
* gradient: a penalty has a non-zero gradient with respect to the critic's weights on a random
  critic, eagerly and under ``tf.function`` (one through ``tf.round`` would train nothing).

Why these: the engine averages penalties over the *global* batch, differentiates through them, runs
them compiled and on any replica count; a plugin that breaks any of these trains wrongly in silence.

Where: the checks that run in this process are :mod:`lipgan.testing.checks`, the replica check
:mod:`lipgan.testing.replicas`, the critic and data they share :mod:`lipgan.testing.fixtures`;
this package holds the all-in-one :func:`check_constraint` and the pytest mix-in, and every public
name of the kit is imported from here (``from lipgan.testing import ...``).
"""

from __future__ import annotations

import inspect

from lipgan.testing.checks import (
    assert_penalty_has_gradient,
    check_after_update_idempotent,
    check_compiled,
    check_gin_configurable,
    check_penalty,
)
from lipgan.testing.fixtures import BATCH, small_critic, small_generator
from lipgan.testing.replicas import (
    PROBE_TIMEOUT_S,
    REPLICA_COUNTS,
    assert_same_probe,
    check_replica_invariance,
    check_replica_invariance_many,
    replica_probes,
)

__all__ = [
    "BATCH",
    "PROBE_TIMEOUT_S",
    "REPLICA_COUNTS",
    "ConstraintConformance",
    "assert_penalty_has_gradient",
    "assert_same_probe",
    "check_after_update_idempotent",
    "check_compiled",
    "check_constraint",
    "check_gin_configurable",
    "check_penalty",
    "check_replica_invariance",
    "check_replica_invariance_many",
    "replica_probes",
    "small_critic",
    "small_generator",
]


def check_constraint(
    cls, kwargs=None, *, data_shape=(2,), critic_factory=small_critic, xla=True, replicas=True
) -> None:
    """Run every conformance check on ``cls`` (constructed with ``kwargs``)."""
    check_gin_configurable(cls, kwargs)
    check_penalty(cls(**(kwargs or {})), data_shape, critic_factory)
    check_after_update_idempotent(cls(**(kwargs or {})), data_shape, critic_factory)
    check_compiled(cls(**(kwargs or {})), data_shape, critic_factory, xla=xla)
    if replicas:
        check_replica_invariance(cls, kwargs, data_shape, critic_factory)


class ConstraintConformance:
    """Subclass in a ``Test*`` class with ``constraint_class`` set; pytest runs one test per check.

    Optional attributes: ``constraint_kwargs`` (dict), ``data_shape`` (default ``(2,)``),
    ``critic_factory`` (``data_shape -> keras.Model``, module level), ``xla`` (default True).
    """

    constraint_class: type | None = None
    constraint_kwargs: dict = {}
    data_shape: tuple = (2,)
    critic_factory = staticmethod(small_critic)
    xla: bool = True

    def _make(self):
        assert self.constraint_class is not None, "set constraint_class on the test class"
        return self.constraint_class(**self.constraint_kwargs)

    @property
    def _critic(self):
        # A plain function set as a class attribute would otherwise come back as a bound method.
        factory = inspect.getattr_static(type(self), "critic_factory")
        return factory.__func__ if isinstance(factory, staticmethod) else factory

    def test_gin_configurable(self):
        check_gin_configurable(self.constraint_class, self.constraint_kwargs)

    def test_penalty_shape_dtype_finite(self):
        check_penalty(self._make(), self.data_shape, self._critic)

    def test_after_update_idempotent(self):
        check_after_update_idempotent(self._make(), self.data_shape, self._critic)

    def test_tf_function_and_xla(self):
        check_compiled(self._make(), self.data_shape, self._critic, xla=self.xla)

    def test_replica_invariance(self):
        check_replica_invariance(
            self.constraint_class, self.constraint_kwargs, self.data_shape, self._critic
        )
