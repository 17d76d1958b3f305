"""The benchmark sweep run: constraint × strategy × execution mode × model × batch size.

Each (model, batch, mode) group times the cases of :mod:`lipgan.bench.cases` in the same process
and on the same critic, batch and optimizer. Every configuration is reported as a ratio to the
unconstrained constraint ``none`` measured in the same run (repetitions are interleaved across
constraints, see :mod:`lipgan.bench.timing`), and lipgan's GP iterations as a speedup over keras-io.
Constraints come from the plugin registry, so third-party ones are benchmarked too. A strategy
other than ``default`` runs in a child process (TensorFlow fixes its logical devices at start-up):
``python -m lipgan.bench.harness CONFIG.json OUT.json``. The sweep's settings are
:mod:`lipgan.bench.sweep`.
"""

from __future__ import annotations

import dataclasses
import json
import resource
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from lipgan.bench.cases import _keras_io_case, _lipgan_cases
from lipgan.bench.sweep import (
    KERAS_IO,
    MODELS,
    BenchConfig,
    _instantiate,
    default_constraints,
    split_mode,
)
from lipgan.core import child_process
from lipgan.core.errors import ConfigError


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
    from lipgan.core.plugins import load_registry

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
