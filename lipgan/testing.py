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
  time by the engine's own check (:func:`lipgan.engine.checked_penalty`), so the kit fails with the
  message a run would stop with;
* replica invariance: penalty values and the all-reduced critic gradients
  (:meth:`lipgan.engine.WGAN.critic_gradients`) agree on 1 and 2 mirrored logical CPUs. TensorFlow
  fixes its devices at start-up, so each replica count runs in a fresh subprocess
  (``python -m lipgan.testing``) that imports the class by module and name: it must be defined at
  module level of an importable module (the caller's ``sys.path`` is passed on);
* ``after_update``: applying it twice gives the same weights as applying it once, and on 2
  replicas every replica ends with the same weights (the replica check);
* compiled: the penalty under ``tf.function`` and under XLA (``jit_compile=True``) equals eager;
* gradient: a penalty has a non-zero gradient with respect to the critic's weights on a random
  critic, eagerly and under ``tf.function`` (one through ``tf.round`` would train nothing).

Why these: the engine averages penalties over the *global* batch, differentiates through them, runs
them compiled and on any replica count; a plugin that breaks any of these trains wrongly in silence.
"""

from __future__ import annotations

import importlib
import inspect
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np

#: Replica counts compared by the invariance check.
REPLICA_COUNTS = (1, 2)
BATCH = 8
PROBE_TIMEOUT_S = 300


def small_critic(data_shape) -> keras.Model:  # noqa: F821 - keras imported lazily
    """A small ReLU critic for any input shape (flatten, 2 hidden layers of 16, 1 output)."""
    import keras

    return keras.Sequential(
        [
            keras.Input(shape=tuple(data_shape)),
            keras.layers.Flatten(),
            keras.layers.Dense(16, activation="relu"),
            keras.layers.Dense(16, activation="relu"),
            keras.layers.Dense(1, dtype="float32"),
        ],
        name="critic",
    )


def small_generator(data_shape, latent_dim: int = 2) -> keras.Model:  # noqa: F821
    """A one-hidden-layer generator producing examples of ``data_shape``."""
    import keras

    return keras.Sequential(
        [
            keras.Input(shape=(latent_dim,)),
            keras.layers.Dense(16, activation="relu"),
            keras.layers.Dense(math.prod(data_shape)),
            keras.layers.Reshape(tuple(data_shape)),
        ],
        name="generator",
    )


def _batch(data_shape, seed: int, batch: int = BATCH):
    import tensorflow as tf

    real = tf.random.stateless_normal([batch, *data_shape], seed=[seed, 1])
    fake = tf.random.stateless_normal([batch, *data_shape], seed=[seed, 2]) * 2.0 + 0.5
    return real, fake


def _context(batch: int = BATCH, step: int = 0):
    from lipgan.constraint import StepContext

    return StepContext(seed=0, step=step, phase=0, global_batch_size=batch, num_replicas=1)


def _built_critic(constraint, data_shape, critic_factory=small_critic):
    import keras

    keras.utils.set_random_seed(0)
    return constraint.wrap_critic(critic_factory(tuple(data_shape)))


# -- the individual checks --------------------------------------------------------------------
def check_gin_configurable(cls, kwargs=None) -> None:
    """``cls`` registers as a constraint and every keyword in ``kwargs`` is bindable in gin.

    Clears gin's global config before and after (as ``lipgan run`` does before parsing).
    """
    from lipgan.constraint import Constraint
    from lipgan.errors import PluginError
    from lipgan.registry import Registry

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
    from lipgan import config

    config.register_configurables(registry)
    configured = config.configured(cls, kwargs)
    assert type(configured) is cls, f"gin built {type(configured)!r}, expected {cls!r}"
    direct = cls(**kwargs)
    assert repr(configured) == repr(direct), (
        f"gin bindings did not reach the instance: {configured!r} != {direct!r}"
    )


def penalty_values(constraint, data_shape=(2,), critic_factory=small_critic, seed=0):
    """(penalty or None, critic, real, fake) for one eager call on a fresh small critic."""
    critic = _built_critic(constraint, data_shape, critic_factory)
    real, fake = _batch(data_shape, seed)
    return constraint.penalty(critic, real, fake, _context()), critic, real, fake


def _contract_penalty(constraint, penalty, real):
    """The engine's check of a penalty (:func:`lipgan.engine.checked_penalty`) as an assertion."""
    from lipgan.engine import checked_penalty
    from lipgan.errors import PluginError

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
    ``tf.stop_gradient``) returns values but trains nothing, in silence (issue 27). A penalty
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


# -- replica invariance (subprocess per replica count) ----------------------------------------
def _qualified(cls) -> str:
    if "<locals>" in cls.__qualname__:
        raise AssertionError(
            f"{cls.__qualname__} is defined inside a function; the replica-invariance check "
            "imports it in a subprocess, so define it at module level"
        )
    return f"{cls.__module__}:{cls.__qualname__}"


def _import_qualified(path: str):
    module, _, qualname = path.partition(":")
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def replica_probes(specs, counts=REPLICA_COUNTS, data_shape=(2,), critic_factory=small_critic):
    """Run :func:`_probe` for each ``(cls, kwargs)`` in fresh processes, one per replica count.

    The processes run concurrently. Returns ``{count: [result per spec]}`` with each result
    ``{"penalty": [...] or None, "loss": float, "grads": [[...], ...]}``.
    """
    request = {
        "specs": [[_qualified(cls), dict(kwargs or {})] for cls, kwargs in specs],
        "data_shape": list(data_shape),
        "critic": _qualified(critic_factory),
    }
    env = dict(os.environ)
    # The caller's import path, made absolute; the child runs in a neutral folder because
    # ``python -m`` puts its working directory first on sys.path, where a folder such as a
    # repository's ``gin/`` would shadow an installed package.
    env["PYTHONPATH"] = os.pathsep.join(os.path.abspath(p or ".") for p in sys.path)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    procs = {
        n: subprocess.Popen(
            [sys.executable, "-m", "lipgan.testing", json.dumps({**request, "replicas": n})],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=tempfile.gettempdir(),
        )
        for n in counts
    }
    results = {}
    for n, proc in procs.items():
        try:
            out, err = proc.communicate(timeout=PROBE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        lines = [ln for ln in out.splitlines() if ln.startswith("{")]
        if proc.returncode or not lines:
            raise AssertionError(
                f"replica probe with {n} logical CPUs failed (exit {proc.returncode}):\n{err[-3000:]}"
            )
        results[n] = json.loads(lines[-1])["results"]
    return results


def check_replica_invariance_many(specs, data_shape=(2,), critic_factory=small_critic) -> None:
    """Penalties and critic gradients agree on 1 and 2 replicas, for several constraints at once.

    Batching the constraints into one subprocess per replica count keeps the check to two
    TensorFlow start-ups however many constraints are checked.
    """
    specs = list(specs)
    probes = replica_probes(specs, REPLICA_COUNTS, data_shape, critic_factory)
    runs = [probes[n] for n in REPLICA_COUNTS]
    for (cls, _), *results in zip(specs, *runs):
        for n, other in zip(REPLICA_COUNTS[1:], results[1:]):
            assert_same_probe(results[0], other, f"{cls.__name__} on 1 vs {n} replicas")


def assert_same_probe(base: dict, other: dict, where: str) -> None:
    """Two :func:`replica_probes` results agree (float32 tolerance), and neither run's replicas
    hold different weights after ``after_update``."""
    for probe in (base, other):
        assert not probe.get("replica_drift"), (
            f"{where}: after_update leaves the replicas with different weights ({probe['drift_at']} "
            f"differs by {probe['replica_drift']:.3g} between replicas); it must compute the same "
            "value on every replica (no replica id, no unsynchronized randomness)"
        )
    if base["penalty"] is None or other["penalty"] is None:
        assert base["penalty"] is other["penalty"] is None, f"{where}: penalty None on one only"
    else:
        np.testing.assert_allclose(
            other["penalty"],
            base["penalty"],
            rtol=1e-4,
            atol=1e-5,
            err_msg=f"{where}: per-example penalties differ",
        )
    np.testing.assert_allclose(
        other["loss"], base["loss"], rtol=1e-4, atol=1e-5, err_msg=f"{where}: loss differs"
    )
    for i, (g1, g2) in enumerate(zip(base["grads"], other["grads"])):
        np.testing.assert_allclose(
            g2, g1, rtol=1e-4, atol=1e-5, err_msg=f"{where}: critic gradient {i} differs"
        )


def check_replica_invariance(
    cls, kwargs=None, data_shape=(2,), critic_factory=small_critic
) -> None:
    """Penalty values and all-reduced critic gradients agree on 1 and 2 mirrored logical CPUs."""
    check_replica_invariance_many([(cls, kwargs)], data_shape, critic_factory)


def _probe(request: dict) -> list[dict]:
    """Subprocess side: split the CPU, then compute penalties and critic gradients per spec."""
    from lipgan.strategy import split_host_cpu

    devices = split_host_cpu(request["replicas"])  # first TF work in this process
    import keras
    import tensorflow as tf

    from lipgan.engine import WGAN, StepConfig

    strategy = tf.distribute.MirroredStrategy(devices=devices)
    data_shape = tuple(request["data_shape"])
    critic_factory = _import_qualified(request["critic"])
    real, fake = _batch(data_shape, seed=0)
    # Penalties run in eager strategy.run: several times cheaper than tracing here, and
    # tf.function/XLA are checked by check_compiled. Replica r gets global rows [r*b, (r+1)*b).
    b = BATCH // request["replicas"]
    pairs = strategy.experimental_distribute_values_from_function(
        lambda c: tuple(
            t[c.replica_id_in_sync_group * b : (c.replica_id_in_sync_group + 1) * b]
            for t in (real, fake)
        )
    )
    results = []
    for path, kwargs in request["specs"]:
        constraint = _import_qualified(path)(**kwargs)
        keras.utils.set_random_seed(0)
        wgan = WGAN(
            strategy,
            critic=critic_factory,
            generator=small_generator,
            critic_optimizer=lambda: keras.optimizers.SGD(0.01),
            generator_optimizer=lambda: keras.optimizers.SGD(0.01),
            constraint=constraint,
            data_shape=data_shape,
            config=StepConfig(global_batch_size=BATCH, n_critic=1, seed=0),
        )

        def penalty_fn(pair, wgan=wgan, constraint=constraint):
            out = constraint.penalty(wgan.critic, pair[0], pair[1], wgan.context(0, 0))
            return tf.zeros([0]) if out is None else tf.cast(out, tf.float32)

        local = strategy.experimental_local_results(strategy.run(penalty_fn, args=(pairs,)))
        values = np.concatenate([t.numpy() for t in local]).tolist()
        grads, loss = wgan.critic_gradients(real)
        # after_update in replica context, on weights it has something to do to (as the
        # idempotency check scales them): every replica must end with the same weights.
        for v in wgan.critic.trainable_variables:
            v.assign(v * 3.0 + 0.1)
        strategy.run(tf.function(lambda wgan=wgan: wgan.constraint.after_update(wgan.critic)))
        drift, where = wgan.replica_drift()
        results.append(
            {
                "penalty": values if len(values) else None,
                "loss": float(loss),
                "grads": [np.asarray(g).ravel().tolist() for g in grads],
                "replica_drift": drift,
                "drift_at": where,
            }
        )
    return results


# -- pytest mix-in and all-in-one ---------------------------------------------------------------
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


if __name__ == "__main__":
    print(json.dumps({"results": _probe(json.loads(sys.argv[1]))}))
