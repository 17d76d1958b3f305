"""What the benchmark times, built on the engine's own code (:class:`lipgan.core.engine.WGAN`), so
the figures are what ``lipgan run`` users get; each is a :class:`lipgan.bench.timing.Case`:

* ``penalty``: ``constraint.penalty`` and its gradient w.r.t. the critic (fake = reversed real batch,
  so no generator cost), inside ``strategy.run``;
* ``critic_step``: :meth:`WGAN.critic_update` (generator forward, critic loss, penalty, optimizer
  update, ``after_update``);
* ``iteration``: :meth:`WGAN.iterate` (``n_critic`` critic updates + one generator update per iteration,
  ``steps_per_execution`` iterations per compiled call; a Python loop in eager mode).

Next to them, on the same critic, batch and optimizer, the keras-io WGAN-GP recipe trained with
``fit`` (:mod:`lipgan.bench.keras_io_baseline`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from lipgan.bench.sweep import JIT_SETTING, KERAS_IO, MODELS, ModelSpec, _instantiate, split_mode
from lipgan.core.constraint import Constraint


def _optimizer():
    import keras

    return keras.optimizers.Adam(1e-4, beta_1=0.5, beta_2=0.9)


def _model_fns(spec: ModelSpec):
    from lipgan import models

    return getattr(models, spec.critic), getattr(models, spec.generator)


def _synthetic_batch(shape, batch: int):
    import tensorflow as tf

    return tf.random.stateless_uniform([batch, *shape], seed=[0, 1], minval=-1.0, maxval=1.0)


def _build_wgan(strategy, spec, constraint, batch, n_critic, mode):
    import keras

    from lipgan.core.engine import WGAN
    from lipgan.core.step_config import StepConfig

    critic, generator = _model_fns(spec)
    keras.utils.set_random_seed(0)
    return WGAN(
        strategy,
        critic=critic,
        generator=generator,
        critic_optimizer=_optimizer,
        generator_optimizer=_optimizer,
        constraint=constraint,
        data_shape=spec.data_shape,
        config=StepConfig(
            batch,
            n_critic,
            seed=0,
            jit_compile=JIT_SETTING[split_mode(mode)[0]],
            mixed_precision=split_mode(mode)[1],
        ),
    )


def _replica_fns(wgan):
    """Per-replica functions of one real batch for the penalty and critic-step measurements."""
    import tensorflow as tf

    from lipgan.core.engine import zeros_for_none

    def penalty(real):
        ctx = wgan.context(wgan.iteration.read_value(), 0)
        variables = wgan.critic.trainable_variables
        with tf.GradientTape() as tape:
            per_example = wgan.constraint.penalty(wgan.critic, real, tf.reverse(real, [0]), ctx)
            value = wgan.average(tf.cast(per_example, tf.float32))
        grads = zeros_for_none(tape.gradient(value, variables), variables)
        return value + tf.add_n([tf.reduce_sum(g) for g in grads])  # consumes every gradient

    def critic_step(real):
        metrics, _ = wgan.critic_update(real, wgan.context(wgan.iteration.read_value(), 0))
        return metrics["critic_loss"]

    return {"penalty": penalty, "critic_step": critic_step}


def resolved_mode(mode: str, use_xla: bool) -> str:
    """The mode a run actually used: ``auto`` becomes ``xla`` or ``function`` (bf16 suffix kept)."""
    base, precision = split_mode(mode)
    if base == "auto":
        base = "xla" if use_xla else "function"
    return base + ("+bf16" if precision else "")


def _host_call(wgan, replica_fn, iterator, mode) -> Callable:
    """One step on the strategy, compiled as the engine would (``wgan.use_xla``); advances the
    step counter."""
    import tensorflow as tf

    if wgan.use_xla:
        replica_fn = tf.function(replica_fn, jit_compile=True)

    def call(iterator):
        out = wgan.strategy.run(replica_fn, args=(next(iterator),))
        wgan.iteration.assign_add(1)
        return wgan.strategy.reduce(tf.distribute.ReduceOp.SUM, out, axis=None)

    compiled = call if split_mode(mode)[0] == "eager" else tf.function(call)
    return lambda: compiled(iterator)


def _iteration_call(wgan, iterator, mode, steps_per_execution) -> tuple[Callable, int]:
    """The engine's host loop; eager mode runs the same replica iteration from Python."""
    if split_mode(mode)[0] != "eager":
        return (
            lambda: wgan.iterate(iterator, steps_per_execution)["critic_loss"]
        ), steps_per_execution

    def call():
        reals = tuple(next(iterator) for _ in range(wgan.config.n_critic))
        metrics, _ = wgan.strategy.run(
            wgan.replica_iteration, args=(reals, wgan.iteration.read_value())
        )
        wgan.iteration.assign_add(1)
        return metrics["critic_loss"]

    return call, 1


def _flops(wgan, fn_name, replica_fns, real):
    """Graph FLOPs of one per-replica call (default strategy only: tracing outside strategy.run)."""
    from lipgan.bench.flops import graph_flops

    if fn_name == "iteration":
        reals = tuple(real for _ in range(wgan.config.n_critic))
        return graph_flops(lambda r: wgan.replica_iteration(r, wgan.iteration.read_value()), reals)
    return graph_flops(replica_fns[fn_name], real)


def _sync(out):
    import tensorflow as tf

    return tf.nest.map_structure(lambda t: t.numpy(), out)


def _lipgan_cases(cfg, strategy, model_name, batch, mode, constraint_spec, registry):
    """(record fields, Case, flops thunk) for each measurement of one constraint."""
    import tensorflow as tf

    from lipgan.bench.timing import Case

    spec = MODELS[model_name]
    constraint = _instantiate(registry, "constraint", constraint_spec)
    wgan = _build_wgan(strategy, spec, constraint, batch, cfg.n_critic, mode)
    real = _synthetic_batch(spec.data_shape, batch)
    iterator = wgan.distribute(tf.data.Dataset.from_tensors(real).repeat())
    replica_fns = _replica_fns(wgan)
    has_penalty = type(constraint).penalty is not Constraint.penalty
    out = []
    for what in cfg.measurements:
        if what == "penalty" and not has_penalty:
            continue
        if what == "iteration":
            call, iterations = _iteration_call(wgan, iterator, mode, cfg.steps_per_execution)
        else:
            call, iterations = _host_call(wgan, replica_fns[what], iterator, mode), 1
        # A lazy penalty (every k steps) is only fairly timed over whole periods of k steps.
        period = -(-getattr(constraint, "every", 1) // iterations)
        case = Case(call, sync=_sync, min_calls=period)
        meta = dict(
            constraint=constraint_spec,
            measurement=what,
            iterations=iterations,
            replicas=wgan.num_replicas,
            lazy=getattr(constraint, "every", 1) > 1,
            kernels=[tuple(v.shape) for v in wgan.critic.trainable_variables if len(v.shape) >= 2],
            resolved_mode=resolved_mode(mode, wgan.use_xla),
        )
        flops = None
        if cfg.count_flops and wgan.num_replicas == 1:
            flops = functools.partial(_flops, wgan, what, replica_fns, real)
        out.append((meta, case, flops))
    return out


def _keras_io_case(cfg, model_name, batch, mode):
    """The keras-io recipe's ``fit`` on the same critic, batch and optimizer, timed per batch."""
    import time

    import keras
    import tensorflow as tf

    from lipgan.bench import keras_io_baseline
    from lipgan.bench.timing import Case

    spec = MODELS[model_name]
    critic_fn, generator_fn = _model_fns(spec)
    keras.utils.set_random_seed(0)
    model = keras_io_baseline.build(
        critic_fn(spec.data_shape),
        generator_fn(spec.data_shape),
        n_critic=cfg.n_critic,
        gp_weight=spec.gp_weight,
        make_optimizer=_optimizer,
        mode=mode,
    )
    data = tf.data.Dataset.from_tensors(_synthetic_batch(spec.data_shape, batch)).repeat()
    stamps = []

    class Clock(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            stamps.append(time.perf_counter())

    def one_batch():
        model.fit(data, steps_per_epoch=1, epochs=1, verbose=0)

    def rep(calls):
        # One fit of calls+1 batches, timed from the end of its first batch to the end of its last:
        # steady-state fit batches, without fit's per-call set-up.
        stamps.clear()
        model.fit(data, steps_per_epoch=calls + 1, epochs=1, verbose=0, callbacks=[Clock()])
        return (stamps[-1] - stamps[0]) / calls

    # Keras resolves its own jit_compile='auto' (off on machines without an accelerator).
    resolved = "eager" if mode == "eager" else ("xla" if model.jit_compile else "function")
    meta = dict(
        constraint=KERAS_IO,
        measurement="iteration",
        iterations=1,
        replicas=1,
        lazy=False,
        resolved_mode=resolved,
    )
    return meta, Case(one_batch, rep=rep), None
