"""The one distributed WGAN step and the compiled host loop.

Every strategy runs the same code: ``strategy.run(replica_iteration)`` inside one ``tf.function`` that
loops ``steps_per_execution`` times with ``tf.range`` (so a TPU is not starved by Python). One
iteration is ``n_critic`` critic updates, each on a fresh real batch, then one generator update.

The invariants (see docs/architecture.md, "The step"):

* every loss is a sum of per-example terms divided by the **global** batch size. Keras optimizers
  under ``tf.distribute`` SUM gradients over replicas, so this makes the applied gradient the
  gradient of the global-batch mean, whatever the replica count;
* reported metrics are SUM-reduced over replicas of those globally scaled values (= global means);
* all randomness comes from :class:`~lipgan.core.constraint.StepContext` (stateless, keyed by seed,
  iteration and sub-step) or from the input pipeline, so 1, 2 or 4 replicas see the same numbers.
"""

from __future__ import annotations

from collections.abc import Callable

import keras
import tensorflow as tf

from lipgan.core.callbacks import METRICS
from lipgan.core.constraint import Constraint, StepContext
from lipgan.core.critic_checks import warn_if_batch_norm
from lipgan.core.errors import ConfigError, NonFiniteLossError, first_line
from lipgan.core.factories import generator_shape
from lipgan.core.jit import resolve_jit_compile
from lipgan.core.step_config import (
    StepConfig,
    check_bfloat16_support,
    dtype_policy,
)
from lipgan.core.step_guard import (
    CRITIC_TERMS,
    GENERATOR_TERMS,
    LoopResult,
    checked_penalty,
    nonfinite,
)


def zeros_for_none(grads, variables):
    """Replace unconnected gradients by zeros (e.g. the critic's last bias under a pure GP term).

    ``unconnected_gradients=ZERO`` does not work with Keras 3 variables, so this is done by hand.
    """
    return [tf.zeros_like(v) if g is None else g for g, v in zip(grads, variables, strict=True)]


def flat_scores(scores: tf.Tensor) -> tf.Tensor:
    """Critic output ``[b, 1]`` (or ``[b]``) as float32 ``[b]``."""
    return tf.reshape(tf.cast(scores, tf.float32), [-1])


class WGAN:
    """Models, optimizers and the compiled training loop for one strategy.

    Build it once per process; :meth:`iterate` advances training by a number of iterations on a
    distributed iterator from :meth:`distribute`.
    """

    def __init__(
        self,
        strategy: tf.distribute.Strategy,
        *,
        critic: Callable,
        generator: Callable,
        critic_optimizer: Callable,
        generator_optimizer: Callable,
        constraint: Constraint,
        data_shape,
        config: StepConfig,
    ):
        self.strategy = strategy
        self.constraint = constraint
        self.config = config
        self.data_shape = tuple(int(d) for d in data_shape)
        self.num_replicas = strategy.num_replicas_in_sync
        if config.global_batch_size % self.num_replicas:
            raise ConfigError(
                f"train.global_batch_size={config.global_batch_size} is not divisible by the "
                f"{self.num_replicas} replicas of this strategy; use a multiple of {self.num_replicas}"
            )
        # Checked before the models are built (a bad setting fails fast), resolved after.
        resolve_jit_compile(config.jit_compile, strategy)
        if config.mixed_precision == "mixed_bfloat16":
            check_bfloat16_support()
        # Models are built under the precision policy: bf16 compute, float32 variables. The model
        # families keep their output layer in float32, and the engine casts scores and the
        # penalty's gradient norm to float32.
        with strategy.scope(), dtype_policy(config.mixed_precision):
            self.critic = constraint.wrap_critic(critic(self.data_shape))
            # Once, at build time, whatever the constraint: see lipgan.core.critic_checks.
            warn_if_batch_norm(self.critic, constraint.name or type(constraint).__name__)
            self.generator = generator(self.data_shape)
            self.use_xla = resolve_jit_compile(
                config.jit_compile, strategy, (self.critic, self.generator)
            )
            self.critic_optimizer = critic_optimizer()
            self.generator_optimizer = generator_optimizer()
            # Built eagerly, in scope, before the first step: Keras 3 + MirroredStrategy otherwise
            # fails inside tf.function ("You must feed a value for placeholder tensor").
            self.critic_optimizer.build(self.critic.trainable_variables)
            self.generator_optimizer.build(self.generator.trainable_variables)
            self.iteration = tf.Variable(
                0,
                dtype=tf.int64,
                trainable=False,
                name="iteration",
                aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA,
            )
            #: One frozen averaged copy of the generator per decay of ``train.ema_decay``, in
            #: its order; ``generator_ema`` is the first, which samples (None: no EMA).
            self.generator_emas = {d: self._ema_copy(self.generator) for d in config.ema_decays}
            self.generator_ema = next(iter(self.generator_emas.values()), None)
        self.latent_shape = generator_shape(self.generator, "input_shape")
        out_shape = generator_shape(self.generator, "output_shape")
        if out_shape != self.data_shape:
            raise ConfigError(
                f"the generator makes examples of shape {out_shape} but the data has shape "
                f"{self.data_shape}; fix the model or dataset settings"
            )
        self._loop = None
        self._critic_gradient_fns: dict[int, Callable] = {}

    @staticmethod
    def _ema_copy(generator):
        """A frozen copy of ``generator`` (same architecture, same weights) for its EMA."""
        try:
            copy = keras.models.clone_model(generator)
        except Exception as exc:  # a subclassed model cannot be cloned from its config
            raise ConfigError(
                f"train.ema_decay needs a generator keras.models.clone_model can copy (a "
                f"functional or Sequential model); cloning failed: {type(exc).__name__}: "
                f"{first_line(exc, 200)}"
            ) from None
        copy.trainable = False
        for target, source in zip(copy.weights, generator.weights):
            target.assign(source)
        return copy

    def reset_ema(self, decay: float | None = None) -> None:
        """Start the generator's EMA at ``decay`` (default: every one) from the generator's
        weights (a checkpoint without it)."""
        copies = self.generator_emas.values() if decay is None else [self.generator_emas[decay]]
        for copy in copies:
            for target, source in zip(copy.weights, self.generator.weights):
                target.assign(tf.cast(source, target.dtype))

    @property
    def sampler(self):
        """The generator that samples and evaluates: its EMA copy when ``ema_decay`` is on (the
        first decay's when there are several)."""
        return self.generator if self.generator_ema is None else self.generator_ema

    def update_ema(self, iteration) -> None:
        """Fold the generator's weights into its EMA after ``iteration`` (1-based) iterations.

        StudioGAN's ``Ema`` (POSTECH-CVLab/PyTorch-StudioGAN, src/utils/ema.py), as BigGAN uses
        it: the copy follows the weights until ``ema_start``, then averages with ``ema_decay``.
        Every decay's copy is updated here, in the same compiled loop (the decays are constants
        of the step, as the one decay was). Runs in cross-replica context, after
        ``strategy.run``: reading a mirrored generator weight there gives the (identical)
        replica value, and assigning a mirrored EMA weight writes every replica's copy, so the
        EMA stays in sync without an aggregation mode.
        """
        averaging = tf.cast(iteration, tf.int64) > self.config.ema_start
        for ema_decay, copy in self.generator_emas.items():
            decay = tf.where(averaging, ema_decay, 0.0)
            for target, source in zip(copy.weights, self.generator.weights):
                value = tf.cast(source, target.dtype)
                target.assign(decay * target + (1.0 - decay) * value)

    # -- the per-replica step ---------------------------------------------------------------
    def context(self, step, phase: int) -> StepContext:
        replica = tf.distribute.get_replica_context()
        return StepContext(
            seed=self.config.seed,
            step=step,
            phase=phase,
            global_batch_size=self.config.global_batch_size,
            num_replicas=self.num_replicas,
            replica_id=replica.replica_id_in_sync_group if replica else 0,
            n_critic=self.config.n_critic,
        )

    def average(self, per_example: tf.Tensor) -> tf.Tensor:
        """Sum over this replica's examples divided by the *global* batch size.

        What ``tf.nn.compute_average_loss(per_example, global_batch_size=B)`` computes (a sum, then
        ``div_no_nan`` by B), without its three ``tf.debugging`` checks on B: those are Assert ops,
        which XLA drops with an "Ignoring Assert operator" line per loss and compilation. B is a
        Python int checked on the host (``StepConfig``), so the checks had nothing to catch.
        """
        loss = tf.reduce_sum(per_example)
        return tf.math.divide_no_nan(loss, tf.cast(self.config.global_batch_size, loss.dtype))

    def critic_loss_and_gradients(self, real: tf.Tensor, ctx: StepContext):
        """This replica's critic loss (globally scaled), its gradients, and metrics."""
        fake = self.generator(ctx.normal(self.latent_shape), training=True)
        n = tf.shape(real)[0]
        with tf.GradientTape() as tape:
            # One training call on real and fake together: stateful layers (spectral norm's power
            # iteration) advance exactly once per critic step.
            scores = flat_scores(self.critic(tf.concat([real, fake], axis=0), training=True))
            d_real, d_fake = scores[:n], scores[n:]
            per_example = d_fake - d_real
            penalty = checked_penalty(
                self.constraint, self.constraint.penalty(self.critic, real, fake, ctx), real
            )
            loss = self.average(per_example + penalty)
        variables = self.critic.trainable_variables
        grads = zeros_for_none(tape.gradient(loss, variables), variables)
        wasserstein = self.average(d_real - d_fake)
        metrics = {
            "critic_loss": loss,
            "wasserstein": wasserstein,
            "penalty": self.average(penalty),
        }
        health = tf.stack([nonfinite(wasserstein), nonfinite(penalty), nonfinite(*grads)])
        return grads, metrics, health

    def critic_update(self, real: tf.Tensor, ctx: StepContext):
        grads, metrics, health = self.critic_loss_and_gradients(real, ctx)
        self.critic_optimizer.apply_gradients(zip(grads, self.critic.trainable_variables))
        self.constraint.after_update(self.critic)
        # Read after the update and after_update (automatic control dependencies keep the order).
        weights = nonfinite(*self.critic.trainable_variables)
        return metrics, tf.concat([health, weights[None]], axis=0)

    def generator_update(self, ctx: StepContext):
        with tf.GradientTape() as tape:
            fake = self.generator(ctx.normal(self.latent_shape), training=True)
            loss = self.average(-flat_scores(self.critic(fake, training=False)))
        variables = self.generator.trainable_variables
        grads = zeros_for_none(tape.gradient(loss, variables), variables)
        self.generator_optimizer.apply_gradients(zip(grads, variables))
        return {"generator_loss": loss}, tf.stack(
            [nonfinite(loss), nonfinite(*grads), nonfinite(*variables)]
        )

    def replica_iteration(self, reals, step):
        """``n_critic`` critic updates (one real batch each) and one generator update.

        Returns the metrics of the last updates and, for every update and term (see
        :class:`LoopResult`), whether it was non-finite (a cheap ``is_finite`` pass).

        Unrolled in Python on purpose. A ``tf.while_loop`` over the phases (tried 2026-12-06)
        traces the critic step once instead of ``n_critic`` times, so a 4-iteration ring run
        started in 15 s instead of 22 s, bit for bit the same numbers; but without XLA each
        iteration then ran about 45 % slower on CPU (ring, GP, n_critic 5: 62 against 42 ms,
        two interleaved repetitions), which a study of 4,000-iteration cells pays many times
        over. MirroredStrategy also refuses the optimizer's all-reduce inside control flow.
        """
        metrics, health = {}, []
        for phase, real in enumerate(reals):
            step_metrics, update_health = self.critic_update(real, self.context(step, phase))
            metrics.update(step_metrics)
            health.append(update_health)
        step_metrics, update_health = self.generator_update(self.context(step, len(reals)))
        metrics.update(step_metrics)
        return metrics, tf.concat([*health, update_health], axis=0)

    # -- the host loop --------------------------------------------------------------------
    def distribute(self, dataset: tf.data.Dataset):
        """A distributed iterator over a dataset of *global* batches, with an exact layout.

        Replica ``r`` (its global ``replica_id_in_sync_group``) receives rows ``[r*b, (r+1)*b)`` of
        every global batch on any number of workers, which is the layout StepContext assumes for its
        noise; that is what makes results independent of the replica and worker count. Each input
        pipeline (one per worker/host) reads the global batch and keeps its replicas' rows: exact,
        at the price of every host decoding the whole global batch.
        """
        b = self.config.global_batch_size // self.num_replicas
        shape = dataset.element_spec.shape[1:]

        def pipeline(context: tf.distribute.InputContext) -> tf.data.Dataset:
            local = self.num_replicas // context.num_input_pipelines
            first = context.input_pipeline_id * local * b
            rows = dataset.map(
                lambda x: tf.reshape(x[first : first + local * b], [local, b, *shape])
            )
            return rows.unbatch()  # consecutive elements go to consecutive local replicas

        options = tf.distribute.InputOptions(experimental_fetch_to_device=True)
        return iter(self.strategy.distribute_datasets_from_function(pipeline, options))

    def _reduce(self, per_replica):
        return tf.nest.map_structure(
            lambda v: self.strategy.reduce(tf.distribute.ReduceOp.SUM, v, axis=None), per_replica
        )

    def _build_loop(self):
        replica_fn = self.replica_iteration
        if self.use_xla:
            # XLA on the per-replica function only: compiling the outer function that calls
            # strategy.run fails under MirroredStrategy (one XLA cluster cannot span devices).
            replica_fn = tf.function(replica_fn, jit_compile=True)

        @tf.function
        def loop(iterator, num_iterations):
            # The iteration index is computed from the loop counter and the variable is written
            # once, after the loop: no read-after-write ordering inside the loop to get wrong
            # (with an XLA-compiled replica function, a per-iteration read could see the update).
            start = self.iteration.read_value()
            metrics = {k: tf.constant(0.0) for k in METRICS}
            health = tf.zeros(
                [self.config.n_critic * len(CRITIC_TERMS) + len(GENERATOR_TERMS)], tf.int32
            )
            completed = tf.constant(0, tf.int64)
            for i in tf.range(num_iterations):
                reals = tuple(next(iterator) for _ in range(self.config.n_critic))
                metrics, health = self._reduce(
                    self.strategy.run(replica_fn, args=(reals, start + i))
                )
                if self.generator_ema is not None:
                    self.update_ema(start + i + 1)
                completed = i + 1
                if tf.reduce_any(health > 0):
                    break  # stop at the first non-finite iteration: the host reports it
            self.iteration.assign_add(completed)
            return LoopResult(metrics, health, completed)

        return loop

    def iterate_checked(self, iterator, num_iterations: int) -> LoopResult:
        """Run up to ``num_iterations`` iterations in one compiled call, stopping at a NaN/Inf."""
        if self._loop is None:
            self._loop = self._build_loop()
        return self._loop(iterator, tf.constant(num_iterations, tf.int64))

    def advance(self, iterator, batches: int) -> None:
        """Read and drop ``batches`` global batches of ``iterator`` (a resume's fast-forward).

        Reading through the iterator itself, rather than building ``dataset.skip(n)``, keeps the
        pipeline's structure, so its position can still be checkpointed and restored later.
        """

        @tf.function
        def drop(iterator, n):
            for _ in tf.range(n):
                next(iterator)

        drop(iterator, tf.constant(batches, tf.int64))

    def replica_drift(self) -> tuple[float, str | None]:
        """The largest difference between two replicas' copies of a model variable, and which.

        Mirrored variables stay equal only if every replica computes the same update; a plugin's
        ``after_update`` that depends on the replica id breaks that silently.
        """
        worst, where = 0.0, None
        models = [("critic", self.critic), ("generator", self.generator)]
        for decay, copy in self.generator_emas.items():
            models.append((f"generator EMA {decay}", copy))
        for label, model in models:
            for variable in model.weights:
                # A Keras variable holds the distributed tf.Variable in ``_value`` (TF backend).
                tf_variable = getattr(variable, "_value", variable)
                copies = [
                    tf.cast(c, tf.float32)
                    for c in self.strategy.experimental_local_results(tf_variable)
                ]
                for copy in copies[1:]:
                    gap = float(tf.reduce_max(tf.abs(copy - copies[0])))
                    if gap > worst:
                        worst, where = gap, f"{label} weight {variable.path}"
        return worst, where

    def nonfinite_weight(self) -> str | None:
        """The first model variable holding a NaN or Inf (``critic weight <path>``), else ``None``."""
        for label, model in (("critic", self.critic), ("generator", self.generator)):
            for variable in model.weights:
                if not bool(tf.reduce_all(tf.math.is_finite(tf.cast(variable, tf.float32)))):
                    return f"{label} weight {variable.path}"
        return None

    def iterate(self, iterator, num_iterations: int) -> dict:
        """Run ``num_iterations`` iterations; the metrics of the last one.

        Raises :class:`~lipgan.core.errors.NonFiniteLossError` naming the term when an iteration saw
        a NaN/Inf (the loop stops there; :meth:`iterate_checked` returns the details instead).
        """
        result = self.iterate_checked(iterator, num_iterations)
        bad = result.first_nonfinite()
        if bad:
            done = int(self.iteration.numpy())
            raise NonFiniteLossError(f"non-finite {bad} at step {done}")
        return result.metrics

    # -- agreement between workers (host side, between compiled calls) ------------------------
    def _replicas_sum(self, value: int) -> int:
        per_replica = self.strategy.run(lambda: tf.constant(value, tf.int64))
        return int(self.strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None))

    @property
    def multi_worker(self) -> bool:
        return isinstance(self.strategy, tf.distribute.MultiWorkerMirroredStrategy)

    def any_worker(self, flag: bool) -> bool:
        """Whether ``flag`` is set on any worker: all must stop together, or collectives hang."""
        if not self.multi_worker:
            return bool(flag)
        return self._replicas_sum(int(bool(flag))) > 0

    def workers_disagree(self, value: int) -> bool:
        """Whether the workers hold different ``value``s (e.g. the step they resumed from)."""
        if not self.multi_worker:
            return False
        return self._replicas_sum(value) != value * self.num_replicas

    def critic_gradients(self, real_global_batch: tf.Tensor, step: int = 0, phase: int = 0):
        """All-reduced critic loss and gradients for one global batch, without updating anything.

        Exactly what the optimizer would receive; used by replica-invariance tests and diagnostics.
        The step is a tensor, as in training, so one traced function per ``phase`` serves every
        step (a lazy penalty's schedule included) instead of a trace per call.
        """
        real = next(self.distribute(tf.data.Dataset.from_tensors(real_global_batch)))
        if phase not in self._critic_gradient_fns:
            self._critic_gradient_fns[phase] = self._build_critic_gradients(phase)
        return self._critic_gradient_fns[phase](real, tf.constant(step, tf.int64))

    def _build_critic_gradients(self, phase: int):
        @tf.function
        def compute(real, step):
            def fn(real):
                grads, metrics, _ = self.critic_loss_and_gradients(real, self.context(step, phase))
                return grads, metrics["critic_loss"]

            grads, loss = self.strategy.run(fn, args=(real,))
            reduce = lambda v: self.strategy.reduce(tf.distribute.ReduceOp.SUM, v, axis=None)  # noqa: E731
            return [reduce(g) for g in grads], reduce(loss)

        return compute
