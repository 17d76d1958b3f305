"""The benchmark sweep: constraint × strategy × execution mode × model × batch size.

Everything is measured on the engine's own code (:class:`lipgan.engine.WGAN`), so the figures are
what ``lipgan run`` users get:

* ``penalty``: ``constraint.penalty`` and its gradient w.r.t. the critic (fake = reversed real batch,
  so no generator cost), inside ``strategy.run``;
* ``critic_step``: :meth:`WGAN.critic_update` (generator forward, critic loss, penalty, optimizer
  update, ``after_update``);
* ``iteration``: :meth:`WGAN.run` (``n_critic`` critic updates + one generator update per iteration,
  ``steps_per_execution`` iterations per compiled call; a Python loop in eager mode).

Next to them, in the same process and on the same critic, batch and optimizer, the keras-io WGAN-GP
recipe trained with ``fit`` (:mod:`lipgan.bench.keras_io_baseline`). Every configuration is reported
as a ratio to the unconstrained constraint ``none`` measured in the same run (repetitions are
interleaved across constraints, see :mod:`lipgan.bench.timing`), and lipgan's GP
iterations as a speedup over keras-io. Constraints come from the plugin registry, so third-party
ones are benchmarked too. A strategy other than ``default`` runs in a child process (TensorFlow fixes
its logical devices at start-up): ``python -m lipgan.bench.harness CONFIG.json OUT.json``.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import json
import resource
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from lipgan import child_process
from lipgan.constraint import Constraint
from lipgan.errors import ConfigError

MODES = ("auto", "eager", "function", "xla", "auto+bf16", "function+bf16", "xla+bf16")
# "auto": what ``lipgan run`` does, train.jit_compile='auto' (lipgan/jit.py: XLA for dense critics on
# one CPU/GPU replica, tf.function for convolutional ones on CPU); each record's ``resolved_mode``
# says which it became.
# "+bf16": train.mixed_precision="mixed_bfloat16" (bf16 compute, float32 variables; the engine
# keeps GP norms and losses in float32). Worth it on CPUs with native bf16 (avx512_bf16, AMX).


#: StepConfig.jit_compile for each execution mode.
JIT_SETTING = {"auto": "auto", "eager": False, "function": False, "xla": True}


def split_mode(mode: str) -> tuple[str, str | None]:
    """``"xla+bf16"`` -> ``("xla", "mixed_bfloat16")``; ``"function"`` -> ``("function", None)``."""
    base, _, suffix = mode.partition("+")
    return base, ("mixed_bfloat16" if suffix == "bf16" else None)


MEASUREMENTS = ("penalty", "critic_step", "iteration")
KERAS_IO = "keras_io_gp"


@dataclasses.dataclass(frozen=True)
class ModelSpec:
    """A critic/generator pair from ``lipgan.models`` and its data shape and default batch."""

    data_shape: tuple
    batch: int
    critic: str
    generator: str
    gp_weight: float  # the paper's λ for this family; also the keras-io baseline's gp_weight


MODELS = {
    "toy": ModelSpec((2,), 256, "mlp_critic", "mlp_generator", 0.1),
    "dcgan": ModelSpec((32, 32, 3), 64, "dcgan_critic", "dcgan_generator", 10.0),
}


@dataclasses.dataclass
class BenchConfig:
    """One sweep. ``batches`` maps a model name to its batch sizes (default: the model's batch)."""

    models: list[str] = dataclasses.field(default_factory=lambda: ["toy", "dcgan"])
    constraints: list[str] | None = None  # None: every registered one + the GP speed variants
    strategies: list[str] = dataclasses.field(default_factory=lambda: ["default"])
    modes: list[str] = dataclasses.field(default_factory=lambda: ["auto"])
    batches: dict[str, list[int]] = dataclasses.field(default_factory=dict)
    measurements: list[str] = dataclasses.field(default_factory=lambda: list(MEASUREMENTS))
    keras_io: bool = True
    repetitions: int = 5
    warmup: int = 1
    min_rep_seconds: float = 0.2
    n_critic: int = 5
    steps_per_execution: int = 10
    count_flops: bool = True
    probe: bool = True  # the float32 matmul probe (lipgan.bench.probe) for each model and batch

    def validate(self) -> None:
        for name, known, values in (
            ("model", MODELS, self.models),
            ("mode", MODES, self.modes),
            ("measurement", MEASUREMENTS, self.measurements),
        ):
            bad = [v for v in values if v not in known]
            if bad:
                raise ConfigError(f"unknown {name} {bad[0]!r}; known: {', '.join(known)}")
        if self.repetitions < 1 or self.n_critic < 1 or self.steps_per_execution < 1:
            raise ConfigError("repetitions, n_critic and steps_per_execution must be >= 1")
        for model, sizes in self.batches.items():
            if model not in MODELS or any(b < 1 for b in sizes):
                raise ConfigError(f"bad batch sweep {model}={sizes}; use e.g. dcgan=32,64")


# -- specs ----------------------------------------------------------------------------------
def parse_spec(spec: str) -> tuple[str, dict]:
    """``name`` or ``name:key=value,key=value`` (values are Python literals) -> (name, kwargs)."""
    name, _, params = spec.partition(":")
    kwargs = {}
    for item in filter(None, params.split(",")):
        key, eq, value = item.partition("=")
        if not eq:
            raise ConfigError(f"bad spec {spec!r}: expected name:key=value,...")
        try:
            kwargs[key.strip()] = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            kwargs[key.strip()] = value.strip()
    return name.strip(), kwargs


def default_constraints(registry) -> list[str]:
    """Every registered constraint, plus gradient_penalty's unpruned reference and lazy schedule.

    The default ``fast_relu='auto'`` prunes wherever exact, so ``fast_relu=False`` is the variant
    that shows what the pruning saves.
    """
    names = registry.names("constraint")
    specs = list(names)
    if "gradient_penalty" in names:
        specs += ["gradient_penalty:fast_relu=False", "gradient_penalty:every=16"]
    return specs


def _instantiate(registry, kind: str, spec: str):
    name, kwargs = parse_spec(spec)
    cls = registry.get(kind, name)
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{kind} {spec!r}: {exc}") from None


# -- one process: one strategy ---------------------------------------------------------------
def peak_memory() -> tuple[int | None, str]:
    """Peak memory in bytes and where it comes from (GPU allocator, else process max RSS)."""
    import tensorflow as tf

    if tf.config.list_logical_devices("GPU"):
        info = tf.config.experimental.get_memory_info("GPU:0")
        return int(info["peak"]), "gpu:0 allocator peak (reset per measurement)"
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, "process max RSS (monotonic)"


def _reset_peak_memory() -> None:
    import tensorflow as tf

    if tf.config.list_logical_devices("GPU"):
        tf.config.experimental.reset_memory_stats("GPU:0")


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

    from lipgan.engine import WGAN, StepConfig

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

    from lipgan.engine import zeros_for_none

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
        return (lambda: wgan.run(iterator, steps_per_execution)["critic_loss"]), steps_per_execution

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


def _measure_group(
    cfg, strategy, strategy_spec, model_name, batch, mode, constraints, registry, log
):
    """Every constraint (and keras-io) for one (model, batch, mode), with interleaved repetitions."""
    from lipgan.bench.timing import measure_interleaved

    entries = []
    for constraint_spec in constraints:
        try:
            entries += _lipgan_cases(
                cfg, strategy, model_name, batch, mode, constraint_spec, registry
            )
        except ConfigError as exc:  # a constraint that refuses this critic or its settings
            log(f"skip {model_name} {constraint_spec}: {exc}")
    if (
        cfg.keras_io
        and "iteration" in cfg.measurements
        and strategy.num_replicas_in_sync == 1
        and split_mode(mode)[1] is None  # the keras-io recipe runs in float32 only
    ):
        entries.append(_keras_io_case(cfg, model_name, batch, mode))
    memory = {}
    by_case = {id(case): meta for meta, case, _ in entries}

    def before(case):
        meta = by_case[id(case)]
        log(
            f"{strategy_spec} {model_name} b={batch} {mode} {meta['constraint']} {meta['measurement']}: compile + warm-up"
        )
        _reset_peak_memory()

    def after(case):
        memory[id(case)] = peak_memory()

    timings = measure_interleaved(
        [case for _, case, _ in entries],
        repetitions=cfg.repetitions,
        warmup=cfg.warmup,
        min_rep_seconds=cfg.min_rep_seconds,
        before_prepare=before,
        after_prepare=after,
        log=log,
    )
    limits = _machine_limits(cfg, entries, batch, log)
    records = []
    for (meta, case, flops), timing in zip(entries, timings):
        record = _record(
            strategy_spec,
            meta["replicas"],
            model_name,
            batch,
            mode,
            meta["constraint"],
            meta["measurement"],
            timing.as_dict(batch * meta["iterations"]),
            meta["iterations"],
            flops() if flops else None,
            *memory[id(case)],
        )
        record["resolved_mode"] = meta["resolved_mode"]
        record.update(_fractions(record, limits))
        if meta.get("lazy"):
            record["flops_note"] = (
                "lazy penalty behind tf.cond: the counted graph is its skipped branch"
            )
        records.append(record)
    return records


def _machine_limits(cfg, entries, batch, log) -> dict:
    """The matmul probe (model's dense shapes at this batch) and the large-matmul peak, FLOP/s."""
    if not cfg.probe:
        return {"probe_flops_per_s": None, "peak_flops_per_s": None}
    from lipgan.bench import probe

    kernels = next((m["kernels"] for m, _, _ in entries if m.get("kernels")), [])
    log(f"matmul probe: {len(kernels)} kernels at batch {batch} (dense only), and a large matmul")
    return {
        "probe_flops_per_s": probe.layer_matmul_flops_per_s(kernels, batch),
        "peak_flops_per_s": probe.peak_matmul_flops_per_s(),
    }


def _fractions(record, limits) -> dict:
    achieved = record["achieved_flops_per_s"]
    out = dict(limits)
    for name, key in (("probe", "probe_flops_per_s"), ("peak", "peak_flops_per_s")):
        out[f"fraction_of_{name}"] = achieved / limits[key] if achieved and limits[key] else None
    return out


def _record(
    strategy_spec,
    replicas,
    model,
    batch,
    mode,
    constraint,
    measurement,
    timing,
    iterations,
    flops,
    memory,
    memory_source,
):
    record = {
        "strategy": strategy_spec,
        "replicas": replicas,
        "model": model,
        "batch": batch,
        "mode": mode,
        "constraint": constraint,
        "measurement": measurement,
        "examples_per_s": timing["throughput"],
        "examples_per_s_min": timing["throughput_min"],
        "examples_per_s_max": timing["throughput_max"],
        "examples_per_s_per_replica": timing["throughput"] / replicas,
        "seconds_per_call": timing["seconds_per_call"],
        "first_call_s": timing["first_call_s"],
        "repetitions": timing["repetitions"],
        "peak_memory_bytes": memory,
        "peak_memory_source": memory_source,
        "flops_per_call": None,
        "achieved_flops_per_s": None,
    }
    if flops:
        record["flops_per_call"] = flops * iterations * replicas
        record["achieved_flops_per_s"] = record["flops_per_call"] / timing["seconds_per_call"]
    return record


def run_strategy(
    cfg: BenchConfig, strategy_spec: str, log: Callable[[str], None] = print
) -> list[dict]:
    """Every configuration of ``cfg`` on one strategy, in this process."""
    from lipgan.plugins import load_registry

    registry = load_registry().registry
    strategy = _instantiate(registry, "strategy", strategy_spec).create()
    constraints = cfg.constraints or default_constraints(registry)
    for spec in constraints:  # fail on a bad name before spending minutes measuring
        _instantiate(registry, "constraint", spec)
    records = []
    for model_name in cfg.models:
        for batch in cfg.batches.get(model_name) or [MODELS[model_name].batch]:
            if batch % strategy.num_replicas_in_sync:
                log(
                    f"skip {model_name} batch {batch}: not divisible by {strategy.num_replicas_in_sync} replicas"
                )
                continue
            for mode in cfg.modes:
                records += _measure_group(
                    cfg,
                    strategy,
                    strategy_spec,
                    model_name,
                    batch,
                    mode,
                    constraints,
                    registry,
                    log,
                )
    return add_ratios(records)


def add_ratios(records: list[dict]) -> list[dict]:
    """Cost relative to ``none`` (time ratio, FLOP ratio, their quotient) and speedup over keras-io.

    ``time_ratio_vs_none`` is (time of this) / (time of the same measurement with ``none``), except
    for ``penalty``, which is divided by the unconstrained *critic step*. ``flop_ratio_vs_none`` is the
    same ratio of graph FLOPs: the analytic bound the time ratio would reach if time tracked FLOPs.
    """

    def key(r):
        return (r["strategy"], r["model"], r["batch"], r["mode"], r["measurement"])

    plain = {key(r): r for r in records if r["constraint"] == "none"}
    keras_io = {key(r): r for r in records if r["constraint"] == KERAS_IO}
    for r in records:
        # The penalty alone is priced in units of one unconstrained critic step.
        k = key(r) if r["measurement"] != "penalty" else (*key(r)[:-1], "critic_step")
        base = plain.get(k)
        r["time_ratio_vs_none"] = base["examples_per_s"] / r["examples_per_s"] if base else None
        r["flop_ratio_vs_none"] = (
            r["flops_per_call"] / base["flops_per_call"]
            if base and r["flops_per_call"] and base["flops_per_call"]
            else None
        )
        r["time_ratio_over_flop_ratio"] = (
            r["time_ratio_vs_none"] / r["flop_ratio_vs_none"]
            if r["time_ratio_vs_none"] and r["flop_ratio_vs_none"]
            else None
        )
        kio = keras_io.get(key(r))
        r["speedup_vs_keras_io"] = (
            r["examples_per_s"] / kio["examples_per_s"]
            if kio and r["constraint"].startswith("gradient_penalty")
            else None
        )
    return records


# -- many strategies: one child process each --------------------------------------------------
def run(cfg: BenchConfig, log: Callable[[str], None] = print) -> list[dict]:
    """The whole sweep. ``default`` runs here; every other strategy in its own child process."""
    cfg.validate()
    records = []
    for strategy_spec in cfg.strategies:
        if strategy_spec == "default":
            records += run_strategy(cfg, strategy_spec, log)
            continue
        with tempfile.TemporaryDirectory() as tmp:
            config_path, out_path = Path(tmp, "config.json"), Path(tmp, "out.json")
            child = dataclasses.replace(cfg, strategies=[strategy_spec])
            config_path.write_text(json.dumps(dataclasses.asdict(child)))
            log(f"{strategy_spec}: child process")
            done = child_process.run("lipgan.bench.harness", config_path, out_path)
            if done.returncode != 0:
                tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
                log(f"{strategy_spec}: skipped ({tail})")
                continue
            records += json.loads(out_path.read_text())
    return records


def _child_main(config_path: str, out_path: str) -> None:
    cfg = BenchConfig(**json.loads(Path(config_path).read_text()))
    records = run_strategy(cfg, cfg.strategies[0], log=lambda line: print(line, file=sys.stderr))
    Path(out_path).write_text(json.dumps(records))


if __name__ == "__main__":
    _child_main(*sys.argv[1:3])
