"""What a benchmark sweep is: its axes (execution modes, models, measurements), one sweep's
settings (:class:`BenchConfig`), and the plugins its ``name:key=value`` specs name
(:mod:`lipgan.core.plugin_spec`). Nothing here imports TensorFlow, so the CLI checks a sweep
before anything is built.
"""

from __future__ import annotations

import dataclasses

from lipgan.core.errors import ConfigError
from lipgan.core.plugin_spec import parse_spec

MODES = ("auto", "eager", "function", "xla", "auto+bf16", "function+bf16", "xla+bf16")
# "auto": what ``lipgan run`` does, train.jit_compile='auto' (lipgan/core/jit.py: XLA for dense
# critics on one CPU/GPU replica, tf.function for convolutional ones on CPU); each record's
# ``resolved_mode`` says which it became.
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
