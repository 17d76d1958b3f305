"""The conformance checks that run in the calling process: gin, the penalty's shape, dtype, finite
values and gradient, ``after_update`` as a projection, and the penalty compiled (``tf.function``,
XLA). Each raises ``AssertionError`` saying which part of the contract is broken; the package
docstring (:mod:`lipgan.testing`) says why each matters.
"""

from __future__ import annotations

import inspect

import numpy as np

from lipgan.testing.fixtures import _batch, _built_critic, _context, small_critic


def check_gin_configurable(cls, kwargs=None) -> None:
    """``cls`` registers as a constraint and every keyword in ``kwargs`` is bindable in gin.

    Clears gin's global config before and after (as ``lipgan run`` does before parsing).
    """
    from lipgan.core.constraint import Constraint
    from lipgan.core.errors import PluginError
    from lipgan.core.registry import Registry

    kwargs = dict(kwargs or {})
    assert isinstance(cls, type) and issubclass(cls, Constraint), (
        f"{cls!r} is not a lipgan.Constraint"
    )
    registry = Registry()
    try:
        registry.add("constraint", cls, plugin="conformance", source="lipgan.testing")
    except PluginError as exc:
        raise AssertionError(str(exc)) from None
    no_init = cls.__init__ is object.__init__  # takes no parameters at all
    params = {} if no_init else dict(list(inspect.signature(cls.__init__).parameters.items())[1:])
    for p in params.values():
        assert p.kind not in (p.POSITIONAL_ONLY, p.VAR_POSITIONAL), (
            f"{cls.__name__}.__init__ parameter {p.name!r} is positional-only; gin binds keywords"
        )
    unknown = set(kwargs) - set(params)
    assert not unknown or any(p.kind == p.VAR_KEYWORD for p in params.values()), (
        f"constraint_kwargs {sorted(unknown)} are not parameters of {cls.__name__}.__init__"
    )
    from lipgan.config import gin_binding as config

    config.register_configurables(registry)
    configured = config.configured(cls, kwargs)
    assert type(configured) is cls, f"gin built {type(configured)!r}, expected {cls!r}"
    direct = cls(**kwargs)
    assert repr(configured) == repr(direct), (
        f"gin bindings did not reach the instance: {configured!r} != {direct!r}"
    )


def _contract_penalty(constraint, penalty, real):
    """The engine's check of a penalty (:func:`lipgan.core.step_guard.checked_penalty`) as an
    assertion."""
    from lipgan.core.errors import PluginError
    from lipgan.core.step_guard import checked_penalty

    try:
        return checked_penalty(constraint, penalty, real)
    except PluginError as exc:
        raise AssertionError(str(exc)) from None


def check_penalty(constraint, data_shape=(2,), critic_factory=small_critic) -> None:
    """``penalty`` returns ``None`` or a finite floating ``[b]`` tensor with finite weight gradients."""
    import tensorflow as tf

    critic = _built_critic(constraint, data_shape, critic_factory)
    real, fake = _batch(data_shape, seed=0)
    with tf.GradientTape() as tape:
        penalty = constraint.penalty(critic, real, fake, _context())
        if penalty is None:
            return
        total = tf.reduce_sum(_contract_penalty(constraint, penalty, real))
    values = penalty.numpy()
    assert np.all(np.isfinite(values)), f"penalty has non-finite values: {values}"
    grads = tape.gradient(total, critic.trainable_variables)
    for var, grad in zip(critic.trainable_variables, grads):
        if grad is not None:
            assert np.all(np.isfinite(tf.convert_to_tensor(grad).numpy())), (
                f"non-finite penalty gradient for {var.path}"
            )
    assert_penalty_has_gradient(constraint, critic, real, fake, compiled=False)


def _penalty_gradients(constraint, critic, real, fake, compiled: bool):
    import tensorflow as tf

    def gradients(real, fake):
        with tf.GradientTape() as tape:
            penalty = constraint.penalty(critic, real, fake, _context())
            total = tf.reduce_sum(tf.cast(penalty, tf.float32))
        grads = tape.gradient(total, critic.trainable_variables)
        return [tf.zeros([0]) if g is None else tf.convert_to_tensor(g) for g in grads]

    fn = tf.function(gradients) if compiled else gradients
    return [np.asarray(g) for g in fn(real, fake)]


def assert_penalty_has_gradient(constraint, critic, real, fake, compiled: bool) -> None:
    """The penalty moves the critic: some gradient with respect to its weights is non-zero.

    A penalty computed through a non-differentiable op (``tf.round``, a cast to an integer,
    ``tf.stop_gradient``) returns values but trains nothing, in silence. A penalty
    may legitimately be flat on a critic it does not bind (a one-sided penalty under its
    threshold), so the weights are scaled up (a steeper critic) before failing.
    """
    if constraint.penalty(critic, real, fake, _context()) is None:
        return
    saved = [v.numpy() for v in critic.trainable_variables]
    try:
        for scale in (1.0, 3.0, 10.0):
            for v, value in zip(critic.trainable_variables, saved):
                v.assign(value * scale)
            grads = _penalty_gradients(constraint, critic, real, fake, compiled)
            if any(g.size and np.any(g != 0) for g in grads):
                return
    finally:
        for v, value in zip(critic.trainable_variables, saved):
            v.assign(value)
    mode = "under tf.function" if compiled else "eagerly"
    raise AssertionError(
        f"{type(constraint).__name__}.penalty() has no gradient with respect to the critic's "
        f"weights ({mode}: every gradient is None or zero, even with the weights scaled up 10x); "
        "it returns values but constrains nothing: compute it with differentiable ops (no "
        "tf.round, integer casts or tf.stop_gradient on the path from the critic)"
    )


def check_after_update_idempotent(constraint, data_shape=(2,), critic_factory=small_critic) -> None:
    """``after_update`` applied twice leaves the same weights as applied once (it is a projection)."""
    import tensorflow as tf

    critic = _built_critic(constraint, data_shape, critic_factory)
    # Scale weights up so that a projection (clipping, normalizing) has something to do.
    for v in critic.trainable_variables:
        v.assign(v * 3.0 + 0.1)
    constraint.after_update(critic)
    once = [tf.identity(v).numpy() for v in critic.trainable_variables]
    constraint.after_update(critic)
    for v, before in zip(critic.trainable_variables, once):
        np.testing.assert_allclose(
            v.numpy(),
            before,
            rtol=1e-6,
            atol=1e-7,
            err_msg=f"after_update is not idempotent on {v.path}",
        )


def check_compiled(constraint, data_shape=(2,), critic_factory=small_critic, xla=True) -> None:
    """The penalty under ``tf.function`` (and XLA unless ``xla=False``) equals the eager one."""
    import tensorflow as tf

    critic = _built_critic(constraint, data_shape, critic_factory)
    real, fake = _batch(data_shape, seed=0)

    def fn(real, fake):
        # The engine's own trace-time check: a shape that is only wrong when traced fails here.
        return _contract_penalty(
            constraint, constraint.penalty(critic, real, fake, _context()), real
        )

    eager = fn(real, fake).numpy()
    modes = {"tf.function": tf.function(fn)}
    if xla:
        modes["XLA (jit_compile=True)"] = tf.function(fn, jit_compile=True)
    for mode, compiled in modes.items():
        try:
            got = compiled(real, fake).numpy()
        except Exception as exc:  # noqa: BLE001 - report which mode broke
            raise AssertionError(
                f"penalty fails under {mode}: {type(exc).__name__}: {exc}"
            ) from exc
        np.testing.assert_allclose(
            got, eager, rtol=1e-4, atol=1e-5, err_msg=f"penalty differs under {mode}"
        )
    assert_penalty_has_gradient(constraint, critic, real, fake, compiled=True)
    compiled_update = tf.function(lambda: constraint.after_update(critic) or tf.constant(0))
    try:
        compiled_update()
    except Exception as exc:  # noqa: BLE001
        raise AssertionError(f"after_update fails under tf.function: {exc}") from exc
